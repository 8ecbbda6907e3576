"""Usage logs and load tests as people write them (issue 47): Hugging Face names map to the workload serving
the model, clock steps are named unless allowed, a load test of another model is refused unless mapped, and
the burst metric tells a burst from Poisson noise."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from optimizer.calibrate.names import catalog_model, model_key, same_model
from optimizer.calibrate.types import Burst
from optimizer.calibrate.usage import Matcher, aggregate, poisson_peak_ratio
from optimizer.cli import app
from optimizer.report.calibration import burst_remark

DATA = Path(__file__).resolve().parents[1] / "data"
PLAN = DATA / "calibrate" / "plan.yaml"
BENCH = DATA / "loadtests"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def flat(text: str) -> str:
    return " ".join(text.split())


def day_log(path: Path, names: tuple[str, ...], days: int = 2) -> Path:
    """One request every 5 minutes per name, from Monday 2026-10-05 00:00 UTC."""
    lines = ["timestamp,model,prompt_tokens,completion_tokens"]
    t0 = dt.datetime(2026, 10, 5, tzinfo=dt.UTC)
    for k in range(days * 24 * 12):
        when = t0 + dt.timedelta(minutes=5 * k)
        lines += [f"{when:%Y-%m-%dT%H:%M:%SZ},{n},900,{300 + k % 24}" for n in names]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("served, model", [
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
    ("Qwen/Qwen3-32B", "qwen3-32b"),
    ("Qwen3-32B-AWQ", "qwen3-32b"),
    ("Llama-3.3-70B-Instruct-FP8", "llama-3.3-70b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
])
def test_served_names_name_the_catalog_model(served, model):
    assert same_model(served, model) and model_key(served) == model
    assert not same_model(served, "llama-3.1-70b") or model == "llama-3.1-70b"


def test_catalog_model_is_the_one_id_named():
    assert catalog_model("meta-llama/Llama-3.1-70B-Instruct", ["llama-3.1-8b", "llama-3.1-70b"]) == "llama-3.1-70b"
    assert catalog_model("mistralai/Mistral-Large-Instruct-2411", ["llama-3.1-70b"]) is None


def test_usage_with_hugging_face_names_goes_to_the_workloads_of_those_models(tmp_path):
    log = day_log(tmp_path / "hf.csv", ("meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen3-32B", "llama-3.1-70b-prod"))
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 0, r.output
    said = flat(r.output)
    assert "576 events for model 'meta-llama/Llama-3.1-70B-Instruct' read as llama-3.1-70b, the model of chat" in said
    assert "576 events for model 'Qwen/Qwen3-32B' read as qwen3-32b, the model of code-assistant" in said
    # a name that is no catalog model: the hint names the workload of the model it is a variant of
    assert "--map model=llama-3.1-70b-prod:workload=chat" in said


def test_a_map_hint_never_names_a_workload_of_another_model(tmp_path):
    log = day_log(tmp_path / "other.csv", ("llama-3.1-70b", "gpt-4o"))
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "out.yaml")
    assert r.exit_code == 0, r.output
    assert "--map model=gpt-4o:workload=NAME" in flat(r.output)


# --- clock steps ---------------------------------------------------------------------------------


def test_a_clock_step_is_named_and_refused_unless_allowed(tmp_path):
    log = day_log(tmp_path / "step.csv", ("llama-3.1-70b",))
    lines = log.read_text().splitlines()
    head, rows = lines[0], lines[1:]
    stepped = [r if i < 300 else (dt.datetime.fromisoformat(r.split(",")[0]) - dt.timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ") + r[r.index(","):] for i, r in enumerate(rows)]
    log.write_text("\n".join([head, *stepped]) + "\n")
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--usage", log, "-o", out)
    assert r.exit_code == 2 and not out.exists(), r.output
    assert f"{log}:302: rows 300 → 301 (llama-3.1-70b): the time steps back 55 min" in flat(r.output)
    r = invoke("calibrate", PLAN, "--usage", log, "--allow-clock-steps", "-o", out)
    assert r.exit_code == 0, r.output
    assert "1 clock step(s) back" in flat(r.output)


def test_a_log_sorted_by_model_is_no_clock_step(tmp_path):
    log = day_log(tmp_path / "a.csv", ("llama-3.1-70b",))
    other = day_log(tmp_path / "b.csv", ("qwen3-32b",)).read_text().splitlines()[1:]
    log.write_text(log.read_text() + "\n".join(other) + "\n")
    r = invoke("calibrate", PLAN, "--usage", log, "-o", tmp_path / "out.yaml")
    assert r.exit_code == 0, r.output


# --- load tests of another model -----------------------------------------------------------------


def test_a_load_test_of_another_model_counts_once_mapped(tmp_path):
    doc = json.loads((BENCH / "vllm-chat-h100-fp8-tp2-c32.json").read_text())
    doc["model_id"] = "meta-llama/Llama-3.1-8B-Instruct"
    bench = tmp_path / "run.json"
    bench.write_text(json.dumps(doc))
    out = tmp_path / "out.yaml"
    r = invoke("calibrate", PLAN, "--bench", bench, "-o", out)
    assert r.exit_code == 2 and "but chat serves llama-3.1-70b" in flat(r.output), r.output
    r = invoke("calibrate", PLAN, "--bench", bench, "--map", "model=meta-llama/Llama-3.1-8B-Instruct:workload=chat",
               "-o", out)
    assert r.exit_code == 0, r.output


# --- bursts --------------------------------------------------------------------------------------


def test_poisson_peak_ratio_is_the_quantile_over_the_mean():
    assert poisson_peak_ratio(1.0) == pytest.approx(6.0)  # P(N ≤ 5) = 0.99941 < 0.9999 ≤ P(N ≤ 6) = 0.99992
    assert poisson_peak_ratio(10.0) == pytest.approx(2.4)
    assert 1.0 < poisson_peak_ratio(5000.0) < 1.06
    assert poisson_peak_ratio(0.0) == 1.0


def _arrivals(path: Path, per_minute: float, seed: int, burst: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 7, 8, tzinfo=dt.UTC).timestamp()
    ts = t0 + rng.uniform(0, 86400, rng.poisson(per_minute * 1440))
    if burst:  # six minutes' worth of requests inside one minute of every hour
        ts = np.concatenate([ts] + [t0 + h * 3600 + 1800 + rng.uniform(0, 60, int(per_minute * 6)) for h in range(24)])
    ts = np.sort(ts)
    c = np.maximum(1, rng.gamma(4.0, 100.0, len(ts))).astype(int)
    rows = [f"{dt.datetime.fromtimestamp(t, dt.UTC):%Y-%m-%dT%H:%M:%S.%f}Z,llama-3.1-70b,500,{x}" for t, x in zip(ts, c)]
    path.write_text("timestamp,model,prompt_tokens,completion_tokens\n" + "\n".join(rows) + "\n")
    return path


MATCHER = Matcher(("chat",), {"llama-3.1-70b": ("chat",)}, tpot_s={"chat": 0.05})


@pytest.mark.parametrize("per_minute", [0.5, 2.0, 10.0])
def test_uniform_poisson_arrivals_give_no_warning(tmp_path, per_minute):
    for seed in range(2):
        agg = aggregate([_arrivals(tmp_path / f"p{seed}.csv", per_minute, seed)], MATCHER)
        hours, ratio = agg.burst["chat"]
        b = Burst(hours, ratio, 0.6, agg.burst_poisson["chat"])
        assert not b.beyond_noise, (per_minute, seed, ratio, b.poisson)
        assert "requests queue" not in burst_remark(b)


@pytest.mark.parametrize("per_minute", [2.0, 10.0])
def test_a_real_burst_still_warns(tmp_path, per_minute):
    agg = aggregate([_arrivals(tmp_path / "burst.csv", per_minute, 0, burst=True)], MATCHER)
    hours, ratio = agg.burst["chat"]
    b = Burst(hours, ratio, 0.6, agg.burst_poisson["chat"])
    assert b.beyond_noise and "requests queue" in burst_remark(b), (ratio, b.poisson)


def test_a_long_response_is_spread_over_the_minutes_it_runs(tmp_path):
    """One 2,400-token response a minute at :00 (120 s at 50 ms a token) and one of 100 at :30: spread, every
    minute carries about the same tokens; counted where they arrive, half the minutes would carry 24× the others."""
    rows = []
    for m in range(0, 24 * 60, 2):
        when = dt.datetime(2026, 7, 8, tzinfo=dt.UTC) + dt.timedelta(minutes=m)
        rows.append(f"{when:%Y-%m-%dT%H:%M:%SZ},llama-3.1-70b,500,2400")
    path = tmp_path / "long.csv"
    path.write_text("timestamp,model,prompt_tokens,completion_tokens\n" + "\n".join(rows) + "\n")
    spread = aggregate([path], MATCHER).burst["chat"][1]
    arrival = aggregate([path], Matcher(("chat",), {"llama-3.1-70b": ("chat",)})).burst["chat"][1]
    assert spread == pytest.approx(1.0, abs=0.02) and arrival == pytest.approx(2.0, abs=0.05)


def test_the_logs_latency_column_sets_the_generation_time(tmp_path):
    """The same responses with a latency_ms column of 120 s and no TPOT target to go by: spread by the log's own
    durations."""
    rows = []
    for m in range(0, 24 * 60, 2):
        when = dt.datetime(2026, 7, 8, tzinfo=dt.UTC) + dt.timedelta(minutes=m)
        rows.append(f"{when:%Y-%m-%dT%H:%M:%SZ},llama-3.1-70b,500,2400,120000")
    path = tmp_path / "latency.csv"
    path.write_text("timestamp,model,prompt_tokens,completion_tokens,latency_ms\n" + "\n".join(rows) + "\n")
    agg = aggregate([path], Matcher(("chat",), {"llama-3.1-70b": ("chat",)}))
    assert agg.files[0].columns["latency_ms"] == "latency_ms"
    assert agg.burst["chat"][1] == pytest.approx(1.0, abs=0.02)
