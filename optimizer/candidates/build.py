"""Enumerate every workload × offer × precision × TP [× MIG] config; drop what cannot work, say why."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from optimizer.physics import sizing
from optimizer.inputs.catalog import Catalog
from optimizer.errors import PlanError, Problem
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.catalog import Accelerator, MigProfile, Offer
from optimizer.inputs.schema.plan import Plan, Workload

DayHour = tuple[str, int]
GoodputSource = Literal["measured", "estimated", "api"]


@dataclass(frozen=True)
class Candidate:
    """One way to serve one workload, with everything the integer program needs as constants."""

    key: str
    workload: str
    pool: str
    kind: Literal["interactive", "batch", "reserve", "api"]
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int
    mig: str | None
    gpu_fraction: float
    """GPUs per replica: the TP degree, or 1/instances_per_gpu on a MIG slice."""
    goodput: float
    goodput_source: GoodputSource
    bound: str | None
    weights_gb: float
    kv_gb_per_seq: float
    kv_concurrency: int
    needed_concurrency: int
    total_gb: float
    reserve_gb: float
    free_gb: float
    batch: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    api_output_tokens_per_day: dict[str, float] = field(default_factory=dict, compare=False)
    """Output tokens a day (per day type) the gateway sends to the API above this config's ceiling."""
    api_cost: float = 0.0
    """Horizon cost of those API tokens (input tokens of the same requests included)."""
    ceiling_replicas: int | None = None
    """With overflow: the base replicas the fleet is sized for; demand above spills to the API."""
    gpus: dict[DayHour, int] = field(default_factory=dict, compare=False)
    """GPUs needed at each (day type, hour) with spares and rollout (interactive, reserve)."""
    replicas: dict[DayHour, sizing.Replicas] = field(default_factory=dict, compare=False)

    @property
    def gpus_per_replica(self) -> float:
        return self.gpu_fraction

    def gpus_for(self, replicas: int) -> int:
        """Whole GPUs that `replicas` replicas occupy (MIG slices pack onto GPUs)."""
        return sizing.ceil_tol(replicas * self.gpu_fraction)

    @property
    def label(self) -> str:
        if self.kind == "api":
            return "API"
        parts = [self.offer or "", self.precision or "", f"MIG {self.mig}" if self.mig else f"tp{self.tp}"]
        if self.ceiling_replicas is not None:
            parts.append(f"ceiling {self.ceiling_replicas} replicas")
        return " · ".join(p for p in parts if p)


@dataclass(frozen=True)
class Dropped:
    workload: str
    option: str
    """What was considered, e.g. 'h100-sxm · bf16 · tp1' or 'offer aws-h100-sxm-us-east-1'."""
    family: str
    """Why, in one word: fit, native, scale-up, cooling, filter, tier, slo, goodput, dominated."""
    reason: str


@dataclass(frozen=True)
class CandidateSet:
    by_workload: dict[str, list[Candidate]]
    dropped: list[Dropped]
    demand: dict[str, dict[DayHour, float]]
    """Output tokens/s per workload at each (day type, hour); empty for batch and reserve."""
    pruned: int
    """Options removed as dominated — configs and whole offers (a subset of `dropped`)."""

    def all(self) -> list[Candidate]:
        return [c for w in sorted(self.by_workload) for c in self.by_workload[w]]


def day_hours(plan: Plan) -> list[DayHour]:
    return [(d, h) for d in plan.day_type_days() for h in range(24)]


def demand_profile(plan: Plan, w: Workload) -> dict[DayHour, float]:
    assert w.demand is not None
    peak = w.demand.peak_output_tokens_per_s
    out: dict[DayHour, float] = {}
    for d in plan.day_type_days():
        prof = w.demand.profile
        values = prof if isinstance(prof, list) else (prof[d] if prof else [1.0] * 24)
        for h in range(24):
            out[(d, h)] = peak * values[h]
    return out


def allowed_tiers(plan: Plan, offer: Offer, pool: str) -> list[str]:
    tiers = [t for t in plan.policy.tiers if offer.price(t) is not None]
    if pool not in plan.policy.spot_pools:
        tiers = [t for t in tiers if t != "spot"]
    return tiers


def default_tps(acc: Accelerator, offer: Offer) -> list[int]:
    limit = min(acc.scale_up_gpus, offer.max_tp)
    out, t = [], 1
    while t <= limit:
        out.append(t)
        t *= 2
    return out


def build_candidates(loaded: LoadedPlan, keep_dominated: frozenset[str] = frozenset()) -> CandidateSet:
    """Every config that can serve each workload; raise PlanError if a workload has none.

    Dominated configs and offers are pruned, except for the workloads in `keep_dominated`
    (`planopt explain` prices every alternative of the workload it explains).
    """
    plan, catalog = loaded.plan, loaded.catalog
    by_workload: dict[str, list[Candidate]] = {}
    dropped: list[Dropped] = []
    demand: dict[str, dict[DayHour, float]] = {}
    problems: list[Problem] = []
    cache: dict = {"estimator": catalog.estimator}
    for i, w in enumerate(plan.workloads):
        if w.kind == "interactive":
            demand[w.name] = demand_profile(plan, w)
        prune = w.name not in keep_dominated
        cands, drops = _workload_candidates(plan, catalog, w, demand.get(w.name, {}), cache, prune)
        if w.kind == "interactive" and _has_overflow(w):
            cands = [v for c in cands for v in overflow_levels(plan, w, c, demand[w.name], cache)]
        kept, dominated = prune_dominated(cands, w, plan, demand.get(w.name)) if prune else (cands, [])
        drops += [Dropped(w.name, c.label, "dominated", f"dominated by {by.label}: needs no fewer GPUs at any hour")
                  for c, by in dominated]
        if w.api is not None and w.api.max_share >= 1:
            kept.append(_api_candidate(plan, w, demand.get(w.name, {})))
        if not kept:
            problems.append(_no_candidate_problem(loaded, i, w, drops))
        by_workload[w.name] = kept
        dropped += drops
    if problems:
        raise PlanError(problems)
    pruned = sum(1 for d in dropped if d.family == "dominated")
    return CandidateSet(by_workload, dropped, demand, pruned)


def _has_overflow(w: Workload) -> bool:
    return w.api is not None and w.api.max_share > 0


_FAMILY_FIXES = {
    "fit": "quantize (add fp8 or int4-awq to precisions), allow more GPUs per replica, or shorten context_tokens",
    "native": "list a precision the accelerators run natively, or a weight-only one (int4-awq)",
    "scale-up": "use TP degrees within the scale-up domain and the machines the offers sell",
    "cooling": "set facility.liquid_cooling: true if the facility has liquid-cooled racks, or allow air-cooled accelerators",
    "tier": "allow the offers' tiers in policy.tiers, or add the pool to policy.spot_pools",
    "slo": "loosen the TTFT/TPOT targets, or allow faster accelerators or more GPUs per replica",
    "goodput": "add a measured goodput for the accelerator, or give it bandwidth_tb_s and tflops_dense",
    "filter": "widen the workload's accelerators/regions/offers filters or policy.providers",
}
_FAMILY_ORDER = ["filter", "tier", "cooling", "native", "scale-up", "fit", "slo", "goodput"]


def _no_candidate_problem(loaded: LoadedPlan, i: int, w: Workload, drops: list[Dropped]) -> Problem:
    """Why every option of a workload was dropped, one line per family, and what to change."""
    families: dict[str, list[Dropped]] = {}
    for d in drops:
        if d.family != "dominated":  # never the reason nothing is left
            families.setdefault(d.family, []).append(d)
    order = sorted(families, key=lambda f: (_FAMILY_ORDER.index(f) if f in _FAMILY_ORDER else 99, f))
    lines = []
    for fam in order:
        ds = families[fam]
        more = f" (and {len(ds) - 1} more)" if len(ds) > 1 else ""
        lines.append(f"{fam}: {ds[0].option}: {ds[0].reason}{more}")
    detail = "; ".join(lines) if lines else "no offer matches its filters"
    fixes = [_FAMILY_FIXES[f] for f in order if f in _FAMILY_FIXES] or [_FAMILY_FIXES["filter"]]
    return loaded.doc.problem(("workloads", i), f"workload '{w.name}' has no candidate config — {detail}",
                              "; or ".join(fixes[:3]))


def api_price_per_output_token(w: Workload) -> float:
    """USD per output token sent to the API, input tokens of the same requests included."""
    assert w.api is not None and w.tokens is not None
    ratio = w.tokens.input / w.tokens.output
    return (w.api.usd_per_m_output + w.api.usd_per_m_input * ratio) / 1e6


def overflow_levels(plan: Plan, w: Workload, c: Candidate, demand: dict[DayHour, float],
                    cache: dict | None = None) -> list[Candidate]:
    """The config at every fleet ceiling the API share allows.

    The fleet is sized for at most B base replicas; above B·γ·occupancy the gateway sends the
    hour's excess to the API ("overflow when everything is full"). B runs down from the
    no-overflow peak while each day type's spilled tokens stay within api.max_share of its
    tokens. Each level is a config with constant hourly GPUs and a constant API cost.
    """
    cache = {} if cache is None else cache
    key = ("levels", w.name, c.goodput, c.gpu_fraction)
    if key not in cache:
        cache[key] = _levels(plan, w, c, demand)
    return [c] + [replace(c, key=f"{c.key}/cap{b}", replicas=reps, gpus=gpus, ceiling_replicas=b,
                          api_output_tokens_per_day=spill, api_cost=cost)
                  for b, reps, gpus, spill, cost in cache[key]]


def _levels(plan: Plan, w: Workload, c: Candidate, demand: dict[DayHour, float]) -> list[tuple]:
    assert w.api is not None
    pol = plan.policy
    days = plan.day_type_days()
    cap_per_replica = c.goodput * pol.occupancy
    top = max(r.base for r in c.replicas.values())
    price = api_price_per_output_token(w)
    out = []
    for b in range(top - 1, -1, -1):
        spill: dict[str, float] = {}
        ok = True
        for d in days:
            tokens = sum(demand[(d, h)] for h in range(24))
            over = sum(max(0.0, demand[(d, h)] - b * cap_per_replica) for h in range(24))
            if over > w.api.max_share * tokens * (1 + 1e-9):
                ok = False
                break
            spill[d] = over * 3600.0
        if not ok:
            break
        reps, gpus = {}, {}
        for dh, r in c.replicas.items():
            rr = sizing.replicas_from_base(min(r.base, b), pol.spares, pol.rollout_fraction)
            reps[dh] = rr
            gpus[dh] = sizing.ceil_tol(rr.total * c.gpu_fraction)
        cost = sum(days[d] * spill[d] for d in days) * price
        out.append((b, reps, gpus, spill, cost))
    return out


def _api_candidate(plan: Plan, w: Workload, demand: dict[DayHour, float]) -> Candidate:
    days = plan.day_type_days()
    if w.kind == "batch":
        assert w.batch is not None
        per_day = {d: w.batch.output_tokens_per_day for d in days}
    else:
        per_day = {d: 3600.0 * sum(demand[(d, h)] for h in range(24)) for d in days}
    cost = sum(days[d] * per_day[d] for d in days) * api_price_per_output_token(w)
    return Candidate(
        key=f"{w.name}/api", workload=w.name, pool=w.pool, kind="api", offer=None, accelerator=None,
        precision=None, tp=0, mig=None, gpu_fraction=0.0, goodput=0.0, goodput_source="api", bound=None,
        weights_gb=0.0, kv_gb_per_seq=0.0, kv_concurrency=0, needed_concurrency=0, total_gb=0.0,
        reserve_gb=0.0, free_gb=0.0, batch=None, ttft_ms=None, tpot_ms=None,
        api_output_tokens_per_day=per_day, api_cost=cost)


def _filter_reason(plan: Plan, catalog: Catalog, w: Workload, offer: Offer) -> str | None:
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
    usable = {o: {w.name for w in plan.workloads if _filter_reason(plan, catalog, w, catalog.offers[o]) is None}
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


def _offers_for(plan: Plan, catalog: Catalog, w: Workload, drops: list[Dropped],
                dominated: dict[str, str]) -> list[Offer]:
    out = []
    filtered = {"accelerator", "region", "offer", "provider"}
    reasons: set[str] = set()
    for oid in sorted(catalog.offers):
        offer = catalog.offers[oid]
        why = _filter_reason(plan, catalog, w, offer)
        if why == "unknown accelerator":
            continue
        if why in filtered:
            reasons.add(why)
            continue  # filtered by the plan: not worth a line per offer
        acc = catalog.accelerators[offer.accelerator]
        if acc.needs_liquid_cooling and not plan.facility.liquid_cooling:
            drops.append(Dropped(w.name, f"offer {oid}", "cooling",
                                 f"{acc.id} needs liquid-cooled racks; the facility has none "
                                 "(set facility.liquid_cooling: true if it does)"))
            continue
        if not allowed_tiers(plan, offer, w.pool):
            sold = ", ".join(t for t in offer.price_per_gpu_hour)
            drops.append(Dropped(w.name, f"offer {oid}", "tier",
                                 f"sells {sold}; the policy allows none of them for pool '{w.pool}'"))
            continue
        if oid in dominated:
            drops.append(Dropped(w.name, f"offer {oid}", "dominated",
                                 f"{dominated[oid]} sells the same accelerator for no more, without a cap"))
            continue
        out.append(offer)
    if not out and not any(d.family in ("cooling", "tier") for d in drops):
        what = []
        if w.reserve_gpus is not None and w.reserve_gpus.accelerators:
            what.append(f"accelerators {sorted(w.reserve_gpus.accelerators)}")
        elif w.accelerators:
            what.append(f"accelerators {sorted(w.accelerators)}")
        if w.regions:
            what.append(f"regions {w.regions}")
        if w.offers:
            what.append(f"offers {w.offers}")
        if plan.policy.providers is not None:
            what.append(f"providers {plan.policy.providers}")
        drops.append(Dropped(w.name, "offers", "filter",
                             f"no offer matches {' and '.join(what) if what else 'the catalog'}"))
    return out


def _workload_candidates(plan: Plan, catalog: Catalog, w: Workload, demand: dict[DayHour, float],
                         cache: dict, prune: bool = True) -> tuple[list[Candidate], list[Dropped]]:
    drops: list[Dropped] = []
    if "dominated_offers" not in cache:
        cache["dominated_offers"] = dominated_offers(plan, catalog)
    offers = _offers_for(plan, catalog, w, drops, cache["dominated_offers"] if prune else {})
    if w.kind == "reserve":
        return [_reserve_candidate(plan, w, o) for o in offers], drops
    cands: list[Candidate] = []
    model = catalog.models[w.model]  # type: ignore[index]
    seen_drop: set[tuple[str, str]] = set()
    for offer in offers:
        cands.extend(_with_hourly(plan, w, _offer_configs(plan, w, model, offer, catalog, demand, cache, drops,
                                                          seen_drop), demand, cache, drops, prune))
    return cands, drops


def _with_hourly(plan: Plan, w: Workload, configs: list[Candidate], demand: dict[DayHour, float], cache: dict,
                 drops: list[Dropped], prune: bool = True) -> list[Candidate]:
    """Keep the configs no other config of the offer beats on both GPUs per replica and goodput
    (exact: fewer GPUs a replica and more goodput never need more GPUs at any hour, nor GPU-hours
    for a batch day), then give the survivors their hourly replicas and GPUs."""
    kept, dominated = pareto_configs(configs) if prune else (configs, [])
    drops.extend(Dropped(w.name, c.label, "dominated",
                         f"dominated by {by.label}: no more GPUs per replica, no less goodput")
                 for c, by in dominated)
    if w.kind != "interactive":
        return kept
    out = []
    for c in kept:
        reps, gpus = _hourly(plan, w, c.goodput, c.gpu_fraction, demand, cache)
        out.append(replace(c, replicas=reps, gpus=gpus))
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


def _offer_configs(plan: Plan, w: Workload, model, offer: Offer, catalog: Catalog, demand: dict[DayHour, float],
                   cache: dict, drops: list[Dropped], seen_drop: set[tuple[str, str]]) -> list[Candidate]:
    cands: list[Candidate] = []
    acc = catalog.accelerators[offer.accelerator]
    for prec_id in w.precisions:
        prec = catalog.precisions[catalog.precision_id(prec_id)]
        # An accelerator of unknown generation runs what the workload lists (a measurement shows it).
        reason = None if acc.generation == "other" else sizing.why_not_native(prec, acc)
        if reason:
            _drop_once(drops, seen_drop, w, f"{acc.id} · {prec.id}", "native", reason)
            continue
        tps = w.tp or default_tps(acc, offer)
        for tp in tps:
            option = f"{acc.id} · {prec.id} · tp{tp}"
            if tp > acc.scale_up_gpus:
                _drop_once(drops, seen_drop, w, option, "scale-up",
                           f"TP {tp} is beyond the scale-up domain of {acc.id} ({acc.scale_up_gpus} GPUs)")
                continue
            if tp > offer.max_tp:
                drops.append(Dropped(w.name, f"{offer.id} · {prec.id} · tp{tp}", "scale-up",
                                     f"TP {tp} exceeds the largest machine the offer sells ({offer.max_tp} GPUs)"))
                continue
            c = _config(plan, w, model, acc, prec, tp, None, offer, demand, cache)
            if isinstance(c, Dropped):
                _drop_once(drops, seen_drop, w, c.option, c.family, c.reason)
            else:
                cands.append(c)
        if w.pool in plan.policy.mig_pools and (w.tp is None or 1 in w.tp):
            for mig in acc.mig_profiles:
                if mig.instances_per_gpu < 2:
                    continue  # a whole-GPU profile is the tp1 config
                c = _config(plan, w, model, acc, prec, 1, mig, offer, demand, cache)
                if isinstance(c, Dropped):
                    _drop_once(drops, seen_drop, w, c.option, c.family, c.reason)
                else:
                    cands.append(c)
    return cands


def _drop_once(drops: list[Dropped], seen: set[tuple[str, str]], w: Workload, option: str,
               family: str, reason: str) -> None:
    if (option, reason) not in seen:
        seen.add((option, reason))
        drops.append(Dropped(w.name, option, family, reason))


def _reserve_candidate(plan: Plan, w: Workload, offer: Offer) -> Candidate:
    assert w.reserve_gpus is not None
    n = w.reserve_gpus.count
    gpus = {dh: n for dh in day_hours(plan)}
    return Candidate(
        key=f"{w.name}/{offer.id}", workload=w.name, pool=w.pool, kind="reserve", offer=offer.id,
        accelerator=offer.accelerator, precision=None, tp=n, mig=None, gpu_fraction=float(n),
        goodput=0.0, goodput_source="measured", bound=None, weights_gb=0.0, kv_gb_per_seq=0.0,
        kv_concurrency=0, needed_concurrency=0, total_gb=0.0, reserve_gb=0.0, free_gb=0.0,
        batch=None, ttft_ms=None, tpot_ms=None, gpus=gpus,
        replicas={dh: sizing.Replicas(1, 0, 0, 1) for dh in gpus})


@dataclass(frozen=True)
class _Sized:
    """What a config costs in memory and delivers in goodput; independent of the offer."""

    fit: sizing.Fit
    goodput: float
    source: GoodputSource
    bound: str | None
    batch: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    needed: int


def _config(plan: Plan, w: Workload, model, acc: Accelerator, prec, tp: int, mig: MigProfile | None,
            offer: Offer, demand: dict[DayHour, float], cache: dict) -> Candidate | Dropped:
    sized = _size(plan, w, model, acc, prec, tp, mig, cache)
    mig_name = mig.name if mig else None
    option = f"{acc.id} · {prec.id} · " + (f"MIG {mig_name}" if mig else f"tp{tp}")
    if isinstance(sized, Dropped):
        return Dropped(w.name, option, sized.family, sized.reason)
    fraction = (1.0 / mig.instances_per_gpu) if mig else float(tp)
    key = f"{w.name}/{offer.id}/{prec.id}/tp{tp}" + (f"/{mig_name}" if mig else "")
    f = sized.fit
    return Candidate(
        key=key, workload=w.name, pool=w.pool, kind=w.kind, offer=offer.id, accelerator=acc.id,
        precision=prec.id, tp=tp, mig=mig_name, gpu_fraction=fraction, goodput=sized.goodput,
        goodput_source=sized.source, bound=sized.bound, weights_gb=f.weights_gb,
        kv_gb_per_seq=f.kv_gb_per_seq, kv_concurrency=f.kv_concurrency, needed_concurrency=sized.needed,
        total_gb=f.total_gb, reserve_gb=f.reserve_gb, free_gb=f.free_gb, batch=sized.batch,
        ttft_ms=sized.ttft_ms, tpot_ms=sized.tpot_ms)


def _hourly(plan: Plan, w: Workload, goodput: float, fraction: float, demand: dict[DayHour, float],
            cache: dict) -> tuple[dict[DayHour, sizing.Replicas], dict[DayHour, int]]:
    """Replicas and GPUs at every hour; shared by every offer of the same accelerator."""
    key = ("hourly", w.name, goodput, fraction)
    if key not in cache:
        pol = plan.policy
        reps: dict[DayHour, sizing.Replicas] = {}
        gpus: dict[DayHour, int] = {}
        by_demand: dict[float, tuple[sizing.Replicas, int]] = {}
        for dh, dem in demand.items():
            if dem not in by_demand:
                r = sizing.replicas(dem, goodput, pol.occupancy, pol.spares, pol.rollout_fraction)
                by_demand[dem] = (r, sizing.ceil_tol(r.total * fraction))
            reps[dh], gpus[dh] = by_demand[dem]
        cache[key] = (reps, gpus)
    return cache[key]


def _size(plan: Plan, w: Workload, model, acc: Accelerator, prec, tp: int, mig: MigProfile | None,
          cache: dict) -> _Sized | Dropped:
    """Memory fit and goodput of a config; cached per build, since offers repeat accelerators."""
    key = (w.name, acc.id, prec.id, tp, mig.name if mig else None)
    if key not in cache:
        cache[key] = _size_uncached(plan, w, model, acc, prec, tp, mig, cache.get("estimator"))
    return cache[key]


def _size_uncached(plan: Plan, w: Workload, model, acc: Accelerator, prec, tp: int,
                   mig: MigProfile | None, params=None) -> _Sized | Dropped:
    reserve = plan.policy.memory_reserve
    option = ""
    kv_elem = _kv_bytes(w, prec)
    mem_per_gpu = mig.memory_gb if mig else acc.memory_gb
    fit = sizing.fit(model, prec, mem_per_gpu, tp, w.context, reserve, kv_elem)
    if fit.kv_concurrency < 1:
        return Dropped(w.name, option, "fit",
                       f"does not fit: weights {fit.weights_gb:.1f} GB + one sequence's KV "
                       f"{fit.kv_gb_per_seq:.2f} GB > usable {fit.usable_gb:.1f} GB "
                       f"({fit.total_gb:.0f} GB less {reserve:.0%} reserve)")
    measured = [m for m in w.measured if m.accelerator == acc.id and _same_precision(m.precision, prec)
                and m.tp == tp and m.mig == (mig.name if mig else None)]
    tokens = w.tokens
    assert tokens is not None
    if measured:
        goodput = measured[-1].goodput_output_tokens_per_s
        needed = sizing.needed_concurrency(goodput, w.slo.tpot_ms)
        if fit.kv_concurrency < needed:
            return Dropped(w.name, option, "fit",
                           f"KV cache holds {fit.kv_concurrency} sequences; the measured goodput "
                           f"needs {needed} at TPOT {w.slo.tpot_ms:g} ms")
        return _Sized(fit, goodput, "measured", None, None, None, None, needed)
    try:
        est = sizing.estimate(model, prec, acc, tp, int(round(tokens.input)), int(round(tokens.output)),
                              ttft_ms=w.slo.ttft_ms, tpot_ms=w.slo.tpot_ms,
                              max_batch=fit.kv_concurrency, mig=mig, params=params)
    except ValueError as exc:
        return Dropped(w.name, option, "goodput",
                       f"no measured goodput and no estimate ({exc}); add a `measured` entry")
    if est.goodput_output_tokens_per_s <= 0 or est.batch < 1:
        target = {"tpot": f"TPOT {w.slo.tpot_ms:g} ms", "ttft": f"TTFT {w.slo.ttft_ms:g} ms"}.get(est.bound, "the SLO")
        return Dropped(w.name, option, "slo",
                       f"cannot meet {target} even at batch 1 "
                       f"(estimated TTFT {est.ttft_ms:.0f} ms, TPOT {est.tpot_ms:.1f} ms)")
    needed = sizing.needed_concurrency(est.goodput_output_tokens_per_s, w.slo.tpot_ms)
    needed = min(needed, est.batch) if w.slo.tpot_ms is not None else needed
    return _Sized(fit, est.goodput_output_tokens_per_s, "estimated", est.bound, est.batch, est.ttft_ms,
                  est.tpot_ms, needed)


def _same_precision(name: str, prec) -> bool:
    return name == prec.id or name in prec.aliases


def _kv_bytes(w: Workload, prec) -> float:
    if w.kv_precision is None:
        return prec.kv_bytes_per_elem
    return {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}[w.kv_precision]


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
