"""Tiny random plans and their optimal horizon cost, found by enumeration: the oracle of
tests/optimize/test_bruteforce.py and of the tests that reuse its plans.

The enumerator derives candidates from the plan on its own (the plan reference's fit rule, replica
formula, nodes, caps, shared or per-pool reservations) and searches every choice of one config per
workload and every purchase; it imports nothing from the optimizer. No LP, no PuLP.
"""

from __future__ import annotations

import itertools
import math
import random
from functools import lru_cache


SEEDS = list(range(60))
NO_PLAN = (7, 25)
"""The seeds whose caps no purchase meets: the enumerator proves it, and test_optimizer_matches_brute_force
checks that the program agrees (InfeasiblePlan)."""
PLANNED = [s for s in SEEDS if s not in NO_PLAN][:30]
"""The first 30 seeds with a plan."""
BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
TIER_CHOICES = [
    ["on-demand"],
    ["reserved-1y", "on-demand"],
    ["reserved-1y", "on-demand"],
    ["reserved-1y", "reserved-3y", "on-demand"],
    ["reserved-1y", "on-demand", "spot"],
    ["on-demand", "spot"],
    ["reserved-1y", "spot"],
]


# --- random tiny plans ----------------------------------------------------------------------------


def _profile(rng: random.Random) -> list[float]:
    """24 values in a few flat blocks, so hours repeat and the enumeration stays small."""
    levels = [0.0, 0.25, 0.5, 0.75, 1.0]
    cuts = sorted(rng.sample(range(1, 24), rng.choice([1, 2, 3])))
    values: list[float] = []
    start = 0
    for cut in cuts + [24]:
        values += [rng.choice(levels)] * (cut - start)
        start = cut
    if max(values) == 0:
        values[rng.randrange(24)] = 1.0
    return values


def random_plan(seed: int) -> dict:
    """A tiny plan in which every workload has at least one candidate (retried until so)."""
    for attempt in range(100):
        plan = _random_plan(random.Random(seed * 1000 + attempt), seed)
        if all(candidates(plan).values()):
            return plan
    raise AssertionError(f"seed {seed}: no plan with candidates for every workload")


def _random_plan(rng: random.Random, seed: int) -> dict:
    n_acc = rng.choice([2, 3])
    accelerators = []
    for i in range(n_acc):
        acc = {"id": f"acc{i}", "memory_gb": rng.choice([24, 40, 48, 80])}
        if rng.random() < 0.2:
            acc["scale_up_gpus"] = rng.choice([1, 2])
        accelerators.append(acc)
    n_off = rng.choice([2, 3])
    tiers = rng.choice(TIER_CHOICES)
    offers = []
    for i in range(n_off):
        od = round(rng.uniform(1.0, 4.0), 2)
        prices: dict[str, float] = {"on-demand": od}
        if rng.random() < 0.7:
            prices["reserved-1y"] = round(od * rng.uniform(0.45, 0.85), 2)
        if rng.random() < 0.3:
            prices["reserved-3y"] = round(od * rng.uniform(0.35, 0.7), 2)
        if rng.random() < 0.5:
            prices["spot"] = round(od * rng.uniform(0.3, 0.7), 2)
        if rng.random() < 0.1:
            del prices["on-demand"]
        m = rng.choice([1, 2, 4])
        caps = {}
        for t in prices:
            if rng.random() < 0.35:
                caps[t] = rng.randint(1, 12)
        acc_id = f"acc{i % n_acc}"
        if offers and rng.random() < 0.35:
            # A near copy of the previous offer (same accelerator, a multiple of its node, no cheaper
            # or a little dearer): offer dominance and ties between offers get exercised.
            prev = offers[-1]
            acc_id = prev["accelerator"]
            m = min(4, prev["gpus_per_node"] * rng.choice([1, 2]))
            prices = {t: round(p * rng.choice([1.0, 1.0, 1.15, 0.9]), 2) for t, p in prev["price_per_gpu_hour"].items()}
            caps = {t: c for t, c in prev["available_gpus"].items() if rng.random() < 0.5}
        offers.append({"id": f"off{i}", "accelerator": acc_id, "provider": f"prov{i}",
                       "gpus_per_node": m, "price_per_gpu_hour": prices, "available_gpus": caps})

    occupancy = rng.choice([0.5, 0.6, 0.8])
    policy = {"occupancy": occupancy, "memory_reserve": 0.1, "spares": rng.choice([0, 1]),
              "rollout_fraction": rng.choice([0.0, 0.25, 0.5]), "tiers": tiers,
              "share_reserved_across_pools": rng.random() < 0.5, "mip_gap": 0, "time_limit_s": 600}
    if rng.random() < 0.5:
        day_types: dict | None = {"weekday": rng.randint(1, 3), "weekend": rng.randint(1, 2)}
        horizon = sum(day_types.values())
    else:
        day_types = None
        horizon = rng.randint(1, 3)

    models, workloads = [], []
    pools = ["interactive", "small"] if rng.random() < 0.6 else ["interactive"]
    for i in range(rng.choice([2, 3])):
        params = round(rng.uniform(4, 40), 1)
        models.append({"id": f"mod{i}", "params_b": params, "kv_gb_per_seq": round(rng.uniform(0.1, 1.5), 2)})
        precisions = rng.choice([["bf16"], ["bf16", "fp8"], ["fp8"], ["bf16", "fp8"]])
        base = rng.uniform(300, 1500)
        measured = []
        for acc in accelerators:
            for p in precisions:
                for tp in (1, 2, 4):
                    g = base * tp ** 0.85 * (1.4 if p == "fp8" else 1.0) * (acc["memory_gb"] / 48) ** 0.3
                    measured.append({"accelerator": acc["id"], "precision": p, "tp": tp,
                                     "goodput_output_tokens_per_s": round(g, 1)})
        w = {"name": f"w{i}", "model": f"mod{i}", "pool": rng.choice(pools), "precisions": precisions,
             "tokens": {"input": 1000, "output": 200}, "measured": measured,
             "demand": {"peak_output_tokens_per_s": round(base * occupancy * rng.uniform(0.5, 3.5), 1)}}
        if rng.random() < 0.5:
            w["slo"] = {"tpot_ms": rng.choice([10, 20, 40])}
        if rng.random() < 0.2:
            w["tp"] = rng.choice([[1], [1, 2], [2, 4]])
        if rng.random() < 0.2:
            w["accelerators"] = [rng.choice(accelerators)["id"]]
        if day_types and rng.random() < 0.6:
            w["demand"]["profile"] = {"weekday": _profile(rng), "weekend": _profile(rng)}
        else:
            w["demand"]["profile"] = _profile(rng)
        workloads.append(w)
    if rng.random() < 0.3:
        r = {"name": "research", "pool": "experiments", "reserve_gpus": {"count": rng.randint(1, 4)}}
        if rng.random() < 0.5:
            r["reserve_gpus"]["accelerators"] = [accelerators[0]["id"]]
        workloads.append(r)
    present = {w["pool"] for w in workloads}
    policy["spot_pools"] = sorted(p for p in ("interactive", "small", "experiments")
                                  if p in present and rng.random() < 0.6)
    plan = {"plan": f"random tiny plan {seed}", "horizon_days": horizon, "catalogs": [], "policy": policy,
            "models": models, "accelerators": accelerators, "offers": offers, "workloads": workloads}
    if day_types:
        plan["day_types"] = day_types
    return plan


# --- the enumerator ---------------------------------------------------------------------------------


def _ceil(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 else math.ceil(x)


def _floor(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 else math.floor(x)


def day_types_of(plan: dict) -> dict[str, int]:
    return dict(plan["day_types"]) if plan.get("day_types") else {"all": plan["horizon_days"]}


def _tiers(plan: dict, offer: dict, pool: str) -> list[str]:
    pol = plan["policy"]
    out = [t for t in pol["tiers"] if t in offer["price_per_gpu_hour"]]
    if pool not in pol.get("spot_pools", ["batch", "experiments"]):
        out = [t for t in out if t != "spot"]
    return out


def candidates(plan: dict) -> dict[str, list[tuple[str, tuple]]]:
    """workload -> [(offer id, GPUs at each (day type, hour) in sorted order)]."""
    pol = plan["policy"]
    accs = {a["id"]: a for a in plan["accelerators"]}
    models = {m["id"]: m for m in plan["models"]}
    dts = day_types_of(plan)
    out: dict[str, list[tuple[str, tuple]]] = {}
    for w in plan["workloads"]:
        cands = []
        for o in plan["offers"]:
            acc = accs[o["accelerator"]]
            if not _tiers(plan, o, w["pool"]):
                continue
            if "reserve_gpus" in w:
                allowed = w["reserve_gpus"].get("accelerators")
                if allowed is None or acc["id"] in allowed:
                    n = w["reserve_gpus"]["count"]
                    cands.append((o["id"], tuple([n] * (24 * len(dts)))))
                continue
            if w.get("accelerators") and acc["id"] not in w["accelerators"]:
                continue
            model = models[w["model"]]
            scale_up = acc.get("scale_up_gpus", 8)
            tps = w.get("tp") or [t for t in (1, 2, 4, 8) if t <= min(scale_up, o["gpus_per_node"])]
            for prec in w["precisions"]:
                for tp in tps:
                    if tp > scale_up or tp > o["gpus_per_node"]:
                        continue
                    free = tp * acc["memory_gb"] * (1 - pol["memory_reserve"]) - model["params_b"] * BYTES[prec]
                    kv_conc = _floor(free / model["kv_gb_per_seq"]) if free > 0 else 0
                    goodput = next(m["goodput_output_tokens_per_s"] for m in w["measured"]
                                   if m["accelerator"] == acc["id"] and m["precision"] == prec and m["tp"] == tp)
                    if kv_conc < 1:  # a measured point stands unless not one sequence fits beside the weights
                        continue
                    gpus = []
                    for d in dts:
                        prof = w["demand"]["profile"]
                        values = prof if isinstance(prof, list) else prof[d]
                        for h in range(24):
                            dem = w["demand"]["peak_output_tokens_per_s"] * values[h]
                            base = 0 if dem == 0 else _ceil(dem / (goodput * pol["occupancy"]))
                            total = base + pol["spares"] + _ceil(pol["rollout_fraction"] * (base + pol["spares"]))
                            gpus.append(total * tp)
                    cands.append((o["id"], tuple(gpus)))
        out[w["name"]] = cands
    return out


class OfferCost:
    """Cheapest way to buy what the pools ask of one offer, by exhaustive search over purchases."""

    def __init__(self, plan: dict, offer: dict, pools: tuple[str, ...]):
        pol = plan["policy"]
        self.m = offer["gpus_per_node"]
        self.prices = offer["price_per_gpu_hour"]
        self.caps = offer.get("available_gpus", {})
        self.days = list(day_types_of(plan).values())
        self.horizon = plan["horizon_days"]
        self.shared = pol["share_reserved_across_pools"]
        self.pools = pools
        tiers = {p: _tiers(plan, offer, p) for p in pools}
        self.od_ok = tuple("on-demand" in tiers[p] for p in pools)
        self.sp_ok = tuple("spot" in tiers[p] for p in pools)
        self.res_tiers = sorted((t for t in ("reserved-1y", "reserved-3y") if t in tiers[pools[0]]),
                                key=lambda t: self.prices[t])
        self.hour_cost = lru_cache(maxsize=None)(self._hour_cost)

    def reserved_cost(self, nodes: int) -> float:
        """Fill the cheaper reserved tier first, each up to its cap."""
        cost, left = 0.0, nodes
        for t in self.res_tiers:
            take = min(left, self.caps[t] // self.m) if t in self.caps else left
            cost += take * self.m * self.prices[t] * 24 * self.horizon
            left -= take
        return cost if left == 0 else math.inf

    def _hour_cost(self, need: tuple[int, ...], reserved: tuple[int, ...]) -> float:
        """Per-hour cost of on-demand + spot nodes (per pool) covering what reserved GPUs do not.

        Shared: `reserved` is (GPUs,), lent to pools GPU by GPU. Unshared: GPUs per pool.
        """
        m = self.m
        best = math.inf
        ranges = [range(0, _ceil(g / m) + 1) if (self.od_ok[i] or self.sp_ok[i]) else range(0, 1)
                  for i, g in enumerate(need)]
        for nodes in itertools.product(*ranges):
            short = [max(0, g - m * n) for g, n in zip(need, nodes)]
            if self.shared:
                if sum(short) > reserved[0]:
                    continue
            elif any(s > r for s, r in zip(short, reserved)):
                continue
            total = sum(nodes)
            sp_lo = sum(n for n, od, sp in zip(nodes, self.od_ok, self.sp_ok) if sp and not od)
            sp_hi = sum(n for n, sp in zip(nodes, self.sp_ok) if sp)
            for sp in range(sp_lo, sp_hi + 1):
                od = total - sp
                if "on-demand" in self.caps and m * od > self.caps["on-demand"]:
                    continue
                if "spot" in self.caps and m * sp > self.caps["spot"]:
                    continue
                cost = m * (od * self.prices.get("on-demand", 0) + sp * self.prices.get("spot", 0))
                best = min(best, cost)
        return best

    def cost(self, demand: tuple[tuple[int, ...], ...]) -> float:
        """demand[i] = GPUs of pool i at each (day type, hour)."""
        hours = list(zip(*demand))  # one tuple of pool needs per (day type, hour)
        weights = [n for n in self.days for _ in range(24)]
        distinct: dict[tuple[int, ...], float] = {}
        for hour, n in zip(hours, weights):
            distinct[hour] = distinct.get(hour, 0) + n
        m = self.m
        if not self.res_tiers:
            levels = [(0,) * (1 if self.shared else len(self.pools))]
        elif self.shared:
            levels = [(t,) for t in range(0, _ceil(max(sum(h) for h in hours) / m) + 1)]
        else:
            levels = list(itertools.product(*[range(0, _ceil(max(p) / m) + 1) for p in demand]))
        best = math.inf
        for level in levels:
            cost = self.reserved_cost(sum(level))
            if cost >= best:
                continue
            gpus = tuple(m * x for x in level)
            for hour, n in distinct.items():
                cost += n * self.hour_cost(hour, gpus)
                if cost >= best:
                    break
            best = min(best, cost)
        return best


def brute_force(plan: dict) -> float | None:
    """The optimal horizon cost, or None when no purchase meets the caps."""
    cands = candidates(plan)
    offers = {o["id"]: o for o in plan["offers"]}
    pool_of = {w["name"]: w["pool"] for w in plan["workloads"]}
    names = [w["name"] for w in plan["workloads"]]
    per_offer: dict[tuple, OfferCost] = {}
    memo: dict[tuple, float] = {}
    best = math.inf
    for combo in itertools.product(*[cands[n] for n in names]):
        by_offer: dict[str, dict[str, list[int]]] = {}
        for name, (o, gpus) in zip(names, combo):
            pools = by_offer.setdefault(o, {})
            acc = pools.setdefault(pool_of[name], [0] * len(gpus))
            for i, g in enumerate(gpus):
                acc[i] += g
        total = 0.0
        for o, pools in sorted(by_offer.items()):
            key_pools = tuple(sorted(pools))
            key = (o, key_pools, tuple(tuple(pools[p]) for p in key_pools))
            if key not in memo:
                if (o, key_pools) not in per_offer:
                    per_offer[(o, key_pools)] = OfferCost(plan, offers[o], key_pools)
                memo[key] = per_offer[(o, key_pools)].cost(key[2])
            total += memo[key]
            if total >= best:
                break
        best = min(best, total)
    return None if best == math.inf else best


@lru_cache(maxsize=None)
def expected(seed: int) -> tuple[dict, float | None]:
    """(plan, brute-force optimum or None when no purchase meets the caps)."""
    plan = random_plan(seed)
    return plan, brute_force(plan)
