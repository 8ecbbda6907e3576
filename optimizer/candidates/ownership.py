"""What servers of your own cost: the horizon's share of owning what the plan buys, energy and space.

No PuLP, no I/O. One place computes every owned-hardware number the program, the results and the
reports use, so the three agree:

    ownership share per bought unit = (depreciation + capital + support) × days in service ÷ 365
        depreciation = price × (1 − residual) ÷ life             (straight line, a year)
        capital      = cost_of_capital × price × (1 + residual) ÷ 2   (the mean book value over its life)
    energy at hour h  = kW × PUE × tariff(h): idle kW for every unit in service, and (load − idle) kW
                        ÷ GPUs per unit for every GPU that serves
    colocation        = colo_usd_per_kw_month × load kW × 12 ÷ 365 a day in service

Days in service are plan days: the days of the horizon from delivery (bought) or from `since` (owned).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Literal

from optimizer.inputs import prices
from optimizer.inputs.own import idle_kw, owned_offers, per_rack
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan

DAYS_PER_YEAR = 365.0
MONTHS_PER_YEAR = 12.0


@dataclass(frozen=True)
class Arrival:
    """GPUs of your own that serve from a day of the horizon on (0: from its start)."""

    offer: str
    gpus: int
    """Owned GPUs arriving (0 for a buy offer: the day its bought servers are delivered)."""
    day: int
    """Offset from the horizon's first day."""


@dataclass(frozen=True)
class OwnTerms:
    """One offer of your own hardware (bought in this plan, or owned already), its costs per unit."""

    offer: str
    kind: Literal["buy", "owned"]
    gpus_per_node: int
    arrives_day: int
    """Days after the horizon's start it serves from (bought: its lead time; owned: since)."""
    load_kw: float
    idle_kw: float
    nodes_per_rack: int
    pue: float
    tariff: tuple[float, ...]
    """USD per kWh by hour 0–23."""
    colo_usd_per_kw_month: float
    price_per_node: float = 0.0
    """Bought: the cash outlay per unit at delivery. Owned: 0."""
    life_years: float = 0.0
    residual_fraction: float = 0.0
    cost_of_capital: float = 0.0
    support_per_year: float = 0.0
    owned_nodes: int = 0
    book_value_per_node: float = 0.0
    remaining_life_years: float | None = None
    delivery: dt.date | None = None

    # -- a year ---------------------------------------------------------------------------------
    @property
    def depreciation_per_year(self) -> float:
        return self.price_per_node * (1.0 - self.residual_fraction) / self.life_years if self.life_years else 0.0

    @property
    def capital_per_year(self) -> float:
        return self.cost_of_capital * self.price_per_node * (1.0 + self.residual_fraction) / 2.0

    @property
    def ownership_per_year(self) -> float:
        """Depreciation + cost of capital + support, one unit, a year."""
        return self.depreciation_per_year + self.capital_per_year + self.support_per_year

    # -- a day or an hour in service --------------------------------------------------------------
    def idle_energy_per_day(self) -> float:
        """USD a unit in service draws idle over a day (every hour, at that hour's tariff)."""
        return self.idle_kw * self.pue * sum(self.tariff)

    def serving_energy(self, hour: int) -> float:
        """USD per GPU-hour of serving at an hour, beyond the idle draw."""
        return (self.load_kw - self.idle_kw) / self.gpus_per_node * self.pue * self.tariff[hour]

    def colo_per_day(self) -> float:
        return self.colo_usd_per_kw_month * self.load_kw * MONTHS_PER_YEAR / DAYS_PER_YEAR

    def fixed_per_day(self) -> float:
        """What one unit costs a day in service whether it serves or not: ownership, idle energy, space."""
        return self.ownership_per_year / DAYS_PER_YEAR + self.idle_energy_per_day() + self.colo_per_day()

    def fixed_per_gpu_hour(self) -> float:
        return prices.per_gpu_hour(self.fixed_per_day(), self.gpus_per_node)

    def mean_serving_energy(self) -> float:
        return sum(self.serving_energy(h) for h in range(24)) / 24.0

    # -- the decision ---------------------------------------------------------------------------
    def break_even(self, price_per_gpu_hour: float, paid_when: Literal["held", "used"]) -> tuple[float, float] | None:
        """The utilization range (lo, hi) over which owning beats a rented price, or None when it never does.

        Owning costs F + V·u per GPU-hour owned at utilization u (F fixed, V the serving energy).
        Rented by the hour (`used`) costs P·u: owning wins for u > F ÷ (P − V). Reserved (`held`) costs P
        whatever the use: owning wins for u < (P − F) ÷ V.
        """
        f, v, p = self.fixed_per_gpu_hour(), self.mean_serving_energy(), price_per_gpu_hour
        if paid_when == "used":
            if p <= v:
                return None
            lo = f / (p - v)
            return (lo, 1.0) if lo <= 1.0 else None
        if p <= f:
            return None
        hi = (p - f) / v if v > 0 else float("inf")
        return (0.0, min(1.0, hi))


def terms(plan: Plan, offers: dict[str, Offer]) -> dict[str, OwnTerms]:
    """Every own-hardware offer among `offers` (buy offers, owned servers), by id."""
    fac = plan.facility
    tariff = tuple(fac.tariff(h) for h in range(24))
    out: dict[str, OwnTerms] = {}
    owned = owned_offers(plan)
    for oid in sorted(offers):
        offer = offers[oid]
        if offer.buy is not None:
            b = offer.buy
            assert b.node_power_kw is not None and b.price_per_node is not None
            lead = b.lead_time_days or 0
            out[oid] = OwnTerms(
                oid, "buy", offer.gpus_per_node, lead, b.node_power_kw, idle_kw(b.node_power_kw, b.idle_power_kw),
                per_rack(offer.gpus_per_node, b.nodes_per_rack), fac.pue, tariff, fac.colo_usd_per_kw_month,
                price_per_node=b.price_per_node, life_years=b.life_years or 5.0,
                residual_fraction=b.residual_fraction or 0.0, cost_of_capital=b.cost_of_capital,
                support_per_year=b.support_per_year or 0.0,
                delivery=plan.start_date + dt.timedelta(days=lead) if plan.start_date else None)
        elif oid in owned:
            group = owned[oid]
            first = group[0]
            nodes = sum(o.nodes for o in group)
            arrive = min(_since_day(plan, o.since) for o in group)
            book = sum(o.book_value_per_node * o.nodes for o in group) / nodes
            lives = [o.remaining_life_years for o in group if o.remaining_life_years]
            out[oid] = OwnTerms(
                oid, "owned", first.gpus_per_node, arrive, first.node_power_kw,
                idle_kw(first.node_power_kw, first.idle_power_kw), per_rack(first.gpus_per_node, first.nodes_per_rack),
                fac.pue, tariff, fac.colo_usd_per_kw_month,
                support_per_year=sum(o.support_per_year * o.nodes for o in group) / nodes, owned_nodes=nodes,
                book_value_per_node=book, remaining_life_years=min(lives) if lives else None)
    return out


def owned_facility_use(terms: dict[str, OwnTerms]) -> tuple[float, int]:
    """(kW at load, rack positions) the servers owned already take in the facility."""
    owned = [t for t in terms.values() if t.kind == "owned"]
    return (sum(t.load_kw * t.owned_nodes for t in owned),
            sum(math.ceil(t.owned_nodes / t.nodes_per_rack) for t in owned))


def _since_day(plan: Plan, since: dt.date | None) -> int:
    if since is None or plan.start_date is None:
        return 0
    return max(0, (since - plan.start_date).days)


def arrivals(plan: Plan, offers: dict[str, Offer]) -> list[Arrival]:
    """Owned GPUs by the day they serve from, and the days bought servers are delivered."""
    out = []
    owned = owned_offers(plan)
    for oid in sorted(offers):
        offer = offers[oid]
        if offer.buy is not None:
            out.append(Arrival(oid, 0, offer.buy.lead_time_days or 0))
        for o in owned.get(oid, []):
            out.append(Arrival(oid, o.nodes * o.gpus_per_node, _since_day(plan, o.since)))
    return out
