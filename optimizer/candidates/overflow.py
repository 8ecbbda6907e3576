"""API overflow: a fleet ceiling per config above which the gateway sends the hour's excess to the API,
and the API-only config (build vs buy)."""

from __future__ import annotations

import re

from optimizer.candidates.types import Candidate, DayHour, evolved
from optimizer.inputs import prices
from optimizer.inputs.scenarios import goodput_factor
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.physics import replicas as rep


def has_overflow(w: Workload) -> bool:
    return w.api is not None and w.api.max_share > 0


def overflow_levels(plan: Plan, w: Workload, c: Candidate, demand: dict[DayHour, float],
                    cache: dict | None = None) -> list[Candidate]:
    """The config at every fleet ceiling the API share allows.

    The fleet is sized for at most B base replicas; above B·γ·occupancy the gateway sends the
    hour's excess to the API ("overflow when everything is full"). B runs down from the
    no-overflow peak while each day type's spilled tokens stay within api.max_share of its
    tokens. Each level is a config with constant hourly GPUs and a constant API cost.
    """
    cache = {} if cache is None else cache
    key = ("levels", w.name, c.goodput, c.gpu_fraction, c.goodput_source)
    if key not in cache:
        cache[key] = _levels(plan, w, c, demand)
    return [c] + [evolved(c, key=f"{c.key}{CEILING}{b}", replicas=reps, gpus=gpus, ceiling_replicas=b,
                          api_output_tokens_per_day=spill, api_cost=cost)
                  for b, reps, gpus, spill, cost in cache[key]]


CEILING = "/cap"
"""A ceiling level's key is its config's key, this, and the ceiling's base replicas."""


def without_ceiling(key: str) -> str:
    """A config's key without its overflow ceiling: the same offer, precision and parallelism."""
    return re.sub(re.escape(CEILING) + r"\d+$", "", key)


SPLIT_KEYS = " + "
"""Joins the configs of a workload split among several into one key (a baseline's choice): config keys hold none."""


def split_key(keys) -> str:
    """The configs of a split workload as one key, in a stable order."""
    return SPLIT_KEYS.join(sorted(keys))


def keys_of(key: str) -> list[str]:
    """The configs a key names: one, or each of a split workload's."""
    return key.split(SPLIT_KEYS)


def same_hardware(a: str, b: str) -> bool:
    """Two keys (one config's, or a split workload's configs') run the same offers, precisions and parallelism,
    whatever their API overflow ceilings."""
    return {without_ceiling(k) for k in keys_of(a)} == {without_ceiling(k) for k in keys_of(b)}


def ceiling_of(key: str) -> float:
    """A config key's API overflow ceiling in base replicas (no ceiling: infinite)."""
    tail = key[len(without_ceiling(key)):]
    return float(tail[len(CEILING):]) if tail else float("inf")


def ceiling_rate(plan: Plan, c: Candidate, day_type: str) -> float:
    """Output tokens/s one base replica takes on a day type before the gateway spills to the API: goodput ×
    occupancy, × the day type's scenario goodput multiplier when the goodput is estimated."""
    return c.goodput * plan.policy.occupancy * goodput_factor(plan, c.goodput_source, day_type)


def _levels(plan: Plan, w: Workload, c: Candidate, demand: dict[DayHour, float]) -> list[tuple]:
    assert w.api is not None
    pol = plan.policy
    days = plan.day_type_days()
    top = max(r.base for r in c.replicas.values())
    price = prices.api_output_token(w)
    out = []
    rate = {d: ceiling_rate(plan, c, d) for d in days}
    tokens_of = {d: sum(demand[(d, h)] for h in range(24)) for d in days}
    for b in range(top - 1, -1, -1):
        spill: dict[str, float] = {}
        ok = True
        for d in days:
            tokens, cap = tokens_of[d], b * rate[d]
            over = sum(max(0.0, demand[(d, h)] - cap) for h in range(24))
            if over > w.api.max_share * tokens * (1 + 1e-9):
                ok = False
                break
            spill[d] = over * 3600.0
        if not ok:
            break
        reps, gpus = {}, {}
        for dh, r in c.replicas.items():
            rr = rep.replicas_from_base(min(r.base, b), pol.spares, pol.rollout_fraction)
            reps[dh] = rr
            gpus[dh] = c.gpus_for(rr.total)
        cost = sum(days[d] * spill[d] for d in days) * price
        out.append((b, reps, gpus, spill, cost))
    return out


def api_candidate(plan: Plan, w: Workload, demand: dict[DayHour, float]) -> Candidate:
    days = plan.day_type_days()
    if w.kind == "batch":
        assert w.batch is not None
        per_day = {d: w.batch.output_tokens_per_day for d in days}
    else:
        per_day = {d: 3600.0 * sum(demand[(d, h)] for h in range(24)) for d in days}
    cost = sum(days[d] * per_day[d] for d in days) * prices.api_output_token(w)
    return Candidate(
        key=f"{w.name}/api", workload=w.name, pool=w.pool, kind="api", offer=None, accelerator=None,
        precision=None, tp=0, mig=None, gpu_fraction=0.0, goodput=0.0, goodput_source="api", bound=None,
        weights_gb=0.0, kv_gb_per_seq=0.0, kv_concurrency=0, needed_concurrency=0, total_gb=0.0,
        reserve_gb=0.0, free_gb=0.0, batch=None, ttft_ms=None, tpot_ms=None,
        api_output_tokens_per_day=per_day, api_cost=cost)
