"""How far the goodput estimator is from published benchmarks.

    python benchmarks/estimator_accuracy.py [CSV ...] [--catalogs DIR] [--params YAML]
                                            [--markdown] [--rows] [--held-out DIR] [--nominal-concurrency]

Data (each row keeps its source; where each file comes from: benchmarks/data/README.md):
benchmarks/data/benchmarks.csv and benchmarks/data/published.csv (TensorRT-LLM perf overview
v0.14-v0.20, MLPerf Inference v4.0/v4.1, AMD Instinct results pages, OCI's MI300X blog, dstack's
DeepSeek-R1 and 405B runs, ROCm, LMSYS and TensorRT-LLM blogs). TensorRT-LLM 1.0 tables and MLPerf
v5.1 results are NOT used anywhere: they are kept aside to judge the estimator.

Every row is predicted with the planner's own physics (optimizer.physics: memory, layout, roofline),
with the engine's own memory accounting for the batch limit (what the engine really had; the
planner's `memory_reserve` is a planning margin, not what a benchmark ran with):

- offline         max-throughput rows: predicted output tokens/s per replica at the KV-limited batch;
- closed-batch    all requests submitted at once (dstack): B·O tokens over prefill + O decode steps, in waves;
- online-tpot     TPOT (mean) at a published load (TensorRT-LLM online rows) or concurrency (dstack);
- server-goodput  MLPerf Server: goodput at p99 TTFT ≤ 2 s and p99 TPOT ≤ 200 ms;
- batch-latency   end-to-end latency of a static batch (OCI, AMD).
Assumptions are stated where a source leaves something open (search "ASSUMPTION").
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from optimizer.inputs.catalog import load_estimator_params  # noqa: E402
from optimizer.inputs.schema.catalog import Accelerator, CatalogFile, Model, Precision  # noqa: E402
from optimizer.inputs.schema.estimator import EstimatorParams  # noqa: E402
from optimizer.physics import memory  # noqa: E402
from optimizer.physics.concurrency import at_concurrency  # noqa: E402
from optimizer.physics.layout import Layout, links  # noqa: E402
from optimizer.physics.roofline import estimate, group_dtype, roofline  # noqa: E402
from optimizer.physics.validation import model_class  # noqa: E402
from optimizer.resources import catalogs_dir  # noqa: E402

BENCHMARKS_CSV = REPO / "benchmarks" / "data" / "benchmarks.csv"
PUBLISHED_CSV = REPO / "benchmarks" / "data" / "published.csv"
DEFAULT_CSVS = (BENCHMARKS_CSV, PUBLISHED_CSV)

ACCELERATORS = {
    "H100 SXM 80GB": "h100-sxm", "H200 SXM 141GB": "h200-sxm", "GH200 96GB": "gh200", "GH200 144GB": "gh200-144gb",
    "L40S 48GB": "l40s", "A100 SXM 80GB": "a100-80gb", "B200 (preview)": "b200", "B200 180GB": "b200",
    "MI300X 192GB": "mi300x", "MI355X 288GB": "mi355x", "H100 NVL 94GB": "h100-nvl", "H100 PCIe 80GB": "h100-pcie",
}
MODELS = {
    "Llama 3.1 8B": "llama-3.1-8b", "Llama 3.1 70B": "llama-3.1-70b", "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.3 70B": "llama-3.3-70b", "Llama 4 Maverick": "llama-4-maverick", "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "mixtral-8x22b", "llama2-70b-99": "llama-2-70b", "llama2-70b-99.9": "llama-2-70b",
    "mixtral-8x7b": "mixtral-8x7b", "DeepSeek-R1": "deepseek-r1", "DeepSeek-R1-0528": "deepseek-r1",
    "Llama-3.1-8B-Instruct": "llama-3.1-8b",
}
PRECISIONS = {"fp8": "fp8", "bf16": "bf16", "fp16": "fp16", "nvfp4": "fp4", "fp4": "fp4", "mxfp4": "mxfp4"}

# ASSUMPTION: MLPerf gives only the maximum input (1024 tokens for llama2-70b's OpenOrca subset;
# nothing for mixtral's mix); half the maximum is taken as the mean input.
MLPERF_INPUT_TOKENS = 512
MLPERF_OUTPUT_TOKENS = {"llama-2-70b": 294, "mixtral-8x7b": 145}
# MLPerf Server latency bounds (loadgen mlperf.conf; both p99).
MLPERF_SLO = {"llama-2-70b": (2000.0, 200.0), "mixtral-8x7b": (2000.0, 200.0)}
VLLM_DEFAULT_MAX_NUM_SEQS = 256
# What the engines keep for the KV cache (their own accounting, not the planner's reserve):
#   TensorRT-LLM: kv_cache_free_gpu_mem_fraction (0.95 in the perf overview) of what is left after
#                 weights and the runtime; vLLM: gpu_memory_utilization (0.9) of the whole memory, less
#                 weights and activations; SGLang: mem_fraction_static (0.88).
ENGINE_MEMORY = {"trtllm": ("free", 0.95), "vllm": ("total", 0.90), "sglang": ("total", 0.88)}
ENGINE_RUNTIME_GB = 2.0
"""ASSUMPTION: activations, CUDA graphs and the CUDA context take about 2 GB per GPU in every engine."""
# A row is "memory-starved" when the engine's KV cache is below 10 GB per GPU: trtllm-bench itself warns
# that performance may be undesirable there (tensorrt_llm/bench/build/tuning.py); the batch limit, not the
# kernels, decides those rows.
STARVED_BELOW_GB_PER_GPU = 10.0

FAMILY = {"ampere": "ampere", "hopper": "hopper", "ada": "ada", "blackwell": "blackwell", "cdna3": "cdna3",
          "cdna4": "cdna4"}


@dataclass
class Case:
    row: str
    suite: str
    kind: str  # offline | closed-batch | online-tpot | server-goodput | batch-latency
    model: str
    accelerator: str
    precision: str
    layout: Layout | None  # None: chosen (MLPerf gives no TP)
    gpus: int
    isl: int
    osl: int
    load: str
    published: float  # per system for MLPerf (per replica after the TP choice); per replica otherwise
    engine: str = "trtllm"
    engine_fraction: float | None = None
    output_tok_s: float | None = None  # online-tpot: per-replica load
    batch: int | None = None  # closed-batch, batch-latency, online concurrency
    engine_max_batch: int | None = None
    notes: list[str] = field(default_factory=list)
    published_per_replica: float | None = None
    concurrency: int | None = None  # online-conc: requests kept in flight on the replica (nominal)
    held: float | None = None  # online-conc: the mean concurrency the run's harness measured (held_concurrency)
    kv_bytes: float | None = None  # the KV cache's bytes per element where the row states its own
    speculative: str = ""  # "mtp:3", "eagle:5,acc=0.7": speculative decoding on (not modelled here)
    prefix_cache: bool = False
    excluded: str = ""  # why a row is reported but not fitted (ONLINE_EXCLUDED)


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _first_number(text: str) -> float:
    return float(re.search(r"[\d.]+", text).group(0))  # type: ignore[union-attr]


def engine_id(text: str) -> str:
    """The engine id (catalogs/engines.yaml) of an `engine` column: 'TensorRT-LLM v0.19 trtllm-bench' →
    trtllm, 'vLLM (ROCm)' → vllm, 'SGLang 0.4.3' → sglang, 'ATOM' → atom; MLPerf's 'TensorRT 10.2' and
    'TRT-LLM' are TensorRT-LLM. Anything else (a bare 'CUDA 12.2' or 'PyTorch 2.1.1') is `other`: it runs
    at the shared parameters."""
    t = str(text).lower()
    for needle, engine in (("atom", "atom"), ("sglang", "sglang"), ("vllm", "vllm"), ("neuron", "neuron"),
                           ("tensorrt", "trtllm"), ("trt-llm", "trtllm"), ("trtllm", "trtllm")):
        if needle in t:
            return engine
    return "other"


def _engine(text: str) -> str:
    return engine_id(text)


def _layout_from_notes(notes: str, tp: int) -> Layout:
    """'tp8 ep8 attention-DP' → experts over 8 GPUs with data-parallel attention; else plain TP."""
    if re.search(r"attention[- ]dp", notes, re.I):
        ep = re.search(r"ep(\d+)", notes)
        return Layout("ep", tp=1, dp=int(ep.group(1)) if ep else tp)
    return Layout("tp", tp=tp)


def _benchmarks_rows(df: pd.DataFrame, tag: str) -> list[Case]:
    """benchmarks.csv: TensorRT-LLM v0.17 offline and v0.14 online, MLPerf v4.1, OCI MI300X."""
    cases: list[Case] = []
    for i, r in df.iterrows():
        model, accel = MODELS.get(r["model"]), ACCELERATORS.get(r["accelerator"])
        prec = PRECISIONS.get(str(r["precision"]).lower(), str(r["precision"]).lower())
        if model is None or accel is None:
            continue
        gpus = int(r["num_accelerators"])
        tp = int(r["tp"]) if _num(r["tp"]) else None
        isl, osl = _num(r["isl"]), _num(r["osl"])
        notes = str(r["notes"]) if isinstance(r["notes"], str) else ""
        load = str(r["concurrency_or_qps"]) if isinstance(r["concurrency_or_qps"], str) else ""
        base = dict(row=f"{tag}:{int(i) + 2}", model=model, accelerator=accel, precision=prec, gpus=gpus, load=load,
                    engine=_engine(str(r["engine"])))
        suite = r["suite"]
        if suite == "MLPerf Inference":
            value = _num(r["throughput_tok_s"])
            if value is None:
                continue
            m = re.search(r"tokens/sample ([\d.]+)", notes) or re.search(r"mean output ~([\d.]+)", notes)
            osl_m = round(float(m.group(1))) if m else MLPERF_OUTPUT_TOKENS.get(model, 294)
            kind = "offline" if r["scenario"] == "Offline" else "server-goodput"
            cases.append(Case(**base, suite=f"mlperf-{r['version']}", kind=kind, layout=None, isl=MLPERF_INPUT_TOKENS,
                              osl=osl_m, published=value, notes=[f"assumed mean input {MLPERF_INPUT_TOKENS}"]))
        elif suite == "TensorRT-LLM perf overview":
            cases.append(Case(**base, suite=f"trtllm-{r['version']}-offline", kind="offline",
                              layout=Layout("tp", tp=tp or 1), isl=int(isl), osl=int(osl),
                              published=float(r["throughput_tok_s"]) / (gpus // (tp or 1))))
        elif suite == "TensorRT-LLM online serving":
            replicas = gpus // (tp or 1)
            cases.append(Case(**base, suite="trtllm-v0.14-online", kind="online-tpot", layout=Layout("tp", tp=tp or 1),
                              isl=int(isl), osl=int(osl), published=float(r["tpot_ms"]),
                              output_tok_s=float(r["output_tok_s"]) / replicas))
        elif r["scenario"] == "batch latency sweep":
            latency = _first_number(notes.split("latency", 1)[1])
            cases.append(Case(**base, suite="oci-mi300x", kind="batch-latency", layout=Layout("tp", tp=tp or 1),
                              isl=int(isl), osl=int(osl), published=latency, batch=int(_first_number(load))))
        else:  # OCI offline throughput, "tokens/s (as reported)": read as output tokens/s
            # ASSUMPTION: vLLM's default max_num_seqs (256) capped the batch; the same blog's batch
            # sweep stops at 256 with 1,846 tok/s, next to these offline figures.
            cases.append(Case(**base, suite="oci-mi300x", kind="offline", layout=Layout("tp", tp=tp or 1), isl=int(isl),
                              osl=int(osl), published=float(r["throughput_tok_s"]) / (gpus // (tp or 1)),
                              engine_max_batch=VLLM_DEFAULT_MAX_NUM_SEQS,
                              notes=["'as reported' read as output tokens/s"]))
    return cases


def _published_rows(df: pd.DataFrame, tag: str) -> list[Case]:
    """benchmarks/data/published.csv (see its sources column and NOTES in the module docstring)."""
    cases: list[Case] = []
    for i, r in df.iterrows():
        model, accel = MODELS.get(r["model"]), ACCELERATORS.get(r["accelerator"])
        prec_raw = str(r["precision"]).lower()
        prec = PRECISIONS.get(prec_raw) or ("fp8" if prec_raw == "nan" else None)
        if model is None or accel is None or prec is None:
            continue  # not in the catalog (GLM-5.2, Qwen3.6, Gaudi 2, ...) or a mixed format (w4a6)
        suite, scenario = str(r["suite"]), str(r["scenario"])
        notes = str(r["notes"]) if isinstance(r["notes"], str) else ""
        gpus = int(r["num_accelerators"])
        tp = int(r["tp"]) if _num(r["tp"]) else None
        isl, osl = _num(r["isl"]), _num(r["osl"])
        load = str(r["concurrency_or_qps"]) if isinstance(r["concurrency_or_qps"], str) else ""
        engine = _engine(str(r["engine"]))
        base = dict(row=f"{tag}:{int(i) + 2}", model=model, accelerator=accel, precision=prec, gpus=gpus, load=load,
                    engine=engine)
        if suite == "TensorRT-LLM perf overview":
            cases.append(Case(**base, suite=f"trtllm-{r['version']}-offline", kind="offline",
                              layout=Layout("tp", tp=tp or 1), isl=int(isl), osl=int(osl),
                              published=float(r["throughput_tok_s"]) / (gpus // (tp or 1))))
        elif suite == "MLPerf Inference":
            value = _num(r["throughput_tok_s"])
            if value is None or r["scenario"] not in ("Offline", "Server"):
                continue  # v4.0 Server rows are queries/s
            osl_m = MLPERF_OUTPUT_TOKENS.get(model, 294)
            kind = "offline" if r["scenario"] == "Offline" else "server-goodput"
            cases.append(Case(**base, suite=f"mlperf-{r['version']}", kind=kind, layout=None, isl=MLPERF_INPUT_TOKENS,
                              osl=osl_m, published=value, notes=[f"assumed mean input {MLPERF_INPUT_TOKENS}"]))
        elif suite.startswith("AMD Instinct") and "offline" in scenario:
            # ASSUMPTION: the page's "Throughput (tokens/s)" is output tokens/s. Read as prompt +
            # output instead, its 2048/2048 rows would be half its 128/2048 rows per output token — a
            # split no other suite shows at the same lengths (TensorRT-LLM, dstack, MLPerf).
            out = float(r["throughput_tok_s"])
            cap = re.search(r"max_num_seqs=(\d+)", load)
            cases.append(Case(**base, suite="amd-instinct-vllm", kind="offline", layout=Layout("tp", tp=tp or 8),
                              isl=int(isl), osl=int(osl), published=out / (gpus // (tp or 8)),
                              engine_max_batch=int(cap.group(1)) if cap else None,
                              notes=["throughput read as output tokens/s"]))
        elif suite == "dstack benchmark" and "offline" in scenario:
            out = _num(r["output_tok_s"])
            if out is None:
                continue
            layout = Layout("tp", tp=tp or gpus)
            if "all prompts submitted at once" in scenario or "batch=" in load:
                batch = int(_first_number(load))
                cases.append(Case(**base, suite="dstack", kind="closed-batch", layout=layout, isl=int(isl), osl=int(osl),
                                  published=out / (gpus // layout.gpus), batch=batch))
            else:
                cases.append(Case(**base, suite="dstack", kind="offline", layout=layout, isl=int(isl), osl=int(osl),
                                  published=out / (gpus // layout.gpus), engine_max_batch=VLLM_DEFAULT_MAX_NUM_SEQS))
        elif suite == "dstack benchmark" and "online" in scenario:
            tpot = _num(r["tpot_ms"])
            if tpot is None:
                continue
            layout = Layout("tp", tp=tp or gpus)
            cases.append(Case(**base, suite="dstack-online", kind="online-tpot", layout=layout, isl=int(isl),
                              osl=int(osl), published=tpot, batch=int(_first_number(load))))
        elif suite == "AMD ROCm blog" and "offline" in scenario:
            out = _num(r["output_tok_s"])
            util = re.search(r"gpu-memory-utilization ([\d.]+)", notes)
            cases.append(Case(**base, suite="rocm-blog", kind="offline", layout=Layout("tp", tp=tp or 1),
                              isl=int(isl), osl=int(osl), published=float(out), engine_fraction=float(util.group(1))
                              if util else None, engine_max_batch=1024))
        elif suite.startswith("TensorRT-LLM blog") and "max-throughput" in scenario:
            conc = int(_first_number(load))
            cases.append(Case(**base, suite="trtllm-blog", kind="offline", layout=_layout_from_notes(notes, tp or 8),
                              isl=int(isl), osl=int(osl), published=float(r["throughput_tok_s"]),
                              engine_max_batch=conc))
        # Not compared: phase-isolated disaggregated rows (LMSYS), "peak" over a sweep (Vultr), MTP rows
        # (speculative decoding is not modelled), AMD static-batch rows with derived TPOT.
    return cases


KV_BYTES = {"fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "int8": 1.0, "bf16": 2.0, "fp16": 2.0, "auto": None,
            "fp4": 0.5, "nvfp4": 0.5}
ENGINES = ("vllm", "sglang", "trtllm", "atom", "neuron")
LATENCY_STATS = ("", "mean", "median")
"""TPOT statistics compared with the model's mean TPOT: a closed loop decodes at a steady batch, so
its median and mean inter-token times agree; p99 rows are not compared."""
_DECODE_ONLY = "decode GPUs of a prefill-decode disaggregated deployment (the replica here prefills too)"
_NO_LAYOUT = "parallelism not stated, 16 GPUs over InfiniBand (a tp16 guess would be judged, not the estimator)"
_WAVE = "one wave of 16 prompts sent at once, parallelism not stated: a burst, not a steady closed loop"
_HARNESS = ("Qwen's speed benchmark: one request at a time through its own harness, a third of the H20's "
            "bandwidth bound even for an 8B model (the harness's fixed costs, not serving's)")
ONLINE_EXCLUDED: dict[str, str] = {
    **{f"r2-qwen3doc-h20-{m}-{i:03d}": _HARNESS for m, r in (("8b", range(1, 10)), ("32b", range(10, 19)))
       for i in r},
    "r1-sglang-h200-dsv3-001": _DECODE_ONLY, "r1-sglang-h200-dsv3-002": _DECODE_ONLY,
    "r1-sglang-h200-dsv3-003": _DECODE_ONLY, "r1-sglang-h200-dsv3-004": _DECODE_ONLY,
    "r1-sglang-h100-ds-001": _NO_LAYOUT, "r1-sglang-h100-ds-002": _NO_LAYOUT,
    "r1-trtllm-h100-ds-003": _NO_LAYOUT, "r1-trtllm-h100-ds-004": _NO_LAYOUT,
    "r1-vllm-h200-kimi-001": _WAVE, "r1-vllm-h200-kimi-002": _WAVE,
}
"""Rows of benchmarks/data/online_*.csv reported but kept out of the fit, by row_id, with the reason (the
files are copied byte for byte from the research branches: a row is judged here, never edited there)."""


def _flag(value: object) -> bool:
    return str(value).strip().lower() in ("true", "yes", "1", "on", "y")


def _online_layout(r: pd.Series, gpus: int) -> Layout:
    """The replica's layout from tp/ep/pp/dp_attention: attention data-parallel over `dp` groups (SGLang's
    --enable-dp-attention, TensorRT-LLM's enable_attention_dp) is the 'ep' family — experts over the
    tp × dp GPUs of a stage, each group holding its own sequences; otherwise plain tensor parallelism
    (experts split over the same GPUs whether the engine calls it EP or TP)."""
    tp = int(_num(r["tp"]) or 0) or None
    pp = int(_num(r["pp"]) or 1)
    stage = tp or max(1, gpus // pp)
    dpa = str(r["dp_attention"]).strip().lower()
    dp = 1
    if dpa not in ("", "nan", "false", "no", "0", "none", "off"):
        dp = stage if _flag(dpa) else int(_num(dpa) or 1)
    dp = max(1, min(dp, stage))
    if dp > 1:
        return Layout("ep", tp=max(1, stage // dp), dp=dp, pp=pp)
    return Layout("pp" if pp > 1 else "tp", tp=stage, pp=pp)


HELD_CONCURRENCY = True
"""Judge an online row at the concurrency its harness measured (held_concurrency), where its notes record
it, instead of the nominal one; --nominal-concurrency of this script and of fit_estimator.py judges every
row at its nominal concurrency (as the previous catalog's tables in benchmarks/ESTIMATOR.md are)."""


def held_concurrency(notes: object) -> float | None:
    """The mean concurrency a run's own harness measured, where its notes record it ("measured mean
    concurrency 13.93": sglang.bench_serving prints it). A run of a fixed number of prompts ramps up and
    down, and a client that waits for its next prompt leaves its slot empty meanwhile, so a run at a
    maximum concurrency of 16 may hold 14 on average; its tok/s and TPOT are those of the load it held
    (its own tok/s, TPOT and TTFT imply the same by Little's law). Such a row is judged at the concurrency
    it held: the estimator is asked about that load, it is not corrected for the harness."""
    m = re.search(r"measured mean concurrency ([\d.]+)", str(notes))
    return float(m.group(1)) if m else None


def _online_rows(df: pd.DataFrame, tag: str) -> list[Case]:
    """benchmarks/data/online_*.csv (schema: benchmarks/data/README.md): one replica at a fixed
    concurrency (closed loop) or a fixed request rate. A concurrency row yields two cases: output
    tokens/s per GPU (kind online-conc) and TPOT (online-conc-tpot); a request-rate row its TPOT at
    that load (online-tpot)."""
    cases: list[Case] = []
    for _, r in df.iterrows():
        rid = str(r["row_id"])
        model, accel = str(r["model"]).strip(), str(r["accelerator"]).strip()
        prec = PRECISIONS.get(str(r["precision"]).strip().lower(), str(r["precision"]).strip().lower())
        gpus = int(_num(r["gpus"]) or 0)
        isl, osl = _num(r["isl"]), _num(r["osl"])
        if not gpus or not isl or not osl:
            continue
        layout = _online_layout(r, gpus)
        if gpus % layout.gpus:
            continue
        engine = engine_id(r["engine"]) if str(r["engine"]).strip().lower() in ENGINES else "other"
        kvp = str(r["kv_precision"]).strip().lower()
        spec = str(r["speculative"]).strip().lower()
        spec = "" if spec in ("", "nan", "none", "off", "no") else spec
        base = dict(suite=f"online:{r['suite']}", model=model, accelerator=accel, precision=prec, layout=layout,
                    gpus=layout.gpus, isl=int(isl), osl=int(osl), engine=engine, kv_bytes=KV_BYTES.get(kvp),
                    speculative=spec, prefix_cache=_flag(r["prefix_cache"]), excluded=ONLINE_EXCLUDED.get(rid, ""))
        conc, qps = _num(r["concurrency"]), _num(r["qps"])
        held = held_concurrency(r["notes"]) if HELD_CONCURRENCY else None
        tok = _num(r["output_tok_s_per_gpu"])
        if tok is None and _num(r["total_tok_s_per_gpu"]) is not None:
            tok = float(r["total_tok_s_per_gpu"]) * osl / (isl + osl)  # output share of a fixed-length run
        tpot = _num(r["tpot_ms"])
        stat = str(r["tpot_stat"]).strip().lower().replace("nan", "")
        tpot_ok = tpot is not None and (stat.split() or [""])[0] in LATENCY_STATS  # "mean (ITL)": ITL is TPOT
        if conc:
            load = f"conc={int(conc)}"
            if tok:
                cases.append(Case(**base, row=f"{tag}:{rid}", kind="online-conc", load=load, published=tok,
                                  concurrency=int(conc), held=held))
            if tpot_ok:
                cases.append(Case(**base, row=f"{tag}:{rid}:tpot", kind="online-conc-tpot", load=load,
                                  published=float(tpot), concurrency=int(conc), held=held))
        elif qps and tpot_ok:
            cases.append(Case(**base, row=f"{tag}:{rid}:tpot", kind="online-tpot", load=f"qps={qps:g}",
                              published=float(tpot), output_tok_s=qps * osl))
    return cases


def parse_rows(csv: Path) -> list[Case]:
    """Turn a benchmarks CSV into comparable cases (per replica, catalog ids)."""
    df = pd.read_csv(csv, dtype={"dp_attention": str, "speculative": str, "prefix_cache": str})
    if csv.name.startswith("online_"):
        return _online_rows(df, csv.stem)
    tag = "benchmarks" if csv.name == "benchmarks.csv" else "published"
    return _benchmarks_rows(df, tag) if tag == "benchmarks" else _published_rows(df, tag)


def online_csvs(folder: Path = REPO / "benchmarks" / "data") -> tuple[Path, ...]:
    return tuple(sorted(folder.glob("online_*.csv")))


def all_cases(csvs: tuple[Path, ...] | None = None) -> list[Case]:
    """Every comparable case of the given files (default: benchmarks.csv, published.csv and every
    benchmarks/data/online_*.csv)."""
    csvs = DEFAULT_CSVS + online_csvs() if csvs is None else csvs
    return [c for csv in csvs for c in parse_rows(csv)]


def load_catalog(folder: Path) -> dict[str, dict]:
    yaml = YAML(typ="safe")
    found: dict[str, dict] = {"accelerators": {}, "models": {}, "precisions": {}}
    for name in ("accelerators", "models", "precisions"):
        data = yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8-sig"))
        for entry in getattr(CatalogFile.model_validate(data), name):
            found[name][entry.id] = entry
    return found


@dataclass
class Prediction:
    case: Case
    layout: Layout
    predicted: float
    bound: str
    batch: float
    kv_concurrency: int = 0
    kv_gb_per_gpu: float = 0.0

    @property
    def error(self) -> float:
        return self.predicted / published(self) - 1.0


def engine_kv(model: Model, prec: Precision, acc: Accelerator, layout: Layout, ctx: int, engine: str,
              fraction: float | None = None, kv_bytes: float | None = None) -> tuple[int, float]:
    """(sequences the engine's KV cache holds, KV GB per GPU) under the engine's own accounting."""
    how, default = ENGINE_MEMORY.get(engine, ENGINE_MEMORY["trtllm"])
    frac = fraction if fraction is not None else default
    mem = acc.memory_bytes_per_gpu / 1e9 * layout.gpus
    weights = memory.resident_weights_gb(model, prec, layout.dp)  # ep: attention and dense layers per group
    runtime = ENGINE_RUNTIME_GB * layout.gpus
    kv = frac * (mem - weights - runtime) if how == "free" else frac * mem - weights - runtime
    kvb = prec.kv_bytes_per_elem if kv_bytes is None else kv_bytes
    per_seq = memory.kv_gb_per_seq(model, ctx, kvb) * memory.kv_copies(model, layout.tp)
    return (max(0, math.floor(kv / per_seq)) if kv > 0 else 0), max(kv, 0.0) / layout.gpus


def _run(case: Case, cat: dict[str, dict], params: EstimatorParams, layout: Layout, slo: tuple | None = None):
    model: Model = cat["models"][case.model]
    acc: Accelerator = cat["accelerators"][case.accelerator]
    prec: Precision = cat["precisions"][case.precision]
    params = params.for_engine(case.engine, acc.generation)
    kv, kv_gpu = engine_kv(model, prec, acc, layout, case.isl + case.osl, case.engine, case.engine_fraction,
                           case.kv_bytes)
    cap = kv if case.engine_max_batch is None else min(kv, case.engine_max_batch)
    ln = links(acc, layout, params)
    ttft, tpot = slo if slo else (None, None)
    if case.kind.startswith("online"):  # only the roofline is needed (and a batch of one must fit)
        est = None
    else:
        est = estimate(model, prec, acc, layout, case.isl, case.osl, max_batch=cap, params=params, ttft_ms=ttft,
                       tpot_ms=tpot, percentile=99.0 if slo else None, link=ln)
    return est, kv, kv_gpu, model, acc, prec, ln, params


def _layouts(case: Case, cat: dict[str, dict]) -> list[Layout]:
    """MLPerf gives no TP: ASSUMPTION submitters tune it; every power of two within the system is tried."""
    out, t = [], 1
    acc: Accelerator = cat["accelerators"][case.accelerator]
    while t <= min(case.gpus, max(acc.scale_up_gpus, 1) if acc.topology != "pcie" else case.gpus):
        out.append(Layout("tp", tp=t))
        t *= 2
    return out or [Layout("tp", tp=1)]


def predict(case: Case, cat: dict[str, dict], params: EstimatorParams) -> Prediction:
    if case.layout is None:  # MLPerf: the best TP per GPU
        slo = MLPERF_SLO.get(case.model) if case.kind == "server-goodput" else None
        best = None
        for layout in _layouts(case, cat):
            est, kv, kv_gpu, *_ = _run(case, cat, params, layout, slo)
            per_gpu = est.raw_goodput_output_tokens_per_s / layout.gpus
            if best is None or per_gpu > best[0]:
                best = (per_gpu, layout, est, kv, kv_gpu)
        _, layout, est, kv, kv_gpu = best  # type: ignore[misc]
        case.published_per_replica = case.published / (case.gpus // layout.gpus)
        return Prediction(case, layout, est.raw_goodput_output_tokens_per_s, est.bound, est.batch, kv, kv_gpu)
    layout = case.layout
    if case.kind == "offline":
        est, kv, kv_gpu, *_ = _run(case, cat, params, layout)
        bound = est.bound
        if bound == "kv-memory" and case.engine_max_batch and est.batch < kv:
            bound = "engine-cap"
        return Prediction(case, layout, est.raw_goodput_output_tokens_per_s, bound, est.batch, kv, kv_gpu)
    est, kv, kv_gpu, model, acc, prec, ln, params = _run(case, cat, params, layout)
    rl = roofline(model, prec, acc, layout, case.isl, case.osl, params=params, link=ln,
                  kv_bytes_per_elem=case.kv_bytes)
    cap = max(1, min(kv, params.max_batch))
    if case.kind in ("online-conc", "online-conc-tpot"):
        at = at_concurrency(rl, case.held or case.concurrency or 1, cap, params.closed_loop_wave_share)
        value = at.output_tokens_per_s / layout.gpus if case.kind == "online-conc" else at.tpot_ms
        return Prediction(case, layout, value, at.bound, at.batch, kv, kv_gpu)
    if case.kind == "online-tpot":
        if case.batch is not None:  # closed loop at a fixed concurrency
            b = float(min(case.batch, cap))
        else:
            b = rl.batch_at_throughput(case.output_tok_s or 0.0, cap)
        bound = "kv-memory" if b >= cap else rl.dominant(b)
        return Prediction(case, layout, rl.tpot_s(b) * 1e3, bound, b, kv, kv_gpu)
    if case.kind == "closed-batch":
        b = max(1, min(case.batch or 1, cap))
        waves = math.ceil((case.batch or 1) / b)
        seconds = waves * (rl.prefill_s(b * case.isl) + case.osl * rl.decode_s(b))
        return Prediction(case, layout, (case.batch or 1) * case.osl / seconds, rl.dominant(b), b, kv, kv_gpu)
    # batch-latency: a static batch of B requests, prefilled together, then osl decode steps
    b = case.batch or 1
    latency = rl.prefill_s(b * case.isl) + case.osl * rl.decode_s(b)
    return Prediction(case, layout, latency, rl.dominant(b), b, kv, kv_gpu)


def published(p: Prediction) -> float:
    return p.case.published_per_replica if p.case.published_per_replica is not None else p.case.published


def group_of(case: Case, cat: dict[str, dict]) -> tuple[str, str]:
    """(architecture family, precision group) of a row: hopper / fp8, blackwell / fp4, ..."""
    acc: Accelerator = cat["accelerators"][case.accelerator]
    prec: Precision = cat["precisions"][case.precision]
    return acc.generation, group_dtype(prec, acc)  # as the validation table's groups name it


LATENCY_KINDS = ("online-tpot", "online-conc-tpot", "batch-latency")
ONLINE_KINDS = ("online-conc", "online-conc-tpot")


def table(preds: list[Prediction], cat: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for p in preds:
        pub = published(p)
        fam, dtype = group_of(p.case, cat)
        rows.append(dict(
            row=p.case.row, suite=p.case.suite, kind=p.case.kind, engine=p.case.engine, model=p.case.model,
            accelerator=p.case.accelerator, family=fam, precision=dtype, group=f"{fam}/{dtype}",
            model_class=model_class(cat["models"][p.case.model]),
            layout=p.layout.label, isl=p.case.isl, osl=p.case.osl, load=p.case.load, batch=round(p.batch, 1),
            published=pub, predicted=p.predicted, error=p.predicted / pub - 1.0, bound=p.bound, kv=p.kv_concurrency,
            starved=p.kv_gb_per_gpu < STARVED_BELOW_GB_PER_GPU and (
                p.case.concurrency is None or p.kv_concurrency < p.case.concurrency),
            concurrency=p.case.concurrency, held=p.case.held, throughput=p.case.kind not in LATENCY_KINDS,
            online=p.case.suite.startswith("online:"), speculative=p.case.speculative,
            prefix_cache=p.case.prefix_cache, excluded=p.case.excluded,
        ))
    return pd.DataFrame(rows)


METRIC = {"offline": "output tok/s per replica", "closed-batch": "output tok/s per replica",
          "online-tpot": "TPOT ms at the published load", "server-goodput": "goodput tok/s per replica at p99 SLO",
          "batch-latency": "end-to-end latency s at batch"}


def summarize(df: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    g = df.assign(ape=df["error"].abs()).groupby(by)
    out = pd.DataFrame({
        "rows": g.size(),
        "MAPE %": g["ape"].mean() * 100,
        "median APE %": g["ape"].median() * 100,
        "mean bias %": g["error"].mean() * 100,
        "within 30 %": g["ape"].apply(lambda s: (s <= 0.30).mean() * 100),
    })
    return out.round(1)


def _markdown(t: pd.DataFrame) -> str:
    t = t.reset_index()
    head = "| " + " | ".join(str(c) for c in t.columns) + " |"
    rule = "|" + "|".join("---:" if pd.api.types.is_numeric_dtype(t[c]) else "---" for c in t.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in t.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def left_out(df: pd.DataFrame) -> pd.Series:
    """Why a row is not in the fit (empty: it is), by rule, not by result: bursts rather than steady
    states (QPS = INF, closed batches), development engine builds (dstack's DeepSeek-R1 runs of
    Feb–Mar 2025, the engines' first MLA/MoE kernels), memory-starved rows."""
    why = pd.Series("", index=df.index)
    why[df["starved"]] = "memory-starved"
    why[(df["load"] == "QPS=INF") | (df["kind"] == "closed-batch")] = "burst"
    why[df["suite"].str.startswith("dstack") & (df["model"] == "deepseek-r1")] = "development build"
    if "speculative" in df:
        # speculative decoding (MTP, EAGLE) and prefix caching change what a step delivers; the roofline
        # models neither yet, so those rows are reported beside the fit, not in it
        why[df["speculative"].astype(str) != ""] = "speculative decoding"
        why[df["prefix_cache"].astype(bool)] = "prefix cache"
        why[df["excluded"] != ""] = "excluded: " + df["excluded"].str.split(r"[:(,]").str[0]
        # weight-only formats (W4A16, INT4-AWQ, W8A16): weight_only_factor is an assumption, not a fit, and
        # the published rows disagree tenfold across engines (vLLM's AWQ on A100 within 10 % of the roofline,
        # SGLang's INT4 MoE on H200 at a tenth of it)
        why[(df["precision"] == "weight-only") & df["online"]] = "weight-only format"
    return why


def online_summary(df: pd.DataFrame) -> dict[str, float]:
    """The online acceptance numbers over concurrency rows: median |error| of output tok/s per GPU, the
    largest |mean bias| of a (family, precision) group, median |error| of TPOT."""
    tok = df[df.kind == "online-conc"]
    tpot = df[df.kind == "online-conc-tpot"]
    bias = tok.groupby(["family", "precision"])["error"].mean() if len(tok) else pd.Series(dtype=float)
    return {
        "rows tok/s": len(tok), "median |err| tok/s/GPU %": float(tok["error"].abs().median() * 100) if len(tok) else math.nan,
        "mean bias tok/s %": float(tok["error"].mean() * 100) if len(tok) else math.nan,
        "worst (family, precision) bias %": float(bias.loc[bias.abs().idxmax()] * 100) if len(bias) else math.nan,
        "rows TPOT": len(tpot), "median |err| TPOT %": float(tpot["error"].abs().median() * 100) if len(tpot) else math.nan,
        "mean bias TPOT %": float(tpot["error"].mean() * 100) if len(tpot) else math.nan,
    }


def online_report(df: pd.DataFrame, fmt) -> list[str]:
    parts = []
    tok, tpot = df[df.kind == "online-conc"], df[df.kind == "online-conc-tpot"]
    parts.append("online rows at a fixed concurrency: " + ", ".join(
        f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in online_summary(df).items()))
    if len(tok):
        parts.append("-- output tok/s per GPU")
        parts.append(fmt(summarize(tok, "engine")))
        parts.append(fmt(summarize(tok, ["family", "precision"])))
        parts.append(fmt(summarize(tok, ["engine", "family", "model"])))
    if len(tpot):
        parts.append("-- TPOT")
        parts.append(fmt(summarize(tpot, "engine")))
        parts.append(fmt(summarize(tpot, ["family", "precision"])))
    rate = df[df.kind == "online-tpot"]
    if len(rate):
        parts.append("-- TPOT at a fixed request rate")
        parts.append(fmt(summarize(rate, ["engine", "family"])))
    return parts


def report(df: pd.DataFrame, markdown: bool = False) -> str:
    fmt = _markdown if markdown else (lambda t: t.to_string())
    parts = []
    out = df.assign(left_out=left_out(df))
    df = out[out.left_out == ""]
    online = df[df.online]
    df = df[~df.online]
    thr = df[df.throughput]
    parts.append("== throughput rows (offline, closed batch, MLPerf Server goodput): predicted vs published")
    parts.append(fmt(summarize(thr.assign(rows_="all rows"), "rows_")))
    parts.append(fmt(summarize(thr, ["family", "precision"])))
    parts.append(fmt(summarize(thr.assign(memory=thr["starved"].map({True: "starved (< 10 GB KV/GPU)",
                                                                       False: "not starved"})), "memory")))
    parts.append(fmt(summarize(thr, "suite")))
    parts.append(fmt(summarize(thr, "model")))
    parts.append("== latency rows (TPOT at a load, static-batch latency)")
    lat = df[~df.throughput]
    if len(lat):
        parts.append(fmt(summarize(lat, ["suite", "kind"])))
        parts.append(fmt(summarize(lat, ["family", "precision"])))
    parts.append("== every fitted row by engine (throughput and latency rows, online included)")
    parts.append(fmt(summarize(pd.concat([df, online]), ["engine", "kind"])))
    parts.append("== online rows (benchmarks/data/online_*.csv), in the fit")
    parts.extend(online_report(online, fmt))
    parts.append("== rows left out of the fit by rule (reported, not fitted)")
    parts.append(fmt(summarize(out[out.left_out != ""], ["left_out", "suite", "kind"])))
    spec = out[out.online & (out.left_out != "")]
    if len(spec):
        parts.append("== online rows left out (speculative decoding, prefix cache): the same tables")
        parts.extend(online_report(spec, fmt))
    return "\n\n".join(parts)


SKIPPED: dict[str, str] = {}
"""Rows the last `comparable` call dropped, with the reason (not in the catalog, or no kernels for the
precision on that accelerator)."""


def comparable(cases: list[Case], cat: dict[str, dict]) -> list[Case]:
    """The cases the planner can estimate: model, accelerator and precision in the catalog, and a
    roofline for them (a precision with no kernels on the accelerator, e.g. INT4-AWQ on MI300X, is not)."""
    SKIPPED.clear()
    out = []
    for c in cases:
        missing = [f"{k} {v}" for k, v in (("model", c.model), ("accelerator", c.accelerator), ("precision", c.precision))
                   if v not in cat[k + "s"]]
        if missing:
            SKIPPED[c.row] = "not in the catalog: " + ", ".join(missing)
            continue
        try:
            predict(c, cat, EstimatorParams())
        except ValueError as e:
            SKIPPED[c.row] = str(e)
            continue
        out.append(c)
    return out


def held_out_report(folder: Path, markdown: bool = False) -> str:
    """Per engine and per family, the held-out errors of each cross-validation fit_estimator.py ran (leave
    one model, family or engine out), the in-fit population only, beside each other."""
    fmt = _markdown if markdown else (lambda t: t.to_string())
    parts = []
    for by in ("model", "family", "engine"):
        path = folder / f"cv_{by}.csv"
        if not path.exists():
            continue
        cv = pd.read_csv(path, keep_default_na=False, na_values=[""])
        cv = cv[cv["fitted"].astype(str) == "True"]
        cv["throughput"] = cv["throughput"].astype(str) == "True"
        cv["online"] = cv["online"].astype(str) == "True"
        parts.append(f"== leave one {by} out")
        bench = cv[cv.throughput & ~cv.online]
        parts.append("-- benchmark throughput rows (benchmarks.csv, published.csv)")
        parts.append(fmt(summarize(bench.assign(all_="all"), "all_")))
        parts.append("-- every fitted row, per engine and per family")
        parts.append(fmt(summarize(cv, "engine")))
        parts.append(fmt(summarize(cv, "family")))
        on = cv[cv.online]
        parts.append("-- online rows: " + ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in online_summary(on).items()))
        tok = on[on.kind == "online-conc"]
        if len(tok):
            parts.append(fmt(summarize(tok, ["family", "precision"])))
    return "\n\n".join(parts)


def run(csvs: tuple[Path, ...] | None, catalogs: Path, params: EstimatorParams) -> pd.DataFrame:
    cat = load_catalog(catalogs)
    cases = comparable(all_cases(csvs), cat)
    return table([predict(c, cat, params) for c in cases], cat)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="*", type=Path, default=None,
                    help="default: benchmarks.csv, published.csv and every benchmarks/data/online_*.csv")
    ap.add_argument("--catalogs", type=Path, default=None, help="folder with catalog YAML files")
    ap.add_argument("--params", type=Path, default=None, help="estimator.yaml to use")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--markdown", action="store_true", help="summary tables as markdown")
    ap.add_argument("--held-out", type=Path, default=None, metavar="DIR",
                    help="print the held-out tables from the cv_*.csv that fit_estimator.py --save-cv DIR wrote")
    ap.add_argument("--nominal-concurrency", action="store_true",
                    help="judge online rows at their nominal concurrency, not at the mean concurrency their "
                         "harness measured (where recorded)")
    args = ap.parse_args(argv)
    global HELD_CONCURRENCY
    HELD_CONCURRENCY = not args.nominal_concurrency
    if args.held_out:
        print(held_out_report(args.held_out, markdown=args.markdown))
        return 0
    catalogs = args.catalogs or catalogs_dir()
    params = load_estimator_params(args.params or catalogs / "estimator.yaml")
    df = run(tuple(args.csv) if args.csv else None, catalogs, params)
    if args.rows:
        with pd.option_context("display.width", 250, "display.max_rows", None, "display.max_columns", None):
            shown = df.copy()
            shown["error"] = (shown["error"] * 100).round(1).astype(str) + " %"
            shown["published"] = shown["published"].round(2)
            shown["predicted"] = shown["predicted"].round(2)
            print(shown.to_string(index=False))
            print()
    print(f"metrics: {METRIC}")
    if SKIPPED:
        reasons = pd.Series(list(SKIPPED.values())).value_counts()
        print(f"not comparable ({len(SKIPPED)} cases): " + "; ".join(f"{n} × {why}" for why, n in reasons.items()))
    print(report(df, markdown=args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
