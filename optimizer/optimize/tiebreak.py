"""The tie-break program: among plans that cost no more than the solved one, the hourly schedule a person
expects (strategy.break_ties solves it). A problem of its own over the program's rows and variables, so
the integer program itself gains nothing.
"""

from __future__ import annotations

import pulp

from optimizer.inputs.scenarios import scenario_days
from optimizer.optimize import costs
from optimizer.optimize.model import savings_plan_terms
from optimizer.optimize.program import Program, config_id, value_of


MOVABLE_FIRST = 10.0
"""Weight of an hourly node serving a pool with no batch work against a batch config's peak GPU: hourly
nodes go to work that can move first, then batch work spreads."""


def define_tie_break(prog: Program, cost_cap: float) -> tuple[pulp.LpProblem, dict[str, float]]:
    """The tie-break program at `cost_cap` (the solved plan's cost), its rows and objective as
    optimize.families states them (tie_break_cost, tie_break_spread, "tie-break objective"), built while
    every decision made once is held (Program.first_stage_fixed) and the API's share of each batch day too
    (the caller's bounds). Returns the problem and the peak variables' values at the solved plan (with the
    solved values, a warm start)."""
    days = prog.segments.days()
    problem = pulp.LpProblem("planopt_tie_break", pulp.LpMinimize)
    for row in prog.prob.constraints():
        problem.addConstraint(row, row.name)
    problem += prog.prob.objective <= cost_cap, "tie_break_cost"
    if scenario_days(prog.plan) is not None:
        # each segment (a day type of a scenario and month) keeps its own cost: the scenarios' costs, the
        # expected cost, the risk measure and each month's cost are reported numbers, none of which may move
        for s, e in sorted(segment_costs(prog).items()):
            problem += e <= _value(e) + 1e-7 * max(1.0, abs(_value(e))), prog.names("tie_break_segment", s)
    movable = {w.pool for w in prog.plan.workloads if w.kind == "batch"}
    terms = []
    for table in (prog.on_demand, prog.spot):
        for (o, p, s, _h), v in sorted(table.items()):
            if p not in movable:
                terms.append(MOVABLE_FIRST * days[s] * prog.offers[o].gpus_per_node * v)
    by_config: dict[tuple[str, str], list[tuple[int, pulp.LpVariable]]] = {}
    for (key, s, h), n in sorted(prog.batch_replicas.items()):
        if value_of(prog.choice[key]) > 0.5:
            by_config.setdefault((key, s), []).append((h, n))
    cands = {c.key: c for c in prog.cands.all()}
    start = {}
    for (key, s), ns in by_config.items():
        c = cands[key]
        peak = problem.add_variable(prog.names("tie_break_peak", config_id(prog, c), s), lowBound=0)
        for h, n in ns:
            problem += peak >= c.gpu_fraction * n, prog.names("tie_break_spread", config_id(prog, c), s, h)
        start[peak.name] = max(c.gpu_fraction * (n.varValue or 0.0) for _h, n in ns)
        terms.append(days[s] * peak)
    problem += pulp.lpSum(terms)
    return problem, start


def segment_costs(prog: Program) -> dict[str, pulp.LpAffineExpression]:
    """What each segment's hours cost that the tie-break may move, with every decision made once held and the
    API's batch shares too: its on-demand and spot nodes, and the serving energy of GPUs of your own."""
    plan, segments = prog.plan, prog.segments
    terms: dict[str, list] = {}
    for tier, table in (("on-demand", prog.on_demand), ("spot", prog.spot)):
        for (o, _p, s, _h), v in sorted(table.items()):
            terms.setdefault(s, []).append(costs.hourly_per_node(plan, segments, prog.offers[o], tier, s) * v)
    for (o, _p, s, h), v in sorted(prog.lent.items()):
        t = prog.own.get(o)
        if t is not None and t.serving_energy(h):
            terms.setdefault(s, []).append(costs.serving_energy(t, segments, s, h) * v)
    for s, credit in savings_plan_terms(prog)[1].items():  # the list spend spend commitments cover there
        terms.setdefault(s, []).append(credit)
    return {s: pulp.lpSum(ts) for s, ts in terms.items()}


def _value(e: pulp.LpAffineExpression) -> float:
    """An expression's value at the solved plan (its variables' values)."""
    return float(pulp.value(e) or 0.0)
