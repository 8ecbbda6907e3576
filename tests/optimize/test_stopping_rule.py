"""The stopping rule: every step of a solve stops on work (nodes, simplex iterations), never on the clock alone, so
the same plan and options give the same result on an idle and on a busy machine; the wall clock is only a safety
cap, and a step it cut short says so (solver.stopped_by "safety cap"). Proven here without timing anything: the
steps' clock is replaced by one that races ahead, as a busy machine's would."""

from __future__ import annotations

import pulp
import pytest

from optimizer.errors import SolverError
from optimizer.optimize import solver as solver_module
from optimizer.optimize import strategy, work
from optimizer.optimize.solver import available_solvers, solve
from optimizer.optimize.strategy import SolveOptions
from optimizer.pipeline import solve_plan
from optimizer.results.jsonio import to_dict

from tests.helpers.small_plans import batch, interactive, offer, plan, write
from tests.helpers.steps import no_plan_within_nodes, patch_steps
from tests.helpers.solving import random_cover


def _plan() -> dict:
    """w1 alone at p (a sole-tenant config, settled), w2 and a batch day on s (the tie-break pass has work to move),
    and other configs to price: every step runs."""
    return plan([interactive("w1", 1200, accs=("gpu-a", "gpu-b")), interactive("w2", 400, accs=("gpu-a",)),
                 batch("b", 800 * 3600, [0, 8], accs=("gpu-a",))],
                [offer("s", "gpu-a", on_demand=1.0), offer("p", "gpu-b", m=8, on_demand=0.5)])


class _RacingClock:
    """A clock that moves `step` seconds at every reading: to the steps, each thing they do takes that long, as on a
    machine many times slower than this one."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now

    monotonic = time = perf_counter


def _raced(monkeypatch, step: float) -> _RacingClock:
    clock = _RacingClock(step)
    patch_steps(monkeypatch, "time", clock)
    monkeypatch.setattr(solver_module, "time", clock)
    return clock


def _untimed(result) -> dict:
    """The result JSON but its timing field (solver.seconds)."""
    d = to_dict(result)
    d["solver"].pop("seconds")
    return d


@pytest.mark.parametrize("solver", available_solvers())
def test_a_slow_clock_gives_the_same_result_short_of_the_safety_cap(tmp_path, monkeypatch, solver):
    path = write(tmp_path, _plan())
    options = SolveOptions(solver=solver, time_limit_s=600)
    idle = _untimed(solve_plan(path, options))
    clock = _raced(monkeypatch, 2.0)  # every reading two seconds on
    busy = _untimed(solve_plan(path, options))
    assert clock.now > 20.0  # the steps did see a slow machine ...
    assert "safety cap" not in busy["solver"]["stopped_by"].values()  # ... short of the cap
    assert busy == idle


@pytest.mark.parametrize("solver", available_solvers())
def test_past_the_safety_cap_the_first_plan_still_comes_out(tmp_path, monkeypatch, solver):
    """The cap ends only the search for better plans and proofs: the calls a first plan rests on (the relaxation,
    step 2's solves) stop on their work and are cut only once they have a plan, so a machine slow enough to pass
    the cap before any plan still gets one (plans/q1-forecast.yaml --time-limit 10 on a busy machine had exited 3).
    A plan the cap left unproven has every commitment provisional."""
    from optimizer.results import decision

    path = write(tmp_path, _plan())
    _raced(monkeypatch, 1000.0)  # past the 30 s cap at the first reading
    result = solve_plan(path, SolveOptions(solver=solver, time_limit_s=30, alternatives=0))
    stopped = to_dict(result)["solver"]["stopped_by"]
    assert result.status in ("optimal", "feasible") and result.cost_total > 0, stopped
    assert stopped["relax"] != "safety cap", stopped  # the relaxation ran to its proof
    flag = decision.unproven(result.solver.status, result.solver.gap, result.policy.get("mip_gap"))
    assert all(n.provisional == flag for n in [*result.new_commitments, *result.new_spend_commitments])


def test_no_plan_within_the_work_limit_is_an_error_naming_it(tmp_path, monkeypatch):
    """Exit 3 is left for no plan at all: every integer program stopped on its nodes without a plan (the solver
    stood in for, so the same on every machine) is an error naming the work limit, never a plan."""
    patch_steps(monkeypatch, "solve", no_plan_within_nodes)
    with pytest.raises(SolverError, match=r"without a feasible plan within the work limit"):
        solve_plan(write(tmp_path, _plan()), SolveOptions(solver="highs", alternatives=0))


def _cover() -> pulp.LpProblem:
    return random_cover(60, 40)


@pytest.mark.parametrize("solver", available_solvers())
def test_the_solvers_stop_on_nodes_and_iterations_the_same_way_twice(solver):
    """A node limit stops the branch and bound (HiGHS mip_max_nodes, CBC maxNodes), an iteration limit the
    relaxation (simplex_iteration_limit, maxIterations): the same plan, bound and counts each time."""
    runs = []
    for _ in range(2):
        prob = _cover()
        with work.tally() as kept:
            with work.step("search"):
                out = solve(prob, solver, time_limit_s=600, mip_gap=0.0, node_limit=3)
            with work.step("relax"):
                lp = solve(prob, solver, time_limit_s=600, relax=True, iteration_limit=2)
        runs.append((out.status, out.objective, out.bound, lp.status, kept.work()))
    assert runs[0] == runs[1]
    by_step = {w.step: w for w in runs[0][4]}
    assert by_step["search"].stopped_by == "nodes" and runs[0][0] != "optimal", runs[0]
    assert by_step["relax"].stopped_by == "iterations" and runs[0][3] == "error", runs[0]


def test_a_step_spends_at_most_its_share_of_the_work(tmp_path):
    """Run.limits hands each call its step's share of the work limit less what the step has spent."""
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.steps.run import limits, solve_policy

    data = _plan()
    data["policy"]["work_limit"] = {"nodes": 100, "lp_iterations": 1000, "shares": {"round": 0.5}}
    policy = solve_policy(load_plan(write(tmp_path, data)), SolveOptions(), strategy.POLICY)
    with work.tally():
        assert limits(policy, "round", 0.0, 0.5)["node_limit"] == 25
        with work.step("round"):
            work.record(400, 20, "nodes")
        got = limits(policy, "round", 0.0)
        assert (got["node_limit"], got["iteration_limit"], got["threads"]) == (30, 100, 1)
        with work.step("round"):
            work.record(0, 40, "nodes")
        assert limits(policy, "round", 0.0)["node_limit"] == 1  # spent: at least one node, never none
