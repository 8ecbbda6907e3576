"""What the brute-force tests of months and scenarios share: a tiny plan's pieces and the replica
arithmetic, restated from the plan reference (nothing imported from the optimizer)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path


def ceil(x: float) -> int:
    """ceil(x), forgiving float noise: a value within 1e-9 of an integer is that integer."""
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 else math.ceil(x)


def two_level_profile(rng: random.Random, flat_share: float) -> list[float]:
    """Flat (with probability flat_share), or two levels: a block of peak hours over a lower rest."""
    if rng.random() < flat_share:
        return [1.0] * 24
    low = rng.choice([0.0, 0.25, 0.5, 0.75])
    start, length = rng.randrange(24), rng.randint(2, 14)
    peak = {(start + k) % 24 for k in range(length)}
    return [1.0 if h in peak else low for h in range(24)]


def gpus_for(demand: float, goodput: float, occupancy: float, tp: int) -> int:
    """GPUs for one hour's demand, without spares or rollout: tp × ceil(demand ÷ (goodput × occupancy))."""
    return tp * (0 if demand == 0 else ceil(demand / (goodput * occupancy)))


def write(tmp_path: Path, plan: dict, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")  # JSON is YAML 1.2
    return path
