"""CBC's options beyond PuLP's (solver._cbc_options): no feasibility pump when started from a plan, no
preprocessing on large programs — options CBC really takes (its log says it changed them), and the same optimum
with them as without."""

from __future__ import annotations

import pytest

from optimizer.optimize import solver
from optimizer.optimize.solver import _cbc_cmd, _cbc_options, available_solvers, solve

from tests.helpers.programs import covering_program  # a random covering program
from tests.helpers.solving import NO_TIME_LIMIT

pytestmark = pytest.mark.skipif("cbc" not in available_solvers(), reason="CBC is not available")


def test_which_options_when(monkeypatch):
    prob, xs = covering_program(0)
    start = {x.name: float(x.upBound) for x in xs}  # every variable at its bound: a feasible plan
    assert _cbc_options(prob, relax=True, warm=start) == []
    assert _cbc_options(prob, relax=False, warm=None) == []
    assert _cbc_options(prob, relax=False, warm=start) == ["feas off"]
    monkeypatch.setattr(solver, "CBC_LARGE_COLUMNS", len(xs) - 1)
    assert _cbc_options(prob, relax=False, warm=start) == ["feas off", "preprocess off"]
    assert _cbc_options(prob, relax=False, warm=None) == ["preprocess off"]
    assert _cbc_options(prob, relax=True, warm=None) == []


def test_cbc_takes_the_options(tmp_path):
    """A misspelt option is only a line in CBC's log ("No match for …"): the log must say each was changed."""
    prob, _xs = covering_program(1)
    log = tmp_path / "cbc.log"
    cmd = _cbc_cmd(msg=False, timeLimit=30, logPath=str(log), options=["feas off", "preprocess off"])
    cmd.tmpDir = str(tmp_path)
    prob.solve(cmd)
    text = log.read_text(errors="replace")
    assert "No match" not in text
    assert "feasibilityPump changed from on to off" in text and "preprocess changed from sos to off" in text


@pytest.mark.parametrize("seed", range(12))
def test_the_same_optimum_with_them(seed, monkeypatch):
    prob, xs = covering_program(seed)
    plain = solve(prob, "cbc", time_limit_s=NO_TIME_LIMIT, mip_gap=0.0)
    monkeypatch.setattr(solver, "CBC_LARGE_COLUMNS", 0)
    start = {x.name: float(x.upBound) for x in xs}
    started = solve(prob, "cbc", time_limit_s=NO_TIME_LIMIT, mip_gap=0.0, warm_start=start)
    assert started.status == plain.status in ("optimal", "infeasible")  # a seed's bounds may not cover a row
    if plain.status == "optimal":
        assert started.objective == pytest.approx(plain.objective, abs=1e-6)
