"""Goodput at an SLO: a roofline of continuous batching with fitted efficiencies (catalogs/estimator.yaml).

Units: TB/s = 1e12 bytes/s, TFLOPS = 1e12 FLOP/s, throughput in output tokens/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.inputs.schema.catalog import Accelerator, MigProfile, Model, Precision
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.physics.memory import head_dim_of, kv_bytes_per_token
from optimizer.vocab import GB

# --- datatypes --------------------------------------------------------------------------------


def compute_dtype_on(precision: Precision, accelerator: Accelerator) -> str | None:
    """The datatype the matrix multiplies run in on this accelerator, or None if not native.

    Weight-only formats (int4-awq) de-quantize to bf16 and run anywhere bf16 runs. Otherwise
    the precision's compute dtype, if the accelerator's generation is in `native_on`
    (an empty `native_on` means every generation). Generation "other" (a plan-local
    accelerator) runs whatever the plan lists: DESIGN.md trusts the plan's measurement there.
    """
    if precision.weight_only:
        return "bf16"
    if (not precision.native_on or accelerator.generation in precision.native_on
            or accelerator.generation == "other"):
        return precision.compute_dtype
    return None


def why_not_native(precision: Precision, accelerator: Accelerator) -> str | None:
    """A human reason when `compute_dtype_on` is None, e.g.
    "fp8 is not native on ampere (A100 80GB); native on hopper, ada, blackwell"."""
    if compute_dtype_on(precision, accelerator) is not None:
        return None
    label = accelerator.name or accelerator.id
    return (
        f"{precision.id} is not native on {accelerator.generation} ({label}); "
        f"native on {', '.join(precision.native_on)}"
    )


# --- goodput: a roofline of continuous batching -------------------------------------------------

BOUNDS = ("bandwidth", "compute", "kv-memory", "tpot", "ttft")


@dataclass(frozen=True)
class Estimate:
    batch: int
    """Sequences in flight per replica (0: even one sequence misses the SLO or does not fit)."""
    ttft_ms: float
    tpot_ms: float
    goodput_output_tokens_per_s: float
    bound: str
    """What limited the batch: bandwidth, compute, kv-memory, tpot or ttft."""


@dataclass(frozen=True)
class Roofline:
    """Per-step costs of one replica for a workload (input, output tokens), in seconds.

    Decode step at batch B (continuous batching, every term per GPU of the TP group):
      weights: smoothmax_p(bytes(B) / BW, 2·active·B / C_dec) — the GEMMs, where bytes(B) are
               the dense weights plus the experts the B tokens touch, 1 − (1 − k/E)^B of them;
      KV:      max(B · kv_seq / BW, B · attention FLOPs / C_dec) at the mean context I + O/2;
      TP:      2 all-reduces per layer of B × hidden activations (ring: latency +
               2(TP−1)/TP × bytes / scale-up bandwidth); plus a fixed step overhead.
    Prefill: (2·active + causal attention) FLOPs per input token / C_pre, plus its all-reduces.
    Steady state: B/O requests finish per step, so each step also prefills B·I/O tokens:
      TPOT(B) = decode(B) + prefill(B·I/O);  goodput(B) = B / TPOT(B);
      TTFT(B) = prefill(I) + decode(B)  (a new request's prefill rides one step; no queueing).
    BW = bandwidth × η_mem, C = peak(dtype) × η (× MoE factor), all × MIG fraction ×
    generation factor. η come from EstimatorParams (catalogs/estimator.yaml).
    """

    input_tokens: int
    output_tokens: int
    bw: float  # bytes/s per GPU, effective
    c_dec: float  # FLOP/s per GPU, effective, decode
    c_pre: float  # FLOP/s per GPU, effective, prefill
    p: float  # smooth-max exponent
    dense_bytes: float  # per GPU, always read per step
    expert_bytes: float  # per GPU, read if touched
    expert_share: float  # k / E (0 for dense)
    gemm_flops_per_token: float  # per GPU
    kv_bytes_per_seq: float  # per GPU, at the mean decode context
    attn_flops_decode: float  # per GPU per sequence per step
    prefill_flops_per_token: float  # per GPU, incl. causal attention
    ar_count: int  # all-reduces per forward pass
    ar_latency: float  # s
    ar_bytes_per_token: float  # per all-reduce, incl. the ring factor, / bandwidth -> s
    overhead: float  # s

    def _allreduce(self, tokens: float) -> float:
        if self.ar_count == 0:
            return 0.0
        return self.ar_count * (self.ar_latency + tokens * self.ar_bytes_per_token)

    def parts(self, batch: float) -> tuple[float, float, float]:
        """(memory time, compute time, other time) of one decode step at `batch`, seconds."""
        touched = 1.0 - (1.0 - self.expert_share) ** batch if self.expert_share else 0.0
        t_w = (self.dense_bytes + self.expert_bytes * touched) / self.bw
        t_g = self.gemm_flops_per_token * batch / self.c_dec
        t_kv = batch * self.kv_bytes_per_seq / self.bw
        t_att = batch * self.attn_flops_decode / self.c_dec
        return t_w + t_kv, t_g + t_att, self._allreduce(batch) + self.overhead

    def decode_s(self, batch: float) -> float:
        touched = 1.0 - (1.0 - self.expert_share) ** batch if self.expert_share else 0.0
        t_w = (self.dense_bytes + self.expert_bytes * touched) / self.bw
        t_g = self.gemm_flops_per_token * batch / self.c_dec
        p = self.p
        gemm = t_w if t_g == 0 else (t_w**p + t_g**p) ** (1.0 / p)
        kv = batch * max(self.kv_bytes_per_seq / self.bw, self.attn_flops_decode / self.c_dec)
        return gemm + kv + self._allreduce(batch) + self.overhead

    def prefill_s(self, tokens: float) -> float:
        if tokens <= 0:
            return 0.0
        return tokens * self.prefill_flops_per_token / self.c_pre + self._allreduce(tokens)

    def tpot_s(self, batch: float) -> float:
        return self.decode_s(batch) + self.prefill_s(batch * self.input_tokens / self.output_tokens)

    def ttft_s(self, batch: float) -> float:
        return self.prefill_s(self.input_tokens) + self.decode_s(batch)

    def goodput(self, batch: float) -> float:
        return batch / self.tpot_s(batch) if batch > 0 else 0.0

    def dominant(self, batch: float) -> str:
        mem, comp, _ = self.parts(batch)
        comp += self.prefill_s(batch * self.input_tokens / self.output_tokens)
        return "compute" if comp > mem else "bandwidth"

    def batch_at_throughput(self, output_tokens_per_s: float, max_batch: float) -> float:
        """The (fractional) batch whose goodput is `output_tokens_per_s`, capped at max_batch."""
        if self.goodput(max_batch) <= output_tokens_per_s:
            return max_batch
        lo, hi = 0.0, max_batch
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self.goodput(mid) < output_tokens_per_s:
                lo = mid
            else:
                hi = mid
        return hi


def _peak_tflops(accelerator: Accelerator, dtype: str) -> float:
    table = accelerator.tflops_dense
    for d in (dtype, {"fp16": "bf16", "bf16": "fp16"}.get(dtype)):
        if d in table:
            return table[d]  # type: ignore[index]
    raise ValueError(
        f"accelerator '{accelerator.id}' gives no dense {dtype} TFLOPS: the goodput cannot be "
        "estimated — add tflops_dense or give a measured goodput"
    )


def roofline(
    model: Model,
    precision: Precision,
    accelerator: Accelerator,
    tp: int,
    input_tokens: int,
    output_tokens: int,
    *,
    mig: MigProfile | None = None,
    params: EstimatorParams | None = None,
    kv_bytes_per_elem: float | None = None,
) -> Roofline:
    """Precompute the per-step cost coefficients of one replica (see `Roofline`)."""
    p = params or EstimatorParams()
    if tp < 1:
        raise ValueError("tp must be ≥ 1")
    if mig is not None and tp != 1:
        raise ValueError("a MIG slice serves a replica on its own: tp must be 1")
    if input_tokens < 0 or output_tokens < 1:
        raise ValueError("input_tokens must be ≥ 0 and output_tokens ≥ 1")
    if accelerator.bandwidth_tb_s is None:
        raise ValueError(
            f"accelerator '{accelerator.id}' gives no bandwidth_tb_s: the goodput cannot be "
            "estimated — add it or give a measured goodput"
        )
    dtype = compute_dtype_on(precision, accelerator)
    if dtype is None:
        raise ValueError(why_not_native(precision, accelerator))
    peak = _peak_tflops(accelerator, dtype) * 1e12
    scale = (mig.compute_fraction if mig else 1.0) * p.generation_factor.get(
        accelerator.generation, 1.0
    )
    is_moe = bool(model.experts and model.experts > 1) or model.active_b < model.params_b
    moe = p.moe_compute_factor if is_moe else 1.0
    bw = accelerator.bandwidth_tb_s * 1e12 * p.eta_memory * scale
    c_dec = peak * p.eta_decode(dtype) * moe * scale
    c_pre = peak * p.eta_prefill(dtype) * moe * scale

    bpp = precision.bytes_per_param * GB
    active, total = model.active_b, model.params_b
    k, e = model.active_experts, model.experts
    if is_moe and k and e and e > k:
        per_expert = (total - active) / (e - k)
        dense_b, expert_b, share = active - k * per_expert, e * per_expert, k / e
    elif is_moe:  # expert layout unknown: every resident weight is read once per step
        dense_b, expert_b, share = total, 0.0, 0.0
    else:
        dense_b, expert_b, share = total, 0.0, 0.0

    # KV cache per GPU: heads split over TP; when TP > kv_heads (or MLA) the cache is replicated.
    mean_ctx = max(1, input_tokens + output_tokens // 2)
    kvb = precision.kv_bytes_per_elem if kv_bytes_per_elem is None else kv_bytes_per_elem
    if model.kv_gb_per_seq is not None:
        kv_seq = model.kv_gb_per_seq * GB  # stated at the working context: an upper bound
    else:
        kv_seq = kv_bytes_per_token(model, kvb, mean_ctx) * mean_ctx
    shards = 1 if model.attention == "mla" else min(tp, model.kv_heads or tp)
    kv_per_gpu = kv_seq / shards

    layers = model.layers or 80
    hd = head_dim_of(model)
    heads = model.attention_heads
    if heads and model.attention == "mla" and model.kv_lora_rank:
        per_ctx = 2 * heads * (2 * model.kv_lora_rank + (model.qk_rope_head_dim or 0))
    elif heads and hd:
        per_ctx = 4 * heads * hd  # QK^T and AV, 2 FLOPs per multiply-add
    else:
        per_ctx = 0
    attn_decode = layers * per_ctx * mean_ctx / tp
    attn_prefill_per_token = layers * per_ctx * (input_tokens / 2) / tp  # causal: half on average

    hidden = model.hidden_size or math.sqrt(model.params_b * GB / (12 * layers))
    if tp > 1:
        su = (accelerator.scale_up_bandwidth_gb_s or p.fallback_scale_up_gb_s) * GB * p.eta_scale_up
        ar_count = 2 * layers
        ar_bytes = 2 * (tp - 1) / tp * hidden * p.activation_bytes / su
    else:
        ar_count, ar_bytes = 0, 0.0
    return Roofline(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        bw=bw,
        c_dec=c_dec,
        c_pre=c_pre,
        p=p.roofline_sharpness,
        dense_bytes=dense_b * bpp / tp,
        expert_bytes=expert_b * bpp / tp,
        expert_share=share,
        gemm_flops_per_token=2 * active * GB / tp,
        kv_bytes_per_seq=kv_per_gpu,
        attn_flops_decode=attn_decode,
        prefill_flops_per_token=2 * active * GB / tp + attn_prefill_per_token,
        ar_count=ar_count,
        ar_latency=p.allreduce_latency_us * 1e-6,
        ar_bytes_per_token=ar_bytes,
        overhead=p.step_overhead_ms * 1e-3,
    )


def estimate(
    model: Model,
    precision: Precision,
    accelerator: Accelerator,
    tp: int,
    input_tokens: int,
    output_tokens: int,
    *,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    mig: MigProfile | None = None,
    params: EstimatorParams | None = None,
    kv_bytes_per_elem: float | None = None,
) -> Estimate:
    """Goodput of one replica at the SLO: the largest batch B ≤ max_batch (the KV concurrency)
    and ≤ the engine's batch cap with TPOT(B) ≤ tpot_ms and TTFT(B) ≤ ttft_ms; goodput =
    B / TPOT(B) output tokens/s (see `Roofline` for the cost model). Without SLOs it is the
    maximum throughput. When even B = 1 misses an SLO (or max_batch is 0) the batch and goodput
    are 0 and `bound` names the limit that failed. TPOT and TTFT grow with B and goodput does
    too, so a bisection over B finds the answer in ~12 steps.

    `kv_bytes_per_elem` defaults to the precision's KV element size (pass the one given to fit()).
    Raises ValueError when the accelerator lacks bandwidth or TFLOPS data, or the precision is
    not native on it.
    """
    p = params or EstimatorParams()
    rl = roofline(
        model, precision, accelerator, tp, input_tokens, output_tokens, mig=mig, params=p,
        kv_bytes_per_elem=kv_bytes_per_elem,
    )
    cap = p.max_batch if max_batch is None else min(max_batch, p.max_batch)
    kv_limited = max_batch is not None and max_batch <= p.max_batch

    def misses(b: int) -> str | None:
        if tpot_ms is not None and rl.tpot_s(b) * 1e3 > tpot_ms:
            return "tpot"
        if ttft_ms is not None and rl.ttft_s(b) * 1e3 > ttft_ms:
            return "ttft"
        return None

    def result(b: int, bound: str) -> Estimate:
        shown = max(b, 1)
        return Estimate(
            batch=b,
            ttft_ms=rl.ttft_s(shown) * 1e3,
            tpot_ms=rl.tpot_s(shown) * 1e3,
            goodput_output_tokens_per_s=rl.goodput(b),
            bound=bound,
        )

    if cap < 1:
        return result(0, "kv-memory")
    failed = misses(1)
    if failed:
        return result(0, failed)
    failed = misses(cap)
    if failed is None:
        return result(cap, "kv-memory" if kv_limited else rl.dominant(cap))
    lo, hi = 1, cap  # lo meets the SLO, hi misses it
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if misses(mid):
            hi = mid
        else:
            lo = mid
    return result(lo, misses(hi) or "tpot")
