"""Launch commands for the serving engines, from a workload's chosen config.

Every flag here is one the targeted release documents in its argument parser (ENGINE_VERSIONS names the
release and where its flags are listed); a plan fact the engine has no flag for is a note, not an invented flag.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

ENGINE_VERSIONS = {
    "vllm": {
        "version": "v0.11.2",
        "image": "vllm/vllm-openai:v0.11.2",
        "flags": "https://docs.vllm.ai/en/v0.11.2/cli/serve.html (vllm/engine/arg_utils.py EngineArgs)",
        "port": 8000,
        "running_metric": "vllm:num_requests_running",
    },
    "sglang": {
        "version": "v0.5.5",
        "image": "lmsysorg/sglang:v0.5.5",
        "flags": "https://docs.sglang.ai/advanced_features/server_arguments.html (python/sglang/srt/server_args.py)",
        "port": 30000,
        "running_metric": "sglang:num_running_reqs",
    },
    "trtllm": {
        "version": "1.0.0",
        "image": "nvcr.io/nvidia/tensorrt-llm/release:1.0.0",
        "flags": "https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html (trtllm-serve --help)",
        "port": 8000,
        "running_metric": "trtllm_num_requests_running",
    },
}
"""The release each engine's arguments are written for, its container image, where its flags are documented,
the port it serves on and the Prometheus gauge of requests it is running (the autoscaler's metric)."""

EMITTED = tuple(ENGINE_VERSIONS)

# precision → the engine's --quantization value; absent: the checkpoint's own config says it (or bf16/fp16 weights)
_QUANT = {
    "vllm": {"fp8": "fp8", "int4-awq": "awq_marlin", "fp4": "modelopt_fp4", "mxfp4": "mxfp4"},
    "sglang": {"fp8": "fp8", "int4-awq": "awq_marlin", "int8": "w8a8_int8", "fp4": "modelopt_fp4", "mxfp4": "mxfp4"},
    "trtllm": {},
}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16"}
# KV bytes per element → the engine's --kv-cache-dtype (None: no such cache dtype in that engine)
_KV = {
    "vllm": {2.0: "auto", 1.0: "fp8"},
    "sglang": {2.0: "auto", 1.0: "fp8_e4m3"},
    "trtllm": {},
}


@dataclass(frozen=True)
class Shape:
    """What a launch needs from the plan: one engine group (a replica, or a disaggregated pair's one side)."""

    model: str
    precision: str | None
    kv_dtype: str | None
    """'bf16', 'fp16', 'fp8', 'int8' (the plan's kv_precision, else the precision's usual pairing)."""
    tp: int
    pp: int
    ep: int
    family: str
    max_seqs: int
    context: int | None
    memory_fraction: float
    nodes: int = 1
    role: str | None = None
    """'prefill' or 'decode' for one side of a disaggregated pair."""

    @property
    def attention_dp(self) -> int:
        """Data-parallel attention ranks of an expert-parallel group: its ep GPUs in groups of tp (1 otherwise)."""
        return max(1, self.ep // max(1, self.tp)) if self.family == "ep" else 1


@dataclass
class Launch:
    engine: str
    command: list[str]
    args: list[str]
    notes: list[str] = field(default_factory=list)
    """Plan facts the engine takes from elsewhere (the checkpoint, a config file), in words."""
    from_plan: dict[str, object] = field(default_factory=dict)
    """Each argument's value and the plan figure it came from (the README's table)."""


KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}


def launch(engine: str, s: Shape) -> Launch:
    return {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}[engine](s)


def _model_path(s: Shape) -> str:
    return f"/models/{s.model}"


def _vllm(s: Shape) -> Launch:
    args = [_model_path(s), "--served-model-name", s.model, "--host", "0.0.0.0", "--port", "8000"]
    notes: list[str] = []
    args += ["--tensor-parallel-size", str(s.tp)]
    if s.pp > 1:
        args += ["--pipeline-parallel-size", str(s.pp)]
    if s.family == "ep":
        args += ["--data-parallel-size", str(s.attention_dp), "--enable-expert-parallel"]
    _precision(args, notes, "vllm", s)
    args += ["--max-num-seqs", str(s.max_seqs)]
    if s.context is not None:
        args += ["--max-model-len", str(s.context)]
    args += ["--gpu-memory-utilization", _fraction(s.memory_fraction)]
    if s.role is not None:
        # NIXL moves the KV from the prefill side to the decode side; kv_both lets either side take either role
        args += ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                                                    separators=(",", ":"))]
        notes.append(f"{s.role} side of a disaggregated pair: a router (vLLM's disaggregated proxy, or llm-d) "
                     "sends each request's prefill here and its decode to the other side")
    return Launch("vllm", ["vllm", "serve"], args, notes)


def _sglang(s: Shape) -> Launch:
    args = ["--model-path", _model_path(s), "--served-model-name", s.model, "--host", "0.0.0.0", "--port", "30000"]
    notes: list[str] = []
    if s.family == "ep":
        # SGLang's tp-size counts every GPU of the group; data-parallel attention splits it into ep / tp ranks
        gpus = max(s.ep, s.tp)
        args += ["--tp-size", str(gpus), "--ep-size", str(s.ep), "--dp-size", str(s.attention_dp),
                 "--enable-dp-attention"]
        notes.append(f"expert parallel over {s.ep} GPUs with data-parallel attention (attention TP {s.tp})")
    else:
        args += ["--tp-size", str(s.tp)]
    if s.pp > 1:
        args += ["--pp-size", str(s.pp)]
    _precision(args, notes, "sglang", s)
    args += ["--max-running-requests", str(s.max_seqs)]
    if s.context is not None:
        args += ["--context-length", str(s.context)]
    args += ["--mem-fraction-static", _fraction(s.memory_fraction)]
    if s.role is not None:
        args += ["--disaggregation-mode", s.role, "--disaggregation-transfer-backend", "nixl"]
        notes.append(f"{s.role} side of a disaggregated pair: the SGLang router (--pd-disaggregation) pairs it "
                     "with the other side")
    return Launch("sglang", ["python3", "-m", "sglang.launch_server"], args, notes)


def _trtllm(s: Shape) -> Launch:
    args = [_model_path(s), "--backend", "pytorch", "--host", "0.0.0.0", "--port", "8000",
            "--tp_size", str(s.tp)]
    notes: list[str] = []
    if s.pp > 1:
        args += ["--pp_size", str(s.pp)]
    if s.family == "ep":
        args += ["--ep_size", str(s.ep)]
    args += ["--max_batch_size", str(s.max_seqs)]
    if s.context is not None:
        args += ["--max_seq_len", str(s.context)]
    args += ["--kv_cache_free_gpu_memory_fraction", _fraction(s.memory_fraction)]
    if s.precision not in (None, "bf16", "fp16"):
        notes.append(f"{s.precision}: serve a checkpoint quantized to it (TensorRT Model Optimizer); trtllm-serve "
                     "reads the quantization from the checkpoint")
    if s.kv_dtype in ("fp8", "int8"):
        notes.append(f"KV cache {s.kv_dtype}: set kv_cache_config.dtype in the --extra_llm_api_options YAML")
    notes.append("--kv_cache_free_gpu_memory_fraction is a share of the memory left after the weights "
                 "(planopt's memory_reserve is a share of the whole GPU): the value is the plan's KV share of "
                 "what the weights leave")
    return Launch("trtllm", ["trtllm-serve"], args, notes)


def _precision(args: list[str], notes: list[str], engine: str, s: Shape) -> None:
    p = s.precision
    if p in _DTYPE:
        args += ["--dtype", _DTYPE[p]]
    elif p is not None:
        q = _QUANT[engine].get(p)
        if q is not None:
            args += ["--quantization", q]
        else:
            notes.append(f"{p}: serve a checkpoint quantized to it; the engine reads the method from its config")
    if s.kv_dtype is not None:
        kv = _KV[engine].get(KV_BYTES.get(s.kv_dtype, 2.0)) if s.kv_dtype != "int8" else None
        if kv is not None:
            args += ["--kv-cache-dtype", kv]
        else:
            notes.append(f"KV cache {s.kv_dtype}: {engine} has no such cache dtype; it keeps the model dtype "
                         "(more memory per sequence than planned)")


def _fraction(x: float) -> str:
    return f"{math.floor(x * 1000 + 1e-9) / 1000:g}"


def shell(launch_: Launch) -> str:
    """The launch as one shell command, each argument quoted where it must be."""
    import shlex

    return " ".join(shlex.quote(a) for a in launch_.command + launch_.args)
