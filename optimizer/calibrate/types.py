"""What `planopt calibrate` found: per workload, old and new numbers, and the changes to the plan."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from optimizer.calibrate.loadtests import Point, Verdict
from optimizer.calibrate.usage import UsageAggregate


@dataclass(frozen=True)
class OccupancyHour:
    workload: str
    date: dt.date
    day_type: str
    hour: int
    actual_output_tokens_per_s: float
    serving_replicas: int
    goodput_output_tokens_per_s: float
    occupancy: float


@dataclass(frozen=True)
class OccupancyReport:
    workload: str
    target: float
    hours: int
    above: list[OccupancyHour]
    highest: OccupancyHour | None
    mean_at_busiest: float | None


@dataclass(frozen=True)
class HourStats:
    """Actual output tokens/s of one workload and day type, hour by hour, across the log's days."""

    days: int
    mean: list[float | None]
    low: list[float | None]
    high: list[float | None]
    pct: list[float | None]


@dataclass
class WorkloadCalibration:
    name: str
    kind: str
    requests: int = 0
    output_tokens: float = 0.0
    old_peak: float | None = None
    new_peak: float | None = None
    peak_day_type: str | None = None
    peak_days: int = 0
    old_profile: dict[str, list[float]] = field(default_factory=dict)
    new_profile: dict[str, list[float]] | None = None
    actual: dict[str, HourStats] = field(default_factory=dict)
    old_tokens: tuple[float, float] | None = None
    new_tokens: tuple[float, float] | None = None
    old_mix: tuple[tuple[float, float, float], ...] | None = None
    """The plan's tokens.mix: (share, input, output) per class."""
    new_mix: tuple[tuple[float, float, float], ...] | None = None
    """The log's size classes (calibrate.mix), when more than one tells the cost apart."""
    mix_note: str | None = None
    """How the classes were chosen (classes before and after merging, the cost change), for the plan's comment."""
    old_batch: float | None = None
    new_batch: float | None = None
    tenants: list[tuple[str, float, int]] = field(default_factory=list)
    """(tenant, share of output tokens, requests), largest first."""
    rates: dict[tuple[dt.date, int], float] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Day types the log did not see: their curve and peak are the plan's, in tokens/s."""
    scaled: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    """Day types the log saw in part (--allow-partial) → (how much it saw, the factor on the plan's other hours)."""
    peak_kept: bool = False
    """The peak is a kept day type's (the plan's own number)."""
    burst: Burst | None = None


@dataclass(frozen=True)
class Burst:
    """Intra-hour burstiness: the busiest minute's output tokens ÷ the hour's mean minute, p95 across the
    hours with at least half the busiest hour's rate (the hours that size the fleet)."""

    hours: int
    ratio: float
    policy_occupancy: float
    poisson: float = 1.0
    """The busiest minute ÷ the mean minute that Poisson arrivals at these hours' rates give by chance (p95
    across the same hours; usage.poisson_peak_ratio): the noise the occupancy target is there to absorb."""

    @property
    def beyond_noise(self) -> bool:
        """The busiest minutes rise above what Poisson arrivals at the hour's rate give: a real burst."""
        return self.ratio > self.poisson

    @property
    def occupancy(self) -> float:
        """The occupancy that keeps that minute within capacity: a fleet sized for the hour's mean at
        occupancy o runs at o × ratio in its busiest minute."""
        return min(1.0, 1.0 / self.ratio) if self.ratio > 0 else 1.0


@dataclass(frozen=True)
class Change:
    workload: str
    what: str
    old: str
    new: str
    ratio: float | None = None


@dataclass
class Calibration:
    plan_file: str
    plan_name: str
    out_file: str
    yaml_text: str
    timezone: str
    peak_percentile: float
    slo_percentile: float
    definition: str
    period: tuple[str, str] | None = None
    full_days: dict[str, int] = field(default_factory=dict)
    usage: UsageAggregate | None = None
    workloads: list[WorkloadCalibration] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    occupancy: list[OccupancyReport] = field(default_factory=list)
    result_file: str | None = None
    notes: list[str] = field(default_factory=list)


def sig(x: float, digits: int = 4) -> float | int:
    """Round to `digits` significant digits; whole numbers come back as int (readable, stable YAML)."""
    if x == 0 or not math.isfinite(x):
        return 0
    r = round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return int(r) if float(r).is_integer() else r


def pword(q: float) -> str:
    return f"p{q:g}"
