"""Tidy: after the plan, the same cost with the schedule a person expects (break_ties), and a cvar or worst plan's
scenarios each at their cheapest recourse (_cheapest_recourse)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pulp

from optimizer.errors import SolverError
from optimizer.inputs.scenarios import scenario_days
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.solver import large_for, solve
from optimizer.optimize.steps.run import _gap, _objective_value, limits
from optimizer.optimize.tiebreak import define_tie_break


def _cheapest_recourse(prog: Program, solver: str, within: dict[str, Any]) -> bool:
    """Scenarios weighed by cvar or worst: the objective sees only the scenarios that set the measure, so
    a solved plan may leave another scenario's hourly capacity dearer than it need be (on demand where
    spot is cheaper, nodes beyond its need) at the same measure — and that scenario's cost, the expected
    cost and the regret then read too high. With the first stage fixed (configs, reserved and bought
    levels, committed split, racks) the scenarios share nothing, so minimizing the expected cost makes
    each one's second stage its cheapest; no scenario's cost rises, so neither does the measure.
    `within` are its solver.solve limits (the tidy step's: Run.limits). True when the solution changed (kept only
    when that solve is optimal)."""
    plan = prog.plan
    if scenario_days(plan) is None or plan.policy.risk.measure == "expected":
        return False
    before = prog.values()
    objective = prog.prob.objective
    try:
        with prog.first_stage_fixed():
            prog.prob.setObjective(pulp.lpSum(prog.cost_terms.values()))
            # the solved plan is a warm start
            out = solve(prog.prob, solver, mip_gap=0.0, warm_start={k: x for k, x in before.items() if x is not None},
                        **within)
        if out.status != "optimal":
            prog.restore(before)
            return False
        return True
    finally:
        prog.prob.setObjective(objective)


def break_ties(prog: Program, info: SolveInfo, policy: SolvePolicy = DEFAULT_POLICY, started: float | None = None
               ) -> tuple[SolveInfo, bool]:
    """Among plans that cost no more than the solved one, the schedule a person expects (tiebreak.define_tie_break):
    GPUs paid by the hour go to batch pools, interactive pools use the reserved and signed GPUs; batch
    work spreads over its window. Every decision made once (configs, reservations, purchases) is held,
    so only the hourly nodes and the batch placement move, and the cost never rises: a pass that finds
    nothing in its nodes (policy.tie_break_node_limit; the safety cap of a solve that began at `started`,
    default now) keeps the solved plan, and a program of more than policy.tie_break_max_columns variables (a very
    large plan, whose hand-over to the solver alone costs more than tidiness is worth) is not tidied, nor one
    its solver would run far past a short pass on (solver.large_for: CBC's clean-up on a program that large).
    In scenario plans each segment (a scenario's day type, and month) also keeps its own cost
    (tie_break_segment): each scenario's cost is a reported number, and an equal measure is not an equal plan.
    True when the schedule changed."""
    if info.objective is None or not prog.batch_replicas:
        return info, False  # nothing can move (no batch work)
    if len(prog.prob.variables()) > policy.tie_break_max_columns:
        return info, False  # handing the program to the solver again costs more than tidiness is worth
    if large_for(info.name, prog.prob):
        return info, False  # the solver would run far past a short pass (CBC's clean-up on a large program)
    started = time.perf_counter() if started is None else started
    before = prog.values()
    cost = _objective_value(prog)
    cap = max(cost, info.objective)
    # The API's share of each batch day is held too: a continuous cost the cost row's tolerance would let drift
    shares = [(y, y.lowBound, y.upBound) for y in prog.batch_api.values()]
    try:
        for y, _lo, _hi in shares:
            y.lowBound = y.upBound = y.varValue or 0.0
        with prog.first_stage_fixed():
            problem, start = define_tie_break(prog, cap)
            out = solve(problem, info.name, mip_gap=policy.tie_break_gap,
                        **{**limits(policy, "tidy", started), "node_limit": policy.tie_break_node_limit},
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
