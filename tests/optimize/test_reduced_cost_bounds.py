"""Reduced-cost bounds (program.bounds_within, step 3 of strategy._solve): from a solved relaxation's
reduced costs and an incumbent's cost, each integer variable is held to what a plan as cheap as the
incumbent can take. Checked by hand, and against every integer point of small random programs: no
point that costs as little as the incumbent is cut off, so the optimum is the same."""

from __future__ import annotations

import itertools
import random

import pulp
import pytest

from optimizer.candidates.build import build_candidates
from optimizer.optimize.calendar import segment
from optimizer.optimize.model import build_model
from optimizer.optimize.program import bounds_within, reduced_costs
from optimizer.optimize.solver import available_solvers, solve
from optimizer.pipeline import as_solved

from tests.helpers.paths import PLANS
from tests.helpers.solving import NO_TIME_LIMIT

SOLVERS = [pytest.param(s, marks=pytest.mark.skipif(s not in available_solvers(), reason=f"{s} is not installed"))
           for s in ("highs", "cbc")]


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_variable_that_costs_more_than_the_room_is_held_near_its_bound(solver):
    """min 3x + 5y, x + y ≥ 2.5, x, y whole in [0, 100]: the relaxation takes x = 2.5 (z = 7.5) and
    prices y at 5 − 3 = 2 a unit. A plan costing at most 10 has room 2.5, so y ≤ ⌊2.5 / 2⌋ = 1; x is
    basic (no reduced cost) and keeps its bounds. Undone afterwards."""
    prob = pulp.LpProblem("hand", pulp.LpMinimize)
    x = prob.add_variable("x", lowBound=0, upBound=100, cat=pulp.LpInteger)
    y = prob.add_variable("y", lowBound=0, upBound=100, cat=pulp.LpInteger)
    prob += 3 * x + 5 * y
    prob += x + y >= 2.5, "cover"
    info = solve(prob, solver, time_limit_s=NO_TIME_LIMIT, relax=True)
    assert info.status == "optimal" and info.objective == pytest.approx(7.5)
    reduced = reduced_costs(prob.variables())
    assert set(reduced) == {y} and reduced[y] == pytest.approx(2.0)
    with bounds_within(prob, reduced, 10 - info.objective) as tightened:
        assert tightened == 1
        assert (x.lowBound, x.upBound, y.lowBound, y.upBound) == (0, 100, 0, 1)
        assert solve(prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0).objective == pytest.approx(9.0)  # x = 3
    assert (y.lowBound, y.upBound) == (0, 100)


def test_no_room_or_a_maximisation_tightens_nothing():
    prob = pulp.LpProblem("max", pulp.LpMaximize)
    v = prob.add_variable("v", lowBound=0, upBound=9, cat=pulp.LpInteger)
    with bounds_within(prob, {v: 1.0}, 3.0) as tightened:
        assert tightened == 0 and v.upBound == 9
    prob.sense = pulp.LpMinimize
    with bounds_within(prob, {v: 1.0}, -1.0) as tightened:
        assert tightened == 0 and v.upBound == 9


def _program(seed: int) -> tuple[pulp.LpProblem, list[pulp.LpVariable], list[float], list]:
    """Four whole variables in small boxes, costs of either sign (some sit at their upper bound in the
    relaxation, with negative reduced costs), covering rows and one packing row."""
    rng = random.Random(seed)
    prob = pulp.LpProblem(f"p{seed}", pulp.LpMinimize)
    xs = [prob.add_variable(f"x{j}", lowBound=rng.randint(0, 1), upBound=rng.randint(2, 4), cat=pulp.LpInteger)
          for j in range(4)]
    costs = [round(rng.uniform(-3, 10), 2) for _ in xs]
    prob += pulp.lpSum(c * x for c, x in zip(costs, xs))
    rows = []
    for i in range(3):
        coef = [round(rng.uniform(0, 3), 2) if rng.random() < 0.7 else 0.0 for _ in xs]
        rhs = round(rng.uniform(1, 6), 2)
        rows.append((coef, ">=", rhs))
        prob += pulp.lpSum(a * x for a, x in zip(coef, xs)) >= rhs, f"cover{i}"
    coef = [round(rng.uniform(0, 2), 2) for _ in xs]
    rhs = round(rng.uniform(6, 12), 2)
    rows.append((coef, "<=", rhs))
    prob += pulp.lpSum(a * x for a, x in zip(coef, xs)) <= rhs, "pack"
    return prob, xs, costs, rows


def _feasible_points(xs, costs, rows) -> list[tuple[float, tuple[int, ...]]]:
    out = []
    for point in itertools.product(*(range(int(x.lowBound), int(x.upBound) + 1) for x in xs)):
        ok = all((sum(a * p for a, p in zip(coef, point)) >= rhs - 1e-9) if sense == ">=" else
                 (sum(a * p for a, p in zip(coef, point)) <= rhs + 1e-9) for coef, sense, rhs in rows)
        if ok:
            out.append((sum(c * p for c, p in zip(costs, point)), point))
    return sorted(out)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", range(40))
def test_no_point_as_cheap_as_the_incumbent_is_cut_off(solver, seed):
    tries = (_program(seed * 1000 + k) for k in range(1000))
    prob, xs, costs, rows, points = next((p, x, c, r, pts) for p, x, c, r in tries
                                         if (pts := _feasible_points(x, c, r)))  # the first with a point
    info = solve(prob, solver, time_limit_s=NO_TIME_LIMIT, relax=True)
    assert info.status == "optimal"
    reduced = reduced_costs(prob.variables())
    incumbent = points[len(points) // 3][0]  # some feasible plan's cost, not the optimum's
    box = [(x.lowBound, x.upBound) for x in xs]
    with bounds_within(prob, reduced, incumbent - info.objective):
        inside = [(lo <= x.lowBound and x.upBound <= hi) for x, (lo, hi) in zip(xs, box)]
        assert all(inside)
        for cost, point in points:
            if cost <= incumbent + 1e-9:
                assert all(x.lowBound <= p <= x.upBound for x, p in zip(xs, point)), (cost, point)
        held = [(c, p) for c, p in points if all(x.lowBound <= v <= x.upBound for x, v in zip(xs, p))]
        assert held and held[0][0] == pytest.approx(points[0][0])
    assert [(x.lowBound, x.upBound) for x in xs] == box


@pytest.mark.parametrize("plan", ["q4.yaml", "owned-cluster.yaml", "q1-with-commitments.yaml"])
def test_the_program_lists_every_whole_number_decision(plan):
    """Step 3 tightens the integer variables the program lists (Program.integer_variables): all of them."""
    loaded = as_solved(PLANS / plan)
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()))
    listed = prog.integer_variables()
    assert len(listed) == len({id(v) for v in listed})
    assert {v.name for v in listed} == {v.name for v in prog.prob.variables() if v.cat == pulp.LpInteger}
