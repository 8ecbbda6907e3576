"""Replicas for an hour's demand: base for the load at the target occupancy, spares, rollout headroom."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from optimizer.units import ceil_tol


def needed_concurrency(goodput_output_tokens_per_s: float, tpot_ms: float | None) -> int:
    """Sequences in flight to deliver the goodput: ceil(goodput × tpot_ms / 1000), else 1.

    Each running sequence emits one token per TPOT (Little's law). Never less than 1.
    """
    if tpot_ms is None:
        return 1
    return max(1, ceil_tol(goodput_output_tokens_per_s * tpot_ms / 1000.0))


@dataclass(frozen=True)
class Replicas:
    base: int
    spares: int
    rollout: int
    total: int


def replicas(
    demand_output_tokens_per_s: float,
    goodput: float,
    occupancy: float,
    spares: int,
    rollout_fraction: float,
) -> Replicas:
    """Replicas for one hour (docs/design.md, "Physics").

    base = ceil(D / (goodput × occupancy)); rollout = ceil(rollout_fraction × (base + spares));
    total = base + spares + rollout. Zero demand keeps the spares (and their rollout share).
    Golden: 9000, 1400, 0.6, 1, 0.25 → 11 + 1 + 3 = 15; at occupancy 0.9 base = 8.
    """
    if demand_output_tokens_per_s < 0:
        raise ValueError("demand must be ≥ 0")
    if not 0 < occupancy <= 1:
        raise ValueError("occupancy must be in (0, 1]")
    if spares < 0 or rollout_fraction < 0:
        raise ValueError("spares and rollout_fraction must be ≥ 0")
    if demand_output_tokens_per_s == 0:
        base = 0
    elif goodput <= 0:
        raise ValueError("goodput must be > 0 to serve a positive demand")
    else:
        base = ceil_tol(demand_output_tokens_per_s / (goodput * occupancy))
    return replicas_from_base(base, spares, rollout_fraction)


@lru_cache(maxsize=1 << 16)
def replicas_from_base(base: int, spares: int, rollout_fraction: float) -> Replicas:
    """Spares and rollout on top of a given base: rollout = ceil(rollout_fraction × (base + spares)).
    Remembered: candidates ask for the same few hundred bases hundreds of thousands of times (the
    result is immutable, so sharing it is safe)."""
    rollout = ceil_tol(rollout_fraction * (base + spares))
    return Replicas(base=base, spares=spares, rollout=rollout, total=base + spares + rollout)
