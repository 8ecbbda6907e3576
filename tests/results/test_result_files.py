"""Reading a saved result JSON (`report`, `compare`, `solve --baseline`, `solve --carry`, `calibrate --result`):
a file edited into something `planopt solve` never writes is refused when read — exit 2, the file and the key
path named, no traceback, nothing written."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.results.jsonio import read_result

from tests.helpers import shipped
from tests.helpers.paths import DATA, ROOT
from tests.helpers.solving import NO_TIME_LIMIT

PLAN = DATA / "calibrate" / "plan.yaml"

runner = CliRunner()


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Any]:
    """A result as `planopt solve` wrote it (no start_date, reserved, on-demand and spot bought)."""
    out = tmp_path_factory.mktemp("solved")
    res = runner.invoke(app, ["solve", str(PLAN), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads((out / "plan.json").read_text(encoding="utf-8"))


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """Set the value at a dotted key path (`workloads[0].name`)."""
    def edit(d: dict) -> None:
        *parents, last = _parts(path)
        for p in parents:
            d = d[p]
        d[last] = value
    return edit


def _drop(path: str) -> Callable[[dict], None]:
    def edit(d: dict) -> None:
        *parents, last = _parts(path)
        for p in parents:
            d = d[p]
        del d[last]
    return edit


def _parts(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        name, *idx = part.replace("]", "").split("[")
        if name:
            out.append(name)
        out += [int(i) for i in idx]
    return out


def _write(tmp_path: Path, d: dict, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(d, indent=2), encoding="utf-8")  # allow_nan: NaN and Infinity as JS literals
    return path


def _refused(res, path: Path, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and not isinstance(res.exception, (KeyError, TypeError, ValueError))
    assert f"{path}: " in res.output, res.output
    for w in words:
        assert w in res.output, res.output


# --- NaN and Infinity ---------------------------------------------------------------------------------------

NON_FINITE = [
    ("cost.total", float("nan"), "NaN"),
    ("cost.total", float("inf"), "Infinity"),
    ("cost.by_tier.spot", float("-inf"), "-Infinity"),
    ("workloads[0].goodput_output_tokens_per_s", float("nan"), "NaN"),
    ("hourly[3].demand_gpus", float("inf"), "Infinity"),
]


@pytest.mark.parametrize("key, value, text", NON_FINITE)
def test_report_refuses_nan_and_infinity_naming_the_key(saved, tmp_path, key, value, text):
    d = copy.deepcopy(saved)
    _set(key, value)(d)
    path = _write(tmp_path, d)
    assert text in path.read_text(encoding="utf-8")
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    _refused(res, path, f"{key}: {text} is not a finite number")
    assert not (tmp_path / "out").exists()


def test_a_number_too_large_for_a_float_is_refused_like_infinity(saved, tmp_path):
    path = _write(tmp_path, saved)
    text = path.read_text(encoding="utf-8").replace('"horizon_days": 28', '"horizon_days": 1e999')
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    _refused(res, path, "horizon_days: 1e999 is not a finite number")


def test_compare_names_the_file_with_nan(saved, tmp_path):
    good = _write(tmp_path, saved, "good.json")
    d = copy.deepcopy(saved)
    d["cost"]["total"] = float("nan")
    bad = _write(tmp_path, d, "cost-nan.json")
    res = runner.invoke(app, ["compare", str(good), str(bad)])
    _refused(res, bad, "cost.total: NaN")
    assert "good.json" not in res.output  # the file at fault alone, not "a.json or b.json"


def test_baseline_and_calibrate_refuse_nan(saved, tmp_path):
    d = copy.deepcopy(saved)
    d["cost"]["total"] = float("nan")
    bad = _write(tmp_path, d, "cost-nan.json")
    res = runner.invoke(app, ["solve", str(PLAN), "--baseline", str(bad), "-o", str(tmp_path / "out")])
    _refused(res, bad, "cost.total: NaN")
    assert not (tmp_path / "out").exists()
    with pytest.raises(Exception) as err:
        read_result(bad)
    assert "cost.total: NaN" in str(err.value)


# --- format -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    (0, "format: 0 is not a result format"),
    (-1, "format: -1 is not a result format"),
    ("2", 'format: "2" is not a result format'),
    (True, "format: true is not a result format"),
    (1.5, "format: 1.5 is not a result format"),
    (99, "result format 99 is newer than this planopt reads (1)"),
])
def test_report_refuses_a_format_that_is_not_a_whole_number_from_1(saved, tmp_path, value, words):
    d = copy.deepcopy(saved)
    d["format"] = value
    path = _write(tmp_path, d)
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    _refused(res, path, words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit", [_set("format", 1.0), _drop("format")], ids=["1.0", "absent"])
def test_format_1_written_as_1_0_or_left_out_is_read(saved, tmp_path, edit):
    d = copy.deepcopy(saved)
    edit(d)
    res = runner.invoke(app, ["report", str(_write(tmp_path, d)), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output


# --- keys `from_dict` needs, lists and objects ---------------------------------------------------------------

SHAPES = [
    (_drop("cost.total"), "cost.total: missing"),
    (_drop("cost"), "cost: missing"),
    (_drop("solver.seconds"), "solver.seconds: missing"),
    (_set("cost", [1, 2]), "cost: [1, 2] is not an object"),
    (_set("cost.by_tier", 5), "cost.by_tier: 5 is not an object"),
    (_drop("workloads[0].name"), "workloads[0].name: missing"),
    (_drop("workloads[0].replicas"), "workloads[0].replicas: missing"),
    (_drop("workloads[0].replicas.total"), "workloads[0].replicas.total: missing"),
    (_set("workloads[0].replicas.extra", 1), "workloads[0].replicas.extra: is not a key"),
    (_set("workloads", {"chat": 1}), 'workloads: {"chat": 1} is not a list'),
    (_set("workloads", "chat"), 'workloads: "chat" is not a list'),
    (_set("workloads[0]", "chat"), 'workloads[0]: "chat" is not an object'),
    (_set("workloads[0].peak", 3), "workloads[0].peak: 3 is not an object"),
    (_set("workloads[0].hourly_gpus", [1]), "workloads[0].hourly_gpus: [1] is not an object"),
    (_drop("purchases[0].tier"), "purchases[0].tier: missing"),
    (_set("purchases", None), "purchases: null is not a list"),
    (_drop("hourly[2].hour"), "hourly[2].hour: missing"),
    (_set("hourly[2].colour", "red"), "hourly[2].colour: is not a key of hourly[2]"),
    (_set("cash_flow", 7), "cash_flow: 7 is not a list"),
    (_drop("cash_flow[0].amount"), "cash_flow[0].amount: missing"),
    (_set("new_commitments[0]", 1), "new_commitments[0]: 1 is not an object"),
    (_set("notes", "hello"), 'notes: "hello" is not a list'),
    (_set("own", []), "own: [] is not an object"),
    (_set("own", {"bought": []}), "own.facility: missing"),
    (_set("baseline", {"changes": [{}]}), "baseline.changes[0].workload: missing"),
    (_set("carried", {"carried": [{"offer": "x"}]}), "carried.carried[0].entry: missing"),
    (_set("risk", {"measure": "expected"}), "risk.level: missing"),
    (_set("offers", []), "offers: [] is not an object"),
]


# --- what types cannot say ----------------------------------------------------------------------------------

def _duplicate_first_workload(d: dict) -> None:
    d["workloads"].append(copy.deepcopy(d["workloads"][0]))


MEANINGS = [
    (_duplicate_first_workload, "workloads[4].name: 'chat' is workloads[0]'s name too"),  # the plan has 4
    (_set("status", "banana"), 'status: "banana" is not a status planopt writes'),
    (_set("day_types.weekday", -20), "day_types.weekday: -20 is not a count of days"),
    (_set("day_types.weekday", 29), "day_types.weekday: 29 is not a count of days"),
    (_set("horizon_days", 10**12), "horizon_days: 1000000000000 is not a horizon (1 to 3,660 days)"),
    (_set("horizon_days", 0), "horizon_days: 0 is not a horizon"),
    (_set("cash_flow[0].month", "2027-13"), 'cash_flow[0].month: "2027-13" is not a month'),
    (_set("cash_flow[0].month", "M0"), 'cash_flow[0].month: "M0" is not a month'),
    (_set("workloads[0].hourly_gpus.weekday", [1, 2, 3, 4, 5]), "workloads[0].hourly_gpus.weekday: 5 values, not 24"),
    (_set("workloads[1].hourly_demand.weekend", [0.0] * 25), "workloads[1].hourly_demand.weekend: 25 values, not 24"),
    (_set("workloads[0].hourly_replicas.holiday", [0] * 24),
     "workloads[0].hourly_replicas.holiday: 'holiday' is not one of the result's day_types"),
    (_set("hourly[0].hour", 24), "hourly[0].hour: 24 is not an hour of the day"),
    (_set("start_date", "2027-02-30"), 'start_date: "2027-02-30" is not a date'),
    (_set("start_date", "20270201"), 'start_date: "20270201" is not a date'),
    (_set("new_commitments[0].start", "soon"), 'new_commitments[0].start: "soon" is not a date'),
    # a calendar date planopt cannot compute a contract term from (a carry had failed on it, year 10000)
    (_set("new_commitments[0].end", "9999-12-31"), 'new_commitments[0].end: "9999-12-31" is out of range'),
    # amounts planopt never writes: had been read, and reported as a plan that pays, or serves without GPUs
    (_set("cost.total", -88089.6), "cost.total: -88089.6 is negative (a cost is GPU-hours at prices, 0 or more)"),
    (_set("cost.by_tier.spot", -1), "cost.by_tier.spot: -1 is negative"),
    (_set("workloads[2].cost", -0.5), "workloads[2].cost: -0.5 is negative"),
    (_set("purchases[0].cost", -10), "purchases[0].cost: -10 is negative"),
    (_set("workloads[0].goodput_output_tokens_per_s", 0),
     "workloads[0].goodput_output_tokens_per_s: 0 is not the goodput of a config served on GPUs (cloud-h100, fp8)"),
    (_set("workloads[1].goodput_output_tokens_per_s", -900.0),
     "workloads[1].goodput_output_tokens_per_s: -900.0 is negative"),
    (_set("candidates[0].goodput_output_tokens_per_s", 0.0), "candidates[0].goodput_output_tokens_per_s: 0 is not"),
]


@pytest.mark.parametrize("edit, words", SHAPES + MEANINGS,
                         ids=[f"{i}-" + w.split(":")[0] for i, (_, w) in enumerate(SHAPES + MEANINGS)])
def test_report_names_the_key_of_a_result_planopt_would_not_write(saved, tmp_path, edit, words):
    """A key missing or of the wrong kind (SHAPES), or a value planopt never writes (MEANINGS): exit 2 by its
    key path, never "not a planopt result JSON (KeyError: 'total')", nothing written."""
    d = copy.deepcopy(saved)
    edit(d)
    path = _write(tmp_path, d)
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    _refused(res, path, words)
    assert "not a planopt result JSON (" not in res.output
    assert not (tmp_path / "out").exists()


def test_compare_refuses_a_date_that_is_not_on_the_calendar(saved, tmp_path):
    good = _write(tmp_path, saved, "good.json")
    d = copy.deepcopy(saved)
    d["start_date"] = "2027-02-30"
    bad = _write(tmp_path, d, "start-date-bad.json")
    res = runner.invoke(app, ["compare", str(good), str(bad), "--json"])
    _refused(res, bad, 'start_date: "2027-02-30" is not a date')
    assert "good.json" not in res.output


def test_compare_and_baseline_refuse_a_negative_cost_or_a_zero_goodput(saved, tmp_path):
    """Read back, these had been compared and reported as they were (a plan "saving" more than it cost)."""
    good = _write(tmp_path, saved, "good.json")
    d = copy.deepcopy(saved)
    d["cost"]["total"] = -1.0
    bad = _write(tmp_path, d, "cost-neg.json")
    res = runner.invoke(app, ["compare", str(good), str(bad), "--json"])
    _refused(res, bad, "cost.total: -1.0 is negative")
    assert "good.json" not in res.output and "{" not in res.output  # no partial --json
    d = copy.deepcopy(saved)
    d["workloads"][0]["goodput_output_tokens_per_s"] = 0
    bad = _write(tmp_path, d, "goodput-zero.json")
    res = runner.invoke(app, ["solve", str(PLAN), "--baseline", str(bad), "-o", str(tmp_path / "out")])
    _refused(res, bad, "workloads[0].goodput_output_tokens_per_s: 0 is not the goodput")
    assert not (tmp_path / "out").exists()
    assert saved["workloads"][3]["goodput_output_tokens_per_s"] == 0  # a reserve_gpus workload's 0: read
    assert runner.invoke(app, ["compare", str(good), str(good)]).exit_code == 0


def test_compare_refuses_two_workloads_of_one_name(saved, tmp_path):
    d = copy.deepcopy(saved)
    _duplicate_first_workload(d)
    bad = _write(tmp_path, d, "dup.json")
    res = runner.invoke(app, ["compare", str(_write(tmp_path, saved, "good.json")), str(bad)])
    _refused(res, bad, "workloads[4].name: 'chat'")


def test_an_older_file_with_new_reservations_ending_the_day_after_names_a_bad_end(saved, tmp_path):
    d = copy.deepcopy(saved)
    d.pop("end_is_last_day", None)
    d["new_commitments"][0]["end"] = "2027-02-30"
    path = _write(tmp_path, d)
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    _refused(res, path, 'new_commitments[0].end: "2027-02-30" is not a date')


# --- every reader; results as written --------------------------------------------------------------------

def test_carry_refuses_a_last_result_with_nan(saved, tmp_path):
    d = copy.deepcopy(saved)
    d["new_commitments"][0]["price_per_gpu_hour"] = float("nan")
    bad = _write(tmp_path, d, "last.json")
    res = runner.invoke(app, ["solve", str(PLAN), "--carry", str(bad), "-o", str(tmp_path / "out")])
    _refused(res, bad, "new_commitments[0].price_per_gpu_hour: NaN is not a finite number")
    assert not (tmp_path / "out").exists()


def test_calibrate_refuses_a_result_with_a_missing_key(saved, tmp_path):
    from optimizer.synth import usage as usage_synth

    events, _ = usage_synth.generate(300, days=2, seed=3, mode="exact")
    log = usage_synth.write(events, tmp_path / "usage.csv", style="openai")
    d = copy.deepcopy(saved)
    del d["workloads"][1]["pool"]
    bad = _write(tmp_path, d)
    out = tmp_path / "o.yaml"
    res = runner.invoke(app, ["calibrate", str(PLAN), "--usage", str(log), "--result", str(bad), "-o", str(out)])
    _refused(res, bad, "workloads[1].pool: missing")
    assert not out.exists() and not out.with_suffix(".html").exists()


@pytest.mark.parametrize("plan", ["seed-fleet", "owned-cluster", "q1-with-commitments"])
def test_results_as_written_are_read_and_written_again_byte_for_byte(tmp_path, plan):
    """Every check above passes what planopt writes: own hardware, contracts, periods, dated months."""
    from optimizer.pipeline import SolveOptions
    from optimizer.results.jsonio import dumps

    text = dumps(shipped.solved(ROOT / "plans" / f"{plan}.yaml", SolveOptions(time_limit_s=NO_TIME_LIMIT)))
    path = tmp_path / f"{plan}.json"
    path.write_text(text, encoding="utf-8")
    assert dumps(read_result(path)) == text


def test_a_plan_given_where_a_result_goes_says_to_solve_it_first(tmp_path):
    """`planopt report plan.yaml`: exit 2 with "a plan, not a result … solve it first" (it had said "not JSON:
    Expecting value")."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.read_text(encoding="utf-8"), encoding="utf-8")
    res = CliRunner().invoke(app, ["report", str(plan)])
    assert res.exit_code == 2
    said = " ".join(res.output.split())
    assert "a plan, not a result" in said and f"planopt solve {plan} -o DIR" in said and "not JSON" not in said
