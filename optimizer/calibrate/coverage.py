"""What a usage log saw: its hours in the plan's time zone, the days it skipped, whole days per day type.

Rules (docs/planning-loop.md):
- the log spans its first to its last event; a day it spans in full is read in whole hours, a day it
  spans in part only over the quarter-hours it spans (a log that starts at 18:17 is not a quiet
  18:00–18:17);
- a day inside that span with no event at all is a gap in the export (weekends left out, the logger
  down), not a day without demand;
- an hour or day type the log did not see keeps the plan's numbers (see `merge_curve`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable
from zoneinfo import ZoneInfo

from optimizer.calibrate.usage import QUARTER_S
from optimizer.formatting import plural


@dataclass(frozen=True)
class Slots:
    """The log's period cut into hours of the plan's time zone."""

    of_quarter: dict[int, tuple[dt.date, int]]
    hours: dict[tuple[dt.date, int], float]
    """(local date, hour) the log saw → hours of real time it covers (1; 2 when clocks go back; less at
    the ends of a log that starts or stops inside a day)."""
    full_days: set[dt.date]
    gaps: tuple[dt.date, ...] = ()
    """Days inside the span with no event at all: left out, as if the log had not reached them."""


def slots(first_epoch_s: float, last_epoch_s: float, zone: ZoneInfo, active_quarters: set[int] | None = None) -> Slots:
    q = QUARTER_S
    first_q, last_q = int(first_epoch_s // q), int(last_epoch_s // q)
    start, end = first_q * q, (last_q + 1) * q
    # Widen to whole local hours (zone offsets are whole quarters).
    lt = dt.datetime.fromtimestamp(start, zone)
    start -= lt.minute * 60
    lt = dt.datetime.fromtimestamp(end, zone)
    if lt.minute:
        end += 3600 - lt.minute * 60
    of_quarter: dict[int, tuple[dt.date, int]] = {}
    per_date: dict[dt.date, int] = {}
    for t in range(start, end, q):
        local = dt.datetime.fromtimestamp(t, zone)
        of_quarter[t // q] = (local.date(), local.hour)
        per_date[local.date()] = per_date.get(local.date(), 0) + 1
    full = set()
    for d, n in per_date.items():
        a = dt.datetime(d.year, d.month, d.day, tzinfo=zone).timestamp()
        nd = d + dt.timedelta(days=1)
        b = dt.datetime(nd.year, nd.month, nd.day, tzinfo=zone).timestamp()
        if n == round((b - a) / q):
            full.add(d)
    gaps: set[dt.date] = set()
    if active_quarters is not None:
        seen = {of_quarter[i][0] for i in active_quarters if i in of_quarter}
        gaps = set(per_date) - seen
    hours: dict[tuple[dt.date, int], float] = {}
    for i, key in of_quarter.items():
        if key[0] in gaps or (key[0] not in full and not first_q <= i <= last_q):
            continue
        hours[key] = hours.get(key, 0.0) + 0.25
    return Slots(of_quarter, hours, full - gaps, tuple(sorted(gaps)))


@dataclass(frozen=True)
class Coverage:
    """How much of one day type the log saw."""

    day_type: str
    hours: float
    """Hours of real time the log covers on days of this type."""
    full_days: int
    first: tuple[dt.date, int] | None
    last: tuple[dt.date, int] | None

    @property
    def partial(self) -> bool:
        return self.hours > 0 and self.full_days == 0

    def amount(self) -> str:
        """'2 hours', '15 minutes'."""
        if self.hours < 1:
            return plural(int(round(self.hours * 60)), "minute")
        return plural(int(self.hours) if float(self.hours).is_integer() else self.hours, "hour")


def coverage(s: Slots, types: list[str], day_type: Callable[[dt.date], str | None]) -> dict[str, Coverage]:
    out = {}
    for t in types:
        keys = sorted(k for k in s.hours if day_type(k[0]) == t)
        out[t] = Coverage(t, sum(s.hours[k] for k in keys), sum(1 for d in s.full_days if day_type(d) == t),
                          keys[0] if keys else None, keys[-1] if keys else None)
    return out


def merge_curve(measured: list[float | None], plan: list[float]) -> tuple[list[float], float | None]:
    """One day type's 24 hourly rates: the log's where it saw the hour, else the plan's, scaled.

    The plan's curve for the unseen hours is scaled by k = Σ measured ÷ Σ plan over the hours the log
    saw (the level the log found, the plan's shape): a log of one hour keeps the plan's shape exactly
    and moves its level. Returns the curve and k (None when every hour was seen, or the plan is zero
    at every hour the log saw, where the plan's numbers are kept as they are).
    """
    seen = [h for h in range(24) if measured[h] is not None]
    if len(seen) == 24:
        return [float(v) for v in measured], None  # type: ignore[arg-type]
    base = sum(plan[h] for h in seen)
    k = sum(measured[h] for h in seen) / base if base > 0 else None  # type: ignore[misc]
    scale = 1.0 if k is None else k
    return [float(measured[h]) if measured[h] is not None else plan[h] * scale for h in range(24)], k
