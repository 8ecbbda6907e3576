"""Spend commitments in the result: what each new one costs and covers (new_spend_commitments), the signed ones
(spend_commitments), the plan's cost tier `savings_plan` and their cash months.

No PuLP, no I/O: arithmetic on the solved commitments (Solution.spend_new, spend_covered) and the calendar.
A commitment's cost in the horizon is U × 24 × the days it runs; the on-demand use it covers is credited at list
price (c ÷ (1 − δ) an hour). So the on-demand tier (and each offer's on-demand purchase) holds every node rented
at list, less the list spend covered, plus a new commitment's discounted spend that paid for it; and
cost.by_tier.savings_plan holds what is left of the new commitments (U × hours − the discounted spend they
covered: paid and unused). The two add up to what the provider bills: the commitment, plus the use it does not
cover at list. A signed commitment's use is sunk.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import SPEND_TERMS, Plan
from optimizer.optimize import spend
from optimizer.optimize.solution import Solution
from optimizer.results.cashflow import _month, day_weights
from optimizer.results.contracts import NewSpendCommitment, SpendContract
from optimizer.results.types import CashFlowRow, ScheduleRow

TIER = "savings_plan"
"""The cost tier (cost.by_tier) and cash-flow tier of new spend commitments net of the list spend covered."""
TERM_MONTHS = {"1y": 12, "3y": 36}


@dataclass
class SpendResult:
    new: list[NewSpendCommitment] = field(default_factory=list)
    signed: list[SpendContract] = field(default_factory=list)
    tier_cost: float = 0.0
    """cost.by_tier.savings_plan (0 and absent when the plan has no spend commitment)."""
    committed: float = 0.0
    """The signed commitments' spend in the horizon (sunk)."""
    cash: list[CashFlowRow] = field(default_factory=list)
    present: bool = False
    paid_new: float = 0.0
    """The new commitments' horizon share (a scenario plan's first stage)."""
    credit_by_cell: dict[str, float] = field(default_factory=dict)
    """Segment → the list spend covered there (a scenario plan's second stage takes it off)."""
    offer_credit: dict[str, float] = field(default_factory=dict)
    """Offer → what its on-demand nodes cost less than list: the list spend covered, less (for a new commitment)
    the discounted spend that paid for it (the on-demand tier and purchase carry the covered use at its price)."""


def cash_label(provider: str, term: str, key: str) -> str:
    """The cash-flow rows' offer of a spend commitment: its provider, term and key (sp<i> new, signed<i>)."""
    return f"{provider} savings plan {term} ({key})"


def _label(key: str, p: spend.SpendPlan) -> str:
    return cash_label(p.provider, p.term, key)


def result(plan: Plan, sol: Solution, offers: dict[str, Offer]) -> SpendResult:
    plans = spend.spend_plans(plan, offers)
    out = SpendResult(present=bool(plans))
    if not plans:
        return out
    segs = sol.segments
    days = segs.days()
    cal = segs.calendar
    weights = day_weights(plan, cal)
    months = [_month(plan, k) for k in range(plan.horizon_days)]
    # list spend each commitment covers, by cell; the offers' on-demand list spend, by offer
    covered: dict[str, float] = {}
    covered_disc: dict[str, float] = {}
    by_cell: dict[tuple[str, str], float] = {}  # (key, cell) → list spend covered a day
    by_key = {p.key: p for p in plans}
    for (key, o, cell, _h), c in sol.spend_covered.items():
        if c <= 0:
            continue
        p = by_key[key]
        used = 0.0 if p.signed else days[cell] * c  # a new commitment's use is paid here, at its discounted price
        out.offer_credit[o] = out.offer_credit.get(o, 0.0) + days[cell] * c / (1.0 - p.discount) - used
        out.tier_cost -= used
        covered[key] = covered.get(key, 0.0) + days[cell] * c / (1.0 - p.discount)
        covered_disc[key] = covered_disc.get(key, 0.0) + days[cell] * c
        by_cell[(key, cell)] = by_cell.get((key, cell), 0.0) + c / (1.0 - p.discount)
        out.credit_by_cell[cell] = out.credit_by_cell.get(cell, 0.0) + days[cell] * c / (1.0 - p.discount)
    listed: dict[str, float] = {}
    for (o, _p, s, _h), v in sol.on_demand_nodes.items():
        n = round(v)
        if n > 0 and o in offers:
            price = offers[o].price("on-demand") or 0.0
            listed[o] = listed.get(o, 0.0) + days[s] * n * offers[o].gpus_per_node * price
    cash: dict[tuple[str, str, str], float] = {}  # (month, label, kind) → amount

    def add(month: str, label: str, kind: str, v: float) -> None:
        if v:
            cash[(month, label, kind)] = cash.get((month, label, kind), 0.0) + v

    for (key, cell), per_day in by_cell.items():
        p = by_key[key]
        d, _n, pi = segs.segments[cell]
        label = cal.periods[pi].label if pi is not None and cal is not None and cal.split else ""
        for k, w in enumerate(weights):
            add(months[k], _label(key, p), "credit", -w.get((label, d), 0.0) * per_day)
    for p in plans:
        u = sol.spend_new.get(p.key, 0.0) if not p.signed else float(p.usd_per_hour or 0.0)
        paid = spend.hours_held(plan, p) * u
        for k in range(p.first_day, p.last_day + 1):
            add(months[k], _label(p.key, p), "committed" if p.signed else "new", 24.0 * u)
        use = min(1.0, covered_disc.get(p.key, 0.0) / paid) if paid > 0 else 0.0
        if p.signed:
            c = plan.spend_commitments[p.index]
            out.signed.append(SpendContract(p.provider, u, p.term, p.discount, c.start.isoformat(), c.end.isoformat(),
                                            list(p.offers), p.last_day - p.first_day + 1, paid,
                                            covered.get(p.key, 0.0), use, p.key))
            out.committed += paid
            continue
        if u <= 1e-9:
            continue
        term = SPEND_TERMS[p.term]
        total = u * 24.0 * term
        first = plan.start_date + dt.timedelta(days=p.first_day) if plan.start_date else None
        start = first.isoformat() if first else None
        end = spend.term_end(first, p.term).isoformat() if first else None
        od = sum(listed.get(o, 0.0) for o in p.offers)
        cov = covered.get(p.key, 0.0)
        out.new.append(NewSpendCommitment(
            p.provider, u, p.term, term, p.discount, list(p.offers), start, end, total, total / TERM_MONTHS[p.term],
            paid, total - paid, cov, use, min(1.0, cov / od) if od > 0 else 0.0,
            {"horizon": cov - paid, "full_term": total * (use / (1.0 - p.discount) - 1.0)}, 1.0 - p.discount,
            f"the on-demand list price of {', '.join(p.offers)}, {p.discount:.0%} off while covered",
            plan.savings_plans[p.index].source, p.key))
        out.tier_cost += paid
        out.paid_new += paid
    for (month, label, kind), amount in sorted(cash.items()):
        provider = label.split(" ", 1)[0]
        # the list spend covered comes off the on-demand tier's months; the commitment is paid in its own
        tier, kind = ("on-demand", "new") if kind == "credit" else (TIER, kind)
        out.cash.append(CashFlowRow(month, provider, label, tier, kind, 0.0, 0.0, amount))
    return out


def schedule(plan: Plan, new: list[NewSpendCommitment], signed: list[SpendContract],
             months: int) -> list[ScheduleRow]:
    """Every spend commitment month by month from the horizon's first month (as cashflow.schedule does for
    reservations): a row per month it runs, its `usd_per_hour` (no GPUs, no price per GPU-hour: it commits to
    spend), so the amount is $/hour × 24 × its days in the month."""
    if plan.start_date is None:
        return []
    items = [(cash_label(c.provider, c.term, c.key), c.provider, "signed", c.usd_per_hour,
              dt.date.fromisoformat(c.start), dt.date.fromisoformat(c.end)) for c in signed]
    items += [(cash_label(n.provider, n.term, n.key), n.provider, "new", n.usd_per_hour,
               dt.date.fromisoformat(n.start), dt.date.fromisoformat(n.end)) for n in new if n.start and n.end]
    rows = []
    a = plan.start_date.replace(day=1)
    for _ in range(months):
        b = (dt.date(a.year + 1, 1, 1) if a.month == 12 else dt.date(a.year, a.month + 1, 1)) - dt.timedelta(days=1)
        for label, provider, kind, u, first, last in items:
            days = (min(b, last) - max(a, first)).days + 1
            if days > 0:
                rows.append(ScheduleRow(a.strftime("%Y-%m"), label, provider, TIER, kind, 0, days, 0.0,
                                        u * 24 * days, usd_per_hour=u))
        a = b + dt.timedelta(days=1)
    return rows
