"""`planopt explain`'s exact prices: the plan solved, then each alternative config forced on one workload and
the whole program re-solved around it — started from the plan with only that workload moved, bounded by the
solver, side by side on the cores the plan's solve leaves (the re-solve processes start while it runs)."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from optimizer import parallel
from optimizer.candidates.overflow import without_ceiling
from optimizer.candidates.types import CandidateSet
from optimizer.inputs.loading import LoadedPlan
from optimizer.optimize import strategy
from optimizer.optimize.model import build_model
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Solution, SolveInfo
from optimizer.optimize.solver import solve
from optimizer.optimize.strategy import (
    SolveOptions,
    _cuts_for_search,
    _gap,
    _others_kept,
    _sole_tenant_costs,
    _segments,
    _settle_sole_tenants,
    _solve,
    _solve_settled,
    settings,
    solve_policy,
    break_ties,
)


@dataclass(frozen=True)
class ForcedSolve:
    """One config forced on a workload and the whole program re-solved around it (explain)."""

    key: str
    objective: float | None
    """The cheapest plan found with it forced; None when none was found."""
    bound: float | None
    """A proven lower bound on that plan's cost (the solver's best bound)."""
    status: str
    """optimal (within the gap), bounded (the search stopped short, on its nodes or the safety cap: between
    bound and objective), infeasible, not solved."""
    seconds: float
    chosen: str | None = None
    """The config of the cheapest plan found: `key` or the same hardware at another API overflow ceiling."""


def solve_and_force(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions, workload: str,
                    ranked: list[str], count: int,
                    on_done: Callable[[int, int, ForcedSolve, SolveInfo], None] | None = None,
                    workers: int | None = None, plan_cands: CandidateSet | None = None
                    ) -> tuple[Solution, SolveInfo, list[ForcedSolve]]:
    """Solve the plan, then force each of the first `count` configs of `ranked` other than the chosen
    one on `workload`, in the same program, and re-solve; `on_done(i, n, forced, plan_info)` as each ends.
    A config is forced as its hardware — offer, precision, parallelism — at any of its API overflow
    ceilings (the program picks the ceiling, as it does for the plan), so `ranked` is cut to the first
    config of each, and the chosen config's hardware is not an alternative.

    Every solve stops on work, as the plan's does: the plan on its work limit (steps/run.py), each forced
    re-solve on the search step's share of its nodes (SolvePolicy.work), so the same plan prices the same
    alternatives the same way on every machine. The time limit is only a safety cap over all of it: the plan's
    own solve is cut at half of it, every re-solve at the time limit from the start. Each forced re-solve
    starts from a plan that is feasible for it — the solved plan with only this workload moved (every other
    choice kept, policy.node_limit nodes) — so the re-solve only improves on it, and its best bound says how far
    it could go: an alternative whose work ran out is reported as a range, never as a guess.

    With more than one core (`workers`, default all), the re-solves run side by side in spawned
    processes, each building the program once; the processes start while the plan is solved, and
    the first re-solve starts there too, once the relaxation says which config the plan will most
    likely choose (the plan's solve uses one core): the first ranked config other than that one,
    started from the relaxation's configs. Should the plan choose it after all, that re-solve is
    the plan again and is dropped; a forced re-solve's price does not depend on where it started.

    `plan_cands` (default `cands`), a subset of `cands` with the same optimum (dominated configs pruned),
    is what the plan itself is solved over; the forced re-solves use `cands`.
    """
    solver, limit, gap_target = settings(loaded, options)
    started = time.perf_counter()
    deadline = time.monotonic() + limit  # the safety cap of every re-solve (monotonic: shared by the processes)
    # the plan's own policy (its work limit, --work-limit): each re-solve takes its search step's nodes
    policy = solve_policy(loaded, options, strategy.POLICY)
    hardware: dict[str, str] = {}  # the first ranked config of each offer, precision and parallelism
    for k in ranked:
        hardware.setdefault(without_ceiling(k), k)
    ranked = list(hardware.values())
    n_workers = max(1, min(workers or os.cpu_count() or 1, count))
    pool = None
    if n_workers > 1:
        pool = parallel.process_pool(n_workers, below=True, initializer=_worker_start,
                                     initargs=(loaded, cands, solver))
        for _ in range(n_workers):  # start the processes (and their builds) now, beside the plan's solve
            pool.submit(_worker_ready)
    early: dict[str, cf.Future] = {}
    starts: dict[str, dict[str, str]] = {}

    def speculate(relaxed: Program) -> None:
        if pool is None or count < 2:
            return
        likely = _likely_choices(relaxed)
        first = next((k for k in ranked if without_ceiling(k) != without_ceiling(likely.get(workload, ""))), None)
        if first is not None:  # one: two would share the one core the plan's solve leaves
            starts[first] = likely
            early[first] = pool.submit(_worker_force, likely, workload, first, solver, gap_target, deadline,
                                       policy)

    try:
        plan_cands = plan_cands or cands
        segments = _segments(loaded, plan_cands)
        sole_tenants = _sole_tenant_costs(loaded, plan_cands, segments, solver, policy)
        prog = build_model(loaded, plan_cands, segments, cuts=False,
                           sole_tenant=sole_tenants.costs if sole_tenants else None)
        # the plan's own solve: its work limit, its safety cap half the time (all of it with nothing to force)
        own = replace(policy, safety_cap_s=limit / 2 if count else limit)
        settled = _solve_settled(prog, sole_tenants, loaded, plan_cands, segments, options, own, started, None,
                                 on_relaxed=speculate)
        if settled is None:  # as solve_candidates: the program as it was
            prog = build_model(loaded, plan_cands, segments, cuts=False)
            settled = (prog, *_solve(prog, loaded, plan_cands, segments, options, own, started))
        prog, sol, info = settled
        info, tidied = break_ties(prog, info, own, started)
        if tidied:
            sol = prog.solution()
        solver = info.name
        keys = [k for k in ranked if without_ceiling(k) != without_ceiling(sol.chosen[workload])][:count]
        if pool is None or len(keys) < 2:
            # the forced configs may be ones the plan's program pruned, and its sole-tenant configs' costs bounds
            every = _segments(loaded, cands)
            alone = _sole_tenant_costs(loaded, cands, every, solver, policy)
            forced = build_model(loaded, cands, every, cuts=True, sole_tenant=alone.costs if alone else None)
            settle = None if alone is None else (
                lambda ks, seconds: _settle_sole_tenants(forced, alone, ks, loaded, cands, every, solver, seconds,
                                                        policy=policy))
            out = _force_in_turn(forced, sol.chosen, workload, keys, solver, gap_target, deadline, info,
                                 on_done, settle, policy)
        else:
            for k in set(early) - set(keys):
                early.pop(k).cancel()  # the plan chose it: that re-solve is the plan's own
            # an early re-solve started from the relaxation's configs; where the plan chose others, its start
            # (every other choice kept) is priced again from the plan's
            again = [k for k in early if any(starts[k].get(w) != c for w, c in sol.chosen.items() if w != workload)]
            out = _force_side_by_side(pool, sol.chosen, workload, keys, solver, gap_target, deadline, policy,
                                      info, on_done, early, again)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    return sol, info, out


def _likely_choices(relaxed: Program) -> dict[str, str]:
    """Each workload's config the solved relaxation chose most: the plan's most likely choices."""
    return {w: key for w, (_v, key) in relaxed.largest_choices().items()}


def _force_in_turn(prog: Program, chosen: dict[str, str], workload: str, keys: list[str], solver: str,
                   gap_target: float, deadline: float, info: SolveInfo,
                   on_done: Callable[[int, int, ForcedSolve, SolveInfo], None] | None,
                   settle: Callable[[list[str], float], bool | None] | None = None,
                   policy: SolvePolicy = DEFAULT_POLICY) -> list[ForcedSolve]:
    """The forced re-solves one after another, each on its work (_force), until the safety cap (`deadline`,
    time.monotonic) is reached: those after it are "not solved"."""
    out: list[ForcedSolve] = []
    for i, key in enumerate(keys):
        left = deadline - time.monotonic()
        if left <= 0.05:
            out.append(ForcedSolve(key, None, None, "not solved", 0.0))
        else:
            out.append(_force(prog, chosen, workload, key, solver, gap_target, left, settle, policy))
        if on_done is not None:
            on_done(i + 1, len(keys), out[-1], info)
    return out


def _force_side_by_side(pool: cf.ProcessPoolExecutor, chosen: dict[str, str], workload: str,
                        keys: list[str], solver: str, gap_target: float, deadline: float, policy: SolvePolicy,
                        info: SolveInfo, on_done: Callable[[int, int, ForcedSolve, SolveInfo], None] | None,
                        early: dict[str, cf.Future] | None = None, again: list[str] | None = None) -> list[ForcedSolve]:
    """The forced re-solves on the pool's processes, each on its work (_force) within the safety cap (`deadline`,
    time.monotonic); those in `early` were started while the plan was solved. For those in `again` (an early
    re-solve that started from other configs than the plan's) the plan with only this workload moved is priced
    too, and the cheaper of the two plans found is the price (_with_start)."""
    early = early or {}
    if deadline - time.monotonic() <= 0.05:
        return [ForcedSolve(k, None, None, "not solved", 0.0) for k in keys]
    # an early re-solve's price waits for its start from the plan's configs: that quick solve is queued first,
    # ahead of the other re-solves, so the early alternative is told as soon as it can be
    kept_futures = {pool.submit(_worker_kept, chosen, workload, k, solver, gap_target, deadline, policy): k
                    for k in again or []}
    futures = {f: k for k, f in early.items()}
    futures.update({pool.submit(_worker_force, chosen, workload, k, solver, gap_target, deadline, policy): k
                    for k in keys if k not in early})
    kept: dict[str, float | None] = {}
    waiting: dict[str, ForcedSolve] = {}
    done: dict[str, ForcedSolve] = {}
    for f in cf.as_completed([*futures, *kept_futures]):
        if f in kept_futures:
            k = kept_futures[f]
            kept[k] = f.result()
            if k not in waiting:
                continue
            forced = waiting.pop(k)
        else:
            k = futures[f]
            forced = f.result()
            if k in kept_futures.values() and k not in kept:
                waiting[k] = forced  # its start from the plan's configs is still being priced
                continue
        done[k] = _with_start(forced, kept.get(k), gap_target)
        if on_done is not None:
            on_done(len(done), len(keys), done[k], info)
    return [done[k] for k in keys]


def _with_start(forced: ForcedSolve, kept: float | None, gap_target: float) -> ForcedSolve:
    """A forced re-solve's result with a plan found apart for the same forced config (`kept`: the cost of the
    plan with every other choice kept), when that plan is cheaper: the price is the cheapest plan found, the
    bound the re-solve's."""
    if kept is None or forced.status == "infeasible" or (forced.objective is not None and forced.objective <= kept):
        return forced
    gap = _gap(kept, forced.bound)
    status = "optimal" if gap is not None and gap <= gap_target + 1e-12 else "bounded"
    return replace(forced, objective=kept, status=status)


_WORKER: dict[str, Any] = {}
"""In a re-solve process: the program, built once from the plan the process started with, and what
settling its sole-tenant configs needs (prog, sole_tenants, loaded, cands, segments, solver)."""


def _worker_start(loaded: LoadedPlan, cands: CandidateSet, solver: str) -> None:
    """Each re-solve process builds the program once (below the plan's own solve: they start while it runs)."""
    segments = _segments(loaded, cands)
    sole_tenants = _sole_tenant_costs(loaded, cands, segments, solver, strategy.POLICY)
    prog = build_model(loaded, cands, segments, cuts=True, sole_tenant=sole_tenants.costs if sole_tenants else None)
    _WORKER.update(prog=prog, sole_tenants=sole_tenants, loaded=loaded, cands=cands, segments=segments, solver=solver)


def _worker_settle(policy: SolvePolicy) -> Callable[[list[str], float], bool | None] | None:
    """The settling of sole-tenant configs (_settle_sole_tenants) in the program the process built."""
    w = _WORKER
    if not w.get("sole_tenants"):
        return None
    return lambda keys, seconds: _settle_sole_tenants(w["prog"], w["sole_tenants"], keys, w["loaded"], w["cands"],
                                                 w["segments"], w["solver"], seconds, policy=policy)


def _worker_ready() -> None:
    """Nothing: submitted once per process so the pool starts them at once."""


def _worker_force(chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
                  deadline: float, policy: SolvePolicy) -> ForcedSolve:
    """_force in a re-solve process, within the safety cap `deadline` (time.monotonic, shared by the processes)."""
    if deadline - time.monotonic() <= 0.05:
        return ForcedSolve(key, None, None, "not solved", 0.0)
    return _force(_WORKER["prog"], chosen, workload, key, solver, gap_target, deadline - time.monotonic(),
                  _worker_settle(policy), policy)


def _worker_kept(chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
                 deadline: float, policy: SolvePolicy) -> float | None:
    """The cost of the plan with `workload` forced onto `key` and every other choice kept (None: none found)."""
    return _kept_price(_WORKER["prog"], chosen, workload, key, solver, gap_target,
                       max(0.05, deadline - time.monotonic()), _worker_settle(policy), policy)


def _kept_price(prog: Program, chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
                seconds: float, settle: Callable[[list[str], float], bool | None] | None = None,
                policy: SolvePolicy = DEFAULT_POLICY) -> float | None:
    """_others_kept's plan cost, its sole-tenant configs' costs settled first (None: no plan, or not settled);
    `seconds`: the safety cap."""
    t0 = time.perf_counter()
    if settle is not None and settle([*chosen.values(), key], seconds) is None:
        return None
    quick = _others_kept(prog, chosen, workload, key, solver, gap_target,
                         max(0.05, seconds - (time.perf_counter() - t0)), policy)
    return quick.objective if quick.status in ("optimal", "feasible") else None


def _force(prog: Program, chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
           seconds: float, settle: Callable[[list[str], float], bool | None] | None = None,
           policy: SolvePolicy = DEFAULT_POLICY) -> ForcedSolve:
    """`workload` forced onto `key` and the whole program re-solved around it: a quick plan with every other choice
    kept (policy.node_limit nodes), then the search from it within the search step's share of the nodes (policy.work)
    — work, so the price is the same on every machine; `seconds` is only the safety cap. `settle(keys, seconds)`
    makes chosen sole-tenant configs' costs exact (_settle_sole_tenants): a price is only taken from a plan whose
    sole-tenant configs are priced whole."""
    t0 = time.perf_counter()

    def left() -> float:
        return max(0.05, seconds - (time.perf_counter() - t0))

    # branch and bound: every node-rounding row, unless they would swamp the program
    _cuts_for_search(prog, policy)
    warm, best, best_key = None, None, key
    variants = frozenset(c.key for c in prog.cands.by_workload[workload]
                         if without_ceiling(c.key) == without_ceiling(key))  # its hardware at every ceiling
    if settle is not None and settle([*chosen.values(), key], left()) is None:
        return ForcedSolve(key, None, None, "not solved", time.perf_counter() - t0)
    quick = _others_kept(prog, chosen, workload, key, solver, gap_target, left(), policy)
    if quick.status in ("optimal", "feasible") and quick.objective is not None:
        warm, best = prog.values(), quick.objective
    for _ in range(policy.settle_rounds):
        with prog.choices_fixed({workload: variants}, held={workload}):  # every contract period's
            full = solve(prog.prob, solver, time_limit_s=left(), mip_gap=gap_target, warm_start=warm,
                         node_limit=policy.work.step("search")[0], threads=policy.threads)
        if full.status == "infeasible":
            return ForcedSolve(key, None, None, "infeasible", time.perf_counter() - t0)
        found = full.status in ("optimal", "feasible") and full.objective is not None
        picked = prog.solution().chosen[workload] if found else key
        rose = settle(list(prog.solution().chosen.values()), left()) if found and settle is not None else False
        if rose is None:  # its sole-tenant configs could not be priced whole: its price is not taken
            found = False
        if not rose:
            break
        warm = None  # the plan's own price rose: search again
    if found and (best is None or full.objective < best):
        best, best_key = full.objective, picked
    bound = full.bound if full.status in ("optimal", "feasible") else None
    if best is None:
        return ForcedSolve(key, None, bound, "not solved", time.perf_counter() - t0)
    gap = _gap(best, bound)
    status = "optimal" if gap is not None and gap <= gap_target + 1e-12 else "bounded"
    return ForcedSolve(key, best, bound, status, time.perf_counter() - t0, best_key)
