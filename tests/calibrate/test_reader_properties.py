"""Usage-log and load-test readers on random bad bytes and rows: a PlanError (exit 2) or a reading, never a
traceback. HYPOTHESIS_PROFILE=thorough runs 2,000 examples per property instead of 200."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.bad_input_rule import CORPUS, reader_settings

from optimizer.calibrate.loadtests import Flags, judge, read_runs  # noqa: E402
from optimizer.calibrate.usage import aggregate, workloads_for  # noqa: E402
from optimizer.errors import PlanError  # noqa: E402
from optimizer.inputs.loading import load_plan  # noqa: E402

PLAN = CORPUS.parent / "calibrate" / "plan.yaml"
LOADED = load_plan(PLAN)
MATCHER = workloads_for(LOADED.plan)
SETTINGS = reader_settings()

TIMES = st.one_of(
    st.datetimes(min_value=__import__("datetime").datetime(1990, 1, 1),
                 max_value=__import__("datetime").datetime(2110, 1, 1)).map(lambda d: d.isoformat() + "Z"),
    st.dates().map(str),
    st.integers(min_value=-10**16, max_value=10**16).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
    st.just(""),
)
COUNTS = st.one_of(st.integers(min_value=-10**20, max_value=10**20).map(str), st.floats().map(repr),
                   st.text(max_size=6), st.just(""))
MODELS = st.sampled_from(["llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen3-32B", "chat",
                          "code-assistant", "research", "mystery", "", "llama-3.1-8b"])
ROWS = st.lists(st.tuples(TIMES, MODELS, COUNTS, COUNTS), min_size=0, max_size=25)


def _csv_field(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\n\r') else v


def _read(path: Path, allow_clock_steps: bool = False) -> None:
    try:
        aggregate([path], MATCHER, allow_clock_steps=allow_clock_steps)
    except PlanError:
        pass


@SETTINGS
@given(rows=ROWS, steps=st.booleans(), as_json=st.booleans())
def test_usage_rows_never_give_a_traceback(rows, steps, as_json):
    with tempfile.TemporaryDirectory() as d:
        if as_json:
            path = Path(d) / "usage.jsonl"
            path.write_text("".join(json.dumps(dict(zip(("timestamp", "model", "prompt_tokens", "completion_tokens"),
                                                        r))) + "\n" for r in rows), encoding="utf-8")
        else:
            path = Path(d) / "usage.csv"
            path.write_text("timestamp,model,prompt_tokens,completion_tokens\n"
                            + "".join(",".join(_csv_field(v) for v in r) + "\n" for r in rows), encoding="utf-8")
        _read(path, steps)


@SETTINGS
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".csv", ".jsonl", ".json", ".parquet", ".csv.gz"]))
def test_usage_bytes_never_give_a_traceback(data, suffix):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"usage{suffix}"
        path.write_bytes(b"timestamp,model,prompt_tokens,completion_tokens\n" + data if suffix == ".csv" else data)
        _read(path)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
KEYS = st.sampled_from(["output_throughput", "completed", "num_prompts", "p99_ttft_ms", "p99_tpot_ms", "model_id",
                        "max_concurrency", "request_rate", "accelerator", "precision", "tp", "workload",
                        "output_token_throughput", "time_to_first_token", "inter_token_latency", "input_config",
                        "aiperf_version", "was_cancelled", "metadata", "total_output_tokens"])
RUNS = st.dictionaries(KEYS, JSON, max_size=12)
GOOD = json.loads((CORPUS.parent / "loadtests" / "vllm-chat-h100-fp8-tp2-c32.json").read_text())


def _judge(path: Path, flags: Flags) -> None:
    try:
        runs = read_runs(path, str(path), 99.0)
        judge(runs, LOADED.plan, LOADED.catalog, flags)
    except PlanError:
        pass


@SETTINGS
@given(run=RUNS, edits=st.dictionaries(KEYS, JSON, max_size=4), workload=st.sampled_from([None, "chat", "nope"]))
def test_load_tests_never_give_a_traceback(run, edits, workload):
    with tempfile.TemporaryDirectory() as d:
        for i, doc in enumerate((run, {**GOOD, **edits}, [run, {**GOOD, **edits}])):
            path = Path(d) / f"bench{i}.json"
            path.write_text(json.dumps(doc), encoding="utf-8")
            _judge(path, Flags("h100-sxm", "fp8", 2, workload))


@SETTINGS
@given(data=st.binary(max_size=400))
def test_load_test_bytes_never_give_a_traceback(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.json"
        path.write_bytes(data)
        _judge(path, Flags())
