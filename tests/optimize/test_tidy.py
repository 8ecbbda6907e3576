"""The tidy schedule (strategy.break_ties): among plans of equal cost the one a person expects — GPUs paid by
the hour go to batch work, the interactive pool uses the reserved GPUs, and batch work spreads over its
window — at exactly the cost of the plan solved without it.

Plans as in test_constraints: one day, occupancy 1, goodput 100 tok/s per 1-GPU replica."""

from __future__ import annotations

import pytest

from optimizer.candidates.build import build_candidates
from optimizer.inputs.loading import load_plan
from optimizer.optimize import strategy
from optimizer.optimize.solver import available_solvers
from optimizer.optimize.steps import tidy
from optimizer.optimize.strategy import SolveOptions, solve_candidates

from tests.helpers.small_plans import batch, interactive, offer, plan, write
from tests.helpers.steps import patch_steps

GPU_HOUR = 100 * 3600
"""Output tokens one 1-GPU replica makes in an hour."""


def solved(tmp_path, data, solver, tidy=True, monkeypatch=None):
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    if not tidy:
        monkeypatch.setattr(strategy, "break_ties", lambda prog, info, *_policy: (info, False))
    return solve_candidates(loaded, cands, SolveOptions(solver=solver, alternatives=0))


def by_pool(table: dict, pool: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for (_o, p, _s, h), v in table.items():
        if p == pool and v:
            out[h] = out.get(h, 0.0) + v
    return out


@pytest.mark.parametrize("solver", available_solvers())
def test_batch_spreads_over_its_window(tmp_path, solver, monkeypatch):
    """8 GPU-hours a day in a window of 8 hours, on demand at $1 a GPU-hour: 8 GPUs for one hour or one GPU
    for each of the eight cost the same $8; the tidy plan runs one replica an hour."""
    data = plan([batch("b", 8 * GPU_HOUR, [0, 8], accs=("gpu-a",))], [offer("o", on_demand=1.0)])
    sol, info = solved(tmp_path, data, solver)
    assert info.objective == pytest.approx(8.0)
    replicas = {h: v for (_c, _s, h), v in sol.batch_replica_hours.items() if v}
    assert replicas == {h: pytest.approx(1.0) for h in range(8)}
    assert by_pool(sol.on_demand_nodes, "batch") == {h: pytest.approx(1.0) for h in range(8)}
    _plain, untidy = solved(tmp_path, data, solver, tidy=False, monkeypatch=monkeypatch)
    assert untidy.objective == pytest.approx(info.objective)


@pytest.mark.parametrize("solver", available_solvers())
def test_batch_spreads_over_idle_reserved_gpus(tmp_path, solver):
    """A flat interactive load holds 4 reserved GPUs all day; from 08:00 to 16:00 it needs only 1, and a batch
    job of 12 GPU-hours runs in that window on the 3 idle GPUs (free): 1.5 replicas an hour, never 3
    in some hours and none in others."""
    profile = [1.0] * 8 + [0.25] * 8 + [1.0] * 8
    data = plan([interactive("w", 400, profile, accs=("gpu-a",)),
                 batch("b", 12 * GPU_HOUR, [8, 16], accs=("gpu-a",))],
                [offer("o", on_demand=1.0, reserved_1y=0.5)])
    sol, info = solved(tmp_path, data, solver)
    assert info.objective == pytest.approx(4 * 24 * 0.5)
    replicas = {h: v for (_c, _s, h), v in sol.batch_replica_hours.items() if v}
    assert replicas == {h: pytest.approx(1.5) for h in range(8, 16)}


@pytest.mark.parametrize("solver", available_solvers())
def test_reserved_serves_the_interactive_pool_first(tmp_path, solver, monkeypatch):
    """One reserved GPU serves a flat interactive load; at noon a one-hour batch job needs a second GPU. The
    on-demand GPU costs the same in either pool: the tidy plan gives it to the batch pool and keeps the
    reserved GPU with the interactive load it was bought for."""
    data = plan([interactive("w", 100, accs=("gpu-a",)), batch("b", GPU_HOUR, [12, 13], accs=("gpu-a",))],
                [offer("o", on_demand=1.0, reserved_1y=0.6)])
    sol, info = solved(tmp_path, data, solver)
    assert info.objective == pytest.approx(24 * 0.6 + 1.0)
    assert by_pool(sol.on_demand_nodes, "interactive") == {}
    assert by_pool(sol.on_demand_nodes, "batch") == {12: pytest.approx(1.0)}
    _plain, untidy = solved(tmp_path, data, solver, tidy=False, monkeypatch=monkeypatch)
    assert untidy.objective == pytest.approx(info.objective)


def test_no_tidy_pass_on_a_very_large_program(tmp_path):
    """A program of more variables than SolvePolicy.tie_break_max_columns (a 1,000-workload plan's: handing it over
    again costs more than tidiness is worth) keeps its solved schedule: the pass is not tried. A count, not a
    measured time, so the same on every machine."""
    from dataclasses import replace

    from optimizer.optimize.calendar import segment
    from optimizer.optimize.model import build_model
    from optimizer.optimize.solver import solve
    data = plan([batch("b", 8 * GPU_HOUR, [0, 8], accs=("gpu-a",))], [offer("o", on_demand=1.0)])
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()))
    info = solve(prog.prob, "highs" if "highs" in available_solvers() else "cbc", mip_gap=0.0)
    columns = len(prog.prob.variables())
    assert strategy.break_ties(prog, info, replace(strategy.POLICY, tie_break_max_columns=columns - 1)) == (info, False)


@pytest.mark.skipif("cbc" not in available_solvers(), reason="CBC is not available")
def test_no_tidy_pass_by_cbc_on_a_large_program(tmp_path, monkeypatch):
    """CBC has no node limit and runs past a small time limit on a program above
    solver.CBC_LARGE_COLUMNS variables (solver.large_for): such a plan keeps its solved schedule. Below it the
    pass is tried."""
    from optimizer.optimize import solver as solver_module
    from optimizer.optimize.calendar import segment
    from optimizer.optimize.model import build_model
    from optimizer.optimize.solver import solve
    data = plan([batch("b", 8 * GPU_HOUR, [0, 8], accs=("gpu-a",))], [offer("o", on_demand=1.0)])
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()))
    info = solve(prog.prob, "cbc", mip_gap=0.0)
    tried = []
    real = tidy.define_tie_break
    patch_steps(monkeypatch, "define_tie_break", lambda *a: tried.append(True) or real(*a))
    monkeypatch.setattr(solver_module, "CBC_LARGE_COLUMNS", len(prog.prob.variables()) - 1)
    assert strategy.break_ties(prog, info) == (info, False) and not tried
    monkeypatch.setattr(solver_module, "CBC_LARGE_COLUMNS", len(prog.prob.variables()))
    strategy.break_ties(prog, info)
    assert tried == [True]
