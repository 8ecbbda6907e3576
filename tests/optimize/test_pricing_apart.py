"""Alternatives priced in the program of only the configs the re-solves can use (strategy._pricing_program, on
programs of at least policy.price_apart_min_columns variables), each re-solving only the pieces of it its configs are
in (optimize.pieces): the same price and status for every alternative as priced in the whole solved program, for
HiGHS and CBC. No clock decides anything here (NO_TIME_LIMIT)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from optimizer.candidates.build import build_candidates
from optimizer.inputs.loading import load_plan
from optimizer.optimize import strategy
from optimizer.optimize.calendar import segment
from optimizer.optimize.model import build_model
from optimizer.optimize.pieces import Pieces
from optimizer.optimize.solver import available_solvers
from optimizer.optimize.strategy import SolveOptions, solve_candidates

from tests.helpers.bruteforce import PLANNED, random_plan
from tests.helpers.scenario_enumerate import random_plan as scenario_plan
from tests.helpers.small_plans import PEAKY, batch, interactive, offer, plan, write
from tests.helpers.solving import NO_TIME_LIMIT, seeds_by_solver


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
    assert whole.forced
    _same_prices(whole, whole_info, apart, apart_info)


def _same_prices(whole, whole_info, apart, apart_info) -> None:
    """The same plan, and every alternative the same status and price (to a millionth of the plan's cost)."""
    assert apart.chosen == whole.chosen and apart_info.objective == pytest.approx(whole_info.objective)
    assert set(apart.forced) == set(whole.forced)
    for key, f in whole.forced.items():
        g = apart.forced[key]
        assert g.how == f.how, key
        if f.difference is None:
            assert g.difference is None, key
        else:
            assert g.difference == pytest.approx(f.difference, abs=1e-6 * max(1.0, abs(whole_info.objective))), key


def _prices(loaded, cands, solver: str, monkeypatch, apart_from: int):
    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, price_apart_min_columns=apart_from))
    return solve_candidates(loaded, cands, SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0.0,
                                                        alternatives=2))


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(PLANNED[:16], available_solvers()))
def test_alternatives_priced_by_piece_cost_what_they_cost_in_the_whole_program(seed, solver, tmp_path, monkeypatch):
    """The brute-force suite's random plans (reservations, spot, batch, day types, shared pools): each alternative
    priced piece by piece (optimize.pieces: only the pieces of the program its two configs are in, re-solved) costs
    what re-solving the whole program with the other choices kept costs, with the same status, for HiGHS and CBC.
    A plan whose pricing is never taken apart (owned servers, commitments; strategy._pricing_program) prices the
    same way twice."""
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(random_plan(seed), indent=1), encoding="utf-8")
    loaded = load_plan(path)
    cands = build_candidates(loaded)
    whole, whole_info = _prices(loaded, cands, solver, monkeypatch, 10**9)
    apart, apart_info = _prices(loaded, cands, solver, monkeypatch, 0)
    _same_prices(whole, whole_info, apart, apart_info)


def test_pieces_follow_the_rows(tmp_path):
    """With every choice held the program falls apart by offer here (no row spans two), each piece holds the
    rows of one offer, and a config's choice column is in the rows of its own offer's piece alone."""
    loaded = load_plan(write(tmp_path, _plan()))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()))
    pieces = Pieces.of(prog)
    offers_of_piece: dict[int, set[str]] = {}
    for c in cands.all():
        for piece in pieces.touched((c.key,)):
            if piece >= 0:
                offers_of_piece.setdefault(piece, set()).add(c.offer)
    assert offers_of_piece and all(len(offers) == 1 for offers in offers_of_piece.values())


def test_pricing_stops_on_a_count_breadth_first(tmp_path, monkeypatch):
    """policy.price_max_alternatives: each workload's nearest alternative is tried before any workload's next one,
    and past the count each workload's next one reads "not priced" — a count, the same on every machine."""
    loaded = load_plan(write(tmp_path, _plan()))
    cands = build_candidates(loaded)
    options = SolveOptions(time_limit_s=NO_TIME_LIMIT, mip_gap=0.0, alternatives=2)
    seen = {}
    real = strategy.price_alternatives

    def kept(prog, chosen, ranked, *args):
        seen.update(ranked)
        return real(prog, chosen, ranked, *args)

    monkeypatch.setattr(strategy, "price_alternatives", kept)
    full, full_info = solve_candidates(loaded, cands, options)
    ranked = {w: [c.key for c in alts if c.key in full.forced] for w, alts in seen.items()}
    firsts = {w: keys[0] for w, keys in ranked.items() if keys}
    assert len(firsts) >= 2 and any(len(keys) >= 2 for keys in ranked.values())
    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, price_max_alternatives=len(firsts)))
    cut, cut_info = solve_candidates(loaded, cands, options)
    stops = [{w.step: w.stopped_by for w in info.work}.get("price") for info in (full_info, cut_info)]
    assert stops[0] != "alternatives" and stops[1] == "alternatives"
    priced = {k for k, f in cut.forced.items() if f.how != "not priced"}
    assert priced == set(firsts.values())
    assert all(cut.forced[k] == full.forced[k] for k in priced)
    assert {k for k, f in cut.forced.items() if f.how == "not priced"} == \
        {keys[1] for keys in ranked.values() if len(keys) >= 2}


@pytest.mark.parametrize("seed", [3, 5, 10, 13, 16, 17])
def test_scenario_plans_price_by_piece_as_whole(seed, tmp_path, monkeypatch):
    """Two-stage scenario plans (scenario_enumerate's random plans: expected cost, CVaR and worst case — a risk row
    spans every offer, so its pieces join): each alternative priced piece by piece costs what the whole re-solve
    costs, with the same status."""
    loaded = load_plan(write(tmp_path, scenario_plan(seed)))
    cands = build_candidates(loaded)
    whole, whole_info = _prices(loaded, cands, "highs", monkeypatch, 10**9)
    apart, apart_info = _prices(loaded, cands, "highs", monkeypatch, 0)
    assert whole.forced
    _same_prices(whole, whole_info, apart, apart_info)
