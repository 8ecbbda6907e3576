"""Occupancy: actual output tokens/s against a solved fleet (serving replicas × goodput), hour by hour."""

from __future__ import annotations

import datetime as dt
import math
from typing import Callable

import numpy as np

from optimizer.calibrate.types import (
    OccupancyHour,
    OccupancyReport,
    WorkloadCalibration,
)

HOURS = range(24)


def serving_replicas(total: int, spares: int, rollout_fraction: float) -> int:
    """Invert total = base + spares + ceil(rollout × (base + spares)): the replicas that carry traffic."""
    from optimizer.units import ceil_tol

    base = 0
    while base + 1 + spares + ceil_tol(rollout_fraction * (base + 1 + spares)) <= total:
        base += 1
    return base


def occupancy(result, workloads: list[WorkloadCalibration], day_type: Callable[[dt.date], str | None],
              default_target: float) -> list[OccupancyReport]:
    """Actual output tokens/s ÷ (serving replicas × goodput), per workload and hour of the log.

    Serving replicas exclude the spares and rollout headroom (the policy's occupancy applies to
    them); tokens the plan sends to an API at that hour are taken off the actual first.
    """
    pol = result.policy or {}
    target = float(pol.get("occupancy", default_target))
    spares = int(pol.get("spares", 1))
    rollout = float(pol.get("rollout_fraction", 0.25))
    mine = {w.name: w for w in workloads}
    reports = []
    for wr in result.workloads:
        wc = mine.get(wr.name)
        if wc is None or not wc.rates or wr.kind != "interactive" or not wr.hourly_replicas \
                or wr.goodput_output_tokens_per_s <= 0:
            continue
        hours = []
        for (d, h), rate in sorted(wc.rates.items()):
            t = day_type(d)
            reps = wr.hourly_replicas.get(t) if t else None
            if reps is None and len(wr.hourly_replicas) == 1:
                t, reps = next(iter(wr.hourly_replicas.items()))
            if reps is None:
                continue
            api = (wr.hourly_api_tokens_per_s.get(t) or [0.0] * 24)[h]
            base = serving_replicas(int(reps[h]), spares, rollout)
            fleet = max(0.0, rate - api)
            cap = base * wr.goodput_output_tokens_per_s
            occ = fleet / cap if cap > 0 else (math.inf if fleet > 0 else 0.0)
            hours.append(OccupancyHour(wr.name, d, t, h, rate, base, wr.goodput_output_tokens_per_s, occ))
        if not hours:
            continue
        above = sorted((x for x in hours if x.occupancy > target + 1e-9), key=lambda x: (-x.occupancy, x.date, x.hour))
        highest = max(hours, key=lambda x: (x.occupancy, x.date, x.hour))
        busiest_hour = max(HOURS, key=lambda h: sum(x.actual_output_tokens_per_s for x in hours if x.hour == h))
        at = [x.occupancy for x in hours if x.hour == busiest_hour and math.isfinite(x.occupancy)]
        reports.append(OccupancyReport(wr.name, target, len(hours), above, highest,
                                       float(np.mean(at)) if at else None))
    return reports
