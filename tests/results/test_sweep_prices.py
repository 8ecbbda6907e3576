"""Sweep points along a price proven from the points solved on either side (results.sweep.prove_between).

A price multiplier t enters the objective only, linearly, so the least cost min_z (a_z + b_z·t) is concave in
t: the chord of two solved points' bounds is a lower bound between them, and a solved plan moved to t's
prices (cost_at) is a plan at t. Checked here against the enumerator of tests/helpers/scenario_enumerate.py (no LP) on
the random two-stage plans whose risk is the expected cost, by hand, and end to end: a sweep that proves
points gives every point within the gap of solving each, and reads them back on a rerun.
"""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import pytest

from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.sweep import SweepPoint, cost_at, prove_between, read_points
from optimizer.studies.sweep import (
    PriceLine,
    _linear_in_prices,
    _where_plans_cross,
    apply_point,
    parse_vary,
    price_lines,
    run_sweep,
    solve_point,
    sweep_points,
)

from tests.helpers.scenario_enumerate import SEEDS, brute_force, random_plan, scenario_costs
from tests.helpers.sweep_plans import write_plan
from tests.helpers.tiny_plans import write

KEY = "price.on-demand"
API = "{usd_per_m_input: 0.005, usd_per_m_output: 0.025, max_share: 1.0}"
EXPECTED_SEEDS = [s for s in SEEDS if random_plan(s)["policy"]["risk"]["measure"] == "expected"]


def priced(plan: dict, t: float) -> dict:
    """The plan with every offer's on-demand price × t (what `price.on-demand=t` does), for the enumerator."""
    out = copy.deepcopy(plan)
    for o in out["offers"]:
        o["price_per_gpu_hour"]["on-demand"] *= t
    return out


@pytest.mark.parametrize("seed", EXPECTED_SEEDS)
def test_the_chord_and_the_moved_plans_bound_the_enumerators_least_cost(seed: int, tmp_path: Path) -> None:
    plan = random_plan(seed)
    loaded = load_plan(write(tmp_path, plan))
    assert _linear_in_prices(loaded)
    ts = [0.4, 0.7, 1.0, 1.3, 1.6]
    exact = {t: brute_force(priced(plan, t)) for t in ts}
    lo, hi = (solve_point(loaded, {KEY: t}, SolveOptions(alternatives=0), "h") for t in (ts[0], ts[-1]))
    assert lo.cost_total == pytest.approx(exact[ts[0]], rel=1e-6, abs=1e-6)
    assert hi.cost_total == pytest.approx(exact[ts[-1]], rel=1e-6, abs=1e-6)
    tol = 1e-6 * max(1.0, *exact.values())
    for t in ts:
        for z in (lo, hi):  # a solved plan at other prices is a plan there: never below the least cost
            assert cost_at(z, {KEY: t}) >= exact[t] - tol, (t, z.vary)
    # without spot (the hourly tier cannot change), the enumerator prices the plan solved at 0.4 exactly
    if not any("spot" in o["price_per_gpu_hour"] for o in plan["offers"]):
        result = solve_plan(apply_point(loaded, {KEY: ts[0]}), SolveOptions(alternatives=0))
        assert result.cost_total == pytest.approx(lo.cost_total, rel=1e-9)
        choice = {w.name: w.offer for w in result.workloads}
        reserved = {p.offer: p.gpus // p.gpus_per_node for p in result.purchases if p.tier == "reserved-1y"}
        for t in ts:
            first, second = scenario_costs(priced(plan, t), choice, reserved, plan["scenarios"])
            moved = first + sum(s["weight"] * q for s, q in zip(plan["scenarios"], second))
            assert cost_at(lo, {KEY: t}) == pytest.approx(moved, rel=1e-6, abs=1e-6), t
    for t in ts[1:-1]:
        p = prove_between(lo, hi, {KEY: t}, KEY, math.inf, "h")
        assert p is not None and p.interpolated and p.status == "optimal"
        assert p.bound <= exact[t] + tol <= p.cost_total + 2 * tol, t  # the chord below, the plan above
        if prove_between(lo, hi, {KEY: t}, KEY, 1e-9, "h") is not None:  # proven: it is the least cost
            assert p.cost_total == pytest.approx(exact[t], rel=1e-6, abs=1e-6)


def test_the_api_price_moves_only_the_api_prices(tmp_path: Path) -> None:
    loaded = load_plan(write_plan(tmp_path / "plan.yaml", api=API))
    moved = apply_point(loaded, {"price.api": 2.5})
    summaries = moved.plan.workloads[1]
    assert summaries.api.usd_per_m_input == pytest.approx(0.0125) and summaries.api.usd_per_m_output == pytest.approx(0.0625)
    assert summaries.api.max_share == 1.0 and loaded.plan.workloads[1].api.usd_per_m_output == 0.025
    assert moved.catalog.offers == loaded.catalog.offers and moved.plan.workloads[0] == loaded.plan.workloads[0]


def test_a_sweep_along_the_api_price_proves_points_exactly(tmp_path: Path) -> None:
    """The batch job may go to the API whole (max_share 1): cheap API, all of it there; dear, none of it."""
    plan = write_plan(tmp_path / "plan.yaml", api=API)
    varies = [parse_vary("price.api=0.1:2:15")]
    proved = run_sweep(plan, varies, tmp_path / "proved", workers=2)
    every = run_sweep(plan, varies, tmp_path / "every", workers=2, every_point=True)
    assert sum(p.interpolated for p in proved.points) >= 5
    costs = [q.cost_total for q in sorted(every.points, key=lambda q: q.vary["price.api"])]
    assert costs[0] < costs[-1]  # the API price matters to this plan
    for p, q in zip(proved.points, every.points):
        assert p.status == q.status == "optimal"
        assert p.cost_total == pytest.approx(q.cost_total, rel=1e-3), p.vary


def test_a_plan_highs_misreports_from_its_start_is_solved_again(tmp_path: Path) -> None:
    """Found by the proofs along the API price: HiGHS 1.16, started from step 2's plan (the batch job all sent
    to the API), reported 43,920 as optimal for a plan that costs 45,061, and planopt returned it. The
    optimum is the LP relaxation's (10 reserved GPUs, the rest of the batch job's tokens on the API, at the
    catalog estimator's goodputs): a solve whose reported objective is not its plan's is now solved again
    without the start."""
    loaded = load_plan(write_plan(tmp_path / "plan.yaml", api=API))
    result = solve_plan(apply_point(loaded, {"price.api": 0.507142857143}), SolveOptions(alternatives=0))
    assert result.status == "optimal" and result.solver.gap == 0
    assert result.cost_total == pytest.approx(44541.98, abs=0.01)
    assert result.cost_by_tier["reserved"] == pytest.approx(10 * 2.8 * 24 * 30)
    assert result.cost_by_tier["api"] == pytest.approx(861.98, abs=0.01)


@pytest.mark.parametrize("t", [0.1, 0.3, 0.45, 0.507142857143, 0.6, 0.8, 1.2, 2.0])
def test_the_optimum_is_the_cheaper_of_the_batch_jobs_configs_forced(t: float, tmp_path: Path) -> None:
    """Build against buy by hand: the batch job runs on its GPU config or goes to the API whole, so the optimum
    is the cheaper of the two plans with each forced (chat has one config)."""
    from optimizer.candidates.build import build_candidates
    from optimizer.optimize.strategy import solve_candidates

    loaded = apply_point(load_plan(write_plan(tmp_path / "plan.yaml", api=API)), {"price.api": t})
    cands = build_candidates(loaded)
    keys = [c.key for c in cands.by_workload["summaries"]]
    assert len(keys) == 2 and len(cands.by_workload["chat"]) == 1
    forced = [solve_candidates(loaded, cands, SolveOptions(alternatives=0), fix={"summaries": k})[1].objective
              for k in keys]
    result = solve_plan(loaded, SolveOptions(alternatives=0))
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(min(forced), rel=1e-9), (t, forced)


def test_cvar_and_worst_plans_are_solved_at_every_point(tmp_path: Path) -> None:
    for seed in SEEDS[:3]:
        plan = random_plan(seed)
        loaded = load_plan(write(tmp_path, plan))
        assert _linear_in_prices(loaded) is (plan["policy"]["risk"]["measure"] == "expected")


def point(t: float, cost: float, spend: float, gap: float = 0.0, reserved: int = 0) -> SweepPoint:
    return SweepPoint({KEY: t}, "optimal", cost, reserved, "h", 1.0, gap=gap, spend={"on-demand": spend})


def test_proofs_by_hand() -> None:
    """Two plans: A costs 100 + 50·t (all of its t-part on demand), B costs 130 + 10·t. Solved at t = 0.5 (A,
    125) and t = 1.5 (B, 145): at t = 1 the chord is 135 and B costs 140, 3.6% above, so t = 1 is not proven
    (a third plan could cost 136). Where A and B cross, t = 0.75, the solve finds 137.5; then every point
    between is proven, on A's line below 0.75 and B's above."""
    a, b = point(0.5, 125.0, 25.0), point(1.5, 145.0, 15.0)
    assert cost_at(a, {KEY: 1.0}) == pytest.approx(150.0) and cost_at(b, {KEY: 1.0}) == pytest.approx(140.0)
    assert prove_between(a, b, {KEY: 1.0}, KEY, 0.001, "h") is None
    loose = prove_between(a, b, {KEY: 1.0}, KEY, 0.05, "h")
    assert loose is not None and loose.cost_total == pytest.approx(140.0) and loose.gap == pytest.approx(5 / 140)
    inner = [{KEY: t} for t in (0.6, 0.7, 0.75, 0.9, 1.2)]
    assert _where_plans_cross(KEY, a, b, inner) == {KEY: 0.75}
    same = point(1.5, 175.0, 75.0)  # A's plan solved at 1.5 too: no crossing, the middle point
    assert _where_plans_cross(KEY, a, same, inner) == {KEY: 0.75}
    mid = point(0.75, 137.5, 37.5, reserved=4)  # A's plan at 0.75: 100 + 50·0.75, 37.5 of it on demand
    for t, plan_cost in ((0.6, 130.0), (0.7, 135.0)):
        p = prove_between(a, mid, {KEY: t}, KEY, 0.0, "h")
        assert p is not None and p.cost_total == pytest.approx(plan_cost) and p.gap == pytest.approx(0, abs=1e-12)
    p = prove_between(mid, b, {KEY: 1.0}, KEY, 0.0, "h")
    assert p is not None and p.cost_total == pytest.approx(140.0) and p.reserved_gpus == 0  # B's plan
    assert "price.on-demand=1.5 costs 140.00 here" in p.message
    # a bound with a gap: the chord moves down by it, and a point is proven only within that gap
    c, d = point(0.5, 125.0, 25.0, gap=0.01), point(1.5, 175.0, 75.0, gap=0.01)
    assert prove_between(c, d, {KEY: 1.0}, KEY, 0.001, "h") is None
    assert prove_between(c, d, {KEY: 1.0}, KEY, 0.01, "h").cost_total == pytest.approx(150.0)


def test_lines_run_along_each_price_through_the_held_values() -> None:
    varies = [parse_vary("demand=0.8:1.2:3"), parse_vary("price.on-demand=0.5:1.5:5"), parse_vary("price.spot=1:2:2")]
    base = {"demand": 1.0, "price.on-demand": 1.0, "price.spot": 1.0}
    lines = price_lines(sweep_points(base, varies), varies)
    # one at a time: on-demand's five values through the plan's point (spot's two are no line)
    assert lines == [PriceLine(KEY, [{**base, KEY: t} for t in (0.5, 0.75, 1.0, 1.25, 1.5)])]
    grid = price_lines(sweep_points(base, varies, grid=True), varies, grid=True)
    assert len(grid) == 3 * 2 and all(line.key == KEY and len(line.points) == 5 for line in grid)
    # a grid over two prices: rows along the one with more values only, so no point lies on two lines
    two = [parse_vary("price.on-demand=0.5:1.5:3"), parse_vary("price.reserved-1y=0.5:1.5:4")]
    rows = price_lines(sweep_points({KEY: 1.0, "price.reserved-1y": 1.0}, two, grid=True), two, grid=True)
    assert [line.key for line in rows] == ["price.reserved-1y"] * 3


@pytest.fixture(scope="module")
def along(tmp_path_factory):
    """The sweep plan over 11 on-demand prices: proving points, and solving every one."""
    d = tmp_path_factory.mktemp("prices")
    plan = write_plan(d / "plan.yaml")
    varies = [parse_vary("price.on-demand=0.5:1.5:11"), parse_vary("price.reserved-1y=0.8:1.2:3")]
    return (d, plan, varies, run_sweep(plan, varies, d / "proved", workers=2),
            run_sweep(plan, varies, d / "every", workers=2, every_point=True))


def test_a_sweep_that_proves_points_equals_solving_each(along) -> None:
    _d, _plan, _varies, proved, every = along
    assert [p.vary for p in proved.points] == [p.vary for p in every.points]
    assert not any(p.interpolated for p in every.points)
    shown = [p for p in proved.points if p.interpolated]
    assert len(shown) >= 3, [(p.vary, p.interpolated) for p in proved.points]
    for p, q in zip(proved.points, every.points):
        assert p.status == q.status == "optimal"
        assert p.cost_total == pytest.approx(q.cost_total, rel=1e-3), p.vary  # the plan's mip_gap
        if p.interpolated:
            assert p.seconds == 0 and p.message.startswith("not solved: the plan solved at")
            assert p.status_text == "optimal (between solved points)"


def test_proven_points_are_read_back_and_not_solved_again(along) -> None:
    d, plan, varies, proved, _every = along
    seen = []
    again = run_sweep(plan, varies, d / "proved", on_start=lambda todo, back: seen.append((todo, back)))
    assert seen == [(0, len(proved.points))]
    assert [(p.cost_total, p.interpolated) for p in again.points] == [  # read back to the cent, as written
        (pytest.approx(p.cost_total, abs=0.005), p.interpolated) for p in proved.points]
    assert sum(p.spend is not None for p in read_points(d / "proved" / "sweep.jsonl")) == \
        sum(not p.interpolated for p in proved.points)


def test_the_same_points_are_solved_whatever_finishes_first(along, tmp_path) -> None:
    _d, plan, varies, proved, _every = along
    alone = run_sweep(plan, varies, tmp_path / "one", workers=1)
    assert [(p.vary, p.status, p.cost_total, p.reserved_gpus, p.interpolated) for p in alone.points] == \
        [(p.vary, p.status, p.cost_total, p.reserved_gpus, p.interpolated) for p in proved.points]


def test_the_html_says_which_points_were_proven(along) -> None:
    from optimizer.report.sweep import render_html

    _d, _plan, _varies, proved, every = along
    n = sum(p.interpolated for p in proved.points)
    html = render_html(proved)
    assert f"({len(proved.points)} with a plan, {n} of them proven between solved points)" in html
    assert "--every-point" in html and html.count("optimal (between solved points): not solved: the plan") == n
    assert "proven" not in render_html(every)


def test_ray_proves_the_same_points(along, tmp_path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'planopt[ray]')")
    _d, plan, varies, proved, _every = along
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        remote = run_sweep(plan, varies, tmp_path / "ray", engine="ray")
    finally:
        ray.shutdown()
    assert [(p.vary, p.status, p.cost_total, p.reserved_gpus, p.interpolated) for p in remote.points] == \
        [(p.vary, p.status, p.cost_total, p.reserved_gpus, p.interpolated) for p in proved.points]


def test_the_cli_says_which_points_were_proven(along) -> None:
    import json

    from typer.testing import CliRunner

    from optimizer.cli import app

    d, plan, _varies, proved, _every = along
    args = ["sweep", str(plan), "--vary", "price.on-demand=0.5:1.5:11", "--vary", "price.reserved-1y=0.8:1.2:3",
            "-o", str(d / "proved")]
    res = CliRunner().invoke(app, args + ["--json"])
    assert res.exit_code == 0, res.output
    points = json.loads(res.stdout)["points"]
    assert [p.get("interpolated", False) for p in points] == [p.interpolated for p in proved.points]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    n = sum(p.interpolated for p in proved.points)
    assert f"{n} of {len(proved.points)} points were proven from the points solved on either side" in res.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
