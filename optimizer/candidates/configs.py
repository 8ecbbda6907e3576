"""One config of one workload on one offer: how its replica spreads over the GPUs (the layouts an
offer allows), whether it fits, and what goodput it delivers at the SLO."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, TypeVar

from optimizer.candidates.types import Dropped, GoodputSource
from optimizer.inputs.schema.catalog import (
    Accelerator,
    MigProfile,
    Model,
    Offer,
    Precision,
)
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.inputs.schema.plan import Measured, Plan, Workload
from optimizer.physics import memory, roofline
from optimizer.physics import replicas as rep
from optimizer.physics.layout import Layout, Links, links
from optimizer.units import GB
from optimizer.vocab import option_label

KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
MAX_REPLICA_GPUS = 72
"""Largest replica the builder considers (pipeline stages × tensor parallel, or an expert group)."""


def offer_domain(acc: Accelerator, offer: Offer) -> int:
    """The scale-up (NVLink) domain a customer of this offer gets: the offer's word, else the
    accelerator's domain within the largest machine sold."""
    if offer.scale_up_gpus is not None:
        return offer.scale_up_gpus
    return min(acc.scale_up_gpus, offer.max_tp)


def offer_scale_out(acc: Accelerator, offer: Offer, params: EstimatorParams) -> float:
    """Inter-node bandwidth per GPU, GB/s one direction (0: replicas stay inside one machine)."""
    if offer.scale_out_gb_s is not None:
        return offer.scale_out_gb_s
    return acc.scale_out_gb_s if acc.scale_out_gb_s is not None else params.fallback_scale_out_gb_s


def tp_degrees(acc: Accelerator, offer: Offer) -> list[int]:
    """Powers of two up to the largest tensor-parallel group the offer allows: its scale-up domain,
    or the whole machine over PCIe when the accelerator has no GPU link."""
    limit = offer_domain(acc, offer)
    if acc.topology == "pcie":
        limit = max(limit, offer.max_tp)
    out, t = [], 1
    while t <= limit:
        out.append(t)
        t *= 2
    return out


def offer_links(acc: Accelerator, offer: Offer, layout: Layout, params: EstimatorParams) -> Links:
    return links(acc, layout, params, domain=offer_domain(acc, offer), scale_out_gb_s=offer_scale_out(acc, offer, params))


def why_not_layout(acc: Accelerator, offer: Offer, layout: Layout, params: EstimatorParams) -> tuple[str, str] | None:
    """(family, reason) when the offer cannot host a replica of this layout; None when it can."""
    machine, node = offer.max_tp, offer.gpus_per_node
    if layout.tp > acc.scale_up_gpus and acc.topology != "pcie":
        return "scale-up", f"TP {layout.tp} is beyond the scale-up domain of {acc.id} ({acc.scale_up_gpus} GPUs)"
    if layout.tp > offer_domain(acc, offer) and acc.topology != "pcie":
        return "scale-up", (f"TP {layout.tp} is beyond the NVLink domain the offer gives "
                            f"({offer_domain(acc, offer)} GPUs)")
    if layout.tp > machine:
        return "scale-up", f"TP {layout.tp} exceeds the largest machine the offer sells ({machine} GPUs)"
    if layout.family == "tp":
        return None
    if layout.gpus > MAX_REPLICA_GPUS:
        return "scale-up", f"{layout.gpus} GPUs per replica is more than planopt considers ({MAX_REPLICA_GPUS})"
    if layout.stage_gpus > machine and layout.family != "ep":
        return "scale-up", f"a stage of {layout.stage_gpus} GPUs exceeds the largest machine ({machine} GPUs)"
    if layout.gpus > machine:
        if offer_scale_out(acc, offer, params) <= 0:
            return "network", (f"{layout.gpus} GPUs span machines of {machine}; the offer has no inter-node "
                               "network (scale_out_gb_s: 0)")
        if layout.gpus % node:
            return "scale-up", f"{layout.gpus} GPUs is not a whole number of {node}-GPU units"
    return None


def why_not_pair(acc: Accelerator, offer: Offer, prefill: Layout, decode: Layout,
                 params: EstimatorParams) -> tuple[str, str] | None:
    """("network", reason) when a disaggregated pair (one prefill group and one decode group) spans machines
    of an offer with no inter-node network to ship the KV between them; None when the offer can host it."""
    n, machine = prefill.gpus + decode.gpus, offer.max_tp
    if n > machine and offer_scale_out(acc, offer, params) <= 0:
        return "network", (f"prefill {prefill.label} + decode {decode.label} ({n} GPUs) span machines of "
                           f"{machine}; the offer has no inter-node network to carry the KV (scale_out_gb_s: 0)")
    return None


def pair_transfer_gb_s(acc: Accelerator, offer: Offer, prefill: Layout, decode: Layout,
                       params: EstimatorParams) -> float:
    """Per-GPU bandwidth, GB/s one direction, that ships a prompt's KV from a disaggregated pair's prefill
    group to its decode group: the machine's own links when the pair fits in one machine (its scale-up
    domain, else the host's PCIe), the offer's inter-node network when it spans machines (0: none,
    why_not_pair)."""
    n = prefill.gpus + decode.gpus
    if n <= offer_domain(acc, offer):
        return acc.scale_up_bandwidth_gb_s if acc.scale_up_bandwidth_gb_s is not None \
            else params.fallback_scale_up_gb_s
    if n <= offer.max_tp:
        return acc.pcie_gb_s if acc.pcie_gb_s is not None else params.fallback_scale_up_gb_s
    return offer_scale_out(acc, offer, params)


@dataclass(frozen=True)
class Sized:
    """What a config costs in memory and delivers in goodput on one accelerator (offer-independent
    apart from its links)."""

    fit: memory.Fit
    goodput: float
    source: GoodputSource
    bound: str | None
    batch: float | None
    """Mean sequences in flight at the SLO (fractional when an SLO limits it)."""
    ttft_ms: float | None
    tpot_ms: float | None
    needed: int
    gpus: float
    """GPUs per replica (a disaggregated replica's prefill share included, fractional)."""
    calibrated: bool = True
    ttft_at_load_ms: float | None = None
    layout: str | None = None
    """Shown in labels when the replica is more than one tensor-parallel group."""
    prefill_groups: tuple[float, int] | None = None
    """Disaggregated: (prefill groups per replica, GPUs per prefill group)."""
    warning: str | None = None
    """A measured point the memory model contradicts: both numbers (the measurement is kept)."""
    engine: str | None = None
    """The serving engine: the one the estimate ran at, or the one a measured point names."""


T = TypeVar("T")


def _memo(shared: dict | None, key: tuple, make: Callable[[], T]) -> T:
    """`make()`, kept in `shared` under `key` (a build's cache: its plan, catalog and estimator fixed)."""
    if shared is None:
        return make()
    if key not in shared:
        shared[key] = make()
    return shared[key]


def _fit(plan: Plan, w: Workload, model: Model, acc: Accelerator, prec: Precision, layout: Layout,
         mig: MigProfile | None, params: EstimatorParams, shared: dict | None, draft: Model | None = None,
         tuning: str | None = None) -> memory.Fit:
    """A replica's memory fit; the same for every workload of the model, context, KV precision and draft model
    (and engine `tuning`: the key of `params` when an engine's differ from the defaults)."""
    kv_elem, memory_gb = kv_bytes_of(w, prec), memory_gb_per_gpu(acc, mig)
    return _memo(shared, ("fit", model.id, prec.id, memory_gb, layout.gpus, layout.tp, layout.dp, w.context, kv_elem,
                          draft.id if draft else None, tuning),
                 lambda: memory.fit(model, prec, memory_gb, layout.gpus, w.context, plan.policy.memory_reserve,
                                    kv_elem, attention_tp=layout.tp, runtime_gb_per_gpu=params.runtime_gb,
                                    dense_copies=layout.dp, draft=draft))


def serving(w: Workload) -> tuple[roofline.Speculation | None, float]:
    """The workload's speculative decoding and prefix-cache hit rate, as roofline() takes them."""
    sp = w.speculative
    spec = None if sp is None else roofline.Speculation(sp.method, sp.draft_tokens, sp.acceptance)
    return spec, (w.prefix_cache.hit_rate if w.prefix_cache is not None else 0.0)


def _roofline(model: Model, prec: Precision, acc: Accelerator, layout: Layout, inp: int, out: int,
              mig: MigProfile | None, params: EstimatorParams, kv_elem: float, link: Links,
              shared: dict | None, w: Workload | None = None, draft: Model | None = None,
              prefill_only: bool = False, tuning: str | None = None) -> roofline.Roofline:
    """A replica's roofline; the same for every workload of the model, tokens, KV precision, speculative
    decoding and prefix cache, whatever its SLO (raises ValueError as roofline.roofline does, and keeps
    nothing then). A disaggregated pair's prefill group (`prefill_only`) drafts nothing. `tuning`: the key
    of `params` when an engine's differ from the defaults."""
    spec, hit = serving(w) if w is not None else (None, 0.0)
    spec = None if prefill_only else spec
    return _memo(shared, ("roofline", model.id, prec.id, acc.id, layout, mig.name if mig else None, inp, out,
                          kv_elem, link, spec, hit, draft.id if draft else None, tuning),
                 lambda: roofline.roofline(model, prec, acc, layout, inp, out, mig=mig, params=params,
                                           kv_bytes_per_elem=kv_elem, link=link, speculative=spec,
                                           draft_model=draft, prefix_hit_rate=hit))


def kv_bytes_of(w: Workload, prec: Precision) -> float:
    return prec.kv_bytes_per_elem if w.kv_precision is None else KV_BYTES[w.kv_precision]


def same_precision(name: str, prec: Precision) -> bool:
    return name == prec.id or name in prec.aliases


def _measured(w: Workload, acc: Accelerator, prec: Precision, layout: Layout, mig: MigProfile | None):
    ep = layout.stage_gpus if layout.family == "ep" else 1
    return [m for m in w.measured if m.accelerator == acc.id and same_precision(m.precision, prec)
            and m.tp == layout.tp and m.pp == layout.pp and m.ep == ep and m.mig == (mig.name if mig else None)]


def memory_gb_per_gpu(acc: Accelerator, mig: MigProfile | None) -> float:
    """Device memory per GPU (or per MIG slice), GB of 1e9 bytes."""
    if mig is None:
        return acc.memory_bytes_per_gpu / GB
    if mig.memory_fraction is not None and acc.memory_bytes is not None:
        return acc.memory_bytes * mig.memory_fraction / GB
    return mig.memory_gb


def size(plan: Plan, w: Workload, model: Model, acc: Accelerator, prec: Precision, layout: Layout,
         mig: MigProfile | None, link: Links, params: EstimatorParams, shared: dict | None = None,
         draft: Model | None = None, tuning: str | None = None) -> Sized | Dropped:
    """Memory fit and goodput of one replica. `Dropped.option` is left empty: the caller names it.
    `shared` (a build's cache) keeps the fits and rooflines, which workloads that differ only in their
    SLO share. `draft`: the speculative-decoding draft model the workload names; `tuning` names `params`
    when an engine's differ from the defaults."""
    kv_elem = kv_bytes_of(w, prec)
    f = _fit(plan, w, model, acc, prec, layout, mig, params, shared, draft, tuning)
    tokens, slo = w.tokens, w.slo
    assert tokens is not None
    if f.kv_concurrency < 1:  # not one sequence beside the weights: a point here names the wrong hardware
        return Dropped(w.name, "", "fit", _no_room(f))
    measured = _measured(w, acc, prec, layout, mig)
    if measured:  # a load test ran it: the KV capacity the model finds may question it, never drop it
        best = max(measured, key=lambda m: m.goodput_output_tokens_per_s)  # one per engine at most
        return _measured_sized(w, best, f, describe_option(acc, prec, layout, mig), layout)
    inp, out = int(round(tokens.input)), int(round(tokens.output))
    try:
        rl = _roofline(model, prec, acc, layout, inp, out, mig, params, kv_elem, link, shared, w, draft,
                       tuning=tuning)
        est = roofline.estimate(model, prec, acc, layout, inp, out, ttft_ms=slo.ttft_ms, tpot_ms=slo.tpot_ms,
                                percentile=slo.percentile, max_batch=f.kv_concurrency, mig=mig, params=params,
                                kv_bytes_per_elem=kv_elem, link=link, rl=rl)
    except ValueError as exc:
        return Dropped(w.name, "", "goodput", f"no measured goodput and no estimate ({exc}); add a `measured` entry")
    if est.goodput_output_tokens_per_s <= 0 or est.batch < 1:
        return _slo_miss(w, est)
    needed = rep.needed_concurrency(est.goodput_output_tokens_per_s, slo.tpot_ms)
    # est.batch is a mean occupancy (fractional when an SLO binds): the KV holds whole sequences
    needed = min(needed, math.ceil(est.batch)) if slo.tpot_ms is not None else needed
    at_load = rl.batch_at_throughput(plan.policy.occupancy * est.raw_goodput_output_tokens_per_s, est.batch)
    return Sized(f, est.goodput_output_tokens_per_s, "estimated", est.bound, est.batch, est.ttft_ms, est.tpot_ms,
                 needed, float(layout.gpus), est.calibrated, rl.ttft_s(at_load, slo.percentile) * 1e3,
                 layout=_shown(layout))


def _no_room(f: memory.Fit) -> str:
    copies = f" ({f.kv_copies:g} copies, one per GPU)" if f.kv_copies > 1 else ""
    return (f"does not fit: weights {f.weights_gb:.1f} GB + one sequence's KV {f.kv_gb_per_seq:.2f} GB{copies} > "
            f"usable {f.usable_gb:.1f} GB ({f.total_gb:.1f} GB less the {f.reserve_gb:.1f} GB reserve)")


def _measured_sized(w: Workload, m: Measured, f: memory.Fit, option: str, layout: Layout) -> Sized:
    """A measured point (whose weights fit), kept whatever KV capacity the memory model finds. The sequences it
    keeps in flight are goodput × TPOT (Little's law) at the TPOT the load test achieved where the point records
    it; at the target TPOT otherwise, an upper bound (the test ran at or below the target). Where the model's KV
    cache holds fewer, `warning` names both numbers."""
    goodput = m.goodput_output_tokens_per_s
    tpot = m.tpot_ms if m.tpot_ms is not None else w.slo.tpot_ms
    needed = rep.needed_concurrency(goodput, tpot)
    warning = None
    if f.kv_concurrency < needed:
        at = (f"at its achieved TPOT {m.tpot_ms:g} ms" if m.tpot_ms is not None else
              f"at the target TPOT {tpot:g} ms (the point records no achieved tpot_ms)")
        warning = (f"workload '{w.name}': the measured goodput on {option}, {goodput:,.4g} tok/s per replica, "
                   f"needs {needed:,} sequences in flight {at}; the memory model's KV cache holds "
                   f"{f.kv_concurrency:,} — the "
                   "measurement is kept (check the precision, context_tokens and policy.memory_reserve"
                   + ("" if m.tpot_ms is not None else ", or record the achieved tpot_ms") + ")")
    return Sized(f, goodput, "measured", None, None, m.ttft_ms, m.tpot_ms, needed, float(layout.gpus),
                 layout=_shown(layout), warning=warning, engine=m.engine)


def _shown(layout: Layout) -> str | None:
    return None if layout.family == "tp" else layout.label


def _slo_miss(w: Workload, est: roofline.Estimate) -> Dropped:
    slo = w.slo
    p = f"p{slo.percentile:g} "
    if est.bound == "tpot" and slo.tpot_ms is not None:
        target = f"{p}TPOT {slo.tpot_ms:g} ms"
    elif est.bound == "ttft" and slo.ttft_ms is not None:
        target = f"{p}TTFT {slo.ttft_ms:g} ms"
    else:
        target = "the SLO"
    return Dropped(w.name, "", "slo", f"cannot meet {target} even at batch 1 "
                                      f"(estimated TTFT {est.ttft_ms:.0f} ms, TPOT {est.tpot_ms:.1f} ms)",
                   ttft_ms=est.ttft_ms, tpot_ms=est.tpot_ms)


def size_disaggregated(plan: Plan, w: Workload, model: Model, acc: Accelerator, offer: Offer, prec: Precision,
                       prefill: Layout, decode: Layout, params: EstimatorParams,
                       shared: dict | None = None, draft: Model | None = None,
                       tuning: str | None = None) -> Sized | Dropped:
    """A disaggregated replica: one decode group plus the share of prefill groups its load needs (`shared`:
    as in `size`; the decode group's roofline is the one its own config was sized with)."""
    why = why_not_pair(acc, offer, prefill, decode, params)
    if why is not None:
        return Dropped(w.name, "", *why)
    kv_elem = kv_bytes_of(w, prec)
    f = _fit(plan, w, model, acc, prec, decode, None, params, shared, draft, tuning)
    if f.kv_concurrency < 1:
        return Dropped(w.name, "", "fit", f"the decode group ({decode.label}) holds no sequence")
    tokens, slo = w.tokens, w.slo
    assert tokens is not None
    transfer = pair_transfer_gb_s(acc, offer, prefill, decode, params)
    inp, out = int(round(tokens.input)), int(round(tokens.output))
    prefill_link, decode_link = offer_links(acc, offer, prefill, params), offer_links(acc, offer, decode, params)
    try:
        d = roofline.disaggregated(model, prec, acc, prefill, decode, inp, out, ttft_ms=slo.ttft_ms,
                                   tpot_ms=slo.tpot_ms, percentile=slo.percentile, max_batch=f.kv_concurrency,
                                   params=params, kv_bytes_per_elem=kv_elem, prefill_link=prefill_link,
                                   decode_link=decode_link, transfer_gb_s=transfer, load=plan.policy.occupancy,
                                   rooflines=(_roofline(model, prec, acc, decode, inp, out, None, params, kv_elem,
                                                        decode_link, shared, w, draft, tuning=tuning),
                                              _roofline(model, prec, acc, prefill, inp, 1, None, params, kv_elem,
                                                        prefill_link, shared, w, prefill_only=True, tuning=tuning)))
    except ValueError as exc:
        return Dropped(w.name, "", "goodput", f"no estimate ({exc})")
    if d is None:
        return Dropped(w.name, "", "slo", "no decode batch and prefill share meet the SLO together")
    est = d.decode
    needed = min(rep.needed_concurrency(est.goodput_output_tokens_per_s, slo.tpot_ms), math.ceil(est.batch))
    label = f"disagg: prefill {prefill.label} × {d.prefill_groups:g} + decode {decode.label}"
    return Sized(f, d.goodput_output_tokens_per_s, "estimated", "tpot" if slo.tpot_ms else est.bound, est.batch,
                 d.ttft_ms, est.tpot_ms, needed, d.gpus, d.calibrated, d.ttft_at_load_ms, layout=label,
                 prefill_groups=(d.prefill_groups, prefill.gpus))


def describe_option(acc: Accelerator, prec: Precision, layout: Layout, mig: MigProfile | None) -> str:
    return option_label(acc.id, prec.id, layout.tp, mig.name if mig else None,
                        layout=None if layout.family == "tp" else layout.label)
