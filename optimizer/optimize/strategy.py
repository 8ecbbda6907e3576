"""How a plan is solved (solve_candidates), in named steps, each exact about what it proves:

    steps/relax.py   relax               the LP relaxation and rounds of valid inequalities: a lower bound
    steps/round.py   round_plan          a plan from it: its configs held, or configs chosen whole, the node counts
                                         solved whole
    steps/search.py  search              the whole integer program from that plan, bounded to cheaper plans
    steps/settle.py  settle              sole-tenant configs (alone at their offer, priced apart at a bound) made exact
    steps/tidy.py    break_ties          among plans of equal cost, the schedule a person expects
    steps/price.py   price_alternatives  each workload's next configs priced with every other choice kept

This module is their order. Every budget, switch and tuning number they read is a field of the SolvePolicy
the solve begins with — POLICY with the plan's policy and the options over it (steps/run.py's solve_policy; its Run
carries it): each step stops on its share of the work limit (nodes, simplex iterations), never on the clock alone;
the wall clock is only the safety cap.
Why a plan is infeasible, in words: diagnosis.py; explain's forced re-solves: forcing.py."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.build import allowed_tiers
from optimizer.candidates.prune import ranked_alternatives
from optimizer.candidates.types import CandidateSet
from optimizer.errors import SolverError
from optimizer.inputs.loading import LoadedPlan
from optimizer.optimize import work
from optimizer.optimize.calendar import Segments, key_at, segment
from optimizer.optimize.cuts import define_pooled_rounding
from optimizer.optimize.model import build_model
from optimizer.optimize.moves import fix_schedule, moving_offers
from optimizer.optimize.pieces import Pieces
from optimizer.optimize.policy import SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Solution, SolveInfo
# the steps, importable from here too (tests and benchmarks reach them as strategy's)
from optimizer.optimize.steps.price import _others_kept, price_alternatives  # noqa: F401
from optimizer.optimize.steps.relax import cut_rounds, relax
from optimizer.optimize.steps.round import _choices_solved, _rounded_in_rounds, round_plan  # noqa: F401
from optimizer.optimize.steps.run import (  # noqa: F401
    Run,
    SolveOptions,
    _gap,
    _info,
    limits,
    settings,
    solve_policy,
)
from optimizer.optimize.steps.search import _cuts_for_search, search  # noqa: F401
from optimizer.optimize.steps.settle import (  # noqa: F401
    SoleTenantCosts,
    _settle_sole_tenants,
    _sole_tenant_costs,
    settle,
)
from optimizer.optimize.steps import decompose
from optimizer.optimize.steps.tidy import _cheapest_recourse, break_ties
from optimizer.optimize import spend
from optimizer.vocab import RESERVED_TIERS

POLICY = SolvePolicy()
"""The policy every step reads when it runs: replace it (dataclasses.replace) for another, as tests do."""


def _segments(loaded: LoadedPlan, cands: CandidateSet) -> Segments:
    used = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    reservable = {c.offer for c in cands.all() if c.offer and c.pool is not None and any(
        k in RESERVED_TIERS for k in allowed_tiers(loaded.plan, used[c.offer], c.pool))}
    cuts, cut_offers = spend.cut_days(loaded.plan, used)
    return segment(loaded.plan, cands.offer_ids(), ownership.arrivals(loaded.plan, used), reservable, cuts, cut_offers,
                   moving_offers(loaded.plan, cands))


def solve_candidates(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions = SolveOptions(),
                     fix: dict[str, str] | None = None,
                     baseline: dict[str, tuple[str, float]] | None = None,
                     reserved: dict[tuple, float] | None = None,
                     sole_tenants_apart: bool = True,
                     prices: dict[tuple, float] | None = None) -> tuple[Solution, SolveInfo]:
    """Build and solve; `fix` maps workload → candidate key to force a choice (used by explain);
    with `options.alternatives`, each workload's next configs are priced after the solve (price_alternatives);
    `baseline` maps workload → (last key, last cost) for the switching costs (model.define_baseline);
    `reserved` fixes every reserved (and bought) level R[o,p,k] and new spend commitment U[j] (key ("spend", j)) —
    with `fix`, the whole first stage of a two-stage plan, to price another plan's decision over these scenarios. A program whose configs are all
    settled, and the alternatives' pricing, take cuts.define_pooled_rounding's rows (POLICY.pooled_solvers).

    Configs alone at their offer are priced apart (model.define_sole_tenant; `sole_tenants_apart` False keeps every
    offer in the program). Then three steps, each exact about what it proves:
      1. the LP relaxation: a lower bound, and each workload's most-chosen config (with rounds of the valid
         inequalities it violates; on a program of at least POLICY.round_first_min_columns variables, only after
         step 2 has rounded the first relaxation and not proven its plan: the cheaper plan is kept);
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
         that plan, within the search's nodes. The proven gap is always the distance to the best bound.
    The returned SolveInfo's `work` is every step's solver work and what stopped it (work.py).
    A scenario plan the policy solves by scenario (policy.decompose) goes to steps/decompose.py instead; `prices`
    are its Lagrangian prices on the first stage (decompose.price_terms), added to the objective.
    """
    with work.tally() as kept:
        policy = solve_policy(loaded, options, POLICY)
        by_scenario = None
        if fix is None and reserved is None and baseline is None and prices is None and \
                decompose.wanted(loaded, policy):
            by_scenario = decompose.solve_by_scenario(solve_candidates, loaded, cands, options, policy,
                                                        time.perf_counter())
        sol, info = by_scenario or _solve_candidates(loaded, cands, options, fix, baseline, reserved,
                                                     sole_tenants_apart, prices=prices)
    return sol, replace(info, work=kept.work())


def _solve_candidates(loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions, fix: dict[str, str] | None,
                      baseline: dict[str, tuple[str, float]] | None,
                      reserved: dict[tuple, float] | None,
                      sole_tenants_apart: bool, started: float | None = None,
                      prices: dict[tuple, float] | None = None) -> tuple[Solution, SolveInfo]:
    """solve_candidates, in the tally it keeps; `started` is when the solve began (the safety cap counts from it)."""
    policy = solve_policy(loaded, options, POLICY)
    solver = policy.solver
    started = time.perf_counter() if started is None else started
    segments = _segments(loaded, cands)
    with work.step("settle"):  # sole-tenant configs priced apart, at their relaxation's cost
        sole_tenants = (_sole_tenant_costs(loaded, cands, segments, solver, policy, started)
                        if reserved is None and sole_tenants_apart else None)
    prog = build_model(loaded, cands, segments, cuts=False, baseline=baseline,
                       sole_tenant=sole_tenants.costs if sole_tenants else None)
    for w, key in (fix or {}).items():
        fix_schedule(prog, w, key)  # a moving workload's key may hold a config per contract period
    if solver in policy.pooled_solvers and _settled_configs(prog, fix or {}):
        # every config settled (a plan run through the scenarios, every last choice kept): whole nodes together
        define_pooled_rounding(prog, {w: key_at(k, None) for w, k in (fix or {}).items()})
    if reserved is not None:  # keys (o, p, k) and, for reservations starting later, (o, p, k, t)
        for k, v in (*prog.reserved.items(), *prog.reserved_later.items()):
            v.lowBound = v.upBound = round(reserved.get(k, 0.0))
        for k, u in prog.spend_new.items():  # ("spend", key): a new spend commitment's $/hour, held too
            u.lowBound = u.upBound = reserved.get(("spend", k), 0.0)
    if prices:
        prog.prob.setObjective(prog.prob.objective + decompose.price_terms(prog, prices))
    settled = _solve_settled(prog, sole_tenants, loaded, cands, segments, options, policy, started, baseline)
    if settled is None:  # a chosen config's own offer not solved whole: the program as it was, in the work left
        return _solve_candidates(loaded, cands, options, fix, baseline, reserved, False, started, prices)
    prog, sol, info = settled
    with work.step("tidy"):
        changed = _cheapest_recourse(prog, info.name, limits(policy, "tidy", started))
        info, tidied = break_ties(prog, info, policy, started)
    if changed or tidied:
        sol = prog.solution()
    if options.alternatives and not fix and info.objective is not None:
        if options.progress is not None:
            options.progress("alternatives", time.perf_counter() - started, info.objective, info.bound)
        ranked = ranked_alternatives(loaded.plan, prog.offers, cands.by_workload, sol.chosen)
        pricing, apart = _pricing_program(loaded, cands, segments, prog, sol.chosen, ranked, options.alternatives,
                                          baseline, policy)
        if info.name in policy.pooled_solvers:
            define_pooled_rounding(pricing, sol.chosen)  # every re-solve holds the plan's configs but one
        with work.step("price"):
            sol = replace(sol, forced=price_alternatives(pricing, sol.chosen, ranked, options.alternatives,
                                                         info.objective, info.name, policy.mip_gap, policy,
                                                         started, Pieces.of(pricing) if apart else None))
    return sol, info


def _solve_settled(prog: Program, sole_tenants: SoleTenantCosts | None, loaded: LoadedPlan, cands: CandidateSet,
                   segments: Segments, options: SolveOptions, policy: SolvePolicy, started: float,
                   baseline: dict[str, tuple[str, float]] | None,
                   on_relaxed: Callable[[Program], None] | None = None) -> tuple[Program, Solution, SolveInfo] | None:
    """_solve, then, while the solution chooses sole-tenant configs whose cost was only a bound, those costs made
    exact and the program solved again; the chosen sole-tenant configs' hours filled in (steps/settle.py). None
    when a chosen sole-tenant config could not be solved whole (the caller solves without taking offers apart).
    Every solve within its step's share of the work limit and the safety cap (policy)."""
    sol, info = _solve(prog, loaded, cands, segments, options, policy, started, on_relaxed)
    if not sole_tenants:
        return prog, sol, info
    with work.step("settle"):  # (its re-solves count as the steps they run)
        return settle(prog, sole_tenants, sol, info, loaded, cands, segments, options, policy, started, baseline,
                      _solve)


def _solve(prog: Program, loaded: LoadedPlan, cands: CandidateSet, segments: Segments, options: SolveOptions,
           policy: SolvePolicy, started: float,
           on_relaxed: Callable[[Program], None] | None = None) -> tuple[Solution, SolveInfo]:
    """The three steps of solve_candidates — relax, round_plan, search; `on_relaxed(prog)` hears the solved
    relaxation (its values still in the program) before step 2. Each step stops on its share of the work limit
    (policy.work), and every call on the safety cap (policy.safety_cap_s from `started`)."""
    run = Run(prog, loaded, cands, segments, options, policy.solver, policy, started)
    # a large program rounds its first relaxation before any cut round (policy.round_first_min_columns)
    first = len(prog.prob.variables()) >= policy.round_first_min_columns
    with work.step("relax"):
        relaxed, reduced = relax(run, rounds=not first)
    if first:
        with work.step("round"):
            proven = round_plan(run, relaxed, on_relaxed)
        if proven is not None:
            return proven
        on_relaxed, early = None, (run.incumbent, run.values)
        with work.step("relax"):
            relaxed, reduced = cut_rounds(run, relaxed, reduced)
    with work.step("round"):
        proven = round_plan(run, relaxed, on_relaxed)
    if first and early[0] is not None and (run.incumbent is None or early[0] < run.incumbent):
        # the first relaxation's plan is the cheaper: it stands, against the bound the cut rounds lifted
        run.incumbent, run.values = early
        prog.restore(early[1])
        gap = _gap(run.incumbent, run.bound)
        proven = None
        if gap is not None and gap <= run.gap_target + 1e-12:
            proven = prog.solution(), run.info("optimal", gap, run.incumbent, run.bound, relaxed.overhead_s)
    if proven is not None:
        return proven
    with work.step("search"):
        full, handover = search(run, relaxed, reduced)
    incumbent, values = run.incumbent, run.values
    bounds = [b for b in (run.bound, full.bound if full else None) if b is not None]
    best_bound = max(bounds) if bounds else None
    if full is not None and full.status in ("optimal", "feasible") and (
            incumbent is None or full.objective <= incumbent + 1e-9):
        status = full.status
        gap = _gap(full.objective, best_bound) if best_bound is not None else full.gap
        if status == "feasible" and gap is not None and gap <= policy.mip_gap + 1e-12:
            status = "optimal"
        return prog.solution(), run.info(status, gap, full.objective, best_bound, max(handover, full.overhead_s))
    if incumbent is not None and values is not None:
        prog.restore(values)  # the solver found nothing better: go back to the rounded plan
        gap = _gap(incumbent, best_bound)
        status = "optimal" if gap is not None and gap <= policy.mip_gap + 1e-12 else "feasible"
        return prog.solution(), run.info(status, gap, incumbent, best_bound, handover)
    # the safety cap stops no call before it has a plan (solver.solve's cap_needs_plan): only the work limit can
    raise SolverError(f"{run.solver} stopped without a feasible plan within the work limit ({policy.work.nodes:,} "
                      f"nodes; {time.perf_counter() - started:.1f} s used); raise policy.work_limit or --work-limit")


def _pricing_program(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, prog: Program,
                     chosen: dict[str, str], ranked: dict[str, list], per_workload: int,
                     baseline: dict[str, tuple[str, float]] | None, policy: SolvePolicy) -> tuple[Program, bool]:
    """The program the alternatives are priced in. Each re-solve holds every workload but one on its chosen config
    and that one on an alternative, so only the chosen configs and those price_alternatives may try count: on a
    program of at least policy.price_apart_min_columns variables, the program of just those (a split workload's
    configs all) — the same plans at the same costs, handed to the solver hundreds of times without the configs
    no re-solve can use. Not with a baseline (a last config left out would cost nothing to leave), moving workloads
    (a schedule's configs), GPUs shared in a group (its members' configs size it), nor servers owned or signed for
    and spend commitments (their offers carry costs of their own, whatever configs are left). A plan with sole-tenant
    configs is priced where every offer has its hours: such a config's cost in `prog` may be only a bound. True with
    the program of just those configs: its alternatives are priced piece by piece (optimize.pieces)."""
    plan = loaded.plan
    large = len(prog.prob.variables()) >= policy.price_apart_min_columns
    if not large or baseline or prog.movers or plan.policy.share_pools or plan.owned or plan.commitments \
            or plan.savings_plans:
        return (build_model(loaded, cands, segments, cuts=True, baseline=baseline) if prog.sole_tenant else prog), False
    split = prog.split_workloads
    tried = {w: {c.key for c in alts[:2 * per_workload]} | {chosen.get(w)} for w, alts in ranked.items()}
    restricted = replace(cands, by_workload={
        w: cs if w in split else [c for c in cs if c.key in tried.get(w, {chosen.get(w)})]
        for w, cs in cands.by_workload.items()})
    return build_model(loaded, restricted, segments, cuts=False), True


def _settled_configs(prog: Program, fix: dict[str, str]) -> bool:
    """Every workload with configs to choose from is held to one by `fix` (or none has a choice)."""
    return all(w.name in fix for w in prog.plan.workloads
               if any(isinstance(prog.choice[c.key], pulp.LpVariable) for c in prog.cands.by_workload[w.name]))
