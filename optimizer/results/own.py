"""Servers of your own in the result: their costs shared out to workloads and months, the buy decision
with its cash and payback, break-even against renting, and what the facility has left.

No PuLP. Every figure comes from candidates.ownership's terms and optimize.costs' prices of a unit, the same
the program's objective is built from.
"""

from __future__ import annotations

import datetime as dt
import math

from optimizer import formatting
from optimizer.candidates.ownership import DAYS_PER_YEAR, OwnTerms, owned_facility_use
from optimizer.inputs import prices
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan
from optimizer.optimize.calendar import Segments
from optimizer.optimize.costs import in_service, owned_days, running_per_node_day, service_days
from optimizer.results.types import (
    BookView,
    BoughtRow,
    BreakEvenRow,
    FacilityUse,
    OwnedRow,
    OwnInputRow,
    OwnResult,
    PlanResult,
    Purchase,
)

HOURS_PER_MONTH = 24.0 * DAYS_PER_YEAR / 12.0


def rates(plan: Plan, segments: Segments, terms: dict[str, OwnTerms], purchases: list[Purchase],
          fixed: dict[str, float]) -> dict[tuple[str, str], float]:
    """Per GPU-hour held at servers of your own: (o, "buy") the ownership share of bought ones,
    (o, "fixed_bought") their idle energy and space, (o, "fixed_owned") the owned ones' running costs."""
    out: dict[tuple[str, str], float] = {}
    for o, t in terms.items():
        if t.kind == "buy":
            held = sum(p.gpu_hours for p in purchases if p.offer == o and p.tier == "buy")
            cost = sum(p.cost for p in purchases if p.offer == o and p.tier == "buy")
            if held:
                out[(o, "buy")] = cost / held
                out[(o, "fixed_bought")] = fixed.get(o, 0.0) / held
        else:
            held = prices.gpu_hours_held(t.owned_nodes * t.gpus_per_node, owned_days(plan, segments, t))
            if held:
                out[(o, "fixed_owned")] = fixed.get(o, 0.0) / held
    return out


def workload_costs(used: dict[tuple[str, str], float], rates: dict[tuple[str, str], float],
                   terms: dict[str, OwnTerms]) -> dict[str, float]:
    """A workload's buy and facility cost from the GPU-hours it ran on servers of your own."""
    buy = fac = 0.0
    for (o, tier), v in used.items():
        if o not in terms:
            continue
        if tier == "reserved":  # bought servers
            buy += v * rates.get((o, "buy"), 0.0)
            fac += v * rates.get((o, "fixed_bought"), 0.0)
        elif tier == "committed":  # owned servers
            fac += v * rates.get((o, "fixed_owned"), 0.0)
        elif tier == "energy":  # already USD
            fac += v
    return {"buy": buy, "facility": fac}


def spread(terms: dict[str, OwnTerms], purchases: list[Purchase], fixed: dict[str, float],
           serving: dict[str, float], segments: Segments) -> list[tuple[str, str, int, float]]:
    """(offer, tier, first day, amount): own-hardware costs to spread evenly over the days from the first
    day on (results.cashflow): the ownership share of bought servers, and their facility costs."""
    out = []
    for o, t in sorted(terms.items()):
        buy = sum(p.cost for p in purchases if p.offer == o and p.tier == "buy")
        if buy:
            out.append((o, "buy", t.arrives_day, buy))
        fac = fixed.get(o, 0.0) + serving.get(o, 0.0)
        if fac:
            out.append((o, "facility", t.arrives_day, fac))
    return out


def _alternatives(plan: Plan, offers: dict[str, Offer], accelerator: str) -> list[tuple[str, str, float]]:
    """The cheapest rented price of the accelerator for each tier the policy allows: (offer, tier, price)."""
    out = []
    for tier in ("reserved-3y", "reserved-1y", "on-demand"):
        if tier not in plan.policy.tiers:
            continue
        best = min(((o.price(tier), oid) for oid, o in offers.items()
                    if o.accelerator == accelerator and o.buy is None and o.provider != "own"
                    and o.price(tier) is not None
                    and (plan.policy.providers is None or o.provider in plan.policy.providers)),
                   default=None)
        if best is not None:
            out.append((best[1], tier, float(best[0])))  # type: ignore[arg-type]
    return out


def _saving(t: OwnTerms, utilization: float, alts: list[tuple[str, str, float]]) -> tuple[float | None, str | None]:
    """What one unit saves a month against the cheapest rented alternative at this use, before owning it
    (renting's cost per GPU-hour owned − running cost: idle energy, space, support and serving energy), and
    that alternative ("offer tier"). The Own hardware sheet's decision table computes it the same way."""
    best = None
    for oid, tier, price in alts:
        cost = price if tier.startswith("reserved") else price * utilization  # per GPU-hour owned
        if best is None or cost < best[0]:
            best = (cost, f"{oid} {tier}")
    if best is None or not t.price_per_node:
        return None, None
    running = prices.per_gpu_hour(running_per_node_day(t), t.gpus_per_node) + t.mean_serving_energy() * utilization
    return (best[0] - running) * t.gpus_per_node * HOURS_PER_MONTH, best[1]


def _payback(t: OwnTerms, utilization: float, alts: list[tuple[str, str, float]]) -> tuple[float | None, str | None]:
    """Months of savings against the cheapest rented alternative that repay one unit's price."""
    saving, against = _saving(t, utilization, alts)
    if saving is None or saving <= 0:
        return None, against
    return t.price_per_node / saving, against


def npv_per_unit(price: float, saving_per_month: float, life_years: float, residual_fraction: float,
                 cost_of_capital: float) -> float:
    """One unit's net present value against renting: `saving_per_month` for each month of its life,
    discounted monthly at the cost of capital, plus the residual value at the end, minus the price paid at
    delivery. An annuity in closed form, as the Own hardware sheet's formula writes it."""
    n = life_years * 12.0
    i = cost_of_capital / 12.0
    if i == 0:
        return saving_per_month * n + residual_fraction * price - price
    v = (1.0 + i) ** -n
    return saving_per_month * (1.0 - v) / i + residual_fraction * price * v - price


def report(plan: Plan, offers: dict[str, Offer], terms: dict[str, OwnTerms], segments: Segments,
           purchases: list[Purchase], fixed: dict[str, float], serving: dict[str, float],
           alloc: dict[str, dict[tuple[str, str], float]], cost_by_tier: dict[str, float],
           served: dict[str, list[float]] | None = None) -> OwnResult:
    used: dict[tuple[str, str], float] = {}
    for mine in alloc.values():
        for (o, tier), v in mine.items():
            if o in terms and tier in ("reserved", "committed"):
                used[(o, tier)] = used.get((o, tier), 0.0) + v
    bought, owned, breaks = [], [], []
    for o, t in sorted(terms.items()):
        acc = offers[o].accelerator
        if t.kind == "buy":
            alts = _alternatives(plan, offers, acc)
            for oid, tier, price in alts:
                paid = "held" if tier.startswith("reserved") else "used"
                rng = t.break_even(price, paid)  # type: ignore[arg-type]
                breaks.append(BreakEvenRow(o, acc, t.fixed_per_gpu_hour(), t.mean_serving_energy(), oid, tier, price,
                                           rng[0] if rng else None, rng[1] if rng else None))
            p = next((p for p in purchases if p.offer == o and p.tier == "buy"), None)
            if p is None:
                continue
            nodes = p.gpus // t.gpus_per_node
            n = service_days(segments, o)
            util = used.get((o, "reserved"), 0.0) / p.gpu_hours if p.gpu_hours else 0.0
            months, against = _payback(t, util, alts)
            saving, _ = _saving(t, util, alts)
            npv = None if saving is None else npv_per_unit(t.price_per_node, saving, t.life_years,
                                                           t.residual_fraction, t.cost_of_capital)
            order = plan.start_date.isoformat() if plan.start_date else None
            delivery = t.delivery.isoformat() if t.delivery else None
            size = f"{t.gpus_per_node}-GPU {acc.upper()} {'rack' if t.gpus_per_node >= 32 else 'node'}"
            text = (f"order {nodes} × {size}{'s' if nodes != 1 else ''} now"
                    + (f" ({order}), delivered {delivery}" if order else "")
                    + f"; {formatting.money(nodes * t.price_per_node, plan.currency)} at delivery"
                    + (f", paid back in {months:.0f} months against {against}" if months is not None else
                       (f"; never paid back against {against} at {util:.0%} use" if against else "")))
            bought.append(BoughtRow(
                o, acc, nodes, p.gpus, t.gpus_per_node, order, delivery, t.arrives_day, nodes * t.price_per_node,
                p.cost, nodes * in_service(t.depreciation_per_year, n),
                nodes * in_service(t.capital_per_year, n), nodes * in_service(t.support_per_year, n),
                fixed.get(o, 0.0) + serving.get(o, 0.0), util, months, against, text, npv_per_unit=npv))
        else:
            n = owned_days(plan, segments, t)
            held = prices.gpu_hours_held(t.owned_nodes * t.gpus_per_node, n)
            gh = used.get((o, "committed"), 0.0)
            dep = 0.0
            if t.remaining_life_years:
                dep = t.owned_nodes * t.book_value_per_node * min(1.0, n / DAYS_PER_YEAR / t.remaining_life_years)
            owned.append(OwnedRow(o, acc, t.owned_nodes, t.owned_nodes * t.gpus_per_node, t.arrives_day,
                                  t.owned_nodes * t.book_value_per_node, dep, fixed.get(o, 0.0) + serving.get(o, 0.0),
                                  gh, gh / held if held else 0.0))
    fac = plan.facility
    kw_owned, racks_owned = owned_facility_use(terms)
    power = kw_owned + sum(terms[b.offer].load_kw * b.nodes for b in bought)
    racks = racks_owned + sum(math.ceil(b.nodes / terms[b.offer].nodes_per_rack) for b in bought)
    binding = []
    buyable = [t for t in terms.values() if t.kind == "buy"]
    if fac.power_kw is not None and buyable and fac.power_kw - power < min(t.load_kw for t in buyable) - 1e-9:
        binding.append("power_kw")
    if fac.racks is not None and buyable and fac.racks - racks < 1:
        binding.append("racks")
    capex = sum(b.capex for b in bought)
    total = sum(cost_by_tier.values())
    nodes = {b.offer: b.nodes for b in bought} | {r.offer: r.nodes for r in owned}
    inputs = [OwnInputRow(o, t.kind, nodes.get(o, 0), t.gpus_per_node, t.price_per_node, t.life_years,
                          t.residual_fraction, t.cost_of_capital, t.support_per_year, t.load_kw, t.idle_kw,
                          service_days(segments, o) if t.kind == "buy" else owned_days(plan, segments, t),
                          list((served or {}).get(o, [0.0] * 24)))
              for o, t in sorted(terms.items())]
    return OwnResult(bought, owned, breaks,
                     FacilityUse(fac.power_kw, power, fac.racks, racks, fac.liquid_cooling, fac.pue, binding,
                                 tariff=[fac.tariff(h) for h in range(24)],
                                 colo_usd_per_kw_month=fac.colo_usd_per_kw_month),
                     capex, total - cost_by_tier.get("buy", 0.0) + sum(b.support_in_horizon for b in bought),
                     sum(r.depreciation_in_horizon for r in owned), inputs)


def capex_month(b: BoughtRow) -> str:
    """The month of delivery, named as results.cashflow names months."""
    return (dt.date.fromisoformat(b.delivery_date).strftime("%Y-%m") if b.delivery_date
            else f"M{b.delivery_day // 30 + 1}")


def capex_rows(bought: list[BoughtRow]) -> list[dict]:
    """The cash outlay by month of delivery."""
    return [{"month": capex_month(b), "offer": b.offer, "nodes": b.nodes, "amount": b.capex} for b in bought]


# --- the book view: what the accounts carry, beside the cash all-in ------------------------------

def book_view(result: PlanResult) -> BookView | None:
    """The horizon in the books: depreciation of servers owned and bought plus opex (rented tiers, contracts,
    API, energy, space, support); the cost of capital is shown apart. None without hardware of your own
    (then the book is the all-in). total = all_in + depreciation_owned − cost_of_capital, by construction:
    the all-in carries bought servers' depreciation, capital and support (tier buy) but not owned servers'
    depreciation (sunk capital, no decision turns on it)."""
    own = result.own
    if own is None:
        return None
    dep_owned = sum(r.depreciation_in_horizon for r in own.owned)
    dep_bought = sum(b.depreciation_in_horizon for b in own.bought)
    capital = sum(b.capital_in_horizon for b in own.bought)
    all_in = result.cost_all_in
    opex = all_in - dep_bought - capital
    return BookView(dep_owned, dep_bought, opex, capital, all_in, dep_owned + dep_bought + opex)


def book_by_workload(result: PlanResult) -> dict[str, dict[str, float]]:
    """Each workload's part of the book view, and what no workload used (key ""): its all-in, plus the owned
    servers' depreciation by the GPU-hours it ran on them, minus the cost of capital inside its share of
    servers bought (by the GPU-hours it ran on them). The unused part of each is priced the same way from the
    GPU-hours held and not used, so the rows' `book` add up to book_view's total. Showback (team rows) reads
    this to charge teams on servers of your own their depreciation."""
    own = result.own
    out: dict[str, dict[str, float]] = {}

    def row(key: str, all_in: float, dep: float, cap: float) -> None:
        out[key] = {"all_in": all_in, "depreciation_owned": dep, "cost_of_capital": cap,
                    "book": all_in + dep - cap}

    held = {x.offer: prices.gpu_hours_held(x.nodes * x.gpus_per_node, x.service_days)
            for x in (own.inputs if own is not None else [])}
    dep_rate, cap_rate = {}, {}  # per GPU-hour held
    for r in (own.owned if own is not None else []):
        h = held.get(r.offer) or (r.gpu_hours_used / r.utilization if r.utilization else 0.0)
        held[r.offer] = h
        dep_rate[r.offer] = r.depreciation_in_horizon / h if h else 0.0
    for b in (own.bought if own is not None else []):
        h = sum(p.gpu_hours for p in result.purchases if p.offer == b.offer and p.tier == "buy")
        held[b.offer] = h
        cap_rate[b.offer] = b.capital_in_horizon / h if h else 0.0
    used = {o: 0.0 for o in held}
    for w in result.workloads:
        owned_gh = w.gpu_hours_by_tier.get("owned", 0.0) if w.offer in dep_rate else 0.0
        bought_gh = w.gpu_hours_by_tier.get("buy", 0.0) if w.offer in cap_rate else 0.0
        if w.offer in used:
            used[w.offer] += owned_gh + bought_gh
        row(w.name, w.cost + w.committed_cost, owned_gh * dep_rate.get(w.offer, 0.0),
            bought_gh * cap_rate.get(w.offer, 0.0))
    idle_dep = sum((held[o] - used[o]) * dep_rate[o] for o in dep_rate)
    idle_cap = sum((held[o] - used[o]) * cap_rate[o] for o in cap_rate)
    row("", result.cost_idle + result.cost_idle_committed, idle_dep, idle_cap)
    return out
