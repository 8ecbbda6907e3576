"""Efficiencies of the goodput roofline: data (catalogs/estimator.yaml), not code constants."""

from __future__ import annotations

from pydantic import Field

from optimizer.inputs.schema.catalog import ComputeDtype, Generation, Sourced

# Datatypes without their own fitted efficiency borrow a fitted one (see catalogs/estimator.yaml).
DTYPE_FALLBACK: dict[str, str] = {"fp16": "bf16", "int8": "fp8", "fp4": "fp8", "bf16": "fp16"}


class EstimatorParams(Sourced):
    """Efficiencies and overheads of the continuous-batching roofline in `optimizer.physics.roofline`.

    The defaults are the values fitted on `shared/reference/benchmarks.csv`; the catalog
    file `catalogs/estimator.yaml` carries the same numbers with their provenance.
    """

    eta_memory: float = Field(default=0.952, gt=0, le=1)
    """Share of peak HBM bandwidth reached while streaming weights and KV cache in decode."""
    eta_compute_decode: dict[ComputeDtype, float] = Field(
        default_factory=lambda: {"bf16": 0.721, "fp8": 0.569}
    )
    """Share of dense peak TFLOPS reached by decode GEMMs, by compute datatype."""
    eta_compute_prefill: dict[ComputeDtype, float] = Field(
        default_factory=lambda: {"bf16": 0.699, "fp8": 0.737}
    )
    """Share of dense peak TFLOPS reached by prefill (context) GEMMs and attention."""
    moe_compute_factor: float = Field(default=0.701, gt=0, le=2)
    """Multiplies the compute efficiencies of mixture-of-experts models (grouped GEMMs, routing)."""
    roofline_sharpness: float = Field(default=1.25, ge=1, le=64)
    """p of the smooth maximum (t_mem^p + t_compute^p)^(1/p) of the weight GEMMs; large p = max()."""
    step_overhead_ms: float = Field(default=2.55, ge=0)
    """Fixed cost of one decode step (scheduling, sampling, kernel launches), ms."""
    allreduce_latency_us: float = Field(default=21.4, ge=0)
    """Latency of one tensor-parallel all-reduce (two per layer per step), microseconds."""
    eta_scale_up: float = Field(default=0.454, gt=0, le=1)
    """Share of the per-direction scale-up bandwidth reached by ring all-reduces."""
    fallback_scale_up_gb_s: float = Field(default=32.0, gt=0)
    """Scale-up bandwidth assumed when an accelerator does not state one (PCIe Gen4 x16)."""
    activation_bytes: float = Field(default=2.0, gt=0)
    """Bytes per activation element exchanged by all-reduces (bf16)."""
    max_batch: int = Field(default=4096, ge=1)
    """Largest batch an engine schedules (trtllm-bench caps its max batch size at 4096)."""
    generation_factor: dict[Generation, float] = Field(default_factory=lambda: {"cdna3": 0.572})
    """Multiplies every efficiency on one hardware generation (sustained clocks, software maturity)."""

    def eta_decode(self, dtype: str) -> float:
        return _by_dtype(self.eta_compute_decode, dtype, "eta_compute_decode")

    def eta_prefill(self, dtype: str) -> float:
        return _by_dtype(self.eta_compute_prefill, dtype, "eta_compute_prefill")


def _by_dtype(table: dict[str, float], dtype: str, name: str) -> float:
    if dtype in table:
        return table[dtype]
    fallback = DTYPE_FALLBACK.get(dtype)
    if fallback in table:
        return table[fallback]  # type: ignore[index]
    raise ValueError(f"{name} has no value for {dtype} (nor for {fallback})")
