"""Batch work in replica-hours and GPU-hours: the tokens a day asks for at a replica's goodput."""

from __future__ import annotations

from optimizer.units import SECONDS_PER_HOUR, ceil_tol


def batch_replica_hours(output_tokens: float, goodput_output_tokens_per_s: float) -> int:
    """Whole replica-hours that produce `output_tokens` at a replica's goodput (the most a batch
    day can need of one config at one hour)."""
    return ceil_tol(output_tokens / (SECONDS_PER_HOUR * goodput_output_tokens_per_s))


def batch_gpu_hours(output_tokens: float, goodput_output_tokens_per_s: float, gpus_per_replica: float) -> float:
    """GPU-hours (continuous) that produce `output_tokens`: replica-hours may be partial."""
    return output_tokens / (SECONDS_PER_HOUR * goodput_output_tokens_per_s) * gpus_per_replica
