"""Spend commitments (AWS Savings Plans, GCP spend-based committed-use discounts): which a plan may sign or has
signed, which offers each covers, and the hours of the program it covers them in. No PuLP: the program's rows
are model.define_savings_plans', the result's figures results.extract's.

A commitment of U $/hour at discount δ covers, each hour, on-demand use of its offers at list price up to
U ÷ (1 − δ): that use costs U (paid whether used or not), the rest is billed at list. With c the covered
discounted spend of the hour (c ≤ U, c ≤ (1 − δ) · S, S the on-demand list spend of its offers) the hour costs
U + S − c ÷ (1 − δ), linear in U, c and the on-demand nodes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import SPEND_TERMS, Plan
from optimizer.optimize.calendar import Segments, horizon_end


@dataclass(frozen=True)
class SpendPlan:
    """One spend commitment of the program: new (U chosen) or signed (U given)."""

    key: str
    """sp<i> (plan.savings_plans[i], new) or signed<i> (plan.spend_commitments[i])."""
    index: int
    provider: str
    term: str
    discount: float
    offers: tuple[str, ...]
    """The program's offers it covers (on-demand sold there)."""
    usd_per_hour: float | None
    """None: new, the program chooses it."""
    first_day: int
    last_day: int
    """Days of the horizon it runs (offsets from its first day, inclusive)."""

    @property
    def signed(self) -> bool:
        return self.usd_per_hour is not None


def covered(provider: str, only: list[str] | None, offers: dict[str, Offer]) -> tuple[str, ...]:
    return tuple(sorted(o for o, off in offers.items() if off.provider == provider and (only is None or o in only)
                        and off.price("on-demand")))


def start_days(plan: Plan, provider: str) -> list[int]:
    """The days a new spend commitment of the provider may start on, by policy.reservation_starts (as a new
    reservation's, calendar.reservation_days): the horizon's first day; with expiries also the day after each of
    the provider's signed spend commitments ends inside the horizon (a renewal); with monthly also each calendar
    month's first day. Only the first day without a start_date."""
    mode, H, start = plan.policy.reservation_starts, plan.horizon_days, plan.start_date
    if mode == "plan_start" or start is None:
        return [0]
    days = {(c.end - start).days + 1 for c in plan.spend_commitments if c.provider == provider}
    if mode == "monthly":
        first = (start.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        while (first - start).days < H:
            days.add((first - start).days)
            first = (first + dt.timedelta(days=32)).replace(day=1)
    return [0] + sorted(d for d in days if 0 < d < H)


def spend_plans(plan: Plan, offers: dict[str, Offer]) -> list[SpendPlan]:
    """The plan's spend commitments that cover some of `offers` inside the horizon: the new ones (savings_plans,
    from each day one may start on — start_days — to the horizon's end or the term's; key sp<i>, or sp<i>d<t>
    from day t) and the signed ones (spend_commitments) while they run."""
    H = plan.horizon_days
    out = []
    for i, sp in enumerate(plan.savings_plans):
        cov = covered(sp.provider, sp.offers, offers)
        for t in start_days(plan, sp.provider) if cov else []:
            out.append(SpendPlan(f"sp{i}" + (f"d{t}" if t else ""), i, sp.provider, sp.term, sp.discount, cov, None,
                                 t, min(H, t + SPEND_TERMS[sp.term]) - 1))
    for i, c in enumerate(plan.spend_commitments):
        cov = covered(c.provider, c.offers, offers)
        if not cov or plan.start_date is None:
            continue
        first = max(0, (c.start - plan.start_date).days)
        last = min(H - 1, (c.end - plan.start_date).days)
        if first <= last and c.usd_per_hour > 0:
            out.append(SpendPlan(f"signed{i}", i, c.provider, c.term, c.discount, cov, float(c.usd_per_hour),
                                 first, last))
    return out


def cut_days(plan: Plan, offers: dict[str, Offer]) -> tuple[list[int], set[str]]:
    """Days inside the horizon where a signed spend commitment (or a new one's term) starts or stops running, and
    the offers it covers: their supply is planned per contract period (calendar.segment's `cuts`)."""
    H = plan.horizon_days
    days: set[int] = set()
    cut: set[str] = set()
    for p in spend_plans(plan, offers):
        inside = {d for d in (p.first_day, p.last_day + 1) if 0 < d < H}
        if inside:
            days |= inside
            cut |= set(p.offers)
    return sorted(days), cut


def cells(segments: Segments, offers: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """The hours' segments a spend commitment's rows run over: (cell, offer → that offer's segment in it). Where the
    offers' segments differ (some are planned per contract period), the cells are the periods' segments and an
    offer planned for the whole horizon takes its day type's segment in each."""
    own = {o: segments.of_offer(o) for o in offers}
    finest = max(own.values(), key=len)
    out = []
    for cell, d in finest:
        at = {}
        for o, segs in own.items():
            names = {s for s, _d in segs}
            at[o] = cell if cell in names else d
        out.append((cell, at))
    return out


def runs_in(p: SpendPlan, segments: Segments, cell: str) -> bool:
    """Whether the commitment runs on the days of the cell (cells are cut where it starts and stops)."""
    pi = segments.period_of(cell)
    if pi is None or segments.calendar is None:
        return p.first_day == 0
    per = segments.calendar.periods[pi]
    return p.first_day <= per.first_day and per.first_day + per.days - 1 <= p.last_day


def hours_held(plan: Plan, p: SpendPlan) -> float:
    """Hours of the horizon it is paid for."""
    return 24.0 * (p.last_day - p.first_day + 1)


def term_end(start: dt.date, term: str) -> dt.date:
    return start + dt.timedelta(days=SPEND_TERMS[term] - 1)


__all__ = ["SpendPlan", "spend_plans", "cut_days", "cells", "runs_in", "hours_held", "term_end", "horizon_end"]
