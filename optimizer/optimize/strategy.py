"""How a plan is solved (solve_candidates), in named steps, each exact about what it proves:

    relax               the LP relaxation and rounds of valid inequalities: a lower bound
    round_plan          a plan from it: its configs held, or configs chosen whole, the node counts solved whole
    search              the whole integer program from that plan, bounded to cheaper plans
    settle              sole-tenant configs (alone at their offer, priced apart at a bound) made exact
    price_alternatives  each workload's next configs priced with every other choice kept

then the tie-break pass among plans of equal cost. Every tuning number they read is a field of POLICY
(policy.SolvePolicy). Why a plan is infeasible, in words: diagnosis.py; explain's forced re-solves: forcing.py."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.prune import ranked_alternatives
from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.errors import SolverError
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import scenario_days
from optimizer.optimize.calendar import Segments, segment
from optimizer.optimize.diagnosis import diagnose
from optimizer.optimize.cuts import add_cuts, cut_rows_left, define_pooled_rounding, separate_cuts
from optimizer.optimize.model import build_model
from optimizer.optimize.program import Program, bounds_within, reduced_costs
from optimizer.optimize.tiebreak import define_tie_break
from optimizer.optimize.policy import SolvePolicy
from optimizer.optimize.solution import Forced, Solution, SolveInfo
from optimizer.optimize.solver import Basis, large_for, solve

POLICY = SolvePolicy()
"""The policy every step reads when it runs: replace it (dataclasses.replace) for another, as tests do."""


@dataclass(frozen=True)
class SolveOptions:
    solver: str | None = None
    time_limit_s: float | None = None
    mip_gap: float | None = None
    alternatives: int = 3
    """Other configs per workload to price in the solved program (price_alternatives); 0: none."""
    progress: Callable[[str, float, float | None, float | None], None] | None = None
    """Hears the solve: (phase, seconds since the start, best plan's cost, best bound). Phases: "bound"
    (the relaxation), "plan" (the rounded plan), "search" (branch and bound, HiGHS only), "alternatives"."""


def _segments(loaded: LoadedPlan, cands: CandidateSet) -> Segments:
    used = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    return segment(loaded.plan, cands.offer_ids(), ownership.arrivals(loaded.plan, used))


def solve_candidates(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions = SolveOptions(),
                     fix: dict[str, str] | None = None,
                     baseline: dict[str, tuple[str, float]] | None = None,
                     reserved: dict[tuple[str, str | None, str], float] | None = None,
                     sole_tenants_apart: bool = True) -> tuple[Solution, SolveInfo]:
    """Build and solve; `fix` maps workload → candidate key to force a choice (used by explain);
    with `options.alternatives`, each workload's next configs are priced after the solve (price_alternatives);
    `baseline` maps workload → (last key, last cost) for the switching costs (model.define_baseline);
    `reserved` fixes every reserved (and bought) level R[o,p,k] — with `fix`, the whole first stage of
    a two-stage plan, to price another plan's decision over these scenarios. A program whose configs are all
    settled, and the alternatives' pricing, take cuts.define_pooled_rounding's rows (POLICY.pooled_solvers).

    Configs alone at their offer are priced apart (model.define_sole_tenant; `sole_tenants_apart` False keeps every
    offer in the program). Then three steps, each exact about what it proves:
      1. the LP relaxation: a lower bound, and each workload's most-chosen config;
      2. those configs fixed, the node counts solved as an integer program: a feasible plan —
         when it is within mip_gap of the bound, the plan is proven optimal and we stop. When those
         configs cannot all be held (caps), or their plan is far from the bound on a large program
         (POLICY.far_from_bound), the program with only its once-made decisions whole picks configs (its bound, a
         relaxation's, replaces the LP's when higher) and they are held, the cheaper plan kept
         (_choices_solved); while that plan is not proven, the same program with the rows that round the pools'
         GPUs to whole nodes together at its configs is solved again for its bound (_rounded_in_rounds, HiGHS);
         failing that, only the ones the relaxation is sure of are held, the solver's
         first plan with the rest free is taken, and its configs held while its hourly capacity is solved;
      3. otherwise the whole integer program with the valid inequalities added, started from
         that plan, within the time left. The proven gap is always the distance to the best bound.
    """
    solver, limit, gap_target = settings(loaded, options)
    started = time.perf_counter()
    segments = _segments(loaded, cands)
    sole_tenants = (_sole_tenant_costs(loaded, cands, segments, solver) if reserved is None and sole_tenants_apart
                    else None)
    t_build = time.perf_counter()
    prog = build_model(loaded, cands, segments, cuts=False, baseline=baseline,
                       sole_tenant=sole_tenants.costs if sole_tenants else None)
    build_s = time.perf_counter() - t_build
    for w, key in (fix or {}).items():
        prog.fix_choice(w, key)
    if solver in POLICY.pooled_solvers and _settled_configs(prog, fix or {}):
        # every config settled (a plan run through the scenarios, every last choice kept): whole nodes together
        define_pooled_rounding(prog, fix or {})
    if reserved is not None:
        for k, v in prog.reserved.items():
            v.lowBound = v.upBound = round(reserved.get(k, 0.0))
    settled = _solve_settled(prog, sole_tenants, loaded, cands, segments, options, solver, limit, gap_target, started,
                             baseline, build_s=build_s)
    if settled is None:  # a chosen config's own offer not solved whole in time: the program as it was
        try:
            return solve_candidates(loaded, cands, replace(options, time_limit_s=max(
                POLICY.settle_min_s, limit - (time.perf_counter() - started))), fix, baseline, reserved,
                sole_tenants_apart=False)
        except SolverError as e:  # said with the limit the plan gave, not the seconds this last try had left
            raise SolverError(f"{solver} stopped after {time.perf_counter() - started:.1f} s without a feasible "
                              f"plan (time limit {limit:g} s); raise policy.time_limit_s or --time-limit") from e
    prog, sol, info = settled
    changed = _cheapest_recourse(prog, info.name, limit - (time.perf_counter() - started))
    info, tidied = break_ties(prog, info)
    if changed or tidied:
        sol = prog.solution()
    if options.alternatives and not fix and info.objective is not None:
        if options.progress is not None:
            options.progress("alternatives", time.perf_counter() - started, info.objective, info.bound)
        ranked = ranked_alternatives(loaded.plan, prog.offers, cands.by_workload, sol.chosen)
        budget = min(POLICY.pricing_budget_s, max(5.0, limit / 2))
        # priced where every offer has its hours: a sole-tenant config's cost here may be only a bound
        pricing = build_model(loaded, cands, segments, cuts=True, baseline=baseline) if prog.sole_tenant else prog
        if info.name in POLICY.pooled_solvers:
            define_pooled_rounding(pricing, sol.chosen)  # every re-solve holds the plan's configs but one
        sol = replace(sol, forced=price_alternatives(pricing, sol.chosen, ranked, options.alternatives,
                                                     info.objective, info.name, gap_target, budget))
    return sol, info


@dataclass
class SoleTenantCosts:
    """Sole-tenant configs — a config whose offer no other workload can use, alone at it — each solved apart
    (model.define_sole_tenant, where the program calls them sole-tenant): first their relaxation's
    cost (a lower bound, so the program stays a relaxation of the plan), made exact — solved whole — for
    the ones a solution chooses (_settle_sole_tenants)."""

    costs: dict[str, float]
    """Config key → its cost in the program (inf: no plan at its offer serves it)."""
    exact: set[str]
    """The keys whose cost is the whole-node optimum, not a bound."""
    values: dict[str, dict[str, dict[tuple, float]]]
    """Exact key → that solve's values by variable family and key (Program's dicts), to start from."""
    fixed: float = 0.0
    """What every program of the plan costs whatever it serves (owned servers' fixed costs): not a config's."""
    upper: set[str] = field(default_factory=set)
    """Keys in `exact` whose own solve ran out of time with a plan: their cost is that plan's (an upper
    bound), so a program solved with it in is no relaxation of the plan — its bound is not kept."""


_FAMILIES = ("reserved", "on_demand", "spot", "lent", "batch_replicas", "batch_api", "committed_split")


def settle_budget(limit: float, build_s: float) -> tuple[float, float]:
    """For a program pricing sole-tenant configs at a bound, built in `build_s` seconds: (the seconds at the end of
    the limit its search leaves for settling, of those the seconds kept last for the chosen sole-tenant offers'
    hours). POLICY.settle_share of the limit — at least the hours' estimated time and a chosen offer's own solve, at
    most half the limit."""
    hours = POLICY.hours_build_factor * build_s + POLICY.hours_min_s
    reserve = min(limit / 2, max(POLICY.settle_share * limit, hours + POLICY.settle_own_min_s))
    return reserve, min(hours, reserve)


def _sole_tenant_costs(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, solver: str
                       ) -> SoleTenantCosts | None:
    """The configs whose offer no other workload can use, each one's relaxation solved alone at that offer
    (model.define_sole_tenant): a bound on what the offer costs serving it.

    Not for configs at servers of your own (the facility's power and racks tie offers together), a
    workload's only config, or scenarios weighed by cvar or worst (their measure is not a sum over offers).
    """
    plan = loaded.plan
    if scenario_days(plan) is not None and plan.policy.risk.measure != "expected":
        return None
    own = set(ownership.terms(plan, loaded.catalog.offers))
    users: dict[str, set[str]] = {}
    for c in cands.all():
        if c.offer:
            users.setdefault(c.offer, set()).add(c.workload)
    lonely = [c for w, cs in cands.by_workload.items() if len(cs) > 1 and w not in plan.split_workloads() for c in cs
              if c.offer and c.offer not in own and users[c.offer] == {w}]
    if not lonely:
        return None
    sole_tenants = SoleTenantCosts({}, set(), {}, _fixed_cost(loaded, cands, segments))
    for c in lonely:
        prog = _alone(loaded, cands, segments, c)
        out = solve(prog.prob, solver, time_limit_s=POLICY.sole_tenant_lp_s, relax=True)
        if out.status == "infeasible":  # no plan there, whole or not
            sole_tenants.costs[c.key] = math.inf
            sole_tenants.exact.add(c.key)
        elif out.status == "optimal" and out.objective is not None:
            sole_tenants.costs[c.key] = out.objective - sole_tenants.fixed
    return sole_tenants if sole_tenants.costs else None


def _fixed_cost(loaded: LoadedPlan, cands: CandidateSet, segments: Segments) -> float:
    """The objective's constant with no config at all (owned servers' idle energy, colocation, support)."""
    nothing = replace(cands, by_workload={w: [] for w in cands.by_workload})
    return float(build_model(loaded, nothing, segments, cuts=False).prob.objective.constant)


def _alone(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, c: Candidate) -> Program:
    """The program of one config alone: its workload with only it, every other workload with nothing."""
    alone = replace(cands, by_workload={w: [c] if w == c.workload else [] for w in cands.by_workload})
    return build_model(loaded, alone, segments, cuts=True)


def _settle_sole_tenants(prog: Program, sole_tenants: SoleTenantCosts, keys: list[str], loaded: LoadedPlan,
                         cands: CandidateSet, segments: Segments, solver: str, seconds: float,
                         at_least: float | None = None) -> bool | None:
    """Make the costs of these chosen sole-tenant configs exact (each one's offer solved whole, alone) and
    raise them in the program's objective; True when one rose (the solution may no longer be the best),
    False when none did, None when one could not be solved in `seconds` (its cost stays a bound). Each
    offer's solve gets `at_least` seconds whatever is left."""
    at_least = POLICY.settle_min_s if at_least is None else at_least
    deadline = time.perf_counter() + seconds
    rose = False
    todo = [k for k in dict.fromkeys(keys) if k in sole_tenants.costs and k not in sole_tenants.exact]
    by_key = {c.key: c for c in cands.all()} if todo else {}
    for key in todo:
        alone = _alone(loaded, cands, segments, by_key[key])
        out = solve(alone.prob, solver, time_limit_s=max(at_least, deadline - time.perf_counter()), mip_gap=0.0)
        if out.status == "infeasible":
            cost = math.inf
        elif out.status in ("optimal", "feasible") and out.objective is not None:
            # out of time with a plan: that plan's cost, an upper bound (the caller keeps the bound it had)
            cost = out.objective - sole_tenants.fixed
            sole_tenants.values[key] = {f: {k: v.varValue or 0.0 for k, v in getattr(alone, f).items()}
                                   for f in _FAMILIES}
            if out.status == "feasible":
                sole_tenants.upper.add(key)
        else:
            return None
        sole_tenants.exact.add(key)
        x = prog.choice[key]
        assert isinstance(x, pulp.LpVariable)  # a workload's only config is never priced apart
        if math.isinf(cost):
            prog.add("sole_tenant", x <= 0, prog.names("sole_tenant_settled", prog.candidate_ids[key]))
            rose = True
        elif cost > sole_tenants.costs[key] + 1e-9 * max(1.0, abs(cost)):
            prog.prob.objective[x] = prog.prob.objective.get(x, 0.0) + cost - sole_tenants.costs[key]
            rose = True
        sole_tenants.costs[key] = cost
        prog.sole_tenant[key] = cost
    return rose


def _solve_settled(prog: Program, sole_tenants: SoleTenantCosts | None, loaded: LoadedPlan, cands: CandidateSet,
                   segments: Segments, options: SolveOptions, solver: str, limit: float, gap_target: float,
                   started: float, baseline: dict[str, tuple[str, float]] | None,
                   on_relaxed: Callable[[Program], None] | None = None, build_s: float = 0.0
                   ) -> tuple[Program, Solution, SolveInfo] | None:
    """_solve, then, while the solution chooses sole-tenant configs whose cost was only a bound, those costs made
    exact and the program solved again; the chosen sole-tenant configs' hours filled in. None when a chosen
    sole-tenant config could not be solved whole in the time (the caller solves without taking offers apart).

    `limit` is the whole of it: with sole-tenant configs to settle, _solve's search from a plan in hand leaves what
    settle_budget says (the program took `build_s` to build); each chosen offer's own solve gets half of what is
    left before the hours' time, solving again the rest. Past the limit only by: steps 1 and 2 running into the
    reserve, the hours' build and hand-over beyond their estimate, the floors (POLICY.settle_own_min_s,
    POLICY.hours_min_s; POLICY.settle_min_s when there is no plan in hand), and the caller's solve with every offer when a chosen offer's
    own solve found no plan (None)."""
    unsettled = sole_tenants is not None and any(k not in sole_tenants.exact for k in sole_tenants.costs)
    settle_s, hours_s = settle_budget(limit, build_s) if unsettled else (0.0, 0.0)
    sol, info = _solve(prog, loaded, cands, segments, options, solver, limit, gap_target, started, on_relaxed,
                       settle_s=settle_s)
    if not sole_tenants:
        return prog, sol, info
    return settle(prog, sole_tenants, sol, info, loaded, cands, segments, options, solver, limit, gap_target,
                  started, baseline, hours_s)


def settle(prog: Program, sole_tenants: SoleTenantCosts, sol: Solution, info: SolveInfo, loaded: LoadedPlan,
           cands: CandidateSet, segments: Segments, options: SolveOptions, solver: str, limit: float,
           gap_target: float, started: float, baseline: dict[str, tuple[str, float]] | None, hours_s: float
           ) -> tuple[Program, Solution, SolveInfo] | None:
    """Settling a solved plan's sole-tenant configs: while it chooses ones whose cost was only a bound, those
    costs made exact (each offer solved whole, _settle_sole_tenants) and the program solved again (_solve), the
    plan in hand kept when that cannot be done or finds a dearer plan; then the chosen sole-tenant offers' hours
    filled in (_with_sole_tenant_hours), in the last `hours_s` seconds of `limit`. None when a chosen config could
    not be solved whole in the time."""
    def elapsed() -> float:
        return time.perf_counter() - started

    for _ in range(POLICY.settle_rounds):
        before = prog.values()
        rose = _settle_sole_tenants(prog, sole_tenants, list(sol.chosen.values()), loaded, cands, segments,
                                    info.name, (limit - hours_s - elapsed()) / 2, POLICY.settle_own_min_s)
        if rose is None:
            return None
        if not rose:
            break
        held = _at_settled_costs(prog, sol, info, gap_target, started)  # a plan in hand, at its settled cost
        if held is not None and (sole_tenants.upper or elapsed() >= limit - hours_s):
            # a cost known only from above: solving again would rest on it (no bound); or no time left for it
            sol, info = held
            break
        budget = limit - hours_s if held is not None else max(limit - hours_s, elapsed() + POLICY.settle_min_s)
        try:
            again, again_info = _solve(prog, loaded, cands, segments, options, solver, budget, gap_target, started)
        except SolverError:
            if held is None:
                raise
            prog.restore(before)
            sol, info = held  # out of time solving again: the plan in hand, at its settled cost
            break
        if held is not None and again_info.objective is not None and held[1].objective is not None \
                and again_info.objective > held[1].objective + 1e-9 * max(1.0, abs(held[1].objective)):
            # solving again, cut short, found a dearer plan: the plan in hand, with the better of the two bounds
            prog.restore(before)
            sol, info = held[0], _with_bound(held[1], again_info.bound, gap_target)
            break
        sol, info = again, again_info
    else:
        if any(k in sole_tenants.costs and k not in sole_tenants.exact for k in sol.chosen.values()):
            return None
    filled = _with_sole_tenant_hours(loaded, cands, segments, prog, sol, sole_tenants, info.name, gap_target,
                                     limit - elapsed(), baseline)
    if filled[0] is not prog:  # the hours' solve is part of the solve's seconds
        info = replace(info, seconds=elapsed())
    return (*filled, info)


def _with_bound(info: SolveInfo, bound: float | None, gap_target: float) -> SolveInfo:
    """`info` with `bound` when it is the higher (both lower bounds on the same plan's cost), its gap and status
    said again."""
    if bound is None or (info.bound is not None and bound <= info.bound):
        return info
    gap = _gap(info.objective, bound)
    status = "optimal" if gap is not None and gap <= gap_target + 1e-12 else info.status
    return replace(info, bound=bound, gap=gap, status=status)


def _at_settled_costs(prog: Program, sol: Solution, info: SolveInfo, gap_target: float, started: float
                      ) -> tuple[Solution, SolveInfo] | None:
    """The solution in the program (solved before its sole-tenant configs' costs were settled), priced at those
    costs — the program's objective now holds them: still a plan, with the bound it had (costs only rose, so
    that bound stays one). None when a config it chose turned out to have no plan at its offer."""
    if any(math.isinf(prog.sole_tenant.get(key, 0.0)) for key in sol.chosen.values()):
        return None
    objective = _objective_value(prog)
    gap = _gap(objective, info.bound)
    status = "optimal" if gap is not None and gap <= gap_target + 1e-12 else "feasible"
    return sol, _info(info.name, status, started, gap, objective, info.bound, info.fallback_note, info.overhead_s)


def _with_sole_tenant_hours(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, prog: Program,
                            sol: Solution, sole_tenants: SoleTenantCosts, solver: str, gap_target: float,
                            seconds: float, baseline: dict[str, tuple[str, float]] | None) -> tuple[Program, Solution]:
    """A solution that chose a sole-tenant config has no hours for its offer: the program without sole-tenant
    configs, every choice held, started from that solution and the config's own solve (a plan of the same
    cost), gives them — in `seconds`, its build included, and at least POLICY.hours_min_s of solving. Otherwise the
    program and solution as they are."""
    if not any(key in sole_tenants.costs for key in sol.chosen.values()):
        return prog, sol
    deadline = time.perf_counter() + seconds
    full = build_model(loaded, cands, segments, cuts=True, baseline=baseline)
    start = {k: v for k, v in prog.values().items() if v is not None}
    for key in sol.chosen.values():
        for family, vals in sole_tenants.values.get(key, {}).items():
            table = getattr(full, family)
            start.update({table[k].name: v for k, v in vals.items() if k in table})
    seconds = max(POLICY.hours_min_s, deadline - time.perf_counter())  # what the build left, at least the floor
    with full.choices_fixed(sol.chosen):
        out = solve(full.prob, solver, time_limit_s=seconds, mip_gap=gap_target, warm_start=start)
    if out.status not in ("optimal", "feasible"):
        raise SolverError(f"{solver} found no hours for the chosen configs' own offers "
                          f"(time limit {seconds:.3g} s); raise policy.time_limit_s or --time-limit")
    return full, full.solution()


def _cheapest_recourse(prog: Program, solver: str, seconds: float) -> bool:
    """Scenarios weighed by cvar or worst: the objective sees only the scenarios that set the measure, so
    a solved plan may leave another scenario's hourly capacity dearer than it need be (on demand where
    spot is cheaper, nodes beyond its need) at the same measure — and that scenario's cost, the expected
    cost and the regret then read too high. With the first stage fixed (configs, reserved and bought
    levels, committed split, racks) the scenarios share nothing, so minimizing the expected cost makes
    each one's second stage its cheapest; no scenario's cost rises, so neither does the measure.
    True when the solution changed (kept only when that solve is optimal)."""
    plan = prog.plan
    if scenario_days(plan) is None or plan.policy.risk.measure == "expected":
        return False
    before = prog.values()
    objective = prog.prob.objective
    try:
        with prog.first_stage_fixed():
            prog.prob.setObjective(pulp.lpSum(prog.cost_terms.values()))
            # the rest of the time limit, at least 5 s (as pricing alternatives); the solved plan is a warm start
            out = solve(prog.prob, solver, time_limit_s=max(seconds, 5.0), mip_gap=0.0,
                        warm_start={k: x for k, x in before.items() if x is not None})
        if out.status != "optimal":
            prog.restore(before)
            return False
        return True
    finally:
        prog.prob.setObjective(objective)


def break_ties(prog: Program, info: SolveInfo) -> tuple[SolveInfo, bool]:
    """Among plans that cost no more than the solved one, the schedule a person expects (tiebreak.define_tie_break):
    GPUs paid by the hour go to batch pools, interactive pools use the reserved and signed GPUs; batch
    work spreads over its window. Every decision made once (configs, reservations, purchases) is held,
    so only the hourly nodes and the batch placement move, and the cost never rises: a pass that finds
    nothing in its nodes or time keeps the solved plan, and a program whose hand-over to the solver alone
    takes longer than the pass's time (SolveInfo.overhead_s, on very large plans) is not tidied, nor one
    its solver would run far past the pass's time on (solver.large_for: CBC, which has no node limit, on a
    program that large runs many times the pass's few seconds).
    Scenario plans keep theirs (each scenario's cost is a reported number; an equal measure is not an
    equal plan). True when the schedule changed."""
    if info.objective is None or not prog.batch_replicas or scenario_days(prog.plan) is not None:
        return info, False  # nothing can move (no batch work), or a scenario plan
    budget = max(POLICY.tie_break_min_s, POLICY.tie_break_share * info.seconds)
    if info.overhead_s > budget:
        return info, False  # handing the program to the solver alone would take longer than the pass may
    if large_for(info.name, prog.prob):
        return info, False  # the solver would run far past the pass's few seconds (CBC has no node limit)
    before = prog.values()
    cost = _objective_value(prog)
    cap = max(cost, info.objective)
    t0 = time.perf_counter()
    # The API's share of each batch day is held too: a continuous cost the cost row's tolerance would let drift
    shares = [(y, y.lowBound, y.upBound) for y in prog.batch_api.values()]
    try:
        for y, _lo, _hi in shares:
            y.lowBound = y.upBound = y.varValue or 0.0
        with prog.first_stage_fixed():
            problem, start = define_tie_break(prog, cap)
            # the solver's limit is what the budget leaves after the build, less a share for handing it over
            seconds = max(0.1, POLICY.tie_break_solver_share * budget - (time.perf_counter() - t0))
            out = solve(problem, info.name, time_limit_s=seconds, mip_gap=POLICY.tie_break_gap,
                        node_limit=POLICY.tie_break_node_limit,
                        warm_start={**{k: x for k, x in before.items() if x is not None}, **start})
    except SolverError:  # the plan is solved; a failed tie-break pass leaves it as it was
        prog.restore(before)
        return info, False
    finally:
        for y, lo, hi in shares:
            y.lowBound, y.upBound = lo, hi
    new = _objective_value(prog) if out.status in ("optimal", "feasible") else None
    if new is None or new > cap + 1e-6 * max(1.0, abs(cap)):
        prog.restore(before)
        return info, False
    new = min(new, info.objective)
    return replace(info, objective=new, gap=_gap(new, info.bound) if info.bound is not None else info.gap), True


def _objective_value(prog: Program) -> float:
    return float(pulp.value(prog.prob.objective) or 0.0)


def settings(loaded: LoadedPlan, options: SolveOptions) -> tuple[str, float, float]:
    """Solver, time limit and gap target: the options where given, else the plan's policy."""
    pol = loaded.plan.policy
    return (options.solver or pol.solver, options.time_limit_s or pol.time_limit_s,
            pol.mip_gap if options.mip_gap is None else options.mip_gap)


@dataclass
class _Run:
    """One _solve: the program and its plan, the clock, and what the steps have found so far (the bound, the
    incumbent plan's cost and values, the solver that answered and its fallback note)."""

    prog: Program
    loaded: LoadedPlan
    cands: CandidateSet
    segments: Segments
    options: SolveOptions
    solver: str
    limit: float
    gap_target: float
    started: float
    settle_s: float = 0.0
    """The last seconds of the limit kept for settling sole-tenant configs (_solve_settled)."""
    bound: float | None = None
    incumbent: float | None = None
    values: dict[str, float | None] | None = None
    note: str | None = None

    def left(self) -> float:
        return self.limit - (time.perf_counter() - self.started)

    def room(self) -> float:
        """What step 2 may use: the time left but the settling's, unless the relaxation has run into it."""
        return self.left() - self.settle_s if self.left() > self.settle_s else self.left()

    def search_left(self) -> float:
        """What step 3 may use: from a plan in hand it leaves the settling's time; without one it may use it."""
        return self.left() - (self.settle_s if self.incumbent is not None else 0.0)

    def tell(self, phase: str, inc: float | None, bnd: float | None) -> None:
        if self.options.progress is not None:
            self.options.progress(phase, time.perf_counter() - self.started, inc, bnd)

    def info(self, status: str, gap: float | None, objective: float | None, bound: float | None,
             overhead_s: float) -> SolveInfo:
        return _info(self.solver, status, self.started, gap, objective, bound, self.note, overhead_s)


def _solve(prog: Program, loaded: LoadedPlan, cands: CandidateSet, segments: Segments, options: SolveOptions,
           solver: str, limit: float, gap_target: float, started: float,
           on_relaxed: Callable[[Program], None] | None = None, settle_s: float = 0.0) -> tuple[Solution, SolveInfo]:
    """The three steps of solve_candidates — relax, round_plan, search; `on_relaxed(prog)` hears the solved
    relaxation (its values still in the program) before step 2. Step 2's solves stop where the last `settle_s`
    seconds of the limit begin (kept for settling sole-tenant configs, _solve_settled) — once the relaxation has
    run into them, step 2 may use the rest; step 3, from step 2's plan, leaves them, and without a plan may use
    them."""
    run = _Run(prog, loaded, cands, segments, options, solver, limit, gap_target, started, settle_s)
    relaxed, reduced = relax(run)
    proven = round_plan(run, relaxed, on_relaxed)
    if proven is not None:
        return proven
    if run.left() <= 0 and run.incumbent is None:
        raise SolverError(f"{run.solver} stopped after {time.perf_counter() - started:.1f} s without a feasible "
                          f"plan (time limit {limit:g} s); raise policy.time_limit_s or --time-limit")
    full, handover = search(run, relaxed, reduced)
    incumbent, values = run.incumbent, run.values
    bounds = [b for b in (run.bound, full.bound if full else None) if b is not None]
    best_bound = max(bounds) if bounds else None
    if full is not None and full.status in ("optimal", "feasible") and (
            incumbent is None or full.objective <= incumbent + 1e-9):
        status = full.status
        gap = _gap(full.objective, best_bound) if best_bound is not None else full.gap
        if status == "feasible" and gap is not None and gap <= gap_target + 1e-12:
            status = "optimal"
        return prog.solution(), run.info(status, gap, full.objective, best_bound, max(handover, full.overhead_s))
    if incumbent is not None and values is not None:
        prog.restore(values)  # the solver found nothing better: go back to the rounded plan
        gap = _gap(incumbent, best_bound)
        status = "optimal" if gap is not None and gap <= gap_target + 1e-12 else "feasible"
        return prog.solution(), run.info(status, gap, incumbent, best_bound, handover)
    raise SolverError(f"{run.solver} stopped after {time.perf_counter() - started:.1f} s without a feasible plan "
                      f"(time limit {limit:g} s); raise policy.time_limit_s or --time-limit")


def relax(run: _Run) -> tuple[SolveInfo, dict]:
    """Step 1: the LP relaxation, a lower bound, then rounds of the valid inequalities it violates while they
    lift the bound. Returns the last relaxation solved (its values in the program) and its reduced costs."""
    prog = run.prog
    basis: Basis | None = Basis()  # each cut round's relaxation starts from the last one's optimum
    relaxed = solve(prog.prob, run.solver, time_limit_s=run.left(), relax=True, basis=basis)
    if relaxed.seconds < POLICY.warm_lp_s:
        basis = None  # a relaxation this quick is solved again from scratch: the same vertex, the same rows
    run.note = relaxed.fallback_note
    run.solver = relaxed.name
    if relaxed.status == "infeasible":
        raise diagnose(run.loaded, run.cands, run.segments, *settings(run.loaded, run.options)[:2])
    reduced = reduced_costs(prog.integer_variables()) if relaxed.status == "optimal" else {}
    for _ in range(POLICY.cut_rounds):
        # the valid inequalities this relaxation violates, and the relaxation again (a higher bound, and
        # configs that fit whole nodes better for step 2), while the bound rises
        if relaxed.status != "optimal" or run.left() <= 0 or not separate_cuts(prog):
            break
        before, before_values = relaxed, prog.values()
        relaxed = solve(prog.prob, run.solver, time_limit_s=run.left(), relax=True, basis=basis)
        if relaxed.status != "optimal":  # out of time: the last relaxation solved is still a bound
            relaxed = before
            prog.restore(before_values)
            break
        reduced = reduced_costs(prog.integer_variables())
        lifted = (relaxed.objective or 0.0) - (before.objective or 0.0)
        if lifted <= POLICY.cut_round_gain * max(1.0, abs(before.objective or 0.0)):
            break
    return relaxed, reduced


def round_plan(run: _Run, relaxed: SolveInfo, on_relaxed: Callable[[Program], None] | None = None
               ) -> tuple[Solution, SolveInfo] | None:
    """Step 2: a plan from the relaxation — its configs held and the node counts solved whole; or, when they
    cannot all be held or their plan is far from the bound on a large program, configs chosen whole
    (_choices_solved, then _rounded_in_rounds); or, failing that, the solver's first plan with only the
    configs the relaxation is sure of held. Sets the run's bound, incumbent and values; returns the solution
    when that plan is proven within the gap (nothing more to do), else None."""
    prog, solver, gap_target = run.prog, run.solver, run.gap_target
    room, left = run.room, run.left
    if not (relaxed.status == "optimal" and left() > 0):
        return None
    bound = relaxed.objective
    run.bound = bound
    run.tell("bound", None, bound)
    if on_relaxed is not None:
        on_relaxed(prog)
    largest = prog.largest_choices()
    unsure = any(value < POLICY.decided for value, _key in largest.values())
    # the configs the relaxation is sure of, when it is unsure of some (step 2's last fallback holds them)
    decided = {w: key for w, (value, key) in largest.items() if value >= POLICY.decided} if unsure else {}
    with prog.choices_fixed_to_relaxation():
        rounded = solve(prog.prob, solver, time_limit_s=room(), mip_gap=gap_target)
    holds = rounded.status in ("optimal", "feasible")  # the relaxation's configs held make a plan
    far = holds and solver in POLICY.pooled_solvers and _rows(prog) >= POLICY.choice_min_rows \
        and (_gap(rounded.objective, bound) or 0.0) > POLICY.far_from_bound
    choice_bound = None
    if ((unsure and not holds) or far) and left() > 0:
        # The relaxation's configs cannot all be held (caps, usually: it spread workloads over offers
        # fractionally), or their plan is far from the bound on a program whose search is long: choose whole
        # configs with the capacity still fractional, then hold them (a bound; where the held configs gave a
        # plan, the cheaper of the two is kept); _rounded_in_rounds rounds the pools' whole nodes at them below
        kept = (rounded, prog.values()) if holds else None
        rounded, choice_bound = _choices_solved(prog, solver, room, gap_target)
        if choice_bound is not None and choice_bound > bound:
            bound = choice_bound
            run.bound = bound
            run.tell("bound", None, bound)
        if kept is not None and not (rounded.status in ("optimal", "feasible") and rounded.objective is not None
                                     and rounded.objective < (kept[0].objective or math.inf)):
            rounded = kept[0]
            prog.restore(kept[1])
    if rounded.status not in ("optimal", "feasible") and decided and left() > 0:
        # Nor could configs chosen whole be held, in their time: hold only those the relaxation was sure
        # of and take the first plan the solver finds with the rest free — a start for step 3
        with prog.choices_fixed(decided):
            rounded = solve(prog.prob, solver, time_limit_s=POLICY.first_plan_share * room(), mip_gap=gap_target,
                            first_plan=True)
        if rounded.status in ("optimal", "feasible") and left() > 0:
            # that first plan's configs held, its hourly capacity solved properly (it is only a first plan)
            first, first_values = rounded, prog.values()
            with prog.choices_fixed({w: key for w, (_v, key) in prog.largest_choices().items()}):
                held = solve(prog.prob, solver, time_limit_s=POLICY.first_plan_share * room(), mip_gap=gap_target,
                             warm_start={k: v for k, v in first_values.items() if v is not None})
            if held.status in ("optimal", "feasible") and held.objective is not None \
                    and first.objective is not None and held.objective < first.objective:
                rounded = held
            else:
                rounded = first
                prog.restore(first_values)
    if rounded.status in ("optimal", "feasible"):
        incumbent = rounded.objective
        values = prog.values()
        run.incumbent, run.values = incumbent, values
        run.tell("plan", incumbent, bound)
        gap = _gap(incumbent, bound)
        if gap is not None and gap <= gap_target + 1e-12:
            return prog.solution(), run.info("optimal", gap, incumbent, bound, relaxed.overhead_s)
        if choice_bound is not None and solver in POLICY.pooled_solvers:
            incumbent, values, bound = _rounded_in_rounds(prog, solver, room, left, gap_target, incumbent,
                                                          values, bound, run.tell)
            run.incumbent, run.values, run.bound = incumbent, values, bound
            gap = _gap(incumbent, bound)
            if gap is not None and gap <= gap_target + 1e-12:
                return prog.solution(), run.info("optimal", gap, incumbent, bound, relaxed.overhead_s)
    return None


def search(run: _Run, relaxed: SolveInfo, reduced: dict) -> tuple[SolveInfo | None, float]:
    """Step 3: the whole integer program, with the valid inequalities in (_cuts_for_search), started from step
    2's plan when it is near the bound, and bounded to plans cheaper than it (program.bounds_within). Returns the
    search's solve (None when it did not run, or found nothing cheaper within the tightened bounds) and the
    seconds handing the program to the solver and back were taken to need."""
    prog, incumbent, bound = run.prog, run.incumbent, run.bound
    full = None
    handover = relaxed.overhead_s
    if run.search_left() > 0:
        rows = _rows(prog)
        _cuts_for_search(prog)
        # Handing the program over (PuLP to the solver and back) is not in the solver's time limit and grows
        # with the rows: the relaxation's hand-over, scaled, is kept out of the limit; when nothing is left,
        # step 2's plan stands.
        handover = relaxed.overhead_s * _rows(prog) / max(1, rows)
        t_full = time.perf_counter() - run.started

        def searching(t: float, inc: float | None, bnd: float | None) -> None:
            if run.options.progress is not None:
                best = [b for b in (bound, bnd) if b is not None]
                run.options.progress("search", t_full + t, inc if inc is not None else incumbent,
                                     max(best) if best else None)

        if incumbent is None or run.search_left() > handover:
            # step 2's plan starts the search unless it is far from the bound (POLICY.warm_start_gap); the
            # strategy keeps it either way
            gap = _gap(incumbent, bound)
            start = run.values if gap is not None and gap <= POLICY.warm_start_gap else None
            # only plans cheaper than step 2's are sought: the relaxation's reduced costs bound how far
            # each integer variable may leave its bound in them (program.bounds_within)
            slack = incumbent - relaxed.objective if incumbent is not None and relaxed.objective is not None \
                else -1.0
            with bounds_within(prog.prob, reduced, slack) as tightened:
                full = solve(prog.prob, run.solver, time_limit_s=max(0.01, run.search_left() - handover),
                             mip_gap=run.gap_target, warm_start=start,
                             progress=searching if run.options.progress is not None else None)
            if full.status == "infeasible" and tightened:
                full = None  # nothing cheaper than step 2's plan within the tightened bounds: it stands
            elif full.status == "infeasible":
                raise diagnose(run.loaded, run.cands, run.segments, *settings(run.loaded, run.options)[:2])
    return full, handover


def _choices_solved(prog: Program, solver: str, left: Callable[[], float], gap_target: float
                    ) -> tuple[SolveInfo, float | None]:
    """Step 2 when the relaxation's configs cannot all be held: the program with only the decisions made once
    whole — configs, reserved levels, committed splits — and its hourly node counts continuous
    (Program.hours_relaxed) picks a set of configs that fit the caps together — the relaxation spreads
    workloads over several offers to fill their sunk committed GPUs, which no plan can. It is a relaxation
    of the plan, so its best bound is a lower bound on every plan's cost (at least the LP's); HiGHS solves it
    without restarts (POLICY.no_restart). Its configs held — with HiGHS, given the rows that round their pools' GPUs
    to whole nodes together first — the capacity is solved whole.
    Returns that solve (a plan, or not) and the bound (None when the choice program found no plan)."""
    with prog.hours_relaxed():
        chosen = solve(prog.prob, solver, time_limit_s=POLICY.choice_share * left(),
                       mip_gap=POLICY.choice_gap * gap_target, highs=POLICY.no_restart)
    if chosen.status not in ("optimal", "feasible") or left() <= 0:
        return chosen, None
    configs = {w: key for w, (_v, key) in prog.largest_choices().items()}
    if solver in POLICY.pooled_solvers:
        # the rows that round each pool's GPUs to whole nodes together at these configs: with them the held
        # configs' hours solve many times faster (to the same plan), and _rounded_in_rounds uses them
        define_pooled_rounding(prog, configs)
    with prog.choices_fixed(configs):
        held = solve(prog.prob, solver, time_limit_s=POLICY.first_plan_share * left(), mip_gap=gap_target)
    return held, chosen.bound


def _rounded_in_rounds(prog: Program, solver: str, room: Callable[[], float], left: Callable[[], float],
                       gap_target: float, incumbent: float, values: dict[str, float | None], bound: float,
                       tell: Callable[[str, float | None, float | None], None]
                       ) -> tuple[float, dict[str, float | None], float]:
    """Step 2 again, after _choices_solved, while its plan is not proven: the program with only its choices whole
    is given the rows that round each pool's GPUs — and each offer's, where pools share reserved nodes — up to
    whole nodes together at the plan's configs (cuts.define_pooled_rounding: valid at every config, tight at
    these), and solved again. Its bound then counts the whole nodes those configs need, so it is higher, or
    it moves to other configs: those are held and their hours solved whole (a plan, kept if cheaper), and the
    rows are added at them in turn (an integer L-shaped loop over config sets), for at most POLICY.pooled_rounds.

    The gap it closes is the hours' whole nodes, which neither the choice program nor a search over every config
    bounds well; given the rows at the plan's configs, its bound comes within the gap target of that plan
    (benchmarks/SOLVER.md has the numbers on plans/q1-forecast.yaml).
    The program is solved for its bound alone while the plan in hand chooses no config alone at its offer, so it may
    use the time kept for settling those (`left`, not `room`); a plan it moves to is held only within `room`.
    Returns the incumbent, its values (restored in the program) and the bound."""
    _cuts_for_search(prog)  # each workload's own whole nodes too: without them the rows above prove less
    solved: list[dict[str, str]] = []
    for _ in range(POLICY.pooled_rounds):
        prog.restore(values)
        configs = {w: key for w, (_v, key) in prog.largest_choices().items()}
        seconds = room() if any(key in prog.sole_tenant for key in configs.values()) else left()
        if seconds <= 0 or configs in solved:
            break  # no time, or solved with these configs' rows already: the last bound is as high as they lift it
        define_pooled_rounding(prog, configs)  # (none when _choices_solved added them for its plan)
        solved.append(configs)
        with prog.hours_relaxed():  # from the plan: its configs and reservations are a solution of this program
            again = solve(prog.prob, solver, time_limit_s=seconds, mip_gap=POLICY.pooled_gap * gap_target,
                          warm_start={k: v for k, v in values.items() if v is not None}, highs=POLICY.bound_only)
        if again.bound is not None and again.bound > bound:
            bound = again.bound
            tell("bound", incumbent, bound)
        if again.status not in ("optimal", "feasible") or room() <= 0:
            break
        moved = {w: key for w, (_v, key) in prog.largest_choices().items()}
        if moved != configs:
            with prog.choices_fixed(moved):
                held = solve(prog.prob, solver, time_limit_s=POLICY.first_plan_share * room(), mip_gap=gap_target)
            if held.status in ("optimal", "feasible") and held.objective is not None and held.objective < incumbent:
                incumbent, values = held.objective, prog.values()
                tell("plan", incumbent, bound)
        gap = _gap(incumbent, bound)
        if gap is not None and gap <= gap_target + 1e-12:
            break
    prog.restore(values)
    return incumbent, values, bound


def _settled_configs(prog: Program, fix: dict[str, str]) -> bool:
    """Every workload with configs to choose from is held to one by `fix` (or none has a choice)."""
    return all(w.name in fix for w in prog.plan.workloads
               if any(isinstance(prog.choice[c.key], pulp.LpVariable) for c in prog.cands.by_workload[w.name]))


def _others_kept(prog: Program, chosen: dict[str, str], workload: str, key: str, solver: str, gap_target: float,
                 seconds: float) -> SolveInfo:
    """The program with `workload` forced onto `key` and every other workload on its chosen config,
    re-solved within POLICY.node_limit nodes: a plan feasible for the whole program, found fast."""
    with prog.choices_fixed({**chosen, workload: key}):
        return solve(prog.prob, solver, time_limit_s=seconds, mip_gap=gap_target, node_limit=POLICY.node_limit)


def price_alternatives(prog: Program, chosen: dict[str, str], ranked: dict[str, list[Candidate]], per_workload: int,
                       objective: float, solver: str, gap_target: float,
                       budget_s: float | None = None) -> dict[str, Forced]:
    """Each alternative priced in the solved program: every other workload keeps its chosen config,
    this one is forced onto the alternative, and reserved, on-demand, spot and API are re-solved.
    Per workload, configs are tried in `ranked` order until `per_workload` have a price (at most
    twice that many tried: one that no plan can host with the others kept is reported as such).

    A plan found this way is feasible for the whole program, so its cost is at least the optimum:
    the difference is never below −(proven gap × the plan's cost), and it is an upper bound on what
    re-optimizing every workload around the alternative would cost (`planopt explain` does that).
    Limits are in nodes, so the same plan prices the same way on every machine; the time limits are a
    safety net for very large plans (an alternative left unpriced says so).
    """
    budget_s = POLICY.pricing_budget_s if budget_s is None else budget_s
    out: dict[str, Forced] = {}
    started = time.perf_counter()
    for workload, alts in ranked.items():
        priced = 0
        for alt in alts[:2 * per_workload]:
            if priced == per_workload:
                break
            if time.perf_counter() - started > budget_s:
                out[alt.key] = Forced(None, "not priced")
                break
            r = _others_kept(prog, chosen, workload, alt.key, solver, gap_target, POLICY.seconds_per_alternative)
            if r.status == "infeasible":
                out[alt.key] = Forced(None, "infeasible")
            elif r.objective is None or r.status not in ("optimal", "feasible"):
                out[alt.key] = Forced(None, "not priced")
            else:
                out[alt.key] = Forced(r.objective - objective, "optimal" if r.status == "optimal" else "bounded")
                priced += 1
    return out


def _cuts_for_search(prog: Program) -> None:
    """Before a branch and bound: every valid inequality in, when they add at most POLICY.full_cuts_rows times the
    program's rows; otherwise only those separated so far (a valid program either way)."""
    if cut_rows_left(prog) <= POLICY.full_cuts_rows * _rows(prog):
        add_cuts(prog)


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(objective) < 1e-9:
        return 0.0 if abs(bound) < 1e-9 else None
    return max(0.0, (objective - bound) / abs(objective))


def _rows(prog: Program) -> int:
    return sum(len(names) for names in prog.constraint_families.values())


def _info(solver: str, status: str, started: float, gap: float | None, objective: float | None,
          bound: float | None, note: str | None, overhead_s: float = 0.0) -> SolveInfo:
    return SolveInfo(solver, status, time.perf_counter() - started, gap, objective, bound, note,  # type: ignore[arg-type]
                     overhead_s)
