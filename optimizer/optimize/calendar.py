"""Contracts already signed and new reservations over their full term: calendar arithmetic only.

No PuLP, no I/O. `calendar()` splits the horizon into periods at the dates where committed capacity
changes; `full_term()` and `expiry()` turn reservations into what finance signs for.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from optimizer.inputs.schema.catalog import RESERVED_TERM_DAYS, Offer
from optimizer.inputs.schema.plan import Commitment, Plan

TERM_MONTHS = {"reserved-1y": 12, "reserved-3y": 36}
HOURS_PER_DAY = 24
DAYS_PER_MONTH = 365 / 12
"""An average month: a contract's monthly amount is its yearly amount / 12."""
_WEEKDAY_IDS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


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
    """Offer → GPUs under contract on every day of the period."""

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

    @property
    def split(self) -> bool:
        return len(self.periods) > 1

    def varying_offers(self) -> set[str]:
        """Offers whose committed GPUs change inside the horizon: their supply is per period."""
        if not self.split:
            return set()
        offers = {o for p in self.periods for o in p.committed}
        return {o for o in offers if len({p.committed.get(o, 0) for p in self.periods}) > 1}

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


def calendar(plan: Plan) -> Calendar:
    """Periods of the horizon cut at every contract's start and end, with day types pro rata.

    A day type's days (as the plan states them) are shared out among the periods in proportion to
    the calendar days of that type each period holds (weekday = Mon–Fri, weekend = Sat–Sun, all,
    or the type's days_of_week); when the plan's counts match the calendar this is the calendar.
    """
    H = plan.horizon_days
    days = plan.day_type_days()
    if not plan.commitments or plan.start_date is None:
        return Calendar([Period(0, 0, H, plan.start_date, horizon_end(plan), dict(days), {}, {})], [])
    start = plan.start_date
    notes = []
    active = []
    cuts = {0, H}
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
            wd = _WEEKDAY_IDS[(start + dt.timedelta(days=k)).weekday()]
            for d in days:
                if wd in weekdays[d]:
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
        share = {d: (days[d] * cal[d] / cal_total[d]) if cal_total[d] else days[d] * (b - a) / H for d in days}
        periods.append(Period(i, a, b - a, first, last, share, cal, dict(sorted(committed.items()))))
    differ = [f"{d}: {days[d]} in the plan, {cal_total[d]} on the calendar" for d in days
              if days[d] != cal_total[d] and d in weekdays]
    if len(periods) > 1 and differ:
        notes.append("day types do not match the calendar from start_date (" + "; ".join(differ)
                     + "); their days are shared among the contract periods pro rata")
    return Calendar(periods, active, notes)


# --- full-term figures ---------------------------------------------------------------------------

def term_days(tier: str) -> int:
    return RESERVED_TERM_DAYS[tier]


def contract_price(c: Commitment, offer: Offer | None) -> float:
    """The contract's own price, else the offer's price for its tier (0 when neither is known)."""
    if c.price_per_gpu_hour is not None:
        return float(c.price_per_gpu_hour)
    p = offer.price(c.tier) if offer is not None else None
    return float(p) if p is not None else 0.0


def full_term(gpus: int, price: float, tier: str) -> tuple[float, float]:
    """(total committed over the whole term, monthly amount) of a reservation."""
    total = gpus * price * HOURS_PER_DAY * term_days(tier)
    return total, total / TERM_MONTHS[tier]


def quarter_of(day: dt.date) -> tuple[int, int]:
    return day.year, (day.month - 1) // 3 + 1


def quarter_bounds(year: int, q: int) -> tuple[dt.date, dt.date]:
    first = dt.date(year, 3 * (q - 1) + 1, 1)
    nxt = dt.date(year + (q == 4), (3 * q) % 12 + 1, 1)
    return first, nxt - dt.timedelta(days=1)


def quarters(first: dt.date, last: dt.date) -> list[tuple[str, dt.date, dt.date]]:
    """Calendar quarters from the one holding `first` to the one holding `last`: (label, first day, last day)."""
    out = []
    y, q = quarter_of(first)
    end = quarter_of(last)
    while (y, q) <= end:
        a, b = quarter_bounds(y, q)
        out.append((f"{y}-Q{q}", a, b))
        y, q = (y + 1, 1) if q == 4 else (y, q + 1)
    return out


# --- what the result reports ---------------------------------------------------------------------

@dataclass(frozen=True)
class ContractRow:
    """A contract signed before this plan: what it costs inside the horizon and over its life."""

    offer: str
    accelerator: str
    provider: str
    tier: str
    gpus: int
    start: str
    end: str
    """Last day of service (inclusive), ISO date."""
    price_per_gpu_hour: float
    days_in_horizon: int
    spend_in_horizon: float
    """GPUs × price × 24 × days in the horizon: committed (sunk) spend, not in the plan's cost."""
    contract_days: int
    total_committed: float
    """GPUs × price × 24 × the contract's days."""
    monthly: float
    """GPUs × price × 24 × 365 / 12."""
    gpu_hours_in_horizon: float
    gpu_hours_used: float
    """Committed GPU-hours the plan's workloads use (shared pro rata among an offer's contracts)."""


@dataclass(frozen=True)
class NewReservation:
    """A reservation this plan buys, over its whole term (the plan's cost counts the horizon's share)."""

    offer: str
    accelerator: str
    provider: str
    tier: str
    gpus: int
    price_per_gpu_hour: float
    term_days: int
    term_months: int
    start: str | None
    end: str | None
    """start_date + term days (None without a start_date)."""
    end_text: str
    total_committed: float
    """GPUs × price × 24 × term days."""
    monthly: float
    """total / term months."""
    horizon_share: float
    """GPUs × price × 24 × horizon days: what the plan's cost counts."""
    beyond_horizon: float


@dataclass(frozen=True)
class ExpiryRow:
    """One calendar quarter: reserved GPUs whose last day of service falls in it."""

    quarter: str
    first_day: str
    last_day: str
    committed_gpus_ending: int
    new_gpus_ending: int
    monthly_ending: float
    gpus_after: int
    """Reserved GPUs (signed and new) still under contract after the quarter's last day."""


@dataclass(frozen=True)
class PeriodRow:
    """A stretch of the horizon with the same committed GPUs at every offer (hourly rows name it)."""

    label: str
    start: str | None
    end: str | None
    days: int
    day_types: dict[str, float]
    calendar_days: dict[str, int]
    committed: dict[str, int]


def contract_rows(plan: Plan, offers: dict[str, Offer], used: dict[tuple[str, int | None], float],
                  cal: Calendar) -> list[ContractRow]:
    """Every contract that overlaps the horizon. `used` maps (offer, period or None) → committed
    GPU-hours in use; a period's use is shared among the contracts active in it by their GPUs."""
    rows = []
    for _i, c in cal.active:
        offer = offers.get(c.offer)
        price = contract_price(c, offer)
        days = overlap_days(plan, c)
        contract_days = (c.end - c.start).days + 1
        gh = c.gpus * HOURS_PER_DAY * days
        use = 0.0
        for (o, pi), v in used.items():
            if o != c.offer:
                continue
            if pi is None:  # level constant over the horizon: share by GPU-hours in the horizon
                mates = [m for _j, m in cal.active if m.offer == o]
                total = sum(m.gpus * overlap_days(plan, m) for m in mates)
                use += v * (c.gpus * days / total if total else 0.0)
            else:
                per = cal.periods[pi]
                mates = [m for _j, m in cal.active if m.offer == o and m.start <= per.start and m.end >= per.end]  # type: ignore[operator]
                if c in mates:
                    use += v * c.gpus / sum(m.gpus for m in mates)
        rows.append(ContractRow(
            c.offer, offer.accelerator if offer else "", offer.provider if offer else "", c.tier, c.gpus,
            c.start.isoformat(), c.end.isoformat(), price, days, gh * price, contract_days,
            c.gpus * price * HOURS_PER_DAY * contract_days, c.gpus * price * HOURS_PER_DAY * 365 / 12, gh, use))
    return rows


def new_reservations(plan: Plan, purchases: list) -> list[NewReservation]:
    """Full-term figures of every reserved purchase (Purchase rows of a reserved tier)."""
    out = []
    for p in purchases:
        if p.tier not in RESERVED_TERM_DAYS or p.gpus <= 0:
            continue
        term = term_days(p.tier)
        total, monthly = full_term(p.gpus, p.price_per_gpu_hour, p.tier)
        if plan.start_date is not None:
            end = plan.start_date + dt.timedelta(days=term)
            start_s, end_s, text = plan.start_date.isoformat(), end.isoformat(), end.isoformat()
        else:
            start_s, end_s, text = None, None, f"start + {term} days"
        share = p.gpus * p.price_per_gpu_hour * HOURS_PER_DAY * plan.horizon_days
        out.append(NewReservation(p.offer, p.accelerator, p.provider, p.tier, p.gpus, p.price_per_gpu_hour, term,
                                  TERM_MONTHS[p.tier], start_s, end_s, text, total, monthly, share, total - share))
    return out


def expiry(plan: Plan, contracts: list[ContractRow], new: list[NewReservation]) -> list[ExpiryRow]:
    """Quarter by quarter from the horizon's first, what stops (by last day of service) until all has."""
    if plan.start_date is None or not (contracts or new):
        return []
    ends = [(dt.date.fromisoformat(c.end), c.gpus, c.monthly, True) for c in contracts]
    ends += [(dt.date.fromisoformat(n.end) - dt.timedelta(days=1), n.gpus, n.monthly, False)  # type: ignore[arg-type]
             for n in new]
    last = max(e for e, *_ in ends)
    rows = []
    for label, a, b in quarters(plan.start_date, max(last, plan.start_date)):
        inside = [e for e in ends if a <= e[0] <= b]
        rows.append(ExpiryRow(label, a.isoformat(), b.isoformat(),
                              sum(g for _e, g, _m, old in inside if old), sum(g for _e, g, _m, old in inside if not old),
                              sum(m for _e, _g, m, _old in inside), sum(g for e, g, _m, _old in ends if e > b)))
    return rows


def period_rows(cal: Calendar) -> list[PeriodRow]:
    if not cal.split:
        return []
    return [PeriodRow(p.label, p.start.isoformat() if p.start else None, p.end.isoformat() if p.end else None,
                      p.days, dict(p.day_types), dict(p.calendar), dict(p.committed)) for p in cal.periods]
