"""Contracts signed before the plan and new reservations over their full term: what finance signs for.

No PuLP, no I/O: calendar arithmetic on the plan, its contract periods and the solved purchases.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from optimizer.inputs import prices
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Commitment, Plan
from optimizer.optimize.calendar import Calendar, overlap_days
from optimizer.vocab import RESERVED_TERM_DAYS, TERM_MONTHS, UPFRONT_SHARE


Count = Annotated[int, Field(ge=0)]
"""A number of GPUs, nodes or replicas: never negative (a result file holding one is refused when read)."""


def term_days(tier: str) -> int:
    return RESERVED_TERM_DAYS[tier]


def last_day(start: dt.date, days: int) -> dt.date:
    """The last day of service of a term of `days` days from `start` (both ends inclusive)."""
    return start + dt.timedelta(days=days - 1)


def contract_price(c: Commitment, offer: Offer | None) -> float:
    """The contract's own price, else the offer's price for its tier (0 when neither is known)."""
    if c.price_per_gpu_hour is not None:
        return float(c.price_per_gpu_hour)
    p = offer.price(c.tier) if offer is not None else None
    return float(p) if p is not None else 0.0


def full_term(gpus: int, price: float, tier: str) -> tuple[float, float]:
    """(total committed over the whole term, monthly amount) of a reservation."""
    total = prices.held(gpus, price, term_days(tier))
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


@dataclass(frozen=True)
class ContractRow:
    """A contract signed before this plan: what it costs inside the horizon and over its life."""

    offer: str
    accelerator: str
    provider: str
    tier: str
    gpus: Count
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
    gpus: Count
    price_per_gpu_hour: float
    term_days: int
    term_months: int
    start: str | None
    end: str | None
    """Last day of service (inclusive), ISO date: start_date + term days − 1, as a signed contract
    states it (None without a start_date). Results written before `end_is_last_day` held the day
    after; the JSON reader converts them."""
    end_text: str
    """`end`, or "after N days" without a start_date."""
    total_committed: float
    """GPUs × price × 24 × term days."""
    monthly: float
    """total / term months."""
    horizon_share: float
    """GPUs × price × 24 × horizon days: what the plan's cost counts."""
    beyond_horizon: float
    payment: str | None = None
    """The payment option taken (no_upfront, partial_upfront, all_upfront) when the offer prices several
    (policy.payment allows which); None: the offer gives one price, paid monthly."""
    upfront: float = 0.0
    """Paid on the start day: the whole term (all_upfront), half of it (partial_upfront), else 0; the
    commitment schedule shows it in that month."""
    provisional: bool = False
    """True when the search stopped short of policy.mip_gap: a cheaper plan may not hold this reservation, so it
    is not to be signed before the plan is solved again with more time (false in files written before)."""
    utilization: float | None = None
    """Share of its GPU-hours in the horizon the plan's workloads use (reservations of one offer share its
    reserved use by the GPU-hours each holds). None in results written before it was kept."""
    coverage: float | None = None
    """Share of the GPU-hours the workloads use at its offer (signed, reserved, on-demand and spot) it serves."""
    saving_vs_on_demand: dict[str, float] | None = None
    """{horizon, full_term}: what serving the GPU-hours it serves on demand would cost, minus what it costs.
    horizon: the used GPU-hours × the on-demand price − its horizon share; full_term: the same use
    (utilization) over the whole term − its total. Negative: on demand would cost less. None without an
    on-demand price (see saving_basis)."""
    break_even_utilization: float | None = None
    """Reserved price ÷ on-demand price: the utilization from which it costs less than on demand."""
    saving_basis: str = ""
    """The on-demand price the saving and break-even are weighed against, and where it comes from."""


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
        gh = prices.gpu_hours_held(c.gpus, days)
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
            prices.held(c.gpus, price, contract_days), prices.held(c.gpus, price, 365) / 12, gh, use))
    return rows


def new_reservations(plan: Plan, purchases: list) -> list[NewReservation]:
    """Full-term figures of every reserved purchase (Purchase rows of a reserved tier)."""
    out = []
    for p in purchases:
        if p.tier not in RESERVED_TERM_DAYS or p.gpus <= 0:
            continue
        term = term_days(p.tier)
        total, monthly = full_term(p.gpus, p.price_per_gpu_hour, p.tier)
        first_day = 0
        if plan.start_date is not None:
            start = dt.date.fromisoformat(p.start) if p.start else plan.start_date  # a later start: a renewal
            first_day = (start - plan.start_date).days
            end = last_day(start, term)
            start_s, end_s, text = start.isoformat(), end.isoformat(), end.isoformat()
        else:
            start_s, end_s, text = None, None, f"after {term:,} days"
        share = prices.held(p.gpus, p.price_per_gpu_hour, plan.horizon_days - first_day)
        upfront = UPFRONT_SHARE.get(p.payment or "no_upfront", 0.0) * total
        out.append(NewReservation(p.offer, p.accelerator, p.provider, p.tier, p.gpus, p.price_per_gpu_hour, term,
                                  TERM_MONTHS[p.tier], start_s, end_s, text, total, monthly, share, total - share,
                                  p.payment, upfront))
    return out


def held_in_horizon(plan: Plan, n: NewReservation) -> float:
    """GPU-hours a new reservation holds inside the horizon (from its first day to the horizon's end or its last)."""
    days = plan.horizon_days
    if plan.start_date is not None and n.start is not None:
        first = (dt.date.fromisoformat(n.start) - plan.start_date).days
        last = (dt.date.fromisoformat(n.end) - plan.start_date).days if n.end else days - 1
        days = max(0, min(days - 1, last) - max(0, first) + 1)
    return prices.gpu_hours_held(n.gpus, days)


def priced_like_recommendation(plan: Plan, new: list[NewReservation], offers: dict[str, Offer],
                               used: dict[str, dict[str, float]]) -> list[NewReservation]:
    """Each new reservation with its utilization, coverage, saving against on demand and break-even, as a
    cloud's reservation recommendation gives them (AWS Cost Explorer's Savings Plans and RI recommendations).

    `used` maps offer → GPU-hours the workloads used there by tier group (committed, reserved, on_demand, spot).
    The on-demand price is the offer's own; an offer without one is weighed against the lowest on-demand price
    of the same accelerator among `offers` (said in saving_basis), and with none there, nothing is priced."""
    held = {id(n): held_in_horizon(plan, n) for n in new}
    out = []
    for n in new:
        at = used.get(n.offer, {})
        mates = [m for m in new if m.offer == n.offer]
        pool = sum(held[id(m)] for m in mates)
        mine = at.get("reserved", 0.0) * (held[id(n)] / pool if pool else 0.0)
        util = min(1.0, mine / held[id(n)]) if held[id(n)] else 0.0
        total_used = sum(at.values())
        coverage = min(1.0, mine / total_used) if total_used > 0 else 0.0
        od, basis = _on_demand(n, offers, plan.currency)
        saving = break_even = None
        if od:
            term_gh = prices.gpu_hours_held(n.gpus, n.term_days)
            saving = {"horizon": mine * od - n.horizon_share, "full_term": util * term_gh * od - n.total_committed}
            break_even = n.price_per_gpu_hour / od
        out.append(dataclasses.replace(n, utilization=util, coverage=coverage, saving_vs_on_demand=saving,
                                       break_even_utilization=break_even, saving_basis=basis))
    return out


def _on_demand(n: NewReservation, offers: dict[str, Offer], currency: str) -> tuple[float | None, str]:
    own = offers.get(n.offer)
    p = own.price("on-demand") if own is not None else None
    if p:
        return float(p), f"{n.offer} on-demand at {p:,.2f} {currency} per GPU-hour"
    same = sorted((float(o.price("on-demand")), o.id) for o in offers.values()  # type: ignore[arg-type]
                  if o.accelerator == n.accelerator and o.price("on-demand"))
    if same:
        p, where = same[0]
        return p, (f"{n.offer} has no on-demand price: {where} on-demand at {p:,.2f} {currency} per GPU-hour "
                   "(same accelerator)")
    return None, f"no on-demand price for {n.accelerator} among the plan's offers: no saving or break-even"


def expiry(plan: Plan, contracts: list[ContractRow], new: list[NewReservation]) -> list[ExpiryRow]:
    """Quarter by quarter from the horizon's first, what stops (by last day of service) until all has."""
    if plan.start_date is None or not (contracts or new):
        return []
    ends = [(dt.date.fromisoformat(c.end), c.gpus, c.monthly, True) for c in contracts]
    ends += [(dt.date.fromisoformat(n.end), n.gpus, n.monthly, False) for n in new if n.end is not None]
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


@dataclass(frozen=True)
class CarriedContract:
    """A contract of the last result (`--carry`): added to this plan's commitments, or skipped and why."""

    entry: str
    """Where it is in the last result: commitments[i] (signed) or new_commitments[i] (bought there)."""
    offer: str
    tier: str
    gpus: Count
    start: str
    end: str
    """Last day of service (inclusive), ISO date."""
    price_per_gpu_hour: float
    reason: str = ""
    """Why it was skipped; empty when it was carried."""


@dataclass(frozen=True)
class CarryInfo:
    """The commitment ledger carried from the last result into this plan."""

    file: str
    """The result it came from."""
    plan: str
    """That result's plan name."""
    carried: list[CarriedContract]
    skipped: list[CarriedContract]
    notes: list[str]


@dataclass(frozen=True)
class SpendContract:
    """A spend commitment signed before this plan (an AWS Savings Plan, a GCP spend-based CUD): U $/hour for
    every hour it runs, covering the provider's on-demand use at the discount (sunk: committed spend)."""

    provider: str
    usd_per_hour: float
    term: str
    discount: float
    start: str
    end: str
    """Last day it runs (inclusive), ISO date."""
    offers: list[str]
    """The plan's offers it covers."""
    days_in_horizon: int
    spend_in_horizon: float
    """usd_per_hour × 24 × days in the horizon: committed (sunk) spend, not in the plan's cost."""
    covered_on_demand: float
    """The on-demand spend at list price it covered in the horizon (what that use would have cost uncovered)."""
    utilization: float
    """Share of its commitment in the horizon the covered use took (covered discounted spend ÷ spend_in_horizon)."""
    key: str = ""
    """signed<i>: spend_commitments[i] of the plan (the cash-flow rows name it)."""


@dataclass(frozen=True)
class NewSpendCommitment:
    """A spend commitment this plan signs (savings_plans): U $/hour of discounted spend for the whole term, from the
    horizon's first day or a later start (a renewal at a signed one's expiry, a month's first day:
    policy.reservation_starts), priced like a Savings Plans recommendation (AWS Cost Explorer's): utilization,
    coverage, saving against on demand, break-even."""

    provider: str
    usd_per_hour: float
    """The commitment: discounted spend per hour (AWS's Savings Plans commitment, $/hour)."""
    term: str
    term_days: int
    discount: float
    offers: list[str]
    """The plan's offers it covers."""
    start: str | None
    end: str | None
    """Last day it runs (inclusive), ISO date (None without a start_date)."""
    total_committed: float
    """usd_per_hour × 24 × term days."""
    monthly: float
    """total ÷ term months (12 or 36)."""
    horizon_share: float
    """usd_per_hour × 24 × the horizon's days it runs: what the plan's cost counts."""
    beyond_horizon: float
    covered_on_demand: float
    """The on-demand spend at list price it covers in the horizon: what that use would cost uncovered."""
    utilization: float
    """Share of its commitment in the horizon the covered use takes (covered discounted spend ÷ horizon_share)."""
    coverage: float
    """Share of its offers' on-demand spend at list price in the horizon it covers."""
    saving_vs_on_demand: dict[str, float]
    """{horizon, full_term}: horizon — covered_on_demand − horizon_share; full_term — the same utilization over the
    whole term: total_committed × (utilization ÷ (1 − discount) − 1). Negative: on demand would cost less."""
    break_even_utilization: float
    """1 − discount: the utilization from which it costs less than the on-demand use it covers."""
    saving_basis: str = ""
    source: str = ""
    """Where the discount comes from (savings_plans[i].source)."""
    key: str = ""
    """sp<i>: savings_plans[i] of the plan from the horizon's first day, sp<i>d<t> from day t (the cash-flow rows
    name it)."""
    provisional: bool = False
    """True when the search stopped short of policy.mip_gap: not to be signed before the plan is solved again."""
