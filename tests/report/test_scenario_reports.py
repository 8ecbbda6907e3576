"""Reports of a plan with scenarios: the console's Scenarios table and risk line, the HTML Scenarios section (with
the monthly fan), and the workbook's Scenarios sheet recalculated by LibreOffice.

Two tiny plans, each solved once: three scenarios (one that moves the on-demand price), one workload restricted
to one offer, demand that changes by month, `mip_gap: 0`; the second weighs the scenarios by CVaR, so its total
is not the sum of its tiers. LibreOffice and Chromium skip these tests when missing (in CI they must be there),
like test_reports.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import openpyxl
import pytest
from rich.console import Console

from optimizer import formatting
from optimizer.pipeline import solve_plan
from optimizer.report import html
from optimizer.report.console import render_result
from optimizer.report.provenance import provenance
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import to_dict
from optimizer.results.scenarios import quantile, risk_value

from tests.helpers.office import check_formulas, need, recalculate

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

PLAN = """\
plan: {name}
currency: USD
horizon_days: 59
start_date: 2027-01-01
catalogs: []
policy: {{occupancy: 0.6, spares: 0, rollout_fraction: 0.0, tiers: [reserved-1y, on-demand], mip_gap: 0{risk}}}
scenarios:
  - {{name: low, weight: 0.3, demand: {{all: 0.6}}}}
  - {{name: base, weight: 0.5}}
  - {{name: surge, weight: 0.2, demand: {{all: 1.6}}, prices: {{on-demand: 1.25}}}}
models:
  - {{id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}}
accelerators:
  - {{id: gpu-80gb, memory_gb: 80}}
offers:
  - {{id: seed-cloud, accelerator: gpu-80gb, provider: seedcloud, gpus_per_node: 2,
     price_per_gpu_hour: {{reserved-1y: 2.0, on-demand: 3.0}}}}
  - {{id: other-cloud, accelerator: gpu-80gb, provider: othercloud, gpus_per_node: 2,
     price_per_gpu_hour: {{reserved-1y: 1.5, on-demand: 2.5}}}}
workloads:
  - name: chat
    model: seed-70b
    offers: [seed-cloud]
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand:
      peak_output_tokens_per_s: 9000
      peak_by_month: {{2027-01: 7000, 2027-02: 9000}}
      profile: [0.3, 0.3, 0.3, 0.3, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 1.0, 1.0,
                1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.4, 0.3, 0.3]
    measured: [{{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
"""
PLANS = {"expected": PLAN.format(name="scenario-reports", risk=""),
         "cvar": PLAN.format(name="scenario-cvar", risk=", risk: {measure: cvar, level: 0.8}")}
NEW_WEIGHTS = {"low": 0.45, "base": 0.45, "surge": 0.1}


def money(v: float) -> str:
    return formatting.money(v, "USD")


def _name_cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("scenarios")
    out = {}
    for key, text in PLANS.items():
        plan = base / f"{key}.yaml"
        plan.write_text(text, encoding="utf-8")
        result = solve_plan(plan)
        book = base / f"{key}.xlsx"
        excel.write_workbook(result, book)
        out[key] = {"result": result, "json": to_dict(result), "book": book}
    out["dir"] = base
    return out


@pytest.fixture(scope="module")
def recalculated(solved) -> dict[str, Path]:
    """Both workbooks, and the cvar one with new weights (openpyxl), recalculated by LibreOffice in one call."""
    need("soffice", "libreoffice")
    base = solved["dir"]
    weights = base / "cvar-weights.xlsx"
    wb = openpyxl.load_workbook(solved["cvar"]["book"])
    ws = wb["Scenarios"]
    head = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Scenario")
    for r in range(head + 1, head + 4):
        ws.cell(r, 2).value = NEW_WEIGHTS[ws.cell(r, 1).value]
    wb.save(weights)
    priced = base / "expected-priced.xlsx"  # every on-demand price doubled on Assumptions
    wb = openpyxl.load_workbook(solved["expected"]["book"])
    names = [n for n in wb.defined_names if n.startswith("price_") and n.endswith("_on_demand")]
    assert names
    for n in names:
        _name_cell(wb, n).value *= 2
    wb.save(priced)
    return recalculate(base, [solved["expected"]["book"], solved["cvar"]["book"], weights, priced])


def _scenario_rows(wb) -> dict[str, dict[str, float]]:
    ws = wb["Scenarios"]
    head = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Scenario")
    cols = {ws.cell(head, c).value: c for c in range(1, ws.max_column + 1) if ws.cell(head, c).value}
    out = {}
    for r in range(head + 1, ws.max_row + 1):
        name = ws.cell(r, 1).value
        if name in (None, "Total weight"):
            break
        out[name] = {k: ws.cell(r, c).value for k, c in cols.items()}
    return out


def test_the_plans_have_scenarios_and_a_value_of_the_stochastic_solution(solved):
    d, c = solved["expected"]["json"], solved["cvar"]["json"]
    assert [s["name"] for s in d["scenarios"]] == ["low", "base", "surge"]
    assert d["risk"]["measure"] == "expected" and c["risk"]["measure"] == "cvar"
    assert math.isclose(d["cost"]["total"], sum(d["cost"]["by_tier"].values()), rel_tol=1e-9)
    assert c["cost"]["total"] > sum(c["cost"]["by_tier"].values()) + 1  # cvar: the total is not the tiers' sum
    assert all(s["shortfall_gpu_hours"] > 0 for s in d["scenarios"] if s["name"] == "surge")
    assert d["risk"]["mean_plan_cost"] is not None and d["risk"]["regret"]
    # the cash flow prices each scenario's hourly capacity at its prices: it adds up to the expected spend
    for x in (d, c):
        assert math.isclose(sum(r["amount"] for r in x["cash_flow"]), sum(x["cost"]["by_tier"].values()), rel_tol=1e-6)


def test_console_shows_the_scenarios_the_risk_measure_and_regret(solved):
    for key in ("expected", "cvar"):
        result, d = solved[key]["result"], solved[key]["json"]
        console = Console(record=True, width=220)
        console.print(render_result(result))
        text = console.export_text()
        assert "Scenarios (reservations and servers bought are decided once" in text
        risk = d["risk"]
        for s in d["scenarios"]:
            row = next(line for line in text.splitlines() if re.match(rf"\s*{s['name']}\s+│", line))
            for v in (money(s["cost_total"]), money(s["cost_hourly"]), f"{s['shortfall_gpu_hours']:,.0f}",
                      money(risk["regret"][s["name"]]), f"{s['weight']:.0%}"):
                assert v in row, (v, row)
        name = "expected cost" if key == "expected" else "CVaR at 80%"
        assert f"Risk measure: {name}" in text
        assert f"P90 {money(risk['p90'])}" in text and f"= {money(risk['value'])}" in text
        assert f"VSS {money(risk['vss'])}" in text and money(risk["mean_plan_cost"]) in text
        if key == "cvar":
            assert f"expected {money(risk['expected'])}" in text
            assert "Cost by tier (expected)" in text
        # each new reservation's line says its regret across the scenarios
        worst = max(risk["regret"].items(), key=lambda kv: kv[1])
        sign = " ".join(line.strip() for line in text.split("Decision", 1)[1].split("Cost by tier", 1)[0].splitlines())
        assert f"regret across the 3 scenarios at most {money(worst[1])}" in re.sub(r"\s*│\s*", " ", sign)


def _section(page: str, ident: str) -> str:
    start = page.index(f'<section id="{ident}">')
    return page[start:page.index("</section>", start)]


def test_html_has_a_scenarios_section_with_costs_regret_and_the_monthly_fan(solved):
    for key in ("expected", "cvar"):
        d = solved[key]["json"]
        made = provenance()
        page = html.render_html(solved[key]["result"], made)
        assert page == html.render_html(solved[key]["result"], made)  # deterministic
        assert 'href="#scenarios"' in page
        sec = _section(page, "scenarios")
        risk = d["risk"]
        assert sec.count("<svg") == 2  # costs per scenario, and the monthly fan
        for v in (risk["value"], risk["expected"], risk["p90"], risk["vss"], risk["mean_plan_cost"]):
            assert money(v) in sec, v
        for s in d["scenarios"]:
            row = re.search(rf'<tr[^>]*><td class="id">{s["name"]}</td>(.*?)</tr>', sec).group(1)
            for v in (money(s["cost_total"]), money(s["cost_hourly"]), money(risk["regret"][s["name"]]),
                      f"{s['shortfall_gpu_hours']:,.0f}"):
                assert f'<td class="n">{v}</td>' in row, (v, row)
        # the fan: per month, each scenario's peak GPUs, against the GPUs held
        assert "Monthly demand by scenario against the GPUs held" in sec
        held = sum(p["gpus"] for p in d["purchases"] if p["tier"].startswith("reserved"))
        for month in ("2027-01", "2027-02"):
            row = re.search(rf'<tr[^>]*><td class="n">{month}</td>(.*?)</tr>', sec).group(1)
            cells = re.findall(r'<td class="n">([\d,]+)</td>', row)
            assert len(cells) == 4 and cells[-1] == f"{held:,}"
            low, base, surge = (int(c.replace(",", "")) for c in cells[:3])
            assert low < base < surge
        if key == "cvar":
            assert "Expected over the scenarios" in _section(page, "cost")
            assert "CVaR at 80%" in page
        # the policy's risk measure in words (it had printed as a Python mapping)
        said = {"expected": "expected", "cvar": "cvar at level 0.8"}[key]
        assert re.search(rf"Risk measure over the scenarios</t[dh]>\s*<td[^>]*>{said}</td>", page), key
        assert "{&#39;measure&#39;" not in page


@pytest.mark.slow
def test_the_scenarios_section_keeps_numbers_on_one_line_on_paper(solved, tmp_path):
    from tests.helpers.layout import PRINT_WIDTH_PX, as_printed, measure

    out = measure(as_printed(html.render_html(solved["cvar"]["result"])), PRINT_WIDTH_PX, True, tmp_path)
    assert not out["broken"] and not out["marked"], out
    assert not out["overflow"], out["overflow"][:10]


@pytest.mark.slow
def test_workbook_scenarios_sheet_recalculates_to_the_results_numbers(solved, recalculated):
    for key in ("expected", "cvar"):
        d = solved[key]["json"]
        book = solved[key]["book"]
        assert openpyxl.load_workbook(book).sheetnames[:2] == ["Summary", "Scenarios"]
        assert sum(check_formulas(book, recalculated[key], label=f"{key}: ", text=False).values()) > 500
        again = openpyxl.load_workbook(recalculated[key], data_only=True)
        risk, cost = d["risk"], d["cost"]
        rows = _scenario_rows(again)
        assert list(rows) == [s["name"] for s in d["scenarios"]]
        for s in d["scenarios"]:
            row = rows[s["name"]]
            assert row["Weight"] == s["weight"]
            assert math.isclose(row["Cost if it came true"], s["cost_total"], rel_tol=1e-9), (s, row)
            assert math.isclose(row["Hourly part"], s["cost_hourly"], rel_tol=1e-9, abs_tol=1e-9)
            assert row["GPU-hours on hourly tiers"] == pytest.approx(s["shortfall_gpu_hours"])
            assert math.isclose(row["Regret"], risk["regret"][s["name"]], rel_tol=1e-12, abs_tol=1e-9)
        v = {n: _name_cell(again, n).value for n in ("scenario_expected", "scenario_p90", "scenario_risk",
                                                      "total_cost", "cash_flow_total")}
        assert math.isclose(v["scenario_expected"], risk["expected"], rel_tol=1e-9)
        assert math.isclose(v["scenario_p90"], risk["p90"], rel_tol=1e-9)
        assert math.isclose(v["scenario_risk"], risk["value"], rel_tol=1e-9)
        # the workbook's total is the result's total: the risk measure
        assert math.isclose(v["total_cost"], cost["total"], rel_tol=1e-9), (v, cost)
        # the tiers add up to the expected cost, and so does the cash flow
        tiers = sum(cost["by_tier"].values())
        tiers_cell = _name_cell(again, "total_cost" if key == "expected" else "expected_cost").value
        assert math.isclose(tiers_cell, tiers, rel_tol=1e-9)
        assert math.isclose(v["cash_flow_total"], tiers + cost["committed"], rel_tol=1e-6)
        # Summary says which is which
        summary = [c for r in again["Summary"].iter_rows(values_only=True) for c in r if isinstance(c, str)]
        if key == "cvar":
            assert "Total cost over the horizon: the CVaR at 80% over the scenarios" in summary
            assert "Expected cost over the scenarios: the tiers below add up to it" in summary
            assert not math.isclose(v["total_cost"], tiers_cell, rel_tol=1e-6)
        else:
            assert "Expected cost over the scenarios (Scenarios: Σ weight × cost)" in summary
        assert any(s.startswith("Risk measure over the scenarios") for s in summary)


def test_new_prices_move_every_hourly_part_and_keep_the_expected_cost_the_summarys(solved, recalculated):
    """On-demand prices doubled on Assumptions: the Summary's tiers rise, and the Scenarios sheet's hourly parts
    rise with them (they had stayed planopt's values: the expected cost said it was the Summary's and was not)."""
    before = openpyxl.load_workbook(recalculated["expected"], data_only=True)
    after = openpyxl.load_workbook(recalculated["expected-priced"], data_only=True)
    v = {k: {n: _name_cell(wb, n).value for n in ("scenario_expected", "total_cost")} for k, wb in
         (("before", before), ("after", after))}
    assert v["after"]["total_cost"] > v["before"]["total_cost"] + 1
    for k in v:
        assert math.isclose(v[k]["scenario_expected"], v[k]["total_cost"], rel_tol=1e-9), v
    rows_b, rows_a = _scenario_rows(before), _scenario_rows(after)
    assert all(rows_a[s]["Hourly part"] > rows_b[s]["Hourly part"] for s in rows_b if rows_b[s]["Hourly part"])


@pytest.mark.slow
def test_new_weights_move_the_expected_cost_p90_and_cvar_as_the_formulas_say(solved, recalculated):
    d = solved["cvar"]["json"]
    costs = {s["name"]: s["cost_total"] for s in d["scenarios"]}
    wb = openpyxl.load_workbook(recalculated["cvar-weights"], data_only=True)
    v = {n: _name_cell(wb, n).value for n in ("scenario_expected", "scenario_p90", "scenario_risk", "total_cost")}
    assert math.isclose(v["scenario_expected"], risk_value(costs, NEW_WEIGHTS, "expected", 0.0), rel_tol=1e-9)
    assert math.isclose(v["scenario_p90"], quantile(costs, NEW_WEIGHTS, 0.9), rel_tol=1e-9)
    assert math.isclose(v["scenario_risk"], risk_value(costs, NEW_WEIGHTS, "cvar", 0.8), rel_tol=1e-9)
    assert v["total_cost"] == v["scenario_risk"]
    for k, planned in (("scenario_risk", "value"), ("scenario_p90", "p90"), ("scenario_expected", "expected")):
        assert not math.isclose(v[k], d["risk"][planned], rel_tol=1e-6), k  # the weights moved every measure
    # what does not follow the weights says so beside the expected cost (it had claimed to be the Summary's tiers)
    cell = _name_cell(wb, "scenario_expected")
    assert cell.parent.cell(cell.row, cell.column + 1).value.startswith("weights edited: the Summary")
    unedited = _name_cell(openpyxl.load_workbook(recalculated["cvar"], data_only=True), "scenario_expected")
    assert unedited.parent.cell(unedited.row, unedited.column + 1).value == "equals the Summary's cost by tier"


def test_the_monthly_fan_adds_offers_that_hold_all_horizon_and_counts_signed_gpus_as_held(tmp_path):
    """With a contract that ends inside the horizon (2027-02-10), the hourly rows of offers it does not touch hold in every
    period: the fan adds them to each period's (it had left them out, showing about half of q1-forecast's
    peak), and each month is set against the GPUs held then — reserved, and signed until the contract ends
    (it had shown the reserved level alone)."""
    from optimizer.report.labels import month_fan

    text = PLANS["expected"].replace("horizon_days: 59", "horizon_days: 59\ncommitments:\n"
                                     "  - {offer: other-cloud, tier: reserved-1y, gpus: 4, start: 2026-03-01, "
                                     "end: 2027-02-10}")
    # reservations on the plan's first day only: offers the contract does not touch keep one level all horizon
    text = text.replace("mip_gap: 0}", "mip_gap: 0, reservation_starts: plan_start}", 1)
    text += """  - name: side
    model: seed-70b
    offers: [other-cloud]
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand: {peak_output_tokens_per_s: 3000, profile: [%s]}
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
""" % ", ".join(["0.5"] * 8 + ["1.0"] * 16)
    plan = tmp_path / "fan.yaml"
    plan.write_text(text, encoding="utf-8")
    result = solve_plan(plan)
    assert len(result.periods) == 2 and any(not h.period for h in result.hourly) and any(h.period for h in result.hourly)
    fan = month_fan(result)
    labels = [p.label for p in result.periods]
    for i, month in enumerate(fan["months"]):
        for s in fan["scenarios"]:
            want = max(sum(h.demand_gpus for h in result.hourly if h.day_type == d and h.hour == hour
                           and h.period in ("", period))
                       for d in {h.day_type for h in result.hourly if f"-{month}~{s}" in h.day_type}
                       for period in labels for hour in range(24))
            assert fan["peak"][s][i] == want
    reserved = sum(p.gpus for p in result.purchases if p.tier.startswith("reserved"))
    assert fan["held"] == [reserved + 4, reserved]  # signed until 2027-02-10: February's fewest is without them
    assert fan["peak"]["base"][0] > sum(h.demand_gpus for h in result.hourly if h.period == labels[0]
                                        and h.day_type.endswith("2027-01~base") and h.hour == 12)


def test_the_monthly_fan_holds_a_renewal_from_its_start(tmp_path):
    """Reservations may start the day after the contract ends (policy.reservation_starts: expiries): January
    holds those of the first day and the 4 signed; February the fewest of before and after the renewal starts
    (a renewal counted from its start, not from the first day)."""
    from optimizer.report.labels import month_fan

    text = PLANS["expected"].replace("horizon_days: 59", "horizon_days: 59\ncommitments:\n"
                                     "  - {offer: seed-cloud, tier: reserved-1y, gpus: 4, start: 2026-03-01, "
                                     "end: 2027-02-10}")
    plan = tmp_path / "renewal.yaml"
    plan.write_text(text, encoding="utf-8")
    result = solve_plan(plan)
    first_day = sum(p.gpus for p in result.purchases if p.tier.startswith("reserved") and p.start is None)
    renewed = sum(p.gpus for p in result.purchases if p.tier.startswith("reserved") and p.start == "2027-02-11")
    assert renewed  # the same load after the contract ends: renewed the day after
    # February: the signed 4 until the 10th, the renewal from the 11th — the fewest of the two
    assert month_fan(result)["held"] == [first_day + 4, first_day + min(4, renewed)]
