"""Showback of a signed spend commitment: the part its covered on-demand use took is charged to the workloads
whose use it covered, by their covered spend, as committed spend; only the rest is idle committed spend; the
rows add up to the all-in to the cent (and read back through the result file's own check), idle separate or
spread.

The quarter of tests/helpers/commitments.py (2026-10-01 + 92 days, 1-GPU nodes here, 100 tok/s per GPU): two
flat workloads on demand on one offer, 16 and 8 GPUs every hour, and a commitment signed until 2026-11-14 (45
days of the quarter)."""

from __future__ import annotations

import pytest

from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.jsonio import dumps, read_result
from optimizer.results.showback import IDLE, signed_spend_used
from tests.helpers.commitments import H100, OD, chat, quarter
from tests.helpers.small_plans import interactive, offer, write
from tests.helpers.solving import NO_TIME_LIMIT

PROVIDER = f"prov-{H100}"
DAYS = 45
LIST_HOUR = 24 * OD  # the two workloads' on-demand list spend an hour: 24 GPUs


def _solve(tmp_path, u: float, idle: str = "separate"):
    data = quarter([chat(16), interactive("support", 800, accs=("h100-sxm",))], tiers=["on-demand"],
                   reservation_starts="plan_start", idle=idle)
    data["offers"] = [offer(H100, "h100-sxm", on_demand=OD)]
    data["spend_commitments"] = [{"provider": PROVIDER, "usd_per_hour": u, "term": "1y", "discount": 0.3,
                                  "start": "2025-11-15", "end": "2026-11-14"}]
    r = solve_plan(write(tmp_path, data), SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT))
    assert r.status == "optimal"
    return r


def _committed(r) -> dict[str | None, float]:
    out: dict[str | None, float] = {}
    for x in r.showback:
        key = IDLE if x.team == IDLE else x.workload
        out[key] = out.get(key, 0.0) + x.committed_cost
    return out


def _ties(r, tmp_path) -> None:
    assert sum(x.cost + x.committed_cost for x in r.showback) == pytest.approx(r.cost_all_in, abs=0.005)
    path = tmp_path / "r.json"
    path.write_text(dumps(r), encoding="utf-8")
    read_result(path)  # its own check: the showback adds up to the all-in


def test_a_fully_used_commitment_is_charged_to_the_workloads_by_their_covered_spend(tmp_path):
    """$40/hour covers $57.14 of list an hour, less than the $165.12 used: all of it is used, 16:8."""
    r = _solve(tmp_path, 40.0)
    c, = r.spend_commitments
    assert c.utilization == pytest.approx(1.0)
    spend = 40.0 * 24 * DAYS
    got = _committed(r)
    assert got["chat"] == pytest.approx(spend * 16 / 24, rel=1e-9)
    assert got["support"] == pytest.approx(spend * 8 / 24, rel=1e-9)
    assert abs(got.get(IDLE, 0.0)) < 0.005
    assert sum(signed_spend_used(r).values()) == pytest.approx(spend, rel=1e-9)
    _ties(r, tmp_path)


def test_a_commitment_larger_than_the_use_leaves_the_rest_idle(tmp_path):
    """$200/hour covers up to $285.71 of list an hour; the use is $165.12, so $115.58 of it is used an hour and
    $84.42 idle."""
    r = _solve(tmp_path, 200.0)
    used = 0.7 * LIST_HOUR * 24 * DAYS
    got = _committed(r)
    assert got["chat"] + got["support"] == pytest.approx(used, rel=1e-9)
    assert got["chat"] == pytest.approx(2 * got["support"], rel=1e-9)
    assert got[IDLE] == pytest.approx(200.0 * 24 * DAYS - used, rel=1e-9)
    _ties(r, tmp_path)
    (tmp_path / "spread").mkdir()
    spread = _solve(tmp_path / "spread", 200.0, idle="spread")
    assert IDLE not in {x.team for x in spread.showback}
    assert sum(_committed(spread).values()) == pytest.approx(spread.cost_committed, rel=1e-9)
    _ties(spread, tmp_path / "spread")


def test_the_workbook_showback_adds_up_to_the_all_in_and_recalculates(tmp_path):
    """The Showback sheet's lines (the Workloads sheet's list-priced spend, plus each line's share of what the
    spend commitments change) add up to the all-in; the signed commitment's shares are its used part by
    workload and the rest idle (spread: the rest by use too); LibreOffice recalculates every formula to its
    stored value."""
    import openpyxl

    from optimizer.report.xlsx import workbook as excel
    from tests.helpers.office import check_formulas, recalculate

    books = {}
    for idle in ("separate", "spread"):
        (tmp_path / idle).mkdir()
        r = _solve(tmp_path / idle, 200.0, idle)
        book = tmp_path / f"{idle}.xlsx"
        excel.write_workbook(r, book)
        books[idle] = book
        wb = openpyxl.load_workbook(book, data_only=True)
        sheet, coord = next(iter(wb.defined_names["showback_total"].destinations))
        assert wb[sheet][coord.replace("$", "")].value == pytest.approx(r.cost_all_in, abs=0.005)
        ws = wb["Showback"]
        head = next(row for row in ws.iter_rows() if row[0].value == "Team")
        col = next(c.column - 1 for c in head
                   if c.value == "Signed spend commitments (the used part to the workloads it covered)")
        lines = {row[2].value: row[col].value
                 for row in ws.iter_rows(min_row=head[0].row + 1, max_row=head[0].row + 3)}
        used = 0.7 * LIST_HOUR * 24 * DAYS if idle == "separate" else 200.0 * 24 * DAYS  # spread: the rest too
        assert lines["chat"] == pytest.approx(used * 2 / 3, rel=1e-9)
        assert lines["support"] == pytest.approx(used / 3, rel=1e-9)
    again = recalculate(tmp_path, list(books.values()))
    for idle, book in books.items():
        assert check_formulas(book, again[idle], sheets=("Showback",), label=idle)["Showback"] > 0
