"""planopt calibrate on short and partial logs: what the log did not see keeps the plan's numbers, less than a
whole day needs --allow-partial, a log of one service needs no model column, burstiness inside the hour."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from optimizer.calibrate.coverage import merge_curve, slots
from optimizer.calibrate.run import CalibrateOptions, calibrate
from optimizer.calibrate.usage import Matcher, aggregate
from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.synth import usage as usage_synth

from tests.helpers.paths import DATA

DATA = DATA
PLAN = DATA / "calibrate" / "plan.yaml"
AZURE = DATA / "usage" / "azure-llm-inference-trace-2023-code.csv.gz"
runner = CliRunner()

WEEKDAY = [0.20, 0.20, 0.20, 0.20, 0.20, 0.20, 0.30, 0.50, 0.70, 0.90, 1.00, 1.00,
           1.00, 1.00, 1.00, 1.00, 0.90, 0.80, 0.70, 0.60, 0.50, 0.40, 0.30, 0.20]
WEEKEND = [0.20, 0.20, 0.20, 0.20, 0.20, 0.20, 0.20, 0.30, 0.40, 0.50, 0.50, 0.50,
           0.50, 0.50, 0.50, 0.50, 0.50, 0.50, 0.40, 0.40, 0.30, 0.30, 0.20, 0.20]
"""chat's profile in tests/data/calibrate/plan.yaml (peak 9000 tok/s)."""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def flat(text: str) -> str:
    return " ".join(text.split())


def chat_plan(tmp_path: Path, peak: float) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.read_text().replace("peak_output_tokens_per_s: 9000", f"peak_output_tokens_per_s: {peak:g}"))
    return plan


def one_workload_plan(tmp_path: Path) -> Path:
    """code-assistant alone (no profile: flat at its 2,000 tok/s peak on weekdays and weekends)."""
    text = PLAN.read_text()
    head = text[: text.index("  - name: chat\n")]
    body = text[text.index("  - name: code-assistant"): text.index("  - name: nightly-summaries")]
    plan = tmp_path / "one.yaml"
    plan.write_text(head + body.replace("peak_output_tokens_per_s: 3500", "peak_output_tokens_per_s: 2000"))
    return plan


def absolute(plan: Path, workload: str, day_type: str) -> list[float]:
    d = next(w for w in load_plan(plan).plan.workloads if w.name == workload).demand
    profile = d.profile[day_type] if isinstance(d.profile, dict) else (d.profile or [1.0] * 24)
    return [d.peak_output_tokens_per_s * v for v in profile]


def write_csv(path: Path, rows: list[tuple], header: str = "timestamp,model,prompt_tokens,completion_tokens") -> Path:
    path.write_text(header + "\n" + "".join(",".join(str(x) for x in r) + "\n" for r in rows))
    return path


def assert_refused(r, out: Path, *expect: str) -> None:
    assert r.exit_code == 2, r.output
    text = flat(r.output)
    for e in expect:
        assert e in text, text
    assert "Traceback" not in r.output
    assert not out.exists() and not out.with_suffix(".html").exists()


# --- day types the log never saw keep the plan's curve and peak ---------------------------------


def weekday_only_log(tmp_path: Path, days: int) -> tuple[Path, usage_synth.Truth]:
    """Mon 2026-07-06 onwards, weekends left out (5 days: Mon–Fri; 12: two weeks with a gap)."""
    events, truth = usage_synth.generate(4000, days=days, seed=11, mode="exact")
    keep = np.array([dt.datetime.fromtimestamp(t, dt.timezone.utc).weekday() < 5 for t in events.epoch_s])
    sub = usage_synth.Events(events.epoch_s[keep], events.model[keep], events.tenant[keep],
                             events.prompt_tokens[keep], events.completion_tokens[keep])
    return usage_synth.write(sub, tmp_path / f"weekdays-{days}.csv"), truth


@pytest.mark.parametrize("days", [5, 12])
@pytest.mark.parametrize("old_peak", [9000, 1.0])
def test_weekday_only_log_leaves_the_weekend_curve_as_it_was(tmp_path, days, old_peak):
    """The weekend keeps its tokens/s hour by hour, whether it or the new weekday holds the peak."""
    log, truth = weekday_only_log(tmp_path, days)
    plan = chat_plan(tmp_path, old_peak)
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", plan, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    text = flat(r.output)
    assert "no weekend in the log: weekend demand kept as the plan has it" in text
    if days == 12:
        assert "2 day(s) inside the log with no event at all (2026-07-11, 2026-07-12)" in text
    for name in ("chat", "code-assistant"):
        before, after = absolute(plan, name, "weekend"), absolute(out, name, "weekend")
        assert after == pytest.approx(before, rel=1e-3), name
        assert min(after) > 0
    chat = next(w for w in load_plan(out).plan.workloads if w.name == "chat").demand
    weekday = [chat.peak_output_tokens_per_s * v for v in chat.profile["weekday"]]
    truth_weekday = [truth.peak_output_tokens_per_s["chat"] * v for v in usage_synth.CHAT_WEEKDAY]
    assert np.corrcoef(weekday, truth_weekday)[0, 1] >= 0.98
    assert max(weekday) == pytest.approx(truth.peak_output_tokens_per_s["chat"], rel=0.05)
    # 9000 tok/s before: the kept weekend (4,500) is now the busiest; 1 tok/s before: the measured weekday is.
    assert chat.peak_output_tokens_per_s == pytest.approx(max(4500, max(weekday)) if old_peak == 9000 else
                                                          truth.peak_output_tokens_per_s["chat"], rel=0.05)
    cal = calibrate(plan, CalibrateOptions(usage=(log,)), tmp_path / "again.yaml")
    assert cal.full_days == {"weekday": days - 2 * (days // 7), "weekend": 0}
    assert next(w for w in cal.workloads if w.name == "chat").kept == ["weekend"]


# --- less than a whole day: --allow-partial, and the hours it did not see -------------------------


def one_hour_log(tmp_path: Path, rate: float) -> Path:
    """Wednesday 2026-07-08 14:00–15:00 UTC, one chat request a second, `rate` output tokens/s in all."""
    start = dt.datetime(2026, 7, 8, 14, tzinfo=dt.timezone.utc).timestamp()
    rows = [(dt.datetime.fromtimestamp(start + i + 0.5, dt.timezone.utc).isoformat().replace("+00:00", "Z"),
             "llama-3.1-70b", 1000, int(rate)) for i in range(3600)]
    return write_csv(tmp_path / "one-hour.csv", rows)


def test_one_hour_log_needs_allow_partial_then_keeps_the_other_23_hours(tmp_path):
    log = one_hour_log(tmp_path, 18000)  # twice the plan's 9,000 at 14:00
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert_refused(r, out, "one-hour.csv: the log covers 1 hour of weekday (2026-07-08, UTC) and not one whole day "
                           "of it: too little to replace the weekday peak", "--allow-partial")
    r = invoke("calibrate", PLAN, "--usage", log, "--allow-partial", "-o", out)
    assert r.exit_code == 0, r.output
    chat = load_plan(out).plan.workloads[0].demand
    # The hour it saw is twice the plan's: the peak doubles, the weekday shape is the plan's exactly.
    assert chat.peak_output_tokens_per_s == 18000
    assert chat.profile["weekday"] == pytest.approx(WEEKDAY, abs=1e-9)
    assert min(chat.profile["weekday"]) > 0
    # The weekend (not in the log) keeps its tokens/s: half its old fractions of a doubled peak.
    assert [18000 * v for v in chat.profile["weekend"]] == pytest.approx([9000 * v for v in WEEKEND], rel=1e-3)
    cal = calibrate(PLAN, CalibrateOptions(usage=(log,), allow_partial=True), tmp_path / "again.yaml")
    assert "weekday: 1 hour from the log; the other hours are the plan's × 2" in cal.workloads[0].notes


def test_one_hour_log_at_another_level_scales_the_plan_curve(tmp_path):
    log = one_hour_log(tmp_path, 450)  # a twentieth of the plan at 14:00
    cal = calibrate(PLAN, CalibrateOptions(usage=(log,), allow_partial=True), tmp_path / "out.yaml")
    chat = cal.workloads[0]
    assert chat.scaled["weekday"] == ("1 hour", pytest.approx(0.05))
    # The weekend's 4,500 tok/s (kept) is now the busiest hour; the weekday is the plan's curve × 0.05.
    assert chat.new_peak == 4500 and chat.peak_kept and chat.peak_day_type == "weekend"
    weekday = [chat.new_peak * v for v in chat.new_profile["weekday"]]
    assert weekday == pytest.approx([450 * v for v in WEEKDAY], rel=2e-3)
    assert [chat.new_peak * v for v in chat.new_profile["weekend"]] == pytest.approx([9000 * v for v in WEEKEND])


def test_one_event_refuses_without_allow_partial(tmp_path):
    log = write_csv(tmp_path / "one-event.csv", [("2026-07-08T14:03:00Z", "llama-3.1-70b", 1200, 62)])
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert_refused(r, out, "one-event.csv: the log covers 15 minutes of weekday (2026-07-08, UTC) and not one whole "
                           "day of it: too little to replace the weekday peak",
                   "give a log with at least one whole day of weekday (00:00–24:00 UTC), or pass --allow-partial")
    r = invoke("calibrate", PLAN, "--usage", log, "--allow-partial", "-o", out)
    assert r.exit_code == 0, r.output
    # Asked for: 15 minutes set the weekday's level (62 tokens ÷ 900 s at 14:00); the weekend keeps the peak.
    assert absolute(out, "chat", "weekday")[14] == pytest.approx(62 / 900, rel=5e-3)
    assert absolute(out, "chat", "weekend") == pytest.approx([9000 * v for v in WEEKEND], rel=1e-3)
    assert "kept: the plan's weekend busiest hour" in out.read_text()


def test_a_partial_day_at_the_edge_of_a_long_log_is_kept_not_refused(tmp_path):
    """Full weekdays, plus Sunday evening (where a UTC export starts in New York): the weekend is 4 hours —
    not enough to replace it, so the weekend keeps the plan's curve and peak, with a note; the weekdays
    the log saw whole are calibrated."""
    rows = [(f"2026-07-05T{h:02d}:10:00Z", "llama-3.1-70b", 100, 50) for h in range(20, 24)]
    rows += [(f"2026-07-{d:02d}T{h:02d}:10:00Z", "llama-3.1-70b", 100, 50) for d in (6, 7) for h in range(24)]
    log = write_csv(tmp_path / "edge.csv", rows)
    out = tmp_path / "out.yaml"
    before = {w: absolute(PLAN, w, "weekend") for w in ("chat",)}
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    assert "covers 4 hours of it, not one whole day" in flat(r.output)
    for w, curve in before.items():
        assert absolute(out, w, "weekend") == pytest.approx(curve, rel=1e-3)


def test_merge_curve_keeps_the_plan_shape_where_the_log_is_silent():
    plan = [100.0 * v for v in WEEKDAY]
    measured = [None] * 24
    measured[14] = 50.0
    curve, k = merge_curve(measured, plan)
    assert k == pytest.approx(0.5) and curve == pytest.approx([0.5 * v for v in plan])
    curve, k = merge_curve([float(h) for h in range(24)], plan)
    assert k is None and curve == [float(h) for h in range(24)]
    zero = [0.0] * 24
    curve, k = merge_curve(measured, zero)
    assert k is None and curve[14] == 50.0 and sum(curve) == 50.0


def test_slots_read_a_partial_day_by_its_quarters_and_skip_days_without_events():
    from zoneinfo import ZoneInfo

    utc = ZoneInfo("UTC")
    t0 = dt.datetime(2023, 11, 16, 18, 17, tzinfo=utc).timestamp()
    s = slots(t0, t0 + 57 * 60, utc)
    assert s.hours == {(dt.date(2023, 11, 16), 18): 0.75, (dt.date(2023, 11, 16), 19): 0.25}
    assert s.full_days == set()
    # Three whole days, the middle one without an event: a gap, not a day of zero demand.
    start = dt.datetime(2026, 7, 6, tzinfo=utc).timestamp()
    active = {int(start // 900) + i for i in range(96)} | {int(start // 900) + 192 + i for i in range(96)}
    s = slots(start, start + 3 * 86400 - 1, utc, active)
    assert s.gaps == (dt.date(2026, 7, 7),)
    assert s.full_days == {dt.date(2026, 7, 6), dt.date(2026, 7, 8)}
    assert not any(d == dt.date(2026, 7, 7) for d, _ in s.hours)


# --- a log of one service: no model column --------------------------------------------------------


def full_day_rows(model: str | None = None) -> list[tuple]:
    return [(f"2026-07-08T{h:02d}:{m:02d}:00Z",) + ((model,) if model else ()) + (800, 40 + h)
            for h in range(24) for m in (5, 25, 45)]


def test_no_model_column_goes_to_the_plans_only_workload(tmp_path):
    plan = one_workload_plan(tmp_path)
    log = write_csv(tmp_path / "service.csv", full_day_rows(), header="timestamp,prompt_tokens,completion_tokens")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", plan, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    assert ("service.csv has no model or workload column: its 72 events go to code-assistant (the plan's only "
            "workload)") in flat(r.output)
    w = load_plan(out).plan.workloads[0]
    assert w.tokens.input == 800 and w.tokens.output == pytest.approx(51.5)
    weekday = absolute(out, "code-assistant", "weekday")
    assert weekday[23] == pytest.approx(3 * 63 / 3600, rel=5e-3)  # the busiest hour of the one whole day
    assert absolute(out, "code-assistant", "weekend") == pytest.approx([2000.0] * 24)  # not in the log


def test_no_model_column_on_a_plan_of_several_workloads(tmp_path):
    log = write_csv(tmp_path / "service.csv", full_day_rows(), header="timestamp,prompt_tokens,completion_tokens")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert_refused(r, out, "service.csv: no model or workload column (the file has timestamp, prompt_tokens, "
                           "completion_tokens), and the plan has 3 workloads it could belong to: chat, "
                           "code-assistant, nightly-summaries", "pass --usage-workload NAME")
    r = invoke("calibrate", PLAN, "--usage", log, "--usage-workload", "code-assistant", "-o", out)
    assert r.exit_code == 0, r.output
    assert "its 72 events go to code-assistant (--usage-workload)" in flat(r.output)
    assert load_plan(out).plan.workloads[1].tokens.output == pytest.approx(51.5)


@pytest.mark.parametrize("args,expect", [
    (["--usage-workload", "chta"], ["--usage-workload chta: unknown workload — did you mean 'chat'?"]),
    (["--usage-workload", "research"], ["--usage-workload research: a reserve_gpus workload has no demand",
                                        "name one of chat, code-assistant, nightly-summaries"]),
    (["--usage-workload", "chat", "--model-log"], ["--usage-workload chat: every usage file has a model or workload "
                                                   "column, and events go by it",
                                                   "--map model=MODEL:workload=chat"]),
    (["--usage-workload", "chat", "--no-usage"], ["--usage-workload needs --usage"]),
    (["--allow-partial", "--no-usage"], ["--allow-partial needs --usage"]),
])
def test_bad_usage_workload_and_allow_partial_exit_2(tmp_path, args, expect):
    no_model = write_csv(tmp_path / "service.csv", full_day_rows(), header="timestamp,prompt_tokens,completion_tokens")
    with_model = write_csv(tmp_path / "models.csv", full_day_rows("llama-3.1-70b"))
    usage = [] if "--no-usage" in args else ["--usage", with_model if "--model-log" in args else no_model]
    bench = ["--bench", DATA / "loadtests" / "vllm-chat-h100-fp8-tp2-c48.json"] if "--no-usage" in args else []
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, *usage, *bench, *[a for a in args if not a.startswith(("--no-", "--model-"))],
               "-o", out)
    assert_refused(r, out, *expect)


@pytest.mark.parametrize("name,content,expect", [
    ("az-tokens.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n"
                      "2023-11-16 18:17:04.0319600,3180,many\r\n",
     "az-tokens.csv:3: row 2: GeneratedTokens 'many' is not a number"),
    ("az-time.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n16/11/2023 18:17,4808,10\r\n",
     "az-time.csv:2: row 1: TIMESTAMP '16/11/2023 18:17' is not a timestamp"),
    ("az-context.csv", "TIMESTAMP,Context,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n",
     "az-context.csv: no prompt_tokens column"),
])
def test_bad_azure_shaped_logs_exit_2_with_file_line_and_column(tmp_path, name, content, expect):
    log = tmp_path / name
    log.write_text(content, newline="")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", one_workload_plan(tmp_path), "--usage", log, "--allow-partial", "-o", out)
    assert_refused(r, out, expect)


# --- the real trace: one hour of Azure's code-completion service ---------------------------------


def test_azure_trace_one_hour_no_model_column(tmp_path):
    plan = one_workload_plan(tmp_path)
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", plan, "--usage", AZURE, "-o", out)
    assert_refused(r, out, "the log covers 1 hour of weekday (2023-11-16, UTC) and not one whole day of it")
    r = invoke("calibrate", plan, "--usage", AZURE, "--allow-partial", "-o", out)
    assert r.exit_code == 0, r.output
    text = flat(r.output)
    assert "8,819 events go to code-assistant (the plan's only workload)" in text
    w = load_plan(out).plan.workloads[0]
    weekday = [w.demand.peak_output_tokens_per_s * v for v in w.demand.profile["weekday"]]
    # 18:17–19:14 UTC: the two hours it saw are measured; the 22 others are the plan's flat curve, scaled.
    others = [v for h, v in enumerate(weekday) if h not in (18, 19)]
    assert len(set(others)) == 1 and others[0] > 0
    frame = pd.read_csv(gzip.open(AZURE), parse_dates=["TIMESTAMP"])
    hour18 = frame[frame.TIMESTAMP.dt.hour == 18].GeneratedTokens.sum() / (45 * 60)  # 18:15–19:00 spanned
    assert weekday[18] == pytest.approx(hour18, rel=2e-3)
    assert w.tokens.output == pytest.approx(frame.GeneratedTokens.mean(), rel=1e-3)
    assert absolute(out, "code-assistant", "weekend") == pytest.approx([2000.0] * 24)
    # Burstiness, checked against numpy: each response's tokens spread over its generation time (tokens × the
    # 40 ms TPOT target) from its timestamp; each hour's busiest minute ÷ its mean minute over the minutes the
    # log spans, over the hours with at least half the busiest hour's rate (19:00–19:14 has less: 18:00 alone)
    t = (frame.TIMESTAMP - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy()
    c = frame.GeneratedTokens.to_numpy(dtype=float)
    spread: dict[int, float] = {}
    for start, tokens in zip(t, c):
        d = tokens * 0.040
        for m in range(int(start // 60), int((start + d) // 60) + 1):
            share = (min(start + d, 60.0 * (m + 1)) - max(start, 60.0 * m)) / d if d > 0 else 1.0
            spread[m] = spread.get(m, 0.0) + tokens * max(share, 0.0)
    m0, m1 = int(t.min() // 60), int(t.max() // 60)
    groups = []
    for hour in sorted({m // 60 for m in spread}):
        span = min(m1, hour * 60 + 59) - max(m0, hour * 60) + 1
        vals = [v for m, v in spread.items() if m // 60 == hour]
        if span >= 15:
            groups.append((max(vals), sum(vals) / span))
    busiest = max(mean for _top, mean in groups)
    ratios = [top / mean for top, mean in groups if mean >= 0.5 * busiest]
    expect = float(np.percentile(ratios, 95))
    cal = calibrate(plan, CalibrateOptions(usage=(AZURE,), allow_partial=True), tmp_path / "again.yaml")
    burst = cal.workloads[0].burst
    assert (burst.hours, burst.ratio) == (len(ratios), pytest.approx(expect, rel=1e-9))
    assert burst.occupancy == pytest.approx(1 / expect)
    assert "Inside the hour" in text and f"{expect:.2f}×" in text
    assert "Inside the hour" in out.with_suffix(".html").read_text()


# --- burstiness ----------------------------------------------------------------------------------


def test_burstiness_is_the_busiest_minute_over_the_mean_p95_across_hours(tmp_path):
    """Every hour of a whole day: 10 requests of 100 tokens a minute, 40 in its 30th minute."""
    rows = []
    for h in range(24):
        for m in range(60):
            for i in range(40 if m == 30 else 10):
                rows.append((f"2026-07-08T{h:02d}:{m:02d}:{i:02d}Z", "llama-3.1-70b", 500, 100))
    log = write_csv(tmp_path / "bursty.csv", rows)
    agg = aggregate([log], Matcher(("chat",), {"llama-3.1-70b": ("chat",)}))
    ratio = 4000 / ((59 * 1000 + 4000) / 60)
    assert agg.burst["chat"] == (24, pytest.approx(ratio))
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    text = flat(r.output)
    assert "Inside the hour" in text and "3.81×" in text and "26%" in text
    html = out.with_suffix(".html").read_text()
    assert "3.81×" in html and "at the policy&#39;s 60% that minute needs 229% of the fleet" in html


def test_no_partial_output_when_refused(tmp_path):
    log = write_csv(tmp_path / "short.csv", [("2026-07-08T14:03:00Z", "llama-3.1-70b", 1, 1)])
    with pytest.raises(PlanError, match="too little to replace the weekday peak"):
        calibrate(PLAN, CalibrateOptions(usage=(log,)), tmp_path / "out.yaml")
    assert not (tmp_path / "out.yaml").exists()


def test_burstiness_is_read_over_the_busy_hours(tmp_path):
    """Twelve quiet hours (a request a minute, five in one minute: 4.8×) and twelve busy ones (10 a minute, 40
    in one: 3.81×): the figure is the busy hours' — the hours that size the fleet — not the quiet hours' noise."""
    rows = []
    for h in range(24):
        busy = h >= 12
        for m in range(60):
            n = (40 if m == 30 else 10) if busy else (5 if m == 30 else 1)
            for i in range(n):
                rows.append((f"2026-07-08T{h:02d}:{m:02d}:{i:02d}Z", "llama-3.1-70b", 500, 100))
    log = write_csv(tmp_path / "quiet-nights.csv", rows)
    agg = aggregate([log], Matcher(("chat",), {"llama-3.1-70b": ("chat",)}))
    assert agg.burst["chat"] == (12, pytest.approx(4000 / ((59 * 1000 + 4000) / 60)))


def test_events_repeated_exactly_are_counted_and_said(tmp_path):
    """Two overlapping exports: the 120 events of 10:00–10:59 twice. They are counted (a log may hold twin
    requests), and the note says how many repeat another exactly."""
    rows = [(f"2026-07-08T{h:02d}:{m:02d}:00Z", "llama-3.1-70b", 500, 100 + m) for h in range(24) for m in range(60)]
    log = write_csv(tmp_path / "twice.csv", rows + rows[600:720])
    agg = aggregate([log], Matcher(("chat",), {"llama-3.1-70b": ("chat",)}))
    assert agg.repeated == {"chat": 120}
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "out.yaml")
    assert r.exit_code == 0, r.output
    assert "chat: 120 events repeat another exactly (same timestamp, tokens and tenant) — counted" in flat(r.output)
