"""The value of information, solved beside a plan: what deciding under uncertainty is worth (the plan decided
for the mean scenario, run through the scenarios; each scenario's best plan had it been known: the value of
the stochastic solution and each scenario's regret), and what one more MW or rack position would save.

Each is a further solve of the plan's program, or of one near it; solve_plan (optimizer.pipeline) runs them
and puts what they find in the result (risk, own.facility). The scenario solves may run in a process of their
own beside the plan's solve (SideProcess), on optimizer.parallel's pool.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from optimizer import parallel
from optimizer.candidates.build import build_candidates
from optimizer.candidates.overflow import without_ceiling
from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.errors import InfeasiblePlan, SolverError
from optimizer.formatting import money
from optimizer.inputs import scenarios
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import demand_factor
from optimizer.inputs.schema.plan import Risk, Scenario
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.strategy import SolveOptions, settings, solve_candidates
from optimizer.results.extract import extract
from optimizer.results.types import PlanResult

__all__ = ["SideSolves", "side_solves", "scenario_value", "SideProcess", "side_budget", "facility_value"]


def _mean_scenario(plan) -> Scenario:
    """The scenarios' weighted mean: each workload's demand, each price key and goodput averaged."""
    scns = plan.scenarios
    demand = {w.name: sum(s.weight * demand_factor(s, w) for s in scns) for w in plan.workloads if w.demand}
    keys = sorted({k for s in scns for k in s.prices})
    prices = {k: sum(s.weight * s.prices.get(k, 1.0) for s in scns) for k in keys}
    return Scenario(name="mean", weight=1.0, demand=demand, prices=prices,
                    goodput=sum(s.weight * s.goodput for s in scns))


@dataclass(frozen=True)
class SideSolves:
    """What scenario_value learns from its own solves, before it is set against the plan solved: the plan decided
    for the mean scenario, run through the scenarios, and each scenario's best plan had it been known."""

    mean: PlanResult | None
    """The mean scenario's plan run through the scenarios (its first stage held); None when not solved."""
    mean_info: SolveInfo | None
    best: dict[str, tuple[float, float]]
    """Scenario → (the best plan's cost found for it alone — its own solve's, or the mean plan's hardware's there
    when cheaper — and the least that cost can be: its own solve's bound)."""
    missed: list[str]
    """Scenarios whose own solve found no plan in time."""
    unproven: list[str]
    """The solves their work limit (or the safety cap) stopped short of the gap, said as the notes say them."""
    capped: list[str] = field(default_factory=list)
    """The solves the safety cap cut short (what they found may differ on a faster machine)."""


def side_solves(stated: LoadedPlan, loaded: LoadedPlan, options: SolveOptions,
                deadline: Callable[[], float] | None = None) -> SideSolves:
    """scenario_value's solves: the plan for the mean scenario, then run through every scenario with its first
    stage held; each scenario alone, on the mean plan's hardware and then free. Each stops on the plan's work
    limit, as the plan's own solve does (solve_candidates), so what they find — and the mean plan, which may be
    returned in place of the plan's (scenario_value) — is the same on every machine. `deadline()` (time.monotonic;
    read before each solve, it may move) is only their safety cap, by default half the time limit from now (at
    least 5 s): a solve it cuts short is said so, and those after it are not run. Nothing in them depends on the
    two-stage plan, so they may run beside its solve (SideProcess)."""
    base = stated
    if deadline is None:
        deadline = _fixed(time.monotonic() + side_budget(settings(stated, options)[1]))
    unproven: list[str] = []
    capped: list[str] = []

    def before_building() -> None:  # building a side program counts against the safety cap too
        if deadline() - time.monotonic() < 0.5:
            raise SolverError("no time left")

    def solve_within(plan: LoadedPlan, cands: CandidateSet, what: str, kind: str, proof: bool = True, **kw):
        # proof: a solve whose gap the result's basis answers for (one that only finds a cheaper plan is not);
        # `kind` (mean, run, hardware, alone) names the solve
        left = deadline() - time.monotonic()
        if left < 0.5:
            raise SolverError("no time left")
        sol, info = solve_candidates(plan, cands, replace(options, alternatives=0, progress=None,
                                                          time_limit_s=left), **kw)
        if any(w.stopped_by == "safety cap" for w in info.work):
            capped.append(what)
        if info.status != "optimal" and proof:
            unproven.append(what)
        return sol, info

    other = einfo = msol = None
    try:
        before_building()
        mean = scenarios.expand(replace(base, plan=base.plan.model_copy(
            update={"scenarios": [_mean_scenario(base.plan)]})))
        mcands = build_candidates(mean)
        msol, _ = solve_within(mean, mcands, "the mean-scenario plan", "mean")
        before_building()
        held = _held(build_candidates(loaded), msol.chosen)
        if held is None:  # dominated over these scenarios, not over their mean: kept for this evaluation
            held = _held(build_candidates(loaded, keep_dominated=frozenset(msol.chosen)), msol.chosen)
        if held is not None:
            esol, einfo = solve_within(loaded, held, "its run through the scenarios", "run",
                                       reserved={**msol.reserved_nodes, **msol.reserved_later,
                                                 **{("spend", k): u for k, u in msol.spend_new.items()}})
            other = extract(loaded.plan, held, esol, einfo, loaded.catalog.offers, loaded.file)
    except (InfeasiblePlan, SolverError):
        other = einfo = None
    best: dict[str, tuple[float, float]] = {}
    missed: list[str] = []
    for one in stated.plan.scenarios:
        try:
            before_building()
            alone = scenarios.expand(replace(base, plan=base.plan.model_copy(
                update={"scenarios": [one.model_copy(update={"weight": 1.0})],
                        "policy": base.plan.policy.model_copy(update={"risk": Risk()})})))
            acands = build_candidates(alone)
            found = []
            same = _same_hardware(acands, msol.chosen) if msol is not None else None
            if same is not None:
                # The mean plan's hardware, its reservations and overflow ceilings chosen for this scenario alone:
                # a plan for it quickly (one config per workload), where the free solve below may stop far above
                # its best — and a regret measured against a dear "best" plan reads too low.
                try:
                    hsol, hinfo = solve_within(alone, same, f"the mean plan's hardware in {one.name}", "hardware",
                                               proof=False)
                    found.append(extract(alone.plan, same, hsol, hinfo, loaded.catalog.offers, loaded.file).cost_total)
                except (InfeasiblePlan, SolverError):
                    pass  # the free solve's plan alone is the best found
            asol, ainfo = solve_within(alone, acands, f"the best plan for {one.name}", "alone")
            cost = extract(alone.plan, acands, asol, ainfo, loaded.catalog.offers, loaded.file).cost_total
            least = _least(cost, ainfo)  # the free solve's bound: the hardware-held one bounds only its own configs
            best[one.name] = (min([cost, *found]), min([least, *found]))
        except (InfeasiblePlan, SolverError):
            missed.append(one.name)
    return SideSolves(mean=other, mean_info=einfo, best=best, missed=missed, unproven=unproven, capped=capped)


def scenario_value(stated: LoadedPlan, loaded: LoadedPlan, options: SolveOptions, result: PlanResult,
                   side: SideSolves | None = None) -> PlanResult:
    """What deciding under uncertainty is worth, for a plan with scenarios (each a further solve, side_solves;
    `side` when they ran beside the plan's own solve):

      - the value of the stochastic solution: the plan decided for the mean scenario (its configs,
        reservations and servers bought), then run through every scenario — hourly capacity bought as
        each needs it — against this plan, by the same risk measure;
      - each scenario's regret: this plan's cost there against the best plan had it been known — and, when
        that scenario's own solve stops short of the gap, the most the regret can be (against its bound).
    """
    if result.risk is None:
        return result
    risk = result.risk
    if side is None:
        side = side_solves(stated, loaded, options)
    mean_cost = mean_least = None
    adopted = False
    if side.mean is not None and side.mean_info is not None:
        mean_cost = side.mean.cost_total
        mean_least = _least(mean_cost, side.mean_info)
        if _cheaper(side.mean_info, result.solver):
            result = _adopted(result, side.mean, side.mean_info, settings(loaded, options)[2])
            risk = result.risk
            adopted = True
    regret: dict[str, float] = {}
    upto: dict[str, float] = {}
    missed = [row.name for row in result.scenarios if row.name in side.missed]
    for row in result.scenarios:
        if row.name in side.best:
            best, least = side.best[row.name]
            regret[row.name] = max(0.0, row.cost_total - best)
            upto[row.name] = max(regret[row.name], row.cost_total - least)
    unproven = side.unproven
    vss = None if mean_cost is None else mean_cost - risk.value
    vss_range = None
    if mean_cost is not None and mean_least is not None:
        # the mean plan's cost over the scenarios is at least its solve's bound, this plan's optimum at least
        # this solve's: the value lies between, and is a range when either solve stopped short of the gap
        least = _least(risk.value, result.solver)
        if mean_least < mean_cost or least < risk.value:
            vss_range = [mean_least - risk.value, mean_cost - least]
    gaps = ([] if mean_cost is not None else ["no value of the stochastic solution"]) + (
        [f"no regret for {', '.join(missed)}"] if missed else [])
    parts = (["partly computed: " + " and ".join(gaps) + " (the time limit ran out, or a solve failed)"] if gaps
             else []) + (["estimates: the work limit stopped " + ", ".join(unproven) + " short of the gap"]
                         if unproven else []) + (
        ["the time limit (a safety cap) cut short " + ", ".join(side.capped)] if side.capped else [])
    basis = "; ".join(parts) or "optimal"
    return replace(result, risk=replace(risk, mean_plan_cost=mean_cost, vss=vss, vss_range=vss_range,
                                            regret=regret, regret_upto=upto, basis=basis, mean_plan_returned=adopted))


SIDE_AFTER_S = 5.0
"""A scenario plan's own solve still running after this many seconds has scenario_value's solves started beside
it in another process (SideProcess; 0: at once): a plan solved sooner does them after it, without a process to
start (a second or two to import and build), which would cost a small plan more than it saves."""


class SideProcess:
    """scenario_value's solves (side_solves) in a process of their own, beside the plan's solve, on the core its
    solver leaves idle (HiGHS solves on one thread): after the plan's solve they would add up to half its time
    limit to the wait. Started by a timer once the plan's solve has run SIDE_AFTER_S; never for a plan without
    scenarios, with one core, or when not `enabled`. They share the time limit from their start — the plan's
    own solve is still running — until the plan is solved (result()), then at most side_budget more, as when
    they run after it: so they end no later than running them after would (but for a solve already running
    when the plan is solved: it keeps its share), and use the idle core for as long as the plan's solve
    leaves it idle. result() is what they found (waiting for them), or None
    when they never started or their process failed: scenario_value then runs them itself, after the solve.
    The process (optimizer.parallel's pool) runs below the plan's solve and is stopped on leaving."""

    def __init__(self, stated: LoadedPlan, loaded: LoadedPlan, options: SolveOptions, enabled: bool = True):
        self._args = (stated, loaded, replace(options, progress=None))
        self._limit = settings(stated, options)[1]
        self._deadline: Any = None
        self._lock = threading.Lock()
        self._pool: cf.ProcessPoolExecutor | None = None
        self._future: cf.Future | None = None
        self._closed = False
        wanted = enabled and (os.cpu_count() or 1) > 1 and scenarios.scenario_days(loaded.plan) is not None
        self._timer = threading.Timer(SIDE_AFTER_S, self._start) if wanted and SIDE_AFTER_S > 0 else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()
        elif wanted:
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._deadline = parallel.spawn_context().Value("d", time.monotonic() + self._limit)
                self._pool = parallel.process_pool(1, below=True, initializer=_side_worker,
                                                   initargs=(self._deadline,))
                self._future = self._pool.submit(_side_solves_here, *self._args)
            except OSError:  # no process to be had: scenario_value solves them itself
                self._pool = self._future = None

    def result(self) -> SideSolves | None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            future = self._future
        if future is None:
            return None
        with self._deadline.get_lock():  # the plan is solved: no longer than solving them after it would take
            self._deadline.value = min(self._deadline.value, time.monotonic() + side_budget(self._limit))
        try:
            return future.result()
        except (BrokenProcessPool, OSError):
            return None

    def __enter__(self) -> SideProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            pool = self._pool
        if pool is not None:
            parallel.close_pool(pool)


def _fixed(at: float) -> Callable[[], float]:
    return lambda: at


def side_budget(limit: float) -> float:
    """The seconds scenario_value's solves may take once the plan is solved: half its time limit, at least 5 s."""
    return max(5.0, limit / 2)


_SIDE: dict[str, Any] = {}
"""In a SideProcess's process: the deadline shared with the planopt that started it."""


def _side_worker(deadline: Any) -> None:
    _SIDE["deadline"] = deadline


def _side_solves_here(stated: LoadedPlan, loaded: LoadedPlan, options: SolveOptions) -> SideSolves:
    shared = _SIDE["deadline"]
    return side_solves(stated, loaded, options, deadline=lambda: shared.value)


def _cheaper(mine: SolveInfo, theirs: SolveInfo) -> bool:
    """True when a plan of the same program costs more than half a unit of money less than the solve's plan."""
    return mine.objective is not None and theirs.objective is not None and mine.objective < theirs.objective - 0.5


def _adopted(result: PlanResult, mean: PlanResult, info: SolveInfo, gap_target: float) -> PlanResult:
    """The mean scenario's plan, run through the scenarios, in place of the two-stage solve's own plan: it is a
    plan of the same program (its first stage held), and cheaper by the same measure when the time limit
    stopped the two-stage solve far from its optimum. The two-stage solve's bound still bounds every plan,
    so the gap is this plan's distance to it; the candidates are the two-stage program's, the alternatives
    (priced against the other plan) are not kept."""
    before = result.solver
    obj = float(info.objective or 0.0)
    gap = None if before.bound is None else max(0.0, obj - before.bound) / max(abs(obj), 1e-9)
    status = "optimal" if gap is not None and gap <= gap_target + 1e-9 else "feasible"
    solver = replace(before, status=status, objective=obj, gap=gap, seconds=before.seconds + info.seconds,
                     overhead_s=before.overhead_s + info.overhead_s)
    chosen = {w.name: w.key for w in mean.workloads}
    known = {(r.workload, r.key) for r in result.candidates}
    rows = ([replace(r, chosen=chosen.get(r.workload) == r.key) for r in result.candidates]
            if all((w, k) in known for w, k in chosen.items()) else mean.candidates)
    cut = ("" if before.gap is None else " (within the plan's gap)" if before.status == "optimal"
           else f" (stopped by the time limit {before.gap:.1%} from its bound)")
    note = (f"the plan decided for the mean scenario, run through the scenarios, costs "
            f"{money(mean.cost_total, mean.currency)} by the risk measure against "
            f"{money(result.cost_total, result.currency)} for "
            f"the two-stage solve's own plan{cut}: it is the plan returned, with the two-stage solve's bound; "
            "raise the time limit for a two-stage plan (alternatives are not priced for it)")
    return replace(mean, status=status, solver=solver, candidates=rows, dropped=result.dropped,
                   pruned=result.pruned, alternatives=[], notes=[*mean.notes, note])


def _least(cost: float, info: SolveInfo) -> float:
    """The least a solved cost can be: the cost itself when the solve proved its gap, else as far below it as
    the solve's best bound is below the plan it found."""
    if info.status == "optimal" or info.bound is None or info.objective is None:
        return cost
    return cost - max(0.0, info.objective - info.bound)


def _same_hardware(cands: CandidateSet, chosen: dict[str, str]) -> CandidateSet | None:
    """The candidates cut to another plan's hardware (`chosen`: workload → key): each workload's configs on its
    offer, precision and parallelism, at every API overflow ceiling this plan has — the program picks one. None
    when some workload's hardware is not here."""
    out: dict[str, list[Candidate]] = {}
    for w, cs in cands.by_workload.items():
        key = chosen.get(w)
        same = [c for c in cs if without_ceiling(c.key) == without_ceiling(key)] if key is not None else []
        if not same:
            return None
        out[w] = same
    return replace(cands, by_workload=out)


def _held(cands: CandidateSet, chosen: dict[str, str]) -> CandidateSet | None:
    """The candidates cut to another plan's configs (`chosen`: workload → key): each workload's own config,
    or, when that config's API overflow ceiling is not one of this plan's (the ceilings are drawn from each
    plan's demand: the mean scenario's are not the scenarios'), the same hardware at each ceiling this plan
    has (_same_hardware), the program picking one. None when some config is not here at all."""
    same = _same_hardware(cands, chosen)
    if same is None:
        return None
    return replace(same, by_workload={w: [c for c in cs if c.key == chosen[w]] or cs
                                      for w, cs in same.by_workload.items()})


FACILITY_STEPS = (("power_kw", 1000.0, "power_kw_plus_1000"), ("racks", 1, "racks_plus_1"))
"""The facility limits priced after a solve: one more MW, one more rack position."""


def facility_value(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions, result: PlanResult) -> PlanResult:
    """What one more MW or rack position would save: the plan re-solved with that limit raised (only
    when the plan may buy servers). A limit binds when raising it saves money (a limit that is full
    but worth nothing more does not bind)."""
    own = result.own
    if own is None or not any(o.buy is not None for o in loaded.catalog.offers.values()):
        return result
    fac = loaded.plan.facility
    quiet = replace(options, alternatives=0, progress=None)
    marginal: dict[str, float] = {}
    binding = list(own.facility.binding)
    for key, step, name in FACILITY_STEPS:
        value = getattr(fac, key)
        if value is None:
            continue
        more = loaded.plan.model_copy(update={"facility": fac.model_copy(update={key: value + step})})
        try:
            sol, info = solve_candidates(replace(loaded, plan=more), cands, quiet)
        except (InfeasiblePlan, SolverError):
            continue
        other = extract(more, cands, sol, info, loaded.catalog.offers, loaded.file)
        marginal[name] = max(0.0, result.cost_total - other.cost_total)
        if marginal[name] > 1.0 and key not in binding:
            binding.append(key)
        elif marginal[name] <= 1.0 and key in binding:
            binding.remove(key)
    facility = replace(own.facility, marginal=marginal, binding=[k for k, _s, _n in FACILITY_STEPS if k in binding])
    return replace(result, own=replace(own, facility=facility))

