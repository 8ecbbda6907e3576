"""Money by calendar month: the horizon's spend (new and committed) by month × provider × tier, and
the forward schedule of every commitment, signed and new, month by month.

No PuLP: arithmetic on the solved hourly supply, the purchases and the contracts. The horizon's months
add up to the plan's all-in spend exactly: a day type's days (as the plan states them, shared among
contract periods the way the program shares them) are spread over the calendar days of that type.
"""

from __future__ import annotations

import datetime as dt

from optimizer.inputs import prices
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan
from optimizer.optimize.calendar import Calendar
from optimizer.results.contracts import ContractRow, NewReservation, term_days
from optimizer.results.own import capex_rows
from optimizer.results.types import (
    CashFlowRow,
    CashMonthRow,
    HourlySupply,
    OwnResult,
    Purchase,
    ScheduleRow,
    WorkloadResult,
)
from optimizer.units import HOURS_PER_DAY
from optimizer.vocab import RESERVED_TIERS

SCHEDULE_MONTHS = 36


def _month(plan: Plan, k: int) -> str:
    if plan.start_date is None:
        return f"M{k // 30 + 1}"
    return (plan.start_date + dt.timedelta(days=k)).strftime("%Y-%m")


def day_weights(plan: Plan, cal: Calendar | None) -> list[dict[tuple[str, str], float]]:
    """For every day of the horizon, (period label, day type) → how many of that type's days it is.

    Keys: ("", day type) for the whole horizon and, when contracts cut it, (period label, day type).
    A period's days of a type go to the calendar days of that type in it; when the calendar has none
    (no start_date, or day types that do not follow the week) they are spread evenly over its days.
    Σ over the horizon of each (period, day type) = the days the program counted for it.
    """
    H = plan.horizon_days
    periods = cal.periods if cal is not None else []
    split = cal is not None and cal.split
    # rows of offers whose supply does not change at a contract's end stand for the whole horizon ("")
    spans = [("", 0, H, {d: float(n) for d, n in plan.day_type_days().items()})]
    if split:
        spans += [(p.label, p.first_day, p.days, dict(p.day_types)) for p in periods]
    out: list[dict[tuple[str, str], float]] = [{} for _ in range(H)]
    for label, first, n, types in spans:
        kinds = [plan.calendar_types(plan.start_date + dt.timedelta(days=k)) if plan.start_date else []
                 for k in range(first, first + n)]
        for d, days in types.items():
            if not days:
                continue
            mine = [first + i for i, kd in enumerate(kinds) if d in kd]
            if mine:
                for k in mine:
                    out[k][(label, d)] = out[k].get((label, d), 0.0) + days / len(mine)
            else:
                for k in range(first, first + n):
                    out[k][(label, d)] = out[k].get((label, d), 0.0) + days / n
    return out


def cash_flow(plan: Plan, cal: Calendar | None, hourly: list[HourlySupply], purchases: list[Purchase],
              contracts: list[ContractRow], workloads: list[WorkloadResult], offers: dict[str, Offer],
              own: list[tuple[str, str, int, float]] = ()) -> list[CashFlowRow]:
    """The horizon's spend by month: Σ amounts = new spend + committed spend (the plan's all-in).

    `own` (results.own.spread): servers of your own — their ownership share (tier buy) and energy and
    space (tier facility), spread evenly over the days from delivery (the P&L view; the cash outlay
    at delivery is the result's own.capex)."""
    weights = day_weights(plan, cal)
    months = [_month(plan, k) for k in range(plan.horizon_days)]
    gh: dict[tuple[str, str, str, str], float] = {}  # (month, offer, tier, kind) → GPU-hours

    def add(month: str, offer: str, tier: str, kind: str, v: float) -> None:
        if v:
            gh[(month, offer, tier, kind)] = gh.get((month, offer, tier, kind), 0.0) + v

    daily: dict[tuple[str, str, str, str], float] = {}  # (offer, tier, period, day type) → GPU-hours a day
    for h in hourly:
        for tier, g in (("on-demand", h.on_demand_gpus), ("spot", h.spot_gpus)):
            if g:
                key = (h.offer, tier, h.period, h.day_type)
                daily[key] = daily.get(key, 0.0) + g
    sd = scenario_days(plan)
    paid: dict[tuple[str, str, str], float] = {}  # (month, offer, tier) → GPU-hours × the scenario's price factor
    for k, w in enumerate(weights):
        for (o, tier, period, d), g in daily.items():
            add(months[k], o, tier, "new", w.get((period, d), 0.0) * g)
            if sd is not None:
                key = (months[k], o, tier)
                paid[key] = paid.get(key, 0.0) + w.get((period, d), 0.0) * g * sd.price(d, tier, offers[o].provider)
    for p in purchases:
        if p.tier in RESERVED_TIERS:
            first = (dt.date.fromisoformat(p.start) - plan.start_date).days if p.start and plan.start_date else 0
            for k in range(first, plan.horizon_days):
                add(months[k], p.offer, p.tier, "new", p.gpus * HOURS_PER_DAY)
    price: dict[tuple[str, str, str], float] = {}
    for c in contracts:
        first, last = dt.date.fromisoformat(c.start), dt.date.fromisoformat(c.end)
        for k in range(plan.horizon_days):
            day = plan.start_date + dt.timedelta(days=k) if plan.start_date else None
            if day is not None and first <= day <= last:
                add(months[k], c.offer, c.tier, "committed", c.gpus * HOURS_PER_DAY)
        price[(c.offer, c.tier, "committed")] = c.price_per_gpu_hour
    rows = []
    for (month, o, tier, kind), v in gh.items():
        if kind == "committed":
            # several contracts on one offer and tier at different prices: priced contract by contract
            continue
        p = offers[o].price(tier) or 0.0
        if (month, o, tier) in paid and v:  # scenarios that move hourly prices: their blend that month
            p *= paid[(month, o, tier)] / v
        rows.append(CashFlowRow(month, offers[o].provider, o, tier, kind, v, p, v * p))
    for c in contracts:  # one row per contract and month, at its own price
        first, last = dt.date.fromisoformat(c.start), dt.date.fromisoformat(c.end)
        per: dict[str, float] = {}
        for k in range(plan.horizon_days):
            day = plan.start_date + dt.timedelta(days=k) if plan.start_date else None
            if day is not None and first <= day <= last:
                per[months[k]] = per.get(months[k], 0.0) + c.gpus * HOURS_PER_DAY
        for month, v in per.items():
            rows.append(CashFlowRow(month, c.provider, c.offer, c.tier, "committed", v, c.price_per_gpu_hour,
                                    v * c.price_per_gpu_hour))
    for o, tier, first, amount in own:
        first = max(0, first)
        n = plan.horizon_days - first
        per_month: dict[str, float] = {}
        for k in range(first, plan.horizon_days):
            per_month[months[k]] = per_month.get(months[k], 0.0) + amount / n
        for month, v in per_month.items():
            rows.append(CashFlowRow(month, "own", o, tier, "new", 0.0, 0.0, v))
    rows += _api_rows(plan, weights, months, workloads)
    order = {m: i for i, m in enumerate(dict.fromkeys(months))}
    kinds = {"committed": 0, "new": 1, "api": 2}
    rows.sort(key=lambda r: (order[r.month], kinds[r.kind], r.provider, r.offer, r.tier, r.price_per_gpu_hour))
    return _merged(rows)


def pnl_and_cash(flow: list[CashFlowRow], own: OwnResult | None) -> list[CashMonthRow]:
    """By month, the profit and loss (`flow`: the ownership share of bought servers spread from delivery)
    against the cash (their price at delivery and their support as it runs; depreciation and the cost of
    capital are not cash). Σ pnl = cost.all_in; Σ cash = cost.all_in − ownership share + support + capex."""
    # Summed from the amounts as a result file states them (to the micro-dollar), so a result read back
    # derives the same months to the last digit it writes.
    def q(x: float) -> float:
        return round(x, 6)

    support = {b.offer: q(b.support_in_horizon) / q(b.ownership_in_horizon) if q(b.ownership_in_horizon) else 0.0
               for b in (own.bought if own is not None else [])}
    keys = ("rented", "facility", "ownership", "support", "capex")
    by: dict[str, dict[str, float]] = {}
    for r in flow:
        m = by.setdefault(r.month, dict.fromkeys(keys, 0.0))
        amount = q(r.amount)
        if r.tier == "buy":
            m["ownership"] += amount
            m["support"] += q(amount * support.get(r.offer, 0.0))
        elif r.tier == "facility":
            m["facility"] += amount
        else:
            m["rented"] += amount
    for c in capex_rows(own.bought if own is not None else []):
        by.setdefault(c["month"], dict.fromkeys(keys, 0.0))["capex"] += q(c["amount"])

    def order(month: str) -> tuple[int, str]:
        return (int(month[1:]), "") if month[:1] == "M" and month[1:].isdigit() else (0, month)

    return [CashMonthRow(k, **m, pnl=m["rented"] + m["facility"] + m["ownership"],
                         cash=m["rented"] + m["facility"] + m["support"] + m["capex"])
            for k, m in ((k, by[k]) for k in sorted(by, key=order))]


def _merged(rows: list[CashFlowRow]) -> list[CashFlowRow]:
    """Contracts on the same offer, tier and price in one month: one row."""
    out: list[CashFlowRow] = []
    for r in rows:
        last = out[-1] if out else None
        if last is not None and (last.month, last.offer, last.tier, last.kind, last.price_per_gpu_hour) == \
                (r.month, r.offer, r.tier, r.kind, r.price_per_gpu_hour):
            out[-1] = CashFlowRow(r.month, r.provider, r.offer, r.tier, r.kind, last.gpu_hours + r.gpu_hours,
                                  r.price_per_gpu_hour, last.amount + r.amount)
        else:
            out.append(r)
    return out


def _api_rows(plan: Plan, weights: list[dict[tuple[str, str], float]], months: list[str],
              workloads: list[WorkloadResult]) -> list[CashFlowRow]:
    """Each workload's API cost by month: by day type in proportion to the tokens it sends on such a
    day (interactive overflow), evenly over the days when that is not known (batch)."""
    days = plan.day_type_days()
    rows = []
    for w in workloads:
        if w.api_cost <= 0:
            continue
        sent = {d: sum(w.hourly_api_tokens_per_s.get(d, [])) * days.get(d, 0) for d in days}
        total = sum(sent.values())
        per: dict[str, float] = {}
        for k, wk in enumerate(weights):
            if total > 0:
                share = sum(v * sent[d] / days[d] for (p, d), v in wk.items() if p == "" and days.get(d)) / total
            else:
                share = 1.0 / plan.horizon_days
            per[months[k]] = per.get(months[k], 0.0) + share * w.api_cost
        for month, v in per.items():
            rows.append(CashFlowRow(month, "api", w.name, "api", "api", 0.0, 0.0, v))
    return rows


def schedule(plan: Plan, contracts: list[ContractRow], new: list[NewReservation],
             months: int = SCHEDULE_MONTHS) -> list[ScheduleRow]:
    """Every commitment month by month from the horizon's first month, up to `months` months."""
    if plan.start_date is None:
        return []
    start = plan.start_date.replace(day=1)
    firsts = []
    y, m = start.year, start.month
    for _ in range(months):
        firsts.append(dt.date(y, m, 1))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    items = [(c.offer, c.provider, c.tier, "signed", c.gpus, c.price_per_gpu_hour, dt.date.fromisoformat(c.start),
              dt.date.fromisoformat(c.end), 0.0) for c in contracts]
    items += [(n.offer, n.provider, n.tier, "new", n.gpus, n.price_per_gpu_hour, start,
               start + dt.timedelta(days=term_days(n.tier) - 1), n.upfront)
              for n in new for start in [dt.date.fromisoformat(n.start) if n.start else plan.start_date]]
    rows = []
    for a in firsts:
        b = (dt.date(a.year + 1, 1, 1) if a.month == 12 else dt.date(a.year, a.month + 1, 1)) - dt.timedelta(days=1)
        for offer, provider, tier, kind, gpus, price, first, last, upfront in items:
            days = (min(b, last) - max(a, first)).days + 1
            if days > 0:
                # paid up front: that amount on the first day, and only the rest of the term by its days
                total = prices.held(gpus, price, (last - first).days + 1)
                later = (1.0 - upfront / total if total else 1.0) * prices.held(gpus, price, days)
                paid = upfront if a <= first <= b else 0.0
                rows.append(ScheduleRow(a.strftime("%Y-%m"), offer, provider, tier, kind, gpus, days, price,
                                        later + paid, paid))
    return rows
