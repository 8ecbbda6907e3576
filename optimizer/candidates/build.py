"""Enumerate every workload × offer × precision × TP [× MIG] config; drop what cannot work, say why."""

from __future__ import annotations

from dataclasses import dataclass, replace

from optimizer import vocab
from optimizer.candidates.overflow import api_candidate, has_overflow, overflow_levels
from optimizer.candidates.prune import (
    dominated_offers,
    filter_reason,
    pareto_configs,
    prune_dominated,
)
from optimizer.candidates.types import (
    Candidate,
    CandidateSet,
    DayHour,
    Dropped,
    GoodputSource,
)
from optimizer.errors import PlanError, Problem
from optimizer.inputs.catalog import Catalog
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.catalog import Accelerator, MigProfile, Offer
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.physics import memory, roofline
from optimizer.physics import replicas as rep


def day_hours(plan: Plan) -> list[DayHour]:
    return [(d, h) for d in plan.day_type_days() for h in range(24)]


def demand_profile(plan: Plan, w: Workload) -> dict[DayHour, float]:
    assert w.demand is not None
    peak = w.demand.peak_output_tokens_per_s
    out: dict[DayHour, float] = {}
    for d in plan.day_type_days():
        values = vocab.profile_for(w.demand.profile, d)
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
        if w.kind == "interactive" and has_overflow(w):
            cands = [v for c in cands for v in overflow_levels(plan, w, c, demand[w.name], cache)]
        kept, dominated = prune_dominated(cands, w, plan, demand.get(w.name)) if prune else (cands, [])
        drops += [Dropped(w.name, c.label, "dominated", f"dominated by {by.label}: needs no fewer GPUs at any hour")
                  for c, by in dominated]
        if w.api is not None and w.api.max_share >= 1:
            kept.append(api_candidate(plan, w, demand.get(w.name, {})))
        if not kept:
            problems.append(_no_candidate_problem(loaded, i, w, drops))
        by_workload[w.name] = kept
        dropped += drops
    if problems:
        raise PlanError(problems)
    pruned = sum(1 for d in dropped if d.family == "dominated")
    return CandidateSet(by_workload, dropped, demand, pruned)


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


def _offers_for(plan: Plan, catalog: Catalog, w: Workload, drops: list[Dropped],
                dominated: dict[str, str]) -> list[Offer]:
    out = []
    filtered = {"accelerator", "region", "offer", "provider"}
    reasons: set[str] = set()
    for oid in sorted(catalog.offers):
        offer = catalog.offers[oid]
        why = filter_reason(plan, catalog, w, offer)
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


def _offer_configs(plan: Plan, w: Workload, model, offer: Offer, catalog: Catalog, demand: dict[DayHour, float],
                   cache: dict, drops: list[Dropped], seen_drop: set[tuple[str, str]]) -> list[Candidate]:
    cands: list[Candidate] = []
    acc = catalog.accelerators[offer.accelerator]
    for prec_id in w.precisions:
        prec = catalog.precisions[catalog.precision_id(prec_id)]
        # An accelerator of unknown generation runs what the workload lists (a measurement shows it).
        reason = None if acc.generation == "other" else roofline.why_not_native(prec, acc)
        if reason:
            _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id), "native", reason)
            continue
        tps = w.tp or default_tps(acc, offer)
        for tp in tps:
            option = vocab.option_label(acc.id, prec.id, tp)
            if tp > acc.scale_up_gpus:
                _drop_once(drops, seen_drop, w, option, "scale-up",
                           f"TP {tp} is beyond the scale-up domain of {acc.id} ({acc.scale_up_gpus} GPUs)")
                continue
            if tp > offer.max_tp:
                drops.append(Dropped(w.name, vocab.config_label(offer.id, prec.id, tp), "scale-up",
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
        replicas={dh: rep.Replicas(1, 0, 0, 1) for dh in gpus})


@dataclass(frozen=True)
class _Sized:
    """What a config costs in memory and delivers in goodput; independent of the offer."""

    fit: memory.Fit
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
    option = vocab.option_label(acc.id, prec.id, tp, mig_name)
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
            cache: dict) -> tuple[dict[DayHour, rep.Replicas], dict[DayHour, int]]:
    """Replicas and GPUs at every hour; shared by every offer of the same accelerator."""
    key = ("hourly", w.name, goodput, fraction)
    if key not in cache:
        pol = plan.policy
        reps: dict[DayHour, rep.Replicas] = {}
        gpus: dict[DayHour, int] = {}
        by_demand: dict[float, tuple[rep.Replicas, int]] = {}
        for dh, dem in demand.items():
            if dem not in by_demand:
                r = rep.replicas(dem, goodput, pol.occupancy, pol.spares, pol.rollout_fraction)
                by_demand[dem] = (r, vocab.ceil_tol(r.total * fraction))
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
    fit = memory.fit(model, prec, mem_per_gpu, tp, w.context, reserve, kv_elem)
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
        needed = rep.needed_concurrency(goodput, w.slo.tpot_ms)
        if fit.kv_concurrency < needed:
            return Dropped(w.name, option, "fit",
                           f"KV cache holds {fit.kv_concurrency} sequences; the measured goodput "
                           f"needs {needed} at TPOT {w.slo.tpot_ms:g} ms")
        return _Sized(fit, goodput, "measured", None, None, None, None, needed)
    try:
        est = roofline.estimate(model, prec, acc, tp, int(round(tokens.input)), int(round(tokens.output)),
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
    needed = rep.needed_concurrency(est.goodput_output_tokens_per_s, w.slo.tpot_ms)
    needed = min(needed, est.batch) if w.slo.tpot_ms is not None else needed
    return _Sized(fit, est.goodput_output_tokens_per_s, "estimated", est.bound, est.batch, est.ttft_ms,
                  est.tpot_ms, needed)


def _same_precision(name: str, prec) -> bool:
    return name == prec.id or name in prec.aliases


def _kv_bytes(w: Workload, prec) -> float:
    if w.kv_precision is None:
        return prec.kv_bytes_per_elem
    return {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}[w.kv_precision]


