"""The workbook's Showback sheet and the HTML report's showback (issue 46): they follow policy.idle (spread: each
line carries its share of what no workload used, no line of its own) and policy.showback (book: owned servers'
depreciation on the workloads that ran on them, cost of capital out), their totals tie to the result JSON's
showback rows to the cent, and the chargeback (cost centre × month × tier) is in both, its sums live.

Three results: a plan with teams, cost centres and a tenant that names another team, idle spread; the same with
idle separate; plans/owned-cluster.yaml with policy.showback: book and idle spread. The first and the last
workbook, and a copy of the first with a price raised (edited with openpyxl), are recalculated in LibreOffice in
one call: every formula of the sheet recalculates to its stored value, and after the edit the Showback total is
still the all-in Summary computes. LibreOffice skips these tests when missing (in CI it must be there)."""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pytest
from ruamel.yaml import YAML

from optimizer.pipeline import solve_plan
from optimizer.report.chargeback import centre_months
from optimizer.report.html import render_html
from optimizer.report.xlsx import workbook as excel
from optimizer.results import showback as sb
from optimizer.results.jsonio import dumps, read_result
from optimizer.results.own import book_view

from tests.helpers.office import check_formulas, recalculate
from tests.helpers.paths import PLANS
from tests.helpers.small_plans import interactive, offer, plan, write

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

CENT = 0.01


def _teams(tmp_path: Path, idle: str) -> Path:
    chat = interactive("chat", 500, team="consumer", cost_center="CC-100", tenants={"consumer": 0.7, "support": 0.3})
    bot = interactive("support-bot", 200, team="support", cost_center="CC-300")
    solo = interactive("batchy", 150, profile=[1.0] * 12 + [0.2] * 12)  # no team: "unassigned"
    data = plan([chat, bot, solo], [offer("o", "gpu-a", m=8, on_demand=2.0, reserved_1y=1.2)],
                tiers=["reserved-1y", "on-demand"], idle=idle)
    data["horizon_days"] = 40
    data["start_date"] = "2027-01-20"
    return write(tmp_path, data, f"teams-{idle}.yaml")


def _owned_book(tmp_path: Path) -> Path:
    y = YAML()
    data = y.load((PLANS / "owned-cluster.yaml").read_text(encoding="utf-8"))
    data["policy"]["showback"] = "book"
    data["policy"]["idle"] = "spread"
    path = tmp_path / "owned-book.yaml"
    with path.open("w", encoding="utf-8") as f:
        y.dump(data, f)
    return path


def _name_cell(wb, name: str):
    sheet, coord = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][coord.replace("$", "")]


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    d = tmp_path_factory.mktemp("showback-wb")
    out = {}
    for key, path in (("spread", _teams(d, "spread")), ("separate", _teams(d, "separate")),
                      ("book", _owned_book(d))):
        (d / f"{key}.json").write_text(dumps(solve_plan(path)), encoding="utf-8")
        result = read_result(d / f"{key}.json")
        excel.write_workbook(result, d / f"{key}.xlsx")
        out[key] = (result, d / f"{key}.xlsx")
    # the edit: the on-demand price raised by a third, on a copy
    edits = {}
    for key, name in (("spread", "price_o_on_demand"),):
        wb = openpyxl.load_workbook(out[key][1])
        c = _name_cell(wb, name)
        c.value = c.value * 4 / 3
        edits[key] = d / f"{key}-edited.xlsx"
        wb.save(edits[key])
    # idle separate: its stored values are checked (the formulas are the spread workbook's, less its columns)
    again = recalculate(d, [out["spread"][1], out["book"][1]] + list(edits.values()))
    again["separate"] = out["separate"][1]
    return out, again, edits


def _sheet_values(path: Path):
    return openpyxl.load_workbook(path, data_only=True)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["spread", "separate", "book"])
def test_every_showback_formula_recalculates_and_the_total_ties_to_the_json(books, key):
    out, again, _ = books
    result, path = out[key]
    if key != "separate":
        assert check_formulas(path, again[path.stem], sheets=("Showback",))["Showback"] > 20
    wb = _sheet_values(again[path.stem])
    want = book_view(result).total if key == "book" else result.cost_all_in
    assert sum(x.cost + x.committed_cost for x in result.showback) == pytest.approx(want, abs=CENT)
    assert _name_cell(wb, "showback_total").value == pytest.approx(want, abs=CENT)
    if key == "book":
        assert book_view(result).total == pytest.approx(result.cost_all_in + book_view(result).depreciation_owned
                                                        - book_view(result).cost_of_capital, abs=CENT)
        assert _name_cell(wb, "book_cost").value == pytest.approx(want, abs=CENT)
    else:
        assert _name_cell(wb, "all_in_cost").value == pytest.approx(want, abs=CENT)
    ws = wb["Showback"]
    rows = [[c.value for c in row] for row in ws.iter_rows()]
    # "By team and cost centre": each (team, cost centre) ties to the JSON's rows to the cent
    at = next(i for i, r in enumerate(rows) if r[0] == "By team and cost centre") + 1
    head = rows[at]
    last = head.index("Book view (its part)" if key == "book" else "All-in")
    json_by: dict[tuple[str, str], float] = {}
    for x in result.showback:
        k = (x.team, x.cost_center or "–")
        json_by[k] = json_by.get(k, 0.0) + x.cost + x.committed_cost
    seen = {}
    for r in rows[at + 1:]:
        if not r[0] or r[0].startswith("Chargeback"):
            break
        seen[(r[0], r[1])] = r[last]
    for k, v in json_by.items():
        assert seen[k] == pytest.approx(v, abs=CENT), k
    for k, v in seen.items():
        assert abs(v) < CENT or k in json_by, k
    # the chargeback matrix: its Total row is the JSON's, month by month
    at = next(i for i, r in enumerate(rows) if r[0] == "Chargeback: cost centre × month")
    at = next(i for i in range(at, len(rows)) if rows[i][0] == "Cost centre")
    months = [m for m in rows[at][2:] if m and re.fullmatch(r"\d{4}-\d{2}|M\d+", str(m))]
    assert months == centre_months(result)["months"]
    total = next(r for r in rows[at:] if r[0] == "Total")
    table = centre_months(result)
    for j, m in enumerate(months):
        assert total[2 + j] == pytest.approx(table["totals"][m], abs=CENT)
    assert total[2 + len(months)] == pytest.approx(want, abs=CENT)


@pytest.mark.slow
def test_spread_has_no_idle_line_and_a_tenant_books_to_its_teams_cost_centre(books):
    out, again, _ = books
    result, path = out["spread"]
    sep, _p = out["separate"]
    assert result.cost_idle > 1  # 8-GPU nodes and a night-time dip leave GPU-hours no workload used
    ws = _sheet_values(again[path.stem])["Showback"]
    rows = [[c.value for c in row] for row in ws.iter_rows()]
    head = next(r for r in rows if r[0] == "Team")
    idle_line = next(r for r in rows if r[0] == sb.IDLE)
    assert abs(idle_line[head.index("All-in")]) < CENT  # all of it spread
    carried = head.index("Spend no workload used that it carries")
    lines = [r for r in rows[rows.index(head) + 1:rows.index(idle_line)]]
    assert sum(r[carried] for r in lines) == pytest.approx(result.cost_idle + result.cost_idle_committed, abs=CENT)
    assert ("support", "CC-100") not in {(r[0], r[1]) for r in lines}
    assert ("support", "CC-300") in {(r[0], r[1]) for r in lines}
    # separate: the idle line carries it, no line does
    ws = _sheet_values(again[out["separate"][1].stem])["Showback"]
    rows = [[c.value for c in row] for row in ws.iter_rows()]
    head = next(r for r in rows if r[0] == "Team")
    assert "Spend no workload used that it carries" not in head
    assert next(r for r in rows if r[0] == sb.IDLE)[head.index("All-in")] == pytest.approx(
        sep.cost_idle + sep.cost_idle_committed, abs=CENT)


@pytest.mark.slow
def test_after_a_price_edit_the_showback_is_still_the_all_in(books):
    """The on-demand price raised by a third moves the Showback total with Summary's all-in, the idle it spreads
    with it."""
    out, again, edits = books
    before = _sheet_values(again[out["spread"][1].stem])
    after = _sheet_values(again[edits["spread"].stem])
    assert _name_cell(after, "all_in_cost").value > _name_cell(before, "all_in_cost").value + 1
    assert _name_cell(after, "showback_total").value == pytest.approx(_name_cell(after, "all_in_cost").value,
                                                                      abs=CENT)


def test_the_html_showback_follows_the_rows(books, tmp_path):
    """Rows per workload without teams; the chargeback table's total is the JSON's; spread: no idle row; book:
    the rows' total is the book view."""
    from optimizer import formatting
    from optimizer.report import html

    out, _a, _e = books
    teams, _p = out["spread"]
    page = render_html(teams)
    section = page[page.index('id="showback"'):page.index('id="risk"')]
    assert "CC-300" in section and sb.IDLE not in section and 'id="chargeback"' in section
    total = re.search(r'<td class="l"><b>Total</b></td>.*?</tr>', section, re.S).group(0)
    money = re.findall(r"\$([\d,]+)", total)
    assert float(money[-1].replace(",", "")) == pytest.approx(teams.cost_all_in, abs=1)
    a, b = interactive("alpha", 500), interactive("beta", 200)
    plain = solve_plan(write(tmp_path, plan([a, b], [offer("o", "gpu-a", m=8, on_demand=2.0)], tiers=["on-demand"])))
    page = render_html(plain)
    section = page[page.index('id="showback"'):page.index('id="risk"')]
    per_row = re.findall(r'<tr><td class="l">unassigned</td><td class="l">–</td><td class="l">([^<]+)</td>', section)
    assert sorted(per_row) == ["alpha", "beta"]  # a row per workload, not one "unassigned" row
    result, _p = out["book"]
    view = html._showback(result, lambda v, nd=0: formatting.money(v, result.currency, nd))
    assert view["book"] and view["total_label"] == "Book view"
    assert not any(r["team"] == sb.IDLE for r in view["rows"])
    assert sum(x["all_in"] for x in result.showback_by_team()) == pytest.approx(book_view(result).total, abs=CENT)
