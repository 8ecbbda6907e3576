"""Tiny random plans whose small models may share whole GPUs (policy.share_pools), and their optimal horizon cost
found by enumeration: the oracle of tests/optimize/test_share.py. Imports nothing from the optimizer.

The rule enumerated (optimize.families `share`, docs/how-it-decides.md): each workload runs either on GPUs of its
own at one offer (tensor parallel 1: base = ⌈D ÷ (γ · occupancy)⌉, + spares, + ⌈ρ · (base + spares)⌉ replicas of
one GPU) or shares at one offer; the workloads sharing at an offer form one group whose every GPU holds one
replica of each, their memory shares μ = (weights + KV of one sequence) ÷ (memory · (1 − reserve)) adding up to
at most 1, and whose base GPUs at an hour are ⌈Σ D ÷ (γ · (1 − σ)) ÷ occupancy⌉, + spares, + rollout, once. A
shared config exists only where at least two workloads could share the offer. Every choice of config per workload
is tried; each offer's nodes then cost ⌈GPUs ÷ m⌉ an hour on demand, or a reserved level r below them (every r
tried).
"""

from __future__ import annotations

import itertools
import math
import random

SEEDS = list(range(12))
SLOWDOWN = {"mps": 0.10, "time_slicing": 0.20}
"""physics.sharing.SLOWDOWN, restated: the estimate each share_mode plans at."""
BF16 = 2.0


def _ceil(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 else math.ceil(x)


def random_share_plan(seed: int) -> dict:
    rng = random.Random(seed)
    n_acc = rng.choice([1, 2])
    accs = [{"id": f"acc{i}", "memory_gb": m} for i, m in enumerate(rng.sample([24, 48, 80], n_acc))]
    offers = []
    for i, acc in enumerate(accs):
        od = round(rng.uniform(1.0, 3.0), 2)
        prices = {"on-demand": od}
        if rng.random() < 0.4:
            prices["reserved-1y"] = round(od * rng.uniform(0.5, 0.85), 2)
        offers.append({"id": f"off{i}", "accelerator": acc["id"], "provider": f"prov{i}",
                       "gpus_per_node": rng.choice([1, 1, 2]), "price_per_gpu_hour": prices})
    n_w = rng.choice([2, 3, 3])
    models = [{"id": f"mod{j}", "params_b": rng.choice([2, 6, 10, 16]),
               "kv_gb_per_seq": round(rng.uniform(0.05, 0.5), 3)} for j in range(n_w)]
    mode = rng.choice(["mps", "time_slicing"])
    policy = {"occupancy": rng.choice([0.6, 0.8, 1.0]), "memory_reserve": 0.1, "spares": rng.choice([0, 1]),
              "rollout_fraction": rng.choice([0.0, 0.25]), "tiers": ["reserved-1y", "on-demand"],
              "share_pools": ["small"], "share_mode": mode, "mip_gap": 0, "time_limit_s": 600}
    if rng.random() < 0.3:
        policy["share_slowdown"] = round(rng.uniform(0.0, 0.4), 3)
    levels = [0.0, 0.25, 0.5, 1.0]
    workloads = []
    for j, m in enumerate(models):
        goodput = {a["id"]: round(rng.uniform(300, 3000) * (a["memory_gb"] / 48) ** 0.3, 1) for a in accs}
        cut = rng.randint(1, 23)
        profile = [rng.choice(levels)] * cut + [1.0] * (24 - cut)
        peak = round(min(goodput.values()) * rng.uniform(0.05, 1.2), 1)
        workloads.append({"name": f"w{j}", "model": m["id"], "pool": "small", "tp": [1],
                          "tokens": {"input": 500, "output": 100},
                          "measured": [{"accelerator": a, "precision": "bf16", "tp": 1,
                                        "goodput_output_tokens_per_s": g} for a, g in goodput.items()],
                          "demand": {"peak_output_tokens_per_s": peak, "profile": profile}})
    return {"plan": f"random share plan {seed}", "horizon_days": rng.randint(1, 2), "catalogs": [],
            "policy": policy, "models": models, "accelerators": accs, "offers": offers, "workloads": workloads}


def _sigma(plan: dict) -> float:
    pol = plan["policy"]
    return pol.get("share_slowdown", SLOWDOWN[pol.get("share_mode", "mps")])


def _options(plan: dict) -> dict[str, list[tuple[str, bool]]]:
    """workload → its configs: (offer, shared?). A config of its own where one sequence fits beside the weights;
    a shared one where its memory share is at most 1 and another workload could share the offer too."""
    pol = plan["policy"]
    accs = {a["id"]: a for a in plan["accelerators"]}
    models = {m["id"]: m for m in plan["models"]}
    own: dict[str, list[str]] = {}
    sharers: dict[str, list[str]] = {}
    for w in plan["workloads"]:
        m = models[w["model"]]
        own[w["name"]] = []
        for o in plan["offers"]:
            usable = accs[o["accelerator"]]["memory_gb"] * (1 - pol["memory_reserve"])
            if usable - m["params_b"] * BF16 < m["kv_gb_per_seq"]:
                continue
            own[w["name"]].append(o["id"])
            if "small" in pol.get("share_pools", []) and _memory(plan, w, o) <= 1 + 1e-9:
                sharers.setdefault(o["id"], []).append(w["name"])
    return {w: [(o, False) for o in offers] + [(o, True) for o, ws in sorted(sharers.items())
                                               if w in ws and len(ws) >= 2]
            for w, offers in own.items()}


def _memory(plan: dict, w: dict, o: dict) -> float:
    acc = next(a for a in plan["accelerators"] if a["id"] == o["accelerator"])
    m = next(m for m in plan["models"] if m["id"] == w["model"])
    return (m["params_b"] * BF16 + m["kv_gb_per_seq"]) / (acc["memory_gb"] * (1 - plan["policy"]["memory_reserve"]))


def _goodput(w: dict, o: dict) -> float:
    return next(p["goodput_output_tokens_per_s"] for p in w["measured"] if p["accelerator"] == o["accelerator"])


def _demand(w: dict) -> list[float]:
    return [w["demand"]["peak_output_tokens_per_s"] * v for v in w["demand"]["profile"]]


def _offer_cost(plan: dict, offer: dict, gpus: list[int]) -> float:
    """An offer's horizon cost for these GPUs at each hour: on-demand nodes, or a reserved level below them."""
    if not any(gpus):
        return 0.0
    days, m, prices = plan["horizon_days"], offer["gpus_per_node"], offer["price_per_gpu_hour"]
    nodes = [_ceil(g / m) for g in gpus]
    hourly = lambda r: sum(days * m * prices["on-demand"] * max(0, n - r) for n in nodes)  # noqa: E731
    if "reserved-1y" not in prices:
        return hourly(0)
    return min(r * m * prices["reserved-1y"] * 24 * days + hourly(r) for r in range(max(nodes) + 1))


def brute_force_share(plan: dict, memory: bool = True) -> tuple[float, dict[str, tuple[str, bool]]]:
    """The least horizon cost over every choice of config per workload, and a choice that reaches it (`memory`
    False: as if the members' memory never added up, to tell the plans where it binds)."""
    pol = plan["policy"]
    occ, spares, ro = pol["occupancy"], pol["spares"], pol["rollout_fraction"]
    sigma = _sigma(plan)
    by_name = {w["name"]: w for w in plan["workloads"]}
    offers = {o["id"]: o for o in plan["offers"]}
    options = _options(plan)
    names = list(options)
    best, best_choice = math.inf, {}
    for pick in itertools.product(*(options[n] for n in names)):
        choice = dict(zip(names, pick))
        gpus = {o: [0] * 24 for o in offers}
        groups: dict[str, list[dict]] = {}
        for n, (o, shared) in choice.items():
            w = by_name[n]
            if shared:
                groups.setdefault(o, []).append(w)
                continue
            for h, d in enumerate(_demand(w)):
                base = _ceil(d / (_goodput(w, offers[o]) * occ)) if d > 0 else 0
                gpus[o][h] += base + spares + _ceil(ro * (base + spares))
        if memory and any(sum(_memory(plan, w, offers[o]) for w in ws) > 1 + 1e-9 for o, ws in groups.items()):
            continue
        for o, ws in groups.items():
            for h in range(24):
                time = sum(_demand(w)[h] / (_goodput(w, offers[o]) * (1 - sigma)) for w in ws)
                base = _ceil(time / occ)
                gpus[o][h] += base + spares + _ceil(ro * (base + spares))
        cost = sum(_offer_cost(plan, offers[o], gpus[o]) for o in offers)
        if cost < best - 1e-9:
            best, best_choice = cost, choice
    return best, best_choice


def without_sharing(plan: dict) -> dict:
    """The plan with no pool sharing GPUs (policy.share_pools left out: its default, none)."""
    pol = {k: v for k, v in plan["policy"].items() if k not in ("share_pools", "share_mode", "share_slowdown")}
    return {**plan, "policy": pol}
