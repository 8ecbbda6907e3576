"""The commitment ledger from quarter to quarter (`planopt solve NEXT --carry LAST.json`) and `end` as the last
day of service everywhere.

Quarter A is test_commitments' acceptance case: 2026-10-01 + 92 days, 64 GPUs signed at $4.20 until 2027-02-28,
and the plan buys 32 more reserved for a year at $4.60. Quarter B is the next one: 2027-01-01 + 90 days (64
weekdays, 26 weekend days), the same demand.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import dumps, from_dict, read_result
from optimizer.results.ledger import carry_commitments

from tests.helpers import shipped
from tests.helpers.commitments import H100, PEAKY, R1Y, chat, contract, quarter
from tests.helpers.paths import ROOT
from tests.helpers.small_plans import write
from tests.helpers.solving import NO_TIME_LIMIT

SIGNED = contract(64, "2026-03-01", "2027-02-28", price_per_gpu_hour=4.20)
NEW = (H100, "reserved-1y", 32, "2026-10-01", "2027-09-30")        # what A buys: 365 days, the last one included
X_IN_B = 64 * 4.20 * 24 * 59                                         # Jan 1 – Feb 28 2027: 380,620.80
NEW_IN_B = 32 * R1Y * 24 * 90                                        # 317,952.00


def quarter_b(commitments: list[dict] = ()) -> dict:
    data = quarter([chat(128, PEAKY)], commitments=list(commitments))
    data.update(plan="quarter B", horizon_days=90, start_date="2027-01-01", day_types={"weekday": 64, "weekend": 26})
    return data


@pytest.fixture(scope="module")
def last(tmp_path_factory) -> Path:
    """Quarter A solved, its JSON as `planopt solve` writes it."""
    d = tmp_path_factory.mktemp("a")
    r = solve_plan(write(d, quarter([chat(128, PEAKY)], commitments=[SIGNED]), "a.yaml"))
    path = d / "a.json"
    path.write_text(dumps(r), encoding="utf-8")
    return path


def rows(result) -> list[tuple]:
    return sorted((c.offer, c.tier, c.gpus, c.start, c.end) for c in result.commitments)


# --- end = the last day of service ------------------------------------------------------------------------------

def test_a_new_reservation_ends_on_its_last_day_of_service(last):
    a = read_result(last)
    n, = a.new_commitments
    assert (n.offer, n.tier, n.gpus, n.start, n.end) == NEW and n.end_text == "2027-09-30"
    assert {e.quarter: e.new_gpus_ending for e in a.expiry}["2027-Q3"] == 32   # ends in Q3, not on 2027-10-01 (Q4)
    assert [e.quarter for e in a.expiry][-1] == "2027-Q3"
    assert json.loads(last.read_text())["end_is_last_day"] is True


def test_a_year_from_new_year_ends_on_new_year_s_eve(tmp_path):
    r = solve_plan(write(tmp_path, quarter_b()))
    n, = (n for n in r.new_commitments if n.tier == "reserved-1y")
    assert (n.start, n.end) == ("2027-01-01", "2027-12-31")


def test_older_results_held_the_day_after_and_are_read_as_the_last_day(last):
    old = json.loads(last.read_text())
    del old["end_is_last_day"]
    old["new_commitments"][0].update(end="2027-10-01", end_text="2027-10-01")   # as planopt wrote it before
    n, = from_dict(copy.deepcopy(old)).new_commitments
    assert (n.end, n.end_text) == ("2027-09-30", "2027-09-30")
    old["new_commitments"][0].update(start=None, end=None, end_text="start + 365 days")
    n, = from_dict(old).new_commitments
    assert (n.end, n.end_text) == (None, "after 365 days")


def test_the_workbook_s_end_is_the_last_day(last, tmp_path):
    path = tmp_path / "a.xlsx"
    excel.write_workbook(read_result(last), path)
    ws = openpyxl.load_workbook(path)["Commitments"]
    head = next(r for r in ws.iter_rows() if r[0].value == "Offer" and r[1].value == "Tier" and r[3].value != "Start")
    assert head[7].value.startswith("End (last day")
    row = next(r for r in ws.iter_rows(min_row=head[0].row + 1) if r[0].value == H100)
    assert row[7].value == f"=G{row[0].row}+E{row[0].row}-1"


# --- the merge -------------------------------------------------------------------------------------------------

def test_carry_adds_last_quarter_s_reservations_and_skips_contracts_listed_again(last, tmp_path):
    loaded, info = carry_commitments(load_plan(write(tmp_path, quarter_b([SIGNED]))), last)
    assert [(e.entry, e.offer, e.tier, e.gpus, e.start, e.end, e.price_per_gpu_hour) for e in info.carried] == [
        ("new_commitments[0]", *NEW, R1Y)]
    skipped, = info.skipped
    assert skipped.entry == "commitments[0]" and "already listed: the plan's commitments[0] at" in skipped.reason
    assert "plan.yaml:" in skipped.reason
    assert len(loaded.plan.commitments) == 2
    assert "carried 1 contract" in info.notes[0] and "(1 new reservation)" in info.notes[0]
    assert "skipped 1" in info.notes[0] and str(last) in info.notes[0]

    r = solve_plan(loaded)
    assert rows(r) == sorted([(H100, "reserved-1y", 64, "2026-03-01", "2027-02-28"), NEW])
    assert r.cost_committed == pytest.approx(X_IN_B + NEW_IN_B)


def test_a_running_contract_the_next_plan_does_not_list_is_carried_at_its_price(last, tmp_path):
    r = solve_plan(write(tmp_path, quarter_b()), carry=last)
    assert rows(r) == sorted([(H100, "reserved-1y", 64, "2026-03-01", "2027-02-28"), NEW])
    assert {c.gpus: c.price_per_gpu_hour for c in r.commitments} == {64: 4.20, 32: R1Y}
    assert r.cost_committed == pytest.approx(X_IN_B + NEW_IN_B)
    assert [e.entry for e in r.carried.carried] == ["commitments[0]", "new_commitments[0]"]
    assert r.carried.skipped == [] and "(1 new reservation and 1 signed contract)" in r.notes[0]
    d = json.loads(dumps(r))
    assert d["carried"]["file"] == str(last) and len(d["carried"]["carried"]) == 2
    assert from_dict(d).carried == r.carried
    assert sum(c["spend_in_horizon"] for c in d["commitments"]) == pytest.approx(d["cost"]["committed"])


def test_contracts_that_ended_before_the_next_plan_are_skipped_and_said(tmp_path):
    a = solve_plan(write(tmp_path, quarter([chat(8)], m=1, commitments=[contract(8, "2026-01-01", "2026-11-30")],
                                           tiers=["on-demand"]), "a.yaml"))
    r = solve_plan(write(tmp_path, quarter_b(), "b.yaml"), carry=a)
    skipped, = r.carried.skipped
    assert skipped.reason == "ended on 2026-11-30, before 2027-01-01"
    assert r.commitments == [] and r.cost_committed == 0
    assert "carried 0 contracts" in r.notes[0] and "skipped 1" in r.notes[0]


def test_each_listed_contract_absorbs_one_carried_twin(tmp_path):
    """Two identical contracts signed last quarter, one listed again: the other is still carried."""
    twin = contract(8, "2026-01-01", "2027-06-30")
    a = solve_plan(write(tmp_path, quarter([chat(8)], m=1, commitments=[twin, twin], tiers=["on-demand"]), "a.yaml"))
    r = solve_plan(write(tmp_path, quarter_b([twin]), "b.yaml"), carry=a)
    assert len(r.carried.carried) == 1 and len(r.carried.skipped) == 1
    assert [c.gpus for c in r.commitments] == [8, 8]


def test_a_near_twin_is_counted_and_flagged(tmp_path):
    """Same offer, tier and first day but other GPUs: two contracts or one misread — both count, and it says so."""
    a = solve_plan(write(tmp_path, quarter([chat(8)], m=1, commitments=[contract(8, "2026-01-01", "2027-06-30")],
                                           tiers=["on-demand"]), "a.yaml"))
    r = solve_plan(write(tmp_path, quarter_b([contract(16, "2026-01-01", "2027-06-30")]), "b.yaml"), carry=a)
    assert sorted(c.gpus for c in r.commitments) == [8, 16]
    assert any("both are counted" in n and "list it once" in n for n in r.notes)


def test_carry_and_baseline_read_the_same_last_result(last, tmp_path):
    from optimizer.results.baseline import load_baseline

    r = solve_plan(write(tmp_path, quarter_b([SIGNED])), baseline=load_baseline(last), carry=last)
    assert r.baseline is not None and r.baseline.kept == ["chat"]
    assert rows(r) == sorted([(H100, "reserved-1y", 64, "2026-03-01", "2027-02-28"), NEW])
    assert r.cost_committed == pytest.approx(X_IN_B + NEW_IN_B)


def test_without_carry_nothing_changes(tmp_path):
    r = solve_plan(write(tmp_path, quarter_b([SIGNED])))
    assert r.carried is None and "carried" not in json.loads(dumps(r))


# --- bad input: file, what, fix; exit 2; nothing written --------------------------------------------------------

def _edited(last: Path, tmp_path: Path, edit) -> Path:
    d = json.loads(last.read_text())
    edit(d)
    path = tmp_path / "last.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def _offer_unknown(d):
    d["new_commitments"][0]["offer"] = "cloud-b-h100"


def _bad_tier(d):
    d["new_commitments"][0]["tier"] = "on-demand"


BAD = {
    "missing": (lambda last, tmp: tmp / "nope.json", "last result file not found"),
    "not JSON": (lambda last, tmp: (tmp / "last.json").write_text("{plan: q4") and tmp / "last.json", "not JSON"),
    "not a result": (lambda last, tmp: (tmp / "last.json").write_text('{"cost": 1}') and tmp / "last.json",
                     "not a planopt result JSON"),
    "newer format": (lambda last, tmp: _edited(last, tmp, lambda d: d.update(format=99)),
                     "result format 99 is newer than this planopt reads"),
    "undated last": (lambda last, tmp: _edited(last, tmp, lambda d: d.update(start_date=None)),
                     "its plan has no start_date, so its reservations have no dates"),
    "later last": (lambda last, tmp: _edited(last, tmp, lambda d: d.update(start_date="2027-02-01")),
                   "after this plan's first day 2027-01-01 — --carry takes the result of the plan before"),
    "unknown offer": (lambda last, tmp: _edited(last, tmp, _offer_unknown),
                      "new_commitments[0]: offer 'cloud-b-h100' of this contract"),
    "bad entry": (lambda last, tmp: _edited(last, tmp, _bad_tier),
                  "new_commitments[0]: not a contract planopt can carry"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_carry_input_exits_2_naming_the_file(last, tmp_path, case):
    make, message = BAD[case]
    path = make(last, tmp_path)
    plan = write(tmp_path, quarter_b([SIGNED]), "b.yaml")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["solve", str(plan), "--carry", str(path), "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert f"{path}:" in res.output and message in res.output and " — " in res.output
    assert "Traceback" not in res.output and not out.exists()
    with pytest.raises(PlanError, match=re.escape(message)):
        solve_plan(plan, carry=path)


def test_an_unknown_offer_names_the_next_plan_and_how_to_fix(last, tmp_path):
    path = _edited(last, tmp_path, _offer_unknown)
    with pytest.raises(PlanError) as exc:
        carry_commitments(load_plan(write(tmp_path, quarter_b(), "b.yaml")), path)
    p, = exc.value.problems
    assert (p.file, p.path) == (str(path), "new_commitments[0]")
    assert "b.yaml's offers or catalogs" in p.message and "add the offer to" in p.fix


def test_a_next_plan_without_start_date_is_refused(last, tmp_path):
    data = quarter_b()
    del data["start_date"]
    plan = write(tmp_path, data, "b.yaml")
    res = CliRunner().invoke(app, ["solve", str(plan), "--carry", str(last), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "b.yaml: the plan has no start_date" in res.output and "add start_date:" in res.output
    assert not (tmp_path / "out").exists()


def test_explain_takes_carry_too(last, tmp_path):
    plan = write(tmp_path, quarter_b(), "b.yaml")
    res = CliRunner().invoke(app, ["explain", str(plan), "-w", "chat", "--carry", str(last)])
    assert res.exit_code == 0, res.output
    assert "carried 2 contracts" in res.output


# --- the shipped story: q4, then q1 with q4's result carried -----------------------------------------------------

def _story(tmp_path: Path, q4_plan: Path, options: SolveOptions) -> tuple[dict, dict, dict]:
    """q4 solved and written (it need not be optimal); q1 --carry q4 through the CLI; q1's plan."""
    q4 = shipped.solved(q4_plan, options)
    last = tmp_path / "q4.json"
    last.write_text(dumps(q4), encoding="utf-8")
    q1_plan = ROOT / "plans" / "q1-with-commitments.yaml"
    res = CliRunner().invoke(app, ["solve", str(q1_plan), "--carry", str(last), "--json", "--time-limit", str(NO_TIME_LIMIT),
                                   "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    carried = json.loads((tmp_path / "out" / "q1-with-commitments.json").read_text())
    return json.loads(last.read_text()), carried, load_plan(q1_plan).plan.model_dump(mode="json")


def _committed(c: dict, start: str = "2027-01-01", days: int = 90) -> float:
    import datetime as dt

    first = max(dt.date.fromisoformat(c["start"]), dt.date.fromisoformat(start))
    last = min(dt.date.fromisoformat(c["end"]), dt.date.fromisoformat(start) + dt.timedelta(days=days - 1))
    return c["gpus"] * c["price_per_gpu_hour"] * 24 * max(0, (last - first).days + 1)


def _check_story(q4: dict, q1: dict, q1_plan: dict) -> None:
    key = ("offer", "tier", "gpus", "start", "end")
    listed = [tuple(str(c[k]) for k in key) for c in q1_plan["commitments"]]
    bought = [tuple(str(n[k]) for k in key) for n in q4["new_commitments"]]
    signed = [tuple(str(c[k]) for k in key) for c in q1["commitments"]]
    # q4's new reservations are q1's signed contracts, once; q1's own contracts are there once
    assert sorted(signed) == sorted(listed + bought)
    assert [e["entry"] for e in q1["carried"]["carried"]] == [f"new_commitments[{i}]" for i in range(len(bought))]
    # q4 lists the contracts it shares with q1: every one of them is skipped, none counted twice
    shared = [tuple(str(c[k]) for k in key) for c in q4["commitments"]]
    assert sorted(tuple(str(e[k]) for k in key) for e in q1["carried"]["skipped"]) == sorted(shared)
    assert all(e["reason"].startswith("already listed") for e in q1["carried"]["skipped"])
    # committed spend: q1's own contracts at their prices + q4's reservations at q4's prices, q1's 90 days each
    prices = {o["id"]: o["price_per_gpu_hour"] for o in q1_plan["offers"]}
    own = sum(_committed({**c, "price_per_gpu_hour": c["price_per_gpu_hour"] or prices[c["offer"]][c["tier"]]})
              for c in q1_plan["commitments"])
    assert own == pytest.approx(611_366.40)
    assert q1["cost"]["committed"] == pytest.approx(own + sum(_committed(n) for n in q4["new_commitments"]))
    assert any(n.startswith(f"carried {len(bought)} contract") for n in q1["notes"])


@pytest.mark.slow
def test_q1_carries_q4_and_counts_nothing_twice(tmp_path):
    """As shipped, q4 runs on the three contracts it shares with q1 (signed before 2026-10-01): q1 --carry q4
    skips all three and adds whatever q4 reserved."""
    q4, q1, q1_plan = _story(tmp_path, ROOT / "plans" / "q4.yaml", SolveOptions(time_limit_s=NO_TIME_LIMIT))
    assert len(q4["commitments"]) == 3 and q4["cost"]["committed"] > 0
    _check_story(q4, q1, q1_plan)


@pytest.mark.slow
def test_q1_carries_the_reservations_q4_buys(tmp_path):
    """q4 without its contracts reserves capacity from 2026-10-01 for a year: in q1 those are signed contracts at
    q4's prices, ending 2027-09-30, and q1's committed spend grows by their 90 days."""
    data = load_plan(ROOT / "plans" / "q4.yaml").doc.data
    data = json.loads(json.dumps(data, default=str))
    data["commitments"] = []
    q4_plan = tmp_path / "q4.yaml"
    q4_plan.write_text(json.dumps(data), encoding="utf-8")
    q4, q1, q1_plan = _story(tmp_path, q4_plan, SolveOptions())   # q4's own limit: 20 s leaves a poor plan
    assert q4["new_commitments"] and q4["commitments"] == []
    assert {(n["start"], n["end"]) for n in q4["new_commitments"]} == {("2026-10-01", "2027-09-30")}
    _check_story(q4, q1, q1_plan)
    assert q1["carried"]["skipped"] == []


def test_what_carry_did_is_a_note_not_a_warning(last, tmp_path):
    """`solve --carry` says what it carried as a note; warnings are for what needs the reader's attention."""
    plan = write(tmp_path, quarter_b(), "b.yaml")
    res = CliRunner().invoke(app, ["solve", str(plan), "--carry", str(last), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.stderr.split())
    assert "note: carried 2 contracts" in said and "warning: carried" not in said
