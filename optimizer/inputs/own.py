"""Hardware of your own: buy offers completed from the systems catalog, and the servers the plan already
owns turned into offers the candidates can run on. No solving, no I/O beyond the plan's errors."""

from __future__ import annotations

from typing import Callable

from optimizer.errors import unknown_id_fix
from optimizer.inputs.catalog import Catalog, Origin
from optimizer.inputs.schema.catalog import BuyTerms, Offer
from optimizer.inputs.schema.plan import RACK_SCALE_GPUS, Owned, Plan, per_rack

IDLE_SHARE = 0.3
"""Default idle draw of a GPU server as a share of its draw at load (GPUs idle near 15–25% of their
TDP; CPUs, memory, NICs and fans do not idle down as far)."""
BUY_DEFAULTS = {"lead_time_days": 0, "life_years": 5.0, "residual_fraction": 0.0, "support_per_year": 0.0}
"""What a buy offer assumes for keys neither it nor its system gives."""

Err = Callable[[tuple, str, "str | None"], None]


def idle_kw(load_kw: float, idle: float | None) -> float:
    return load_kw * IDLE_SHARE if idle is None else idle


def resolve(plan: Plan, catalog: Catalog, err: Err, line_of: Callable[[tuple], int | None], file: str) -> None:
    """Complete every buy offer from its system, add an offer per group of owned servers, check both."""
    systems = getattr(catalog, "systems", {})
    for oid in sorted(catalog.offers):
        offer = catalog.offers[oid]
        if offer.buy is None:
            continue
        loc = _offer_loc(plan, oid)
        terms = offer.buy.model_dump(exclude_none=True)
        if offer.buy.system is not None:
            sys = systems.get(offer.buy.system)
            if sys is None:
                err(loc + ("buy", "system"), f"unknown system '{offer.buy.system}'",
                    f"{unknown_id_fix('systems', offer.buy.system, list(systems))} (or give price_per_node and "
                    "node_power_kw instead of a system)")
                continue
            for key in ("price_per_node", "lead_time_days", "life_years", "residual_fraction", "support_per_year",
                        "node_power_kw", "idle_power_kw", "nodes_per_rack"):
                value = getattr(sys, key, None)
                if key == "price_per_node" and value is not None and not isinstance(value, (int, float)):
                    value = value.price
                if key not in terms and value is not None:
                    terms[key] = value
            if getattr(sys, "gpus_per_node", offer.gpus_per_node) != offer.gpus_per_node:
                err(loc + ("gpus_per_node",), f"offer '{oid}' has {offer.gpus_per_node} GPUs per node, system "
                    f"'{sys.id}' {sys.gpus_per_node}", f"set gpus_per_node: {sys.gpus_per_node}")
            if getattr(sys, "accelerator", offer.accelerator) != offer.accelerator:
                err(loc + ("accelerator",), f"offer '{oid}' sells {offer.accelerator}, system '{sys.id}' is "
                    f"{sys.accelerator}", f"set accelerator: {sys.accelerator}")
        missing = [k for k in ("price_per_node", "node_power_kw") if k not in terms]
        if missing:
            fits = sorted(s.id for s in systems.values() if s.accelerator == offer.accelerator
                          and s.gpus_per_node == offer.gpus_per_node)
            err(loc + ("buy",), f"buy offer '{oid}' has no {' and no '.join(missing)}",
                "give " + " and ".join(f"{k}: …" for k in missing) + ", or system: "
                + (" or ".join(fits) if fits else "<id> from catalogs/systems.yaml"))
            continue
        for k, v in BUY_DEFAULTS.items():
            terms.setdefault(k, v)
        terms.setdefault("idle_power_kw", idle_kw(terms["node_power_kw"], None))
        terms["idle_power_kw"] = min(terms["idle_power_kw"], terms["node_power_kw"])
        terms.setdefault("nodes_per_rack", per_rack(offer.gpus_per_node, None))
        catalog.offers[oid] = offer.model_copy(update={"buy": BuyTerms(**terms)})

    groups: dict[str, list[tuple[int, Owned]]] = {}
    for i, o in enumerate(plan.owned):
        groups.setdefault(o.offer_id, []).append((i, o))
        if o.accelerator not in catalog.accelerators:
            err(("owned", i, "accelerator"), f"unknown accelerator '{o.accelerator}'",
                unknown_id_fix("accelerators", o.accelerator, list(catalog.accelerators)))
    for oid, entries in sorted(groups.items()):
        i0, first = entries[0]
        if oid in catalog.offers:
            err(("owned", i0, "offer"), f"owned servers would appear as offer '{oid}', which the catalog already has",
                "give these servers an offer id of their own: offer: owned-…")
            continue
        for i, o in entries[1:]:
            differ = [f"{k} {getattr(o, k)} vs {getattr(first, k)}" for k in ("accelerator", "gpus_per_node",
                      "node_power_kw") if getattr(o, k) != getattr(first, k)]
            if differ:
                err(("owned", i), f"owned[{i}] and owned[{i0}] both appear as offer '{oid}' but differ: "
                    f"{', '.join(differ)}", "give one of them an offer id of its own: offer: owned-…")
        if first.accelerator not in catalog.accelerators:
            continue
        offer = Offer.model_construct(
            id=oid, accelerator=first.accelerator, provider="own", region="any", gpus_per_node=first.gpus_per_node,
            unit="rack" if first.gpus_per_node >= RACK_SCALE_GPUS else "node", scale_up_gpus=first.scale_up_gpus,
            scale_out_gb_s=first.scale_out_gb_s, max_gpus_per_instance=None, price_per_gpu_hour={},
            available_gpus={}, spot_interruption=0.0, buy=None, source="the plan's owned servers", as_of=None,
            notes=None)
        catalog.add("offers", offer, Origin(file, line_of(("owned", i0))))

    if not plan.facility.liquid_cooling:
        for i, o in enumerate(plan.owned):
            acc = catalog.accelerators.get(o.accelerator)
            if acc is not None and acc.needs_liquid_cooling:
                err(("owned", i, "accelerator"), f"{o.accelerator} needs liquid-cooled racks, and facility.liquid_cooling "
                    "is false", "set facility: {liquid_cooling: true}: these servers run in your racks, so they "
                    "have it (and liquid-cooled systems you could buy become candidates)")
    uses = bool(plan.owned) or any(o.buy is not None for o in catalog.offers.values())
    if uses and plan.facility.usd_per_kwh is None:
        err(("facility",), "the plan runs servers of its own but gives no energy price",
            "add facility: {usd_per_kwh: 0.08} (USD per kWh; or 24 prices, one per hour)")
    if plan.start_date is None:
        for i, o in enumerate(plan.owned):
            if o.since is not None:
                err(("owned", i, "since"), "owned servers have a date they entered service, and the plan has no "
                    "start_date to place it on the horizon", "add start_date: YYYY-MM-DD (the horizon's first day), "
                    "or remove since (servers then serve the whole horizon)")
    late = sorted(o.id for o in catalog.offers.values() if o.buy is not None and (o.buy.lead_time_days or 0) > 0)
    if late and plan.start_date is None:
        err(("start_date",), f"bought servers arrive after a lead time ({', '.join(late)}), and the plan has no "
            "start_date to date the delivery from", "add start_date: YYYY-MM-DD (the horizon's first day: the order date)")


def owned_offers(plan: Plan) -> dict[str, list[Owned]]:
    """Offer id → the owned servers it stands for."""
    out: dict[str, list[Owned]] = {}
    for o in plan.owned:
        out.setdefault(o.offer_id, []).append(o)
    return out


def _offer_loc(plan: Plan, oid: str) -> tuple:
    for i, o in enumerate(plan.offers):
        if o.id == oid:
            return ("offers", i)
    return ("offers",)
