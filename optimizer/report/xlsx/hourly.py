"""Hourly: GPUs per offer, pool, day type (or contract period) and hour, by tier."""

from __future__ import annotations

from optimizer.report.xlsx.cells import Sheet, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import HourlySupply, PlanResult


def hourly_rows(result: PlanResult) -> list[HourlySupply]:
    order = {d: i for i, d in enumerate(result.day_types)}
    periods = {p.label: i for i, p in enumerate(result.periods)}
    return sorted(result.hourly, key=lambda h: (h.offer, h.pool, periods.get(h.period, -1), order.get(h.day_type, 99),
                                                h.day_type, h.hour))


WHOLE_HORIZON = "whole horizon"
"""Period of an hourly row on an offer whose committed GPUs do not change inside the horizon."""


def _days_share(result: PlanResult, h: HourlySupply) -> tuple[float, float] | None:
    """A contract period's share of a day type's days, as (numerator, denominator); None: all of them."""
    for p in result.periods:
        if p.label == h.period:
            total = sum(q.calendar_days.get(h.day_type, 0) for q in result.periods)
            if total:
                return p.calendar_days.get(h.day_type, 0), total
            return p.days, result.horizon_days
    return None


def row_days(result: PlanResult, h: HourlySupply) -> float:
    """Days an hourly row stands for, computed as its Days formula computes them."""
    n = result.day_types.get(h.day_type, 0)
    share = _days_share(result, h)
    return n if share is None else n * share[0] / share[1]


HOURLY_COLS = ("offer", "pool", "day_type", "hour", "days", "demand", "reserved", "od", "spot", "od_gh", "spot_gh")


def write_hourly(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    sh.widths([28, 14, 12, 8, 8, 11, 11, 11, 11, 14, 14])
    sh.text(0, 0, "Hourly: GPUs per offer, pool, day type and hour", "title")
    sh.intro(1, "Reserved in use = reserved GPUs lent to the pool at that hour. GPU-hours = GPUs × 1 hour × "
                  "the days of the day type (Assumptions). Filter with the header arrows.", 10, 2)
    head = 3
    committed = bool(result.commitments or result.periods or result.own is not None)
    cols = HOURLY_COLS + (("committed", "period") if committed else ())
    sh.header(head, 0, ["Offer", "Pool", "Day type", "Hour", "Days", "GPUs demanded", "Reserved in use",
                        "On-demand GPUs", "Spot GPUs", "On-demand GPU-hours", "Spot GPU-hours"]
              + (["Committed in use (signed before, or owned)", "Contract period"] if committed else []))
    if committed:
        ws.set_column(11, 11, 13)
        ws.set_column(12, 12, 24)
    ws.set_row(head, 30)
    rows = hourly_rows(result)
    r = head
    for h in rows:
        r += 1
        n = row_days(result, h)
        sh.text(r, 0, h.offer)
        sh.text(r, 1, h.pool)
        sh.text(r, 2, h.day_type)
        sh.num(r, 3, h.hour, "value", "center", num="hour")
        share = _days_share(result, h)
        days_f = refs.days[h.day_type] if share is None else f"{refs.days[h.day_type]}*{share[0]:g}/{share[1]:g}"
        sh.calc(r, 4, days_f, n, num="int" if share is None else "dec2")
        if committed:
            sh.num(r, 11, h.committed_gpus, num="int")
            sh.text(r, 12, h.period or WHOLE_HORIZON)
        sh.num(r, 5, h.demand_gpus, num="int")
        sh.num(r, 6, h.reserved_gpus, num="int")
        sh.num(r, 7, h.on_demand_gpus, num="int")
        sh.num(r, 8, h.spot_gpus, num="int")
        sh.calc(r, 9, f"H{r + 1}*E{r + 1}", h.on_demand_gpus * n, num="int")
        sh.calc(r, 10, f"I{r + 1}*E{r + 1}", h.spot_gpus * n, num="int")
    last = max(r, head + 1)
    for i, key in enumerate(cols):
        refs.hourly[key] = rng(sh.name, head + 1, last, i)
    ws.freeze_panes(head + 1, 0)
    ws.autofilter(head, 0, last, len(cols) - 1)
    sh.page(last, len(cols) - 1, header_rows=(head, head), landscape=False)
