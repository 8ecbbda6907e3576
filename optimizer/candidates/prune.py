"""Exact pruning before the program is built: dominated configs and dominated offers."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.candidates.types import Candidate, DayHour
from optimizer.inputs.catalog import Catalog
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload


def dominated_offers(plan: Plan, catalog: Catalog) -> dict[str, str]:
    """Offers that another offer beats for every workload: dropped before enumeration (exact).

    o1 dominates o2 when they sell the same accelerator, o1's node size divides o2's, o1 sells
    machines at least as large, every tier o2 sells (that the policy allows) o1 sells no dearer
    and without a cap, o1 is interrupted no more often, and every workload that may use o2 may
    use o1. Then moving all of o2's GPUs to o1 never costs more: nodes of o2 split into whole
    nodes of o1, and adding demand to o1's existing nodes never needs more nodes than keeping
    it apart. Offers named by a commitment are never dropped.
    """
    tiers = plan.policy.tiers
    committed = {c.offer for c in plan.commitments}
    ids = sorted(o for o in catalog.offers if catalog.offers[o].accelerator in catalog.accelerators)
    usable = {o: {w.name for w in plan.workloads if filter_reason(plan, catalog, w, catalog.offers[o]) is None}
              for o in ids}
    out: dict[str, str] = {}
    for o2 in ids:
        b = catalog.offers[o2]
        if o2 in committed or not usable[o2]:
            continue
        sold = [t for t in tiers if b.price(t) is not None]
        for o1 in ids:
            a = catalog.offers[o1]
            if o1 == o2 or o1 in out or a.accelerator != b.accelerator:
                continue
            if b.gpus_per_node % a.gpus_per_node or a.max_tp < b.max_tp:
                continue
            if a.spot_interruption > b.spot_interruption and "spot" in sold:
                continue
            if not all(a.price(t) is not None and a.price(t) <= b.price(t) and t not in a.available_gpus  # type: ignore[operator]
                       for t in sold):
                continue
            if not usable[o2] <= usable[o1]:
                continue
            # Identical offers dominate each other: keep the first id.
            mutual = (a.gpus_per_node == b.gpus_per_node and a.max_tp == b.max_tp
                      and all(a.price(t) == b.price(t) for t in tiers)
                      and a.spot_interruption == b.spot_interruption and usable[o1] == usable[o2]
                      and not b.available_gpus)
            if mutual and o1 > o2:
                continue
            out[o2] = o1
            break
    return out


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
    """
    mode = "batch" if w is not None and w.kind == "batch" else "fixed"
    ctx = _DominanceContext(mode, w, plan, max(demand.values()) if demand else 0.0)
    by_offer: dict[str, list[Candidate]] = {}
    for c in cands:
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

    def dominates(self, a: Candidate, b: Candidate) -> bool:
        if self.mode == "fixed":
            return a.api_cost <= b.api_cost and all(a.gpus[dh] <= b.gpus[dh] for dh in b.gpus)
        return self._batch(a, b)

    def _batch(self, a: Candidate, b: Candidate) -> bool:
        # Batch replica-hours are continuous (model.define_batch_volume): GPU-hours per token decide.
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
    if plan.policy.providers is not None and offer.provider not in plan.policy.providers:
        return "provider"
    return None
