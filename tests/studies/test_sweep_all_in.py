"""Sweep points in all-in terms: each carries cost_all_in = cost_new + cost_committed and what its plan would
sign; a multiplier of 0 stands; the tornado's lowest and highest values include the plan's own; the reserved
axis has whole ticks and no -0; a point read back from a sweep.jsonl keeps them."""

from __future__ import annotations

import json
import re

import pytest

from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report.sweep import tornado_svg
from optimizer.results.sweep import (
    SweepPoint,
    append_point,
    line_json,
    point_json,
    read_points,
    reusable,
    tornado,
)
from optimizer.studies.sweep import apply_point, check_varies, parse_vary, solve_point

from tests.helpers.sweep_plans import write_plan

API = "{usd_per_m_input: 0.005, usd_per_m_output: 0.025, max_share: 1.0}"
COMMITTED = """commitments:
  - {offer: test-h100, tier: reserved-1y, gpus: 4, start: 2026-01-01, end: 2026-12-31}
start_date: 2026-10-01
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    d = tmp_path_factory.mktemp("allin")
    path = write_plan(d / "plan.yaml", api=API)
    path.write_text(COMMITTED + path.read_text(encoding="utf-8"), encoding="utf-8")
    return load_plan(path)


def test_a_point_carries_all_in_new_committed_and_what_to_sign(loaded):
    p = solve_point(loaded, {"demand": 1.0}, SolveOptions(alternatives=0), "h")
    direct = solve_plan(loaded, SolveOptions(alternatives=0))
    assert p.cost_committed == pytest.approx(direct.cost_committed, abs=0.01) and p.cost_committed > 0
    assert p.cost_all_in == pytest.approx(direct.cost_all_in, abs=0.01)
    assert p.cost_all_in == pytest.approx(p.cost_new + p.cost_committed, abs=1e-9)
    assert len(p.new_commitments) == len(direct.new_commitments)
    assert p.full_term == pytest.approx(sum(n.total_committed for n in direct.new_commitments), abs=0.01)
    d = point_json(p)
    for key in ("cost_all_in", "cost_new", "cost_committed", "cost_total", "new_commitments", "full_term"):
        assert key in d
    assert d["cost_all_in"] == round(d["cost_new"] + d["cost_committed"], 2)
    assert all({"offer", "tier", "gpus", "start", "end", "total_committed"} <= set(n) for n in d["new_commitments"])


def test_a_point_read_back_keeps_them_and_an_older_line_is_solved_again(loaded, tmp_path):
    p = solve_point(loaded, {"demand": 1.2}, SolveOptions(alternatives=0), "h")
    jsonl = tmp_path / "sweep.jsonl"
    append_point(jsonl, p)
    back = read_points(jsonl)[0]
    assert back.cost_all_in == pytest.approx(p.cost_all_in, abs=0.01)
    assert back.new_commitments == p.new_commitments
    old = json.loads(line_json(p))
    for k in ("cost_all_in", "cost_new", "cost_committed", "new_commitments", "full_term"):
        old.pop(k)
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n", encoding="utf-8")
    older = read_points(tmp_path / "old.jsonl")[0]
    assert older.cost_all_in is None
    assert not reusable(older, every_point=False, solver=p.solver or "highs", time_limit_s=1.0, gap=1.0)


def test_a_multiplier_of_0_stands(loaded):
    """× 0 is not × 1: no demand for that workload (left out of the point's plan), an API that costs nothing."""
    plan = loaded.plan
    assert [w.name for w in apply_point(loaded, {"demand.summaries": 0.0}).plan.workloads] == ["chat"]
    free = apply_point(loaded, {"price.api": 0.0}).plan.workloads[1].api
    assert free.usd_per_m_input == 0 and free.usd_per_m_output == 0
    assert apply_point(loaded, {"price.api": 1.0}).plan is plan  # × 1 moves nothing
    check_varies(loaded, [parse_vary("demand=0:1:3"), parse_vary("price.api=0:1:2")])  # allowed
    one = SolveOptions(alternatives=0)
    at0 = solve_point(loaded, {"demand": 1.0, "demand.summaries": 0.0}, one, "h")
    at1 = solve_point(loaded, {"demand": 1.0, "demand.summaries": 1.0}, one, "h")
    assert at0.status == at1.status == "optimal" and at0.cost_total < at1.cost_total
    none = solve_point(loaded, {"demand": 0.0}, one, "h")
    assert none.status == "invalid" and "no workload has demand" in none.message


def _pt(v: float, cost: float, gpus: int) -> SweepPoint:
    return SweepPoint({"demand": v}, "optimal", cost, gpus, "h", cost_committed=100.0, new_commitments=[])


def test_the_lowest_value_of_a_key_swept_above_the_plan_is_the_plans_own():
    points = [_pt(1.0, 1000.0, 3), _pt(1.2, 1500.0, 5)]
    (bar,) = tornado(points, {"demand": 1.0}, "cost_all_in")
    assert (bar.low_value, bar.high_value) == (1.0, 1.2)
    assert (bar.at_low, bar.at_high) == (1100.0, 1600.0)
    (below,) = tornado([_pt(1.0, 1000.0, 3), _pt(0.8, 700.0, 2)], {"demand": 1.0}, "reserved_gpus")
    assert (below.low_value, below.high_value, below.at_low, below.at_high) == (0.8, 1.0, 2.0, 3.0)


@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 8), (5, 5), (3, 4)])
def test_the_reserved_axis_has_whole_ticks_and_no_negative_zero(lo, hi):
    bars = tornado([_pt(1.0, 1.0, lo), _pt(1.2, 2.0, hi)], {"demand": 1.0}, "reserved_gpus")
    svg = tornado_svg(bars, float(lo), "GPUs reserved or bought", "t", integer=True)
    ticks = [t for t in re.findall(r">([^<>]*)</text>", svg) if re.fullmatch(r"-?[\d,]+(\.\d+)?", t.strip())]
    assert ticks and "-0" not in ticks
    assert all(re.fullmatch(r"[\d,]+", t) for t in ticks), ticks  # whole, none below 0
    assert len(ticks) == len(set(ticks))  # no tick twice
