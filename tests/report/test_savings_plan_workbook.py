"""Spend commitments in the workbook: its totals tie to the result and LibreOffice recalculates every formula
(tests/optimize/test_savings_plans.py's plan: a new commitment beside a signed one ending mid-quarter)."""

from __future__ import annotations

import pytest

from tests.optimize.test_savings_plans import _both


def test_the_workbook_ties_to_the_result_and_recalculates(tmp_path):
    """Summary's total and all-in, the committed spend and the Cash flow total are the result's; every formula
    (the Spend commitments sheet's among them) recalculates in LibreOffice to its stored value."""
    import openpyxl

    from optimizer.report.xlsx import workbook as excel
    from tests.helpers.office import check_formulas, recalculate

    r = _both(tmp_path)
    book = tmp_path / "spend.xlsx"
    excel.write_workbook(r, book)
    wb = openpyxl.load_workbook(book, data_only=True)

    def named(name: str) -> float:
        sheet, coord = next(iter(wb.defined_names[name].destinations))
        return wb[sheet][coord.replace("$", "")].value

    assert named("total_cost") == pytest.approx(r.cost_total, rel=1e-9)
    assert named("committed_spend") == pytest.approx(r.cost_committed, rel=1e-9)
    assert named("all_in_cost") == pytest.approx(r.cost_all_in, rel=1e-9)
    assert named("cash_flow_total") == pytest.approx(r.cost_all_in, rel=1e-9)
    assert "Spend commitments" in wb.sheetnames
    again = recalculate(tmp_path, [book])
    checked = check_formulas(book, again["spend"])
    assert checked["Spend commitments"] >= 10
