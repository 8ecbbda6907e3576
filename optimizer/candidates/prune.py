"""Exact pruning before the program is built: dominated configs and dominated offers."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer import units
from optimizer.candidates import ownership
from optimizer.candidates.configs import offer_domain, offer_scale_out
from optimizer.candidates.types import Candidate, DayHour
from optimizer.inputs import prices
from optimizer.inputs.catalog import Catalog
from optimizer.inputs.scenarios import goodput_varies
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload


def _usable(plan: Plan, catalog: Catalog, ids: list[str]) -> dict[str, set[str]]:
    return {o: {w.name for w in plan.workloads if filter_reason(plan, catalog, w, catalog.offers[o]) is None}
            for o in ids}


def _sells_no_dearer(plan: Plan, a: Offer, b: Offer, usable: dict[str, set[str]]) -> bool:
    """a sells everything b sells no dearer, without a cap, interrupted no more often, in units
    that divide b's, in machines at least as large, to every workload b may serve."""
    if a.provider == "own" or b.provider == "own" or a.buy is not None or b.buy is not None:
        return False  # servers of your own are priced by the program (ownership, energy, facility limits)
    sold = [t for t in plan.policy.tiers if b.price(t) is not None]
    if a.accelerator != b.accelerator or b.gpus_per_node % a.gpus_per_node or a.max_tp < b.max_tp:
        return False
    if a.spot_interruption > b.spot_interruption and "spot" in sold:
        return False
    if not all(a.price(t) is not None and a.price(t) <= b.price(t) and t not in a.available_gpus  # type: ignore[operator]
               for t in sold):
        return False
    return usable[b.id] <= usable[a.id]


def _identical(plan: Plan, a: Offer, b: Offer, usable: dict[str, set[str]]) -> bool:
    return (a.gpus_per_node == b.gpus_per_node and a.max_tp == b.max_tp
            and all(a.price(t) == b.price(t) for t in plan.policy.tiers)
            and a.spot_interruption == b.spot_interruption and usable[a.id] == usable[b.id]
            and not b.available_gpus)


def dominated_offers(plan: Plan, catalog: Catalog) -> dict[str, str]:
    """Offers that another offer beats for every workload: dropped before enumeration (exact).

    o1 dominates o2 when they sell the same accelerator, o1's node size divides o2's, o1 sells
    machines at least as large, with an NVLink domain and an inter-node network at least as large
    (so every layout o2 hosts, o1 hosts at least as fast), every tier o2 sells (that the policy
    allows) o1 sells no dearer and without a cap, o1 is interrupted no more often, and every
    workload that may use o2 may use o1. Then moving all of o2's GPUs to o1 never costs more: nodes
    of o2 split into whole nodes of o1, and adding demand to o1's existing nodes never needs more
    nodes than keeping it apart. Offers named by a commitment are never dropped.
    """
    committed = {c.offer for c in plan.commitments}
    ids = sorted(o for o in catalog.offers if catalog.offers[o].accelerator in catalog.accelerators)
    usable = _usable(plan, catalog, ids)
    out: dict[str, str] = {}
    for o2 in ids:
        b = catalog.offers[o2]
        if o2 in committed or not usable[o2]:
            continue
        for o1 in ids:
            a = catalog.offers[o1]
            if o1 == o2 or o1 in out or not _sells_no_dearer(plan, a, b, usable):
                continue
            acc = catalog.accelerators[a.accelerator]
            if (offer_domain(acc, a) < offer_domain(acc, b)
                    or offer_scale_out(acc, a, catalog.estimator) < offer_scale_out(acc, b, catalog.estimator)):
                continue
            # Identical offers dominate each other: keep the first id.
            if _identical(plan, a, b, usable) and offer_domain(acc, a) == offer_domain(acc, b) and o1 > o2 \
                    and offer_scale_out(acc, a, catalog.estimator) == offer_scale_out(acc, b, catalog.estimator):
                continue
            out[o2] = o1
            break
    return out


def dominated_offers_by_configs(plan: Plan, catalog: Catalog, by_workload: dict[str, list[Candidate]],
                                demand: dict[str, dict[DayHour, float]]) -> dict[str, str]:
    """Offers whose every config another offer's config beats: dropped after enumeration (exact).

    The same conditions as dominated_offers, except that instead of a network at least as large,
    every config any workload has on o2 is beaten by a config of the same workload on o1 (needs no
    more GPUs at any hour, no more API cost). A GB200 rack sold whole loses to the same GPUs sold
    by the tray when no workload needs more than a tray's NVLink domain.
    """
    committed = {c.offer for c in plan.commitments}
    on: dict[str, dict[str, list[Candidate]]] = {}
    for w, cs in by_workload.items():
        for c in cs:
            if c.offer:
                on.setdefault(c.offer, {}).setdefault(w, []).append(c)
    ids = sorted(on)
    usable = _usable(plan, catalog, ids)
    workloads = {w.name: w for w in plan.workloads}
    out: dict[str, str] = {}
    for o2 in ids:
        if o2 in committed:
            continue
        b = catalog.offers[o2]
        for o1 in ids:
            a = catalog.offers[o1]
            if o1 == o2 or o1 in out or not _sells_no_dearer(plan, a, b, usable):
                continue
            if _identical(plan, a, b, usable) and o1 > o2:
                continue
            if all(_beaten(c2, on[o1].get(w, []), workloads[w], plan, demand.get(w))
                   for w, cs in on[o2].items() for c2 in cs):
                out[o2] = o1
                break
    return out


def _beaten(c2: Candidate, others: list[Candidate], w: Workload, plan: Plan, demand: dict[DayHour, float] | None) -> bool:
    mode = "batch" if w.kind == "batch" else "fixed"
    ctx = _DominanceContext(mode, w, plan, max(demand.values()) if demand else 0.0, goodput_varies(plan))
    return any(ctx.dominates(c1, c2) for c1 in others)



def pareto_configs(configs: list[Candidate]) -> tuple[list[Candidate], list[tuple[Candidate, Candidate]]]:
    """Configs of one offer that no other beats on both GPUs per replica and goodput."""
    kept: list[Candidate] = []
    dominated: list[tuple[Candidate, Candidate]] = []
    for c in sorted(configs, key=lambda c: (c.gpu_fraction, -c.goodput, c.key)):
        by = next((k for k in kept if k.gpu_fraction <= c.gpu_fraction and k.goodput >= c.goodput), None)
        if by is None:
            kept.append(c)
        else:
            dominated.append((c, by))
    return kept, dominated


def prune_dominated(cands: list[Candidate], w: Workload | None = None, plan: Plan | None = None,
                    demand: dict[DayHour, float] | None = None
                    ) -> tuple[list[Candidate], list[tuple[Candidate, Candidate]]]:
    """Drop configs that another config on the same offer beats or equals at every hour.

    Exact: cost depends on a config only through the GPUs it takes from its offer, hour by hour,
    so a config that never needs more GPUs than another (for any amount of work it may be asked
    to do) can replace it in any solution without raising the cost.
      - fixed hourly needs (interactive, each overflow ceiling, reservations): compare the GPU
        vectors and the API cost;
      - batch (replica-hours are continuous): fewer or equal GPU-hours per output token.
    A config sharing GPUs (policy.share_pools) is kept: what it costs depends on the group it joins, not on
    its own GPUs.
    """
    mode = "batch" if w is not None and w.kind == "batch" else "fixed"
    ctx = _DominanceContext(mode, w, plan, max(demand.values()) if demand else 0.0, goodput_varies(plan))
    by_offer: dict[str, list[Candidate]] = {}
    shared = [c for c in cands if c.share]
    for c in cands:
        if c.share:
            continue
        by_offer.setdefault(c.offer or "", []).append(c)
    kept: list[Candidate] = []
    dominated: list[tuple[Candidate, Candidate]] = []
    for offer in sorted(by_offer):
        group = sorted(by_offer[offer], key=_preference)
        survivors: list[Candidate] = []
        for c in group:
            by = next((s for s in survivors if ctx.dominates(s, c)), None)
            if by is None:
                survivors.append(c)
            else:
                dominated.append((c, by))
        kept.extend(survivors)
    kept += shared
    kept.sort(key=lambda c: c.key)
    return kept, dominated


def _preference(c: Candidate) -> tuple:
    total = sum(c.gpus.values()) + c.api_cost * 1e-6
    per_gpu = c.goodput / c.gpu_fraction if c.gpu_fraction else 0.0
    return (total, -per_gpu, c.gpu_fraction, -c.goodput, c.key)


@dataclass(frozen=True)
class _DominanceContext:
    mode: str
    w: Workload | None
    plan: Plan | None
    max_demand: float
    goodput_varies: bool = False

    def dominates(self, a: Candidate, b: Candidate) -> bool:
        if self.mode == "fixed":
            return a.api_cost <= b.api_cost and all(a.gpus[dh] <= b.gpus[dh] for dh in b.gpus)
        return self._batch(a, b)

    def _batch(self, a: Candidate, b: Candidate) -> bool:
        # Batch replica-hours are continuous (model.define_batch_volume): GPU-hours per token decide —
        # on every day type, so an estimated and a measured config never compare when scenarios scale one.
        if self.goodput_varies and a.goodput_source != b.goodput_source:
            return False
        return a.gpu_fraction / a.goodput <= b.gpu_fraction / b.goodput


def filter_reason(plan: Plan, catalog: Catalog, w: Workload, offer: Offer) -> str | None:
    """Why the plan's filters keep workload w off this offer (None: w may use it)."""
    acc = catalog.accelerators.get(offer.accelerator)
    if acc is None:
        return "unknown accelerator"
    allowed_accs = None
    if w.reserve_gpus is not None and w.reserve_gpus.accelerators:
        allowed_accs = w.reserve_gpus.accelerators
    elif w.accelerators:
        allowed_accs = w.accelerators
    if allowed_accs is not None and offer.accelerator not in allowed_accs:
        return "accelerator"
    if w.regions and offer.region not in w.regions and offer.region != "any":
        return "region"
    if w.offers and offer.id not in w.offers:
        return "offer"
    if plan.policy.providers is not None and offer.provider not in plan.policy.providers and offer.provider != "own":
        return "provider"
    return None


def standalone_cost(plan: Plan, offers: dict[str, Offer], c: Candidate) -> float:
    """GPU-hours of a config over the horizon at its offer's cheapest hourly tier: a ranking key for
    alternatives, not a price of the plan (that needs the program: shared nodes, caps, reserved levels)."""
    if c.offer is None:
        return float("inf")
    offer = offers[c.offer]
    tier = prices.cheapest_hourly_tier(plan, offer, c.pool)
    price = prices.gpu_hour(offer, tier) if tier is not None else 0.0
    own = ownership.terms(plan, {c.offer: offer}).get(c.offer)
    if own is not None:  # owning: the serving energy, plus the fixed cost of a GPU bought for it
        price = own.mean_serving_energy() + (own.fixed_per_gpu_hour() if own.kind == "buy" else 0.0)
    days = plan.day_type_days()
    if c.gpus:
        gpu_hours = sum(days[d] * g for (d, _h), g in c.gpus.items())
    else:  # batch: GPU-hours to produce the day's volume
        w = next(w for w in plan.workloads if w.name == c.workload)
        assert w.batch is not None
        gpu_hours = sum(days.values()) * w.batch.output_tokens_per_day / (units.SECONDS_PER_HOUR * c.goodput) \
            * c.gpu_fraction
    return gpu_hours * (price or 0.0)


def ranked_alternatives(plan: Plan, offers: dict[str, Offer], by_workload: dict[str, list[Candidate]],
                        chosen: dict[str, str]) -> dict[str, list[Candidate]]:
    """Each workload's other configs (not the API), cheapest on their own first — the cheapest of each
    offer before any offer's second, so the next options a buyer sees are different places to buy. A split
    workload has none: its configs serve together, none is an alternative held alone."""
    out = {}
    split = plan.split_workloads()
    for w in plan.workloads:
        if w.name in split:
            out[w.name] = []
            continue
        others = [c for c in by_workload[w.name] if c.key != chosen[w.name] and c.kind != "api"]
        others.sort(key=lambda c: (standalone_cost(plan, offers, c), c.key))
        seen: set[str | None] = set()
        first = [c for c in others if c.offer not in seen and not seen.add(c.offer)]  # type: ignore[func-returns-value]
        out[w.name] = first + [c for c in others if c not in first]
    return out
