"""The workbook's Own hardware sheet: live formulas over the inputs of servers bought and owned.

A plan that owns one server, may buy more (with a lead time) and rents the rest is solved; its workbook
is recalculated in LibreOffice: the sheet's totals are the result's buy and facility tiers, and the
Summary reads them. Then the energy price and, separately, the depreciation life are changed with
openpyxl and the workbook recalculated again: the totals move exactly as candidates.ownership says.
LibreOffice skips these tests when missing (in CI it must be there), like test_reports.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import openpyxl
import pytest

from optimizer.candidates.ownership import DAYS_PER_YEAR, OwnTerms
from optimizer.pipeline import solve_plan
from optimizer.report.xlsx import workbook as excel
from optimizer.report.xlsx.own import COST_HEAD
from optimizer.results.jsonio import from_dict, to_dict

from tests.helpers.office import check_formulas, need, recalculate

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

TARIFF = [0.05] * 6 + [0.07, 0.09, 0.11] + [0.12] * 8 + [0.11, 0.10, 0.09, 0.08, 0.07, 0.06, 0.05]
NEW_TARIFF = [round(1.5 * t + 0.01 * (h % 3), 4) for h, t in enumerate(TARIFF)]
NEW_LIFE = 6.0

# owned: one server from before the start; buy: six at most worth it, delivered after 14 days (on-demand
# at the same offer until then); rented: a reservation at a cloud. Workloads keep to their offers.
PLAN = f"""\
plan: own-workbook
horizon_days: 120
start_date: 2027-01-04
policy: {{occupancy: 0.6, spares: 0, rollout_fraction: 0.0}}
facility: {{pue: 1.25, colo_usd_per_kw_month: 150, power_kw: 200, racks: 10, usd_per_kwh: {TARIFF}}}
owned:
  - {{accelerator: h100-sxm, nodes: 1, since: 2024-06-01, book_value_per_node: 120000, remaining_life_years: 2,
     node_power_kw: 10.2, idle_power_kw: 3.0, support_per_year: 10000}}
models:
  - {{id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}}
offers:
  - id: buy-h100
    accelerator: h100-sxm
    provider: own
    gpus_per_node: 8
    price_per_gpu_hour: {{on-demand: 6.0}}
    buy: {{price_per_node: 200000, lead_time_days: 14, life_years: 4, residual_fraction: 0.1, cost_of_capital: 0.07,
           support_per_year: 15000, node_power_kw: 10.2, idle_power_kw: 3.0}}
  - id: cloud-h100
    accelerator: h100-sxm
    provider: cloud
    gpus_per_node: 8
    price_per_gpu_hour: {{reserved-1y: 4.0, on-demand: 6.0}}
workloads:
  - name: chat
    model: seed-70b
    offers: [buy-h100]
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand:
      peak_output_tokens_per_s: 20000
      profile: [0.3, 0.3, 0.3, 0.3, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 1.0, 1.0,
                1.0, 1.0, 1.0, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.3]
    measured: [{{accelerator: h100-sxm, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
  - name: hold
    offers: [owned-h100-sxm]
    reserve_gpus: {{count: 8}}
  - name: burst
    offers: [cloud-h100]
    reserve_gpus: {{count: 8}}
"""


def _name_cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


def _name_cells(wb, name: str) -> list:
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return [c for row in wb[sheet][coord.replace("$", "")] for c in row]


def expected(own: dict, tariff: list[float] | None = None, life: float | None = None) -> dict[str, float]:
    """buy and facility from the result's inputs by candidates.ownership's formulas (as extract adds them)."""
    fac = own["facility"]
    tariff = tariff or fac["tariff"]
    buy = facility = 0.0
    for x in own["inputs"]:
        t = OwnTerms(x["offer"], x["kind"], x["gpus_per_node"], 0, x["load_kw"], x["idle_kw"], 1, fac["pue"],
                     tuple(tariff), fac["colo_usd_per_kw_month"], price_per_node=x["price_per_node"],
                     life_years=x["life_years"], residual_fraction=x["residual_fraction"],
                     cost_of_capital=x["cost_of_capital"], support_per_year=x["support_per_year"])
        if life is not None and t.kind == "buy":
            t = replace(t, life_years=life)
        n, days = x["nodes"], x["service_days"]
        if t.kind == "buy":
            buy += n * t.ownership_per_year / DAYS_PER_YEAR * days
            facility += n * (t.idle_energy_per_day() + t.colo_per_day()) * days
        else:
            facility += n * (t.idle_energy_per_day() + t.colo_per_day() + t.support_per_year / DAYS_PER_YEAR) * days
        facility += sum(g * t.serving_energy(h) for h, g in enumerate(x["served_gpu_hours_by_hour"]))
    return {"buy": buy, "facility": facility}


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("own")
    plan = base / "own.yaml"
    plan.write_text(PLAN, encoding="utf-8")
    result = solve_plan(plan)
    book = base / "own.xlsx"
    excel.write_workbook(result, book)
    return {"result": result, "json": to_dict(result), "book": book, "dir": base}


@pytest.fixture(scope="module")
def recalculated(solved) -> dict[str, Path]:
    """The workbook, and copies with the energy price and the buy offer's life changed (by openpyxl), all
    recalculated by LibreOffice in one call."""
    need("soffice", "libreoffice")
    base = solved["dir"]
    energy = base / "own-energy.xlsx"
    wb = openpyxl.load_workbook(solved["book"])
    cells = _name_cells(wb, "own_tariff")
    assert [c.value for c in cells] == pytest.approx(TARIFF)
    for c, v in zip(cells, NEW_TARIFF):
        c.value = v
    wb.save(energy)
    life = base / "own-life.xlsx"
    wb = openpyxl.load_workbook(solved["book"])
    cell = _name_cell(wb, "own_buy_h100_life_years")
    assert cell.value == 4
    cell.value = NEW_LIFE
    wb.save(life)
    power = base / "own-power.xlsx"  # every server drawing ten times its load: past the facility's 200 kW
    wb = openpyxl.load_workbook(solved["book"])
    loads = [n for n in wb.defined_names if n.startswith("own_") and n.endswith("_load_kw")]
    assert loads
    for n in loads:
        _name_cell(wb, n).value *= 10
    wb.save(power)
    return recalculate(base, [solved["book"], energy, life, power])


def _values(path: Path) -> dict[str, float]:
    wb = openpyxl.load_workbook(path, data_only=True)
    return {n: _name_cell(wb, n).value for n in ("own_buy_total", "own_facility_total", "cost_buy", "cost_facility",
                                                 "total_cost")}


def test_the_plan_owns_buys_and_rents(solved):
    d = solved["json"]
    by_tier = d["cost"]["by_tier"]
    assert by_tier["buy"] > 0 and by_tier["facility"] > 0 and by_tier["reserved"] > 0
    kinds = {x["offer"]: (x["kind"], x["nodes"]) for x in d["own"]["inputs"]}
    assert kinds["owned-h100-sxm"] == ("owned", 1) and kinds["buy-h100"][0] == "buy" and kinds["buy-h100"][1] > 0
    assert len(d["own"]["facility"]["tariff"]) == 24
    # the inputs the result keeps reproduce its buy and facility tiers
    e = expected(d["own"])
    for k in ("buy", "facility"):
        assert math.isclose(e[k], by_tier[k], rel_tol=1e-6), (k, e[k], by_tier[k])


@pytest.mark.slow
def test_own_sheet_totals_are_the_results_tiers_and_feed_the_summary(solved, recalculated):
    assert "Own hardware" in openpyxl.load_workbook(solved["book"]).sheetnames
    assert sum(check_formulas(solved["book"], recalculated["own"], ("Own hardware", "Summary")).values()) > 40
    again = openpyxl.load_workbook(recalculated["own"], data_only=True)
    cost = solved["json"]["cost"]
    v = _values(recalculated["own"])
    for k in ("buy", "facility"):
        assert math.isclose(v[f"own_{k}_total"], cost["by_tier"][k], rel_tol=1e-6), (k, v, cost)
        assert v[f"cost_{k}"] == v[f"own_{k}_total"]
    assert math.isclose(v["total_cost"], cost["total"], rel_tol=1e-6), (v, cost)
    # break-even: the fixed cost per GPU-hour owned is a formula of the inputs, equal to the result's
    ws = again["Own hardware"]
    rows = [r for r in ws.iter_rows(values_only=True) if r[0] == "buy-h100" and isinstance(r[4], str)
            and r[5] in ("on-demand", "reserved-1y", "reserved-3y")]
    assert rows
    be = solved["json"]["own"]["break_even"][0]
    assert math.isclose(rows[0][2], be["fixed_per_gpu_hour"], rel_tol=1e-5)
    assert math.isclose(rows[0][3], be["serving_energy_per_gpu_hour"], rel_tol=1e-5)
    texts = [c for r in ws.iter_rows(values_only=True) for c in r if isinstance(c, str)]
    assert solved["json"]["own"]["bought"][0]["decision"] in texts


@pytest.mark.slow
def test_a_new_energy_price_moves_the_facility_tier_as_the_formulas_say(solved, recalculated):
    own = solved["json"]["own"]
    before, after = _values(recalculated["own"]), _values(recalculated["own-energy"])
    e = expected(own, tariff=NEW_TARIFF)
    assert math.isclose(after["own_facility_total"], e["facility"], rel_tol=1e-9), (after, e)
    assert after["own_facility_total"] > before["own_facility_total"]
    assert math.isclose(after["own_buy_total"], before["own_buy_total"], rel_tol=1e-12)
    assert math.isclose(after["total_cost"] - before["total_cost"],
                        e["facility"] - before["own_facility_total"], rel_tol=1e-9)


@pytest.mark.slow
def test_a_longer_life_lowers_the_buy_tier_as_the_formulas_say(solved, recalculated):
    own = solved["json"]["own"]
    before, after = _values(recalculated["own"]), _values(recalculated["own-life"])
    e = expected(own, life=NEW_LIFE)
    assert math.isclose(after["own_buy_total"], e["buy"], rel_tol=1e-9), (after, e)
    assert after["own_buy_total"] < before["own_buy_total"]
    assert math.isclose(after["own_facility_total"], before["own_facility_total"], rel_tol=1e-12)
    assert math.isclose(after["total_cost"] - before["total_cost"], e["buy"] - before["own_buy_total"], rel_tol=1e-9)


def test_a_result_without_the_inputs_still_writes_the_sheet(solved, tmp_path):
    """Results written before the inputs were kept read back (no inputs, no tariff) and still write a workbook
    whose Summary carries their buy and facility tiers."""
    d = solved["json"]
    old = {**d, "own": {k: v for k, v in d["own"].items() if k != "inputs"}}
    old["own"]["facility"] = {k: v for k, v in d["own"]["facility"].items()
                              if k not in ("tariff", "colo_usd_per_kw_month")}
    result = from_dict(old)
    assert result.own is not None and result.own.inputs == [] and result.own.facility.tariff == []
    path = tmp_path / "old.xlsx"
    excel.write_workbook(result, path)
    wb = openpyxl.load_workbook(path, data_only=True)
    assert "Own hardware" in wb.sheetnames
    for k in ("buy", "facility"):
        assert math.isclose(_name_cell(wb, f"cost_{k}").value, d["cost"]["by_tier"][k], rel_tol=1e-9)


def _rows(ws, first: int = 1) -> list[tuple]:
    return [r for r in ws.iter_rows(min_row=first, values_only=True)]


def _header(ws, label: str) -> tuple[int, dict[str, int]]:
    """The row (1-based) whose first cell is `label`, and its column titles → 0-based index."""
    for i, r in enumerate(ws.iter_rows(values_only=True), 1):
        if r[0] == label:
            return i, {v: c for c, v in enumerate(r) if v is not None}
    raise AssertionError(f"no header {label!r} on {ws.title}")


@pytest.mark.slow
def test_bought_servers_are_costed_on_purchases_cash_flow_and_workloads(solved, recalculated):
    """Purchases' buy row holds GPUs × 24 × days from delivery at the price that makes it the ownership share
    (so Total GPU cost and Summary's GPUs by accelerator count the servers bought); Cash flow's rows of servers
    of your own carry their amounts, so its total is the all-in spend; Workloads charge each workload its buy
    and facility cost, so the workloads and the "not used" row add up to the total. Every formula on those
    sheets recalculates to the value stored with it."""
    d = solved["json"]
    cost = d["cost"]
    check_formulas(solved["book"], recalculated["own"], ("Purchases", "Cash flow", "Workloads"))
    formulas = openpyxl.load_workbook(solved["book"])
    again = openpyxl.load_workbook(recalculated["own"], data_only=True)

    # Purchases: the buy row is the ownership share, read from Own hardware
    bought = d["own"]["bought"][0]
    x = next(x for x in d["own"]["inputs"] if x["offer"] == bought["offer"])
    head, col = _header(again["Purchases"], "Offer")
    rows = _rows(again["Purchases"], head + 1)
    buy = next(r for r in rows if r[0] == bought["offer"] and r[col["Tier"]] == "buy")
    assert buy[col["GPUs"]] == bought["gpus"]
    assert math.isclose(buy[col["GPU-hours"]], bought["gpus"] * 24 * x["service_days"], rel_tol=1e-12)
    share = buy[col["Cost over the horizon"]]
    assert math.isclose(share, bought["ownership_in_horizon"], rel_tol=1e-6), (share, bought)
    assert math.isclose(share, cost["by_tier"]["buy"], rel_tol=1e-6)
    assert math.isclose(share, _name_cell(again, "own_buy_total").value, rel_tol=1e-12)
    f_row = next(r for r in formulas["Purchases"].iter_rows(min_row=head + 1)
                 if r[0].value == bought["offer"] and r[col["Tier"]].value == "buy")
    assert "'Own hardware'!" in f_row[col["Price per GPU-hour"]].value
    assert "'Own hardware'!" in f_row[col["GPU-hours"]].value
    total_gpu = next(r for r in rows if r[0] == "Total GPU cost")[col["Cost over the horizon"]]
    rented = sum(p["cost"] for p in d["purchases"] if p["tier"] != "buy")
    assert math.isclose(total_gpu, rented + share, rel_tol=1e-9)
    # Summary: the accelerator's row counts the bought GPUs, their GPU-hours and cost
    summary = again["Summary"]
    head, col = _header(summary, "Accelerator")
    acc = next(r for r in _rows(summary, head + 1) if r[0] == bought["accelerator"])
    held = sum(p["gpus"] for p in d["purchases"] if p["accelerator"] == bought["accelerator"]
               and (p["tier"] == "buy" or p["tier"].startswith("reserved")))
    assert acc[col["Reserved, bought or owned GPUs" if d["own"]["owned"] else "Reserved and bought GPUs"]] == held
    fac = _name_cell(again, "own_facility_total").value  # bought and owned servers' energy, space and support
    table = []
    for r in _rows(summary, head + 1):
        if not isinstance(r[col["Cost over the horizon"]], (int, float)):
            break
        table.append(r)
    owned_running = sum(r[col["Cost over the horizon"]] for r in table if str(r[0]).endswith("(owned)"))
    assert math.isclose(acc[col["Cost over the horizon"]],
                        sum(p["cost"] for p in d["purchases"] if p["accelerator"] == bought["accelerator"])
                        + fac - owned_running, rel_tol=1e-6)
    # the table's rows add up to the total but the API: servers bought carry their facility cost too
    assert math.isclose(sum(r[col["Cost over the horizon"]] for r in table) + cost["by_tier"].get("api", 0.0),
                        cost["total"], rel_tol=1e-9)

    # Cash flow: the total is the all-in spend, own hardware included
    assert any(c["tier"] in ("buy", "facility") for c in d["cash_flow"])
    assert math.isclose(_name_cell(again, "cash_flow_total").value, cost["all_in"], rel_tol=1e-6)
    assert math.isclose(_name_cell(again, "cash_flow_total").value, _name_cell(again, "total_cost").value,
                        rel_tol=1e-9)

    # Workloads: each workload's cost (buy and facility included), the idle row, the total
    ws = again["Workloads"]
    head, col = _header(ws, "Workload")
    by_name = {r[0]: r for r in _rows(ws, head + 1) if r[0]}
    cost_col = col["Cost over the horizon (tiers it used + API)"]
    for w in d["workloads"]:
        assert math.isclose(by_name[w["name"]][cost_col], w["cost"], rel_tol=1e-6, abs_tol=1e-6), w["name"]
        for tier, label in (("buy", "… on servers bought"), ("owned", "… on servers owned")):
            assert by_name[w["name"]][col[label]] == pytest.approx(w["gpu_hours_by_tier"].get(tier, 0.0))
    assert any(w["cost_by_tier"].get("buy") for w in d["workloads"])
    assert any(w["cost_by_tier"].get("facility") for w in d["workloads"])
    idle = by_name["Not used by any workload"][cost_col]
    assert math.isclose(idle, cost["idle"], rel_tol=1e-6, abs_tol=1e-3), (idle, cost["idle"])
    workloads = sum(by_name[w["name"]][cost_col] for w in d["workloads"])
    assert math.isclose(workloads + idle, cost["total"], rel_tol=1e-9)
    assert math.isclose(by_name["Total"][cost_col], cost["total"], rel_tol=1e-6)


def test_supply_shows_owned_gpus_and_holds_bought_ones(solved):
    """Supply, hour by hour: the owned servers' GPUs in use are a column of their own and bought servers count
    as held — every hour's demand is met by the columns shown (owned GPUs had not appeared at all: 51 GPUs
    demanded against 24 on-demand shown)."""
    wb = openpyxl.load_workbook(solved["book"], data_only=True)
    ws = wb["Supply"]
    held = ws["E3"].value
    bought = sum(p["gpus"] for p in solved["json"]["purchases"] if p["tier"] == "buy")
    assert bought and held >= bought
    head = next(i for i, r in enumerate(ws.iter_rows(values_only=True), 1) if r[0] == "Hour")
    cols = {v: c for c, v in enumerate(next(ws.iter_rows(min_row=head, max_row=head, values_only=True))) if v}
    assert "Committed or owned in use" in cols and "Reserved or bought held" in cols
    owned_any = False
    for r in ws.iter_rows(min_row=head + 1, max_row=head + 24, values_only=True):
        shown = sum(r[cols[k]] or 0 for k in ("Reserved or bought in use", "On-demand", "Spot",
                                               "Committed or owned in use"))
        assert shown >= r[cols["GPUs demanded"]], r
        owned_any |= bool(r[cols["Committed or owned in use"]])
    assert owned_any


def test_servers_edited_past_the_facilitys_power_say_so(recalculated):
    """The facility table's Binds cell is the solve's answer until the inputs no longer fit: ten times the load
    on every server leaves power short, and the cell says to re-solve (it had kept saying "no")."""
    def power_row(path):
        ws = openpyxl.load_workbook(path, data_only=True)["Own hardware"]
        return next(r for r in ws.iter_rows(values_only=True) if r[0] == "Power (kW, servers' load)")
    before, after = power_row(recalculated["own"]), power_row(recalculated["own-power"])
    assert before[3] >= 0 and before[4] in ("yes", "no")
    assert after[3] < 0 and after[4] == "over the limit: re-solve"


@pytest.mark.slow
def test_a_new_energy_price_charges_each_workload_its_own_part(solved, recalculated):
    """Each workload on servers of your own pays the servers' fixed costs (idle energy, space, owned support)
    by the GPU-hours it held them, and the serving energy of what it served. A new tariff moves both; the
    serving energy goes wholly to the workloads (only they serve), so what no workload used moves only by
    the unused share of the fixed costs' change (it had been a frozen share of the whole facility cost)."""
    def read(path):
        wb = openpyxl.load_workbook(path, data_only=True)
        own = wb["Own hardware"]
        head = next(i for i, r in enumerate(own.iter_rows(values_only=True), 1) if r[0] == "Offer" and
                    r[COST_HEAD.index("Idle energy")] == "Idle energy")
        costs = {r[0]: r for r in own.iter_rows(min_row=head + 1, values_only=True) if r[0] and r[1] in ("buy", "owned")}
        fixed = {o: sum(r[COST_HEAD.index(k)] or 0.0 for k in ("Idle energy", "Colocation", "Support of owned servers"))
                 for o, r in costs.items()}
        ws = wb["Workloads"]
        hrow, col = _header(ws, "Workload")
        idle = next(r for r in _rows(ws, hrow + 1) if r[0] == "Not used by any workload")
        return fixed, idle[col["Cost over the horizon (tiers it used + API)"]]

    d = solved["json"]
    (fixed_b, idle_b), (fixed_a, idle_a) = read(recalculated["own"]), read(recalculated["own-energy"])
    held = {x["offer"]: x["nodes"] * x["gpus_per_node"] * 24 * x["service_days"] for x in d["own"]["inputs"]}
    used = {o: sum(w["gpu_hours_by_tier"].get("buy", 0.0) + w["gpu_hours_by_tier"].get("owned", 0.0)
                   for w in d["workloads"] if w["offer"] == o) for o in held}
    unused = sum((fixed_a[o] - fixed_b[o]) * (held[o] - used[o]) / held[o] for o in held if held[o])
    assert any(fixed_a[o] != fixed_b[o] for o in held)
    assert math.isclose(idle_a - idle_b, unused, rel_tol=1e-6, abs_tol=1e-3), (idle_a - idle_b, unused)


def _cash_table(path: Path) -> dict[str, tuple[float, float]]:
    """Cash flow's by-month table: month → (all-in, cash out), and "Total"."""
    ws = openpyxl.load_workbook(path, data_only=True)["Cash flow"]
    rows = _rows(ws)
    head = next(i for i, r in enumerate(rows) if "Cash out" in r)
    col = {v: c for c, v in enumerate(rows[head]) if v is not None}
    out = {}
    for r in rows[head + 1:]:
        if r[0] is None:
            break
        out[r[0]] = (r[col["All-in"]], r[col["Cash out"]])
    return out


def test_cash_by_month_pays_the_price_at_delivery_and_support_as_it_runs(solved):
    """The JSON's cash_by_month: each month's P&L adds up to the all-in spend; its cash holds the servers'
    price in the month they are delivered and their support as it runs, not depreciation or the cost of
    capital, and adds up to own.capex + own.opex."""
    d = solved["json"]
    rows = d["cash_by_month"]
    bought = d["own"]["bought"][0]
    assert sum(r["pnl"] for r in rows) == pytest.approx(d["cost"]["all_in"], rel=1e-9)
    assert sum(r["cash"] for r in rows) == pytest.approx(d["own"]["capex"] + d["own"]["opex"], rel=1e-9)
    assert sum(r["support"] for r in rows) == pytest.approx(bought["support_in_horizon"], rel=1e-9)
    assert sum(r["ownership"] for r in rows) == pytest.approx(bought["ownership_in_horizon"], rel=1e-9)
    paid = [r for r in rows if r["capex"]]
    assert [r["month"] for r in paid] == [bought["delivery_date"][:7]] and paid[0]["capex"] == bought["capex"]
    for r in rows:
        assert r["cash"] == pytest.approx(r["pnl"] - r["ownership"] + r["support"] + r["capex"], abs=0.01)


@pytest.mark.slow
def test_the_workbooks_cash_out_is_the_results_and_ignores_depreciation(solved, recalculated):
    """Cash flow's by-month cash column and Own hardware's cash out in the horizon recalculate to the
    result's; a longer life lowers the all-in spend (less depreciation) but not the cash."""
    d = solved["json"]
    check_formulas(solved["book"], recalculated["own"], ("Cash flow", "Own hardware"))
    table = _cash_table(recalculated["own"])
    for r in d["cash_by_month"]:
        assert table[r["month"]][1] == pytest.approx(r["cash"], abs=0.5)
    cash = d["own"]["capex"] + d["own"]["opex"]
    assert table["Total"][1] == pytest.approx(cash, abs=0.5)
    ws = openpyxl.load_workbook(recalculated["own"], data_only=True)["Own hardware"]
    line = next(r for r in _rows(ws) if isinstance(r[0], str) and r[0].startswith("Cash out in the horizon"))
    assert line[3] == pytest.approx(cash, abs=0.5)
    longer = _cash_table(recalculated["own-life"])
    assert longer["Total"][0] < table["Total"][0] - 1
    assert longer["Total"][1] == pytest.approx(table["Total"][1], abs=0.5)


@pytest.mark.slow
def test_supply_holds_bought_servers_only_from_their_delivery(solved, recalculated):
    """Before the servers bought are delivered (the first 14 days) Supply's held line leaves them out, as the
    result's hourly rows do; from delivery it counts them (it had held them from the first day)."""
    d = solved["json"]
    bought = sum(p["gpus"] for p in d["purchases"] if p["tier"] == "buy")
    reserved = sum(p["gpus"] for p in d["purchases"] if p["tier"] in ("reserved-1y", "reserved-3y"))
    assert bought and len(d["periods"]) == 2
    check_formulas(solved["book"], recalculated["own"], ("Supply",))
    ws = openpyxl.load_workbook(recalculated["own"], data_only=True)["Supply"]
    rows = _rows(ws)
    held: dict[str, set] = {}
    period = None
    for i, r in enumerate(rows):
        if r[0] == "Hour":
            period = rows[i - 1][6]
            col = r.index("Reserved or bought held")
            held[period] = {rows[i + 1 + h][col] for h in range(24)}
    first, second = (p["label"] for p in d["periods"])
    assert held[first] == {reserved}
    assert held[second] == {reserved + bought}


def test_a_pools_peak_is_read_in_one_contract_period_not_averaged_over_them(solved):
    """The HTML's capacity-risk row names the hour of one period (before or after the servers are delivered)
    that rests most on on-demand and spot, with that period's on-demand GPUs; they had shown a day type's average over the
    periods (fewer on-demand GPUs than are ever in use at once before delivery, bought GPUs that are not
    there yet)."""
    from optimizer.report.html import _pool_risk

    d = solved["json"]
    pool = next(w["pool"] for w in d["workloads"] if w["name"] == "chat")
    labels = [p["label"] for p in d["periods"]]
    at: dict[tuple, list[float]] = {}
    for h in d["hourly"]:
        if h["pool"] != pool:
            continue
        for p in ([h["period"]] if h.get("period") else labels):
            row = at.setdefault((p, h["day_type"], h["hour"]), [0.0, 0.0])
            row[0] += h["demand_gpus"]
            row[1] += h["on_demand_gpus"] + h["spot_gpus"]
    (period, day, hour), (demand, hourly) = max(at.items(), key=lambda kv: (round(kv[1][1], 6), round(kv[1][0], 6)))
    risk = _pool_risk(solved["result"], pool)
    assert risk["at"] == f"{day} {hour:02d}:00, {period}"
    assert float(risk["on_demand"].replace(",", "")) + float(risk["spot"].replace(",", "")) == hourly
    assert hourly > 0
