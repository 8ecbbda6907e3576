"""The commitment schedule holds a spend commitment as $/hour, not as GPUs: its JSON rows carry usd_per_hour
(gpus and price_per_gpu_hour 0, amount = $/hour × 24 × days), read back the same; on the workbook's Cash flow
sheet its rows show no GPUs, the $/hour as a reference to the Spend commitments sheet, and an amount LibreOffice
recalculates (tests/optimize/test_savings_plans.py's plan: a new commitment beside a signed one)."""

from __future__ import annotations

import openpyxl
import pytest

from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import dumps, read_result
from tests.helpers.office import check_formulas, recalculate
from tests.optimize.test_savings_plans import _both


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    return _both(tmp_path_factory.mktemp("sp-schedule"))


def test_the_json_rows_carry_the_dollars_an_hour(solved, tmp_path):
    r = solved
    rows = [s for s in r.commitment_schedule if s.tier == "savings_plan"]
    rates = {n.usd_per_hour for n in r.new_spend_commitments} | {c.usd_per_hour for c in r.spend_commitments}
    assert rows and all(s.usd_per_hour in rates for s in rows)
    assert all(s.gpus == 0 and s.price_per_gpu_hour == 0 for s in rows)
    assert all(s.amount == pytest.approx(s.usd_per_hour * 24 * s.days, rel=1e-12) for s in rows)
    assert all(s.usd_per_hour is None for s in r.commitment_schedule if s.tier != "savings_plan")
    path = tmp_path / "r.json"
    path.write_text(dumps(r), encoding="utf-8")
    back = [s for s in read_result(path).commitment_schedule if s.tier == "savings_plan"]
    assert [(s.month, s.usd_per_hour) for s in back] == [(s.month, round(s.usd_per_hour, 6)) for s in rows]


def test_the_workbook_schedule_shows_dollars_an_hour_and_recalculates(solved, tmp_path):
    r = solved
    book = tmp_path / "sp.xlsx"
    excel.write_workbook(r, book)
    ws = openpyxl.load_workbook(book)["Cash flow"]
    values = openpyxl.load_workbook(book, data_only=True)["Cash flow"]
    head = next(row for row in ws.iter_rows() if row[0].value == "Month" and row[5].value == "GPUs")
    assert "per hour" in head[7].value
    spend = [row for row in ws.iter_rows(min_row=head[0].row + 1) if row[3].value == "savings_plan"]
    want = [s for s in r.commitment_schedule if s.tier == "savings_plan"]
    assert len(spend) == len(want)
    for row, s in zip(spend, want):
        assert row[5].value == "–"
        assert str(row[7].value).startswith("='Spend commitments'!")
        assert values.cell(row[7].row, 8).value == pytest.approx(s.usd_per_hour, rel=1e-12)
        assert values.cell(row[8].row, 9).value == pytest.approx(s.amount, rel=1e-9)
    again = recalculate(tmp_path, [book])
    assert check_formulas(book, again["sp"], sheets=("Cash flow", "Spend commitments"))["Cash flow"] > len(spend)
