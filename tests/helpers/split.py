"""Tiny random plans with one workload whose request-size classes may be split between two configs
(split: by_size), and their optimal horizon cost found without an LP: the oracle of tests/optimize/test_split.py.

Why the enumeration is exact. Every class's demand follows the workload's profile, D_b(h) = σ_b · D(h) (σ_b the
class's share of the output tokens), so with shares z_b of class b on config 1 (1 − z_b on config 2) each config's
base replicas at hour h are ⌈D(h) · L_c ÷ occupancy⌉ with L_1 = Σ_b σ_b z_b ÷ g_1b and
L_2 = Σ_b σ_b (1 − z_b) ÷ g_2b.
A config's cost (spares when used, rollout, whole nodes, a reserved level against on-demand) never falls as L_c
grows and is constant between the breakpoints L = occupancy · n ÷ D(h); so the optimum has L_1 at a breakpoint t
(or 0), and for each t the least L_2 with L_1 ≤ t is a fractional knapsack (classes moved to config 1 in order of
g_1b ÷ g_2b), solved greedily. Imports nothing from the optimizer.
"""

from __future__ import annotations

import math
import random

SEEDS = list(range(32))


def _ceil(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 else math.ceil(x)


def random_split_plan(seed: int) -> dict:
    rng = random.Random(seed)
    k = rng.choice([2, 3])
    raw = [rng.randint(1, 9) for _ in range(k)]
    shares = [round(r / sum(raw), 4) for r in raw[:-1]]
    shares.append(round(1 - sum(shares), 4))
    classes = [(s, rng.choice([200, 800, 3000]), rng.choice([100, 200, 400])) for s in shares]
    classes = [(s, i + 7 * j, o + j) for j, (s, i, o) in enumerate(classes)]  # distinct sizes
    accs = [{"id": "acc0", "memory_gb": 24}, {"id": "acc1", "memory_gb": 80}]
    offers = []
    for i, acc in enumerate(accs):
        od = round(rng.uniform(1.0, 1.5) * (1 if i == 0 else 2.5), 2)
        prices = {"on-demand": od}
        if rng.random() < 0.5:
            prices["reserved-1y"] = round(od * rng.uniform(0.5, 0.85), 2)
        offers.append({"id": f"off{i}", "accelerator": acc["id"], "provider": f"prov{i}",
                       "gpus_per_node": rng.choice([1, 2]), "price_per_gpu_hour": prices})
    # the second accelerator's edge differs from class to class (as compute-rich and bandwidth-rich ones do)
    g0 = [round(rng.uniform(200, 1500), 1) for _ in classes]
    g1 = [round(g * rng.choice([rng.uniform(0.8, 1.6), rng.uniform(3.5, 5.0)]), 1) for g in g0]
    measured = [{"accelerator": a["id"], "precision": "bf16", "tp": 1, "input": i, "output": o,
                 "goodput_output_tokens_per_s": gs[j]}
                for a, gs in zip(accs, (g0, g1)) for j, (_s, i, o) in enumerate(classes)]
    occupancy = rng.choice([0.6, 0.8, 1.0])
    levels = [0.25, 0.5, 1.0]
    cut = rng.randint(1, 23)
    profile = [rng.choice(levels)] * cut + [1.0] * (24 - cut)
    mean_out = sum(s * o for s, _i, o in classes)
    policy = {"occupancy": occupancy, "spares": rng.choice([0, 0, 1]), "rollout_fraction": rng.choice([0.0, 0.25]),
              "tiers": ["reserved-1y", "on-demand"], "mip_gap": 0, "time_limit_s": 600, "split": "by_size"}
    return {"plan": f"random split plan {seed}", "horizon_days": rng.randint(1, 2), "catalogs": [],
            "policy": policy, "models": [{"id": "mod0", "params_b": 7, "kv_gb_per_seq": 0.2}],
            "accelerators": accs, "offers": offers,
            "workloads": [{"name": "chat", "model": "mod0", "tp": [1],
                           "tokens": {"mix": [{"share": s, "input": i, "output": o} for s, i, o in classes]},
                           "measured": measured,
                           "demand": {"peak_output_tokens_per_s": round(rng.uniform(3, 25) * mean_out, 1),
                                      "profile": profile}}]}


def _offer_cost(plan: dict, offer: dict, load: float, demand: list[float]) -> float:
    """The horizon cost of one config at one offer carrying `load` replicas per output token/s (0: unused)."""
    if load <= 0:
        return 0.0
    pol, days = plan["policy"], plan["horizon_days"]
    m, prices = offer["gpus_per_node"], offer["price_per_gpu_hour"]
    nodes = []
    for d in demand:
        base = _ceil(d * load / pol["occupancy"]) if d > 0 else 0
        total = base + pol["spares"]
        total += _ceil(pol["rollout_fraction"] * total)
        nodes.append(_ceil(total / m))
    hourly = lambda r: sum(days * m * prices["on-demand"] * max(0, n - r) for n in nodes)  # noqa: E731
    if "reserved-1y" not in prices:
        return hourly(0)
    return min(r * m * prices["reserved-1y"] * 24 * days + hourly(r) for r in range(max(nodes) + 1))


def _mix(plan: dict) -> tuple[dict, list[dict], list[float], dict[tuple, float]]:
    """The plan's one workload, its size classes, each class's share of the output tokens, and the measured
    goodput by (accelerator, input, output)."""
    w = plan["workloads"][0]
    mix = w["tokens"]["mix"]
    mean_out = sum(c["share"] * c["output"] for c in mix)
    sigma = [c["share"] * c["output"] / mean_out for c in mix]
    g = {(m["accelerator"], m["input"], m["output"]): m["goodput_output_tokens_per_s"] for m in w["measured"]}
    return w, mix, sigma, g


def brute_force_split(plan: dict) -> float:
    """The least horizon cost over every split of the classes between the two configs."""
    w, mix, sigma, g = _mix(plan)
    o1, o2 = plan["offers"]
    g1 = [g[(o1["accelerator"], c["input"], c["output"])] for c in mix]
    g2 = [g[(o2["accelerator"], c["input"], c["output"])] for c in mix]
    peak = w["demand"]["peak_output_tokens_per_s"]
    demand = [peak * p for p in w["demand"]["profile"]]
    occ = plan["policy"]["occupancy"]
    full = sum(s / a for s, a in zip(sigma, g1))
    budgets = {0.0, full} | {occ * n / d for d in set(demand) if d > 0
                             for n in range(1, _ceil(d * full / occ) + 1)}
    order = sorted(range(len(mix)), key=lambda b: g2[b] / g1[b])  # most L_2 saved per unit of L_1 first
    best = math.inf
    for t in sorted(budgets):
        left, l1, l2 = t, 0.0, 0.0
        for b in order:
            cost1 = sigma[b] / g1[b]
            z = 1.0 if cost1 <= left + 1e-15 else max(0.0, left / cost1)
            left -= z * cost1
            l1 += z * cost1
            l2 += (1 - z) * sigma[b] / g2[b]
        l1 = 0.0 if l1 < 1e-15 else l1
        l2 = 0.0 if l2 < 1e-12 * full else l2
        best = min(best, _offer_cost(plan, o1, l1, demand)
                   + _offer_cost(plan, o2, l2, demand))
    return best


def single_config_cost(plan: dict) -> float:
    """The least horizon cost with the whole workload on one config (split: none)."""
    w, mix, sigma, g = _mix(plan)
    demand = [w["demand"]["peak_output_tokens_per_s"] * p for p in w["demand"]["profile"]]
    return min(_offer_cost(plan, o, sum(s / g[(o["accelerator"], c["input"], c["output"])]
                                        for s, c in zip(sigma, mix)), demand) for o in plan["offers"])


def whole_traffic_view(plan: dict) -> dict:
    """The plan as split: any sees it: one class (the whole demand at the mix's mean sizes), each accelerator's
    goodput over the mix the harmonic mean of its classes', weighted by their output tokens (brute_force_split
    of this view is split: any's optimum)."""
    w = plan["workloads"][0]
    mix = w["tokens"]["mix"]
    mean_in = sum(c["share"] * c["input"] for c in mix)
    mean_out = sum(c["share"] * c["output"] for c in mix)
    sigma = [c["share"] * c["output"] / mean_out for c in mix]
    g = {(m["accelerator"], m["input"], m["output"]): m["goodput_output_tokens_per_s"] for m in w["measured"]}
    accs = dict.fromkeys(m["accelerator"] for m in w["measured"])
    mean = {a: 1.0 / sum(s / g[(a, c["input"], c["output"])] for s, c in zip(sigma, mix)) for a in accs}
    one = {**w, "tokens": {"mix": [{"share": 1.0, "input": mean_in, "output": mean_out}]},
           "measured": [{"accelerator": a, "precision": "bf16", "tp": 1, "input": mean_in, "output": mean_out,
                         "goodput_output_tokens_per_s": mean[a]} for a in accs]}
    return {**plan, "workloads": [one]}
