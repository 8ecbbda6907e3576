"""What one unit of a purchase costs, from the plan and the catalog alone: the single statement of each
unit price that configs (candidates.overflow, candidates.prune), the program's objective (optimize.costs),
the extracted result and the reports share.

    GPU-hour of a tier on an offer       price_tier                               (the catalog's, 0 if unsold)
    ... on a day type of a scenario      price_tier · the scenario's tier and provider multipliers
    GPUs held for days                   gpus · price · 24 · days                   (reserved: every hour)
    API output token                     (usd_per_m_output + usd_per_m_input · input/output tokens) / 10⁶

What needs the program's calendar (segments, delivery, days in service) is priced in optimize.costs on
top of these.
"""

from __future__ import annotations

from optimizer import vocab
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.units import HOURS_PER_DAY

TOKENS_PER_MILLION = 1e6


def gpu_hour(offer: Offer, tier: str) -> float:
    """Price per GPU-hour of a tier on an offer (0 when the offer does not sell it)."""
    return offer.price(tier) or 0.0


def gpu_hour_on(plan: Plan, offer: Offer, tier: str, day_type: str) -> float:
    """Price per GPU-hour of a tier on one of the program's day types: a scenario's multipliers applied."""
    price = gpu_hour(offer, tier)
    sd = scenario_days(plan)
    return price if sd is None else price * sd.price(day_type, tier, offer.provider)


def gpu_hours_held(gpus: float, days: float) -> float:
    """GPU-hours of GPUs held every hour of `days` days."""
    return gpus * HOURS_PER_DAY * days


def held(gpus: float, price_per_gpu_hour: float, days: float) -> float:
    """GPUs paid for every hour of `days` days (a reservation's share of a horizon, or its whole term)."""
    return gpus * price_per_gpu_hour * HOURS_PER_DAY * days


def reserved_node(offer: Offer, tier: str, days: float) -> float:
    """A reserved node of the offer held for `days` days."""
    return held(offer.gpus_per_node, gpu_hour(offer, tier), days)


def cheapest_hourly_tier(plan: Plan, offer: Offer, pool: str) -> str | None:
    """The tier a config alone at the offer is priced at (a ranking key, not the plan's price): the first of
    vocab.CHEAPEST_HOURLY_FIRST the policy allows and the offer sells, spot only in a spot pool."""
    for t in vocab.CHEAPEST_HOURLY_FIRST:
        if t in plan.policy.tiers and offer.price(t) is not None and (t != "spot" or pool in plan.policy.spot_pools):
            return t
    return None


def api_output_token(w: Workload) -> float:
    """USD per output token sent to the API, the input tokens of the same requests included."""
    assert w.api is not None and w.tokens is not None
    ratio = w.tokens.input / w.tokens.output
    return (w.api.usd_per_m_output + w.api.usd_per_m_input * ratio) / TOKENS_PER_MILLION


def per_gpu_hour(per_node_day: float, gpus_per_node: int) -> float:
    """An amount a node costs a day, per GPU-hour of the node."""
    return per_node_day / (HOURS_PER_DAY * gpus_per_node)
