"""Enumerate every workload × offer × precision × TP [× MIG] config; drop what cannot work, say why."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import multiprocessing
import os
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

from optimizer import formatting, units, vocab
from optimizer.candidates import configs, engines
from optimizer.candidates.overflow import api_candidate, has_overflow, overflow_levels
from optimizer.candidates.prune import (
    dominated_offers,
    dominated_offers_by_configs,
    filter_reason,
    pareto_configs,
    prune_dominated,
)
from optimizer.candidates.types import (
    Candidate,
    CandidateSet,
    DayHour,
    Dropped,
    evolved,
    whole_gpus,
)
from optimizer.errors import InfeasiblePlan, PlanError, Problem
from optimizer.inputs import estimates
from optimizer.inputs.catalog import Catalog
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import goodput_factor, goodput_varies
from optimizer.inputs.schema.catalog import (
    Accelerator,
    MigProfile,
    Model,
    Offer,
    Precision,
)
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.inputs.schema.plan import Plan, SizeClass, Tokens, Workload
from optimizer.physics import replicas as rep
from optimizer.physics import roofline, sharing
from optimizer.physics.layout import Layout
from optimizer.physics.validation import Validation, goodput_ratio, validation_of
from optimizer.processes import collection_paused, watch_parent


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
    """Tiers pool may buy at the offer: those it sells that the policy allows (spot only in spot pools);
    servers the plan owns already are the `owned` tier, always allowed."""
    if offer.provider == "own" and any(o.offer_id == offer.id for o in plan.owned):
        return ["owned"]
    tiers = [t for t in plan.policy.tiers if offer.sells(t)]
    if pool not in plan.policy.spot_pools:
        tiers = [t for t in tiers if t != "spot"]
    return tiers


def build_candidates(loaded: LoadedPlan, keep_dominated: frozenset[str] = frozenset(),
                     strict: bool = True) -> CandidateSet:
    """Every config that can serve each workload.

    A workload with no config left is a PlanError (exit 2) when its options were refused by the
    plan's own settings (filters, tiers, TP degrees, memory), and InfeasiblePlan (exit 1) when some
    option was refused only for its SLO: then the message gives the best TTFT and TPOT any option
    reaches. With `strict` False such workloads keep an empty list instead (`planopt explain` shows
    everything that was tried). Dominated configs and offers are pruned, except for the workloads in
    `keep_dominated` (`planopt explain` prices every alternative of the workload it explains).
    """
    with collection_paused():
        return _built(loaded, keep_dominated, strict)


def _built(loaded: LoadedPlan, keep_dominated: frozenset[str], strict: bool) -> CandidateSet:
    plan, catalog = loaded.plan, loaded.catalog
    by_workload: dict[str, list[Candidate]] = {}
    dropped: list[Dropped] = []
    demand: dict[str, dict[DayHour, float]] = {}
    problems: list[Problem] = []
    unreachable: list[Problem] = []
    notes: list[str] = []
    for i, (w, (dem, kept, drops, said)) in enumerate(zip(plan.workloads, _every_workload(loaded, keep_dominated))):
        notes += said
        if dem is not None:
            demand[w.name] = dem
        if not kept:
            # a config excluded for want of evidence is the plan's own setting: said as such, not as the SLO
            if any(d.family == "slo" for d in drops) and not any(d.family == "unvalidated" for d in drops):
                unreachable.append(loaded.doc.problem(("workloads", i, "slo"), unreachable_slo(w, drops), SLO_FIX))
            else:
                problems.append(_no_candidate_problem(loaded, i, w, drops))
        by_workload[w.name] = kept
        dropped += drops
    if problems:
        raise PlanError(problems)
    if unreachable and strict:
        raise InfeasiblePlan([str(dataclasses.replace(p, fix=None)) for p in unreachable], fix=SLO_FIX,
                             problems=unreachable)
    # offers compared by their configs' hourly GPUs at the whole demand: not for a split workload's configs
    # (nor for shared configs: a group's GPUs are not the sum of its members')
    if not keep_dominated and all(w.split_mode(plan.policy) == "none" for w in plan.workloads) \
            and not plan.policy.share_pools:
        gone = dominated_offers_by_configs(plan, catalog, by_workload, demand)
        for w in plan.workloads:
            keep = [c for c in by_workload[w.name] if c.offer not in gone]
            dropped += [Dropped(w.name, c.label, "dominated", f"{gone[c.offer]} has a config that needs no more "
                                "GPUs at any hour, sold in smaller units for no more") for c in by_workload[w.name]
                        if c.offer in gone]
            by_workload[w.name] = keep
    _keep_groups(plan, by_workload, dropped)
    pruned = sum(1 for d in dropped if d.family == "dominated")
    return CandidateSet(by_workload, dropped, demand, pruned, notes)


def shares_gpus(plan: Plan, w: Workload) -> bool:
    """w may share whole GPUs with other workloads (policy.share_pools): an interactive workload of such a pool
    served by one config (split: none) and without API overflow (its ceilings size replicas of its own)."""
    return (w.pool in plan.policy.share_pools and w.kind == "interactive" and w.split_mode(plan.policy) == "none"
            and not has_overflow(w))


def _shared_configs(plan: Plan, w: Workload, cands: list[Candidate], demand: dict[DayHour, float],
                    cache: dict) -> list[Candidate]:
    """A workload's configs on GPUs it shares (physics.sharing): one for each of its configs of one whole GPU
    (tensor parallel 1, no MIG slice, no API ceiling), with the share of the GPU's memory its replica takes and
    the GPUs' worth of time its demand takes at each hour. Its `gpus` and `replicas` are what it would need
    were it alone in the group (a ranking key; the program sizes the group: optimize.families `share`)."""
    if not shares_gpus(plan, w):
        return []
    pol = plan.policy
    sigma = sharing.slowdown(pol.share_mode, pol.share_slowdown)
    doubt = goodput_varies(plan)
    out = []
    for c in cands:
        if (c.kind != "interactive" or c.family != "tp" or c.tp != 1 or c.pp != 1 or c.mig is not None
                or c.gpu_fraction != 1 or c.ceiling_replicas is not None or c.goodput <= 0):
            continue
        usable = c.total_gb - c.reserve_gb
        held = max(1, c.needed_concurrency, units.ceil_tol(c.batch or 0.0))
        memory = sharing.memory_share(c.weights_gb, c.kv_gb_per_seq * held, usable)
        if memory > 1 + 1e-9:
            continue
        dem = demand
        if doubt and c.goodput_source == "estimated":  # a scenario's goodput g: its time is demand ÷ g
            dem = {(d, h): v / goodput_factor(plan, c.goodput_source, d) for (d, h), v in demand.items()}
        time = {dh: sharing.time_share(v, c.goodput, sigma) for dh, v in dem.items()}
        reps, gpus = _hourly(plan, w, c.goodput * (1 - sigma), 1.0, dem, cache, scaled=dem is not demand)
        out.append(replace(c, key=f"{c.key}/shared-{pol.share_mode}", share=pol.share_mode, share_memory=memory,
                           share_time=time, share_slowdown=sigma, replicas=reps, gpus=gpus, commit_gpus=None))
    return out


def _keep_groups(plan: Plan, by_workload: dict[str, list[Candidate]], dropped: list[Dropped]) -> None:
    """Shared configs only where another workload of the pool may share the offer's GPUs too: alone, a shared
    config is its own GPU less the slowdown."""
    if not plan.policy.share_pools:
        return
    sharers: dict[tuple[str | None, str], set[str]] = {}
    for w, cs in by_workload.items():
        for c in cs:
            if c.share:
                sharers.setdefault((c.offer, c.pool), set()).add(w)
    for w, cs in by_workload.items():
        alone = [c for c in cs if c.share and len(sharers[(c.offer, c.pool)]) < 2]
        if alone:
            dropped += [Dropped(w, c.label, "dominated", "no other workload of its pool may share its offer's GPUs")
                        for c in alone]
            by_workload[w] = [c for c in cs if c not in alone]


PARALLEL_WORKLOADS = 50
"""Plans with at least this many workloads size them on every core (build_candidates): a workload's
configs depend on the plan, the catalog and that workload alone. Below it, starting the processes (each imports
planopt and receives the catalog) costs about what sizing the workloads does."""

_ALONE: list[bool] = []
"""Non-empty inside `sized_alone()`."""

Sized = tuple["dict[DayHour, float] | None", list[Candidate], list[Dropped], list[str]]
"""One workload's demand by hour (interactive), its configs kept, what was dropped, and its warnings
(CandidateSet.notes)."""


def _every_workload(loaded: LoadedPlan, keep_dominated: frozenset[str]) -> list[Sized]:
    """Each workload's configs, in the plan's order. Large plans are split by model over a process pool
    (workloads of one model land in one process, where sizing's cache serves them all); the result is
    the same list whichever way, and a process already in a pool (sweep points, explain's re-solves)
    sizes alone."""
    plan, catalog = loaded.plan, loaded.catalog
    workers = min(os.cpu_count() or 1, 8)
    if len(plan.workloads) < PARALLEL_WORKLOADS or workers < 2 or _ALONE or multiprocessing.parent_process() is not None:
        cache: dict = {"estimator": catalog.estimator}
        return [_one_workload(plan, catalog, w, keep_dominated, cache) for w in plan.workloads]
    by_model: dict[str, list[int]] = {}
    for i, w in enumerate(plan.workloads):
        by_model.setdefault(w.model or w.kind, []).append(i)
    shares: list[list[int]] = [[] for _ in range(workers)]
    for group in sorted(by_model.values(), key=lambda g: (-len(g), g[0])):  # largest first, to the lightest
        min(shares, key=len).extend(group)
    out: list[Sized | None] = [None] * len(plan.workloads)
    try:
        with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_worker_start, initargs=(plan, catalog, keep_dominated)) as pool:
            for share, sized in zip(shares, pool.map(_worker_size, shares)):
                for i, one in zip(share, sized):
                    out[i] = one
    except (OSError, cf.BrokenExecutor):  # no processes to be had here: size them in this one
        with sized_alone():
            return _every_workload(loaded, keep_dominated)
    return out  # type: ignore[return-value]


@contextmanager
def sized_alone() -> Iterator[None]:
    """Size every workload in this process: the caller is itself one task among many (a sweep's point,
    which may run as a Ray task, where no multiprocessing parent says so)."""
    _ALONE.append(True)
    try:
        yield
    finally:
        _ALONE.pop()


_WORKER: dict = {}


def _worker_start(plan: Plan, catalog: Catalog, keep_dominated: frozenset[str]) -> None:
    watch_parent()
    _WORKER.update(plan=plan, catalog=catalog, keep=keep_dominated, cache={"estimator": catalog.estimator})


def _worker_size(indices: list[int]) -> list[Sized]:
    plan, catalog = _WORKER["plan"], _WORKER["catalog"]
    with collection_paused():
        return [_one_workload(plan, catalog, plan.workloads[i], _WORKER["keep"], _WORKER["cache"]) for i in indices]


def _one_workload(plan: Plan, catalog: Catalog, w: Workload, keep_dominated: frozenset[str], cache: dict) -> Sized:
    """A workload's configs: enumerated and sized, overflow ceilings, dominated ones pruned (unless it is
    in `keep_dominated`), the API-only config when the API may take everything."""
    dem = demand_profile(plan, w) if w.kind == "interactive" else None
    # a config beaten at the mix's goodput may win a size class: a split workload keeps every config
    prune = w.name not in keep_dominated and w.split_mode(plan.policy) == "none"
    cands, drops, notes = _workload_candidates(plan, catalog, w, dem or {}, cache, prune)
    # a split workload sends a share of its traffic to the API in the program (model.define_split), not by
    # ceilings on one config
    split = w.kind == "interactive" and w.split_mode(plan.policy) != "none"
    if dem is not None and has_overflow(w) and not split:
        cands = [v for c in cands for v in overflow_levels(plan, w, c, dem, cache)]
    kept, dominated = prune_dominated(cands, w, plan, dem) if prune else (cands, [])
    drops += [Dropped(w.name, c.label, "dominated", f"dominated by {by.label}: needs no fewer GPUs at any hour")
              for c, by in dominated]
    if dem is not None:  # a shared config competes with the group at its offer: no config alone dominates it
        kept += _shared_configs(plan, w, cands, dem, cache)
    if w.api is not None and w.api.max_share >= 1 and not split:
        kept.append(api_candidate(plan, w, dem or {}))
    return dem, kept, drops, notes


_FAMILY_FIXES = {
    "fit": "quantize (add fp8 or int4-awq to precisions), allow more GPUs per replica, or shorten context_tokens",
    "native": "list a precision the accelerators run natively, or a weight-only one (int4-awq)",
    "engine": "allow an engine that runs it (policy.engines, or the workload's engine), or other accelerators or precisions",
    "scale-up": "use TP degrees within the scale-up domain and the machines the offers sell",
    "network": "choose offers with an inter-node network (scale_out_gb_s), or a precision that fits one machine",
    "tier": "allow the offers' tiers in policy.tiers, or add the pool to policy.spot_pools",
    "unsold": "give the offer its prices (price_per_gpu_hour: {on-demand: …}) or buy terms",
    "slo": "loosen the TTFT/TPOT targets, or allow faster accelerators or more GPUs per replica",
    "goodput": "add a measured goodput for the accelerator, or give it bandwidth_tb_s and tflops_dense",
    "filter": "widen the workload's accelerators/regions/offers filters or policy.providers",
    "facility": "set facility.liquid_cooling: true if your racks are liquid-cooled, or buy an air-cooled system",
    "unvalidated": ("measure a config (a `measured` entry of the workload, or `planopt calibrate --bench`), or set "
                    "policy.unvalidated: warn to plan on the estimate and be told"),
}
_FAMILY_ORDER = ["filter", "unsold", "facility", "tier", "native", "engine", "scale-up", "network", "fit", "unvalidated",
                 "slo", "goodput"]


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


SLO_FIX = ("loosen the targets to what is reachable, allow faster accelerators or more GPUs per replica "
           "(tp, pp, disagg in parallelism), or shorten the prompts; `planopt explain PLAN --workload NAME` "
           "lists every option tried")


SECONDS_LIKE_MS = 20.0
"""A TTFT target below this many milliseconds is no first token any engine returns: likely seconds."""
TPOT_SECONDS_LIKE_MS = 1.0
"""A TPOT target below this many milliseconds is faster than any decode step: likely seconds."""


def unreachable_slo(w: Workload, drops: list[Dropped]) -> str:
    """One sentence for a workload no option serves at its SLO: the best TTFT and TPOT any option
    reaches (at batch 1, at the SLO's percentile), on which option, against the targets."""
    slo = w.slo
    misses = [d for d in drops if d.family == "slo" and d.ttft_ms is not None and d.tpot_ms is not None]
    pct = f"p{slo.percentile:g}"
    prompt = f" at {w.tokens.input:,.0f}-token prompts" if w.tokens else ""
    parts = []
    if misses and slo.ttft_ms is not None:
        best = min(misses, key=lambda d: (d.ttft_ms, d.option))
        verdict = "above" if best.ttft_ms > slo.ttft_ms else "within"  # type: ignore[operator]
        parts.append(f"best {pct} TTFT{prompt}: {formatting.duration_ms(best.ttft_ms)} on {best.option} "  # type: ignore[arg-type]
                     f"({verdict} the {formatting.duration_ms(slo.ttft_ms)} target)")
    if misses and slo.tpot_ms is not None:
        best = min(misses, key=lambda d: (d.tpot_ms, d.option))
        verdict = "above" if best.tpot_ms > slo.tpot_ms else "within"  # type: ignore[operator]
        parts.append(f"best {pct} TPOT: {best.tpot_ms:.1f} ms on {best.option} "
                     f"({verdict} the {slo.tpot_ms:g} ms target)")
    if parts and not any("(above" in p for p in parts):
        parts.append("no single option meets both targets at once")
    if slo.ttft_ms is not None and slo.ttft_ms < SECONDS_LIKE_MS:
        parts.append(f"ttft_ms is in milliseconds: {slo.ttft_ms:g} s would be ttft_ms: {slo.ttft_ms * 1000:g}")
    if slo.tpot_ms is not None and slo.tpot_ms < TPOT_SECONDS_LIKE_MS:
        parts.append(f"tpot_ms is in milliseconds: {slo.tpot_ms:g} s would be tpot_ms: {slo.tpot_ms * 1000:g}")
    others = {}
    for d in drops:
        if d.family not in ("slo", "dominated"):
            others[d.family] = others.get(d.family, 0) + 1
    rest = "; ".join(f"{formatting.plural(n, 'option')} refused for {fam}" for fam, n in sorted(others.items()))
    return (f"workload '{w.name}' cannot meet its SLO on any config — " + "; ".join(parts)
            + (f" ({rest})" if rest else ""))


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
        # Rented capacity brings its own cooling: facility.liquid_cooling matters for servers you buy.
        acc = catalog.accelerators[offer.accelerator]
        if offer.buy is not None and acc.needs_liquid_cooling and not plan.facility.liquid_cooling:
            drops.append(Dropped(w.name, f"offer {oid}", "facility",
                                 f"{offer.accelerator} needs liquid-cooled racks; facility.liquid_cooling is false"))
            continue
        if not allowed_tiers(plan, offer, w.pool):
            if not offer.price_per_gpu_hour and offer.buy is None:  # (servers owned are the owned tier: allowed)
                drops.append(Dropped(w.name, f"offer {oid}", "unsold", "sells nothing: its price_per_gpu_hour is empty"))
                continue
            sold = ", ".join(t for t in offer.price_per_gpu_hour)
            drops.append(Dropped(w.name, f"offer {oid}", "tier",
                                 f"sells {sold}; the policy allows none of them for pool '{w.pool}'"))
            continue
        if oid in dominated:
            drops.append(Dropped(w.name, f"offer {oid}", "dominated",
                                 f"{dominated[oid]} sells the same accelerator for no more, without a cap"))
            continue
        out.append(offer)
    if not out and not any(d.family in ("tier", "unsold") for d in drops):
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
                         cache: dict, prune: bool = True) -> tuple[list[Candidate], list[Dropped], list[str]]:
    drops: list[Dropped] = []
    notes: list[str] = []
    if "dominated_offers" not in cache:
        cache["dominated_offers"] = dominated_offers(plan, catalog)
    offers = _offers_for(plan, catalog, w, drops, cache["dominated_offers"] if prune else {})
    if w.kind == "reserve":
        return [_reserve_candidate(plan, w, o) for o in offers], drops, notes
    cands: list[Candidate] = []
    model = catalog.models[w.model]  # type: ignore[index]
    seen_drop: set[tuple[str, str]] = set()
    for offer in offers:
        made = _twin_configs(plan, w, model, offer, catalog, demand, cache, drops, seen_drop, notes)
        cands.extend(_with_hourly(plan, w, _validated_only(plan, w, made, drops), demand, cache, drops, prune))
    return cands, drops, notes


def _validated_only(plan: Plan, w: Workload, made: list[Candidate], drops: list[Dropped]) -> list[Candidate]:
    """With policy.unvalidated: exclude, the configs whose goodput some published result validates (measured ones
    always), before dominance is judged: an excluded config dominates nothing."""
    if plan.policy.unvalidated != "exclude":
        return made
    for c in made:
        if c.unvalidated:
            v = c.validation
            assert v is not None
            drops.append(Dropped(w.name, c.label, "unvalidated",
                                 f"an estimate of {v.group}, {v.points} published points behind it "
                                 "(policy.unvalidated: exclude)"))
    return [c for c in made if not c.unvalidated]


def _with_hourly(plan: Plan, w: Workload, configs: list[Candidate], demand: dict[DayHour, float], cache: dict,
                 drops: list[Dropped], prune: bool = True) -> list[Candidate]:
    """Keep the configs no other config of the offer beats on both GPUs per replica and goodput
    (exact: fewer GPUs a replica and more goodput never need more GPUs at any hour, nor GPU-hours
    for a batch day), then give the survivors their hourly replicas and GPUs."""
    doubt = w.kind in ("interactive", "batch") and goodput_varies(plan)
    if not prune:
        kept, dominated = configs, []
    elif doubt:  # scenarios scale estimated goodput, not measured: compare like with like
        kept, dominated = [], []
        for src in sorted({c.goodput_source for c in configs}):
            k, d = pareto_configs([c for c in configs if c.goodput_source == src])
            kept += k
            dominated += d
    else:
        kept, dominated = pareto_configs(configs)
    drops.extend(Dropped(w.name, c.label, "dominated",
                         f"dominated by {by.label}: no more GPUs per replica, no less goodput")
                 for c, by in dominated)
    if w.kind != "interactive":
        return kept
    out = []
    for c in kept:
        dem = demand
        if doubt and c.goodput_source == "estimated":  # a scenario's goodput g: the replicas of demand ÷ g
            dem = {(d, h): v / goodput_factor(plan, c.goodput_source, d) for (d, h), v in demand.items()}
        reps, gpus = _hourly(plan, w, c.goodput, c.gpu_fraction, dem, cache, scaled=dem is not demand,
                             prefill_groups=c.prefill_groups)
        out.append(evolved(c, replicas=reps, gpus=gpus,
                           commit_gpus=_commit_gpus(plan, w, c, gpus, dem, cache, dem is not demand)))
    return out


def _commit_gpus(plan: Plan, w: Workload, c: Candidate, gpus: dict[DayHour, int], demand: dict[DayHour, float],
                 cache: dict, scaled: bool) -> int | None:
    """policy.size_commitments_at: low — the GPUs the config needs at its busiest hour were its goodput at the high
    end of its band (estimate ÷ (1 + error_p10)): what reservations and purchases may hold for it (Candidate.commit_gpus).
    A measured config, or an estimate without a band, is held to its own need."""
    if plan.policy.size_commitments_at != "low":
        return None
    ratio = goodput_ratio(c.validation, "high") if c.validation is not None and c.goodput_source == "estimated" \
        else None
    if ratio is None:
        return max(gpus.values(), default=0)
    _reps, low = _hourly(plan, w, c.goodput * ratio, c.gpu_fraction, demand, cache, scaled=scaled,
                         prefill_groups=c.prefill_groups)
    return max(low.values(), default=0)


class _Recorded(set):
    """The `seen` set of a recording run of _offer_configs: it has seen nothing, and notes which of the drops
    went through _drop_once (those a replay checks against the workload's own `seen`)."""

    def __init__(self, drops: list[Dropped]) -> None:
        super().__init__()
        self.drops, self.once = drops, {}

    def __contains__(self, key: object) -> bool:
        return False

    def add(self, key: tuple[str, str]) -> None:  # type: ignore[override]
        self.once[len(self.drops)] = key  # the drop _drop_once appends next


TWIN_FIELDS_UNREAD = {"name", "demand", "api", "batch", "team", "cost_center", "tenants"}
"""Workload keys _offer_configs never reads (its kind, which batch decides, is keyed apart)."""


def _twin_key(cache: dict, w: Workload) -> tuple | None:
    """What _offer_configs reads of a workload besides its name (None: it is not to be shared, its measured
    points and their warnings being its own); once per build for each workload object."""
    held = cache.get(("twin-key", id(w)))
    if held is None or held[0] is not w:
        key = None if w.measured else (w.kind, repr(w.model_dump(exclude=TWIN_FIELDS_UNREAD)))
        held = cache[("twin-key", id(w))] = (w, key)
    return held[1]


def _twin_configs(plan: Plan, w: Workload, model: Model, offer: Offer, catalog: Catalog,
                  demand: dict[DayHour, float], cache: dict, drops: list[Dropped],
                  seen_drop: set[tuple[str, str]], notes: list[str]) -> list[Candidate]:
    """_offer_configs, once per build for workloads alike in all it reads (_twin_key) on each offer: a twin's
    configs are the first one's under its own name and keys, and its drops the first one's, each under its own
    name and deduplicated against its own (_drop_once)."""
    twin = _twin_key(cache, w)
    if twin is None:
        return _offer_configs(plan, w, model, offer, catalog, demand, cache, drops, seen_drop, notes)
    key = ("offer-configs", twin, offer.id)
    if key not in cache:
        log: list[Dropped] = []
        recorded = _Recorded(log)
        said: list[str] = []
        made = _offer_configs(plan, w, model, offer, catalog, demand, cache, log, recorded, said)
        cache[key] = (w.name, made, log, recorded.once, said)
    first, made, log, once, said = cache[key]
    for note in said:
        if note not in notes:
            notes.append(note)
    for i, d in enumerate(log):
        if i in once:
            if once[i] in seen_drop:
                continue
            seen_drop.add(once[i])
        drops.append(d if d.workload == w.name else evolved(d, workload=w.name))
    if first == w.name:
        return list(made)
    cut = len(first)
    return [evolved(c, key=w.name + c.key[cut:], workload=w.name) for c in made]


def _offer_configs(plan: Plan, w: Workload, model: Model, offer: Offer, catalog: Catalog,
                   demand: dict[DayHour, float], cache: dict, drops: list[Dropped],
                   seen_drop: set[tuple[str, str]], notes: list[str]) -> list[Candidate]:
    """Every layout of every precision the workload accepts on one offer: tensor parallel (in the
    scale-up domain, or over PCIe), pipeline stages when no tensor-parallel replica fits, experts
    over GPUs for MoE models, MIG slices for small pools, and disaggregated prefill/decode. A measured
    point the memory model contradicts adds its warning to `notes` (once per accelerator's option)."""
    cands: list[Candidate] = []
    acc = catalog.accelerators[offer.accelerator]
    params = catalog.estimator
    families = set(w.parallelism)
    tps = w.tp or configs.tp_degrees(acc, offer)
    for prec_id in w.precisions:
        prec = catalog.precisions[catalog.precision_id(prec_id)]
        # An accelerator of unknown generation runs what the workload lists (a measurement shows it).
        reason = None if acc.generation == "other" else roofline.why_not_native(prec, acc)
        if reason:
            _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id), "native", reason)
            continue
        # the allowed engines that run this generation and precision, by parallelism family
        runs = {f: engines.runnable(plan, catalog, w, acc.generation, prec.id, f) for f in vocab.PARALLELISM}
        if not any(ok for ok, _why in runs.values()):
            _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id), "engine", runs["tp"][1] or "")
            continue
        made: list[tuple[Layout, configs.Sized]] = []

        def attempt(layout: Layout, mig: MigProfile | None = None) -> None:
            ok, no_engine = runs[layout.family]
            if not ok:
                _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id, layout=layout.family), "engine",
                           no_engine or "")
                return
            why = configs.why_not_layout(acc, offer, layout, params)
            if why is not None:
                if "scale-up domain of" in why[1]:  # the accelerator's limit, whatever the offer
                    _drop_once(drops, seen_drop, w, configs.describe_option(acc, prec, layout, mig), *why)
                else:
                    label = None if layout.family == "tp" else layout.label
                    drops.append(Dropped(w.name, vocab.config_label(offer.id, prec.id, layout.tp, layout=label), *why))
                return
            sized, by_class = _size_mix(plan, w, model, acc, offer, prec, layout, mig, cache, params, ok,
                                        catalog.models.get(_draft_id(w) or ""))
            if isinstance(sized, Dropped):
                _drop_once(drops, seen_drop, w, configs.describe_option(acc, prec, layout, mig), sized.family,
                           sized.reason, sized)
                return
            if sized.warning is not None and sized.warning not in notes:
                notes.append(sized.warning)
            cand = _candidate(w, offer, acc, prec, layout, mig, sized, model, params, cache=cache)
            if by_class is not None:
                cand = replace(cand, goodput=by_class[0], class_goodput=by_class[1], class_sources=by_class[2],
                               goodput_source="measured" if set(by_class[2]) == {"measured"} else "estimated")
            cands.append(cand)
            if mig is None:
                made.append((layout, sized))

        if "tp" in families:
            for tp in tps:
                attempt(Layout("tp", tp=tp))
        usable_tps = [t for t in tps if configs.why_not_layout(acc, offer, Layout("tp", tp=t), params) is None]
        if "pp" in families and not made and usable_tps:  # stages across nodes only for what no TP group holds
            for pp in (2, 4, 8):
                attempt(Layout("pp", tp=max(usable_tps), pp=pp))
        if "ep" in families and _is_moe(model):
            for stage in _ep_sizes(acc, offer):
                attempt(Layout("ep", tp=1, dp=stage))
        if w.pool in plan.policy.mig_pools and (w.tp is None or 1 in w.tp):
            for mig in acc.mig_profiles:
                if mig.instances_per_gpu >= 2:  # a whole-GPU profile is the tp1 config
                    attempt(Layout("tp", tp=1), mig)
        if "disagg" in families and w.kind == "interactive" and (w.slo.ttft_ms or w.slo.tpot_ms) and _is_mix(w):
            _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id, layout="disagg"), "filter",
                       "disaggregated prefill/decode is sized at one request size; a tokens.mix sizes each class")
        elif "disagg" in families and w.kind == "interactive" and (w.slo.ttft_ms or w.slo.tpot_ms):
            if not runs["disagg"][0]:
                _drop_once(drops, seen_drop, w, vocab.option_label(acc.id, prec.id, layout="disagg"), "engine",
                           runs["disagg"][1] or "")
            else:
                cands.extend(_disaggregated(plan, w, model, acc, offer, prec, made, cache, params, drops, seen_drop,
                                            runs["disagg"][0], catalog.models.get(_draft_id(w) or "")))
    return cands


def _tuned(plan: Plan, cache: dict, params: EstimatorParams, names: list[str | None], acc: Accelerator,
           prec: Precision, model: Model) -> list[tuple[str | None, EstimatorParams, str | None]]:
    """engines.tuned, each engine's parameters as the plan sizes with them: under policy.estimate_error headroom, an
    estimate whose group (the engine's among them) has a band of its own is planned at that band's low end, not the
    global P10 (inputs.estimates.group_headroom); the cache key says so."""
    out = []
    for engine, p, tuning in engines.tuned(cache, params, names, acc.generation):
        k = estimates.group_headroom(plan, p, _validation(cache, p, acc, prec, model, engine).error_p90)
        if k != 1.0:
            p = p.model_copy(update={"goodput_factor": p.goodput_factor * k})
            tuning = f"{tuning or 'defaults'}@{k!r}"
        out.append((engine, p, tuning))
    return out


def _is_moe(model: Model) -> bool:
    return bool(model.experts and model.active_experts and model.experts > model.active_experts)


def _ep_sizes(acc: Accelerator, offer: Offer) -> list[int]:
    """Expert groups: powers of two from 4 inside the scale-up domain, the whole domain when it is not
    one (a GB200 NVL72 rack: ep72, experts over all 72 GPUs), and whole machines (up to four) across the
    inter-node network."""
    domain, machine = configs.offer_domain(acc, offer), offer.max_tp
    sizes = [s for s in (4, 8, 16, 32, 64) if s <= domain or (s % machine == 0 and s <= 4 * machine)]
    if domain > 4 and domain & (domain - 1) and domain <= configs.MAX_REPLICA_GPUS:
        sizes = sorted(set(sizes) | {domain})
    return sizes


def _disaggregated(plan: Plan, w: Workload, model: Model, acc: Accelerator, offer: Offer, prec: Precision,
                   made: list[tuple[Layout, configs.Sized]], cache: dict, params: EstimatorParams,
                   drops: list[Dropped], seen_drop: set[tuple[str, str]], names: list[str | None],
                   draft: Model | None = None) -> list[Candidate]:
    """Prefill on the smallest group that holds the model, decode on the two groups that deliver the
    most goodput per GPU: the pairs a disaggregated deployment would try first (on the allowed engine, of
    `names`, that gives the pair the most goodput)."""
    estimated = [(lay, s) for lay, s in made if s.source == "estimated"]
    if not estimated:
        return []
    prefill = min(estimated, key=lambda ls: (ls[0].gpus, ls[0].key))[0]
    decodes = sorted(estimated, key=lambda ls: (-ls[1].goodput / ls[1].gpus, ls[0].key))[:2]
    out = []
    for decode, _s in decodes:
        why = configs.why_not_pair(acc, offer, prefill, decode, params)
        if why is not None:  # the offer's own limit: named by the offer, as why_not_layout's are
            drops.append(Dropped(w.name, vocab.config_label(
                offer.id, prec.id, decode.tp, layout=f"disagg prefill {prefill.label} + decode {decode.label}"), *why))
            continue
        sized: configs.Sized | Dropped | None = None
        for engine, p, tuning in _tuned(plan, cache, params, names, acc, prec, model):
            # what the offer gives the pair: its domain, machine and scale-out network (size_disaggregated)
            key = ("disagg", _sizing_key(cache, w), acc.id, configs.offer_domain(acc, offer), offer.max_tp,
                   configs.offer_scale_out(acc, offer, params), prec.id, prefill, decode, tuning)
            if key not in cache:
                cache[key] = configs.size_disaggregated(plan, w, model, acc, offer, prec, prefill, decode, p,
                                                        cache, draft, tuning)
            sized = _better(sized, cache[key], engine)
        option = vocab.option_label(acc.id, prec.id, layout=f"disagg prefill {prefill.label} + decode {decode.label}")
        if isinstance(sized, Dropped):
            _drop_once(drops, seen_drop, w, option, sized.family, sized.reason, sized)
            continue
        assert sized is not None
        out.append(_candidate(w, offer, acc, prec, Layout("disagg", tp=decode.tp, pp=decode.pp, dp=decode.dp),
                              None, sized, model, params, key_suffix=f"disagg-p{prefill.key}-d{decode.key}",
                              cache=cache))
    return out


def _better(best: configs.Sized | Dropped | None, sized: configs.Sized | Dropped,
            engine: str | None) -> configs.Sized | Dropped:
    """The better of two sizings of one config on different engines: a measured point whatever the engine (it
    names its own), else the most goodput (a tie keeps the earlier, preferred engine); a drop only when
    nothing is better."""
    if isinstance(sized, configs.Sized) and sized.source != "measured" and sized.engine != engine:
        sized = evolved(sized, engine=engine)
    if not isinstance(best, configs.Sized):
        return best if best is not None and isinstance(sized, Dropped) else sized
    if best.source == "measured" or isinstance(sized, Dropped):
        return best
    return sized if sized.source == "measured" or sized.goodput > best.goodput else best


def _size_engines(plan: Plan, w: Workload, model: Model, acc: Accelerator, offer: Offer, prec: Precision,
                  layout: Layout, mig: MigProfile | None, cache: dict, params: EstimatorParams,
                  names: list[str | None], draft: Model | None = None) -> configs.Sized | Dropped:
    """A config sized on each allowed engine whose parameters differ (engines without a tuning of their own
    share one estimate), keeping the engine with the most goodput (engines.tuned, _better). Cached per build
    by what it reads (workloads alike in _sizing_key, offers alike in their domain and network)."""
    key = ("engines", _sizing_key(cache, w), acc.id, prec.id, layout, mig.name if mig else None,
           configs.offer_domain(acc, offer), configs.offer_scale_out(acc, offer, params), tuple(names),
           draft.id if draft else None)
    sized = cache.get(key)
    if sized is None:
        for engine, p, tuning in _tuned(plan, cache, params, names, acc, prec, model):
            one = _named(cache, _size(plan, w, model, acc, offer, prec, layout, mig, cache, p, draft, tuning), engine)
            sized = _better(sized, one, engine)
            if isinstance(sized, configs.Sized) and sized.source == "measured":
                break
        assert sized is not None
        cache[key] = sized
    if isinstance(sized, Dropped) and sized.workload != w.name:
        return evolved(sized, workload=w.name)  # another workload's twin was sized first: the same reason
    return sized


def _named(cache: dict, sized: configs.Sized | Dropped, engine: str | None) -> configs.Sized | Dropped:
    """An estimated sizing as `engine`'s (what _better names it), once per build for each cached sizing and engine:
    workloads alike share the cached sizing, and copying it for each was a twentieth of building the candidates."""
    if not isinstance(sized, configs.Sized) or sized.source == "measured" or sized.engine == engine:
        return sized
    key = ("named", id(sized), engine)
    held = cache.get(key)
    if held is None or held[0] is not sized:  # (the sizing is kept with its copy: its id is not reused)
        held = cache[key] = (sized, evolved(sized, engine=engine))
    return held[1]


def _is_mix(w: Workload) -> bool:
    """A workload with more than one request-size class (tokens.mix)."""
    return w.tokens is not None and w.tokens.mix is not None and len(w.tokens.mix) > 1


def _class_workload(w: Workload, size: SizeClass | None) -> Workload:
    """The workload as one request size sees it: that class's mean sizes and the measured points that hold
    there (a point of that class wins over a point for every class at the same layout); None: the mix's
    means with the points for every class."""
    if size is None:
        return w.model_copy(update={"measured": [m for m in w.measured if m.input is None]})
    own = {m.layout_key[:7] for m in w.measured if m.input is not None and m.applies_to(size.input, size.output)}
    points = [m for m in w.measured if m.applies_to(size.input, size.output)
              and (m.input is not None or m.layout_key[:7] not in own)]
    return w.model_copy(update={"tokens": Tokens(input=size.input, output=size.output), "measured": points})


def _size_mix(plan: Plan, w: Workload, model: Model, acc: Accelerator, offer: Offer, prec: Precision,
              layout: Layout, mig: MigProfile | None, cache: dict, params: EstimatorParams,
              names: list[str | None], draft: Model | None = None
              ) -> tuple[configs.Sized | Dropped, tuple[float, tuple[float, ...], tuple[str, ...]] | None]:
    """A config sized at the workload's sizes; over a tokens.mix, at each class's sizes too (physics unchanged:
    the roofline at those sizes, or the class's measured point). Returns the sizing the candidate is described
    by and, for a mix, (goodput over the mix, each class's goodput, each class's source): the goodput over the
    mix is the harmonic mean of the classes' weighted by their output tokens, the goodput of one config serving
    every class (split: by_size also keeps a config some class cannot use: then over the classes it serves;
    split: none and any send every class to each config, so a config must serve them all).
    A class the config cannot serve has goodput 0."""
    if not _is_mix(w):
        return _size_engines(plan, w, model, acc, offer, prec, layout, mig, cache, params, names, draft), None
    assert w.tokens is not None
    per = [_size_engines(plan, _class_workload(w, b), model, acc, offer, prec, layout, mig, cache, params, names,
                         draft) for b in w.tokens.classes()]
    goodputs = tuple(p.goodput if isinstance(p, configs.Sized) else 0.0 for p in per)
    sources = tuple(p.source if isinstance(p, configs.Sized) else "estimated" for p in per)
    shares = w.tokens.output_shares()
    served = [(s, g) for s, g in zip(shares, goodputs) if g > 0]
    whole = w.split_mode(plan.policy) != "by_size"  # none and any: every class on each config
    if not served or (whole and len(served) < len(goodputs)):
        first = next(p for p in per if isinstance(p, Dropped)) if any(isinstance(p, Dropped) for p in per) else per[0]
        return first, None
    mean = _size_engines(plan, _class_workload(w, None), model, acc, offer, prec, layout, mig, cache, params,
                         names, draft)
    shown = mean if isinstance(mean, configs.Sized) else next(p for p in per if isinstance(p, configs.Sized))
    goodput = sum(s for s, _g in served) / sum(s / g for s, g in served)
    return shown, (goodput, goodputs, sources)


def _drop_once(drops: list[Dropped], seen: set[tuple[str, str]], w: Workload, option: str,
               family: str, reason: str, sized: Dropped | None = None) -> None:
    if (option, reason) not in seen:
        seen.add((option, reason))
        drops.append(Dropped(w.name, option, family, reason, sized.ttft_ms if sized else None,
                             sized.tpot_ms if sized else None))


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


def _candidate(w: Workload, offer: Offer, acc: Accelerator, prec: Precision, layout: Layout,
               mig: MigProfile | None, sized: configs.Sized, model: Model, params: EstimatorParams,
               key_suffix: str | None = None, cache: dict | None = None) -> Candidate:
    mig_name = mig.name if mig else None
    key = f"{w.name}/{offer.id}/{prec.id}/{key_suffix or layout.key}" + (f"/{mig_name}" if mig else "")
    fraction = (1.0 / mig.instances_per_gpu) if mig else sized.gpus
    f = sized.fit
    return Candidate(
        key=key, workload=w.name, pool=w.pool, kind=w.kind, offer=offer.id, accelerator=acc.id,
        precision=prec.id, tp=layout.tp, mig=mig_name, gpu_fraction=fraction, goodput=sized.goodput,
        goodput_source=sized.source, bound=sized.bound, weights_gb=f.weights_gb,
        kv_gb_per_seq=f.kv_gb_per_seq, kv_concurrency=f.kv_concurrency, needed_concurrency=sized.needed,
        total_gb=f.total_gb, reserve_gb=f.reserve_gb, free_gb=f.free_gb, batch=sized.batch,
        ttft_ms=sized.ttft_ms, tpot_ms=sized.tpot_ms, family=layout.family, layout=sized.layout, pp=layout.pp,
        ep=layout.stage_gpus if layout.family == "ep" else 1, kv_copies=f.kv_copies, calibrated=sized.calibrated,
        ttft_at_load_ms=sized.ttft_at_load_ms, prefill_groups=sized.prefill_groups, engine=sized.engine,
        validation=_validation(cache if cache is not None else {}, params, acc, prec, model, sized.engine,
                               measured=sized.source == "measured"))


def _validation(cache: dict, params: EstimatorParams, acc: Accelerator, prec: Precision, model: Model,
                engine: str | None, measured: bool = False) -> Validation:
    """validation_of, once per build for each accelerator, precision, model, engine and source: it reads only
    those and the estimator's validation table (the same table for every engine's parameters), and looking up its
    pooled groups costs more than sizing many configs does."""
    table = params.validation
    key = ("validation", id(table), acc.id, prec.id, model.id, engine, measured)
    held = cache.get(key)
    if held is None or held[0] is not table:  # (the table is kept with its answer: its id is not reused)
        held = cache[key] = (table, validation_of(params, acc, prec, model, engine, measured=measured))
    return held[1]


def _hourly(plan: Plan, w: Workload, goodput: float, fraction: float, demand: dict[DayHour, float],
            cache: dict, scaled: bool = False, prefill_groups: tuple[float, int] | None = None
            ) -> tuple[dict[DayHour, rep.Replicas], dict[DayHour, int]]:
    """Replicas and GPUs at every hour; shared by every offer of the same accelerator (`scaled`: the
    demand divided by scenarios' goodput factors, for an estimated config)."""
    key = ("hourly", w.name, goodput, fraction, scaled, prefill_groups)
    if key not in cache:
        pol = plan.policy
        reps: dict[DayHour, rep.Replicas] = {}
        gpus: dict[DayHour, int] = {}
        by_demand: dict[float, tuple[rep.Replicas, int]] = {}
        for dh, dem in demand.items():
            if dem not in by_demand:
                r = rep.replicas(dem, goodput, pol.occupancy, pol.spares, pol.rollout_fraction)
                by_demand[dem] = (r, whole_gpus(r.total, fraction, prefill_groups))
            reps[dh], gpus[dh] = by_demand[dem]
        cache[key] = (reps, gpus)
    return cache[key]


def _size(plan: Plan, w: Workload, model: Model, acc: Accelerator, offer: Offer, prec: Precision, layout: Layout,
          mig: MigProfile | None, cache: dict, params: EstimatorParams,
          draft: Model | None = None, tuning: str | None = None) -> configs.Sized | Dropped:
    """Memory fit and goodput of a config; cached per build, since offers repeat accelerators (and
    offers with the same domain and network give a layout the same links), and workloads repeat
    what sizing reads of them (model, tokens, context, SLO, KV precision: _sizing_key; `tuning`: an engine's
    parameters, engines.tuned)."""
    domain, out = configs.offer_domain(acc, offer), configs.offer_scale_out(acc, offer, params)
    link_key = ("links", acc.id, layout, domain, out, tuning)
    link = cache.get(link_key)
    if link is None:
        link = cache[link_key] = configs.offer_links(acc, offer, layout, params)
    # offers whose domain and network give the layout the same links size it alike (configs.size reads no more)
    key = ("size", _sizing_key(cache, w), acc.id, prec.id, layout, mig.name if mig else None, link, tuning)
    if key not in cache:
        cache[key] = configs.size(plan, w, model, acc, prec, layout, mig, link, params, cache, draft, tuning)
    sized = cache[key]
    if isinstance(sized, Dropped) and sized.workload != w.name:
        return evolved(sized, workload=w.name)  # another workload's twin was sized first: the same reason
    return sized


def _sizing_key(cache: dict, w: Workload) -> tuple:
    """All configs.size reads of a workload besides its name: workloads alike in these size alike.
    A workload with measured goodput keys on its name (its measurements are its own). Once per build for each
    workload object (kept with its key: its id is not reused), as a number: the cache keys built on it hash it
    for every config."""
    held = cache.get(("sizing-key", id(w)))
    if held is None or held[0] is not w:
        numbers = cache.setdefault("sizing-keys", {})
        held = cache[("sizing-key", id(w))] = (w, ("sizing", numbers.setdefault(_sizing_key_of(w), len(numbers))))
    return held[1]


def _sizing_key_of(w: Workload) -> tuple:
    if w.measured:  # (with a tokens.mix, each class sizes apart with the points that hold there)
        return ("workload", w.name, w.tokens.input if w.tokens else None, w.tokens.output if w.tokens else None,
                tuple(m.layout_key for m in w.measured))
    tokens, slo = w.tokens, w.slo
    return (w.model, w.context, w.kv_precision, tokens.input if tokens else None, tokens.output if tokens else None,
            slo.ttft_ms, slo.tpot_ms, slo.percentile, configs.serving(w), _draft_id(w))


def _draft_id(w: Workload) -> str | None:
    return w.speculative.draft_model if w.speculative is not None else None


