"""How the program cuts time: contract periods of the horizon, and the segments supply is planned in.

No PuLP, no I/O. `calendar()` splits the horizon into periods at the dates where committed capacity
changes; `segment()` turns that into the program's segments, once, before the model is built.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Iterable

from optimizer.candidates.ownership import Arrival
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.plan import Commitment, Plan


@dataclass(frozen=True)
class Period:
    """Consecutive days of the horizon over which the committed GPUs at every offer stay the same."""

    index: int
    first_day: int
    """Offset of the period's first day from the horizon's first day."""
    days: int
    start: dt.date | None
    end: dt.date | None
    """Last day of the period (inclusive)."""
    day_types: dict[str, float]
    """Plan days of each day type in this period: the type's days × its share of calendar days here."""
    calendar: dict[str, int]
    """Calendar days in this period whose day of the week the day type covers."""
    committed: dict[str, int]
    """Offer → GPUs under contract (or owned) on every day of the period."""

    @property
    def label(self) -> str:
        if self.start is None or self.end is None:
            return f"days {self.first_day + 1}–{self.first_day + self.days}"
        return f"{self.start.isoformat()} to {self.end.isoformat()}"


@dataclass(frozen=True)
class Calendar:
    periods: list[Period]
    """One period when no committed level changes inside the horizon."""
    active: list[tuple[int, Commitment]]
    """(index in plan.commitments, commitment) of every contract that overlaps the horizon."""
    notes: list[str] = field(default_factory=list)
    deliveries: dict[str, int] = field(default_factory=dict)
    """Buy offer → the day (offset from the horizon's start) its servers serve from."""

    @property
    def split(self) -> bool:
        return len(self.periods) > 1

    def varying_offers(self) -> set[str]:
        """Offers whose committed GPUs change inside the horizon: their supply is per period."""
        if not self.split:
            return set()
        offers = {o for p in self.periods for o in p.committed}
        changing = {o for o in offers if len({p.committed.get(o, 0) for p in self.periods}) > 1}
        return changing | {o for o, day in self.deliveries.items() if 0 < day < self.periods[-1].first_day
                           + self.periods[-1].days}

    def delivered(self, offer: str, period: int | None) -> bool:
        """Whether bought servers at the offer serve in a period (None: the whole horizon)."""
        day = self.deliveries.get(offer)
        if day is None:
            return True
        if period is None:
            return day <= 0
        return self.periods[period].first_day >= day

    def constant(self, offer: str) -> int:
        """Committed GPUs at an offer whose level does not change (0 without a contract)."""
        return self.periods[0].committed.get(offer, 0)


def horizon_end(plan: Plan) -> dt.date | None:
    """The horizon's last day (inclusive)."""
    if plan.start_date is None:
        return None
    return plan.start_date + dt.timedelta(days=plan.horizon_days - 1)


def overlap_days(plan: Plan, c: Commitment) -> int:
    """Days of the horizon the contract covers (its start and end days included)."""
    if plan.start_date is None:
        return 0
    first = max(c.start, plan.start_date)
    last = min(c.end, horizon_end(plan))  # type: ignore[type-var]
    return max(0, (last - first).days + 1)


def reservation_days(plan: Plan, offers: Iterable[str] | None = None) -> list[int]:
    """The days after the first (offsets from the horizon's first day) a new reservation may start on, by
    policy.reservation_starts: plan_start — none; expiries — the day after each signed contract that ends
    inside the horizon (a renewal; with `offers`, only contracts at those offers: one at an offer no
    workload can use frees nothing); monthly — those and each calendar month's first day. None without a
    start_date (no calendar to place them on)."""
    mode = plan.policy.reservation_starts
    if mode == "plan_start" or plan.start_date is None:
        return []
    H, start = plan.horizon_days, plan.start_date
    used = None if offers is None else set(offers)
    days = {(c.end - start).days + 1 for c in plan.commitments
            if overlap_days(plan, c) and (used is None or c.offer in used)}
    if mode == "monthly":
        days |= set(_month_firsts(plan))
    return sorted(d for d in days if 0 < d < H)


def _month_firsts(plan: Plan) -> list[int]:
    """Each calendar month's first day after the horizon's first (offsets from it); [] without a start_date."""
    if plan.start_date is None:
        return []
    start, out = plan.start_date, []
    first = (start.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
    while (first - start).days < plan.horizon_days:
        out.append((first - start).days)
        first = (first + dt.timedelta(days=32)).replace(day=1)
    return out


def month_days(plan: Plan) -> list[int]:
    """The boundaries of a month plan (demand by month: its day types each hold one calendar month, as
    inputs.months.expand writes them) — each month's first day after the horizon's first, offsets from it.
    [] for any other plan, and for a plan with scenarios (its workloads do not move: optimize.moves)."""
    types = plan.day_types or {}
    if scenario_days(plan) is not None or not any(getattr(v, "month", None) for v in types.values()):
        return []
    return _month_firsts(plan)


def calendar(plan: Plan, arrivals: list[Arrival] | None = None, starts: Iterable[int] = ()) -> Calendar:
    """Periods of the horizon cut at every contract's start and end (and where servers of your own
    arrive: owned ones entering service, bought ones delivered; and at `starts`, the days new
    reservations may start on: reservation_days), with day types pro rata.

    A day type's days (as the plan states them) are shared out among the periods in proportion to
    the calendar days of that type each period holds (weekday = Mon–Fri, weekend = Sat–Sun, all,
    or the type's days_of_week); when the plan's counts match the calendar this is the calendar.
    """
    H = plan.horizon_days
    days = plan.day_type_days()
    arrivals = arrivals or []
    deliveries = {a.offer: a.day for a in arrivals if a.gpus == 0}
    inside = [a for a in arrivals if 0 < a.day < H]
    starts = sorted(d for d in starts if 0 < d < H)
    if (not plan.commitments and not inside and not starts) or plan.start_date is None:
        held: dict[str, int] = {}
        for a in arrivals:
            if a.gpus and a.day <= 0 or plan.start_date is None:
                held[a.offer] = held.get(a.offer, 0) + a.gpus
        held = {o: g for o, g in held.items() if g}
        return Calendar([Period(0, 0, H, plan.start_date, horizon_end(plan), dict(days), {},
                                dict(sorted(held.items())))], [], deliveries=deliveries)
    start = plan.start_date
    notes = []
    active = []
    cuts = {0, H} | {a.day for a in inside} | set(starts)
    for i, c in enumerate(plan.commitments):
        if overlap_days(plan, c) == 0:
            notes.append(f"commitments[{i}] ({c.offer}, {c.gpus} GPUs, {c.start} to {c.end}) does not overlap "
                         f"the horizon {start} to {horizon_end(plan)}: ignored")
            continue
        active.append((i, c))
        cuts.add(max(0, (c.start - start).days))
        cuts.add(min(H, (c.end - start).days + 1))
    bounds = sorted(cuts)
    weekdays = plan.day_type_weekdays()
    cal_total = {d: 0 for d in days}
    spans = []
    for a, b in zip(bounds, bounds[1:]):
        cal = {d: 0 for d in days}
        for k in range(a, b):
            for d in plan.calendar_types(start + dt.timedelta(days=k)):
                cal[d] += 1
        for d in days:
            cal_total[d] += cal[d]
        spans.append((a, b, cal))
    periods = []
    for i, (a, b, cal) in enumerate(spans):
        first, last = start + dt.timedelta(days=a), start + dt.timedelta(days=b - 1)
        committed: dict[str, int] = {}
        for _, c in active:
            if c.start <= first and c.end >= last:
                committed[c.offer] = committed.get(c.offer, 0) + c.gpus
        for arr in arrivals:
            if arr.gpus and arr.day <= a:
                committed[arr.offer] = committed.get(arr.offer, 0) + arr.gpus
        share = {d: (days[d] * cal[d] / cal_total[d]) if cal_total[d] else days[d] * (b - a) / H for d in days}
        periods.append(Period(i, a, b - a, first, last, share, cal, dict(sorted(committed.items()))))
    sd = scenario_days(plan)  # a scenario's copy of a day type holds its days × the scenario's weight
    weight = {d: sd.scenario[d].weight if sd is not None and d in sd.scenario else 1.0 for d in days}
    differ = [f"{d}: {days[d] / weight[d]:g} in the plan, {cal_total[d]} on the calendar" for d in days
              if abs(days[d] / weight[d] - cal_total[d]) > 1e-6 and d in weekdays]
    if len(periods) > 1 and differ:
        notes.append("day types do not match the calendar from start_date (" + "; ".join(differ)
                     + "); their days are shared among the contract periods pro rata")
    return Calendar(periods, active, notes, deliveries)


@dataclass(frozen=True)
class Segments:
    """The time cut supply is planned in. A segment is a day type, or — on an offer whose committed
    GPUs change inside the horizon — a day type within one contract period (`weekday@p2`). Without
    commitments, or with contracts covering the whole horizon, the segments are the day types."""

    calendar: Calendar | None
    """Contract periods of the horizon (None: the plan has no commitments)."""
    segments: dict[str, tuple[str, float, int | None]]
    """Segment → (day type, days, contract period index or None)."""
    offer_segments: dict[str, list[tuple[str, str]]]
    """Offers whose committed GPUs change inside the horizon → their (segment, day type) pairs."""
    committed: dict[tuple[str, str], int]
    """(offer, segment) → GPUs already under contract, for offers that have any."""
    day_types: tuple[str, ...]
    reservation_days: tuple[int, ...] = ()
    """Days after the first (offsets from the horizon's start) a new reservation may start on
    (calendar.reservation_days); each is the first day of a contract period."""
    reservable: frozenset[str] = frozenset()
    """Offers whose reservations may start on those days: their supply is per period."""

    def of_offer(self, offer: str | None) -> list[tuple[str, str]]:
        """(segment, day type) pairs an offer's supply is planned in."""
        segs = self.offer_segments.get(offer or "")
        return segs if segs is not None else [(d, d) for d in self.day_types]

    def committed_at(self, offer: str, segment: str) -> int:
        """GPUs under contract at the offer during the segment (0 without a commitment)."""
        return self.committed.get((offer, segment), 0)

    def days(self) -> dict[str, float]:
        return {s: n for s, (_d, n, _p) in self.segments.items()}

    def period_of(self, segment: str) -> int | None:
        return self.segments[segment][2]

    def first_day(self, segment: str) -> int:
        """The first day (offset from the horizon's start) of the segment's contract period (0: a segment
        of the whole horizon)."""
        pi = self.period_of(segment)
        return 0 if pi is None or self.calendar is None else self.calendar.periods[pi].first_day

    def starts(self, offer: str) -> tuple[int, ...]:
        """The days after the first a new reservation at the offer may start on."""
        return self.reservation_days if offer in self.reservable else ()

    def delivered(self, offer: str, segment: str) -> bool:
        """Whether servers bought at the offer serve during the segment (always, for any other offer)."""
        return self.calendar is None or self.calendar.delivered(offer, self.period_of(segment))


def segment(plan: Plan, offers: Iterable[str], arrivals: list[Arrival] | None = None,
            reservable: Iterable[str] = (), cuts: Iterable[int] = (), cut_offers: Iterable[str] = (),
            moving: Iterable[str] = ()) -> Segments:
    """The segments of a plan whose candidates use `offers` (model.define_committed_split); `arrivals`
    are the days servers of your own arrive (candidates.ownership.arrivals); `reservable` the offers that
    sell a reserved tier to some pool: where new reservations may start after the first day
    (reservation_days), their segments are cut at those days too. A plan with no such day (no signed
    contract ending inside the horizon, policy.reservation_starts not monthly) keeps one segment per
    day type at every offer without a changing commitment. `cuts` are further days the periods are cut at
    (where a spend commitment starts or stops: spend.cut_days), `cut_offers` the offers planned per period there.
    `moving` are the offers a workload may move to or from at a period's boundary (optimize.moves.moving_offers):
    when the horizon has periods, theirs are per period too; with one, a month plan's periods are also cut at
    each month's first day (month_days), so a workload may move there."""
    days = plan.day_type_days()
    segments: dict[str, tuple[str, float, int | None]] = {d: (d, n, None) for d, n in days.items()}
    offer_segments: dict[str, list[tuple[str, str]]] = {}
    committed: dict[tuple[str, str], int] = {}
    used = set(offers)
    later = tuple(reservation_days(plan, used))
    renewing = frozenset(set(reservable) & used) if later else frozenset()
    if not renewing:
        later = ()
    extra = sorted(d for d in cuts if 0 < d < plan.horizon_days)
    # in a month plan a workload may move at each month's first day: cut there only when one can move
    months = month_days(plan) if set(moving) & used else []
    if not plan.commitments and not arrivals and not later and not extra and not months:
        return Segments(None, segments, offer_segments, committed, tuple(days))
    cal = calendar(plan, arrivals, sorted(set(later) | set(extra) | set(months)))
    varying = (cal.varying_offers() | renewing | (set(cut_offers) if extra else set())
               | (set(moving) if cal.split else set())) & used
    for o in sorted(varying):
        segs = []
        for per in cal.periods:
            for d, n in per.day_types.items():
                if n <= 0:
                    continue
                s = f"{d}@p{per.index + 1}"
                segments[s] = (d, n, per.index)
                segs.append((s, d))
                if per.committed.get(o):
                    committed[(o, s)] = per.committed[o]
        offer_segments[o] = segs
    for o in sorted(used - varying):
        if cal.constant(o):
            for d in days:
                committed[(o, d)] = cal.constant(o)
    return Segments(cal, segments, offer_segments, committed, tuple(days), later, renewing)


SCHEDULE = " | from "
"""Joins a moving workload's configs into one key (a baseline's choice, solve --baseline): its first period's key,
then for each move `SCHEDULE` + the move's first day (ISO date) + `=` + the key there. Config keys hold none. Here,
without PuLP, so that results can read a baseline's keys without loading the solver."""


def schedule_key(entries: Iterable[tuple[str | None, str]]) -> str:
    """(first day, key) of each period in order as one key; a single config (no move) is its own key."""
    out: list[tuple[str | None, str]] = []
    for day, key in entries:
        if not out or out[-1][1] != key:
            out.append((day, key))
    if not out:
        return ""
    return out[0][1] + "".join(f"{SCHEDULE}{day}={key}" for day, key in out[1:])


def schedule_of(key: str) -> list[tuple[str | None, str]]:
    """A key's (first day, key) entries: [(None, key)] for one config (the first entry's day is always None)."""
    first, *later = key.split(SCHEDULE)
    return [(None, first)] + [(day, k) for day, _eq, k in (x.partition("=") for x in later)]


def key_at(key: str, day: dt.date | None) -> str:
    """The config of a (schedule) key in force on `day`: the last entry starting on or before it (the first
    before any move, and without a day)."""
    entries = schedule_of(key)
    out = entries[0][1]
    if day is not None:
        for start, k in entries[1:]:
            if start is not None and dt.date.fromisoformat(start) <= day:
                out = k
    return out

