"""Price the alternatives: each workload's next configs priced in the solved program, every other choice kept."""

from __future__ import annotations

import time

from optimizer.candidates.types import Candidate
from optimizer.optimize import work
from optimizer.optimize.pieces import Pieces
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Forced, SolveInfo, StopReason
from optimizer.optimize.solver import solve
from optimizer.optimize.steps.run import cap_left, work_left


def _others_kept(prog: Program, chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
                 seconds: float, policy: SolvePolicy = DEFAULT_POLICY) -> SolveInfo:
    """The program with `workload` forced onto `key` and every other workload on its chosen config,
    re-solved within policy.node_limit nodes (`seconds`: the safety cap): a plan feasible for the whole program,
    found fast. A workload that may move (policy.moves) is held on `key` in every contract period: the alternative
    is that config for the horizon; the others keep their first period's config and may still move."""
    with prog.choices_fixed({**chosen, workload: key}, held={workload}):
        return solve(prog.prob, solver, time_limit_s=max(0.01, seconds), mip_gap=gap_target,
                     node_limit=policy.node_limit, threads=policy.threads)


def _in_pieces(pieces: Pieces, plan: set[str], was: str, key: str, solver: str, gap_target: float,
               policy: SolvePolicy, started: float) -> Forced:
    """Config `key` priced instead of `was` by re-solving only the pieces of the program their choice columns are
    in (optimize.pieces), together, against the same pieces at the plan's configs (`plan`), solved the same way."""
    keys = (was, key)
    on = (plan - {was}) | {key}
    if not pieces.holds(on, keys):
        return Forced(None, "infeasible")
    difference = pieces.key_cost.get(key, 0.0) - pieces.key_cost.get(was, 0.0)
    touched = pieces.touched(keys)
    if not touched:
        return Forced(difference, "optimal")

    def run(configs: set[str]) -> SolveInfo:
        return solve(pieces.program(touched, configs), solver, time_limit_s=max(0.01, cap_left(policy, started)),
                     mip_gap=gap_target, node_limit=policy.node_limit, threads=policy.threads)

    if touched not in pieces.solved:
        r = run(plan)
        pieces.solved[touched] = (r.status, r.objective)
    base_status, base = pieces.solved[touched]
    r = run(on)
    if r.status == "infeasible":
        return Forced(None, "infeasible")
    if base is None or r.objective is None or base_status not in ("optimal", "feasible") \
            or r.status not in ("optimal", "feasible"):
        return Forced(None, "not priced")
    how = "optimal" if r.status == base_status == "optimal" else "bounded"
    return Forced(difference + r.objective - base, how)


def price_alternatives(prog: Program, chosen: dict[str, str], ranked: dict[str, list[Candidate]], per_workload: int,
                       objective: float, solver: str, gap_target: float,
                       policy: SolvePolicy = DEFAULT_POLICY, started: float | None = None,
                       pieces: Pieces | None = None) -> dict[str, Forced]:
    """Each alternative priced in the solved program: every other workload keeps its chosen config,
    this one is forced onto the alternative, and reserved, on-demand, spot and API are re-solved.
    Per workload, configs are tried in `ranked` order until `per_workload` have a price (at most
    twice that many tried: one that no plan can host with the others kept is reported as such), breadth first:
    every workload's next priced alternative before any workload's one after it, so where pricing stops early every
    workload has its nearest alternatives priced.

    A plan found this way is feasible for the whole program, so its cost is at least the optimum:
    the difference is never below −(proven gap × the plan's cost), and it is an upper bound on what
    re-optimizing every workload around the alternative would cost (`planopt explain` does that).
    Limits are work, so the same plan prices the same way on every machine: policy.node_limit nodes each, at most
    policy.price_max_alternatives tried, and once the price step's calls have spent its share of the simplex
    iterations (policy.work; counted in the solve's tally) each workload's next alternative reads "not priced". The
    safety cap of a solve that began at `started` (default now) stops them too.

    With `pieces` (optimize.pieces, of `prog`), each alternative re-solves only the pieces of the program its two
    configs are in, against the same pieces at the plan's configs: the same prices, at a fraction of the work on a
    program of many offers (strategy: the programs priced apart, policy.price_apart_min_columns).
    """
    out: dict[str, Forced] = {}
    started = time.perf_counter() if started is None else started
    plan = set(chosen.values())
    left = {w: list(alts[:2 * per_workload]) for w, alts in ranked.items()}
    priced = dict.fromkeys(ranked, 0)
    tried = 0
    while any(left.values()):
        for workload, alts in left.items():
            while alts and priced[workload] < per_workload:
                alt = alts.pop(0)
                limit = _limit(policy, started, tried)
                if limit is not None:
                    work.stopped(limit)
                    out[alt.key] = Forced(None, "not priced")
                    alts.clear()
                    break
                tried += 1
                out[alt.key] = forced = _priced(prog, pieces, plan, chosen, workload, alt.key, objective, solver,
                                                gap_target, policy, started)
                if forced.difference is not None:
                    priced[workload] += 1
                    break
            if priced[workload] >= per_workload:
                alts.clear()
    return out


def _limit(policy: SolvePolicy, started: float, tried: int) -> StopReason | None:
    """What stops pricing before the next alternative: the safety cap, the price step's share of the simplex
    iterations, or the count of alternatives tried (policy.price_max_alternatives); None: nothing yet."""
    if cap_left(policy, started) <= 0:
        return "safety cap"
    if work_left(policy, "price")[1] <= 0:
        return "iterations"
    if tried >= policy.price_max_alternatives:
        return "alternatives"
    return None


def _priced(prog: Program, pieces: Pieces | None, plan: set[str], chosen: dict[str, str], workload: str, key: str,
            objective: float, solver: str, gap_target: float, policy: SolvePolicy, started: float) -> Forced:
    """Config `key` of `workload` priced: piece by piece with `pieces`, else the whole program re-solved."""
    if pieces is not None:
        return _in_pieces(pieces, plan, chosen[workload], key, solver, gap_target, policy, started)
    r = _others_kept(prog, chosen, workload, key, solver, gap_target, cap_left(policy, started), policy)
    if r.status == "infeasible":
        return Forced(None, "infeasible")
    if r.objective is None or r.status not in ("optimal", "feasible"):
        return Forced(None, "not priced")
    return Forced(r.objective - objective, "optimal" if r.status == "optimal" else "bounded")
