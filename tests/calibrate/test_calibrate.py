"""planopt calibrate: a seeded log calibrated back to its truth, real load-test formats, bad files, determinism."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from optimizer.calibrate.loadtests import Flags, read_runs
from optimizer.calibrate.occupancy import occupancy, serving_replicas
from optimizer.calibrate.run import CalibrateOptions, calibrate, slots
from optimizer.calibrate.types import sig
from optimizer.calibrate.usage import Matcher, aggregate, parse_maps
from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.synth import usage as usage_synth

from tests.helpers.paths import DATA
from tests.helpers.solving import NO_TIME_LIMIT

DATA = DATA
PLAN = DATA / "calibrate" / "plan.yaml"
BENCH = DATA / "loadtests"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A 14-day log of ~4,000 events (exact hourly shape), in every format and column style."""
    d = tmp_path_factory.mktemp("usage")
    events, truth = usage_synth.generate(4000, days=14, seed=11, mode="exact")
    files = {
        "openai-csv": usage_synth.write(events, d / "usage.csv", style="openai"),
        "litellm-csv": usage_synth.write(events, d / "spend.csv", style="litellm"),
        "epoch-jsonl": usage_synth.write(events, d / "usage.jsonl", style="epoch"),
        "openai-parquet": usage_synth.write(events, d / "usage.parquet", style="openai"),
    }
    return SimpleNamespace(dir=d, files=files, truth=truth, events=events)


def corr(a, b) -> float:
    return float(np.corrcoef(np.asarray(a, float), np.asarray(b, float))[0, 1])


# --- back to the truth ------------------------------------------------------------------------


def test_calibrates_back_to_the_truth(logs, tmp_path):
    cal = calibrate(PLAN, CalibrateOptions(usage=(logs.files["openai-csv"],)), tmp_path / "out.yaml")
    t = logs.truth
    by = {w.name: w for w in cal.workloads}
    for name in ("chat", "code-assistant"):
        w = by[name]
        assert w.new_peak == pytest.approx(t.peak_output_tokens_per_s[name], rel=0.05)
        for day_type in ("weekday", "weekend"):
            assert corr(w.new_profile[day_type], t.profile[name][day_type]) >= 0.98
        # One peak for every day type: the quieter weekend stays below 1.
        assert max(w.new_profile["weekend"]) < 0.9
        assert max(w.new_profile["weekday"]) == pytest.approx(1.0, abs=0.02)
        assert w.peak_day_type == "weekday"
        assert w.new_tokens[0] == pytest.approx(t.mean_input_tokens[name], rel=0.02)
        assert w.new_tokens[1] == pytest.approx(t.mean_output_tokens[name], rel=0.02)
        shares = {tenant: share for tenant, share, _ in w.tenants}
        for tenant, share in t.tenant_shares[name].items():
            assert shares[tenant] == pytest.approx(share, abs=0.05)
    nightly = by["nightly-summaries"]
    assert nightly.new_batch == pytest.approx(t.output_tokens_per_day["nightly-summaries"]["weekday"], rel=0.05)
    assert nightly.new_tokens[1] == pytest.approx(300, rel=0.02)
    assert cal.full_days == {"weekday": 10, "weekend": 4}


@pytest.mark.parametrize("style", ["litellm-csv", "epoch-jsonl", "openai-parquet"])
def test_every_format_gives_the_same_numbers(logs, tmp_path, style):
    ref = calibrate(PLAN, CalibrateOptions(usage=(logs.files["openai-csv"],)), tmp_path / "a.yaml")
    cal = calibrate(PLAN, CalibrateOptions(usage=(logs.files[style],)), tmp_path / "a.yaml")
    assert cal.yaml_text == ref.yaml_text
    assert cal.usage.events == ref.usage.events == logs.truth.events


def test_litellm_columns_are_detected(logs):
    m = Matcher(("chat", "code-assistant"), {"llama-3.1-70b": ("chat",)})
    agg = aggregate([logs.files["litellm-csv"]], m)
    cols = agg.files[0].columns
    assert cols["timestamp"] == "startTime"
    assert cols["model"] == "model_group or model"
    assert cols["tenant"] == "team_id or user"


def test_time_zone_and_calendar_follow_the_plan(tmp_path):
    events, truth = usage_synth.generate(3000, days=14, seed=5, mode="exact", tz="America/New_York")
    log = usage_synth.write(events, tmp_path / "ny.csv")
    text = PLAN.read_text().replace("catalogs: []", "catalogs: []\ntimezone: America/New_York")
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    cal = calibrate(plan, CalibrateOptions(usage=(log,)), tmp_path / "out.yaml")
    chat = next(w for w in cal.workloads if w.name == "chat")
    assert chat.new_peak == pytest.approx(truth.peak_output_tokens_per_s["chat"], rel=0.05)
    assert corr(chat.new_profile["weekday"], truth.profile["chat"]["weekday"]) >= 0.98
    # Read in UTC instead, the same log's shape is shifted by 4-5 hours: the time zone matters.
    utc = calibrate(PLAN, CalibrateOptions(usage=(log,)), tmp_path / "out.yaml")
    shifted = next(w for w in utc.workloads if w.name == "chat").new_profile["weekday"]
    assert corr(shifted, truth.profile["chat"]["weekday"]) < 0.9


def test_a_busiest_hour_that_moves_between_days_still_carries_the_peak(tmp_path):
    """Monday peaks at 10:00, Tuesday at 11:00: each hour's p95 across the two days is below the p95 of the
    days' maxima. The curve's busiest hour carries that peak (1.0), so the plan is sized for the peak it
    states, and the written plan validates without "never reaches the peak"."""
    rows = ["timestamp,model,prompt_tokens,completion_tokens"]
    for day, busy in (("2026-07-06", 10), ("2026-07-07", 11)):
        for h in range(24):
            out = 36_000_000 if h == busy else 3_600_000  # 10,000 tok/s at the busy hour, 1,000 elsewhere
            rows.append(f"{day}T{h:02d}:30:00Z,llama-3.1-70b,100,{out}")
    log = tmp_path / "moving.csv"
    log.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "--map", "model=llama-3.1-70b:workload=chat", "-o", out)
    assert r.exit_code == 0, r.output
    chat = load_plan(out).plan.workloads[0]
    assert chat.demand.peak_output_tokens_per_s == pytest.approx(10_000, rel=0.01)
    assert max(chat.demand.profile["weekday"]) == 1.0
    assert chat.demand.profile["weekday"][10] < 1.0 or chat.demand.profile["weekday"][11] < 1.0
    v = invoke("validate", out)
    assert v.exit_code == 0, v.output
    assert "never reaches the peak" not in v.output


def test_timestamps_iso_offsets_and_epochs(tmp_path):
    log = tmp_path / "mixed.csv"
    log.write_text(
        "timestamp,model,prompt_tokens,completion_tokens\n"
        "2026-07-06T10:30:00+02:00,chat,10,100\n"      # 08:30 UTC
        "2026-07-06 09:15:00,chat,10,100\n"            # no offset: UTC
        "1783330200,chat,10,100\n"                     # epoch s: 2026-07-06 09:30 UTC
        "1783330200000,chat,10,100\n"                  # epoch ms: the same instant
        "2026-07-06T09:59:59.999Z,chat,10,100\n")
    agg = aggregate([log], Matcher(("chat",), {}))
    quarters = agg.quarters["chat"]
    hours = sorted({dt.datetime.fromtimestamp(q * 900, dt.timezone.utc).hour for q in quarters})
    assert hours == [8, 9]
    assert sum(n for n, _, _ in quarters.values()) == 5


def test_slots_handle_daylight_saving():
    from zoneinfo import ZoneInfo

    zone = ZoneInfo("Europe/Berlin")
    # 2026-10-25: clocks go back at 03:00, so 02:00-03:00 happens twice (a 25-hour day).
    start = dt.datetime(2026, 10, 24, tzinfo=zone).timestamp()
    end = dt.datetime(2026, 10, 26, 23, 59, tzinfo=zone).timestamp()
    s = slots(start, end, zone)
    assert s.hours[(dt.date(2026, 10, 25), 2)] == 2.0
    assert s.full_days == {dt.date(2026, 10, 24), dt.date(2026, 10, 25), dt.date(2026, 10, 26)}


# --- the output file --------------------------------------------------------------------------


def test_cli_writes_yaml_and_html_keeps_comments_and_never_touches_the_plan(logs, tmp_path):
    before = sha(PLAN)
    out = tmp_path / "calibrated.yaml"
    r = invoke("calibrate", PLAN, "--usage", logs.files["openai-csv"], "-o", out)
    assert r.exit_code == 0, r.output
    assert sha(PLAN) == before
    text = out.read_text()
    for comment in ("# A small plan for calibrate tests", "# one rollout at a time"):
        assert comment in text
    assert "p95 over 10 weekday days of each day's busiest hour" in text
    assert "p95 across full days of each day's busiest hour" in r.output
    original = YAML(typ="safe").load(PLAN.read_text())
    new = YAML(typ="safe").load(text)
    assert list(new) == list(original)
    for a, b in zip(original["workloads"], new["workloads"]):
        assert list(b)[: len(a)] == list(a)
    assert load_plan(out).plan.workloads[0].demand.peak_output_tokens_per_s == pytest.approx(
        logs.truth.peak_output_tokens_per_s["chat"], rel=0.05)
    html = out.with_suffix(".html").read_text()
    assert html.count("<svg") == 2 and "Forecast vs actual" in html and "<script" not in html
    assert "chat" in r.output and "peak output tok/s" in r.output


def test_same_inputs_same_yaml(logs, tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"run{i}" / "plan.yaml"
        r = invoke("calibrate", PLAN, "--usage", logs.files["openai-parquet"], "--bench",
                   BENCH / "vllm-chat-h100-fp8-tp2-c48.json", "-o", out)
        assert r.exit_code == 0, r.output
        outs.append(out)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    html = [o.with_suffix(".html").read_text() for o in outs]
    assert html[0].replace("run0", "run1") == html[1]


def test_refuses_to_overwrite_the_plan(logs, tmp_path):
    plan = tmp_path / "plan.yaml"
    shutil.copy(PLAN, plan)
    before = sha(plan)
    r = invoke("calibrate", plan, "--usage", logs.files["openai-csv"], "-o", plan)
    assert r.exit_code == 2
    assert "is the plan itself" in r.output
    assert sha(plan) == before


def test_an_output_under_a_file_is_exit_2_before_reading_the_log(logs, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile / "x.yaml", tmp_path):
        r = invoke("calibrate", PLAN, "--usage", logs.files["openai-csv"], "-o", out)
        assert r.exit_code == 2, r.output
        said = " ".join(r.output.split())
        assert ("afile is a file, not a folder" in said if out != tmp_path else "is a folder, not a file" in said)
        assert "choose a writable -o" in said and "Traceback" not in r.output
    assert afile.read_text() == "x"


def test_sig_rounding():
    assert sig(1913.509) == 1914 and isinstance(sig(1913.509), int)
    assert sig(1.530807) == 1.531
    assert sig(2.0e9 + 12345) == 2000000000
    assert sig(0) == 0


# --- mapping events to workloads ----------------------------------------------------------------


TWO_ON_ONE_MODEL = """
  - name: chat-internal
    model: llama-3.1-70b
    precisions: [fp8]
    tokens: {input: 1000, output: 200}
    slo: {ttft_ms: 1000, tpot_ms: 50}
    demand: {peak_output_tokens_per_s: 100}
    measured:
      - {accelerator: h100-sxm, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}
"""


def test_two_workloads_on_one_model_need_a_mapping(logs, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.read_text().replace("\n  - name: code-assistant", TWO_ON_ONE_MODEL + "\n  - name: code-assistant"))
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", plan, "--usage", logs.files["openai-csv"], "-o", out)
    assert r.exit_code == 2, r.output
    assert "chat and chat-internal both serve it" in r.output
    assert "--map model=llama-3.1-70b:workload=" in r.output
    assert not out.exists()
    r = invoke("calibrate", plan, "--usage", logs.files["openai-csv"], "--map", "model=llama-3.1-70b:workload=chat",
               "-o", out)
    assert r.exit_code == 0, r.output
    # By tenant: team-c's traffic is the internal one.
    r = invoke("calibrate", plan, "--usage", logs.files["openai-csv"], "--map", "tenant=team-c:workload=chat-internal",
               "--map", "model=llama-3.1-70b:workload=chat", "-o", out)
    assert r.exit_code == 0, r.output
    cal = calibrate(plan, CalibrateOptions(usage=(logs.files["openai-csv"],), maps=(
        "tenant=team-c:workload=chat-internal", "model=llama-3.1-70b:workload=chat")), out)
    by = {w.name: w for w in cal.workloads}
    ev = logs.events
    team_c = int(((ev.model == "llama-3.1-70b") & (ev.tenant == "team-c")).sum())
    assert by["chat-internal"].requests == team_c
    assert by["chat"].requests == int((ev.model == "llama-3.1-70b").sum()) - team_c
    assert [t for t, _, _ in by["chat-internal"].tenants] == ["team-c"]


def test_unmatched_events_are_counted_and_reported(tmp_path):
    log = tmp_path / "u.csv"
    rows = ["timestamp,model,prompt_tokens,completion_tokens"]
    rows += [f"2026-07-06T{h:02d}:10:00Z,chat,100,50" for h in range(24)]
    rows += [f"2026-07-06T{h:02d}:20:00Z,gpt-4o,100,50" for h in range(5)]
    log.write_text("\n".join(rows) + "\n")
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    assert "5 events for 'gpt-4o' match no workload" in r.output


def test_html_escapes_what_the_log_says(tmp_path):
    log = tmp_path / "u.csv"
    log.write_text("timestamp,model,prompt_tokens,completion_tokens\n"
                   + "".join(f"2026-07-06T{h:02d}:10:00Z,chat,100,50\n" for h in range(24))
                   + "2026-07-06T05:00:00Z,<script>alert(1)</script>,1,1\n")
    out = tmp_path / "o.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    html = out.with_suffix(".html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_result_file_must_be_a_result(logs, tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text('{"plan": "x"}')
    r = invoke("calibrate", PLAN, "--usage", logs.files["openai-csv"], "--result", bad, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 2 and "not a planopt result JSON" in r.output
    r = invoke("calibrate", PLAN, "--result", bad, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 2 and "--result needs --usage" in r.output


def test_map_renames_columns(tmp_path):
    log = tmp_path / "custom.csv"
    log.write_text("when,llm,team,in_tok,out_tok\n" +
                   "".join(f"2026-07-06T{h:02d}:10:00Z,chat,a,100,{50 + h}\n" for h in range(24)))
    r = invoke("calibrate", PLAN, "--usage", log, "--map", "when=timestamp", "--map", "llm=model",
               "--map", "in_tok=prompt_tokens", "--map", "out_tok=output_tokens", "--map", "team=tenant",
               "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    w = load_plan(tmp_path / "o.yaml").plan.workloads[0]
    assert w.tokens.input == 100 and w.tokens.output == pytest.approx(61.5)


def test_a_column_map_turned_away_from_is_said(tmp_path):
    """--map llm=model on a log that also has a model column: the model column is not read, and the note
    says so (a rename never hides a column silently)."""
    log = tmp_path / "two.csv"
    log.write_text("timestamp,model,llm,prompt_tokens,completion_tokens\n" +
                   "".join(f"2026-07-06T{h:02d}:10:00Z,gateway-default,chat,100,50\n" for h in range(24)))
    r = invoke("calibrate", PLAN, "--usage", log, "--map", "llm=model", "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "model read from column llm (--map llm=model); its column model is not read" in said
    plain = invoke("calibrate", PLAN, "--usage", log, "--map", "model=llm:workload=chat", "-o", tmp_path / "p.yaml")
    assert "is not read" not in " ".join(plain.output.split())


def test_parse_maps_rejects_nonsense():
    with pytest.raises(PlanError, match="unknown field 'modle'.*did you mean 'model'"):
        parse_maps(["x=modle"])
    with pytest.raises(PlanError, match="not a route"):
        parse_maps(["model=a:team=b"])
    cols, routes = parse_maps(["ts=timestamp", "model=m:workload=w"])
    assert cols == {"timestamp": "ts"} and routes[0].model == "m" and routes[0].workload == "w"


# --- bad usage files: exit 2, the file, the row or column, the fix ------------------------------


HEADER = "timestamp,model,tenant,prompt_tokens,completion_tokens\n"
GOOD = "2026-07-06T10:00:00Z,chat,a,100,20\n"


@pytest.mark.parametrize("name,content,expect", [
    ("missing.csv", "timestamp,model,prompt_tokens\n2026-07-06T10:00:00Z,chat,100\n",
     ["missing.csv: no completion_tokens column", "--map COLUMN=completion_tokens"]),
    ("badtime.csv", HEADER + GOOD + "yesterday at noon,chat,a,100,20\n",
     ["badtime.csv:3: row 2: timestamp 'yesterday at noon' is not a timestamp", "ISO 8601"]),
    ("negative.csv", HEADER + GOOD + GOOD + "2026-07-06T11:00:00Z,chat,a,100,-5\n",
     ["negative.csv:4: row 3: completion_tokens '-5' is negative", "token counts are ≥ 0"]),
    ("text.csv", HEADER + "2026-07-06T11:00:00Z,chat,a,lots,5\n",
     ["text.csv:2: row 1: prompt_tokens 'lots' is not a number"]),
    ("ragged.csv", HEADER + GOOD + "2026-07-06T11:00:00Z,chat,a,1,2,3\n" + GOOD,
     ["ragged.csv:3: the row does not have the header's 5 columns"]),
    ("wide.csv", HEADER + "2026-07-06T11:00:00Z,chat,a,1,2,3\n",  # its only row longer than the header
     ["wide.csv:2: the row does not have the header's 5 columns"]),
    ("empty.csv", "", ["empty.csv: the file is empty"]),
    ("header.csv", HEADER, ["header.csv: has no events"]),
    ("bad.jsonl", '{"timestamp": "2026-07-06T10:00:00Z", "model": "chat", "prompt_tokens": 1, "completion_tokens": 2}\n'
                  '{"timestamp": 17, "model": "chat", "prompt_tokens": 1, "completion_tokens": 2}\n',
     ["bad.jsonl:2: row 2: timestamp '17' is outside 2000–2100"]),
    ("usage.xlsx", "x", ["unknown usage file type '.xlsx'"]),
    # DuckDB counts a malformed JSON line one past it: the line is read from the file
    ("broken.jsonl", '{"timestamp": "2026-07-06T10:00:00Z", "model": "chat", "prompt_tokens": 1, "completion_tokens": 2}\n'
                     'BROKEN\n'
                     '{"timestamp": "2026-07-06T10:00:00Z", "model": "chat", "prompt_tokens": 1, "completion_tokens": 2}\n',
     ["broken.jsonl:2: cannot read the usage log: Malformed JSON", "; fix that line"]),
    ("notjson.jsonl", "not json at all\n", ["notjson.jsonl:1: cannot read the usage log"]),
    # absurd token counts: refused by row, not on the calibrated plan's tokens or context_tokens
    ("huge.csv", HEADER + GOOD + "2026-07-06T11:00:00Z,chat,a,100,1e300\n",
     ["huge.csv:3: row 2: completion_tokens '1e300' takes the request (prompt + completion) past 100,000,000 tokens",
      "check the column holds each request's own tokens"]),
    ("hugeint.csv", HEADER + "2026-07-06T11:00:00Z,chat,a," + "9" * 40 + ",5\n" + GOOD,
     ["hugeint.csv:2: row 1: prompt_tokens '" + "9" * 40 + "' is more than 100,000,000 tokens, for one request"]),
    ("int64.csv", HEADER + GOOD + "2026-07-06T11:00:00Z,chat,a,100,9000000000000000000\n",
     ["int64.csv:3: row 2: completion_tokens '9000000000000000000' takes the request"]),
    ("sum.csv", HEADER + GOOD + "2026-07-06T11:00:00Z,chat,a,60000000,60000000\n",
     ["sum.csv:3: row 2: completion_tokens '60000000' takes the request (prompt + completion) past 100,000,000"]),
    ("huge.jsonl", '{"timestamp": "2026-07-06T10:00:00Z", "model": "chat", "prompt_tokens": 1, "completion_tokens": 2}\n'
                   '{"timestamp": "2026-07-06T10:05:00Z", "model": "chat", "prompt_tokens": 1e300, '
                   '"completion_tokens": 2}\n',
     ["huge.jsonl:2: row 2: prompt_tokens '1e+300' is more than 100,000,000 tokens"]),
    ("bigint.jsonl", '{"timestamp": "2026-07-06T10:00:00Z", "model": "chat", "prompt_tokens": '
                     + "9" * 40 + ', "completion_tokens": 2}\n',
     ["bigint.jsonl:1: row 1: prompt_tokens '" + "9" * 40 + "' is more than 100,000,000 tokens"]),
    # a column read twice: which one is meant?
    ("dupcol.csv", "timestamp,model,tenant,prompt_tokens,completion_tokens,completion_tokens\n"
                   "2026-07-06T10:00:00Z,chat,a,100,20,3528\n",
     ["dupcol.csv:1: the header has column completion_tokens twice (columns 5 and 6): which one holds "
      "completion_tokens? — rename or remove one of them"]),
    ("dupcol2.csv", "timestamp,model,Prompt_Tokens,completion_tokens,prompt_tokens\n2026-07-06T10:00:00Z,chat,100,20,5\n",
     ["dupcol2.csv:1: the header has column prompt_tokens twice (columns 3 and 5)"]),
])
def test_bad_usage_files_exit_2(tmp_path, name, content, expect):
    log = tmp_path / name
    log.write_text(content)
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    for e in expect:
        assert e in text, text
    assert "Traceback" not in r.output
    assert not out.exists() and not out.with_suffix(".html").exists()


def test_not_utf8_exits_2(tmp_path):
    log = tmp_path / "u16.csv"
    log.write_bytes((HEADER + GOOD).encode("utf-16"))
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 2
    assert "u16.csv:1: the file is not UTF-8 text — save or export it as UTF-8" in " ".join(r.output.split())


def test_a_column_repeated_that_is_not_read_is_fine(tmp_path):
    log = tmp_path / "u.csv"
    log.write_text("timestamp,model,note,prompt_tokens,completion_tokens,note\n"
                   + "".join(f"2026-07-06T{h:02d}:10:00Z,chat,x,100,50,y\n" for h in range(24)))
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("bad", ["nope,chat,a,1,1", "2026-07-06T10:30:00Z,chat,a,100,1e300"],
                         ids=["bad-timestamp", "huge-token-count"])
def test_max_bad_rows_leaves_a_few_out(tmp_path, bad):
    log = tmp_path / "u.csv"
    log.write_text(HEADER + GOOD * 3 + bad + "\n")
    r = invoke("calibrate", PLAN, "--usage", log, "--max-bad-rows", "1", "--allow-partial", "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    assert "1 bad rows left out" in r.output
    assert load_plan(tmp_path / "o.yaml").plan.workloads[0].tokens.output == 20


# --- load tests -------------------------------------------------------------------------------


def test_reads_vllm_genai_perf_and_aiperf_files():
    (v,) = read_runs(BENCH / "vllm-chat-h100-fp8-tp2-c48.json", "v.json", 99)
    assert (v.tool, v.output_tokens_per_s, v.ttft_ms, v.tpot_ms) == ("vllm bench serve", 1534.2, 905.0, 47.9)
    assert v.metadata["accelerator"] == "h100-sxm" and v.load == "concurrency 48"
    (g,) = read_runs(BENCH / "qwen3-32b-c64_genai_perf.json", "g.json", 99)
    assert (g.tool, g.model, g.output_tokens_per_s, g.ttft_ms, g.tpot_ms) == ("GenAI-Perf", "qwen3-32b", 1760.4, 688.1, 34.9)
    assert g.load == "concurrency 64"
    (a,) = read_runs(BENCH / "profile_export_aiperf.json", "a.json", 95)
    assert (a.tool, a.model, a.output_tokens_per_s, a.ttft_ms, a.tpot_ms) == ("AIPerf", "llama-3.1-70b", 3296.0, 1190.6, 53.3)
    assert a.load == "concurrency 128"


def test_best_run_within_the_slo_becomes_the_measured_point(tmp_path):
    out = tmp_path / "o.yaml"
    r = invoke("calibrate", PLAN, *[x for f in sorted(BENCH.glob("vllm-*.json")) for x in ("--bench", f)],
               "--bench", BENCH / "qwen3-32b-c64_genai_perf.json", "--accelerator", "h100-sxm", "--precision", "fp8",
               "-o", out)
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "misses the SLO" in text and "used" in text
    cal = calibrate(PLAN, CalibrateOptions(bench=tuple(sorted(BENCH.glob("vllm-*.json")))), tmp_path / "x.yaml")
    verdicts = {v.run.where: v for v in cal.verdicts}
    c96 = verdicts["vllm-chat-h100-fp8-tp2-c96.json"]
    assert not c96.meets_slo and not c96.used
    assert c96.reasons == ["p99 TTFT 2,381 ms > 1000 ms target", "p99 TPOT 71.3 ms > 50 ms target"]
    assert verdicts["vllm-chat-h100-fp8-tp2-c32.json"].meets_slo and not verdicts["vllm-chat-h100-fp8-tp2-c32.json"].used
    assert verdicts["vllm-chat-h100-fp8-tp2-c48.json"].used
    plan = load_plan(out).plan
    chat = plan.workloads[0].measured
    assert len(chat) == 1 and chat[0].goodput_output_tokens_per_s == 1534
    assert "c48.json" in chat[0].source and "p99" in chat[0].source
    code = plan.workloads[1].measured
    assert {(m.accelerator, m.precision, m.tp, m.goodput_output_tokens_per_s) for m in code} == {
        ("h100-sxm", "fp8", 1, 900), ("h100-sxm", "fp8", 1, 1760)} or code[-1].goodput_output_tokens_per_s == 1760


def test_load_test_without_metadata_or_slo_percentile_exits_2(tmp_path):
    r = invoke("calibrate", PLAN, "--bench", BENCH / "profile_export_aiperf.json", "-o", tmp_path / "o.yaml")
    assert r.exit_code == 2
    assert "does not say its accelerator and precision" in r.output
    r = invoke("calibrate", PLAN, "--bench", BENCH / "vllm-chat-h100-fp8-tp2-c32.json", "--percentile", "99.9",
               "-o", tmp_path / "o.yaml")
    assert r.exit_code == 2
    assert "no p99.9 TTFT/TPOT" in r.output and "--metric-percentiles 99.9" in " ".join(r.output.split())


def test_aiperf_run_that_misses_the_slo_is_listed_not_used(tmp_path):
    out = tmp_path / "o.yaml"
    r = invoke("calibrate", PLAN, "--bench", BENCH / "profile_export_aiperf.json", "--accelerator", "h100-sxm",
               "--precision", "fp8", "--tp", "2", "-o", out)
    assert r.exit_code == 0, r.output
    assert "misses the SLO" in r.output
    assert load_plan(out).plan.workloads[0].measured[0].goodput_output_tokens_per_s == 1400


# --- occupancy --------------------------------------------------------------------------------


def test_serving_replicas_inverts_the_headroom():
    assert serving_replicas(15, 1, 0.25) == 11
    assert serving_replicas(2, 1, 0.25) == 0
    assert serving_replicas(7, 0, 0.0) == 7


def test_occupancy_flags_hours_above_the_policy():
    from optimizer.calibrate.types import WorkloadCalibration

    wc = WorkloadCalibration("chat", "interactive")
    d = dt.date(2026, 7, 6)  # a Monday
    wc.rates = {(d, 10): 4200.0, (d, 11): 9000.0, (d, 12): 0.0}
    reps = [15] * 24
    result = SimpleNamespace(policy={"occupancy": 0.6, "spares": 1, "rollout_fraction": 0.25}, workloads=[
        SimpleNamespace(name="chat", kind="interactive", goodput_output_tokens_per_s=1000.0,
                        hourly_replicas={"weekday": reps, "weekend": reps},
                        hourly_api_tokens_per_s={"weekday": [0.0] * 24})])
    (rep,) = occupancy(result, [wc], lambda day: "weekday", 0.6)
    assert rep.hours == 3
    assert [(h.hour, round(h.occupancy, 3)) for h in rep.above] == [(11, 0.818)]
    assert rep.highest.serving_replicas == 11


def test_result_gives_occupancy_table(logs, tmp_path):
    from optimizer.pipeline import solve_plan
    from optimizer.results.jsonio import dumps

    # A plan sized for the log (calibrated, then solved with tiny goodputs) and the same log against it.
    text = PLAN.read_text()
    for old, new in (("goodput_output_tokens_per_s: 1400", "goodput_output_tokens_per_s: 0.9"),
                     ("goodput_output_tokens_per_s: 900", "goodput_output_tokens_per_s: 0.5")):
        text = text.replace(old, new)
    small = tmp_path / "plan.yaml"
    small.write_text(text)
    cal_out = tmp_path / "cal.yaml"
    r = invoke("calibrate", small, "--usage", logs.files["openai-csv"], "-o", cal_out)
    assert r.exit_code == 0, r.output
    res = tmp_path / "result.json"
    res.write_text(dumps(solve_plan(cal_out)))
    r = invoke("calibrate", small, "--usage", logs.files["openai-csv"], "--result", res, "-o", tmp_path / "again.yaml")
    assert r.exit_code == 0, r.output
    assert "Occupancy against" in r.output
    html = (tmp_path / "again.html").read_text()
    assert "Occupancy against" in html
    # the result of another plan (its workloads renamed) has no occupancy to give: a note says why
    other = tmp_path / "other.json"
    data = json.loads(res.read_text())
    for w in data["workloads"]:
        w["name"] = "other-" + w["name"]
    data["plan"] = "another plan"
    other.write_text(json.dumps(data))
    r = invoke("calibrate", small, "--usage", logs.files["openai-csv"], "--result", other, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "Occupancy against" not in r.output
    assert "no occupancy to show — it has none of this plan's workloads (it is the result of 'another plan')" in said


def test_tenant_shares_from_the_log_feed_the_showback(logs, tmp_path):
    """calibrate writes each workload's tenant shares (the log's tenant column) into the plan; the plan
    validates, and the showback splits the workload's spend by them (rows still add up to all-in)."""
    from optimizer.inputs.loading import load_plan

    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", logs.files["openai-csv"], "-o", out)
    assert r.exit_code == 0, r.output
    loaded = load_plan(out)
    chat = next(w for w in loaded.plan.workloads if w.name == "chat")
    assert chat.tenants and sum(chat.tenants.values()) == pytest.approx(1.0, abs=1e-9)
    for tenant, share in logs.truth.tenant_shares["chat"].items():
        assert chat.tenants[tenant] == pytest.approx(share, abs=0.05)
    from optimizer.pipeline import SolveOptions, solve_plan

    r = solve_plan(loaded, SolveOptions(time_limit_s=NO_TIME_LIMIT, mip_gap=0.05, alternatives=0))
    rows = r.showback_by_team()
    assert {t for t in logs.truth.tenant_shares["chat"]} <= {x["team"] for x in rows}
    assert sum(x["all_in"] for x in rows) == pytest.approx(r.cost_all_in, rel=1e-9)
    cost_chat = r.workload("chat").cost
    for tenant, share in chat.tenants.items():
        mine = [x for x in rows if x["team"] == tenant]
        assert any(f"chat ({share:.0%})" in x["workloads"] for x in mine)
    assert cost_chat > 0


def _vllm_run(**change) -> str:
    doc = json.loads((BENCH / "vllm-chat-h100-fp8-tp2-c48.json").read_text())
    doc.update(change)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


def _genai_run(metric: str, key: str, value) -> str:
    doc = json.loads((BENCH / "qwen3-32b-c64_genai_perf.json").read_text())
    if key:
        doc[metric][key] = value
    else:
        doc[metric] = value
    return json.dumps(doc)


def _aiperf_run(path: str, value) -> str:
    """The AIPerf sample with `value` at a dotted `path`, placed (h100-sxm fp8 tp2) so only `path` can be wrong."""
    doc = json.loads((BENCH / "profile_export_aiperf.json").read_text())
    doc["metadata"] = {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2}
    *up, last = path.split(".")
    holder = doc
    for k in up:
        holder = holder[k]
    holder[last] = value
    return json.dumps(doc)


def _no_ttft() -> str:
    doc = json.loads(_vllm_run())
    return json.dumps({k: v for k, v in doc.items() if not k.endswith("_ttft_ms")})


@pytest.mark.parametrize("name,content,expect", [
    ("empty.json", "", "empty.json: the file is empty"),
    ("none.json", "[]", "none.json: has no runs (an empty JSON list)"),
    ("broken.json", '{"output_throughput": 1', "broken.json:1: not JSON"),
    ("lines.jsonl", '{"output_throughput": 1}\n{oops\n', "lines.jsonl:2: not JSON"),
    ("scalar.json", "[1, 2]", "scalar.json: run 1 is not a JSON object"),
    ("other.json", '{"foo": 1}', "other.json: not a vllm bench serve, GenAI-Perf or AIPerf result"),
    ("no-tpot.json", None, "no TPOT in the file — rerun with --percentile-metrics ttft,tpot,itl"),
    # numbers that are not numbers: a traceback, or "missing" / "rerun with --metric-percentiles 99" before
    ("bigint.json", _vllm_run(output_throughput=10 ** 400),
     "bigint.json: output_throughput is a 401-digit number, too large to be a measurement"),
    ("completed-str.json", _vllm_run(completed="640"),
     "completed-str.json: completed is '640', not a number — give the JSON that --save-result wrote"),
    ("completed-obj.json", _vllm_run(completed={"n": 1}), "completed-obj.json: completed is an object, not a number"),
    ("thr-nan.json", _vllm_run(output_throughput=float("nan")), "thr-nan.json: output_throughput is NaN, not a finite"),
    ("thr-inf.json", _vllm_run(output_throughput=float("inf")), "output_throughput is Infinity, not a finite number"),
    ("thr-str.json", _vllm_run(output_throughput="fast"), "thr-str.json: output_throughput is 'fast', not a number"),
    ("ttft-nan.json", _vllm_run(p99_ttft_ms=float("nan")), "ttft-nan.json: p99_ttft_ms is NaN, not a finite number"),
    ("tpot-inf.json", _vllm_run(p99_tpot_ms=float("-inf")), "p99_tpot_ms is -Infinity, not a finite number"),
    ("tpot-null.json", _vllm_run().replace('"p99_tpot_ms": 47.9', '"p99_tpot_ms": null'),
     "tpot-null.json: p99_tpot_ms is null, not a number — rerun the load test"),
    ("tpot-bool.json", _vllm_run(p99_tpot_ms=True), "p99_tpot_ms is true, not a number"),
    ("ttft-list.json", _vllm_run(p99_ttft_ms=[905.0]), "p99_ttft_ms is a list, not a number"),
    ("g-itl-null.json", _genai_run("inter_token_latency", "p99", None),
     "g-itl-null.json: inter_token_latency.p99 is null, not a number"),
    ("g-ttft-inf.json", _genai_run("time_to_first_token", "p99", float("inf")),
     "g-ttft-inf.json: time_to_first_token.p99 is Infinity, not a finite number"),
    ("g-itl-obj-null.json", _genai_run("inter_token_latency", None, None),
     "inter_token_latency is null, not the tool's statistics"),
    ("no-ttft.json", _no_ttft(), "no-ttft.json: no TTFT in the file — rerun with --percentile-metrics ttft,tpot,itl"),
    # out of range: refused naming the load test, not the calibrated plan it would have written
    ("ttft-neg.json", _vllm_run(p99_ttft_ms=-5), "ttft-neg.json: p99_ttft_ms is -5, negative — a latency is ≥ 0 ms"),
    ("thr-neg.json", _vllm_run(output_throughput=-1534.2),
     "thr-neg.json: output_throughput is -1534.2, negative — a throughput is ≥ 0 tokens/s"),
    ("thr-zero.json", _vllm_run(output_throughput=0), "thr-zero.json: output_throughput is 0: the run served no"),
    ("thr-huge.json", _vllm_run(output_throughput=1e308),
     "thr-huge.json: output_throughput is 1e+308 tokens/s, beyond the 1e+09 planopt takes"),
    ("g-thr-neg.json", _genai_run("output_token_throughput", "avg", -3),
     "g-thr-neg.json: output_token_throughput.avg is -3, negative"),
    # what the file says, read strictly
    ("utf16.json", _vllm_run().encode("utf-16"),
     "utf16.json:1: the file is not UTF-8 text (it is UTF-16) — save or export it as UTF-8"),
    ("latin1.json", _vllm_run().replace("Llama-3.1-70B-Instruct", "Llama-3.1-70B-Café").encode("latin-1"),
     "latin1.json:1: the file is not UTF-8 text — save or export it as UTF-8"),
    ("dupkey.json", _vllm_run()[:-1] + ', "output_throughput": 99999}',
     "dupkey.json: key 'output_throughput' appears twice in one JSON object"),
    ("dupkey.jsonl", _vllm_run() + "\n" + _vllm_run()[:-1] + ', "completed": 1}\n',
     "dupkey.jsonl:2: key 'completed' appears twice in one JSON object"),
    ("tp-float.json", _vllm_run(tp=2.5), "tp-float.json: tp '2.5' is not a whole number — give GPUs per replica"),
    ("maxconc.json", _vllm_run(max_concurrency="lots"),
     "maxconc.json: max_concurrency is 'lots', not a whole number of requests"),
    # GenAI-Perf/AIPerf load: shown as "concurrency -4", or left out without a word, before
    ("a-conc-neg.json", _aiperf_run("input_config.loadgen.concurrency", -4),
     "a-conc-neg.json: input_config.loadgen.concurrency is -4, not a whole number of requests — give the JSON the "
     "tool wrote for the run"),
    ("a-conc-half.json", _aiperf_run("input_config.loadgen.concurrency", 2.5),
     "input_config.loadgen.concurrency is 2.5, not a whole number of requests"),
    ("g-conc-str.json", _genai_run("input_config", "concurrency", "x"),
     "g-conc-str.json: input_config.concurrency is 'x', not a whole number of requests"),
    ("g-conc-nan.json", _genai_run("input_config", "concurrency", float("nan")),
     "input_config.concurrency is NaN, not a whole number of requests"),
    ("g-rate-neg.json", _genai_run("input_config", "request_rate", -8),
     "g-rate-neg.json: input_config.request_rate is -8, not a rate of requests per second"),
    ("g-rate-str.json", _genai_run("input_config", "request_rate", "8/s"),
     "input_config.request_rate is '8/s', not a rate of requests per second"),
    # a unit of time planopt does not know had been read as ms
    ("a-ttft-unit.json", _aiperf_run("time_to_first_token.unit", "ticks"),
     "a-ttft-unit.json: time_to_first_token.unit is 'ticks', not a unit of time planopt reads (ms, us, ns or s)"),
    ("a-itl-unit-null.json", _aiperf_run("inter_token_latency.unit", None),
     "inter_token_latency.unit is null, not a unit of time planopt reads"),
    # numbers written as text had been read as numbers
    ("thr-text.json", _vllm_run(output_throughput="1534.2"),
     "thr-text.json: output_throughput is '1534.2', a number written as text — write it as a number (1534.2, "
     "without quotes)"),
    ("ttft-text.json", _vllm_run(p99_ttft_ms="905"), "ttft-text.json: p99_ttft_ms is '905', a number written as text"),
    ("g-thr-text.json", _genai_run("output_token_throughput", "avg", "1234.5"),
     "g-thr-text.json: output_token_throughput.avg is '1234.5', a number written as text — write it as a number"),
    ("g-ttft-text.json", _genai_run("time_to_first_token", "p99", "80"),
     "g-ttft-text.json: time_to_first_token.p99 is '80', a number written as text — write it as a number (80,"),
    ("g-ttft-avg-text.json", _genai_run("time_to_first_token", "avg", "80"),  # not read at p99, but edited
     "g-ttft-avg-text.json: time_to_first_token.avg is '80', a number written as text — write it as a number"),
    ("a-itl-text.json", _aiperf_run("inter_token_latency.p99", " 57.9 "),
     "a-itl-text.json: inter_token_latency.p99 is ' 57.9 ', a number written as text"),
    # a latency no server achieves: the unit is wrong (ms numbers said to be ns had been read as 0.0017 ms)
    ("a-ttft-ns.json", _aiperf_run("time_to_first_token.unit", "ns"),
     "a-ttft-ns.json: time_to_first_token.p99 is 1650.7 ns (0.0017 ms), an implausible TTFT: no server answers in "
     "under 0.1 ms — time_to_first_token.unit 'ns' is likely wrong (read as ms, 1650.7 would be a plausible TTFT); "
     "set time_to_first_token.unit to the unit the tool measured in"),
    ("a-itl-us.json", _aiperf_run("inter_token_latency.unit", "us"),
     "a-itl-us.json: inter_token_latency.p99 is 57.9 us (0.058 ms), an implausible TPOT"),
    ("ttft-tiny.json", _vllm_run(p99_ttft_ms=0.05),
     "ttft-tiny.json: p99_ttft_ms is 0.05 ms, an implausible TTFT: no server answers in under 0.1 ms — the value is "
     "likely in another unit"),
    ("tpot-tiny.json", _vllm_run(p99_tpot_ms=0.0479), "p99_tpot_ms is 0.0479 ms, an implausible TPOT"),
])
def test_bad_load_tests_exit_2(tmp_path, name, content, expect):
    bench = tmp_path / name
    if content is None:  # a vllm run saved without TPOT percentiles
        content = _vllm_run(**{k: None for k in ("mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms")})
    if isinstance(content, bytes):
        bench.write_bytes(content)
    else:
        bench.write_text(content)
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--bench", bench, "-o", out)
    assert r.exit_code == 2, r.output
    assert expect in " ".join(r.output.split()), r.output
    assert "Traceback" not in r.output and not out.exists() and not out.with_suffix(".html").exists()


def test_a_directory_given_as_a_load_test_is_refused(tmp_path):
    """--bench DIR had failed with IsADirectoryError; --usage, --result and --carry already said so."""
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--bench", tmp_path, "-o", out)
    assert r.exit_code == 2, r.output
    assert f"{tmp_path}: is a directory" in r.output and "give the load test's summary JSON file" in r.output
    assert "Traceback" not in r.output and not out.exists()


def test_aiperf_latencies_are_read_in_the_unit_the_file_gives(tmp_path):
    """AIPerf writes each metric's unit: ns, us and s are converted to ms (1,650.7 ns is 0.0016507 ms)."""
    doc = json.loads((BENCH / "profile_export_aiperf.json").read_text())
    for unit, scale in (("ns", 1e6), ("us", 1e3), ("s", 1e-3), ("ms", 1.0)):
        for metric in ("time_to_first_token", "inter_token_latency"):
            doc[metric] = {k: (v * scale if k.startswith("p") else v) for k, v in doc[metric].items()}
            doc[metric]["unit"] = unit
        f = tmp_path / f"{unit}.json"
        f.write_text(json.dumps(doc))
        (run,) = read_runs(f, f.name, 99)
        assert (run.ttft_ms, run.tpot_ms) == pytest.approx((1650.7, 57.9)), unit
        for metric in ("time_to_first_token", "inter_token_latency"):
            doc[metric] = {k: (v / scale if k.startswith("p") else v) for k, v in doc[metric].items()}
    doc["time_to_first_token"]["unit"] = "ns"  # the ms numbers said to be ns: implausible, refused (a_ttft_ns)
    f.write_text(json.dumps(doc))
    (run,) = read_runs(f, f.name, 99)
    assert run.ttft_ms is None and "time_to_first_token.unit 'ns' is likely wrong" in run.problem
    zero = json.loads(_vllm_run(p99_tpot_ms=0))  # every completion one token long: vLLM writes TPOT 0, kept
    f.write_text(json.dumps(zero))
    (run,) = read_runs(f, f.name, 99)
    assert run.problem is None and run.tpot_ms == 0


def test_a_run_with_many_failed_requests_is_not_used(tmp_path):
    """More than 5% of the requests failed: the numbers are of the survivors, so the run is listed, not used."""
    bench = tmp_path / "failed.json"
    bench.write_text(_vllm_run(completed=20))
    out = tmp_path / "o.yaml"
    r = invoke("calibrate", PLAN, "--bench", bench, "-o", out)
    assert r.exit_code == 0, r.output
    assert "not used: 620 of 640" in r.output
    (v,) = calibrate(PLAN, CalibrateOptions(bench=(bench,)), tmp_path / "x.yaml").verdicts
    assert not v.used and v.reasons == ["620 of 640 requests failed (97%; more than 5% failed, so its numbers are "
                                        "of the requests that survived)"]
    assert load_plan(out).plan.workloads[0].measured[0].goodput_output_tokens_per_s == 1400  # the plan's, kept
    few = tmp_path / "few.json"  # 2 of 640 failed: normal, used
    few.write_text(_vllm_run(completed=638))
    r = invoke("calibrate", PLAN, "--bench", few, "-o", out)
    assert r.exit_code == 0 and "requests failed" not in r.output and "│ used" in r.output, r.output
    doc = json.loads((BENCH / "profile_export_aiperf.json").read_text())
    doc["error_summary"] = [{"error_details": {"code": 500, "type": "InternalServerError"}, "count": 2400}]
    aiperf = tmp_path / "aiperf.json"
    aiperf.write_text(json.dumps(doc))
    cal = calibrate(PLAN, CalibrateOptions(bench=(aiperf,), flags=Flags("h100-sxm", "fp8", 2)), tmp_path / "x.yaml")
    (v,) = cal.verdicts
    assert not v.used and v.reasons == ["2,400 of 4,872 requests failed (49%; more than 5% failed, so its numbers are "
                                        "of the requests that survived)"]


def test_a_run_with_other_request_lengths_is_noted(tmp_path):
    bench = tmp_path / "tiny.json"
    bench.write_text(_vllm_run(total_input_tokens=64000, total_output_tokens=6400))
    r = invoke("calibrate", PLAN, "--bench", bench, "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert ("tiny.json (concurrency 48): its requests are not chat's (prompts 100 tokens vs the workload's 1,800; "
            "completions 10 tokens vs the workload's 350, mean per request)") in said
    r = invoke("calibrate", PLAN, "--bench", BENCH / "vllm-chat-h100-fp8-tp2-c48.json", "-o", tmp_path / "o.yaml")
    assert r.exit_code == 0 and "its requests are not" not in " ".join(r.output.split())


def test_a_flow_mapping_the_plan_spread_over_lines_is_written_over_lines_again():
    """The round trip writes a flow mapping on one line (an offer or contract written `{…}` over three lines came
    back as one of 200 characters): it is wrapped at its own commas under its first item, and reads the same;
    quotes and nested mappings are not split, a mapping that fits is left alone."""
    from optimizer.calibrate.rewrite import WIDTH, _tidy

    text = ("offers:\n  - {id: cw-h100, accelerator: h100-sxm, provider: coreweave, gpus_per_node: 8, "
            "price_per_gpu_hour: {on-demand: 6.16, reserved-1y: 4.62, spot: 2.46}, "
            "available_gpus: {reserved-1y: 64, on-demand: 32}}  # caps\n"
            "commitments:\n  - {offer: cw-h100, tier: reserved-1y, gpus: 32, start: 2026-06-01, end: 2027-05-31, "
            "price_per_gpu_hour: 4.40, notes: 'signed, at last: {late}'}\n"
            "policy: {occupancy: 0.6, spares: 1}\n")
    out = _tidy(text)
    assert YAML(typ="safe").load(out) == YAML(typ="safe").load(text)
    lines = out.splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[2] == "     price_per_gpu_hour: {on-demand: 6.16, reserved-1y: 4.62, spot: 2.46},"
    assert lines[3].endswith("}}  # caps") and "policy: {occupancy: 0.6, spares: 1}" in lines


def test_a_load_test_names_its_workload_by_the_served_models_repository(tmp_path):
    """vllm bench serve records model_id as the Hugging Face repository (meta-llama/Llama-3.1-70B-Instruct):
    with no workload in its metadata it goes to the one workload of the catalog's llama-3.1-70b (it had asked
    "which workload?"); a repository of another size names none."""
    from optimizer.calibrate.loadtests import same_model

    doc = json.loads((BENCH / "vllm-chat-h100-fp8-tp2-c48.json").read_text(encoding="utf-8"))
    del doc["workload"]
    assert doc["model_id"] == "meta-llama/Llama-3.1-70B-Instruct"
    bench = tmp_path / "run.json"
    bench.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--bench", bench, "--precision", "fp8", "--tp", "2", "-o", out)
    assert r.exit_code == 0, r.output
    chat = next(w for w in load_plan(out).plan.workloads if w.name == "chat")
    assert chat.measured[0].goodput_output_tokens_per_s != 1400
    assert same_model("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b")
    assert not same_model("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-70b")
