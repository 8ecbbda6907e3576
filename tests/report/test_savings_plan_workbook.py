"""Spend commitments in the workbook: its totals tie to the result and LibreOffice recalculates every formula
(tests/optimize/test_savings_plans.py's plans: a new commitment beside a signed one ending mid-quarter, and a
renewal of a signed one from the day after it ends)."""

from __future__ import annotations

import openpyxl
import pytest

from optimizer.report.xlsx import workbook as excel
from tests.helpers.commitments import OD
from tests.helpers.office import check_formulas, recalculate
from tests.optimize.test_savings_plans import DIURNAL, PROVIDER, _both, _plan, _solve


def _renewal(tmp_path):
    u = 0.7 * 8 * OD
    signed = [{"provider": PROVIDER, "usd_per_hour": u, "term": "1y", "discount": 0.3, "start": "2025-11-15",
               "end": "2026-11-14"}]
    data = _plan(16, DIURNAL, signed=signed)
    data["policy"]["reservation_starts"] = "expiries"
    return _solve(tmp_path, data)


def test_the_workbook_ties_to_the_result_and_recalculates(tmp_path):
    """Summary's total and all-in, the committed spend and the Cash flow total are the result's; every formula
    (the Spend commitments sheet's among them) recalculates in LibreOffice to its stored value."""
    books = {}
    for name, solve in (("both", _both), ("renewal", _renewal)):
        (tmp_path / name).mkdir()
        r = solve(tmp_path / name)
        book = tmp_path / f"{name}.xlsx"
        excel.write_workbook(r, book)
        books[name] = (r, book)
        wb = openpyxl.load_workbook(book, data_only=True)

        def named(key: str) -> float:
            sheet, coord = next(iter(wb.defined_names[key].destinations))
            return wb[sheet][coord.replace("$", "")].value

        assert named("total_cost") == pytest.approx(r.cost_total, rel=1e-9)
        assert named("committed_spend") == pytest.approx(r.cost_committed, rel=1e-9)
        assert named("all_in_cost") == pytest.approx(r.cost_all_in, rel=1e-9)
        assert named("cash_flow_total") == pytest.approx(r.cost_all_in, rel=1e-9)
        assert "Spend commitments" in wb.sheetnames
    assert books["renewal"][0].new_spend_commitments[0].start == "2026-11-15"
    again = recalculate(tmp_path, [book for _r, book in books.values()])
    for name, (_r, book) in books.items():
        checked = check_formulas(book, again[name], label=name)
        assert checked["Spend commitments"] >= 10


def test_the_workbook_s_tiers_are_the_result_s(tmp_path):
    """Summary's on-demand and spend-commitment tiers hold the result's cost.by_tier (the covered use at its
    discounted price on demand, the rest of the commitment apart)."""
    r = _both(tmp_path)
    book = tmp_path / "both.xlsx"
    excel.write_workbook(r, book)
    wb = openpyxl.load_workbook(book, data_only=True)
    for tier in ("on_demand", "savings_plan"):
        sheet, coord = next(iter(wb.defined_names[f"cost_{tier}"].destinations))
        assert wb[sheet][coord.replace("$", "")].value == pytest.approx(r.cost_by_tier[tier], rel=1e-9), tier
