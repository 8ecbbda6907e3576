"""The workbook's formulas hold names and cells, not numbers the solve made: a workload's GPU-hours are its GPU-hours
a day (beside the table) × the days on Assumptions, a Cash flow month's share is its own cell, the plan's first day
is a date named start_date; the Decision says it is as of the solve. Recalculated in LibreOffice, every formula
gives the value stored with it, and with more days on Assumptions the Cash flow still adds up to all-in."""

from __future__ import annotations

import math
import re

import openpyxl
import pytest

from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report.xlsx import workbook as excel

from tests.helpers.office import check_formulas, need, recalculate
from tests.helpers.sweep_plans import write_plan

API = "{usd_per_m_input: 0.005, usd_per_m_output: 0.025, max_share: 1.0}"
COMMITTED = """start_date: 2026-10-01
commitments:
  - {offer: test-h100, tier: reserved-1y, gpus: 4, start: 2026-01-01, end: 2026-10-20}
"""
ALLOWED = {"0.000001", "1000000"}  # the day types adding up to the horizon (a tolerance); per million tokens (a unit)
SOLVE_MADE = re.compile(r"(?<![A-Za-z$_\d.])(\d+\.\d+|\d{5,})(?![\d])")
"""A decimal, or a whole number of five digits or more (a date serial), in a formula: a number the solve made."""


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    d = tmp_path_factory.mktemp("named")
    path = write_plan(d / "plan.yaml", api=API)
    path.write_text(COMMITTED + path.read_text(encoding="utf-8"), encoding="utf-8")
    result = solve_plan(path, SolveOptions(alternatives=0))
    out = d / "plan.xlsx"
    excel.write_workbook(result, out)
    return d, out, result


def _name_cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


def test_no_formula_holds_a_number_the_solve_made(book):
    _d, path, result = book
    wb = openpyxl.load_workbook(path)
    found = [(ws.title, c.coordinate, c.value) for ws in wb.worksheets for row in ws.iter_rows() for c in row
             if isinstance(c.value, str) and c.value.startswith("=")
             and set(SOLVE_MADE.findall(c.value)) - ALLOWED]
    assert found == []
    workloads = wb["Workloads"]
    gh = [c.value for row in workloads.iter_rows() for c in row
          if isinstance(c.value, str) and c.value.startswith("=") and "days_" in c.value]
    assert gh and all(re.fullmatch(r"=[A-Z]+\d+\*days_\w+(\+[A-Z]+\d+\*days_\w+)*", f) for f in gh), gh
    first = _name_cell(wb, "start_date")
    assert first.is_date and first.value.date().isoformat() == result.start_date
    assert any("start_date" in str(c.value) for row in wb["Commitments"].iter_rows() for c in row)
    summary = wb["Summary"]
    row = next(r for r in range(1, summary.max_row + 1) if summary.cell(r, 1).value == "Decision")
    assert summary.cell(row, 2).value.startswith("As of the solve")


@pytest.mark.slow
def test_it_recalculates_and_more_days_keep_the_cash_flow_at_all_in(book):
    need("soffice", "libreoffice")
    d, path, result = book
    wb = openpyxl.load_workbook(path)
    for name in [n for n in wb.defined_names if n.startswith("days_")] + ["horizon_days"]:
        _name_cell(wb, name).value += 5
    longer = d / "plan-longer.xlsx"
    wb.save(longer)
    produced = recalculate(d / "lo", [path, longer])
    assert sum(check_formulas(path, produced["plan"]).values()) > 20
    for stem in ("plan", "plan-longer"):
        again = openpyxl.load_workbook(produced[stem], data_only=True)
        v = {n: _name_cell(again, n).value for n in ("total_cost", "committed_spend", "cash_flow_total")}
        assert math.isclose(v["cash_flow_total"], v["total_cost"] + v["committed_spend"], rel_tol=1e-9), (stem, v)
    again = openpyxl.load_workbook(produced["plan"], data_only=True)
    assert _name_cell(again, "total_cost").value == pytest.approx(result.cost_total, abs=0.005)
    longer_v = openpyxl.load_workbook(produced["plan-longer"], data_only=True)
    assert _name_cell(longer_v, "total_cost").value > result.cost_total  # five more days cost more
