"""`planopt compare A B`: two plans or two solved results, side by side (cost, choices, replicas)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from optimizer import formatting, vocab
from optimizer.results.spend import TIER as SPEND_TIER
from optimizer.results.types import PlanResult, WorkloadResult

TIERS = vocab.COST_KEYS


@dataclass(frozen=True)
class Delta:
    a: float
    b: float

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def change_pct(self) -> float | None:
        return None if self.a == 0 else 100.0 * (self.b - self.a) / self.a

    def as_dict(self) -> dict[str, Any]:
        pct = self.change_pct
        return {"a": round(self.a, 6), "b": round(self.b, 6), "change": round(self.change, 6),
                "change_pct": None if pct is None else round(pct, 4)}


@dataclass(frozen=True)
class Side:
    label: str
    """What the user gave (a file path)."""
    kind: str
    """'plan' (solved here) or 'result' (read from JSON)."""
    plan: str
    status: str
    horizon_days: int
    currency: str


@dataclass(frozen=True)
class WorkloadDiff:
    name: str
    status: str
    """'changed' (its choice, replicas, demand, goodput or use of committed capacity), 'cost moved' (config,
    replicas and demand kept: only its share of GPUs it shares with other workloads moved, SHARE_MOVED), 'same',
    'new' (only in B) or 'removed' (only in A)."""
    choice_a: str | None
    choice_b: str | None
    replicas_a: int | None
    replicas_b: int | None
    gpus_a: int | None
    gpus_b: int | None
    cost_a: float | None
    cost_b: float | None
    peak_a: float | None
    peak_b: float | None
    what_changed: list[str] = field(default_factory=list)
    saving: float | None = None
    """All-in (new spend + committed spend it used) A − B when the workload is in both (positive: B is
    cheaper). A move onto capacity already paid for lowers new spend, not all-in spend: it is not a saving."""
    reason: str = ""
    """Why B moved it, when B was solved against a baseline (`solve --baseline`)."""
    committed_a: float | None = None
    committed_b: float | None = None
    """Its share of contracts signed before each plan (the committed GPU-hours it used, at their rate)."""

    @property
    def all_in_a(self) -> float | None:
        return None if self.cost_a is None else self.cost_a + (self.committed_a or 0.0)

    @property
    def all_in_b(self) -> float | None:
        return None if self.cost_b is None else self.cost_b + (self.committed_b or 0.0)


@dataclass(frozen=True)
class PurchaseDiff:
    offer: str
    tier: str
    gpus_a: int
    gpus_b: int
    cost_a: float
    cost_b: float


BRIDGE_PARTS = ("price", "volume", "mix", "new_commitments", "roll_off")
"""The bridge's steps from A's all-in to B's, in order (Bridge)."""


@dataclass(frozen=True)
class Bridge:
    """A's all-in to B's in five steps that add up to the difference exactly (B − A):

    - roll_off: committed spend B − A (contracts signed before the plan that ended, started or overlap fewer
      days): spend neither plan chose;
    - price: what B buys at B's prices less the same purchases at A's prices (each rented purchase and new
      commitment of B repriced by its offer and tier's price in A; one A did not price stays). API prices are
      not repriced: an API price change lands in mix;
    - volume: A's new spend other than new commitments, scaled by how the demand moved: × (V_B / V_A − 1),
      V the output tokens the workloads ask over the horizon (interactive: the hourly demand over the day
      types' days; batch: the tokens served), so a longer horizon is volume too;
    - new_commitments: the new commitments' horizon share in B at A's prices less A's; a new spend commitment
      (savings plan) counts its horizon share (its $/hour × the hours it runs, prices aside) with them, and the
      on-demand use it covers (paid from it) is left out of the on-demand purchases the price step reprices;
    - mix: the rest of the new spend's change, at A's prices: other offers, tiers, configs or API shares.

    Signed spend commitments are committed spend: their change is roll-off, with the signed reservations'.
    Each is B − A in money; positive: B costs more. The new commitments' full terms (reservations' and spend
    commitments', beyond the horizon, not in all-in) are compared beside the bridge (Comparison.full_term)."""

    price: float
    volume: float
    mix: float
    new_commitments: float
    roll_off: float
    volume_a: float
    """V_A: output tokens A's workloads ask over its horizon."""
    volume_b: float

    @property
    def total(self) -> float:
        return self.price + self.volume + self.mix + self.new_commitments + self.roll_off

    def as_dict(self) -> dict[str, Any]:
        d = {k: round(getattr(self, k), 6) for k in BRIDGE_PARTS}
        d["total"] = round(self.total, 6)
        d["volume_tokens_a"], d["volume_tokens_b"] = round(self.volume_a, 3), round(self.volume_b, 3)
        return d


def demanded_tokens(r: PlanResult) -> float:
    """Output tokens the plan's workloads ask over its horizon: an interactive workload's hourly demand over its
    day types' days; a batch workload's tokens served (GPU-hours ÷ GPUs a replica × goodput, and its API share);
    a block of reserved GPUs asks none."""
    total = 0.0
    for w in r.workloads:
        if w.hourly_demand:
            total += sum(r.day_types.get(d, 0.0) * sum(row) * 3600.0 for d, row in w.hourly_demand.items())
        elif w.kind == "batch" and w.gpus_per_replica and w.goodput_output_tokens_per_s:
            gpu = w.gpu_hours / w.gpus_per_replica * w.goodput_output_tokens_per_s * 3600.0
            total += gpu / (1.0 - w.api_share) if w.api_share < 1.0 else 0.0
    return total


def _price_ratio(a: PlanResult, offer: str, tier: str, price_b: float) -> float:
    """A's price for (offer, tier) over B's: what B's spend there is × to be at A's prices (1 when A does not
    price it, or B's price is 0)."""
    pa = next((p.price_per_gpu_hour for p in a.purchases if p.offer == offer and p.tier == tier), None)
    if pa is None:
        pa = ((a.offers.get(offer) or {}).get("prices") or {}).get(tier)
    if pa is None or not price_b:
        return 1.0
    return float(pa) / price_b


def _spend_paid_use(r: PlanResult) -> dict[str, float]:
    """Offer → the discounted spend of new spend commitments its on-demand purchase carries (the covered use,
    paid from the commitment): each commitment's used part (utilization × horizon share) over the offers it
    covers, in proportion to their on-demand purchases."""
    od = {p.offer: p.cost for p in r.purchases if p.tier == "on-demand"}
    out: dict[str, float] = {}
    for n in r.new_spend_commitments:
        base = sum(max(0.0, od.get(o, 0.0)) for o in n.offers)
        if base <= 0:
            continue
        for o in n.offers:
            out[o] = out.get(o, 0.0) + n.utilization * n.horizon_share * max(0.0, od.get(o, 0.0)) / base
    return out


def bridge(a: PlanResult, b: PlanResult) -> Bridge:
    """The all-in bridge from A to B (Bridge); its parts add up to B's all-in − A's by construction."""
    sp_a = sum(n.horizon_share for n in a.new_spend_commitments)
    sp_b = sum(n.horizon_share for n in b.new_spend_commitments)
    hs_a = sum(n.horizon_share for n in a.new_commitments) + sp_a
    hs_b = sum(n.horizon_share for n in b.new_commitments) + sp_b
    hs_b_at_a = sum(n.horizon_share * _price_ratio(a, n.offer, n.tier, n.price_per_gpu_hour)
                    for n in b.new_commitments) + sp_b
    rest_a, rest_b = a.cost_total - hs_a, b.cost_total - hs_b
    reserved = set(vocab.RESERVED_TIERS)
    rented = [p for p in b.purchases if p.tier in vocab.RENTED_TIERS and p.tier not in reserved]
    paid = _spend_paid_use(b) if b.new_spend_commitments else {}
    rest_price = sum((p.cost - (paid.get(p.offer, 0.0) if p.tier == "on-demand" else 0.0))
                     * (1.0 - _price_ratio(a, p.offer, p.tier, p.price_per_gpu_hour)) for p in rented)
    price = (hs_b - hs_b_at_a) + rest_price
    va, vb = demanded_tokens(a), demanded_tokens(b)
    volume = rest_a * (vb / va - 1.0) if va > 0 else 0.0
    mix = (rest_b - rest_price) - rest_a - volume
    return Bridge(price, volume, mix, hs_b_at_a - hs_a, b.cost_committed - a.cost_committed, va, vb)


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    total: Delta
    """New spend (what each plan buys; the result's `cost.total`)."""
    per_day: Delta
    by_tier: dict[str, Delta]
    workloads: list[WorkloadDiff]
    purchases: list[PurchaseDiff]
    notes: list[str] = field(default_factory=list)
    committed: Delta = Delta(0.0, 0.0)
    """Spend on contracts signed before each plan, for the days they overlap its horizon."""
    bridge: Bridge | None = None
    """A's all-in to B's: price, volume, mix, new commitments, roll-off (None: not computed)."""
    full_term: Delta = Delta(0.0, 0.0)
    """The new commitments' full terms (reservations and spend commitments): what each plan signs for, beyond its
    horizon too (not in all-in)."""
    new_commitments_a: list[dict[str, Any]] = field(default_factory=list)
    """A's new commitments: offer, tier, gpus, start, end, price_per_gpu_hour, total_committed each."""
    new_commitments_b: list[dict[str, Any]] = field(default_factory=list)
    new_spend_commitments_a: list[dict[str, Any]] = field(default_factory=list)
    """A's new spend commitments (savings plans): provider, term, discount, usd_per_hour, start, end,
    total_committed each."""
    new_spend_commitments_b: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_in_per_day(self) -> Delta:
        """All-in over each plan's own horizon days: the two horizons may differ (92 and 90 days)."""
        return Delta(self.all_in.a / max(self.a.horizon_days, 1), self.all_in.b / max(self.b.horizon_days, 1))

    @property
    def demand_changes(self) -> list[WorkloadDiff]:
        """Workloads in both whose demand moved (their peak output tokens/s)."""
        return [w for w in self.workloads if "demand" in w.what_changed]

    @property
    def all_in(self) -> Delta:
        """New + committed: what each horizon costs, everything counted."""
        return Delta(self.total.a + self.committed.a, self.total.b + self.committed.b)

    @property
    def changed(self) -> list[str]:
        """Workloads whose own plan changed (not those whose cost moved only with their share of shared GPUs)."""
        return [w.name for w in self.workloads if w.status == "changed"]

    @property
    def choice_changed(self) -> list[str]:
        """Of `changed`, those whose choice changed: config, offer, precision, parallelism or API split."""
        return [w.name for w in self.workloads if w.status == "changed" and CHOICE_MOVES & set(w.what_changed)]

    @property
    def cost_moved(self) -> list[str]:
        """Config, replicas and demand kept; cost moved only with its share of GPUs shared with other workloads."""
        return [w.name for w in self.workloads if w.status == "cost moved"]

    @property
    def added(self) -> list[str]:
        return [w.name for w in self.workloads if w.status == "new"]

    @property
    def removed(self) -> list[str]:
        return [w.name for w in self.workloads if w.status == "removed"]

    def to_dict(self) -> dict[str, Any]:
        def wl(w: WorkloadDiff) -> dict[str, Any]:
            d = asdict(w)
            d["all_in_a"], d["all_in_b"] = w.all_in_a, w.all_in_b
            for k in ("cost_a", "cost_b", "peak_a", "peak_b", "saving", "committed_a", "committed_b", "all_in_a",
                      "all_in_b"):
                d[k] = None if d[k] is None else round(d[k], 6)
            return d

        return {
            "a": asdict(self.a), "b": asdict(self.b), "currency": self.b.currency,
            "cost": {"total": self.total.as_dict(), "per_day": self.per_day.as_dict(),
                     "by_tier": {k: v.as_dict() for k, v in self.by_tier.items()},
                     "all_in": self.all_in.as_dict(), "new": self.total.as_dict(),
                     "committed": self.committed.as_dict(), "all_in_per_day": self.all_in_per_day.as_dict(),
                     "new_commitments_full_term": self.full_term.as_dict()},
            "bridge": None if self.bridge is None else self.bridge.as_dict(),
            "demand_changes": [{"workload": w.name, "peak_a": None if w.peak_a is None else round(w.peak_a, 6),
                                "peak_b": None if w.peak_b is None else round(w.peak_b, 6)}
                               for w in self.demand_changes],
            "new_commitments": {"a": self.new_commitments_a, "b": self.new_commitments_b},
            "new_spend_commitments": {"a": self.new_spend_commitments_a, "b": self.new_spend_commitments_b},
            "workloads": [wl(w) for w in self.workloads],
            "added": self.added, "removed": self.removed,
            "changed": self.changed, "choice_changed": self.choice_changed, "cost_moved": self.cost_moved,
            "purchases": [{**asdict(p), "cost_a": round(p.cost_a, 6), "cost_b": round(p.cost_b, 6)}
                          for p in self.purchases],
            "notes": self.notes,
        }


def compare(a: PlanResult, b: PlanResult, label_a: str = "A", label_b: str = "B",
            kind_a: str = "result", kind_b: str = "result") -> Comparison:
    notes = []
    if a.currency != b.currency:
        notes.append(f"A is in {a.currency}, B in {b.currency}: cost differences mix currencies")
    if a.horizon_days != b.horizon_days:
        notes.append(f"horizons differ (A {formatting.plural(a.horizon_days, 'day')}, B {b.horizon_days}); compare per day "
                     "too")
    for side, r in (("A", a), ("B", b)):
        if r.status not in ("optimal",):
            notes.append(f"{side} is {r.status}" + (f" (gap {r.solver.gap:.2%})" if r.solver.gap else ""))
    tiers = TIERS + ((SPEND_TIER,) if SPEND_TIER in a.cost_by_tier or SPEND_TIER in b.cost_by_tier else ())
    by_tier = {t: Delta(a.cost_by_tier.get(t, 0.0), b.cost_by_tier.get(t, 0.0)) for t in tiers}
    wa = {w.name: w for w in a.workloads}
    wb = {w.name: w for w in b.workloads}
    if wa and wb and not set(wa) & set(wb):  # each side's own workloads are listed as removed / new
        notes.append(f"A (plan '{a.plan}') and B (plan '{b.plan}') have no workload in common: a side-by-side of "
                     "different plans, not a change to one")
    reasons = {c.workload: c.reason for c in b.baseline.changes} if b.baseline is not None else {}
    names = [w.name for w in a.workloads] + [w.name for w in b.workloads if w.name not in wa]
    rows = []
    for n in names:
        x, y = wa.get(n), wb.get(n)
        if x is not None and y is not None:
            what = []
            ca, cb = _choice(x), _choice(y)
            if _config(x) != _config(y):
                what.append("choice")
            elif formatting.percent(x.api_share) != formatting.percent(y.api_share):
                what.append(API_SPLIT)
            elif _shares(x) != _shares(y):
                what.append(SIZE_SPLIT)
            if x.replicas.total != y.replicas.total:
                what.append("replicas")
            if round(x.peak_output_tokens_per_s, 6) != round(y.peak_output_tokens_per_s, 6):
                what.append("demand")
            if round(x.goodput_output_tokens_per_s, 3) != round(y.goodput_output_tokens_per_s, 3) and "choice" not in what:
                what.append("goodput")
            onto = _committed_share(y) - _committed_share(x)
            if onto > 0.05:
                what.append("onto committed capacity")
            elif onto < -0.05:
                what.append("off committed capacity")
            if round(x.cost + x.committed_cost, 2) != round(y.cost + y.committed_cost, 2) and not what:
                # the same config, replicas and demand: its share of the GPUs it shares with other workloads moved
                what.append(SHARE_MOVED)
            status = "cost moved" if what == [SHARE_MOVED] else "changed" if what else "same"
            rows.append(WorkloadDiff(n, status, ca, cb, x.replicas.total, y.replicas.total,
                                     x.gpus_at_peak, y.gpus_at_peak, x.cost, y.cost,
                                     _peak(x), _peak(y), what, (x.cost + x.committed_cost) - (y.cost + y.committed_cost),
                                     reasons.get(n, ""), x.committed_cost, y.committed_cost))
        elif x is not None:
            rows.append(WorkloadDiff(n, "removed", _choice(x), None, x.replicas.total, None, x.gpus_at_peak, None,
                                     x.cost, None, _peak(x), None, committed_a=x.committed_cost))
        else:
            assert y is not None
            rows.append(WorkloadDiff(n, "new", None, _choice(y), None, y.replicas.total, None, y.gpus_at_peak,
                                     None, y.cost, None, _peak(y), committed_b=y.committed_cost))
    pa = {(p.offer, p.tier): p for p in a.purchases}
    pb = {(p.offer, p.tier): p for p in b.purchases}
    purchases = []
    for key in sorted(set(pa) | set(pb)):
        x, y = pa.get(key), pb.get(key)
        purchases.append(PurchaseDiff(key[0], key[1], x.gpus if x else 0, y.gpus if y else 0,
                                      x.cost if x else 0.0, y.cost if y else 0.0))
    return Comparison(
        Side(label_a, kind_a, a.plan, a.status, a.horizon_days, a.currency),
        Side(label_b, kind_b, b.plan, b.status, b.horizon_days, b.currency),
        Delta(a.cost_total, b.cost_total), Delta(a.cost_per_day, b.cost_per_day), by_tier, rows, purchases, notes,
        Delta(a.cost_committed, b.cost_committed), bridge(a, b),
        Delta(_full_term(a), _full_term(b)), _signed(a), _signed(b), _spend_signed(a), _spend_signed(b))


def _full_term(r: PlanResult) -> float:
    """What the plan's new commitments sign for over their whole terms: reservations and spend commitments."""
    return sum(n.total_committed for n in r.new_commitments) + sum(n.total_committed for n in r.new_spend_commitments)


def _spend_signed(r: PlanResult) -> list[dict[str, Any]]:
    """A result's new spend commitments, as the comparison lists them."""
    return [{"provider": n.provider, "term": n.term, "discount": round(n.discount, 6),
             "usd_per_hour": round(n.usd_per_hour, 6), "start": n.start, "end": n.end,
             "total_committed": round(n.total_committed, 2)} for n in r.new_spend_commitments]


def _signed(r: PlanResult) -> list[dict[str, Any]]:
    """A result's new commitments, as the comparison lists them."""
    return [{"offer": n.offer, "tier": n.tier, "gpus": int(n.gpus), "start": n.start, "end": n.end,
             "price_per_gpu_hour": round(n.price_per_gpu_hour, 6), "total_committed": round(n.total_committed, 2)}
            for n in r.new_commitments]


SHARE_MOVED = "cost (its share of shared GPUs)"
"""Why a workload whose config, replicas and demand are unchanged costs more or less: the pool's GPUs it
shares hour by hour were split otherwise (another workload moved), not anything it does: listed apart
('cost moved'), not counted among the workloads that changed."""

API_SPLIT = "API share"
"""The same GPU config with another share of its tokens sent to the API."""

SIZE_SPLIT = "size-class shares"
"""A workload split by request size (split: by_size) on the same configs, each serving other shares of the size
classes."""

CHOICE_MOVES = frozenset({"choice", API_SPLIT, SIZE_SPLIT})
"""What a change of choice is (config, offer, precision, parallelism, API split, a split workload's configs or
their shares of the size classes), as `what_changed` says it."""


def _config(w: WorkloadResult) -> tuple[Any, ...]:
    """What a workload's chosen config is: offer, precision and parallelism (tp or MIG slice, pp, ep, layout); a
    workload split among several configs, the set of them (a config added or left is a change of choice)."""
    if w.split_configs:
        return tuple(sorted((x.offer or "", x.precision or "", x.tp) for x in w.split_configs.values()))
    if w.split:  # a result that lists the configs by label only
        return tuple(sorted(w.split))
    return (w.offer, w.precision, w.tp, w.mig, w.family, w.layout, w.pp, w.ep)


def _shares(w: WorkloadResult) -> dict[str, tuple[str, ...]]:
    """A split workload's configs' shares of each size class, as the reports print them (whole percent)."""
    return {label: tuple(formatting.percent(z) for z in shares) for label, shares in w.split.items()}


def _committed_share(w: WorkloadResult) -> float:
    """Share of the GPU-hours it used that ran on contracts signed before the plan."""
    gh = w.gpu_hours_by_tier
    used = sum(gh.values())
    return gh.get("committed", 0.0) / used if used else 0.0


def _peak(w: WorkloadResult) -> float | None:
    return w.peak_output_tokens_per_s if w.kind == "interactive" else None


def _choice(w: WorkloadResult) -> str:
    if w.split:  # every config, with its share of each size class
        return " + ".join(f"{label} ({'/'.join(f'{z:.0%}' for z in shares)})" for label, shares in w.split.items())
    return vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, api_share=w.api_share, layout=w.layout)
