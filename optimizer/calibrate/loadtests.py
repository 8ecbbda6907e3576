"""Load-test results (vllm bench serve, GenAI-Perf, AIPerf) → measured goodput at a workload's SLO.

A run counts as a measurement only if its TTFT and TPOT at the chosen percentile meet the
workload's targets; the best such run per (workload, accelerator, precision, TP) becomes the
workload's `measured` point. Runs that miss are kept, with the reason, for the report.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.calibrate.names import same_model
from optimizer.errors import PlanError, Problem, did_you_mean
from optimizer.inputs.schema.plan import MAX_LAYOUT_GPUS, MAX_TOKENS_PER_S
from optimizer.vocab import PRECISION_ALIASES, PRECISION_IDS

MAX_FILE_BYTES = 50_000_000

PRECISION_NAMES = {
    **PRECISION_ALIASES, "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "auto": "bf16",
    "fp8_e4m3": "fp8", "fp8-dynamic": "fp8", "w8a8": "int8", "int8": "int8", "awq_marlin": "int4-awq",
}
UNIT_TO_MS = {"ms": 1.0, "millisecond": 1.0, "milliseconds": 1.0, "ns": 1e-6, "us": 1e-3, "µs": 1e-3,
              "s": 1000.0, "sec": 1000.0, "second": 1000.0, "seconds": 1000.0}


@dataclass(frozen=True)
class Run:
    """One load-test run, reduced to what planopt needs."""

    file: str
    index: int
    """Position of the run in its file (files may hold several), 0-based."""
    tool: str
    model: str | None
    output_tokens_per_s: float
    ttft_ms: float | None
    """At the chosen percentile."""
    tpot_ms: float | None
    percentile: float
    load: str
    """What drove the run: 'concurrency 64', 'rate 8/s', … (for the report)."""
    metadata: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    """Why this run cannot be judged (no percentile, cancelled, no requests, most requests failed); with
    ` — fix` it is an input error."""
    tokens: tuple[float, float] | None = None
    """Mean prompt and completion tokens per request, when the file says."""

    @property
    def where(self) -> str:
        return Path(self.file).name + (f" #{self.index + 1}" if self.index else "")

    @property
    def label(self) -> str:
        where = f"{Path(self.file).name}" + (f"#{self.index + 1}" if self.index else "")
        return f"{self.tool} {where} ({self.load})" if self.load else f"{self.tool} {where}"


@dataclass(frozen=True)
class Verdict:
    run: Run
    workload: str | None
    accelerator: str | None
    precision: str | None
    tp: int | None
    meets_slo: bool
    reasons: list[str]
    """Why the run misses the SLO or cannot be used; empty when it is usable."""
    used: bool = False
    notes: tuple[str, ...] = ()
    """What the report should say about the run (its prompts far from the workload's, …)."""
    engine: str | None = None
    """The serving engine the file names (`--metadata engine=…`), as a catalog engine id."""


@dataclass(frozen=True)
class Point:
    workload: str
    accelerator: str
    precision: str
    tp: int
    goodput_output_tokens_per_s: float
    source: str
    engine: str | None = None
    """The serving engine the run names, carried onto the measured point."""
    tpot_ms: float | None = None
    """The TPOT the run achieved (at its percentile): the measured point's memory check counts the
    sequences in flight at it (Little's law) rather than at the target."""
    ttft_ms: float | None = None
    """The TTFT the run achieved (at its percentile)."""


@dataclass(frozen=True)
class Flags:
    accelerator: str | None = None
    precision: str | None = None
    tp: int | None = None
    workload: str | None = None
    engine: str | None = None
    deployment: str | None = None
    """The Deployment the runs were made against (`planopt deploy`'s name): its workload and config."""


# --- reading -------------------------------------------------------------------------------------


def read_runs(path: Path, shown: str, percentile: float) -> list[Run]:
    """Every run in one file: a JSON object, a JSON list of objects, or JSON Lines (--append-result)."""
    path = Path(path)
    if not path.exists():
        raise PlanError(Problem("load-test file not found", "check the path", file=shown))
    if path.is_dir():
        raise PlanError(Problem("is a directory", "give the load test's summary JSON file (one per --bench)",
                                file=shown))
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PlanError(Problem(f"load-test file is over {MAX_FILE_BYTES // 1_000_000} MB",
                                "save the summary JSON (without per-request detail)", file=shown))
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig").strip()
    except UnicodeDecodeError as exc:
        utf16 = " (it is UTF-16)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise PlanError(Problem(f"the file is not UTF-8 text{utf16}", "save or export it as UTF-8",
                                file=shown, line=raw[:exc.start].count(b"\n") + 1)) from None
    if not text:
        raise PlanError(Problem("the file is empty", "give a vllm bench serve, GenAI-Perf or AIPerf JSON", file=shown))
    depth = _nesting(text)
    if depth > MAX_DEPTH:
        raise PlanError(Problem(f"JSON nested {depth:,} levels deep, deeper than the {MAX_DEPTH} a load-test "
                                "summary could need", "give the tool's JSON output file", file=shown))
    docs: list[Any]
    line_no = None
    try:
        try:
            data = _loads(text)
            docs = data if isinstance(data, list) else [data]
        except _DuplicateKey:
            raise
        except ValueError as exc:  # JSONDecodeError, or a number too long for Python to read
            docs = []
            for i, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                line_no = i
                try:
                    docs.append(_loads(line))
                except _DuplicateKey:
                    raise
                except ValueError:
                    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
                    at = (exc.lineno if isinstance(exc, json.JSONDecodeError) else None) if i == 1 else i
                    raise PlanError(Problem(f"not JSON: {msg}", "give the tool's JSON output file",
                                            file=shown, line=at)) from None
            line_no = None
    except _DuplicateKey as dup:
        raise PlanError(Problem(f"key '{dup.key}' appears twice in one JSON object (which one is the run's?)",
                                "the load-test tools write each key once: keep the right one, or rerun and give "
                                "the file the tool wrote", file=shown, line=line_no)) from None
    if not docs:  # `[]`: a list of no runs
        raise PlanError(Problem("has no runs (an empty JSON list)",
                                "give a vllm bench serve, GenAI-Perf or AIPerf JSON with at least one run", file=shown))
    runs = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise PlanError(Problem(f"run {i + 1} is not a JSON object", "give the tool's JSON output file",
                                    file=shown))
        runs.append(parse_run(doc, shown, i, percentile))
    return runs


MAX_DEPTH = 200
"""JSON nested deeper than this is no tool's summary (theirs nest a few levels), and would exhaust the parser."""


def _nesting(text: str) -> int:
    """How deep the JSON's arrays and objects nest (brackets inside strings aside)."""
    import re

    import numpy as np

    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text).encode("utf-8", "replace")
    b = np.frombuffer(bare, dtype=np.uint8)
    step = ((b == 91) | (b == 123)).astype(np.int64) - ((b == 93) | (b == 125)).astype(np.int64)
    return int(np.cumsum(step).max()) if len(step) else 0


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json.loads would keep the last without a word)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_object, parse_constant=float)


def parse_run(doc: dict[str, Any], shown: str, index: int, percentile: float) -> Run:
    """Recognise the tool by its field names and read throughput, TTFT and TPOT at `percentile`."""
    p = _pword(percentile)
    if "output_throughput" in doc or any(k.endswith(("_ttft_ms", "_tpot_ms")) for k in doc):
        return _vllm(doc, shown, index, percentile, p)
    if isinstance(doc.get("output_token_throughput"), dict) and isinstance(doc.get("time_to_first_token"), dict):
        tool = "AIPerf" if ("aiperf_version" in doc or "schema_version" in doc or "benchmark_id" in doc) else "GenAI-Perf"
        return _genai(doc, shown, index, percentile, p, tool)
    raise PlanError(Problem(
        "not a vllm bench serve, GenAI-Perf or AIPerf result (no output_throughput / output_token_throughput)",
        "give `vllm bench serve --save-result` JSON, GenAI-Perf *_genai_perf.json or AIPerf profile_export_aiperf.json",
        file=shown))


MAX_FAILED_SHARE = 0.05
"""A run with more than this share of its requests failed is not used. Its throughput and latency
percentiles are those of the requests that survived: a server shedding load (timeouts, 5xx, out of
memory) looks fast on the few it answered, so the run overstates what the config serves at that load.
A stray failure or two (client timeouts in the tail) is normal; one request in 20 is not."""

TOKENS_OFF_BY = 2.0
"""A run whose mean prompt or completion length is more than this factor away from the workload's
`tokens` measured another workload (goodput depends strongly on both): it is used, with a note."""


def _pword(percentile: float) -> str:
    return str(int(percentile)) if float(percentile).is_integer() else f"{percentile:g}"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


class _Bad(Exception):
    """A field present but unusable; the message reads `what — fix`."""


def _shown(v: Any) -> str:
    """A JSON value as a message quotes it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v[:40] + ("…" if len(v) > 40 else ""))
    if isinstance(v, int):
        return f"a {int(v.bit_length() * 0.30103) + 1}-digit number" if abs(v) >= 10 ** 15 else str(v)
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else f"{v:g}"
    return "a list" if isinstance(v, list) else "an object" if isinstance(v, dict) else type(v).__name__


def _number(v: Any, name: str, fix: str) -> float:
    """A finite JSON number; `_Bad` for anything else. A number written as text ("1234.5") is refused too: the
    tools write their measurements as numbers, so text there means the file was edited or made by something
    else, and planopt does not guess what it meant."""
    if isinstance(v, str):
        x = _num(v)
        if x is not None:
            raise _Bad(f"{name} is {_shown(v)}, a number written as text — write it as a number ({x:g}, without "
                       f"quotes), or {fix}")
        raise _Bad(f"{name} is {_shown(v)}, not a number — {fix}")
    x = _num(v)
    if x is None:
        if isinstance(v, int) and not isinstance(v, bool):
            raise _Bad(f"{name} is {_shown(v)}, too large to be a measurement — {fix}")
        raise _Bad(f"{name} is {_shown(v)}, not a {'finite number' if isinstance(v, float) else 'number'} — {fix}")
    return x


def _count(doc: dict[str, Any], key: str, fix: str) -> int | None:
    """A count of requests (a whole number ≥ 0, written as a JSON number), or None when the file has none."""
    if key not in doc or doc[key] is None:
        return None
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(f"{key} is {_shown(v)}, not a number — {fix}")
    if not math.isfinite(v) or v < 0 or not float(v).is_integer() or v > 10 ** 15:
        raise _Bad(f"{key} is {_shown(v)}, not a count of requests (a whole number ≥ 0) — {fix}")
    return int(v)


def _throughput(x: float, name: str, fix: str) -> float:
    if x < 0:
        raise _Bad(f"{name} is {x:g}, negative — a throughput is ≥ 0 tokens/s; {fix}")
    if x == 0:
        raise _Bad(f"{name} is 0: the run served no output tokens — give the file of a run that served requests")
    if x > MAX_TOKENS_PER_S:
        raise _Bad(f"{name} is {x:g} tokens/s, beyond the {MAX_TOKENS_PER_S:g} planopt takes — no server runs that "
                   f"fast; {fix}")
    return x


MIN_LATENCY_MS = 0.1
"""A TTFT or TPOT below this (after conversion to ms) is not a measurement of an LLM server: no engine returns
a first token, or the next one, in under 0.1 ms. A value that small comes from a unit that is wrong (ms numbers
said to be ns, …), so the run is refused rather than read as a server 1,000,000 times faster than any. A TPOT
of exactly 0 is what vLLM writes when every completion was one token long, and is kept."""


def _latency(x: float, name: str, fix: str, what: str, unit: tuple[str, str, float] | None = None) -> float:
    """A latency in ms ≥ 0 (`what`: 'TTFT' or 'TPOT'); `_Bad` when negative or implausibly small (see
    MIN_LATENCY_MS). `unit` is (its key, the unit the file gives, factor to ms) when the file says the unit."""
    if x < 0:
        raise _Bad(f"{name} is {x:g}, negative — a latency is ≥ 0 ms; {fix}")
    if x < MIN_LATENCY_MS and not (what == "TPOT" and x == 0):
        if unit is None:
            raise _Bad(f"{name} is {x:g} ms, an implausible {what}: no server answers in under {MIN_LATENCY_MS:g} ms "
                       f"— the value is likely in another unit (seconds?); {fix}")
        key, said, to_ms = unit
        raw = x / to_ms
        as_ms = f" (read as ms, {raw:g} would be a plausible {what})" if raw >= MIN_LATENCY_MS else ""
        raise _Bad(f"{name} is {raw:g} {said} ({x:.2g} ms), an implausible {what}: no server answers in under "
                   f"{MIN_LATENCY_MS:g} ms — {key} '{said}' is likely wrong{as_ms}; set {key} to the unit the "
                   f"tool measured in, or {fix}")
    return x


def _failed(failed: int | None, total: int | None) -> str | None:
    """'620 of 640 requests failed (97%; …)' when more than MAX_FAILED_SHARE failed, else None."""
    if failed is None or not total or failed <= 0 or failed / total <= MAX_FAILED_SHARE:
        return None
    return (f"{failed:,} of {total:,} requests failed ({failed / total:.0%}; more than {MAX_FAILED_SHARE:.0%} "
            "failed, so its numbers are of the requests that survived)")


def _meta(doc: dict[str, Any]) -> dict[str, str]:
    """--metadata k=v pairs (vLLM writes them at the top level) and a `metadata` object, if any."""
    keys = ("accelerator", "gpu", "gpu_type", "hardware", "precision", "quantization", "dtype", "tp",
            "tensor_parallel_size", "tensor_parallel", "workload", "engine", "deployment")
    out = {}
    nested = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    for src in (doc, nested):
        for k in keys:
            v = src.get(k)
            if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip():
                out[k] = str(v).strip()
    return out


def _vllm(doc: dict[str, Any], shown: str, index: int, percentile: float, p: str) -> Run:
    fix = "give the JSON that --save-result wrote"
    thr, ttft, tpot, tokens = 0.0, None, None, None
    problem = None
    load = []
    try:
        if "output_throughput" not in doc:
            raise _Bad(f"output_throughput is missing — {fix}")
        thr = _number(doc["output_throughput"], "output_throughput", fix)
        done = _count(doc, "completed", fix)
        prompts = _count(doc, "num_prompts", fix)
        lat = {}
        for m, name in (("ttft", "TTFT"), ("tpot", "TPOT")):
            key = f"p{p}_{m}_ms"
            if key in doc:
                lat[m] = _latency(_number(doc[key], key, f"rerun the load test; a p{p} latency is a number of ms"),
                                  key, "rerun the load test and give the JSON that --save-result wrote", name)
        conc = doc.get("max_concurrency")
        if conc not in (None, "None"):
            load.append(f"concurrency {_concurrency(conc, 'max_concurrency', fix)}")
        rate = doc.get("request_rate")
        if rate not in (None, "inf", float("inf")):
            _rate(rate, "request_rate", fix)
            load.append(f"rate {rate}/s")
        ttft, tpot = lat.get("ttft"), lat.get("tpot")
        if done == 0:
            problem = "no request completed"
        else:
            _throughput(thr, "output_throughput", fix)
            if not any(k.endswith("_ttft_ms") for k in doc):
                raise _Bad("no TTFT in the file — rerun with --percentile-metrics ttft,tpot,itl")
            if not any(k.endswith("_tpot_ms") for k in doc):
                raise _Bad("no TPOT in the file — rerun with --percentile-metrics ttft,tpot,itl")
            if ttft is None or tpot is None:
                have = sorted({k[:-len("_ttft_ms")] for k in doc if k.startswith("p") and k.endswith("_ttft_ms")}
                              & {k[:-len("_tpot_ms")] for k in doc if k.startswith("p") and k.endswith("_tpot_ms")})
                raise _Bad(f"no p{p} TTFT/TPOT in the file (it has {', '.join(have) or 'none'}) — rerun with "
                           f"--metric-percentiles {p}, or pass --percentile")
            problem = _failed(prompts - done if prompts is not None and done is not None else None, prompts)
            if done:
                tin, tout = _num(doc.get("total_input_tokens")), _num(doc.get("total_output_tokens"))
                if tin is not None and tout is not None and tin >= 0 and tout > 0:
                    tokens = (tin / done, tout / done)
    except _Bad as bad:
        problem = str(bad)
    return Run(shown, index, "vllm bench serve", _str(doc.get("model_id")), thr, ttft, tpot, percentile,
               ", ".join(load), _meta(doc), problem, tokens)


def _stat(doc: dict[str, Any], metric: str, key: str) -> float | None:
    """`metric.key` in ms (times) or as written; None when the file does not have it; `_Bad` when it is not a
    number."""
    block = doc.get(metric)
    if not isinstance(block, dict):
        return None
    for k, x in block.items():  # a statistic written as text, even one not read here: the file was edited
        if k != "unit" and isinstance(x, str) and _num(x) is not None:
            _number(x, f"{metric}.{k}", "give the tool's summary JSON of a finished run")
    if key not in block:
        return None
    v = _number(block[key], f"{metric}.{key}", "give the tool's summary JSON of a finished run")
    if metric in ("time_to_first_token", "inter_token_latency", "time_per_output_token"):
        unit = block.get("unit", "ms")
        to_ms = UNIT_TO_MS.get(unit.strip().lower()) if isinstance(unit, str) else None
        if to_ms is None:
            raise _Bad(f"{metric}.unit is {_shown(unit)}, not a unit of time planopt reads (ms, us, ns or s) — give "
                       "the tool's summary JSON of a finished run")
        return _latency(v * to_ms, f"{metric}.{key}", "give the tool's summary JSON of a finished run",
                        "TTFT" if metric == "time_to_first_token" else "TPOT", (f"{metric}.unit", unit.strip(), to_ms))
    return v


def _genai(doc: dict[str, Any], shown: str, index: int, percentile: float, p: str, tool: str) -> Run:
    thr, ttft, tpot, tokens = 0.0, None, None, None
    problem = None
    try:
        got = _stat(doc, "output_token_throughput", "avg")
        if got is None:
            raise _Bad("output_token_throughput.avg is missing — give the tool's summary JSON")
        thr = got
        if doc.get("was_cancelled") is not True:
            _throughput(got, "output_token_throughput.avg", "give the tool's summary JSON")
        tpot_metric = next((m for m in ("inter_token_latency", "time_per_output_token")
                            if isinstance(doc.get(m), dict)), None)
        ttft = _stat(doc, "time_to_first_token", f"p{p}")
        tpot = _stat(doc, tpot_metric, f"p{p}") if tpot_metric else None
        if doc.get("was_cancelled") is True:
            problem = "the run was cancelled"
        elif tpot_metric is None:
            given = next((m for m in ("inter_token_latency", "time_per_output_token") if m in doc), None)
            if given is not None:
                raise _Bad(f"{given} is {_shown(doc[given])}, not the tool's statistics (an object with avg, p50, "
                           f"p99, …) — give the tool's summary JSON of a finished run")
            raise _Bad("no inter_token_latency in the file — profile with streaming on, so the tool measures it")
        elif ttft is None or tpot is None:
            have = sorted(k for k in doc["time_to_first_token"] if k.startswith("p") and k in doc[tpot_metric])
            raise _Bad(f"no p{p} for time_to_first_token/{tpot_metric} (the file has {', '.join(have) or 'none'})"
                       " — pass --percentile with one of those")
        else:
            problem = _failed(*_aiperf_failures(doc))
            tin = _num((doc.get("input_sequence_length") or {}).get("avg")) if isinstance(
                doc.get("input_sequence_length"), dict) else None
            tout = _num((doc.get("output_sequence_length") or {}).get("avg")) if isinstance(
                doc.get("output_sequence_length"), dict) else None
            if tin is not None and tout is not None and tin >= 0 and tout > 0:
                tokens = (tin, tout)
    except _Bad as bad:
        problem = str(bad)
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    model = _model_of(cfg)
    load: list[str] = []
    try:
        load = _genai_load(cfg)
    except _Bad as bad:
        if not (problem and " — " in problem):  # an input error already found is said first
            problem = str(bad)
    meta = _meta(doc)
    for k, v in _meta(cfg).items():
        meta.setdefault(k, v)
    return Run(shown, index, tool, model, thr, ttft, tpot, percentile, ", ".join(load), meta, problem, tokens)


def _aiperf_failures(doc: dict[str, Any]) -> tuple[int | None, int | None]:
    """(failed, all requests) from AIPerf's error_request_count (or error_summary counts) and request_count
    (the valid requests); (None, None) when the file does not say."""
    def avg(key: str) -> float | None:
        block = doc.get(key)
        return _num(block.get("avg")) if isinstance(block, dict) else None

    valid = avg("request_count")
    failed = avg("error_request_count")
    if failed is None and isinstance(doc.get("error_summary"), list):
        counts = [_num(e.get("count")) for e in doc["error_summary"] if isinstance(e, dict)]
        failed = sum(c for c in counts if c is not None and c > 0) if counts else None
    if valid is None or failed is None or valid < 0 or failed < 0:
        return None, None
    return int(failed), int(valid + failed)


def _model_of(cfg: dict[str, Any]) -> str | None:
    for path in (("model",), ("model_names",), ("endpoint", "model_names"), ("models", "items")):
        v: Any = cfg
        for part in path:
            v = v.get(part) if isinstance(v, dict) else None
        if isinstance(v, list) and v:
            v = v[0]
        if isinstance(v, dict):
            v = v.get("name")
        if isinstance(v, str) and v:
            return v
    return None


def _genai_load(cfg: dict[str, Any]) -> list[str]:
    """What drove a GenAI-Perf/AIPerf run, from its input_config: 'concurrency 64', 'rate 8/s'. A concurrency or
    request rate that is not set (absent, null, 0) is not shown; one that is not a positive number (a whole one for
    concurrency) is `_Bad`, as for vLLM's max_concurrency."""
    fix = "give the JSON the tool wrote for the run"
    load = []
    found = _find(cfg, "concurrency")
    if found is not None and found[1] != 0:
        load.append(f"concurrency {_concurrency(found[1], found[0], fix, numbers_only=True)}")
    found = _find(cfg, "request_rate")
    if found is not None and found[1] != 0:
        load.append(f"rate {_rate(found[1], found[0], fix, numbers_only=True):g}/s")
    return load


def _as_number(v: Any, numbers_only: bool) -> float | None:
    """A finite number (written as text too, unless `numbers_only`: a JSON number only), else None."""
    if isinstance(v, bool) or numbers_only and not isinstance(v, (int, float)):
        return None
    return _num(v)


def _concurrency(v: Any, name: str, fix: str, numbers_only: bool = False) -> int:
    """A run's concurrency: a whole number of requests ≥ 1; `_Bad` for anything else."""
    c = _as_number(v, numbers_only)
    if c is None or c < 1 or not c.is_integer() or c > 10 ** 15:
        raise _Bad(f"{name} is {_shown(v)}, not a whole number of requests — {fix}")
    return int(c)


def _rate(v: Any, name: str, fix: str, numbers_only: bool = False) -> float:
    """A run's request rate: requests per second > 0; `_Bad` for anything else."""
    r = _as_number(v, numbers_only)
    if r is None or r <= 0:
        raise _Bad(f"{name} is {_shown(v)}, not a rate of requests per second — {fix}")
    return r


def _find(d: Any, key: str, where: str = "input_config", depth: int = 0) -> tuple[str, Any] | None:
    """(dotted path, value) of the first `key` set (not null) in input_config, searching nested objects; an
    object under `key` is searched too."""
    if not isinstance(d, dict) or depth > 4:
        return None
    if key in d and d[key] is not None and not isinstance(d[key], dict):
        return f"{where}.{key}", d[key]
    for k, v in d.items():
        found = _find(v, key, f"{where}.{k}", depth + 1)
        if found is not None:
            return found
    return None


def _deployed(name: str | None, deployments: dict[str, dict[str, str]] | None, errors: list[str]) -> dict[str, str]:
    """The deployment's facts (workload, accelerator, precision, tp, engine; empty ones left out), or {} when the run
    names none or one that cannot be read (then a reason in errors)."""
    if not name:
        return {}
    if deployments is None:
        errors.append(f"the run is against deployment {name}, but no manifests were given — pass --manifests DIR "
                      "(the folder `planopt deploy -o DIR` wrote)")
        return {}
    d = deployments.get(name)
    if d is None:
        guess = did_you_mean(name, list(deployments))
        errors.append(f"no deployment named {name} in the manifests — " + (f"did you mean '{guess}'?" if guess else
                                                                         f"deployments: {', '.join(sorted(deployments))}"))
        return {}
    return {k: v for k, v in d.items() if v}


def _str(v: Any) -> str | None:
    return str(v) if isinstance(v, str) and v else None


# --- judging -------------------------------------------------------------------------------------


def judge(runs: list[Run], plan, catalog, flags: Flags, routes=(),
          deployments: dict[str, dict[str, str]] | None = None) -> tuple[list[Verdict], list[Point]]:
    """Each run against its workload's SLO; the best passing run per config becomes a measured Point.

    A run planopt cannot place (which workload, accelerator, precision, TP) is an input error,
    raised for all runs at once; a run that misses the SLO is only listed. A run that served another
    model than its workload's is an input error too, unless a route (`--map model=SERVED:workload=W`)
    says the run measures W. A run against a deployment `planopt deploy` wrote (`--deployment NAME`, or a
    `deployment` in its metadata) takes its workload and config from that deployment's labels (`deployments`:
    calibrate.deployments.read_deployments); what the run records itself comes first.
    """
    mapped = {(r.model, r.workload) for r in routes if r.model is not None and r.tenant is None}
    workloads = {w.name: w for w in plan.workloads}
    by_model: dict[str, list[str]] = {}
    for w in plan.workloads:
        if w.model:
            by_model.setdefault(w.model, []).append(w.name)
    verdicts = []
    problems: list[Problem] = []
    for run in runs:
        errors: list[str] = []
        meta = run.metadata
        dep = _deployed(meta.get("deployment") or flags.deployment, deployments, errors)
        wname = meta.get("workload") or dep.get("workload") or flags.workload
        if wname is None and run.model is not None:
            named = [m for m in by_model if same_model(run.model, m)]  # meta-llama/Llama-3.3-70B-Instruct
            if run.model in workloads:
                wname = run.model
            elif len(by_model.get(run.model, [])) == 1:
                wname = by_model[run.model][0]
            elif len(named) == 1 and len(by_model[named[0]]) == 1:
                wname = by_model[named[0]][0]
        if wname is None:
            errors.append(f"which workload? the run's model is {run.model or 'not named'} — "
                          "pass --workload NAME or record --metadata workload=NAME")
        elif wname not in workloads:
            guess = did_you_mean(wname, list(workloads))
            errors.append(f"unknown workload '{wname}' — " + (f"did you mean '{guess}'?" if guess else
                                                              f"workloads: {', '.join(workloads)}"))
            wname = None
        missing = []
        acc_v = meta.get("accelerator") or meta.get("gpu") or meta.get("gpu_type") or meta.get("hardware") \
            or dep.get("accelerator") or flags.accelerator
        prec_v = meta.get("precision") or meta.get("quantization") or meta.get("dtype") or dep.get("precision") \
            or flags.precision
        if acc_v is None:
            missing.append("accelerator")
        if prec_v is None:
            missing.append("precision")
        if missing:
            errors.append(f"the file does not say its {' and '.join(missing)} — pass "
                          + " ".join(f"--{m} …" for m in missing)
                          + " or record them with --metadata " + " ".join(f"{m}=…" for m in missing))
        acc = _accelerator(acc_v, catalog, errors) if acc_v is not None else None
        prec = _precision(prec_v, errors) if prec_v is not None else None
        tp = _tp(meta.get("tp") or meta.get("tensor_parallel_size") or meta.get("tensor_parallel")
                 or dep.get("tp") or (str(flags.tp) if flags.tp is not None else None), errors)
        w = workloads.get(wname) if wname else None
        engine = _engine(meta.get("engine") or dep.get("engine") or flags.engine, plan, catalog, w, errors)
        if w is not None and prec is not None and prec not in w.precisions:
            errors.append(f"measured at {prec}, which {w.name} does not accept ({', '.join(w.precisions)}) — "
                          f"add {prec} to its precisions or leave this run out")
        if w is not None and w.reserve_gpus is not None:
            errors.append(f"{w.name} is a reserve_gpus workload; it has no goodput to measure — leave this run out")
        elif w is not None and run.model is not None and w.model is not None and not same_model(run.model, w.model) \
                and (run.model, w.name) not in mapped:
            errors.append(f"the run served {run.model}, but {w.name} serves {w.model}: its goodput is another "
                          f"model's — give a load test of {w.model}, or if {run.model} is {w.model} under another "
                          f"name, say so: --map model={run.model}:workload={w.name}")
        if run.problem and " — " in run.problem:
            errors.append(run.problem)
        if errors:
            for e in errors:
                msg, _, fix = e.partition(" — ")
                problems.append(Problem(f"{_where(run)}{msg}", fix or None, file=run.file))
            continue
        reasons = [run.problem] if run.problem else _misses(run, w)
        verdicts.append(Verdict(run, wname, acc, prec, tp, not reasons, reasons,
                                notes=() if reasons else _token_notes(run, w), engine=engine))
    if problems:
        raise PlanError(problems)
    best: dict[tuple[str, str, str, int, str], int] = {}
    for i, v in enumerate(verdicts):
        if v.reasons:
            continue
        key = (v.workload, v.accelerator, v.precision, v.tp, v.engine or "")
        j = best.get(key)  # type: ignore[arg-type]
        if j is None or v.run.output_tokens_per_s > verdicts[j].run.output_tokens_per_s:
            best[key] = i  # type: ignore[index]
    points = []
    for key, i in sorted(best.items()):
        v = verdicts[i]
        verdicts[i] = Verdict(v.run, v.workload, v.accelerator, v.precision, v.tp, True, [], used=True, notes=v.notes,
                              engine=v.engine)
        points.append(Point(key[0], key[1], key[2], key[3], v.run.output_tokens_per_s, _source(v.run, workloads[key[0]]),
                            v.engine, v.run.tpot_ms, v.run.ttft_ms))
    return verdicts, points


def _where(run: Run) -> str:
    return f"run {run.index + 1}: " if run.index else ""


def _token_notes(run: Run, w) -> tuple[str, ...]:
    """A note when a usable run's mean prompt or completion length is more than TOKENS_OFF_BY from the workload's
    (a run not used needs none)."""
    if run.tokens is None or run.problem or w.tokens is None:
        return ()
    off = [f"{what} {got:,.0f} tokens vs the workload's {want:,.0f}"
           for what, got, want in (("prompts", run.tokens[0], w.tokens.input),
                                   ("completions", run.tokens[1], w.tokens.output))
           if got > 0 and want > 0 and max(got / want, want / got) > TOKENS_OFF_BY]
    if not off and run.tokens[0] == 0 < w.tokens.input:
        off = [f"prompts 0 tokens vs the workload's {w.tokens.input:,.0f}"]
    if not off:
        return ()
    return (f"{run.label}: its requests are not {w.name}'s ({'; '.join(off)}, mean per request): goodput "
            f"depends on both, so the measured point may be far off — rerun the load test with prompts of about "
            f"{w.tokens.input:,.0f} and completions of about {w.tokens.output:,.0f} tokens",)


def _misses(run: Run, w) -> list[str]:
    p = _pword(run.percentile)
    out = []
    if w.slo.ttft_ms is not None and run.ttft_ms is not None and run.ttft_ms > w.slo.ttft_ms:
        out.append(f"p{p} TTFT {run.ttft_ms:,.0f} ms > {w.slo.ttft_ms:g} ms target")
    if w.slo.tpot_ms is not None and run.tpot_ms is not None and run.tpot_ms > w.slo.tpot_ms:
        out.append(f"p{p} TPOT {run.tpot_ms:,.1f} ms > {w.slo.tpot_ms:g} ms target")
    return out


def _source(run: Run, w) -> str:
    p = _pword(run.percentile)
    parts = []
    if run.ttft_ms is not None:
        parts.append(f"TTFT {run.ttft_ms:,.0f}" + (f"/{w.slo.ttft_ms:g}" if w.slo.ttft_ms else "") + " ms")
    if run.tpot_ms is not None:
        parts.append(f"TPOT {run.tpot_ms:,.1f}" + (f"/{w.slo.tpot_ms:g}" if w.slo.tpot_ms else "") + " ms")
    return f"{run.label}; p{p} " + ", ".join(parts)


def _accelerator(value: str, catalog, reasons: list[str]) -> str | None:
    v = value.strip()
    known = catalog.accelerators
    if v in known:
        return v
    low = v.lower().replace("_", "-").replace(" ", "-")
    if low in known:
        return low
    by_name = [a.id for a in known.values() if (a.name or "").lower() == v.lower()]
    if len(by_name) == 1:
        return by_name[0]
    guess = did_you_mean(low, list(known))
    reasons.append(f"unknown accelerator '{v}' — " + (f"did you mean '{guess}'?" if guess else
                                                       "use a catalog id (planopt catalog accelerators)"))
    return None


def _engine(value: str | None, plan, catalog, w, reasons: list[str]) -> str | None:
    """The catalog engine id a run names (an alias too: 'TensorRT-LLM' → 'trtllm'); None when it names none. An
    engine the catalog does not know, or one the workload or policy.engines does not allow, is a reason."""
    if value is None:
        return None
    engine = catalog.engine_id(value)
    if engine is None:
        reasons.append(f"unknown engine '{value}' — use one of {', '.join(catalog.engines) or 'the catalog engines'}")
        return None
    allowed = [w.engine] if w is not None and w.engine else plan.policy.engines
    if allowed and engine not in allowed:
        whose = f"{w.name} runs on {w.engine}" if w is not None and w.engine else \
            f"policy.engines is [{', '.join(allowed)}]"
        reasons.append(f"the run served {engine}, but {whose} — leave this run out, or allow {engine} in the plan")
        return None
    return engine


def _precision(value: str, reasons: list[str]) -> str | None:
    v = value.strip().lower()
    v = PRECISION_NAMES.get(v, v)
    if v not in PRECISION_IDS:
        reasons.append(f"unknown precision '{value}' — use one of {', '.join(PRECISION_IDS)}")
        return None
    return v


def _tp(value: str | None, reasons: list[str]) -> int | None:
    if value is None:
        return 1
    x = _num(value)
    if x is None or not x.is_integer():
        reasons.append(f"tp '{value}' is not a whole number — give GPUs per replica, e.g. 2")
        return None
    tp = int(x)
    if tp < 1 or tp & (tp - 1) or tp > MAX_LAYOUT_GPUS:
        reasons.append(f"tp {tp} is not a degree planopt plans (powers of two up to {MAX_LAYOUT_GPUS}) — "
                       "use 1, 2, 4 or 8")
        return None
    return tp
