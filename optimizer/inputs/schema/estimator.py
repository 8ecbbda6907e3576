"""Efficiencies of the goodput roofline: data (catalogs/estimator.yaml), not code constants."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from optimizer.inputs.schema.catalog import ComputeDtype, Generation, Sourced, Strict

# Datatypes without their own fitted efficiency borrow a fitted one (see catalogs/estimator.yaml).
DTYPE_FALLBACK: dict[str, str] = {"fp16": "bf16", "int8": "fp8", "fp4": "fp8", "bf16": "fp16"}

HELD_OUT = {"p10": 0.847, "p50": 1.001, "p90": 1.194}
"""Published ÷ estimated goodput at P10/P50/P90 over the rows held out one model at a time (fit_estimator.py
--cv model, on the fitted catalog); catalogs/estimator.yaml carries the same numbers (a test keeps them equal)."""


class GroupEvidence(Strict):
    """What published results say of the estimator in one group (generation/dtype/engine/model class)."""

    points: int = Field(ge=0)
    """Published points behind the group (held-out predictions of them measure its error)."""
    error_p10: float = Field(gt=-1, le=10)
    """10th percentile of estimated ÷ published − 1 over the group's held-out predictions (negative: the
    estimate was below what the engine delivered)."""
    error_p90: float = Field(gt=-1, le=10)
    """90th percentile of the same errors."""

    @model_validator(mode="after")
    def _ordered(self) -> "GroupEvidence":
        if self.error_p10 > self.error_p90:
            raise ValueError(f"error_p10 {self.error_p10:g} is above error_p90 {self.error_p90:g} — swap them")
        return self


class ValidationTable(Strict):
    """The estimator's held-out error by group, as benchmarks/fit_estimator.py measures it: what every
    estimate's `validation` reads (optimizer.physics.validation)."""

    min_points: int = Field(default=3, ge=1)
    """A group with fewer published points is unvalidated: its estimates say so, and policy.unvalidated
    decides what a plan does with them."""
    groups: dict[str, GroupEvidence] = Field(default_factory=dict)
    """Key: generation/dtype/engine/class (hopper/fp8/sglang/mla); '*' for the engine or the class pools
    every engine or class of the rest (hopper/fp8/*/mla, hopper/fp8/*/*): a group with too few points of its
    own borrows the band of the nearest pooled group that has enough (a pooled key without a row of its own is
    the groups it pools: their points added, the band that holds all of theirs)."""


class EstimatorParams(Sourced):
    """Efficiencies and overheads of the continuous-batching roofline in `optimizer.physics.roofline`.

    The defaults are the values fitted by benchmarks/fit_estimator.py; `catalogs/estimator.yaml`
    carries the same numbers with their standard errors and provenance (a test keeps them equal).
    """

    eta_memory: float = Field(default=0.7124, gt=0, le=1)
    """Share of peak HBM bandwidth reached while streaming weights and KV cache in decode."""
    eta_compute_decode: dict[ComputeDtype, float] = Field(default_factory=lambda: {"bf16": 0.6843, "fp8": 0.6191, "fp4": 0.5264})
    """Share of dense peak TFLOPS reached by decode GEMMs, by compute datatype."""
    eta_compute_prefill: dict[ComputeDtype, float] = Field(default_factory=lambda: {"bf16": 0.705, "fp8": 0.7949, "fp4": 0.7603})
    """Share of dense peak TFLOPS reached by prefill (context) GEMMs and attention."""
    weight_only_factor: float = Field(default=0.75, gt=0, le=2)
    """Multiplies the bf16 efficiencies when weights are de-quantized on the fly (W4A16, W8A16,
    MXFP4 on Hopper): the kernels read compressed weights but spend compute unpacking them."""
    moe_compute_factor: float = Field(default=0.6717, gt=0, le=2)
    """Multiplies the compute efficiencies of mixture-of-experts models (grouped GEMMs, routing)."""
    moe_layer_us: float = Field(default=41.83, ge=0)
    """Fixed cost of one MoE layer per decode step (routing, token permutation, grouped-GEMM launch), µs."""
    roofline_sharpness: float = Field(default=1.54, ge=1, le=64)
    """p of the smooth maximum (t_mem^p + t_compute^p)^(1/p) of the weight GEMMs; large p = max()."""
    step_overhead_ms: float = Field(default=1.622, ge=0)
    """Fixed cost of one decode step (scheduling, sampling, kernel launches), ms; once per
    micro-batch under pipeline parallelism."""
    allreduce_latency_us: float = Field(default=32.14, ge=0)
    """Latency of one tensor-parallel all-reduce over NVLink / Infinity Fabric (two per layer per step), µs."""
    eta_scale_up: float = Field(default=0.4266, gt=0, le=1)
    """Share of the per-direction scale-up bandwidth reached by ring all-reduces."""
    pcie_latency_us: float = Field(default=40.0, ge=0)
    """Latency of one all-reduce over PCIe (no GPU link: through the host or a PCIe switch), µs."""
    eta_pcie: float = Field(default=0.4727, gt=0, le=1)
    """Share of the per-direction PCIe bandwidth reached by all-reduces."""
    scale_out_latency_us: float = Field(default=15.0, ge=0)
    """Latency of one transfer or collective between nodes (InfiniBand / RoCE / EFA), µs."""
    eta_scale_out: float = Field(default=0.7, gt=0, le=1)
    """Share of the per-direction inter-node bandwidth reached by pipeline sends and all-to-alls."""
    fallback_scale_up_gb_s: float = Field(default=32.0, gt=0)
    """Scale-up bandwidth assumed when an accelerator does not state one (PCIe Gen4 x16)."""
    fallback_scale_out_gb_s: float = Field(default=25.0, gt=0)
    """Inter-node bandwidth per GPU assumed when neither the offer nor the accelerator states one
    (200 Gb/s per GPU)."""
    activation_bytes: float = Field(default=2.0, gt=0)
    """Bytes per activation element exchanged by collectives (bf16)."""
    max_batch: int = Field(default=4096, ge=1)
    """Largest batch an engine schedules (trtllm-bench caps its max batch size at 4096)."""
    prefill_chunk_tokens: int = Field(default=8192, ge=64)
    """Prefill tokens one step may carry beside the decode batch (chunked prefill budget)."""
    closed_loop_wave_share: float = Field(default=0.2079, ge=0, le=1)
    """In a closed-loop load test (N clients, each sending its next prompt when its last request ends), the
    share of the other N − 1 prompts' prefills a prompt waits behind: the clients start together and finish
    close together, so prompts arrive in waves (`optimizer.physics.concurrency`). Only `estimate
    --concurrency` reads it; a plan's open-loop traffic has no waves."""
    runtime_gb: float = Field(default=1.5, ge=0)
    """Memory an engine keeps per GPU whatever the reserve fraction (CUDA context, graphs, workspace), GB."""
    generation_factor: dict[Generation, float] = Field(default_factory=lambda: {
        "ampere": 1.046, "ada": 1.004, "blackwell": 0.6388, "cdna3": 0.4732, "cdna4": 1.019})
    """Multiplies every efficiency on one hardware generation (sustained clocks, software maturity)."""
    group_factor: dict[str, float] = Field(default_factory=dict)
    """Multiplies every efficiency for one (generation, datatype) group, e.g. 'blackwell/fp4': the
    correction fitted where that group has data of its own."""
    calibrated: list[str] = Field(default_factory=lambda: [
        "hopper/fp8", "hopper/bf16", "ampere/bf16", "ada/fp8", "blackwell/fp4", "cdna3/fp8"])
    """(generation/datatype) groups the efficiencies were fitted on. Elsewhere the estimate says so and
    keeps `uncalibrated_headroom` of its goodput."""
    uncalibrated_headroom: float = Field(default=0.85, gt=0, le=1)
    """Share of the estimated goodput a plan counts on where no published result calibrated the group."""
    held_out: dict[Literal["p10", "p50", "p90"], Annotated[float, Field(gt=0, le=10)]] = Field(
        default_factory=lambda: dict(HELD_OUT))
    """What a held-out benchmark row really delivered per unit of estimated goodput (published ÷ estimated),
    at its 10th, 50th and 90th percentile over the rows held out one model at a time
    (benchmarks/fit_estimator.py --cv model): the estimator's error for a model it has not seen.
    policy.estimate_error plans for it (a headroom at P10, or three scenarios)."""
    goodput_factor: float = Field(default=1.0, gt=0, le=10)
    """Multiplies every estimated goodput (never a measured one): a what-if, not a fitted value —
    `planopt sweep --vary goodput=…` sets it to ask what the estimator's error would cost. 1 in the catalog."""

    engines: dict[str, dict[str, dict[str, float]]] = Field(default_factory=lambda: {
        "atom": {
            "*": {"step_overhead_ms": 1.672, "allreduce_latency_us": 30.48, "moe_layer_us": 33.72, "eta_memory": 0.8353, "moe_compute_factor": 0.7224, "closed_loop_wave_share": 0.2259},
            "cdna3": {"allreduce_latency_us": 28.93, "moe_layer_us": 27, "eta_memory": 0.9032, "moe_compute_factor": 0.7436},
            "cdna4": {"step_overhead_ms": 1.755, "eta_memory": 0.8572, "moe_compute_factor": 0.7509, "closed_loop_wave_share": 0.25},
        },
        "sglang": {
            "*": {"step_overhead_ms": 1.656, "allreduce_latency_us": 33.99, "moe_layer_us": 50.35, "eta_memory": 0.6472},
            "blackwell": {"allreduce_latency_us": 30.3, "moe_layer_us": 29.24, "eta_memory": 0.6318},
            "cdna3": {"step_overhead_ms": 1.727, "allreduce_latency_us": 39.27, "moe_layer_us": 98.49, "eta_memory": 0.5986},
            "hopper": {"eta_memory": 0.6597},
        },
        "trtllm": {
            "*": {"allreduce_latency_us": 36.61, "eta_memory": 0.7198},
            "hopper": {"allreduce_latency_us": 32.01, "eta_memory": 0.709},
        },
        "vllm": {
            "*": {"allreduce_latency_us": 28.46, "eta_memory": 0.7219},
            "cdna3": {"allreduce_latency_us": 25.89, "eta_memory": 0.7676},
            "hopper": {"eta_memory": 0.7446},
            "tpu": {"allreduce_latency_us": 27.33, "eta_memory": 0.7394},
        },
    })
    """Per serving engine, per accelerator generation ("*": every generation), the parameters above
    that engine runs at on that generation (step overhead, all-reduce latency, MoE layer cost,
    efficiencies), fitted on the engine's own published results. An engine or a generation not
    listed runs at the values above."""

    validation: ValidationTable = Field(default_factory=ValidationTable)
    """The estimator's held-out error by (generation, dtype, engine, model class): how many published points
    back each group and the p10–p90 band of its errors. Empty: every estimate is unvalidated."""

    def for_engine(self, engine: str | None, generation: str) -> EstimatorParams:
        """These parameters as `engine` runs them on `generation` (unchanged for None or no tuning)."""
        if not engine or engine not in self.engines:
            return self
        tuning = {**self.engines[engine].get("*", {}), **self.engines[engine].get(generation, {})}
        if not tuning:
            return self
        return self.model_copy(update=tuning)

    def eta_decode(self, dtype: str) -> float:
        return _by_dtype(self.eta_compute_decode, dtype, "eta_compute_decode")

    def eta_prefill(self, dtype: str) -> float:
        return _by_dtype(self.eta_compute_prefill, dtype, "eta_compute_prefill")

    def group(self, generation: str, dtype: str) -> str:
        return f"{generation}/{dtype}"

    def is_calibrated(self, generation: str, dtype: str) -> bool:
        return self.group(generation, dtype) in self.calibrated


def _by_dtype(table: dict[str, float], dtype: str, name: str) -> float:
    if dtype in table:
        return table[dtype]
    fallback = DTYPE_FALLBACK.get(dtype)
    if fallback in table:
        return table[fallback]  # type: ignore[index]
    raise ValueError(f"{name} has no value for {dtype} (nor for {fallback})")
