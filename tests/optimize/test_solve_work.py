"""The work each step of a solve did and what stopped it (solver.work, solver.stopped_by; optimize/work.py): there
and well-formed on a small plan solved with no clock in it, the same when solved again (iterations and nodes are the
solver's own count, unlike seconds), and read back from the result as written."""

from __future__ import annotations

import json

import pulp
import pytest

from optimizer.optimize import work
from optimizer.optimize.solver import available_solvers, solve
from optimizer.optimize.strategy import SolveOptions
from optimizer.optimize.work import STOPS
from optimizer.pipeline import solve_plan
from optimizer.results.jsonio import read_result, to_dict

from tests.helpers.small_plans import batch, interactive, offer, plan, write
from tests.helpers.solving import NO_TIME_LIMIT, random_cover

STEPS = ("relax", "round", "search", "settle", "tidy", "price")


def _plan() -> dict:
    """w1 alone at p (a sole-tenant config, settled), w2 and a batch day on s (the tie-break pass has work to move),
    and other configs to price."""
    return plan([interactive("w1", 1200, accs=("gpu-a", "gpu-b")), interactive("w2", 400, accs=("gpu-a",)),
                 batch("b", 800 * 3600, [0, 8], accs=("gpu-a",))],
                [offer("s", "gpu-a", on_demand=1.0), offer("p", "gpu-b", m=8, on_demand=0.5)])


@pytest.fixture
def unclocked() -> None:
    """Nothing to take out of reach: the policy decides no stop by the clock (the safety cap aside, which the
    tests set to NO_TIME_LIMIT), so the solver alone decides each stop."""


@pytest.mark.parametrize("solver", available_solvers())
def test_each_step_says_its_work_and_what_stopped_it(tmp_path, solver, unclocked):
    path = write(tmp_path, _plan())
    options = SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0)
    result = solve_plan(path, options)
    said = to_dict(result)["solver"]
    work, stopped = said["work"], said["stopped_by"]
    assert list(work) == list(stopped)
    assert {"relax", "settle", "price"} <= set(work) <= set(STEPS), work
    for step, w in work.items():
        assert set(w) == {"solves", "simplex_iterations", "mip_nodes"}, step
        assert all(isinstance(v, int) and v >= 0 for v in w.values()) and w["solves"] >= 1, (step, w)
    assert set(stopped.values()) <= set(STOPS) and "safety cap" not in stopped.values(), stopped
    assert stopped["relax"] == "optimal"

    again = to_dict(solve_plan(path, options))["solver"]
    assert (again["work"], again["stopped_by"]) == (work, stopped)

    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(to_dict(result)), encoding="utf-8")
    assert read_result(saved).solver.work == result.solver.work


def test_a_result_written_before_work_was_recorded_reads_without_it(tmp_path, unclocked):
    path = write(tmp_path, _plan())
    d = to_dict(solve_plan(path, SolveOptions(solver="highs", time_limit_s=NO_TIME_LIMIT, alternatives=0)))
    del d["solver"]["work"], d["solver"]["stopped_by"]
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(d), encoding="utf-8")
    old = read_result(saved)
    assert old.solver.work == ()
    assert "work" not in to_dict(old)["solver"]  # written back as it was read


def _knapsack_cover() -> pulp.LpProblem:
    return random_cover(30, 20)


@pytest.mark.parametrize("solver", available_solvers())
def test_each_solver_call_is_counted_in_its_step(solver):
    """The solver layer reports every call's iterations, nodes and stop to the tally, in the step it runs in: the
    relaxation by simplex iterations alone, the search with its nodes; a looser gap ends on it; HiGHS asked for its
    first plan ends on that. (A small plan's steps may do no counted work at all: presolve solves them.)"""
    prob = _knapsack_cover()
    with work.tally() as kept:
        with work.step("relax"):
            solve(prob, solver, time_limit_s=NO_TIME_LIMIT, relax=True)
        with work.step("search"):
            solve(prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0)
        with work.step("loose"):
            solve(prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.2)
            solve(prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0)
        if solver == "highs":
            with work.step("first"):
                solve(prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0, first_plan=True)
    by_step = {w.step: w for w in kept.work()}
    relaxed, searched, loose = by_step["relax"], by_step["search"], by_step["loose"]
    assert (relaxed.solves, relaxed.mip_nodes, relaxed.stopped_by) == (1, 0, "optimal")
    assert relaxed.simplex_iterations > 0
    assert searched.stopped_by == "optimal" and searched.simplex_iterations > 0 and searched.mip_nodes >= 1
    assert loose.solves == 2 and loose.stopped_by == "gap"  # the stop that says less of the two
    if solver == "highs":
        assert by_step["first"].stopped_by == "solutions"
    with work.step("outside"):
        solve(prob, solver, time_limit_s=NO_TIME_LIMIT, relax=True)  # no tally kept: nothing to count it in
    assert [w.step for w in kept.work()] == list(by_step)
