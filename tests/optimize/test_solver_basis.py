"""A relaxation re-solved from the last one's basis (solver.Basis, the cut rounds of strategy._solve):
the same optimum as from scratch, the basis really used, and a basis that no longer fits ignored; and the
HiGHS options the strategy hands over (solver.solve's `highs`) are real ones."""

from __future__ import annotations

import random

import pulp
import pytest

from optimizer.optimize.solver import Basis, available_solvers, solve

from tests.helpers.programs import covering_program
from tests.helpers.solving import NO_TIME_LIMIT

pytestmark = pytest.mark.skipif("highs" not in available_solvers(), reason="HiGHS (highspy) is not installed")


def _cold(prob: pulp.LpProblem) -> float:
    info = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True)
    assert info.status == "optimal"
    return info.objective


@pytest.mark.parametrize("seed", range(20))
def test_rows_added_then_solved_from_the_basis_give_the_cold_optimum(seed):
    prob, xs = covering_program(seed)
    basis = Basis()
    first = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    assert first.status == "optimal" and basis.cols and set(basis.rows) == set(prob._constraints)
    rng = random.Random(1000 + seed)
    for k in range(3):  # rows the relaxation's optimum may violate, as a cut round adds
        picked = rng.sample(xs, 3)
        prob += pulp.lpSum(picked) >= rng.randint(1, 6), f"cut{k}"
    warm = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    assert warm.status == "optimal"
    assert warm.objective == pytest.approx(_cold(prob), rel=1e-9, abs=1e-9)
    assert {"cut0", "cut1", "cut2"} <= set(basis.rows)  # the new relaxation's basis is kept


def test_the_same_relaxation_from_its_own_basis_takes_no_iteration():
    prob, _ = covering_program(3)
    basis = Basis()
    solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    again = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    assert again.status == "optimal"
    assert prob.solverModel.getInfo().simplex_iteration_count == 0


def test_a_basis_that_no_longer_fits_is_not_used():
    prob, _ = covering_program(5)
    basis = Basis()
    solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    basic_rows = [name for name, s in basis.rows.items() if str(s).endswith("kBasic")]
    gone = [name for name in prob._constraints if name not in basic_rows][:1]
    assert gone  # a binding row of the optimum
    for name in gone:  # a nonbasic row removed: one basic too few for the rows left
        del prob._constraints[name]
    warm = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True, basis=basis)
    assert warm.status == "optimal"
    assert warm.objective == pytest.approx(_cold(prob), rel=1e-9, abs=1e-9)


def test_a_whole_solve_neither_reads_nor_keeps_a_basis():
    prob, _ = covering_program(7)
    basis = Basis()
    info = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, basis=basis)
    assert info.status == "optimal" and not basis.cols and not basis.rows


def test_the_highs_options_the_strategy_hands_over_are_highs_options():
    """strategy's HiGHS option sets (restarts off, primal heuristics off) name real options with values HiGHS
    takes — PuLP passes a misspelt one on with a warning only, and the solve would then run with the default —
    and a program solved with them has the optimum it has without."""
    import highspy

    from optimizer.optimize.policy import BOUND_ONLY, NO_RESTART

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for name, value in {**NO_RESTART, **BOUND_ONLY}.items():
        assert h.setOptionValue(name, value) == highspy.HighsStatus.kOk, name
    assert NO_RESTART.items() <= BOUND_ONLY.items()
    for seed in range(5):
        prob, _xs = covering_program(seed)
        plain = solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0.0).objective
        assert solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0.0, highs=BOUND_ONLY).objective == pytest.approx(plain)
