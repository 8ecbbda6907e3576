"""The Python API: plan → candidates → integer program → PlanResult. The CLI is a thin layer over this.

    from optimizer.pipeline import solve_plan
    result = solve_plan("plans/q4.yaml")
    result.cost_total, result.workloads_df(), result.purchases_df(), result.hourly_df()
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from optimizer.candidates.build import build_candidates, unreachable_slo
from optimizer.candidates.prune import prune_dominated, ranked_alternatives
from optimizer.candidates.types import CandidateSet, Dropped
from optimizer.errors import (
    InfeasiblePlan,
    PlanError,
    Problem,
    SolverError,
    unknown_id_fix,
)
from optimizer import vocab
from optimizer.inputs import estimates, months, scenarios
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.optimize.forcing import ForcedSolve, solve_and_force
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.strategy import SolveOptions, settings, solve_candidates
from optimizer.results import decision, sharing
from optimizer.results.baseline import Baseline, configs_key, describe, penalties
from optimizer.results.baseline import kept as last_kept
from optimizer.results.extract import extract
from optimizer.results.jsonio import read_result
from optimizer.results.ledger import carry_commitments, with_carry
from optimizer.results.types import PlanResult
from optimizer.studies.value import SideProcess, facility_value, scenario_value

__all__ = ["SolveOptions", "solve_plan", "explain", "load_side", "Explanation", "Alternative"]


def as_solved(plan: LoadedPlan | Path | str, extra_catalogs: list[Path | str] = ()) -> LoadedPlan:
    """The plan as the program sees it: loaded, and with demand that changes by month cut into one day
    type per month (inputs.months), the estimator's error applied (inputs.estimates), and with scenarios
    one per scenario (inputs.scenarios)."""
    return scenarios.expand(estimates.expand(months.expand(plan if isinstance(plan, LoadedPlan)
                                                           else load_plan(plan, list(extra_catalogs)))))


def solve_plan(plan: LoadedPlan | Path | str, options: SolveOptions = SolveOptions(),
               extra_catalogs: list[Path | str] = (), baseline: Baseline | None = None,
               carry: PlanResult | Path | str | None = None, side_process: bool = True) -> PlanResult:
    """Plan → candidates → integer program → solved PlanResult.

    With a `baseline` (the last result, results.baseline.load_baseline) each workload keeps its last
    choice unless moving saves more than policy.change_threshold of its cost. With `carry` (the last
    result: its JSON or a PlanResult) its new reservations and the contracts still running on this
    plan's first day join the plan's commitments (results.ledger.carry_commitments).
    A plan with scenarios also solves for what deciding under uncertainty is worth (scenario_value); with
    `side_process` (and more than one core) those solves run in a process beside the plan's own solve once it
    has taken SIDE_AFTER_S (studies.value.SideProcess) — a sweep, whose points already fill the cores, says False.
    Raises PlanError (bad input), InfeasiblePlan (constraints cannot all be met, with reasons)
    or SolverError (solver failure, or a time limit with no feasible plan).
    """
    stated = estimates.expand(months.expand(plan if isinstance(plan, LoadedPlan)
                                            else load_plan(plan, list(extra_catalogs))))
    carried = None
    if carry is not None:
        stated, carried = carry_commitments(stated, carry)
    loaded = scenarios.expand(stated)
    cands = build_candidates(loaded)
    if baseline is not None:
        return _as_run(with_carry(solve_with_baseline(loaded, cands, options, baseline), carried), loaded, options)
    with SideProcess(stated, loaded, options, enabled=side_process) as side:
        sol, info = solve_candidates(loaded, cands, options)
        result = extract(loaded.plan, cands, sol, info, loaded.catalog.offers, loaded.file)
        result = scenario_value(stated, loaded, options, result, side.result())
    return _as_run(with_carry(facility_value(loaded, cands, options, result), carried), loaded, options)


def _as_run(result: PlanResult, loaded: LoadedPlan, options: SolveOptions) -> PlanResult:
    """The result's policy with the time limit, work limit and gap target the solve ran with: --time-limit and
    --work-limit override the plan's, and the reports state the limits the solve had, not the plan's."""
    _solver, limit, gap = settings(loaded, options)
    if result.policy.get("time_limit_s") != limit or result.policy.get("mip_gap") != gap:
        result = replace(result, policy={**result.policy, "time_limit_s": limit, "mip_gap": gap})
    if options.work_limit is not None and isinstance(result.policy.get("work_limit"), dict):
        work = loaded.plan.policy.work_limit.model_copy(update={
            "nodes": max(1, round(loaded.plan.policy.work_limit.nodes * options.work_limit)),
            "lp_iterations": max(1, round(loaded.plan.policy.work_limit.lp_iterations * options.work_limit))})
        result = replace(result, policy={**result.policy, "work_limit": work.model_dump()})
    return decision.marked(result)  # provisional by the gap the solve ran to, whichever plan it returned


def solve_with_baseline(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions,
                        baseline: Baseline) -> PlanResult:
    """Solve with the switching costs; keep the baseline's choices outright unless that is dearer.

    A solve stopped within mip_gap may return a plan up to that gap above the best: it could move a
    workload for less than its threshold. So when the solve is not exact, the plan with every last
    choice kept (a fast solve: the choices are fixed) is solved too, and the moves are taken only
    if, even charged their switching costs, they beat it.
    """
    plan = loaded.plan
    pen = penalties(baseline, cands)
    sol, info = solve_candidates(loaded, cands, options, baseline=pen)
    result = extract(plan, cands, sol, info, loaded.catalog.offers, loaded.file)
    gap = plan.policy.mip_gap if options.mip_gap is None else options.mip_gap
    start = plan.start_date
    moved = [w for w, (key, _c) in pen.items()  # the hardware moved (its API ceiling follows the demand)
             if not last_kept(configs_key(result.workload(w)), key, start)]
    notes = []
    if moved and (gap > 0 or info.status != "optimal"):
        try:
            ksol, kinfo = solve_candidates(loaded, cands, options, fix={w: k for w, (k, _c) in pen.items()})
        except (InfeasiblePlan, SolverError):
            ksol = None
        if ksol is not None:
            kept = extract(plan, cands, ksol, kinfo, loaded.catalog.offers, loaded.file)
            charged = result.cost_total + sum(sol.switching_cost.get(w, 0.0) for w in moved)
            if charged >= kept.cost_total - 1e-6:
                notes.append(f"the solve (within its {gap:.2%} gap) moved {', '.join(moved)} for less than the "
                             "threshold; every last choice is kept instead (the status is that plan's)")
                result = kept
    info_b = describe(baseline, result, cands, plan.policy.change_threshold)
    return replace(result, baseline=replace(info_b, notes=notes + info_b.notes))


@dataclass(frozen=True)
class Alternative:
    key: str
    label: str
    total_cost: float | None
    """Horizon cost of the best plan with this config forced; None when no plan meets the constraints."""
    difference: float | None
    goodput_output_tokens_per_s: float
    goodput_source: str
    gpus_at_peak: int
    note: str = ""
    bound: float | None = None
    """A proven lower bound on `total_cost` (equal within the gap when `proven`)."""
    proven: bool = False
    """True: `total_cost` is within the plan's mip_gap of the best plan with this config forced; False:
    its search stopped short (its work limit, or the safety cap) and the best plan lies between `bound` and
    `total_cost`."""
    seconds: float = 0.0


@dataclass(frozen=True)
class Explanation:
    result: PlanResult | None
    """The solved plan; None when no config of this workload meets its SLO (see `unreachable`)."""
    workload: str
    alternatives: list[Alternative]
    dropped: list[Dropped]
    unreachable: str | None = None
    """Why no config serves the workload: the best TTFT and TPOT reached, against the targets."""
    sharing: str | None = None
    """policy.share_pools: whether sharing a GPU beats a MIG slice or GPUs of its own (results.sharing); None: the
    workload has no shared config."""


def explain(plan: LoadedPlan | Path | str, workload: str, options: SolveOptions = SolveOptions(),
            count: int = 5, extra_catalogs: list[Path | str] = (),
            carry: PlanResult | Path | str | None = None,
            on_progress: Callable[[int, int, "Alternative"], None] | None = None) -> Explanation:
    """The chosen config of one workload and the next best ones, each forced in the solved program and
    the whole plan re-solved around it (with `carry`, on the plan with the last result's contracts
    added, as solve_plan does). `options.time_limit_s` is the total for the solve and every re-solve;
    `on_progress(done, total, alternative)` is called as each re-solve finishes."""
    loaded = as_solved(plan, list(extra_catalogs))
    carried = None
    if carry is not None:
        loaded, carried = carry_commitments(loaded, carry)
    names = [w.name for w in loaded.plan.workloads]
    if workload not in names:
        raise PlanError(f"unknown workload '{workload}' — {unknown_id_fix('workloads', workload, names)}")
    cands = build_candidates(loaded, frozenset({workload}), strict=False)
    dropped = [d for d in cands.dropped if d.workload == workload]
    if not cands.by_workload[workload]:  # nothing meets its SLO: what was tried is the answer
        w = next(w for w in loaded.plan.workloads if w.name == workload)
        return Explanation(None, workload, [], dropped, unreachable_slo(w, dropped))
    if not all(cands.by_workload.values()):
        build_candidates(loaded)  # another workload has no config: its message, its exit code
    # The configs that look cheapest on their own first; each is re-solved in the solved program.
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    ranked = ranked_alternatives(loaded.plan, offers, cands.by_workload, {w.name: "" for w in loaded.plan.workloads})
    by_key = {c.key: c for c in ranked[workload]}
    order = [c.key for c in ranked[workload]]
    if any(c.share for c in ranked[workload]):  # price sharing against a MIG slice and a GPU of its own first
        order = sharing.first_of_each_way(order, {c.key: sharing.way_of(c.share, c.mig) for c in ranked[workload]})

    def alternative(f: ForcedSolve, plan: SolveInfo) -> Alternative:
        c = by_key.get(f.chosen or f.key) or by_key[f.key]  # the ceiling its plan took
        base = plan.objective or 0.0  # the program's objective is the plan's cost (new spend)
        note = {"infeasible": "no plan meets the constraints with it", "not solved": "no plan found within the limits",
                "bounded": "the search stopped short: the best plan with it lies between the bound and this"
                }.get(f.status, "")
        engine = vocab.shown_engine(c.engine)
        label = c.label + (f" · {engine}" if engine else "")  # the engine it was sized on, as the plan's row says
        return Alternative(c.key, label, f.objective, None if f.objective is None else f.objective - base,
                           c.goodput, c.goodput_source, max(c.gpus.values()) if c.gpus else 0, note, f.bound,
                           f.status == "optimal", f.seconds)

    def done(i: int, n: int, f: ForcedSolve, plan: SolveInfo) -> None:
        if on_progress is not None:
            on_progress(i, n, alternative(f, plan))

    # The plan itself is solved with the workload's dominated configs pruned (exact: the same optimum from a
    # smaller program); the forced re-solves keep every config, each one is priced
    w = next(w for w in loaded.plan.workloads if w.name == workload)
    kept, _dominated = prune_dominated(cands.by_workload[workload], w, loaded.plan, cands.demand.get(workload)) \
        if w.name not in loaded.plan.split_workloads() else (cands.by_workload[workload], [])
    plan_cands = replace(cands, by_workload={**cands.by_workload, workload: kept})
    sol, info, forced = solve_and_force(loaded, cands, options, workload, order, count,
                                        done, plan_cands=plan_cands)
    result = with_carry(extract(loaded.plan, cands, sol, info, loaded.catalog.offers, loaded.file), carried)
    alts = [alternative(f, info) for f in forced]
    alts.sort(key=lambda a: (a.total_cost is None, a.total_cost or 0.0, a.key))
    verdict = None
    if any(c.share for c in cands.by_workload[workload]):
        c0 = next(c for c in cands.by_workload[workload] if c.key == sol.chosen[workload])
        priced = [sharing.Priced(sharing.way_of(by_key[a.key].share, by_key[a.key].mig), a.label,
                                 a.total_cost if a.proven else None) for a in alts if a.key in by_key]
        verdict = sharing.sharing_verdict(sharing.Priced(sharing.way_of(c0.share, c0.mig), c0.label, result.cost_total),
                                          priced, result.currency, loaded.plan.policy.share_mode)
    return Explanation(result, workload, alts, dropped, sharing=verdict)


def load_side(path: Path | str, options: SolveOptions | None = None,
              extra_catalogs: list[Path | str] = ()) -> tuple[PlanResult, str]:
    """One side of `planopt compare`: a result JSON as saved by `planopt solve`, or a plan YAML solved now."""
    path = Path(path)
    if not path.exists():
        raise PlanError(Problem("file not found", "give a plan YAML or a result JSON from `planopt solve`",
                                file=str(path)))
    if path.suffix.lower() == ".json":
        return read_result(path), "result"
    return solve_plan(path, options or SolveOptions(), list(extra_catalogs)), "plan"
