"""Goodput at an SLO: a roofline of continuous batching with fitted efficiencies (catalogs/estimator.yaml).

Units: TB/s = 1e12 bytes/s, TFLOPS = 1e12 FLOP/s, throughput in output tokens/s. Every per-step
quantity is per GPU and per TPOT cycle (one output token for each of the B sequences of a replica).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from optimizer.inputs.schema.catalog import Accelerator, MigProfile, Model, Precision
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.physics.kept import kept
from optimizer.physics.layout import Layout, Links, links
from optimizer.physics.memory import (
    expert_split,
    head_dim_of,
    kv_bytes_per_seq,
    kv_bytes_read_per_step,
    kv_copies,
    moe_layer_count,
    sparse_context,
    weight_bytes,
    weight_parts,
)
from optimizer.physics.queueing import (
    mean_wait_s,
    poisson_quantile,
    pooled_wait_quantile_s,
    wait_quantile_s,
)
from optimizer.units import GB

# --- datatypes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compute:
    """How a precision runs on an accelerator: the matmul datatype, and whether weights are
    de-quantized on the fly (weight-only)."""

    dtype: str
    weight_only: bool


def compute_on(precision: Precision, accelerator: Accelerator) -> Compute | None:
    """The datatype the matrix multiplies run in on this accelerator, or None when it has no kernels.

    Native: the precision's compute dtype where the accelerator's generation is in `native_on`
    (an empty list means every generation). Weight-only (int4-awq, w8a16, and MXFP4 on Hopper):
    weights stay compressed in memory and are de-quantized to bf16 for the multiplies, on the
    generations that have the kernels (`weight_only_on`; every generation when the format is
    weight-only by nature and lists none). A plan-local accelerator of generation "other" runs
    whatever the plan lists: a measured goodput in the plan is trusted there.
    """
    gen = accelerator.generation
    if precision.weight_only:
        if not precision.weight_only_on or gen in precision.weight_only_on or gen == "other":
            return Compute("bf16", True)
        return None
    if not precision.native_on or gen in precision.native_on or gen == "other":
        return Compute(precision.compute_dtype, False)
    if gen in precision.weight_only_on:
        return Compute("bf16", True)
    return None


def group_dtype(precision: Precision, accelerator: Accelerator) -> str:
    """The datatype an estimate's group is named by: the compute dtype (fp16 as bf16), "weight-only" where
    weights are de-quantized on the fly, the precision's own where it has no kernels on the accelerator."""
    comp = compute_on(precision, accelerator)
    key = precision.compute_dtype if comp is None else ("weight-only" if comp.weight_only else comp.dtype)
    return {"fp16": "bf16"}.get(key, key)


def compute_dtype_on(precision: Precision, accelerator: Accelerator) -> str | None:
    c = compute_on(precision, accelerator)
    return c.dtype if c else None


def why_not_native(precision: Precision, accelerator: Accelerator) -> str | None:
    """A human reason when a precision cannot run on an accelerator, e.g.
    "fp8 is not native on ampere (NVIDIA A100 80GB SXM4): native on hopper, ada, blackwell"."""
    if compute_on(precision, accelerator) is not None:
        return None
    label = accelerator.name or accelerator.id
    where = f"native on {', '.join(precision.native_on)}" if precision.native_on else ""
    if precision.weight_only_on:
        where += ("; " if where else "") + f"weight-only kernels on {', '.join(precision.weight_only_on)}"
    kind = "has no kernels on" if precision.weight_only else "is not native on"
    return f"{precision.id} {kind} {accelerator.generation} ({label}): {where}"


# --- goodput: a roofline of continuous batching -------------------------------------------------

BOUNDS = ("bandwidth", "compute", "kv-memory", "tpot", "ttft")


@dataclass(frozen=True)
class Estimate:
    batch: float
    """Sequences in flight per replica, a mean over time (continuous batching, Little's law): whole when
    the KV memory or the engine's cap limits it, fractional (to 1/BATCH_STEPS) when an SLO does
    (0: even one sequence misses the SLO or does not fit)."""
    ttft_ms: float
    """TTFT at the SLO's percentile with the replica at this batch (queueing included)."""
    tpot_ms: float
    """TPOT at the SLO's percentile at this batch (mean when no percentile is asked)."""
    goodput_output_tokens_per_s: float
    bound: str
    """What limited the batch: bandwidth, compute, kv-memory, tpot or ttft."""
    calibrated: bool = True
    """False when no published result calibrated this (generation, datatype): goodput is then the
    roofline's × uncalibrated_headroom, and the output says so."""
    group: str = ""
    """The (generation/datatype) group of efficiencies used."""
    raw_goodput_output_tokens_per_s: float = 0.0
    """Goodput before the uncalibrated headroom (and the estimator's goodput_factor)."""
    layout: str = "tp1"
    prefill_share: float = 0.0
    """Disaggregated: prefill GPUs per decode GPU."""


BATCH_TOLERANCE = 1e-6
"""Roofline.batch_at_throughput finds the batch to within this many sequences."""

BATCH_STEPS = 256
"""An SLO-bound batch is found to 1/BATCH_STEPS of a sequence (8 more evaluations past the whole batch)."""


@dataclass(frozen=True)
class Roofline:
    """Per-step costs of one replica for a workload (input I, output O tokens per request), seconds.

    Decode at batch B (continuous batching), per GPU and per TPOT cycle (one token for each of the
    B sequences; under pipeline parallelism that is pp micro-batches of B/pp through every stage):
      weights:   smoothmax_p(bytes(B) / BW, gemm_flops · B / C_dec) — the GEMMs; bytes(B) are the
                 always-read weights plus the experts the tokens touch, 1 − (1 − k/E)^(B/pp) of them;
      KV:        B · max(kv_bytes / BW, attention_flops / C_dec) at the mean context I + O/2;
      comm:      all-reduces (TP), all-to-alls (EP), stage sends (PP): latency + B · bytes / bandwidth;
      overhead:  a fixed cost per micro-batch step.
    Prefill: flops per input token / C_pre plus its communication. Continuous batching prefills
    B·I/O tokens per cycle, so TPOT(B) = decode(B) + prefill(B·I/O) and goodput(B) = B / TPOT(B).
    At a percentile p, TPOT_p(B) = decode(B) + prefill(I · Q_p(B) / O), Q_p the p-quantile of the
    requests (Poisson, mean B) that arrive while one request decodes; and
      TTFT_p(B) = wait_p + ⌈I / chunk⌉ · decode(B) + prefill_alone(I),
    wait_p the M/D/c queue for prefill: c = dp·pp servers, service prefill_alone(I), arrivals
    λ = B / (TPOT(B) · O) — so a busier replica waits longer and a TTFT target limits the batch.
    """

    input_tokens: int
    output_tokens: int
    bw: float
    c_dec: float
    c_pre: float
    p: float
    pp: int
    dense_bytes: float
    expert_bytes: float
    expert_share: float
    gemm_flops_per_seq: float
    kv_bytes_per_seq: float
    attn_flops_per_seq: float
    comm_fixed_s: float
    """Per TPOT cycle: latencies of every collective."""
    comm_s_per_seq: float
    """Per TPOT cycle and sequence: bytes / bandwidth of every collective."""
    overhead: float
    prefill_flops_per_token: float
    """Per GPU when prefill spreads over the whole replica (throughput)."""
    prefill_comm_s_per_token: float
    prefill_alone_s_per_token: float
    """One request prefilled by one attention group through every stage (latency)."""
    prefill_alone_fixed_s: float
    prefill_servers: int
    chunk_tokens: int
    c_attn: float = 0.0
    """FLOP/s of decode attention, which runs at the KV cache's precision (0: the GEMMs' c_dec)."""
    # Speculative decoding (docs/speculative-and-prefix-caching.md); the defaults are plain decoding.
    verify_tokens: int = 1
    """Tokens each sequence verifies per engine step: k + 1 (k drafted tokens)."""
    tokens_per_step: float = 1.0
    """Tokens each sequence emits per engine step on average: (1 − a^(k+1)) / (1 − a)."""
    draft_share: float = 0.0
    """MTP: the drafting's cost per step as a share of the model's weights-and-KV part of a plain step
    (k draft tokens, each one extra layer's worth: k / layers)."""
    draft: Roofline | None = None
    """A draft model's roofline on the same GPUs: `draft_steps` of its decode steps per engine step."""
    draft_steps: int = 0
    # Prefix caching: the prefill costs above are already those of the uncached tokens.
    uncached_share: float = 1.0
    """Share of a prompt's tokens that are prefilled (1 − the prefix cache's hit rate)."""
    eff: Efficiency | None = field(default=None, repr=False, compare=False)
    """The efficiencies `roofline()` derived the fields from (None: built by hand): `estimate` and
    `disaggregated` reuse them for a roofline of their own arguments."""
    # What a roofline answers depends on its fields alone. The last decode step is kept (a probe asks for
    # it for its TPOT and again for its TTFT), and so are a disaggregated group's decode-only copy and the
    # batches at a throughput (workloads that differ only in their SLO ask the same). A copy
    # (dataclasses.replace) starts with none kept.
    _last_decode: tuple = field(default=(), init=False, repr=False, compare=False)
    _other_memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Per-roofline constants of the plain decode step and the prefill (each the very expression the
    # methods below would evaluate on every call, so the answers are the same floats).
    _fast: bool = field(default=False, init=False, repr=False, compare=False)
    """The constants below are set (a hand-made roofline with a zero rate leaves them unset: each method
    then evaluates its expression whole, and raises where it would)."""
    _plain: bool = field(default=False, init=False, repr=False, compare=False)
    _kv_per_seq_s: float = field(default=0.0, init=False, repr=False, compare=False)
    _t_w: float = field(default=0.0, init=False, repr=False, compare=False)
    _t_w_p: float = field(default=0.0, init=False, repr=False, compare=False)
    _inv_p: float = field(default=0.0, init=False, repr=False, compare=False)
    _prefill_per_token: float = field(default=0.0, init=False, repr=False, compare=False)
    _alone_s: float = field(default=0.0, init=False, repr=False, compare=False)
    _chunks: int = field(default=1, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        try:
            kv_per_seq_s = max(self.kv_bytes_per_seq / self.bw, self.attn_flops_per_seq * 1 / (self.c_attn or self.c_dec))
            t_w = (self.dense_bytes + self.expert_bytes * 0.0) / self.bw  # no experts touched: _touched is 0.0
            t_w_p, inv_p = t_w**self.p, 1.0 / self.p
            per_token = self.prefill_flops_per_token / self.c_pre + self.prefill_comm_s_per_token
            alone = self.prefill_alone_s(self.input_tokens)
            chunks = max(1, math.ceil(self.input_tokens * self.uncached_share / self.chunk_tokens))
        except (ArithmeticError, ValueError, TypeError):
            return
        for name, value in (("_kv_per_seq_s", kv_per_seq_s), ("_t_w", t_w), ("_t_w_p", t_w_p), ("_inv_p", inv_p),
                            ("_prefill_per_token", per_token), ("_alone_s", alone), ("_chunks", chunks)):
            put(self, name, value)
        put(self, "_fast", True)
        put(self, "_plain", self.verify_tokens == 1 and self.draft is None and not self.draft_share)

    def parts(self, batch: float) -> tuple[float, float, float]:
        """(memory time, compute time, other time) of one decode cycle at `batch`, seconds."""
        v = self.verify_tokens
        touched = self._touched(batch * v)
        t_w = (self.dense_bytes + self.expert_bytes * touched) / self.bw
        t_g = self.gemm_flops_per_seq * batch * v / self.c_dec
        t_kv = batch * self.kv_bytes_per_seq / self.bw
        t_att = batch * self.attn_flops_per_seq * v / (self.c_attn or self.c_dec)
        mem, comp, other = t_w + t_kv, t_g + t_att, self._comm(batch * v) + self.overhead
        if v == 1 and self.draft is None and not self.draft_share:
            return mem, comp, other
        if self.draft_share:
            d_mem, d_comp, _ = replace(self, verify_tokens=1, tokens_per_step=1.0, draft_share=0.0).parts(batch)
            mem, comp = mem + self.draft_share * d_mem, comp + self.draft_share * d_comp
        if self.draft is not None:
            d_mem, d_comp, d_other = self.draft.parts(batch)
            mem, comp, other = (mem + self.draft_steps * d_mem, comp + self.draft_steps * d_comp,
                                other + self.draft_steps * d_other)
        tau = self.tokens_per_step
        return mem / tau, comp / tau, other / tau

    def _touched(self, batch: float) -> float:
        if not self.expert_share:
            return 0.0
        return 1.0 - (1.0 - self.expert_share) ** max(batch / self.pp, 1e-9)

    def _comm(self, batch: float) -> float:
        return self.comm_fixed_s + batch * self.comm_s_per_seq if batch > 0 else 0.0

    def decode_s(self, batch: float) -> float:
        """One TPOT cycle at `batch`: the engine step (step_s) over the tokens it emits per sequence."""
        last = self._last_decode
        if last and last[0] == batch and type(last[0]) is type(batch):
            return last[1]
        d = self._decode(batch)
        object.__setattr__(self, "_last_decode", (batch, d))
        return d

    def _decode(self, batch: float) -> float:
        """decode_s, unkept."""
        if not self._plain:
            if self.verify_tokens == 1 and self.draft is None and not self.draft_share:
                return self._body_s(batch, 1) + self._comm(batch) + self.overhead
            return self.step_s(batch) / self.tokens_per_step
        # _body_s(batch, 1) + _comm(batch) + overhead, with the constants of a one-token step
        if self.expert_share:
            t_w = (self.dense_bytes + self.expert_bytes * self._touched(batch)) / self.bw
            t_g = self.gemm_flops_per_seq * batch / self.c_dec
            p = self.p
            gemm = t_w if t_g == 0 else (t_w**p + t_g**p) ** self._inv_p
        else:
            t_g = self.gemm_flops_per_seq * batch / self.c_dec
            gemm = self._t_w if t_g == 0 else (self._t_w_p + t_g**self.p) ** self._inv_p
        body = gemm + batch * self._kv_per_seq_s
        return body + (self.comm_fixed_s + batch * self.comm_s_per_seq if batch > 0 else 0.0) + self.overhead

    def step_s(self, batch: float) -> float:
        """One engine step at `batch`: each sequence verifies `verify_tokens` tokens (the weights read
        once, the GEMMs, attention FLOPs and collectives × verify_tokens), after the drafting."""
        v = self.verify_tokens
        step = self._body_s(batch, v) + self._comm(batch * v) + self.overhead
        if self.draft_share:
            step += self.draft_share * self._body_s(batch, 1)
        if self.draft is not None:
            step += self.draft_steps * self.draft.decode_s(batch)
        return step

    def _body_s(self, batch: float, v: int) -> float:
        """The GEMMs (smooth max of weight reads and FLOPs) and attention of a step of `v` tokens per sequence."""
        t_w = (self.dense_bytes + self.expert_bytes * self._touched(batch * v)) / self.bw
        t_g = self.gemm_flops_per_seq * (batch * v) / self.c_dec
        p = self.p
        gemm = t_w if t_g == 0 else (t_w**p + t_g**p) ** (1.0 / p)
        kv = batch * max(self.kv_bytes_per_seq / self.bw, self.attn_flops_per_seq * v / (self.c_attn or self.c_dec))
        return gemm + kv

    def prefill_s(self, tokens: float) -> float:
        """Prefill of `tokens` spread over the whole replica (continuous batching)."""
        if tokens <= 0:
            return 0.0
        return tokens * (self.prefill_flops_per_token / self.c_pre + self.prefill_comm_s_per_token)

    def prefill_alone_s(self, tokens: float) -> float:
        """One request's prefill of `tokens`, alone, on one attention group through every stage."""
        if tokens <= 0:
            return 0.0
        return tokens * self.prefill_alone_s_per_token + self.prefill_alone_fixed_s

    def tpot_s(self, batch: float, percentile: float | None = None) -> float:
        """Mean TPOT at `batch`; with a percentile, that percentile of a request's mean TPOT."""
        return self._tpot_after(self.decode_s(batch), batch, percentile)

    def _tpot_after(self, step: float, batch: float, percentile: float | None = None) -> float:
        """TPOT at `batch` given its decode step (decode_s(batch)), for callers that already have it."""
        arrivals = batch if percentile is None else poisson_quantile(batch, percentile)
        tokens = arrivals * self.input_tokens / self.output_tokens
        if not self._fast:
            return step + self.prefill_s(tokens)
        return step + (0.0 if tokens <= 0 else tokens * self._prefill_per_token)  # prefill_s(tokens)

    def request_rate(self, batch: float, step: float | None = None) -> float:
        """Requests per second a replica completes (and admits) at `batch` (`step`: decode_s(batch), when known)."""
        if batch <= 0:
            return 0.0
        return batch / (self._tpot_after(self.decode_s(batch) if step is None else step, batch) * self.output_tokens)

    def ttft_s(self, batch: float, percentile: float | None = None) -> float:
        """TTFT of a request arriving while the replica runs at `batch`; with a percentile, its
        queueing for prefill is taken at that percentile (mean without)."""
        prefilled = self.input_tokens * self.uncached_share  # a cached prefix is not prefilled again
        if self._fast:
            s, chunks = self._alone_s, self._chunks
        else:
            s, chunks = self.prefill_alone_s(self.input_tokens), max(1, math.ceil(prefilled / self.chunk_tokens))
        cycle = self.decode_s(batch)
        step = cycle * self.tokens_per_step  # one chunk per engine step
        base = chunks * step + s
        if batch <= 0:
            return base
        lam = self.request_rate(batch, cycle)
        servers = self.prefill_servers
        # The prefill budget per step caps what the servers take in: a chunk of `chunk_tokens` per
        # decode step at most; beyond that requests queue however fast the GPUs would prefill.
        budget = self.chunk_tokens / step * servers
        load = max(lam * s, lam * prefilled / budget * servers)
        if load >= servers:
            return math.inf
        wait = (wait_quantile_s(servers, load / s, s, percentile) if percentile is not None
                else mean_wait_s(servers, load / s, s))
        return wait + base

    def goodput(self, batch: float) -> float:
        return batch / self.tpot_s(batch) if batch > 0 else 0.0

    def _goodput(self, batch: float) -> float:
        """goodput, unkept (for a search's probes, which no other search repeats)."""
        if batch > 0:
            return batch / self._tpot_after(self._decode(batch), batch, None)
        return 0.0

    def dominant(self, batch: float) -> str:
        mem, comp, _ = self.parts(batch)
        comp += self.prefill_s(batch * self.input_tokens / self.output_tokens)
        return "compute" if comp > mem else "bandwidth"

    def batch_at_throughput(self, output_tokens_per_s: float, max_batch: float) -> float:
        """The (fractional) batch whose goodput is `output_tokens_per_s`, capped at max_batch, to within
        BATCH_TOLERANCE sequences: goodput rises with the batch, so the root stays bracketed; false
        position with the Illinois step converges in a few evaluations where halving takes thirty."""
        # (max_batch itself may be the answer: its type is part of the key)
        key = ("at", output_tokens_per_s, max_batch, type(output_tokens_per_s), type(max_batch))
        memo = self._other_memo
        if key not in memo:
            memo[key] = self._batch_at_throughput(output_tokens_per_s, max_batch)
        return memo[key]

    def decode_only(self) -> Roofline:
        """This roofline with nothing prefilled on it (a disaggregated decode group: its sequences arrive with
        their KV), one copy per roofline."""
        memo = self._other_memo
        if "decode-only" not in memo:
            memo["decode-only"] = replace(self, prefill_flops_per_token=0.0, prefill_comm_s_per_token=0.0)
        return memo["decode-only"]

    def _batch_at_throughput(self, output_tokens_per_s: float, max_batch: float) -> float:
        f_hi = self.goodput(max_batch) - output_tokens_per_s
        if f_hi <= 0:
            return max_batch
        lo, hi, f_lo = 0.0, float(max_batch), -output_tokens_per_s
        side = 0
        for _ in range(100):
            if hi - lo <= BATCH_TOLERANCE:
                break
            mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            if not lo < mid < hi:
                mid = 0.5 * (lo + hi)
            f_mid = self._goodput(mid) - output_tokens_per_s
            if f_mid < 0:
                lo, f_lo = mid, f_mid
                if side == -1:
                    f_hi *= 0.5  # Illinois: the end kept twice has its weight halved
                side = -1
            elif f_mid > 0:
                hi, f_hi = mid, f_mid
                if side == 1:
                    f_lo *= 0.5
                side = 1
            else:
                return mid
            if abs(f_mid) <= 1e-12 * output_tokens_per_s:
                return mid
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


@dataclass(frozen=True)
class Efficiency:
    """The efficiencies one (accelerator, precision) pair runs at."""

    bw_scale: float
    c_dec: float
    c_pre: float
    group: str
    calibrated: bool


def efficiency(precision: Precision, accelerator: Accelerator, p: EstimatorParams, *, moe: bool,
               mig: MigProfile | None = None) -> Efficiency:
    comp = compute_on(precision, accelerator)
    if comp is None:
        raise ValueError(why_not_native(precision, accelerator))
    peak = _peak_tflops(accelerator, comp.dtype) * 1e12
    dtype_key = group_dtype(precision, accelerator)
    group = p.group(accelerator.generation, dtype_key)
    factor = p.generation_factor.get(accelerator.generation, 1.0) * p.group_factor.get(group, 1.0)
    wo = p.weight_only_factor if comp.weight_only else 1.0
    moe_f = p.moe_compute_factor if moe else 1.0
    compute_share = mig.compute_fraction if mig else 1.0
    memory_share = (mig.memory_fraction or mig.compute_fraction) if mig else 1.0
    return Efficiency(
        bw_scale=p.eta_memory * memory_share * factor,
        c_dec=peak * p.eta_decode(comp.dtype) * moe_f * wo * compute_share * factor,
        c_pre=peak * p.eta_prefill(comp.dtype) * moe_f * wo * compute_share * factor,
        group=group,
        calibrated=p.is_calibrated(accelerator.generation, dtype_key) or accelerator.generation == "other")


@kept
def _efficiency(precision: Precision, accelerator: Accelerator, p: EstimatorParams, moe: bool,
                mig: MigProfile | None) -> Efficiency:
    return efficiency(precision, accelerator, p, moe=moe, mig=mig)


def _attention_flops(accelerator: Accelerator, kv_bytes: float, eff: Efficiency, p: EstimatorParams,
                     mig: MigProfile | None) -> float:
    """Decode attention runs at the KV cache's precision: FP8 where the cache is 8-bit and the
    accelerator has FP8 tensor cores, else bf16 — whatever the weights' format."""
    dtype = "fp8" if kv_bytes <= 1.0 and "fp8" in accelerator.tflops_dense else "bf16"
    try:
        peak = _peak_tflops(accelerator, dtype) * 1e12
    except ValueError:
        return 0.0
    share = mig.compute_fraction if mig else 1.0
    factor = p.generation_factor.get(accelerator.generation, 1.0) * p.group_factor.get(eff.group, 1.0)
    return peak * p.eta_decode(dtype) * share * factor


def _moe(model: Model) -> bool:
    return bool(model.experts and model.experts > 1) or model.active_b < model.params_b


def sparse_prefill_context(model: Model, input_tokens: float) -> float:
    """Tokens a prompt's query attends to in a full-attention layer, on average over its positions: half the
    prompt (causal), or under sparse attention min(position, k) averaged — (k²/2 + (n − k)·k) / n past k."""
    k, n = model.sparse_topk, input_tokens
    if not k or n <= k:
        return n / 2
    return (k * k / 2 + (n - k) * k) / n


def roofline(model: Model, precision: Precision, accelerator: Accelerator, tp: int | Layout,
             input_tokens: int, output_tokens: int, *, mig: MigProfile | None = None,
             params: EstimatorParams | None = None, kv_bytes_per_elem: float | None = None,
             link: Links | None = None, speculative: Speculation | None = None, draft_model: Model | None = None,
             prefix_hit_rate: float = 0.0) -> Roofline:
    """Precompute the per-cycle cost coefficients of one replica (see `Roofline`).

    `tp` is a tensor-parallel degree or a whole Layout; `link` the links its collectives use
    (default: what the accelerator's own scale-up domain and scale-out network give).
    `speculative` (with `draft_model` for the draft method) and `prefix_hit_rate` are the workload's
    speculative decoding and prefix cache (docs/speculative-and-prefix-caching.md); none: plain serving.
    """
    if not 0 <= prefix_hit_rate < 1:
        raise ValueError("prefix_hit_rate must be in [0, 1)")
    p = params or EstimatorParams()
    layout = tp if isinstance(tp, Layout) else Layout("tp", tp=tp)
    if mig is not None and layout.gpus != 1:
        raise ValueError("a MIG slice serves a replica on its own: tp must be 1")
    if input_tokens < 0 or output_tokens < 1:
        raise ValueError("input_tokens must be ≥ 0 and output_tokens ≥ 1")
    if accelerator.bandwidth_tb_s is None:
        raise ValueError(
            f"accelerator '{accelerator.id}' gives no bandwidth_tb_s: the goodput cannot be "
            "estimated — add it or give a measured goodput"
        )
    is_moe = _moe(model)
    eff = _efficiency(precision, accelerator, p, is_moe, mig)
    ln = link or links(accelerator, layout, p)
    tp_, dp, pp = layout.tp, layout.dp, layout.pp
    stage = layout.stage_gpus
    bw = accelerator.bandwidth_tb_s * 1e12 * eff.bw_scale

    # Weights by part, in bytes: what every step reads, and the routed experts. A low-bit checkpoint
    # keeps the output layer (and, quantized_scope: experts, all but the experts) 16-bit.
    parts, wb = weight_parts(model), weight_bytes(model, precision)
    experts_b, other_b, output_b = wb.experts, wb.other, wb.output
    _routed, per_expert = expert_split(model)
    k = model.active_experts or 0
    share = k / model.experts if (per_expert and model.experts) else 0.0
    # Always read per GPU per cycle: attention/dense/output sharded by tp, once per micro-batch.
    dense_bytes = (other_b + output_b) / tp_
    expert_bytes = experts_b / stage

    active_exp = k * per_expert
    active_dense = model.active_b * GB - active_exp - parts.embedding
    active_dense = max(active_dense, 0.0) if (parts.embedding or per_expert) else model.active_b * GB
    # GEMM flops per GPU per cycle for each sequence of the replica batch
    gemm = (2 * active_dense / (tp_ * dp) + 2 * active_exp / stage) / pp

    # KV cache at the mean context of a decode step, per GPU per sequence of the batch
    mean_ctx = max(1, input_tokens + output_tokens // 2)
    kvb = precision.kv_bytes_per_elem if kv_bytes_per_elem is None else kv_bytes_per_elem
    kv_seq = (model.kv_gb_per_seq * GB if model.kv_gb_per_seq is not None
              else kv_bytes_read_per_step(model, mean_ctx, kvb))
    kv_per_gpu = kv_seq * kv_copies(model, tp_) / (tp_ * dp * pp)

    layers = model.layers or 80
    hd = head_dim_of(model)
    heads = model.attention_heads
    attention_layers = max(layers - model.linear_attention_layers, 0)
    if heads and model.attention == "mla" and model.kv_lora_rank:
        # decode attends in the absorbed form, over the 512-wide latent; prefill in the plain one, over
        # 192-wide keys and 128-wide values (DeepSeek's kernels and the engines' MLA prefill paths)
        per_ctx = 2 * heads * (2 * model.kv_lora_rank + (model.qk_rope_head_dim or 0))
        per_ctx_prefill = (2 * heads * ((model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0)
                                        + (model.v_head_dim or 0))
                           if model.qk_nope_head_dim and model.v_head_dim else per_ctx)
    elif heads and hd:
        per_ctx = per_ctx_prefill = 4 * heads * hd  # QK^T and AV, 2 FLOPs per multiply-add
    else:
        per_ctx = per_ctx_prefill = 0
    window = model.sliding_window
    win_layers = model.sliding_window_layers if window else 0
    attended, attended_prefill = sparse_context(model, mean_ctx), sparse_prefill_context(model, input_tokens)
    ctx_decode = (attention_layers - win_layers) * attended + win_layers * min(mean_ctx, window or mean_ctx)
    ctx_prefill = ((attention_layers - win_layers) * attended_prefill
                   + win_layers * min(input_tokens / 2, window or input_tokens))
    # a sparse-attention indexer scores every cached token for each query: 2 FLOPs per element of its heads
    indexer = 2 * (model.indexer_heads or 0) * (model.indexer_head_dim or 0) * attention_layers
    attn_decode = (per_ctx * ctx_decode + indexer * mean_ctx) / (tp_ * dp * pp)
    attn_prefill_per_token = per_ctx_prefill * ctx_prefill + indexer * input_tokens / 2  # one request, all layers
    uncached = 1.0 - prefix_hit_rate
    if prefix_hit_rate > 0:
        # Only the uncached suffix is prefilled, but each of its tokens attends to the whole prefix before
        # it: per prompt token, (1 − h) × the mean context the suffix's positions attend to.
        n, cut = float(input_tokens), prefix_hit_rate * input_tokens
        span = max(n - cut, 1e-9)

        def mean_over_suffix(total) -> float:
            return (total(n) - total(cut)) / span

        full = mean_over_suffix(lambda x: x * sparse_prefill_context(model, x))
        win = mean_over_suffix(lambda x: x * x / 2 if x <= (window or x) else window * window / 2 + (x - window) * window)
        ctx_prefill = (attention_layers - win_layers) * full + win_layers * win
        attn_prefill_per_token = uncached * (per_ctx_prefill * ctx_prefill + indexer * (n + cut) / 2)

    hidden = model.hidden_size or math.sqrt(model.params_b * GB / (12 * layers))
    act = hidden * p.activation_bytes
    # Communication per cycle: all-reduces (2 per layer) of the tp group, all-to-all of the experts
    # (dispatch and combine per MoE layer), sends between pipeline stages.
    fixed, per_seq = 0.0, 0.0
    if tp_ > 1:
        ar_bytes = 2 * (tp_ - 1) / tp_ * act
        fixed += 2 * layers * ln.tp_latency
        per_seq += 2 * layers * ar_bytes / ln.tp_bw / (dp * pp)
    moe_layers = moe_layer_count(model) if _moe(model) else 0
    fixed += moe_layers * p.moe_layer_us * 1e-6 * pp / pp  # every MoE layer, once per micro-batch and stage
    if dp > 1 and moe_layers:
        a2a = (stage - 1) / stage * k * act
        fixed += 2 * moe_layers * ln.a2a_latency
        per_seq += 2 * moe_layers * a2a / ln.a2a_bw / (dp * pp)
    if pp > 1:
        fixed += pp * ln.stage_latency
        per_seq += act / ln.stage_bw / dp

    # Per prompt token: the GEMMs and collectives of the uncached tokens, the attention computed above.
    prefill_flops = ((2 * active_dense / (tp_ * dp) + 2 * active_exp / stage) / pp * uncached
                     + attn_prefill_per_token / (tp_ * dp * pp))
    prefill_comm = per_seq * uncached  # the same collectives, one token's worth each
    alone_flops = (2 * active_dense / tp_ + 2 * active_exp / stage) * uncached + attn_prefill_per_token / tp_
    alone_per_token = alone_flops / eff.c_pre
    alone_fixed = 0.0
    if tp_ > 1:
        alone_per_token += 2 * layers * 2 * (tp_ - 1) / tp_ * act / ln.tp_bw * uncached
        alone_fixed += 2 * layers * ln.tp_latency
    if dp > 1 and moe_layers:
        alone_per_token += 2 * moe_layers * (stage - 1) / stage * k * act / ln.a2a_bw * uncached
        alone_fixed += 2 * moe_layers * ln.a2a_latency
    if pp > 1:
        alone_per_token += (pp - 1) * act / ln.stage_bw * uncached
        alone_fixed += (pp - 1) * ln.stage_latency
    spec = _speculation(speculative, layers, draft_model, precision, accelerator, layout, input_tokens,
                        output_tokens, mig, p, kv_bytes_per_elem, link)
    return Roofline(
        input_tokens=input_tokens, output_tokens=output_tokens, bw=bw, c_dec=eff.c_dec, c_pre=eff.c_pre,
        p=p.roofline_sharpness, pp=pp, dense_bytes=dense_bytes, expert_bytes=expert_bytes, expert_share=share,
        gemm_flops_per_seq=gemm, kv_bytes_per_seq=kv_per_gpu, attn_flops_per_seq=attn_decode,
        comm_fixed_s=fixed, comm_s_per_seq=per_seq, overhead=p.step_overhead_ms * 1e-3 * pp,
        prefill_flops_per_token=prefill_flops, prefill_comm_s_per_token=prefill_comm,
        prefill_alone_s_per_token=alone_per_token, prefill_alone_fixed_s=alone_fixed,
        prefill_servers=dp * pp, chunk_tokens=p.prefill_chunk_tokens,
        c_attn=_attention_flops(accelerator, kvb, eff, p, mig), uncached_share=uncached, eff=eff, **spec)


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: `method` mtp (the model's own multi-token-prediction layers draft) or draft
    (a separate draft model), `draft_tokens` k drafted per step, `acceptance` a, the chance each drafted
    token is accepted (given the ones before it were)."""

    method: str
    draft_tokens: int
    acceptance: float

    def tokens_per_step(self) -> float:
        """Mean tokens a sequence emits per step: the accepted run of drafts plus the verifier's own token,
        Σ_{i=0..k} a^i = (1 − a^(k+1)) / (1 − a)."""
        a, k = self.acceptance, self.draft_tokens
        return (1.0 - a ** (k + 1)) / (1.0 - a)


def _speculation(spec: Speculation | None, layers: int, draft_model: Model | None, precision: Precision,
                 accelerator: Accelerator, layout: Layout, input_tokens: int, output_tokens: int,
                 mig: MigProfile | None, p: EstimatorParams, kv_bytes_per_elem: float | None,
                 link: Links | None) -> dict:
    """The Roofline fields of a speculative decoding setup (none: plain decoding)."""
    if spec is None:
        return {}
    k, a = spec.draft_tokens, spec.acceptance
    if not 1 <= k <= 16 or not 0 <= a < 1:
        raise ValueError("speculative decoding needs 1 ≤ draft_tokens ≤ 16 and 0 ≤ acceptance < 1")
    out = {"verify_tokens": k + 1, "tokens_per_step": spec.tokens_per_step()}
    if spec.method == "mtp":
        out["draft_share"] = k / layers
    elif spec.method == "draft":
        if draft_model is None:
            raise ValueError("speculative method draft needs a draft model")
        out["draft"] = roofline(draft_model, precision, accelerator, layout, input_tokens, output_tokens, mig=mig,
                                params=p, kv_bytes_per_elem=kv_bytes_per_elem, link=link)
        out["draft_steps"] = k
    else:
        raise ValueError(f"unknown speculative method '{spec.method}' (mtp or draft)")
    return out


def estimate(model: Model, precision: Precision, accelerator: Accelerator, tp: int | Layout,
             input_tokens: int, output_tokens: int, *, ttft_ms: float | None = None,
             tpot_ms: float | None = None, percentile: float | None = None, max_batch: int | None = None,
             mig: MigProfile | None = None, params: EstimatorParams | None = None,
             kv_bytes_per_elem: float | None = None, link: Links | None = None,
             rl: Roofline | None = None) -> Estimate:
    """Goodput of one replica at the SLO: the largest batch B ≤ max_batch (the KV concurrency)
    and ≤ the engine's batch cap with TPOT_p(B) ≤ tpot_ms and TTFT_p(B) ≤ ttft_ms (p = `percentile`;
    the mean without one); goodput = B / TPOT(B) output tokens/s (see `Roofline`). B is the mean
    occupancy of continuous batching, so where an SLO limits it, it is fractional: the largest
    multiple of 1/BATCH_STEPS that meets the SLO (a replica can hold 2.9 sequences on average where
    3 would miss a TTFT target and 2 leaves a third of its goodput unused); the KV memory and the
    engine cap limit it to whole sequences. Without SLOs it is the maximum throughput. When even
    B = 1 misses an SLO (or max_batch is 0) the batch and goodput are 0 and `bound` names the limit
    that failed. TPOT and TTFT grow with B and goodput does too, so a bisection in steps of
    1/BATCH_STEPS finds the answer (~20 probes up to the engine cap; guided by how far each end misses
    its target, ~7).

    Where no published result calibrated the (generation, datatype) group, goodput keeps
    `uncalibrated_headroom` of the roofline's and `calibrated` is False.
    Raises ValueError when the accelerator lacks bandwidth or TFLOPS data, or the precision has
    no kernels on it.
    """
    p = params or EstimatorParams()
    layout = tp if isinstance(tp, Layout) else Layout("tp", tp=tp)
    if rl is None:  # a caller that has the replica's roofline (of these same arguments) passes it as `rl`
        rl = roofline(model, precision, accelerator, layout, input_tokens, output_tokens, mig=mig, params=p,
                      kv_bytes_per_elem=kv_bytes_per_elem, link=link)
    eff = rl.eff or efficiency(precision, accelerator, p, moe=_moe(model), mig=mig)
    cap = p.max_batch if max_batch is None else min(max_batch, p.max_batch)
    kv_limited = max_batch is not None and max_batch <= p.max_batch
    return _best_batch(rl, cap, kv_limited, ttft_ms, tpot_ms, percentile, eff, p, layout.label)


def _best_batch(rl: Roofline, cap: int, kv_limited: bool, ttft_ms: float | None, tpot_ms: float | None,
                percentile: float | None, eff: Efficiency, p: EstimatorParams, label: str) -> Estimate:
    def judged(b: float) -> tuple[str | None, float]:
        """Which target the batch misses (None: it meets both), and by how much the worse one is
        exceeded as a share of its target (≤ 0 when met; a guide for the search, never its verdict)."""
        why, excess = None, -1.0
        if tpot_ms is not None:
            tpot = rl.tpot_s(b, percentile) * 1e3
            why, excess = ("tpot" if tpot > tpot_ms else None), tpot / tpot_ms - 1.0
        if ttft_ms is not None and why is None:
            ttft = rl.ttft_s(b, percentile) * 1e3
            why, excess = ("ttft" if ttft > ttft_ms else None), max(excess, ttft / ttft_ms - 1.0)
        return why, excess

    def result(b: float, bound: str) -> Estimate:
        shown = max(b, 1)
        raw = rl.goodput(b)
        headroom = (1.0 if eff.calibrated else p.uncalibrated_headroom) * p.goodput_factor
        return Estimate(batch=b, ttft_ms=rl.ttft_s(shown, percentile) * 1e3, tpot_ms=rl.tpot_s(shown, percentile) * 1e3,
                        goodput_output_tokens_per_s=raw * headroom, bound=bound, calibrated=eff.calibrated,
                        group=eff.group, raw_goodput_output_tokens_per_s=raw, layout=label)

    if cap < 1:
        return result(0, "kv-memory")
    failed, e_lo = judged(1)
    if failed:
        return result(0, failed)
    failed, e_hi = judged(cap)
    if failed is None:
        return result(cap, "kv-memory" if kv_limited else rl.dominant(cap))
    # The batch is a mean occupancy (Little's law), not a count: the largest multiple of 1/BATCH_STEPS
    # that meets the SLO. lo meets it, hi misses it (`failed` names the target hi misses); each probe's
    # verdict moves one end, so the answer is the bisection's, whatever the probes. Where a probe goes
    # is guessed from how far the ends are from their targets (false position with the Illinois step;
    # halving where a target is infinitely far or the guess stops closing in): ~7 probes, not ~20.
    lo, hi = BATCH_STEPS, cap * BATCH_STEPS
    side = 0
    while hi - lo > 1:
        if math.isfinite(e_hi) and e_hi > e_lo and abs(side) < 3:
            mid = lo + int((hi - lo) * (-e_lo) / (e_hi - e_lo))
            mid = min(max(mid, lo + 1), hi - 1)
        else:
            mid, side = (lo + hi) // 2, 0
        why, e = judged(mid / BATCH_STEPS)
        if why:
            hi, failed, e_hi = mid, why, e
            side = side + 1 if side > 0 else 1
            if side >= 2:
                e_lo /= 2
        else:
            lo, e_lo = mid, min(e, 0.0)
            side = side - 1 if side < 0 else -1
            if side <= -2:
                e_hi /= 2
    whole, part = divmod(lo, BATCH_STEPS)
    return result(lo / BATCH_STEPS if part else whole, failed)


@dataclass(frozen=True)
class Disaggregated:
    """Prefill and decode on separate groups: one decode group and `prefill_share` prefill groups."""

    decode: Estimate
    prefill_layout: Layout
    decode_layout: Layout
    prefill_groups: float
    """Prefill groups per decode group that keep TTFT within target at the decode group's load."""
    kv_transfer_ms: float
    ttft_ms: float
    """TTFT at the percentile with the decode group at its full batch (the goodput's load)."""
    gpus: float
    goodput_output_tokens_per_s: float
    calibrated: bool
    extra: dict = field(default_factory=dict)
    ttft_at_load_ms: float | None = None
    """TTFT at the percentile with the decode group at `load` × its goodput (None: no load given)."""


def disaggregated(model: Model, precision: Precision, accelerator: Accelerator, prefill: Layout, decode: Layout,
                  input_tokens: int, output_tokens: int, *, ttft_ms: float | None, tpot_ms: float | None,
                  percentile: float | None, max_batch: int, params: EstimatorParams | None = None,
                  kv_bytes_per_elem: float | None = None, prefill_link: Links | None = None,
                  decode_link: Links | None = None, transfer_gb_s: float | None = None,
                  load: float | None = None, rooflines: tuple[Roofline, Roofline] | None = None
                  ) -> Disaggregated | None:
    """Size a disaggregated replica: a decode group that only decodes (TPOT without prefill
    interference) and enough prefill groups that a request's TTFT — its wait for a prefill server,
    its prefill, the KV transfer to the decode group and the first decode step — stays within target
    at the decode group's request rate.

    The prefill queue: a replica pays for g prefill groups (a multiple of 1/8) of k attention groups
    each, g·k servers in a pool shared by the decode replicas, each paid server at utilisation
    λ·s / (g·k) (λ the replica's request rate, s one prompt's prefill). The wait is M/D/c in the
    smallest whole pool at that utilisation (queueing.pooled_wait_quantile_s), an upper bound for a
    larger fleet's pool. `load` (a share of the goodput before headroom, e.g. the policy occupancy)
    also gives the TTFT with the decode group at that throughput (ttft_at_load_ms).
    Returns None when no batch meets the targets. A caller that has them passes `rooflines`: the decode
    group's roofline (of these tokens) and the prefill group's (of one output token), each with its link.
    `transfer_gb_s` is the per-GPU bandwidth (GB/s, one direction) that ships a prompt's KV from a prefill
    group to the decode group (None: the accelerator's inter-node network, else the fallback); 0 means no
    link at all and raises ValueError."""
    p = params or EstimatorParams()
    if rooflines is None:
        rooflines = (roofline(model, precision, accelerator, decode, input_tokens, output_tokens, params=p,
                              kv_bytes_per_elem=kv_bytes_per_elem, link=decode_link),
                     roofline(model, precision, accelerator, prefill, input_tokens, 1, params=p,
                              kv_bytes_per_elem=kv_bytes_per_elem, link=prefill_link))
    # The decode group only decodes: its sequences arrive with their KV, nothing is prefilled there.
    dec = rooflines[0].decode_only()
    pre = rooflines[1]
    # the decode group's roofline is of these arguments (and no MIG slice): its efficiencies are these
    eff = rooflines[0].eff or efficiency(precision, accelerator, p, moe=_moe(model))
    kvb = precision.kv_bytes_per_elem if kv_bytes_per_elem is None else kv_bytes_per_elem
    kv_seq = model.kv_gb_per_seq * GB if model.kv_gb_per_seq is not None else kv_bytes_per_seq(model, input_tokens or 1, kvb)
    # 0 is a stated bandwidth (no link between the groups), not a missing one: it never falls back.
    if transfer_gb_s is None:
        transfer_gb_s = (accelerator.scale_out_gb_s if accelerator.scale_out_gb_s is not None
                         else p.fallback_scale_out_gb_s)
    if transfer_gb_s <= 0:
        raise ValueError("no link carries the KV from the prefill to the decode group (transfer bandwidth 0: "
                         "no inter-node network)")
    link_bw = transfer_gb_s * 1e9 * p.eta_scale_out
    transfer = kv_seq / (link_bw * max(decode.gpus, 1))
    s = pre.prefill_alone_s(input_tokens)
    cap = min(max_batch, p.max_batch)
    if cap < 1:
        return None

    def tpot(b: float) -> float:
        return dec.decode_s(b)

    # The batch with the most goodput per GPU (the smallest such batch on a tie), largest batches first: a
    # batch whose goodput over its fewest possible GPUs (the prefill groups its load needs at full use)
    # is below the best found cannot be it, and its queue is not searched.
    best = None
    candidates = sorted({max(1, int(cap / 2**i)) for i in range(0, 16)} | {cap}, reverse=True)
    for b in candidates:
        step = tpot(b)
        if tpot_ms is not None and step * 1e3 > tpot_ms:
            continue
        lam = b / (step * output_tokens)
        base = s + transfer + step
        if ttft_ms is not None and base * 1e3 > ttft_ms:
            continue
        good = b / step
        fewest = _fewest_prefill_groups(lam * s / pre.prefill_servers, ttft_ms)
        if best is not None and good / (decode.gpus + fewest * prefill.gpus) < best[0]:
            continue
        groups = _prefill_groups(lam, s, pre.prefill_servers, base, ttft_ms, percentile)
        if groups is None:
            continue
        gpus = decode.gpus + groups * prefill.gpus
        per_gpu = good / gpus
        if best is None or per_gpu >= best[0]:
            best = (per_gpu, b, groups, gpus, good)
    if best is None:
        return None
    _, b, groups, gpus, good = best
    headroom = (1.0 if eff.calibrated else p.uncalibrated_headroom) * p.goodput_factor

    def ttft_at(batch: float) -> float:
        wait = pooled_wait_quantile_s(groups * pre.prefill_servers, batch / (tpot(batch) * output_tokens), s,
                                      percentile or 50.0)
        return (wait + s + transfer + tpot(batch)) * 1e3

    ttft = ttft_at(b)
    at_load = None if load is None else ttft_at(dec.batch_at_throughput(load * good, b))
    est = Estimate(batch=b, ttft_ms=ttft, tpot_ms=tpot(b) * 1e3, goodput_output_tokens_per_s=good * headroom,
                   bound="tpot" if tpot_ms is not None else "kv-memory", calibrated=eff.calibrated, group=eff.group,
                   raw_goodput_output_tokens_per_s=good, layout=decode.label, prefill_share=groups * prefill.gpus / decode.gpus)
    return Disaggregated(est, prefill, decode, groups, transfer * 1e3, ttft, gpus, good * headroom, eff.calibrated,
                         ttft_at_load_ms=at_load)


def _fewest_prefill_groups(need: float, ttft_ms: float | None) -> float:
    """The fewest prefill groups _prefill_groups can return for `need` groups at 100% utilisation: without a
    TTFT target the answer itself (90% busy), with one where its search starts (whole eighths, none idle)."""
    if ttft_ms is None:
        return max(need / 0.9, 1 / 8)
    return max(math.ceil(need * 8) / 8, 1 / 8)


def _prefill_groups(lam: float, service_s: float, servers_per_group: int, base_s: float, ttft_ms: float | None,
                    percentile: float | None) -> float | None:
    """Fewest prefill groups (a multiple of 1/8: groups are shared across decode replicas) whose
    queue keeps wait + base within the TTFT target: the wait of the shared pool, every paid server at
    lam · service_s / (groups · servers_per_group) (queueing.pooled_wait_quantile_s)."""
    g = _fewest_prefill_groups(lam * service_s / servers_per_group, ttft_ms)
    if ttft_ms is None:
        return g
    budget = ttft_ms / 1e3 - base_s
    if budget < 0:
        return None
    for _ in range(400):
        if pooled_wait_quantile_s(g * servers_per_group, lam, service_s, percentile or 50.0) <= budget:
            return g
        g += 1 / 8
    return None
