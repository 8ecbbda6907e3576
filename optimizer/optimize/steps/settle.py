"""Settle: configs alone at their offer (sole tenants) priced apart at a bound, made exact for the ones a plan
chooses, and the chosen offers' hours filled in."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.errors import SolverError
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import scenario_days
from optimizer.optimize import spend
from optimizer.optimize.calendar import Segments
from optimizer.optimize.model import build_model
from optimizer.optimize.moves import moving_offers
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Solution, SolveInfo
from optimizer.optimize.solver import solve
from optimizer.optimize.steps.run import SolveOptions, _gap, _info, _objective_value, cap_left, limits


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


_FAMILIES = ("reserved", "reserved_later", "on_demand", "spot", "lent", "batch_replicas", "batch_api", "committed_split")


def _sole_tenant_costs(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, solver: str,
                       policy: SolvePolicy = DEFAULT_POLICY, started: float | None = None) -> SoleTenantCosts | None:
    """The configs whose offer no other workload can use, each one's relaxation solved alone at that offer
    (model.define_sole_tenant): a bound on what the offer costs serving it. Each relaxation within the settle
    step's simplex iterations left, not cut by the safety cap (the program rests on them); `started`: when the
    solve began (default now).

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
    split = plan.split_workloads()  # a split workload serves from several configs at once: none is sole
    # a spend commitment ties its provider's offers together: an offer it covers is never priced alone
    own |= {o for p in spend.spend_plans(plan, {o: loaded.catalog.offers[o] for o in cands.offer_ids()})
            for o in p.offers}
    moving = moving_offers(plan, cands) if segments.calendar is not None and segments.calendar.split else set()
    lonely = [c for w, cs in cands.by_workload.items() if len(cs) > 1 and w not in split for c in cs
              if c.offer and c.offer not in own and users[c.offer] == {w}
              and c.offer not in moving]  # a config a workload may move to or from serves part of the horizon
    if not lonely:
        return None
    started = time.perf_counter() if started is None else started
    sole_tenants = SoleTenantCosts({}, set(), {}, _fixed_cost(loaded, cands, segments))
    for c in lonely:
        prog = _alone(loaded, cands, segments, c)
        # the program is built on these costs: not cut by the safety cap, so it is the same on every machine
        out = solve(prog.prob, solver, relax=True, **limits(policy, "settle", started, capped=False))
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
                         policy: SolvePolicy = DEFAULT_POLICY, needs_plan: bool = False) -> bool | None:
    """Make the costs of these chosen sole-tenant configs exact (each one's offer solved whole, alone) and
    raise them in the program's objective; True when one rose (the solution may no longer be the best),
    False when none did, None when one could not be solved (its cost stays a bound). Each offer's solve may
    spend policy.settle_own_share of the settle step's nodes left — the work, not the clock, ends it — and is cut
    short only by the safety cap, `seconds` in all; with `needs_plan` (a plan rests on them), only once it has a
    plan (solver.solve's cap_needs_plan: its cost is then that plan's, an upper bound)."""
    now = time.perf_counter()
    deadline = now + seconds
    rose = False
    todo = [k for k in dict.fromkeys(keys) if k in sole_tenants.costs and k not in sole_tenants.exact]
    by_key = {c.key: c for c in cands.all()} if todo else {}
    for key in todo:
        alone = _alone(loaded, cands, segments, by_key[key])
        out = solve(alone.prob, solver, mip_gap=0.0, **{**limits(policy, "settle", now, policy.settle_own_share),
                                                         "time_limit_s": max(0.01, deadline - time.perf_counter()),
                                                         "cap_needs_plan": needs_plan})
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


def settle(prog: Program, sole_tenants: SoleTenantCosts, sol: Solution, info: SolveInfo, loaded: LoadedPlan,
           cands: CandidateSet, segments: Segments, options: SolveOptions, policy: SolvePolicy, started: float,
           baseline: dict[str, tuple[str, float]] | None, resolve: Callable[..., tuple[Solution, SolveInfo]]
           ) -> tuple[Program, Solution, SolveInfo] | None:
    """Settling a solved plan's sole-tenant configs: while it chooses ones whose cost was only a bound, those
    costs made exact (each offer solved whole, _settle_sole_tenants) and the program solved again (`resolve`), the
    plan in hand kept when that cannot be done or finds a dearer plan; then the chosen sole-tenant offers' hours
    filled in (_with_sole_tenant_hours). Each solve within the settle step's work left (the re-solves within their
    own steps'); once the safety cap of the solve that began at `started` is reached, the plan in hand at its
    settled costs is kept rather than solved again. `resolve` is strategy._solve (the steps again, from relax).
    None when a chosen config could not be solved whole."""
    gap_target = policy.mip_gap

    def elapsed() -> float:
        return time.perf_counter() - started

    for _ in range(policy.settle_rounds):
        before = prog.values()
        rose = _settle_sole_tenants(prog, sole_tenants, list(sol.chosen.values()), loaded, cands, segments,
                                    info.name, cap_left(policy, started), policy, True)  # needs_plan
        if rose is None:
            return None
        if not rose:
            break
        held = _at_settled_costs(prog, sol, info, gap_target, started)  # a plan in hand, at its settled cost
        if held is not None and (sole_tenants.upper or cap_left(policy, started) <= 0):
            # a cost known only from above: solving again would rest on it (no bound); or the safety cap is reached
            sol, info = held
            break
        try:
            again, again_info = resolve(prog, loaded, cands, segments, options, policy, started)
        except SolverError:
            if held is None:
                raise
            prog.restore(before)
            sol, info = held  # no plan solving again: the plan in hand, at its settled cost
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
                                     started, baseline, policy)
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
                            started: float, baseline: dict[str, tuple[str, float]] | None,
                            policy: SolvePolicy = DEFAULT_POLICY) -> tuple[Program, Solution]:
    """A solution that chose a sole-tenant config has no hours for its offer: the program without sole-tenant
    configs, every choice held, started from that solution and the config's own solve (a plan of the same
    cost), gives them — within the settle step's nodes left, the safety cap of the solve that began at `started`
    heeded only once it has a plan (the plan has no hours at that offer without one). Otherwise the program and
    solution as they are."""
    if not any(key in sole_tenants.costs for key in sol.chosen.values()):
        return prog, sol
    full = build_model(loaded, cands, segments, cuts=True, baseline=baseline)
    start = {k: v for k, v in prog.values().items() if v is not None}
    for key in sol.chosen.values():
        for family, vals in sole_tenants.values.get(key, {}).items():
            table = getattr(full, family)
            start.update({table[k].name: v for k, v in vals.items() if k in table})
    with full.choices_fixed(sol.chosen):
        out = solve(full.prob, solver, mip_gap=gap_target, warm_start=start,
                    **limits(policy, "settle", started, capped=False))  # the plan's hours: capped once found
    if out.status not in ("optimal", "feasible"):
        raise SolverError(f"{solver} found no hours for the chosen configs' own offers within the work limit "
                          f"(safety cap {policy.safety_cap_s:g} s); raise policy.work_limit or --work-limit")
    return full, full.solution()
