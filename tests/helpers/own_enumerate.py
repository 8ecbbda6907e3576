"""Brute force for plans with servers of their own (owned, bought) beside rented ones: tiny random
plans and their optimal horizon cost, found by enumeration. No LP, no PuLP, nothing imported from
the optimizer: the cost rules are restated here from the plan reference (owned hardware):

    a workload runs at one offer (one config); its GPUs at hour h are the same every day
    owned offer:  serves up to the owned GPUs from `since` on, nothing else; every GPU serving at h
                  costs serving_energy(h); idle energy, colocation and support of every owned server
                  are a constant of the horizon (days from `since`)
    buy offer:    B whole units, serving from the delivery day (lead time) on, each costing
                  (ownership/365 + idle energy a day + colocation a day) × days in service; before
                  delivery (and above the bought GPUs) on-demand nodes of the offer, if it sells them;
                  every own GPU serving at h costs serving_energy(h)
    rented offer: R reserved nodes for the whole horizon (m·R·price·24·H) + on-demand nodes by the hour
    facility:     Σ load_kW · B ≤ power_kw − owned kW;  Σ ceil(B / nodes_per_rack) ≤ racks − owned positions

    ownership/year  = price·(1 − residual)/life + cost_of_capital·price·(1 + residual)/2 + support
    serving_energy  = (load − idle) kW ÷ GPUs per unit × PUE × tariff(h)     (idle default 30% of load)
    idle energy/day = idle kW × PUE × Σ_h tariff(h);  colocation/day = colo × load kW × 12 / 365

For a fixed choice of offers and fixed B, R, each hour is priced on its own: with C GPUs held
(own GPUs in service, or reserved ones) and N_p needed by pool p, D_p on-demand nodes per pool (a
pool's nodes serve only it) and the held GPUs serve the rest, Σ_p max(0, N_p − m·D_p) ≤ C; the cost
is the minimum over the D_p of m·Σ D_p·price + serving_energy·Σ_p max(0, N_p − m·D_p). Own GPUs serve
first, except that a rented node bought anyway is used whole: its GPUs cost nothing more to run, an
own GPU costs its serving energy. Reserved nodes are one level the pools share, or one per pool
(policy.share_reserved_across_pools: false); own GPUs are shared by every pool.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random

START = dt.date(2027, 1, 4)
IDLE_SHARE = 0.3
GOODPUT = {"gpu-a": 100.0, "gpu-b": 200.0}
"""Measured output tokens/s of one 1-GPU replica, by accelerator (occupancy 1, no spares, no rollout)."""


# --- random tiny plans ----------------------------------------------------------------------------------


def random_plan(seed: int) -> dict:
    """A tiny plan with an optimum (retried until the enumeration finds one)."""
    for attempt in range(200):
        plan = _random_plan(random.Random(seed * 7919 + attempt))
        if brute_force(plan) is not None:
            return plan
    raise AssertionError(f"seed {seed}: no feasible plan")


def _tariff(rng: random.Random) -> float | list[float]:
    if rng.random() < 0.6:
        return round(rng.uniform(0.05, 0.4), 3)
    night, day = round(rng.uniform(0.03, 0.15), 3), round(rng.uniform(0.15, 0.6), 3)
    cut = rng.randint(6, 10)
    return [night] * cut + [day] * (24 - cut - 4) + [night] * 4


def _random_plan(rng: random.Random) -> dict:
    H = rng.choice([7, 10, 14, 30])
    facility: dict = {"usd_per_kwh": _tariff(rng), "pue": round(rng.uniform(1.0, 1.6), 2)}
    if rng.random() < 0.4:
        facility["colo_usd_per_kw_month"] = round(rng.uniform(50, 250))
    offers: list[dict] = []
    owned: list[dict] = []
    if rng.random() < 0.6:
        o = {"accelerator": "gpu-a", "nodes": rng.randint(1, 3), "gpus_per_node": rng.choice([4, 8]),
             "node_power_kw": round(rng.uniform(3, 12), 1), "support_per_year": rng.choice([0, 5000, 20000])}
        if rng.random() < 0.5:
            o["idle_power_kw"] = round(o["node_power_kw"] * rng.uniform(0.1, 0.5), 2)
        if rng.random() < 0.4:
            o["nodes_per_rack"] = rng.randint(1, 3)
        r = rng.random()
        if r < 0.3:
            o["since"] = (START + dt.timedelta(days=rng.randint(1, H - 1))).isoformat()  # arrives inside
        elif r < 0.6:
            o["since"] = "2025-03-01"
        owned.append(o)
    n_buy = 1 if rng.random() < 0.75 else 2
    for i in range(n_buy):
        m = rng.choice([4, 8])
        life, res, coc = rng.choice([3, 4, 5]), rng.choice([0.0, 0.1, 0.2]), rng.choice([0.0, 0.06, 0.1])
        target = rng.uniform(0.4, 2.5)  # ownership per GPU-hour
        price = round(target * 24 * 365 * m / ((1 - res) / life + coc * (1 + res) / 2), -3)
        buy: dict = {"price_per_node": price, "life_years": life, "residual_fraction": res, "cost_of_capital": coc,
                     "node_power_kw": round(rng.uniform(4, 15), 1)}
        if rng.random() < 0.4:
            buy["support_per_year"] = rng.choice([5000, 15000])
        if rng.random() < 0.4:
            buy["idle_power_kw"] = round(buy["node_power_kw"] * rng.uniform(0.1, 0.5), 2)
        if rng.random() < 0.4:
            buy["nodes_per_rack"] = rng.randint(1, 4)
        r = rng.random()
        buy["lead_time_days"] = 0 if r < 0.45 else rng.randint(1, H - 1) if r < 0.9 else H + rng.randint(0, 5)
        prices = {}
        if buy["lead_time_days"] > 0 and rng.random() < 0.8 or rng.random() < 0.3:
            prices["on-demand"] = round(rng.uniform(1.5, 6.0), 2)
        offers.append({"id": f"buy-{i}", "accelerator": "gpu-a" if i == 0 else rng.choice(["gpu-a", "gpu-b"]),
                       "provider": "own", "gpus_per_node": m, "price_per_gpu_hour": prices, "buy": buy})
    if not owned or n_buy == 1 and rng.random() < 0.8:
        od = round(rng.uniform(1.5, 5.0), 2)
        prices = {"on-demand": od}
        if rng.random() < 0.6:
            prices["reserved-1y"] = round(od * rng.uniform(0.4, 0.8), 2)
        offers.append({"id": "cloud", "accelerator": rng.choice(["gpu-a", "gpu-b"]), "provider": "cloud",
                       "gpus_per_node": rng.choice([1, 2, 4, 8]), "price_per_gpu_hour": prices})
    ids = [f"owned-{o['accelerator']}" for o in owned] + [o["id"] for o in offers]
    if rng.random() < 0.35:  # power for the owned servers and one to three units of the first buy offer
        kw = sum(o["node_power_kw"] * o["nodes"] for o in owned)
        facility["power_kw"] = round(kw + offers[0]["buy"]["node_power_kw"] * rng.uniform(0.6, 3.2), 1)
    if rng.random() < 0.25:
        facility["racks"] = sum(math.ceil(o["nodes"] / o.get("nodes_per_rack", 4)) for o in owned) + rng.randint(0, 2)
    workloads = []
    for i in range(rng.choice([1, 2])):
        w: dict = {"name": f"w{i}"}
        if rng.random() < 0.55:
            w["reserve_gpus"] = {"count": rng.randint(1, 24)}
        else:
            k = rng.choice([4, 8, 12, 16, 20])
            on = rng.randint(4, 20)
            start = rng.randint(0, 24 - on)
            low = rng.choice([0.0, 0.25, 0.5, 0.75])
            profile = [low] * 24
            profile[start:start + on] = [1.0] * on
            w.update({"model": "m7", "precisions": ["bf16"], "tp": [1], "tokens": {"input": 1000, "output": 200},
                      "measured": [{"accelerator": a, "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": g}
                                   for a, g in GOODPUT.items()],
                      "demand": {"peak_output_tokens_per_s": 100.0 * k, "profile": profile}})
        if rng.random() < 0.3:
            w["offers"] = rng.sample(ids, rng.randint(1, len(ids)))
        if i == 1 and rng.random() < 0.4:
            w["pool"] = "search"  # a pool of its own: its on-demand nodes serve only it
        workloads.append(w)
    # one config per workload for the horizon, as the enumeration prices it (moves between the cloud and servers
    # delivered later: tests/optimize/test_moves.py)
    policy = {"occupancy": 1.0, "spares": 0, "rollout_fraction": 0.0, "mip_gap": 0, "moves": "never"}
    if any("pool" in w for w in workloads):
        policy["share_reserved_across_pools"] = rng.random() < 0.5
    plan = {"plan": "own brute force", "horizon_days": H, "start_date": START.isoformat(), "catalogs": [],
            "policy": policy,
            "models": [{"id": "m7", "params_b": 7, "kv_gb_per_seq": 0.5}],
            "accelerators": [{"id": "gpu-a", "memory_gb": 80}, {"id": "gpu-b", "memory_gb": 80}],
            "facility": facility, "offers": offers, "workloads": workloads}
    if owned:
        plan["owned"] = owned
    return plan


# --- the enumeration ------------------------------------------------------------------------------------


def _tariffs(plan: dict) -> list[float]:
    v = plan["facility"].get("usd_per_kwh", 0.0)
    return [float(x) for x in v] if isinstance(v, list) else [float(v)] * 24


def _day(plan: dict, date: str | None) -> int:
    if date is None:
        return 0
    return max(0, (dt.date.fromisoformat(date) - dt.date.fromisoformat(plan["start_date"])).days)


class Own:
    """One offer of your own hardware, its costs restated from the formulas."""

    def __init__(self, plan: dict, m: int, load: float, idle: float | None, npr: int | None) -> None:
        fac = plan["facility"]
        self.m, self.load = m, load
        self.idle = load * IDLE_SHARE if idle is None else idle
        self.npr = npr if npr is not None else (1 if m >= 32 else 4)
        pue, tariff = fac.get("pue", 1.3), _tariffs(plan)
        self.energy = [(self.load - self.idle) / m * pue * t for t in tariff]  # USD per GPU-hour serving
        self.idle_day = self.idle * pue * sum(tariff)
        self.colo_day = fac.get("colo_usd_per_kw_month", 0.0) * load * 12 / 365


def _offers(plan: dict) -> dict[str, dict]:
    H = plan["horizon_days"]
    out: dict[str, dict] = {}
    for o in plan.get("owned", []):
        t = Own(plan, o.get("gpus_per_node", 8), o["node_power_kw"], o.get("idle_power_kw"), o.get("nodes_per_rack"))
        since = _day(plan, o.get("since"))
        out[o.get("offer", f"owned-{o['accelerator']}")] = {
            "kind": "owned", "acc": o["accelerator"], "m": t.m, "gpus": o["nodes"] * t.m, "since": since, "own": t,
            "kw": o["nodes"] * t.load, "racks": math.ceil(o["nodes"] / t.npr),
            "fixed": o["nodes"] * (t.idle_day + t.colo_day + o.get("support_per_year", 0.0) / 365)
            * max(0, H - since)}
    for o in plan["offers"]:
        prices = o.get("price_per_gpu_hour", {})
        d = {"acc": o["accelerator"], "m": o["gpus_per_node"], "od": prices.get("on-demand")}
        b = o.get("buy")
        if b is None:
            d.update(kind="rent", r1y=prices.get("reserved-1y"))
        else:
            t = Own(plan, o["gpus_per_node"], b["node_power_kw"], b.get("idle_power_kw"), b.get("nodes_per_rack"))
            p, res, life = b["price_per_node"], b.get("residual_fraction", 0.0), b.get("life_years", 5.0)
            per_year = p * (1 - res) / life + b.get("cost_of_capital", 0.0) * p * (1 + res) / 2 \
                + b.get("support_per_year", 0.0)
            d.update(kind="buy", own=t, lead=b.get("lead_time_days", 0), unit_day=per_year / 365 + t.idle_day + t.colo_day)
        out[o["id"]] = d
    return out


def gpus_needed(w: dict, acc: str) -> list[int]:
    """GPUs a workload runs at each hour of a day on an accelerator: a reservation's count, or 1-GPU
    replicas at the measured goodput (occupancy 1, no spares, no rollout)."""
    if "reserve_gpus" in w:
        return [w["reserve_gpus"]["count"]] * 24
    dem = w["demand"]
    goodput = next(m["goodput_output_tokens_per_s"] for m in w["measured"] if m["accelerator"] == acc)
    return [math.ceil(dem["peak_output_tokens_per_s"] * f / goodput - 1e-9) for f in dem["profile"]]


def periods(plan: dict, offers: dict[str, dict]) -> list[tuple[int, int]]:
    """(first day, days) of the spans between deliveries and owned servers' arrivals."""
    H = plan["horizon_days"]
    cuts = {0, H} | {d.get("lead", d.get("since", 0)) for d in offers.values()}
    cuts = sorted(c for c in cuts if 0 <= c <= H)
    return [(a, b - a) for a, b in itertools.pairwise(cuts)]


def _hour_cost(needs: tuple[int, ...], own: int, m: int, od: float | None, energy: float) -> float:
    """Cheapest hour with `own` GPUs held (of your own, or reserved: energy 0) shared by the pools and
    needs[p] GPUs needed by pool p: D_p on-demand nodes per pool (a pool's nodes serve only it), the
    held GPUs serve the rest, max(0, N_p − m·D_p), at most `own` of them, each costing `energy`."""
    if not any(needs):
        return 0.0
    ranges = [range(math.ceil(n / m) + 1) if od is not None else range(1) for n in needs]
    best = math.inf
    for ds in itertools.product(*ranges):
        held = sum(max(0, n - m * d) for n, d in zip(needs, ds))
        if held <= own:
            best = min(best, m * sum(ds) * (od or 0.0) + energy * held)
    return best


def _by_hour(need: dict[str, list[int]]) -> list[tuple[int, ...]]:
    """Pool needs → one tuple of the pools' GPUs per hour."""
    rows = list(need.values()) or [[0] * 24]
    return [tuple(r[h] for r in rows) for h in range(24)]


def _rent_cost(d: dict, need: dict[str, list[int]], H: int, shared: bool) -> float:
    """Reserved nodes for the horizon (one level the pools share, or one per pool) + on-demand nodes."""
    if not shared and len(need) > 1:
        return sum(_rent_cost(d, {p: n}, H, True) for p, n in need.items())
    m, hours = d["m"], _by_hour(need)
    top = max(sum(x) for x in hours)
    best = math.inf
    for r in range(math.ceil(top / m) + 1 if d["r1y"] is not None else 1):
        cost = m * r * (d["r1y"] or 0.0) * 24 * H
        cost += H * sum(_hour_cost(x, m * r, m, d["od"], 0.0) for x in hours)
        best = min(best, cost)
    return best


def _owned_cost(d: dict, need: dict[str, list[int]], spans: list[tuple[int, int]]) -> float:
    cost = 0.0
    for first, days in spans:
        cap = d["gpus"] if first >= d["since"] else 0
        cost += days * sum(_hour_cost(x, cap, d["m"], None, d["own"].energy[h]) for h, x in enumerate(_by_hour(need)))
    return cost


def _buy_cost(d: dict, need: dict[str, list[int]], spans: list[tuple[int, int]], H: int, units: int) -> float:
    m, t = d["m"], d["own"]
    cost = units * d["unit_day"] * max(0, H - d["lead"])
    for first, days in spans:
        cap = m * units if first >= d["lead"] else 0
        cost += days * sum(_hour_cost(x, cap, m, d["od"], t.energy[h]) for h, x in enumerate(_by_hour(need)))
    return cost


def brute_force(plan: dict) -> float | None:
    """The plan's optimal horizon cost, or None when no choice and purchase meets every constraint."""
    H = plan["horizon_days"]
    offers = _offers(plan)
    spans = periods(plan, offers)
    fac = plan["facility"]
    owned_kw = sum(d["kw"] for d in offers.values() if d["kind"] == "owned")
    owned_racks = sum(d["racks"] for d in offers.values() if d["kind"] == "owned")
    power = fac.get("power_kw")
    racks = fac.get("racks")
    constant = sum(d["fixed"] for d in offers.values() if d["kind"] == "owned")
    choices = [[o for o in (w.get("offers") or offers) if o in offers] for w in plan["workloads"]]
    buys = sorted(o for o, d in offers.items() if d["kind"] == "buy")
    best = math.inf
    shared = plan["policy"].get("share_reserved_across_pools", True)
    for pick in itertools.product(*choices):
        need: dict[str, dict[str, list[int]]] = {o: {} for o in offers}  # offer → pool → GPUs by hour
        for w, o in zip(plan["workloads"], pick):
            row = need[o].setdefault(w.get("pool", "interactive"), [0] * 24)
            for h, g in enumerate(gpus_needed(w, offers[o]["acc"])):
                row[h] += g
        total = constant
        for o, d in offers.items():
            if d["kind"] == "rent" and need[o]:
                total += _rent_cost(d, need[o], H, shared)
            elif d["kind"] == "owned" and need[o]:
                total += _owned_cost(d, need[o], spans)
        if total == math.inf:
            continue
        levels = []
        for o in buys:
            d = offers[o]
            top = math.ceil(max(map(sum, _by_hour(need[o]))) / d["m"]) if d["lead"] < H else 0
            levels.append([(b, _buy_cost(d, need[o], spans, H, b)) for b in range(top + 1)])
        for combo in itertools.product(*levels):
            units = dict(zip(buys, (b for b, _c in combo)))
            if power is not None and sum(offers[o]["own"].load * b for o, b in units.items()) > power - owned_kw + 1e-9:
                continue
            if racks is not None and sum(math.ceil(b / offers[o]["own"].npr) for o, b in units.items()) \
                    > racks - owned_racks:
                continue
            best = min(best, total + sum(c for _b, c in combo))
    return None if best == math.inf else best
