"""The HTML report's servers of your own: the buy decision, owned and bought servers, capex against opex,
profit and loss against cash, break-even against renting, and the facility; absent without own hardware."""

from __future__ import annotations

import re

import pytest

from optimizer import formatting, vocab
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report import html
from optimizer.report import labels as L
from optimizer.report.charts import pool_series
from optimizer.report.console import break_even_text
from optimizer.results.types import PlanResult

from tests.helpers.layout import NARROW_WIDTH_PX, PRINT_WIDTH_PX, SCREEN_WIDTH_PX, as_printed, measure
from tests.helpers.solving import NO_TIME_LIMIT

# Two owned nodes serve `hold`; `grow` may buy nodes (delivered on day 10, bridged on-demand until then) or rent.
# The facility's 45 kW leave room for two bought nodes beside the owned ones, not three: power binds.
OWN_PLAN = """\
plan: own-report
horizon_days: 30
start_date: 2027-01-01
catalogs: []
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
facility: {usd_per_kwh: 0.08, pue: 1.3, power_kw: 45, racks: 3}
owned:
  - {accelerator: gpu-80gb, nodes: 2, gpus_per_node: 8, since: 2024-06-01, book_value_per_node: 120000,
     remaining_life_years: 2, node_power_kw: 10.2}
offers:
  - id: buy-80gb
    accelerator: gpu-80gb
    provider: own
    gpus_per_node: 8
    price_per_gpu_hour: {on-demand: 6.0}
    buy: {price_per_node: 250000, lead_time_days: 10, life_years: 5, node_power_kw: 10.2, support_per_year: 20000}
  - id: cloud-80gb
    accelerator: gpu-80gb
    provider: cloud
    gpus_per_node: 8
    price_per_gpu_hour: {reserved-1y: 4.0, on-demand: 6.0}
workloads:
  - name: hold
    offers: [owned-gpu-80gb]
    reserve_gpus: {count: 16}
  - name: grow
    offers: [buy-80gb, cloud-80gb]
    reserve_gpus: {count: 24}
"""

RENTED_PLAN = """\
plan: rented-only
horizon_days: 30
start_date: 2027-01-01
catalogs: []
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - id: cloud-80gb
    accelerator: gpu-80gb
    provider: cloud
    gpus_per_node: 8
    price_per_gpu_hour: {reserved-1y: 4.0, on-demand: 6.0}
workloads:
  - name: grow
    offers: [cloud-80gb]
    reserve_gpus: {count: 24}
"""


def _solve(tmp_path_factory, name: str, text: str) -> PlanResult:
    path = tmp_path_factory.mktemp(name) / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return solve_plan(path, SolveOptions(time_limit_s=NO_TIME_LIMIT))


@pytest.fixture(scope="module")
def own(tmp_path_factory) -> PlanResult:
    return _solve(tmp_path_factory, "own", OWN_PLAN)


@pytest.fixture(scope="module")
def page(own) -> str:
    return html.render_html(own)


def _section(page: str) -> str:
    found = re.search(r'<section id="own">(.*?)</section>', page, re.S)
    assert found, "no owned-hardware section"
    return found.group(1)


def _text(fragment: str) -> str:
    """The fragment's text: tags dropped, whitespace collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", fragment))


def test_the_plan_owns_buys_and_binds(own):
    """The fixture's plan exercises every part of the section."""
    assert own.own is not None
    assert [r.offer for r in own.own.owned] == ["owned-gpu-80gb"]
    assert [b.offer for b in own.own.bought] == ["buy-80gb"] and own.own.bought[0].nodes == 2
    assert own.own.facility.binding == ["power_kw"]
    assert "power_kw_plus_1000" in own.own.facility.marginal


def test_cost_by_tier_lists_buy_and_facility_first(own, page):
    table = re.search(r"<h2>Cost by tier</h2>.*?(<table.*?</table>)", page, re.S).group(1)
    labels = [vocab.COST_LABELS[k] for k in vocab.OWN_COST_KEYS + vocab.COST_KEYS]
    at = [table.index(label) for label in labels]
    assert at == sorted(at), "buy and facility come first, then the rented tiers"
    money = lambda v: formatting.money(v, own.currency)  # noqa: E731
    row = re.search(re.escape(vocab.COST_LABELS["buy"]) + r"</td><td class=\"n\">([^<]+)<", table).group(1)
    assert row == money(own.cost_by_tier["buy"])


def test_section_has_the_decision_the_servers_and_the_money(own, page):
    section = _section(page)
    text = _text(section)
    b = own.own.bought[0]
    assert "Servers of your own" in page and 'href="#own"' in page
    assert str(html.nobreak(b.decision)) in section  # the console's decision sentence, dates kept on one line
    assert b.decision in text
    money = lambda v, d=0: formatting.money(v, own.currency, d)  # noqa: E731
    for amount in (own.own.capex, own.cost_by_tier["buy"], own.own.opex, own.own.sunk_depreciation,
                   own.own.owned[0].book_value, own.own.owned[0].depreciation_in_horizon, b.ownership_in_horizon,
                   b.running_in_horizon):
        assert money(amount) in text, money(amount)
    assert "2027-01-11" in text and f"{b.payback_months:,.0f} months" in text
    # capex lands in its delivery month; the all-in by month adds up to the plan's cost
    months = re.search(r"<h3>All-in against cash.*?</table>", section, re.S).group(0)
    total = re.search(r'<tr class="total">(.*?)</tr>', months, re.S).group(1)
    cells = re.findall(r'<td class="n">([^<]+)</td>', total)
    assert cells[3] == money(own.cost_total)  # all-in
    assert cells[4] == money(own.own.capex)  # capex at delivery
    assert re.search(r'<td class="n">2027-01</td>(?:<td class="n">[^<]+</td>){4}<td class="n">'
                     + re.escape(money(own.own.capex)), months)


def test_break_even_rows_and_chart(own, page):
    section = _section(page)
    rows = re.findall(r"<tr><td class=\"id\">buy-80gb</td>(.*?)</tr>", section, re.S)
    be = own.own.break_even
    assert {(b.against, b.tier) for b in be} == {("cloud-80gb", "reserved-1y"), ("cloud-80gb", "on-demand")}
    money = lambda v: formatting.money(v, own.currency, 2)  # noqa: E731
    for b in be:
        want = (f'<td class="n">{money(b.fixed_per_gpu_hour)}</td><td class="n">{money(b.serving_energy_per_gpu_hour)}'
                f'</td><td class="l id">{b.against}</td><td class="l id">{b.tier}</td><td class="n">'
                f'{money(b.price_per_gpu_hour)}</td><td class="l n">{break_even_text(b)}</td>')
        assert any(want in r for r in rows), want
    on_demand = next(b for b in be if b.tier == "on-demand")
    assert break_even_text(on_demand).startswith("from ")
    assert "owning against renting" in section and section.count("<svg") == 1


def test_facility_numbers_and_what_one_more_mw_saves(own, page):
    section = _section(page)
    f = own.own.facility
    money = lambda v, d=0: formatting.money(v, own.currency, d)  # noqa: E731
    power = re.search(r'<tr class="hot"><td>Power \(kW\)</td>(.*?)</tr>', section, re.S)
    assert power, "power binds: its row is marked"
    cells = _text(power.group(1))
    assert f"{f.power_kw_used:,.0f}" in cells and f"{f.power_kw:,.0f}" in cells
    assert f"one more MW: {money(f.marginal['power_kw_plus_1000'])}" in cells
    racks = re.search(r"<tr><td>Racks</td>(.*?)</tr>", section, re.S)
    assert racks and f"{f.racks_used}" in _text(racks.group(1)) and f"{f.racks}" in _text(racks.group(1))
    assert L.facility_sentence(own, "power_kw", money) in _text(section)
    assert f"PUE {f.pue:g}" in _text(section)


def test_supply_charts_show_owned_and_bought_gpus(own, page):
    s = pool_series(own, "interactive")
    assert max(s["all"]["owned"]) == 16 and max(s["all"]["committed"]) == 0
    assert max(s["all"]["bought"]) > 0 and max(s["all"]["reserved"]) == 0
    pools = re.search(r'<section id="pools">.*?</section>', page, re.S).group(0)
    assert "owned servers" in pools and "bought servers" in pools and "16 owned" in _text(pools)


def test_the_report_is_the_same_bytes_twice(own, page, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert html.render_html(own) == html.render_html(own)


def test_no_section_without_hardware_of_your_own(tmp_path_factory):
    result = _solve(tmp_path_factory, "rented", RENTED_PLAN)
    assert result.own is None
    page = html.render_html(result)
    assert 'id="own"' not in page and "Servers of your own" not in page
    assert vocab.COST_LABELS["buy"] not in page and vocab.COST_LABELS["facility"] not in page
    assert "owned servers" not in page


@pytest.mark.parametrize("medium, width", [("screen", SCREEN_WIDTH_PX), ("screen", NARROW_WIDTH_PX),
                                           ("print", PRINT_WIDTH_PX)])
def test_no_amount_number_or_date_breaks_across_lines(page, medium, width, tmp_path):
    printed = medium == "print"
    out = measure(as_printed(page) if printed else page, width, printed, tmp_path)
    assert not out["broken"], out["broken"][:20]
    assert not out["marked"], out["marked"][:20]
    assert not out["overflow"], out["overflow"][:10]




def test_the_fleet_busiest_hour_counts_each_period_once(own):
    """The delivery on day 10 cuts the horizon in two periods: an hour of one is not the same hour of the
    other, so the fleet's busiest hour never holds more GPUs than the workloads' own peaks add up to (both
    workloads hold their GPUs every hour: 16 + 24, and no note)."""
    from optimizer.report.console import _peaks_note

    assert own.periods and any(h.period for h in own.hourly)
    assert sum(w.gpus_at_peak for w in own.workloads) == 40
    assert _peaks_note(own).plain == ""
