"""planopt forecast: known growth and seasons forecast back within 10%, an honest P10–P90 band, a NEXT.yaml
that loads as a plan, and bad input refused with where, what and how to fix it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from optimizer.calibrate.forecast import (
    History,
    calendar_months,
    forecast_workload,
    quantile_levels,
    quantile_weights,
)
from optimizer.cli import app
from optimizer.inputs.loading import load_plan
from optimizer.synth import usage as usage_synth

from tests.helpers.paths import DATA

PLAN = DATA / "calibrate" / "plan.yaml"
WEEKDAYS = {"weekday": ("mon", "tue", "wed", "thu", "fri"), "weekend": ("sat", "sun")}
START = dt.date(2026, 10, 5)  # a Monday
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


# --- back to a known future ------------------------------------------------------------------------

SEEDS = range(5)


@pytest.fixture(scope="module")
def accuracy() -> list[tuple[str, int, float, float, float, float]]:
    """(workload, months ahead, P10, P50, P90, truth) over seeds: 8–12 weeks of hourly chat and code-assistant
    demand (weekday and weekend shapes), compounding growth of 3–10% a month, a day shock (sd 0.04) and
    hourly noise (sd 0.08) on the log scale; the three calendar months after the log are forecast.

    The truth is each month's busiest hour as the generating process drew it, noise included: that is
    the hour a fleet must serve and what the forecast claims to predict (the band is a prediction
    interval of it), so P10–P90 should hold it about 80% of the time. The noiseless peak would sit below
    every realised month's busiest hour and flatter nothing but a band of the mean curve.
    """
    rows = []
    for seed in SEEDS:
        rng = np.random.default_rng(1000 + seed)
        weeks = int(rng.integers(8, 13))
        end = START + dt.timedelta(days=weeks * 7 - 1)
        months = calendar_months(dt.date(end.year + end.month // 12, end.month % 12 + 1, 1), 3)
        growth = {"chat": float(rng.uniform(0.03, 0.10)), "code-assistant": float(rng.uniform(0.03, 0.10))}
        _events, truth = usage_synth.generate_growing(
            weeks=weeks, until=months[-1][1] + dt.timedelta(days=months[-1][2]), start=START, seed=seed,
            monthly_growth=growth, requests_per_hour=1)
        for name in growth:
            n = weeks * 7 * 24
            wf = forecast_workload(name, History(START, 0, truth.rates[name][:n], n), months, WEEKDAYS, seed=seed)
            for k, m in enumerate(wf.months, start=1):
                rows.append((name, k, m.p10, m.p50, m.p90, truth.busiest_hour(name, m.first, m.days)))
    return rows


def test_a_one_off_spike_or_an_outage_does_not_move_the_forecast():
    """Ten weeks of chat with one hour at 3× its level (a spike) in the last week: every month's P50 stays
    within 3% of the clean log's and a note names the hour (as data, the spike had become part of the
    weekly season: +20% on every month). Six hours without traffic inside a day that every other week had
    traffic at are read as a gap, not as no demand (as zeros they had raised the P50 by half)."""
    from optimizer.calibrate.forecast import _silent_hours

    weeks, seed = 10, 3
    end = START + dt.timedelta(days=weeks * 7 - 1)
    months = calendar_months(dt.date(end.year + end.month // 12, end.month % 12 + 1, 1), 3)
    _events, truth = usage_synth.generate_growing(
        weeks=weeks, until=months[-1][1] + dt.timedelta(days=months[-1][2]), start=START, seed=seed,
        monthly_growth={"chat": 0.05, "code-assistant": 0.05}, requests_per_hour=1)
    n = weeks * 7 * 24
    rates = np.asarray(truth.rates["chat"][:n], dtype=float)
    clean = forecast_workload("chat", History(START, 0, rates, n), months, WEEKDAYS, paths=300, seed=0)
    spike = n - 6 * 24 + 14  # a Tuesday, 14:00, in the last week
    spiked = rates.copy()
    spiked[spike] *= 3
    wf = forecast_workload("chat", History(START, 0, spiked, n), months, WEEKDAYS, paths=300, seed=0)
    for a, b in zip(clean.months, wf.months):
        assert b.p50 == pytest.approx(a.p50, rel=0.03), (a, b)
    day, hour = History(START, 0, spiked, n).when(spike)
    assert any(f"one-offs (a spike, an incident): {day} {hour:02d}:00 at 3" in note for note in wf.notes), wf.notes
    outage = rates.copy()
    outage[n - 20 * 24 + 2:n - 20 * 24 + 8] = 0.0
    assert _silent_hours(outage).tolist() == list(range(n - 20 * 24 + 2, n - 20 * 24 + 8))
    assert _silent_hours(rates).tolist() == []


def test_p50_monthly_peak_is_within_10_percent_for_each_of_three_months(accuracy):
    for k in (1, 2, 3):
        errors = [p50 / truth - 1 for _w, ahead, _lo, p50, _hi, truth in accuracy if ahead == k]
        assert max(abs(e) for e in errors) <= 0.10, (k, errors)
        assert abs(np.mean(errors)) <= 0.04, (k, errors)  # no bias either way


def test_p10_p90_band_holds_the_truth_70_to_90_percent_of_the_time(accuracy):
    held = [lo <= truth <= hi for _w, _k, lo, _p50, hi, truth in accuracy]
    assert 0.70 <= np.mean(held) <= 0.90, f"{sum(held)} of {len(held)}"
    assert all(lo < p50 < hi for _w, _k, lo, p50, hi, _t in accuracy)


def test_scenario_levels_and_weights():
    assert quantile_levels(5) == [0.1, 0.3, 0.5, 0.7, 0.9]
    assert quantile_weights(quantile_levels(5)) == [0.2] * 5
    assert quantile_weights(quantile_levels(3)) == [0.3, 0.4, 0.3]
    assert quantile_levels(1) == [0.5] and quantile_weights([0.5]) == [1.0]
    for n in range(1, 10):
        assert sum(quantile_weights(quantile_levels(n))) == pytest.approx(1.0, abs=1e-9)


# --- the command -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`planopt forecast --json` on 9 weeks of chat, code-assistant and a nightly batch job."""
    d = tmp_path_factory.mktemp("forecast")
    events, _truth = usage_synth.generate_growing(weeks=9, until=dt.date(2027, 1, 1), seed=3,
                                                 workloads=usage_synth.DEFAULT_WORKLOADS)
    log = usage_synth.write(events, d / "usage.csv")
    out = d / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", log, "--start", "2027-01-01", "-o", out, "--json")
    return SimpleNamespace(dir=d, log=log, out=out, result=r)


def test_json_is_each_workloads_monthly_band(run):
    r = run.result
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert list(data) == ["workloads"]
    assert [w["name"] for w in data["workloads"]] == ["chat", "code-assistant"]  # the batch job is not forecast
    for w in data["workloads"]:
        assert list(w) == ["name", "months"]
        assert [m["month"] for m in w["months"]] == ["2027-01", "2027-02", "2027-03"]
        for m in w["months"]:
            assert list(m) == ["month", "p10", "p50", "p90"]
            assert 0 < m["p10"] < m["p50"] < m["p90"]


def test_next_yaml_loads_as_the_plan_for_those_months(run):
    loaded = load_plan(run.out)
    plan = loaded.plan
    assert plan.start_date == dt.date(2027, 1, 1)
    assert plan.horizon_days == 31 + 28 + 31
    assert plan.day_type_days() == {"weekday": 64, "weekend": 26}  # Q1 2027 on the calendar
    data = json.loads(run.result.stdout)
    by = {w.name: w for w in plan.workloads}
    for w in data["workloads"]:
        demand = by[w["name"]].demand
        assert demand.peak_by_month == {m["month"]: m["p50"] for m in w["months"]}
        assert demand.peak_output_tokens_per_s == max(m["p50"] for m in w["months"])
        assert set(demand.profile) == {"weekday", "weekend"}
        assert max(demand.profile["weekday"]) == 1.0 and max(demand.profile["weekend"]) < 0.9
    assert by["nightly-summaries"].batch.output_tokens_per_day == 2.0e9  # kept
    assert [s.name for s in plan.scenarios] == ["p10", "p30", "p50", "p70", "p90"]
    assert sum(s.weight for s in plan.scenarios) == pytest.approx(1.0)
    low, high = plan.scenarios[0].demand, plan.scenarios[-1].demand
    assert all(low[w] < 1 < high[w] for w in ("chat", "code-assistant"))
    text = run.out.read_text(encoding="utf-8")
    assert text.startswith("# A small plan for calibrate tests")  # the plan's comments are kept
    assert "forecast: P50 of the busiest hour of 2027-03" in text


def test_html_beside_it_draws_history_and_band(run):
    html = run.out.with_suffix(".html").read_text(encoding="utf-8")
    assert html.count("<svg") == 2
    assert "forecast P10–P90" in html and "2027-03" in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "<script" not in html


def test_console_shows_history_and_the_band(tmp_path, run):
    r = invoke("forecast", PLAN, "--usage", run.log, "--start", "2027-01-01", "--months", "1", "--scenarios", "3",
               "-o", tmp_path / "one.yaml")
    assert r.exit_code == 0, r.output
    assert "each day's busiest hour" in r.stdout and "2027-01" in r.stdout and "●" in r.stdout
    assert "nightly-summaries: events counted but not forecast" in r.stdout
    plan = load_plan(tmp_path / "one.yaml").plan
    assert plan.horizon_days == 31 and [s.weight for s in plan.scenarios] == [0.3, 0.4, 0.3]


# --- bad input: exit 2, where, what and how to fix, nothing written ----------------------------------


@pytest.fixture(scope="module")
def short_log(tmp_path_factory):
    events, _ = usage_synth.generate(3000, days=10, seed=5, mode="exact")
    return usage_synth.write(events, tmp_path_factory.mktemp("short") / "ten-days.csv")


def _refused(r, out: Path, *needles: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for n in needles:
        assert n in r.output, r.output
    assert not out.exists() and not out.with_suffix(".html").exists()


@pytest.mark.parametrize("args, needles", [
    (["--start", "2027-13-01"], ["--start 2027-13-01: not a date", "YYYY-MM-DD"]),
    (["--start", "soon"], ["--start soon: not a date"]),
    (["--start", "2027-01-15"], ["not the first day of a month", "--start 2027-01-01 or --start 2027-02-01"]),
    (["--start", "2027-01-01", "--months", "0"], ["--months 0: outside 1–24"]),
    (["--start", "2027-01-01", "--months", "25"], ["--months 25: outside 1–24"]),
    (["--start", "2027-01-01", "--scenarios", "12"], ["--scenarios 12: outside 0–9"]),
    # a month computed past year 9999 had failed with a traceback
    (["--start", "9999-12-01", "--months", "2"], ["--start 9999-12-01: out of range", "e.g. --start 2027-01-01"]),
])
def test_bad_options(tmp_path, run, args, needles):
    out = tmp_path / "next.yaml"
    _refused(invoke("forecast", PLAN, "--usage", run.log, "-o", out, *args), out, *needles)


def test_a_log_shorter_than_two_weeks_is_refused(tmp_path, short_log):
    out = tmp_path / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", short_log, "--start", "2026-08-01", "-o", out)
    _refused(r, out, f"{short_log}: chat: needs at least 14 days of hourly usage to fit a weekly season",
             "got 10.0 days", "export a longer period")


def test_a_start_inside_the_log_is_refused(tmp_path, run):
    out = tmp_path / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", run.log, "--start", "2026-11-01", "-o", out)
    _refused(r, out, "the usage log reaches 2026-12-06", "--start 2027-01-01")


def _hourly_log(path: Path, days: int, completion, extra: dict[int, str] | None = None) -> Path:
    """A CSV log of one code-assistant request an hour from 2026-10-05 (completion_tokens: completion(k) at hour k),
    and after hour k the rows `extra[k]` (its model, prompt and completion)."""
    lines = ["timestamp,model,prompt_tokens,completion_tokens"]
    for k in range(days * 24):
        when = dt.datetime(2026, 10, 5, tzinfo=dt.UTC) + dt.timedelta(hours=k)
        lines.append(f"{when:%Y-%m-%dT%H:%M:%SZ},code-assistant,900,{completion(k)}")
        if k in (extra or {}):
            lines.append(f"{when:%Y-%m-%dT%H:%M:%SZ},{extra[k]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_workload_not_in_the_plan_is_refused_with_its_line(tmp_path):
    log = _hourly_log(tmp_path / "usage.csv", 20, lambda k: 400 + k % 24 * 10, {30: "mystery-model,900,300"})
    out = tmp_path / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", log, "--start", "2026-11-01", "-o", out)
    _refused(r, out, f"{log}:33: 1 event for 'mystery-model', which is not a workload of the plan",
             "--map model=mystery-model:workload=")


@pytest.mark.parametrize("text, needle", [
    ("", "the file is empty"),
    ("timestamp,model,prompt_tokens,completion_tokens\n", "has no events"),
])
def test_an_empty_log_is_refused(tmp_path, text, needle):
    log = tmp_path / "usage.csv"
    log.write_text(text, encoding="utf-8")
    out = tmp_path / "next.yaml"
    _refused(invoke("forecast", PLAN, "--usage", log, "--start", "2027-01-01", "-o", out), out, f"{log}: ", needle)


def test_a_log_without_output_tokens_is_refused(tmp_path):
    """Three weeks of requests whose completion_tokens are all 0: no forecast to write (its page had divided by
    the recent peak, 0, with a traceback)."""
    log = _hourly_log(tmp_path / "usage.csv", 21, lambda k: 0)
    out = tmp_path / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", log, "--start", "2026-11-01", "-o", out)
    _refused(r, out, f"{log}: the usage log's events for the plan's workloads carry no output tokens",
             "--map COLUMN=completion_tokens")


def test_an_hour_that_is_no_whole_clock_hour_is_refused(tmp_path):
    """The shape of Azure's public trace: an hour of events from 18:17 to 19:14 covers no whole clock hour,
    so there is no history at all — refused as too short, not a traceback."""
    log = tmp_path / "azure.csv"
    start = dt.datetime(2023, 11, 16, 18, 17, tzinfo=dt.UTC)
    rows = [f"{start + dt.timedelta(seconds=7 * k):%Y-%m-%d %H:%M:%S}.000,{1000 + k},{200 + k % 50}" for k in range(490)]
    log.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "next.yaml"
    r = invoke("forecast", PLAN, "--usage", log, "--usage-workload", "chat", "--start", "2027-01-01", "-o", out)
    _refused(r, out, f"{log}: chat: needs at least 14 days of hourly usage", "got less than an hour")
