"""What one unit of each purchase costs over the horizon: the single place the program's objective
coefficients, the extracted result (results.extract) and the own-hardware report (results.own) take
their money from, so the three agree by construction.

No PuLP. Every function is linear in the quantity bought: the program multiplies these coefficients by
its variables, the result by the solved whole numbers.

    reserved node, tier k        m_o · price_k · 24 · (H − t)                 (held from day t, 0 or a later start)
    on-demand / spot node-hour   n_s · m_o · price_tier · scenario multiplier (one hour of day, every day of s)
    API output token             price_out + price_in · input/output tokens    (inputs.prices)
    bought node                  ownership a year ÷ 365 · days in service       (candidates.ownership)
                                 + (idle energy + colocation) a day · days in service
    owned servers                nodes · (idle energy + colocation + support ÷ 365) a day · days they serve
    serving GPU-hour             n_s · serving energy at hour h                 (servers of your own)

The unit prices that need no calendar (a GPU-hour of a tier, GPUs held for days, an API token) are
stated once in inputs.prices, which the configs (candidates) use too; these build on them.

Days in service are plan days: from delivery (bought) or from `since` (owned) to the horizon's end.
"""

from __future__ import annotations

from optimizer.candidates.ownership import DAYS_PER_YEAR, OwnTerms
from optimizer.inputs import prices
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.optimize.calendar import Segments

def reserved_per_node(offer: Offer, tier: str, horizon_days: float, start_day: int = 0) -> float:
    """A reserved node held from `start_day` (an offset from the horizon's first day) to the horizon's end:
    its GPU-hours in the horizon (the rest of its term lies beyond it)."""
    return prices.reserved_node(offer, tier, horizon_days - start_day)


def hourly_price(plan: Plan, segments: Segments, offer: Offer, tier: str, segment: str) -> float:
    """Price per GPU-hour of an hourly tier (on-demand, spot) in a segment: a scenario's multiplier applied."""
    return prices.gpu_hour_on(plan, offer, tier, segments.segments[segment][0])


def hourly_per_node(plan: Plan, segments: Segments, offer: Offer, tier: str, segment: str,
                    days: float | None = None) -> float:
    """An on-demand or spot node at one hour of day, on every day of the segment (`days`: the segment's
    days, or another weight of them, such as a scenario's days ÷ its weight)."""
    n = segments.days()[segment] if days is None else days
    return n * offer.gpus_per_node * hourly_price(plan, segments, offer, tier, segment)


def api_per_token(w: Workload) -> float:
    """An output token sent to the API, the input tokens of its request included."""
    return prices.api_output_token(w)


def service_days(segments: Segments, offer: str) -> float:
    """Plan days bought servers at the offer serve (from their delivery to the horizon's end)."""
    days = segments.days()
    return sum(days[s] for s, _d in segments.of_offer(offer) if segments.delivered(offer, s))


def owned_days(plan: Plan, segments: Segments, t: OwnTerms) -> float:
    """Plan days owned servers serve: from `since` (their segments with GPUs) to the horizon's end."""
    days = segments.days()
    held = [s for s, _d in segments.of_offer(t.offer) if segments.committed_at(t.offer, s)]
    if held:
        return sum(days[s] for s in held)
    # no workload runs there, so the program never cut its segments: pro rata from the day they arrive
    return plan.horizon_days - t.arrives_day if t.arrives_day < plan.horizon_days else 0.0


def in_service(per_year: float, days: float) -> float:
    """A yearly amount for the days in service."""
    return per_year / DAYS_PER_YEAR * days


def bought_per_node(t: OwnTerms, days: float) -> float:
    """The ownership share (depreciation, capital, support) of one bought node over `days` in service."""
    return in_service(t.ownership_per_year, days)


def bought_running_per_node(t: OwnTerms, days: float) -> float:
    """One bought node's idle energy and colocation over `days` in service (the facility's fixed costs)."""
    return (t.idle_energy_per_day() + t.colo_per_day()) * days


def running_per_node_day(t: OwnTerms) -> float:
    """What a node of your own costs a day in service beyond its ownership share: idle energy,
    colocation and support."""
    return t.idle_energy_per_day() + t.colo_per_day() + in_service(t.support_per_year, 1.0)


def owned_running(t: OwnTerms, days: float) -> float:
    """The owned servers' idle energy, colocation and support over `days` they serve."""
    return t.owned_nodes * running_per_node_day(t) * days


def serving_energy(t: OwnTerms, segments: Segments, segment: str, hour: int, days: float | None = None) -> float:
    """A GPU of your own serving at one hour of day, on every day of the segment (beyond its idle draw;
    `days` as in hourly_per_node)."""
    return (segments.days()[segment] if days is None else days) * t.serving_energy(hour)
