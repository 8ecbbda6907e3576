"""Alternatives priced in the program of only the configs the re-solves can use (strategy._pricing_program, on
programs of at least policy.price_apart_min_columns variables): the same price and status for every alternative as
priced in the whole solved program, for HiGHS and CBC. No clock decides anything here (NO_TIME_LIMIT)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimizer.candidates.build import build_candidates
from optimizer.inputs.loading import load_plan
from optimizer.optimize import strategy
from optimizer.optimize.solver import available_solvers
from optimizer.optimize.strategy import SolveOptions, solve_candidates

from tests.helpers.small_plans import PEAKY, batch, interactive, offer, plan, write
from tests.helpers.solving import NO_TIME_LIMIT


def _plan() -> dict:
    """Three interactive workloads and a batch day over four offers of two accelerators, nodes of one and of
    eight GPUs and a reserved tier: each workload has four configs, of which the one priced alternative tries two, and the pools share nodes."""
    accs = ("gpu-a", "gpu-b")
    return plan([interactive("w1", 1200, PEAKY, accs=accs), interactive("w2", 450, accs=accs),
                 interactive("w3", 700, PEAKY, accs=accs, goodput=140), batch("b", 600 * 3600, [0, 8], accs=accs)],
                [offer("a1", "gpu-a", on_demand=1.0, reserved_1y=0.6), offer("a8", "gpu-a", m=8, on_demand=0.8),
                 offer("b1", "gpu-b", on_demand=1.1, spot=0.4), offer("b8", "gpu-b", m=8, on_demand=0.7)])


@pytest.mark.parametrize("solver", available_solvers())
def test_alternatives_priced_apart_cost_what_they_cost_in_the_whole_program(tmp_path, monkeypatch, solver):
    loaded = load_plan(write(tmp_path, _plan()))
    cands = build_candidates(loaded)
    options = SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0, alternatives=1)
    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, price_apart_min_columns=10**9))
    whole, whole_info = solve_candidates(loaded, cands, options)
    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, price_apart_min_columns=0))
    apart, apart_info = solve_candidates(loaded, cands, options)
    assert apart.chosen == whole.chosen and apart_info.objective == pytest.approx(whole_info.objective)
    assert whole.forced and set(apart.forced) == set(whole.forced)
    for key, f in whole.forced.items():
        g = apart.forced[key]
        assert g.how == f.how, key
        if f.difference is None:
            assert g.difference is None, key
        else:
            assert g.difference == pytest.approx(f.difference, abs=1e-6 * max(1.0, abs(whole_info.objective))), key
