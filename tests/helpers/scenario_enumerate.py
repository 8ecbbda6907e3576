"""Two-stage plans (plan `scenarios`, policy.risk) and their optimal risk measure, found by
enumeration: tiny random plans, each workload's replicas from its measured goodput, every config and
reserved level tried. Nothing imported from the optimizer (tests/optimize/test_scenarios.py)."""

from __future__ import annotations

import itertools
import math
import random
from functools import lru_cache

from tests.helpers.tiny_plans import ceil, gpus_for, two_level_profile


SEEDS = list(range(36))
MEASURES = ("expected", "cvar", "worst")
H = 30  # horizon days, one day type

# --- random tiny plans ----------------------------------------------------------------------------------


def _profile(rng: random.Random) -> list[float]:
    """Flat, or two levels (a block of peak hours)."""
    return two_level_profile(rng, 0.35)


def _weights(rng: random.Random, k: int) -> list[float]:
    """k probabilities in steps of 0.05 that add up to 1."""
    cuts = sorted(rng.sample(range(1, 20), k - 1))
    parts = [b - a for a, b in zip([0] + cuts, cuts + [20])]
    return [p / 20 for p in parts]


def random_plan(seed: int) -> dict:
    rng = random.Random(7919 * seed + 11)
    measure = MEASURES[seed % 3]
    n_acc = rng.choice([1, 2])
    accelerators = [{"id": f"a{i}", "memory_gb": 80} for i in range(n_acc)]
    spot = rng.random() < 0.4
    offers = []
    for i in range(rng.choice([1, 2, 3])):
        od = round(rng.uniform(1.0, 4.0), 2)
        prices = {"on-demand": od}
        if rng.random() < 0.85:
            prices["reserved-1y"] = round(od * rng.uniform(0.4, 0.9), 2)
        if spot and rng.random() < 0.7:
            prices["spot"] = round(od * rng.uniform(0.3, 0.9), 2)
        offers.append({"id": f"o{i}", "accelerator": f"a{i % n_acc}", "provider": f"p{rng.randrange(2)}",
                       "gpus_per_node": rng.choice([1, 2, 4]), "price_per_gpu_hour": prices})
    occupancy = rng.choice([0.5, 0.6, 0.8, 1.0])
    workloads = []
    for i in range(rng.choice([1, 2])):
        allowed = sorted(rng.sample([o["id"] for o in offers], min(len(offers), rng.choice([1, 2]))))
        nodes = min(o["gpus_per_node"] for o in offers if o["id"] in allowed)
        tp = rng.choice([1, 2]) if nodes >= 2 else 1
        goodput = {a["id"]: round(rng.uniform(300, 1500), 1) for a in accelerators}
        mean_g = sum(goodput.values()) / len(goodput)
        workloads.append({
            "name": f"w{i}", "model": "m0", "tp": [tp], "parallelism": ["tp"], "offers": allowed,
            "tokens": {"input": 1000, "output": 200},
            "measured": [{"accelerator": a, "precision": "bf16", "tp": tp, "goodput_output_tokens_per_s": g}
                         for a, g in goodput.items()],
            "demand": {"peak_output_tokens_per_s": round(mean_g * occupancy * rng.uniform(0.5, 5.0), 1),
                       "profile": _profile(rng)}})
    scenarios = []
    providers = sorted({o["provider"] for o in offers})
    for j, wt in enumerate(_weights(rng, rng.choice([2, 3, 4]))):
        s: dict = {"name": f"s{j}", "weight": wt}
        demand = {}
        for key in ["all", "interactive"] + [w["name"] for w in workloads]:
            if rng.random() < 0.4:
                demand[key] = rng.choice([0.0, round(rng.uniform(0.3, 2.5), 2)]) if rng.random() < 0.1 \
                    else round(rng.uniform(0.3, 2.5), 2)
        if demand:
            s["demand"] = demand
        prices = {}
        for key in ["on-demand"] + (["spot"] if spot else []) + providers:
            if rng.random() < 0.35:
                prices[key] = round(rng.uniform(0.6, 2.0), 2)
        if prices:
            s["prices"] = prices
        if rng.random() < 0.25:
            s["goodput"] = round(rng.uniform(0.5, 1.5), 2)  # measured goodput: must change nothing
        scenarios.append(s)
    risk: dict = {"measure": measure}
    if measure == "cvar":
        risk["level"] = rng.choice([0.5, 0.6, 0.75, 0.8, 0.9, 0.95])
    tiers = ["reserved-1y", "on-demand"] + (["spot"] if spot else [])
    policy = {"tiers": tiers, "mip_gap": 0, "spares": 0, "rollout_fraction": 0, "occupancy": occupancy,
              "time_limit_s": 600, "risk": risk}
    if spot:
        policy["spot_pools"] = ["interactive"]
    return {"plan": f"two-stage tiny plan {seed}", "horizon_days": H, "catalogs": [], "policy": policy,
            "models": [{"id": "m0", "params_b": 8, "kv_gb_per_seq": 0.5}], "accelerators": accelerators,
            "offers": offers, "scenarios": scenarios, "workloads": workloads}


# --- the enumerator -------------------------------------------------------------------------------------


def demand_factor(s: dict, w: dict) -> float:
    for key in (w["name"], w.get("pool", "interactive"), "all"):
        if key in s.get("demand", {}):
            return s["demand"][key]
    return 1.0


def gpus(plan: dict, w: dict, offer: dict, s: dict | None) -> list[int]:
    """GPUs the workload needs on the offer at each hour of scenario s (None: as stated)."""
    tp = w["tp"][0]
    g = next(m["goodput_output_tokens_per_s"] for m in w["measured"] if m["accelerator"] == offer["accelerator"])
    f = 1.0 if s is None else demand_factor(s, w)
    occ = plan["policy"]["occupancy"]
    out = []
    for v in w["demand"]["profile"]:
        d = w["demand"]["peak_output_tokens_per_s"] * v * f
        out.append(gpus_for(d, g, occ, tp))
    return out


def hourly_price(plan: dict, offer: dict, s: dict) -> float:
    """The cheapest GPU-hour bought by the hour in scenario s (on-demand or spot, multipliers applied)."""
    mult = s.get("prices", {})
    prov = mult.get(offer["provider"], 1.0)
    prices = offer["price_per_gpu_hour"]
    out = [prices["on-demand"] * mult.get("on-demand", 1.0) * prov]
    if "spot" in prices and "spot" in plan["policy"]["tiers"]:
        out.append(prices["spot"] * mult.get("spot", 1.0) * prov)
    return min(out)


def risk_of(costs: list[float], weights: list[float], measure: str, level: float) -> float:
    """expected: Σ π·C; worst: max C; cvar: the mean of the worst 1 − level of the outcomes by weight
    (sorted from the dearest, the last one counted in part)."""
    if measure == "expected":
        return sum(p * c for p, c in zip(weights, costs))
    if measure == "worst":
        return max(costs)
    tail, acc = 1.0 - level, 0.0
    left = tail
    for c, p in sorted(zip(costs, weights), reverse=True):
        take = min(p, left)
        acc += take * c
        left -= take
        if left <= 1e-12:
            break
    return acc / tail


def scenario_costs(plan: dict, choice: dict[str, str], reserved: dict[str, int],
                   scenarios: list[dict]) -> tuple[float, list[float]]:
    """(first-stage cost, each scenario's second-stage cost) of configs `choice` and reserved nodes."""
    offers = {o["id"]: o for o in plan["offers"]}
    first = sum(n * offers[o]["gpus_per_node"] * offers[o]["price_per_gpu_hour"]["reserved-1y"] * 24 * H
                for o, n in reserved.items() if n)
    second = []
    for s in scenarios:
        need: dict[str, list[int]] = {}
        for w in plan["workloads"]:
            o = choice[w["name"]]
            acc = need.setdefault(o, [0] * 24)
            for h, g in enumerate(gpus(plan, w, offers[o], s)):
                acc[h] += g
        cost = 0.0
        for o, hours in need.items():
            m = offers[o]["gpus_per_node"]
            price = hourly_price(plan, offers[o], s)
            r = m * reserved.get(o, 0)
            cost += sum(H * m * price * ceil(max(0, g - r) / m) for g in hours)
        second.append(cost)
    return first, second


def brute_force(plan: dict, scenarios: list[dict] | None = None, measure: str | None = None,
                level: float | None = None) -> float:
    """The optimal risk measure over every config and reserved level (the plan's scenarios and risk,
    unless given)."""
    scenarios = plan["scenarios"] if scenarios is None else scenarios
    risk = plan["policy"]["risk"]
    measure = measure or risk["measure"]
    level = level if level is not None else risk.get("level", 0.9)
    offers = {o["id"]: o for o in plan["offers"]}
    names = [w["name"] for w in plan["workloads"]]
    weights = [s["weight"] for s in scenarios]
    best = math.inf
    for combo in itertools.product(*[w["offers"] for w in plan["workloads"]]):
        choice = dict(zip(names, combo))
        used = sorted(set(combo))
        top = {}
        for o in used:
            peak = max(sum(gpus(plan, w, offers[o], s)[h] for w in plan["workloads"] if choice[w["name"]] == o)
                       for s in scenarios for h in range(24))
            can = "reserved-1y" in offers[o]["price_per_gpu_hour"]
            top[o] = ceil(peak / offers[o]["gpus_per_node"]) if can else 0
        for levels in itertools.product(*[range(top[o] + 1) for o in used]):
            first, second = scenario_costs(plan, choice, dict(zip(used, levels)), scenarios)
            best = min(best, risk_of([first + q for q in second], weights, measure, level))
    return best


@lru_cache(maxsize=None)
def expected(seed: int) -> tuple[dict, float]:
    plan = random_plan(seed)
    return plan, brute_force(plan)
