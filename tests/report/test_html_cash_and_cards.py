"""Every HTML report has a Cash by month section whose months add up to all-in, workload cards lead with
all-in (new + committed), and a pool chart draws each tier as one shape a panel, not one an hour."""

from __future__ import annotations

import re

import pytest

from optimizer import formatting
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report.charts import Charts
from optimizer.report.html import context, render_html

from tests.helpers.sweep_plans import write_plan

API = "{usd_per_m_input: 0.005, usd_per_m_output: 0.025, max_share: 1.0}"
COMMITTED = """start_date: 2026-10-01
commitments:
  - {offer: test-h100, tier: reserved-1y, gpus: 4, start: 2026-01-01, end: 2026-10-20}
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("cash")
    path = write_plan(d / "plan.yaml", api=API)
    path.write_text(COMMITTED + path.read_text(encoding="utf-8"), encoding="utf-8")
    return solve_plan(path, SolveOptions(alternatives=0))


def _amount(text: str) -> float:
    return float(re.sub(r"[^\d.\-]", "", text))


def test_the_cash_months_add_up_to_all_in(result):
    ctx = context(result)
    cash = ctx["cash_months"]
    assert cash is not None and len(cash["rows"]) >= 1 and cash["committed"] and cash["api"]
    months = sum(_amount(r["all_in"]) for r in cash["rows"])
    assert months == pytest.approx(result.cost_all_in, abs=len(cash["rows"]))  # each month rounded to the dollar
    assert _amount(cash["total"]["all_in"]) == pytest.approx(result.cost_all_in, abs=1)
    assert _amount(cash["total"]["cash"]) == pytest.approx(result.cost_all_in, abs=1)  # no servers: cash = all-in
    html = render_html(result)
    assert 'id="cash"' in html and "Cash by month" in html


def test_workload_cards_lead_with_all_in(result):
    html = render_html(result)
    money = lambda v: formatting.money(v, result.currency).replace(" ", "\u00a0")  # noqa: E731
    used = [w for w in result.workloads if w.committed_cost > 0]
    assert used  # the signed contract serves a workload
    for w in used:
        assert f"<b>{money(w.cost + w.committed_cost)}</b> all-in over the horizon" in html
        assert f"{money(w.cost)} new spend + {money(w.committed_cost)} of contracts signed before" in html


def test_a_pool_chart_draws_a_tier_as_one_shape_a_panel(result):
    svg = Charts().pool(result, result.workloads[0].pool)
    panels = len(result.day_types) * max(1, len(result.periods) or 1)
    # stepped bands: a handful of shapes a panel (tiers, demand, axes), never one an hour
    patches = len(re.findall(r'id="[^"]*-PolyCollection_|id="[^"]*-patch_', svg))
    assert patches < 24 * panels, patches


def test_a_plan_with_too_many_day_types_charts_the_weightiest_scenario(result):
    """Three months × weekday/weekend × five equal scenarios (30 day types): the charts show p50's six; a
    plan with few day types shows every one."""
    from dataclasses import replace

    from optimizer.report.charts import shown_day_types, shown_scenario
    from optimizer.results.types import ScenarioRow

    names = ["p10", "p30", "p50", "p70", "p90"]
    days = {f"{d}-2027-0{m}~{s}": 4.0 for d in ("weekday", "weekend") for m in (1, 2, 3) for s in names}
    many = replace(result, day_types=days, scenarios=[ScenarioRow(s, 0.2, 0.0, 0.0, 0.0) for s in names])
    assert shown_scenario(many) == "p50"
    assert shown_day_types(many) == [d for d in days if d.endswith("~p50")] and len(shown_day_types(many)) == 6
    heavy = replace(many, scenarios=[ScenarioRow(s, 0.6 if s == "p90" else 0.1, 0.0, 0.0, 0.0) for s in names])
    assert shown_scenario(heavy) == "p90"
    assert shown_scenario(result) is None and shown_day_types(result) == list(result.day_types)
