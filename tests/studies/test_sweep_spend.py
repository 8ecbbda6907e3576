"""Sweep points and spend commitments: a point carries the new savings plans its plan would sign (JSON, console,
HTML, read back from sweep.jsonl) and a signed spend commitment's spend in cost_committed and all-in; along the
on-demand price a plan under a spend commitment is solved at every point (its cost is not linear there).

The quarter of tests/helpers/commitments.py: 100 tok/s per 1-GPU replica, a demand of 100·k tok/s needs k GPUs."""

from __future__ import annotations

import pytest
from rich.console import Console

from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report.sweep import context, sweep_table, to_sign
from optimizer.results.sweep import append_point, point_json, read_points
from optimizer.studies.sweep import _linear_along, parse_vary, price_lines, solve_point
from tests.helpers.commitments import H100, OD, chat, quarter
from tests.helpers.small_plans import offer, write
from tests.helpers.solving import NO_TIME_LIMIT

PROVIDER = f"prov-{H100}"
SIGNED_U = 40.0  # $/hour until 2026-11-14: 45 days of the quarter


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    data = quarter([chat(16)], tiers=["on-demand"], reservation_starts="plan_start")
    data["offers"] = [offer(H100, "h100-sxm", on_demand=OD)]
    data["savings_plans"] = [{"provider": PROVIDER, "term": "1y", "discount": 0.3,
                              "source": "https://aws.amazon.com/savingsplans/compute-pricing/"}]
    data["spend_commitments"] = [{"provider": PROVIDER, "usd_per_hour": SIGNED_U, "term": "1y", "discount": 0.3,
                                  "start": "2025-11-15", "end": "2026-11-14"}]
    return load_plan(write(tmp_path_factory.mktemp("sweep-spend"), data))


OPTIONS = SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT)


@pytest.fixture(scope="module")
def point(loaded):
    return solve_point(loaded, {"demand": 1.0}, OPTIONS, "h")


def test_a_point_carries_the_savings_plan_to_sign_and_the_signed_spend(loaded, point):
    direct = solve_plan(loaded, OPTIONS)
    assert point.status == "optimal"
    n, = direct.new_spend_commitments
    s, = point.new_spend_commitments
    assert s["usd_per_hour"] == pytest.approx(n.usd_per_hour, abs=1e-6)
    assert (s["provider"], s["term"], s["start"], s["end"]) == (PROVIDER, "1y", n.start, n.end)
    assert s["total_committed"] == pytest.approx(n.total_committed, abs=0.01)
    # the signed commitment's 45 days are committed spend, in the point's all-in
    assert point.cost_committed == pytest.approx(SIGNED_U * 24 * 45, abs=0.01)
    assert point.cost_committed == pytest.approx(direct.cost_committed, abs=0.01)
    assert point.cost_all_in == pytest.approx(direct.cost_all_in, abs=0.01)
    assert point.full_term == pytest.approx(sum(c.total_committed for c in direct.new_commitments)
                                            + n.total_committed, abs=0.02)
    d = point_json(point)
    assert d["new_spend_commitments"] == point.new_spend_commitments
    assert d["full_term"] == pytest.approx(point.full_term, abs=0.01)


def test_the_savings_plan_reads_back_and_shows_in_the_table_and_html(loaded, point, tmp_path):
    jsonl = tmp_path / "sweep.jsonl"
    append_point(jsonl, point)
    back = read_points(jsonl)[0]
    assert back.new_spend_commitments == point.new_spend_commitments
    assert back.full_term == pytest.approx(point.full_term, abs=0.01)
    u = point.new_spend_commitments[0]["usd_per_hour"]
    phrase = f"${u:,.2f}/hour {PROVIDER} savings plan 1y"
    assert phrase in to_sign(back)
    console = Console(record=True, width=400)
    console.print(sweep_table([back], {"demand": 1.0}, "USD"))
    assert phrase in console.export_text()

    class _Sweep:  # what report.sweep reads of a Sweep
        currency, plan, file, keys, grid = "USD", "p", "p.yaml", ["demand"], False
        points, base = [back], {"demand": 1.0}

    row, = context(_Sweep())["rows"]
    assert any(phrase in x for x in row["sign"])


def test_the_on_demand_price_under_a_spend_commitment_is_solved_at_every_point(loaded):
    """Covered use is capped by the list spend, so a plan's cost is convex in the on-demand price: no point along
    it is proven from its neighbours. Another tier's price still is."""
    assert not _linear_along(loaded, "price.on-demand") and _linear_along(loaded, "price.spot")
    varies = [parse_vary("price.on-demand=0.8:1.2:3")]
    wanted = [{"price.on-demand": v} for v in (0.8, 1.0, 1.2)]
    assert price_lines(wanted, varies)  # the line exists; run_sweep leaves the key out of it
    assert not price_lines(wanted, [v for v in varies if _linear_along(loaded, v.key)])
