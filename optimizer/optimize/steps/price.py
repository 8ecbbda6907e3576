"""Price the alternatives: each workload's next configs priced in the solved program, every other choice kept."""

from __future__ import annotations

import time

from optimizer.candidates.types import Candidate
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Forced, SolveInfo
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


def price_alternatives(prog: Program, chosen: dict[str, str], ranked: dict[str, list[Candidate]], per_workload: int,
                       objective: float, solver: str, gap_target: float,
                       policy: SolvePolicy = DEFAULT_POLICY, started: float | None = None) -> dict[str, Forced]:
    """Each alternative priced in the solved program: every other workload keeps its chosen config,
    this one is forced onto the alternative, and reserved, on-demand, spot and API are re-solved.
    Per workload, configs are tried in `ranked` order until `per_workload` have a price (at most
    twice that many tried: one that no plan can host with the others kept is reported as such).

    A plan found this way is feasible for the whole program, so its cost is at least the optimum:
    the difference is never below −(proven gap × the plan's cost), and it is an upper bound on what
    re-optimizing every workload around the alternative would cost (`planopt explain` does that).
    Limits are work, so the same plan prices the same way on every machine: policy.node_limit nodes each, and
    once the price step's calls have spent its share of the simplex iterations (policy.work; counted in the
    solve's tally) the rest are "not priced". The safety cap of a solve that began at `started` (default now)
    stops them too.
    """
    out: dict[str, Forced] = {}
    started = time.perf_counter() if started is None else started
    for workload, alts in ranked.items():
        priced = 0
        for alt in alts[:2 * per_workload]:
            if priced == per_workload:
                break
            if work_left(policy, "price")[1] <= 0 or cap_left(policy, started) <= 0:
                out[alt.key] = Forced(None, "not priced")
                break
            r = _others_kept(prog, chosen, workload, alt.key, solver, gap_target, cap_left(policy, started), policy)
            if r.status == "infeasible":
                out[alt.key] = Forced(None, "infeasible")
            elif r.objective is None or r.status not in ("optimal", "feasible"):
                out[alt.key] = Forced(None, "not priced")
            else:
                out[alt.key] = Forced(r.objective - objective, "optimal" if r.status == "optimal" else "bounded")
                priced += 1
    return out
