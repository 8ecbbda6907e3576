"""Reports: the live workbook recalculated in LibreOffice, the self-contained HTML in Chromium, `planopt report`.

LibreOffice and Chromium are installed by .ci/run; on a developer machine without them these tests
skip, in CI (CI=true) they fail.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.pipeline import solve_plan
from optimizer.report import files, html
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import dumps, from_dict, to_dict

from tests.helpers import shipped
from tests.helpers.office import check_formulas, need, recalculate
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

HYPERLINK = '=HYPERLINK("http://x","y")'
SCRIPT = "<script>alert(1)</script>"
TIER_NAMES = {"reserved": "cost_reserved", "on_demand": "cost_on_demand", "spot": "cost_spot", "api": "cost_api"}

# Free text a plan carries: the offer's provider and region (workload and pool names are ids), and
# the plan name (the page title).
INJECTION_PLAN = f"""\
plan: {json.dumps(SCRIPT + " plan")}
currency: USD
horizon_days: 2
catalogs: []
policy: {{occupancy: 0.6, spares: 1, rollout_fraction: 0.25, tiers: [on-demand]}}
models:
  - {{id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}}
accelerators:
  - {{id: gpu-80gb, memory_gb: 80}}
offers:
  - {{id: seed-cloud-80gb, accelerator: gpu-80gb, provider: {json.dumps(HYPERLINK)}, region: {json.dumps(SCRIPT)},
     gpus_per_node: 2, price_per_gpu_hour: {{on-demand: 2.50}}}}
workloads:
  - name: chat
    model: seed-70b
    pool: interactive
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand: {{peak_output_tokens_per_s: 9000}}
    measured: [{{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
    api: {{usd_per_m_input: 0.60, usd_per_m_output: 0.80, max_share: 0.05}}
  - name: tools
    model: seed-70b
    pool: interactive
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand: {{peak_output_tokens_per_s: 3000}}
    measured: [{{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
"""

# Demand from business numbers: the peak on Assumptions is a formula of them, Workloads' peak reads it
# (chat: the busiest hour's share and growth; search: peak ÷ mean, its profile peaking at 0.9).
BUSINESS_PLAN = """\
plan: business numbers
horizon_days: 30
catalogs: []
policy: {occupancy: 0.6, spares: 1, rollout_fraction: 0.25, tiers: [on-demand]}
models:
  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - {id: seed-cloud-80gb, accelerator: gpu-80gb, provider: seed, gpus_per_node: 2, price_per_gpu_hour: {on-demand: 2.50}}
workloads:
  - name: chat
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand: {users: 100000, active_share: 0.3, requests_per_active_user_per_day: 12, peak_hour_share: 0.11,
             monthly_growth: 0.05}
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
  - name: search
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 500, output: 100}
    demand:
      users: 50000
      active_share: 0.5
      requests_per_active_user_per_day: 4
      peak_to_mean: 2.4
      profile: [0.2, 0.2, 0.2, 0.2, 0.2, 0.3, 0.4, 0.6, 0.8, 0.9, 0.9, 0.9,
                0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.2]
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
"""


# --- solved results, once per session ---------------------------------------------------------

@pytest.fixture(scope="session")
def results(tmp_path_factory) -> dict:
    plan = tmp_path_factory.mktemp("inject") / "inject.yaml"
    plan.write_text(INJECTION_PLAN, encoding="utf-8")
    business = plan.with_name("business.yaml")
    business.write_text(BUSINESS_PLAN, encoding="utf-8")
    return {
        "seed-fleet": shipped.solved(ROOT / "plans" / "seed-fleet.yaml"),
        # q4 need not be optimal here: the workbook must agree with whatever fleet it shows
        "q4": shipped.solved(ROOT / "plans" / "q4.yaml"),
        "inject": solve_plan(plan),
        # contracts signed before the plan, one ending mid-quarter (periods), new reservations
        "commitments": shipped.solved(ROOT / "plans" / "q1-with-commitments.yaml"),
        "business": solve_plan(business),
    }


@pytest.fixture(scope="session")
def books(results, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("books")
    paths = {}
    for name, r in results.items():
        paths[name] = out / f"{name}.xlsx"
        excel.write_workbook(r, paths[name])
    return paths


def _name_cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


@pytest.fixture(scope="session")
def doubled(results, books, tmp_path_factory) -> dict:
    """q4's workbook with its largest on-demand spend's price doubled on Assumptions (saved by openpyxl)."""
    d = to_dict(results["q4"])
    od = [p for p in d["purchases"] if p["tier"] == "on-demand"] or \
        [p for p in to_dict(results["seed-fleet"])["purchases"] if p["tier"] == "on-demand"]
    src = "q4" if any(p["tier"] == "on-demand" for p in d["purchases"]) else "seed-fleet"
    p = max(od, key=lambda p: (p["cost"], p["offer"]))
    wb = openpyxl.load_workbook(books[src])
    name = "price_" + re.sub(r"[^a-z0-9]+", "_", p["offer"]) + "_on_demand"
    cell = _name_cell(wb, name)
    cell.value = cell.value * 2
    path = tmp_path_factory.mktemp("doubled") / f"{src}-doubled.xlsx"
    wb.save(path)
    return {"path": path, "source": src, "spend": p["cost"], "offer": p["offer"]}


@pytest.fixture(scope="session")
def lowered(books, tmp_path_factory) -> Path:
    """The seed's workbook with occupancy lowered from 0.6 to 0.4 on Assumptions (saved by openpyxl)."""
    wb = openpyxl.load_workbook(books["seed-fleet"])
    _name_cell(wb, "occupancy").value = 0.4
    path = tmp_path_factory.mktemp("lowered") / "seed-fleet-lowered.xlsx"
    wb.save(path)
    return path


@pytest.fixture(scope="session")
def lengthened(books, tmp_path_factory) -> Path:
    """q4's workbook with five more weekdays and a horizon five days longer on Assumptions (saved by openpyxl)."""
    wb = openpyxl.load_workbook(books["q4"])
    for name in ("days_weekday", "horizon_days"):
        _name_cell(wb, name).value += 5
    path = tmp_path_factory.mktemp("lengthened") / "q4-lengthened.xlsx"
    wb.save(path)
    return path


@pytest.fixture(scope="session")
def recalculated(books, doubled, lowered, lengthened, tmp_path_factory) -> dict[str, Path]:
    """Every workbook recalculated by LibreOffice in one call, with a profile that forces recalculation."""
    need("soffice", "libreoffice")
    base = tmp_path_factory.mktemp("lo")
    canary = base / "canary.xlsx"
    import xlsxwriter

    wb = xlsxwriter.Workbook(str(canary))
    wb.add_worksheet().write_formula(0, 0, "=1+1", None, 5)  # a wrong stored value LibreOffice must replace
    wb.close()
    produced = recalculate(base, [*books.values(), doubled["path"], lowered, lengthened, canary])
    assert openpyxl.load_workbook(produced["canary"], data_only=True).active["A1"].value == 2, \
        "LibreOffice kept the stored value: the recalculation profile is not in effect"
    return produced


# --- the workbook -------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["q4", "seed-fleet", "inject", "commitments", "business"])
def test_every_formula_recalculates_to_the_value_stored_with_it(name, books, recalculated, results):
    per_sheet = check_formulas(books[name], recalculated[name])
    for sheet in ("Summary", "Assumptions", "Workloads", "Purchases", "Supply", "Hourly"):
        assert per_sheet.get(sheet, 0) > 0, f"no formulas on {sheet}"
    assert sum(per_sheet.values()) > 50

    again = openpyxl.load_workbook(recalculated[name], data_only=True)
    cost = to_dict(results[name])["cost"]
    total = _name_cell(again, "total_cost").value
    assert math.isclose(total, cost["total"], rel_tol=1e-6), (total, cost["total"])
    for tier, defined in TIER_NAMES.items():
        v = _name_cell(again, defined).value
        assert math.isclose(v, cost["by_tier"][tier], rel_tol=1e-6, abs_tol=1e-6), (tier, v, cost["by_tier"][tier])
    # the Cash flow sheet's months add up to the all-in spend
    flow = _name_cell(again, "cash_flow_total").value
    assert math.isclose(flow, cost["all_in"], rel_tol=1e-6), (flow, cost["all_in"])


def test_business_numbers_are_inputs_and_the_peak_is_their_formula(books, recalculated, results):
    d = {w["name"]: w for w in to_dict(results["business"])["workloads"]}
    formulas = openpyxl.load_workbook(books["business"])
    again = openpyxl.load_workbook(recalculated["business"], data_only=True)
    users = _name_cell(formulas, "demand_chat_users")
    assert users.data_type == "n" and users.value == 100000
    assert _name_cell(formulas, "demand_search_peak_to_mean").value == 2.4
    ws, vals = formulas["Workloads"], again["Workloads"]
    head = {ws.cell(4, c).value: c for c in range(1, ws.max_column + 1)}
    for name, peak in (("chat", 100000 * 0.3 * 12 * 250 * 0.11 / 3600 * 1.05),
                       ("search", 50000 * 0.5 * 4 * 100 / 86400 * 2.4)):
        row = next(r for r in range(5, ws.max_row + 1) if ws.cell(r, 1).value == name)
        cell = ws.cell(row, head["Peak demand (output tok/s)"])
        assert cell.value.startswith(f"=demand_{name}_peak"), cell.value
        assert math.isclose(d[name]["peak"]["derived_from"]["output_tokens_per_s"], peak, rel_tol=1e-12)
        # the peak hour's demand: the derived peak × the profile at that hour (search peaks at 0.9)
        at_peak = peak * (0.9 if name == "search" else 1.0)
        assert math.isclose(vals.cell(row, cell.column).value, at_peak, rel_tol=1e-9)
        assert math.isclose(d[name]["peak"]["output_tokens_per_s"], at_peak, rel_tol=1e-9)
    chat = _name_cell(formulas, "demand_chat_peak").value
    assert chat.startswith("=demand_chat_users*demand_chat_active_share*") and "/3600*" in chat
    assert "(1+demand_chat_monthly_growth)^(horizon_days/30)" in chat
    assert "/86400*demand_search_peak_to_mean" in _name_cell(formulas, "demand_search_peak").value


def test_doubling_an_on_demand_price_raises_the_total_by_that_offers_on_demand_spend(doubled, recalculated):
    before = _name_cell(openpyxl.load_workbook(recalculated[doubled["source"]], data_only=True), "total_cost").value
    after = _name_cell(openpyxl.load_workbook(recalculated[doubled["path"].stem], data_only=True), "total_cost").value
    assert doubled["spend"] > 0
    assert math.isclose(after - before, doubled["spend"], rel_tol=1e-6), (doubled["offer"], before, after)


def test_a_sizing_input_the_fleet_no_longer_covers_is_flagged(recalculated):
    """Occupancy 0.6 → 0.4 on the seed: 11 base replicas become ⌈9000 ÷ (1400 × 0.4)⌉ = 17, so 17 + 1 + 5 = 23
    replicas = 46 GPUs are needed against the fleet's 30 — the Summary counts the workload as short."""
    before = openpyxl.load_workbook(recalculated["seed-fleet"], data_only=True)
    after = openpyxl.load_workbook(recalculated["seed-fleet-lowered"], data_only=True)
    assert _name_cell(before, "workloads_short").value == 0
    assert _name_cell(after, "workloads_short").value == 1
    ws = after["Workloads"]
    header = [c.value for c in ws[4]]
    row = [c.value for c in ws[5]]
    assert row[header.index("GPUs needed at its peak")] == 46
    assert row[header.index("GPUs in the fleet at its peak")] == 30


def test_doubling_a_price_moves_the_cash_flow_and_the_summary_together(doubled, recalculated):
    """The Cash flow sheet reads the same price cells: its total moves by the same amount as the Summary's,
    and stays equal to the all-in spend."""
    def names(path):
        wb = openpyxl.load_workbook(path, data_only=True)
        return {n: _name_cell(wb, n).value for n in ("total_cost", "committed_spend", "cash_flow_total")}
    before, after = names(recalculated[doubled["source"]]), names(recalculated[doubled["path"].stem])
    assert math.isclose(after["cash_flow_total"] - before["cash_flow_total"], doubled["spend"], rel_tol=1e-6)
    for v in (before, after):
        assert math.isclose(v["cash_flow_total"], v["total_cost"] + v["committed_spend"], rel_tol=1e-9)


def test_more_days_move_the_cash_flow_and_the_summary_together(recalculated, results):
    """Five more weekdays and a horizon five days longer: reserved GPUs are held longer and the hourly tiers
    run more weekdays — the Summary's total rises, and the Cash flow's months (each month's share of the
    offers' GPU-hours on Purchases) still add up to it (they had stayed put, $6,807 short)."""
    def names(path):
        wb = openpyxl.load_workbook(path, data_only=True)
        return {n: _name_cell(wb, n).value for n in ("total_cost", "committed_spend", "cash_flow_total")}
    before, after = names(recalculated["q4"]), names(recalculated["q4-lengthened"])
    assert after["total_cost"] > before["total_cost"] + 1000
    # the signed contracts run past the horizon's end: five more days of each in it (their days had been typed in)
    signed = sum(c["gpus"] * 24 * 5 * c["price_per_gpu_hour"] for c in to_dict(results["q4"])["commitments"])
    assert math.isclose(after["committed_spend"] - before["committed_spend"], signed, rel_tol=1e-9)
    for v in (before, after):
        assert math.isclose(v["cash_flow_total"], v["total_cost"] + v["committed_spend"], rel_tol=1e-9), v
    # the workloads that ran on those days pay for them (their tiers' GPU-hours are each day type's × its days):
    # what no workload used stays about its share of the new spend (it had taken the whole rise, 7.8% → 13.9%)
    idle = {}
    for k, path in (("before", recalculated["q4"]), ("after", recalculated["q4-lengthened"])):
        ws = openpyxl.load_workbook(path, data_only=True)["Workloads"]
        head = [c.value for c in ws[4]]
        col = head.index("Cost over the horizon (tiers it used + API)")
        row = next(r for r in ws.iter_rows(min_row=5, values_only=True) if r[0] == "Not used by any workload")
        idle[k] = row[col] / names(path)["total_cost"]
    assert abs(idle["after"] - idle["before"]) < 0.01, idle


def test_workbook_layout(books, results):
    wb = openpyxl.load_workbook(books["seed-fleet"])
    assert wb.sheetnames == list(excel.SHEETS)
    for name in ("total_cost", "cost_per_day", "horizon_days", "occupancy", "spares", "rollout_fraction",
                 "days_all", "price_seed_cloud_80gb_on_demand", *TIER_NAMES.values()):
        assert name in wb.defined_names, name
    inp = _name_cell(wb, "price_seed_cloud_80gb_on_demand")
    formula_cell = _name_cell(wb, "total_cost")
    assert inp.data_type == "n" and formula_cell.data_type == "f"
    assert inp.fill.fgColor.rgb != formula_cell.fill.fgColor.rgb or inp.font.color.rgb != formula_cell.font.color.rgb
    # the replica arithmetic is live and reads Assumptions
    ws = wb["Workloads"]
    row = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "chat-70b")
    cells = {ws.cell(4, c).value: ws.cell(row, c) for c in range(1, ws.max_column + 1)}
    assert cells["Base replicas"].value.startswith("=CEILING(") and "occupancy" in cells["Base replicas"].value
    assert cells["Rollout"].value.startswith("=CEILING(") and "rollout_fraction" in cells["Rollout"].value
    assert cells["Spares"].value == "=spares"
    stored = openpyxl.load_workbook(books["seed-fleet"], data_only=True)["Workloads"]
    assert [stored.cell(row, cells[k].column).value for k in ("Base replicas", "Spares", "Rollout", "Total replicas")] \
        == [11, 1, 3, 15]
    assert wb["Hourly"].freeze_panes and wb["Workloads"].freeze_panes and wb["Purchases"].freeze_panes
    assert wb["Summary"].print_area and wb["Purchases"].print_area
    with zipfile.ZipFile(books["q4"]) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) >= 1 + len(results["q4"].day_types)  # cost by tier + supply per day type
    note = " ".join(str(c.value) for row in wb["Summary"].iter_rows() for c in row if isinstance(c.value, str))
    assert "does not re-optimise" in note and "planopt solve" in note


def test_workbook_bytes_are_the_same_for_the_same_result(results, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # the time written on Assumptions and in the properties
    a, b = tmp_path / "a.xlsx", tmp_path / "b.xlsx"
    excel.write_workbook(results["seed-fleet"], a)
    excel.write_workbook(from_dict(json.loads(dumps(results["seed-fleet"]))), b)
    assert a.read_bytes() == b.read_bytes()


def test_commitments_sheet_totals_are_live_formulas(books, recalculated, results):
    """Signed contracts' committed spend and new reservations' full-term totals: formulas that
    recalculate to the JSON's numbers; the expiry calendar adds up what ends each quarter."""
    d = to_dict(results["commitments"])
    assert d["commitments"] and d["new_commitments"] and d["periods"]
    formulas = openpyxl.load_workbook(books["commitments"])
    again = openpyxl.load_workbook(recalculated["commitments"], data_only=True)
    assert _name_cell(formulas, "committed_spend").value.startswith("=SUM(")
    assert _name_cell(formulas, "new_commitments_total").value.startswith("=SUM(")
    assert math.isclose(_name_cell(again, "committed_spend").value, d["cost"]["committed"], rel_tol=1e-9)
    full_term = sum(n["total_committed"] for n in d["new_commitments"])
    assert math.isclose(_name_cell(again, "new_commitments_total").value, full_term, rel_tol=1e-9)
    ws, vals = formulas["Commitments"], again["Commitments"]
    rows = {ws.cell(r, 1).value: r for r in range(1, ws.max_row + 1)}
    section = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "New reservations over their full term")
    for n in d["new_commitments"]:
        r = next(r for r in range(section, ws.max_row + 1)
                 if ws.cell(r, 1).value == n["offer"] and ws.cell(r, 2).value == n["tier"])
        assert ws.cell(r, 10).value == f"=C{r}*D{r}*24*E{r}"  # total committed = GPUs × price × 24 × term
        assert math.isclose(vals.cell(r, 10).value, n["total_committed"], rel_tol=1e-9)
        assert math.isclose(vals.cell(r, 11).value, n["monthly"], rel_tol=1e-9)
    quarters = [e["quarter"] for e in d["expiry"]]
    assert quarters and all(q in rows for q in quarters)
    ending = sum(vals.cell(rows[q], 4).value + vals.cell(rows[q], 5).value for q in quarters)
    assert ending == sum(c["gpus"] for c in d["commitments"]) + sum(n["gpus"] for n in d["new_commitments"])


def test_plan_text_stays_text_in_the_workbook(books, recalculated):
    wb = openpyxl.load_workbook(books["inject"])
    found = {HYPERLINK: 0, SCRIPT: 0}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.value in found:
                    assert c.data_type == "s", f"{ws.title}!{c.coordinate} is {c.data_type}"
                    found[c.value] += 1
                    if c.value == HYPERLINK:
                        assert c.quotePrefix, f"{ws.title}!{c.coordinate} has no quote prefix"
                if c.data_type == "f":
                    assert "HYPERLINK" not in c.value and "script" not in c.value.lower(), c.value
    assert all(found.values()), found
    again = openpyxl.load_workbook(recalculated["inject"])
    names = [c.value for ws in again.worksheets for row in ws.iter_rows() for c in row]
    assert HYPERLINK in names and SCRIPT in names and "y" not in names


# --- the HTML report ----------------------------------------------------------------------------

class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.refs: list[str] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_style = tag == "style"
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "action", "poster", "data", "srcset", "background") and v:
                self.refs.append(v)
            if k == "style" and v:
                self.styles.append(v)

    def handle_endtag(self, tag):
        self._in_style = False if tag == "style" else self._in_style

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)


def _scan(text: str) -> _Scan:
    s = _Scan()
    s.feed(text)
    return s


@pytest.fixture(scope="session")
def pages(results) -> dict[str, str]:
    return {name: html.render_html(r) for name, r in results.items()}


@pytest.mark.parametrize("name", ["q4", "seed-fleet", "inject", "commitments"])
def test_html_is_self_contained_with_inline_svg(name, pages):
    page = pages[name]
    s = _scan(page)
    assert "svg" in s.tags and page.count("<svg") >= 2
    for tag in ("script", "link", "img", "iframe", "object", "embed", "base", "audio", "video", "source"):
        assert tag not in s.tags, f"<{tag}> in the report"
    external = [r for r in s.refs if not r.startswith("#")]
    assert not external, external
    css = " ".join(s.styles)
    assert "@import" not in css and not re.search(r"url\(\s*['\"]?(?!#)", css), "CSS loads something"
    assert "@font-face" not in css


def test_plan_text_is_plain_text_in_the_html(pages):
    page = pages["inject"]
    s = _scan(page)
    assert s.tags.count("script") == 0
    text = "".join(s.text)
    assert SCRIPT in text and HYPERLINK in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_html_bytes_are_the_same_for_the_same_result(results, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # the time in the footer
    again = html.render_html(from_dict(json.loads(dumps(results["q4"]))))
    assert again == html.render_html(results["q4"])


def test_html_renders_in_chromium_and_is_not_blank(pages, tmp_path):
    chromium = need("chromium", "chromium-browser", "google-chrome")
    from PIL import Image

    page = tmp_path / "q4.html"
    page.write_text(pages["q4"], encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                    "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=360)
    assert shot.exists(), "Chromium wrote no screenshot"
    im = Image.open(shot).convert("RGB")
    assert im.size == (1280, 2400)
    colors = im.resize((320, 600)).getcolors(320 * 600)
    ink = sum(n for n, rgb in colors if sum(rgb) < 720) / (320 * 600)
    assert ink > 0.05, f"only {ink:.1%} of the page is not white"
    assert len(colors) > 50, "the page is nearly one colour"


# --- writing: together, atomically; `planopt report` -------------------------------------------

def test_a_failure_midway_leaves_no_partial_file(results, tmp_path, monkeypatch):
    r = results["seed-fleet"]

    def boom(*_a, **_k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("optimizer.report.xlsx.workbook.write_workloads", boom)
    with pytest.raises(RuntimeError):
        files.write_reports(r, tmp_path / "out", "seed", dumps(r))
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    monkeypatch.undo()

    paths = files.write_reports(r, tmp_path / "out", "seed", dumps(r))
    before = {p.name: p.read_bytes() for p in paths}
    monkeypatch.setattr("optimizer.report.html.render_html", boom)
    with pytest.raises(RuntimeError):
        files.write_reports(r, tmp_path / "out", "seed", dumps(r))
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


@pytest.mark.e2e
def test_report_command_rerenders_the_same_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # the files' time: 2026-01-01
    runner = CliRunner()
    res = runner.invoke(app, ["solve", str(ROOT / "plans" / "seed-fleet.yaml"), "-o", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["seed-fleet.html", "seed-fleet.json", "seed-fleet.xlsx"]
    res = runner.invoke(app, ["report", str(tmp_path / "a" / "seed-fleet.json"), "-o", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    for ext in ("xlsx", "html"):
        assert (tmp_path / "a" / f"seed-fleet.{ext}").read_bytes() == (tmp_path / "b" / f"seed-fleet.{ext}").read_bytes()
    assert not (tmp_path / "b" / "seed-fleet.json").exists()


@pytest.mark.parametrize("content, message", [
    (None, "result file not found"),
    ("{not json", "not JSON"),
    ('{"hello": 1}', "not a planopt result"),
    ('{"plan": "x", "workloads": [], "format": 99}', "newer"),
])
def test_report_command_refuses_what_is_not_a_result(tmp_path, content, message):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    res = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "out").exists()
