"""The owned-cluster workbook: payback, NPV and the book view are live formulas, recalculated in LibreOffice.

plans/owned-cluster.yaml is solved and its workbook written; a copy has the B200 server's price raised by a
third (openpyxl), and both are recalculated by LibreOffice. Every formula on Own hardware and Summary
recalculates to the value stored with it; with the dearer server `payback_months` rises by exactly the third
(the monthly saving does not depend on the price), the NPV falls, Summary's Decision says the new months, and
the book view stays all-in + owned depreciation − cost of capital. LibreOffice skips these tests when missing
(in CI it must be there), like test_own_workbook.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import openpyxl
import pytest
from rich.console import Console

from optimizer import formatting
from optimizer.report import console, html
from optimizer.report import labels as L
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import to_dict

from tests.helpers import shipped
from tests.helpers.office import check_formulas, need, recalculate
from tests.helpers.paths import PLANS

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

DEARER = 4.0 / 3.0


def _cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("own-payback")
    result = shipped.solved(PLANS / "owned-cluster.yaml")
    book = base / "owned-cluster.xlsx"
    excel.write_workbook(result, book)
    return {"result": result, "json": to_dict(result), "book": book, "dir": base}


def _price_name(d: dict) -> str:
    bought = d["own"]["bought"]
    assert bought, "the plan buys servers"
    return f"own_{bought[0]['offer'].replace('-', '_')}_price_per_unit"


@pytest.fixture(scope="module")
def recalculated(solved) -> dict[str, Path]:
    need("soffice", "libreoffice")
    dearer = solved["dir"] / "owned-cluster-dearer.xlsx"
    wb = openpyxl.load_workbook(solved["book"])
    price = _cell(wb, _price_name(solved["json"]))
    price.value = price.value * DEARER
    wb.save(dearer)
    return recalculate(solved["dir"], [solved["book"], dearer])


def test_payback_npv_and_book_are_formulas_with_names(solved):
    wb = openpyxl.load_workbook(solved["book"])
    for name in ("payback_months", "npv_per_unit", "book_cost", "all_in_cost", "own_depreciation_owned",
                 "own_cost_of_capital", "own_depreciation_bought"):
        assert name in wb.defined_names, name
    for name in ("payback_months", "npv_per_unit", "book_cost"):
        assert _cell(wb, name).data_type == "f", name
    b = solved["json"]["own"]["bought"][0]
    stored = openpyxl.load_workbook(solved["book"], data_only=True)
    assert _cell(stored, "payback_months").value == pytest.approx(b["payback_months"], rel=1e-5)
    assert _cell(stored, "npv_per_unit").value == pytest.approx(b["npv_per_unit"], rel=1e-5)
    assert _cell(stored, "book_cost").value == pytest.approx(solved["json"]["book"]["total"], rel=1e-9)
    # Summary's payback sentence reads the live cell instead of holding a typed number
    summary = wb["Summary"]
    live = [c for row in summary.iter_rows() for c in row
            if c.data_type == "f" and "payback_months" in str(c.value)]
    assert live, "Summary's Decision reads payback_months"


def test_days_in_service_are_locked_not_inputs(solved):
    """Days in service are the solve's (a later delivery adds rental and moves the capex: only a solve prices
    that), so they are grey values, not blue inputs, and the sheet says how to model a delay."""
    wb = openpyxl.load_workbook(solved["book"])
    for x in solved["json"]["own"]["inputs"]:
        c = _cell(wb, f"own_{x['offer'].replace('-', '_')}_service_days")
        assert c.data_type == "n" and c.value == pytest.approx(x["service_days"])
        assert c.fill.fgColor.rgb != "FFFFF2CC", "not an input cell"
    texts = [c.value for row in wb["Own hardware"].iter_rows() for c in row if isinstance(c.value, str)]
    assert any("lead_time_days" in t and "solve again" in t for t in texts)


@pytest.mark.slow
def test_a_dearer_server_raises_payback_in_libreoffice(solved, recalculated):
    d = solved["json"]
    assert sum(check_formulas(solved["book"], recalculated["owned-cluster"], ("Own hardware", "Summary")).values()) > 60
    before = openpyxl.load_workbook(recalculated["owned-cluster"], data_only=True)
    after = openpyxl.load_workbook(recalculated["owned-cluster-dearer"], data_only=True)
    p0, p1 = _cell(before, "payback_months").value, _cell(after, "payback_months").value
    assert p1 > p0
    assert p1 == pytest.approx(p0 * DEARER, rel=1e-9)  # price ÷ a saving the price does not change
    assert _cell(after, "npv_per_unit").value < _cell(before, "npv_per_unit").value
    # the Decision on Summary follows
    months = f"paid back in {p1:.0f} months against {d['own']['bought'][0]['alternative']}"
    assert any(isinstance(c, str) and months in c for row in after["Summary"].iter_rows(values_only=True)
               for c in row), months
    # the book view, before and after: all-in + owned depreciation − cost of capital
    for wb in (before, after):
        v = {n: _cell(wb, n).value for n in ("book_cost", "all_in_cost", "own_depreciation_owned",
                                              "own_cost_of_capital", "own_depreciation_bought", "book_opex")}
        assert v["book_cost"] == pytest.approx(v["all_in_cost"] + v["own_depreciation_owned"]
                                               - v["own_cost_of_capital"], rel=1e-12)
        assert v["book_cost"] == pytest.approx(v["own_depreciation_owned"] + v["own_depreciation_bought"]
                                               + v["book_opex"], rel=1e-12)
    assert _cell(before, "book_cost").value == pytest.approx(d["book"]["total"], rel=1e-9)
    assert _cell(after, "own_cost_of_capital").value == pytest.approx(d["book"]["cost_of_capital"] * DEARER,
                                                                      rel=1e-9)


def test_summary_console_and_html_tell_one_story_of_what_binds(solved, tmp_path):
    """Facility power binds (one more MW saves $251) with the racks full: Summary's "What binds", the Decision,
    the console and the HTML all say so, and none says that no limit is reached."""
    result = solved["result"]
    f = result.own.facility
    case = dataclasses.replace(result, own=dataclasses.replace(result.own, facility=dataclasses.replace(
        f, binding=["power_kw"], marginal={"power_kw_plus_1000": 251.0, "racks_plus_1": 0.0}, racks=f.racks_used)))
    money = lambda v, nd=0: formatting.money(v, result.currency, nd)  # noqa: E731
    lines = L.what_binds(case, money)
    power = next(x for x in lines if x.startswith("facility power"))
    racks = next(x for x in lines if x.startswith("facility racks"))
    assert "one more MW would save $251" in power and "does not bind" in racks

    path = tmp_path / "case.xlsx"
    excel.write_workbook(case, path)
    ws = openpyxl.load_workbook(path, data_only=True)["Summary"]
    texts = [str(c) for row in ws.iter_rows(values_only=True) for c in row if c is not None]
    assert not any("No cap" in t or L.NOTHING_BINDS in t.lower() for t in texts)
    assert power.partition(": ")[2] in texts and racks.partition(": ")[2] in texts
    assert any(power in t for t in texts)  # the Decision's Binds line

    out = Console(width=400, record=True, file=io.StringIO())
    out.print(console.render_result(case))
    text = out.export_text()
    assert power in text and racks in text and L.NOTHING_BINDS not in text

    page = html.render_html(case)
    assert L.NOTHING_BINDS not in page and "one more MW would save $251" in page
