"""Moves over time (policy.moves): a workload's config per contract period.

The quarter of tests/helpers/commitments.py (2026-10-01 + 92 days), one day type `all`, goodput 100 tok/s per
1-GPU replica on gpu-a (200 on gpu-b) at occupancy 1, no spares, no rollout: a demand of 100·k tok/s needs
exactly k GPUs of gpu-a. The brute force below prices every config per period and every number of servers bought
on its own (no optimizer import) and is checked against the program solved by HiGHS and CBC without a time limit.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.jsonio import from_dict, to_dict
from tests.helpers.commitments import OD, R1Y, H100, chat, contract, quarter
from tests.helpers.small_plans import write
from tests.helpers.solving import NO_TIME_LIMIT

START = dt.date(2026, 10, 1)
H = 92


def _solve(tmp_path, data, solver: str = "highs", name: str = "plan.yaml"):
    return solve_plan(write(tmp_path, data, name), SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT))


def _bought(price: float, lead: int, m: int = 8) -> dict:
    return {"id": "own-h100", "accelerator": "h100-sxm", "provider": "own", "gpus_per_node": m,
            "price_per_gpu_hour": {}, "buy": {"price_per_node": price, "life_years": 4, "node_power_kw": 10,
                                               "lead_time_days": lead}}


def _lead_time_plan(moves: str | None = None) -> dict:
    """16 GPUs of load all quarter; servers bought at own-h100 arrive after 45 days; cloud-a-h100 rents the same
    accelerator on demand."""
    data = quarter([chat(16)], reservation_starts="plan_start", tiers=["on-demand", "buy"])
    data["offers"].append(_bought(200_000, 45))
    data["facility"] = {"usd_per_kwh": 0.0}
    if moves is not None:
        data["policy"]["moves"] = moves
    return data


def _on_demand_hours(r) -> float:
    return sum(p.gpu_hours for p in r.purchases if p.tier == "on-demand")


# --- the lead-time plan ------------------------------------------------------------------------------------

def test_the_lead_time_plan_buys_the_node_and_rents_only_until_delivery(tmp_path):
    """By default the workload rents 16 GPUs for the 45 days before delivery, then runs on the 2 nodes bought:
    $6.88 × 16 × 24 × 45 on demand + $200,000 ÷ 4 years × 47 days in service × 2 nodes."""
    r = _solve(tmp_path, _lead_time_plan())
    assert {(p.offer, p.tier): p.gpus for p in r.purchases} == {(H100, "on-demand"): 16, ("own-h100", "buy"): 16}
    assert _on_demand_hours(r) == pytest.approx(16 * 24 * 45)
    assert r.cost_total == pytest.approx(16 * OD * 24 * 45 + 2 * 200_000 / 4 / 365 * 47)
    move, = r.moves
    assert (move.workload, move.date, move.from_offer, move.to_offer) == ("chat", "2026-11-15", H100, "own-h100")
    assert move.saving > 0
    w = r.workload("chat")
    assert w.offer == H100  # the row's config is the first period's: readers of one config read it
    assert [(x.start, x.offer) for x in w.configs_by_period] == [("2026-10-01", H100), ("2026-11-15", "own-h100")]
    # the result reads back with its moves, and writes back the same
    again = from_dict(to_dict(r))
    assert [(m.workload, m.date, m.to_offer) for m in again.moves] == [("chat", "2026-11-15", "own-h100")]
    assert again.workload("chat").configs_by_period == w.configs_by_period
    assert to_dict(again) == to_dict(r)


def test_with_moves_never_the_lead_time_plan_rents_all_quarter(tmp_path):
    """moves: never is one config for the horizon: the bought servers cannot serve the first 45 days, so it rents
    all 92 (the plan as before moves)."""
    r = _solve(tmp_path, _lead_time_plan("never"))
    assert {(p.offer, p.tier) for p in r.purchases} == {(H100, "on-demand")}
    assert r.cost_total == pytest.approx(16 * OD * 24 * H)
    assert not r.moves and not r.workload("chat").configs_by_period


def test_a_move_cost_is_charged_in_the_objective_and_can_keep_the_workload_still(tmp_path):
    """policy.move_cost: 3 GPU-hours per replica moved, at the destination's on-demand price (own-h100 has none:
    the accelerator's cheapest, $6.88): 16 replicas × 3 × 6.88 = $330 — far below what the move saves, so it
    still moves; the result's costs are its purchases'. A move cost above the saving keeps it on one offer."""
    data = _lead_time_plan()
    data["policy"]["move_cost"] = 3
    r = _solve(tmp_path, data)
    assert len(r.moves) == 1
    assert r.cost_total == pytest.approx(16 * OD * 24 * 45 + 2 * 200_000 / 4 / 365 * 47)
    data["policy"]["move_cost"] = 2000  # 16 × 2000 × 6.88 = $220,160 > the saving
    r = _solve(tmp_path, data, name="dear.yaml")
    assert not r.moves
    assert r.cost_total == pytest.approx(16 * OD * 24 * H)


# --- the renewal case ----------------------------------------------------------------------------------------

CLOUD_B = "cloud-b-h100"


def _renewal_plan(moves: str | None = None) -> dict:
    """16 signed GPUs at cloud-a-h100 end 2026-11-14 (mid-quarter) under 16 GPUs of load; cloud-b-h100 sells the
    same accelerator on demand at $5.00 (cloud-a's is $6.88, its reserved-1y $4.60 only from its first day:
    reservation_starts plan_start)."""
    data = quarter([chat(16)], commitments=[contract(16, "2025-11-15", "2026-11-14")],
                   reservation_starts="plan_start", tiers=["on-demand"])
    data["offers"].append({"id": CLOUD_B, "accelerator": "h100-sxm", "provider": "prov-b", "gpus_per_node": 8,
                           "price_per_gpu_hour": {"on-demand": 5.0}, "available_gpus": {}})
    if moves is not None:
        data["policy"]["moves"] = moves
    return data


def test_a_workload_moves_off_an_expiring_contract(tmp_path):
    """Until 2026-11-14 the signed GPUs serve it (sunk); from 2026-11-15 it moves to cloud-b's cheaper on-demand
    ($5.00 × 16 × 24 × 47) instead of renting cloud-a's ($6.88) or running at cloud-b all quarter ($5.00 × 92
    days)."""
    r = _solve(tmp_path, _renewal_plan())
    assert r.cost_total == pytest.approx(5.0 * 16 * 24 * 47)
    assert [(m.date, m.from_offer, m.to_offer) for m in r.moves] == [("2026-11-15", H100, CLOUD_B)]
    never = _solve(tmp_path, _renewal_plan("never"), name="never.yaml")
    assert never.cost_total == pytest.approx(min(OD * 16 * 24 * 47, 5.0 * 16 * 24 * H))
    assert r.cost_total < never.cost_total


def test_a_workload_moves_onto_a_renewal(tmp_path):
    """The signed GPUs are at cloud-b; cloud-a sells reserved-1y from its expiry (reservation_starts: expiries):
    the workload runs on cloud-b's signed GPUs, then on 16 GPUs reserved at cloud-a from 2026-11-15 ($4.60 ×
    16 × 24 × 47), cheaper than cloud-b's $5.00 on demand."""
    data = quarter([chat(16)], commitments=[{**contract(16, "2025-11-15", "2026-11-14"), "offer": CLOUD_B}],
                   reservation_starts="expiries", tiers=["reserved-1y", "on-demand"])
    data["offers"].append({"id": CLOUD_B, "accelerator": "h100-sxm", "provider": "prov-b", "gpus_per_node": 8,
                           "price_per_gpu_hour": {"on-demand": 5.0, "reserved-1y": 4.9}, "available_gpus": {}})
    r = _solve(tmp_path, data)
    assert r.cost_total == pytest.approx(R1Y * 16 * 24 * 47)
    assert [(m.date, m.from_offer, m.to_offer) for m in r.moves] == [("2026-11-15", CLOUD_B, H100)]
    assert {(p.offer, p.tier, p.start) for p in r.purchases} == {(H100, "reserved-1y", "2026-11-15")}


def test_a_plan_without_a_boundary_keeps_the_program_without_moves():
    """No contract, no delivery, no later reservation start: no x[c,π], the rows of the program without moves."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.model import build_model
    from optimizer.optimize.strategy import _segments
    from optimizer.pipeline import as_solved
    from tests.helpers.paths import ROOT

    loaded = as_solved(load_plan(ROOT / "plans" / "q4.yaml"))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands), cuts=False)
    assert not prog.movers and not prog.moves
    assert not any(f.startswith("move") for f in prog.constraint_families)


# --- brute force ---------------------------------------------------------------------------------------------

def _random_plan(rng: random.Random) -> dict:
    """One workload (k GPUs at its busiest hour) and two to four offers: A and B rent gpu-a on demand (B may hold
    GPUs signed for part of the quarter), C sells gpu-a servers delivered after a lead time, D rents gpu-b (twice
    the goodput: another config, so only moves: any reaches it from gpu-a)."""
    k = rng.randint(1, 6)
    profile = [rng.choice([0.5, 1.0]) for _ in range(24)]
    profile[rng.randrange(24)] = 1.0
    w = chat(k, profile)
    w["measured"] = [{"accelerator": "gpu-a", "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": 100},
                     {"accelerator": "gpu-b", "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": 200}]
    offers = [{"id": "a", "accelerator": "gpu-a", "provider": "pa", "gpus_per_node": rng.choice([1, 2]),
               "price_per_gpu_hour": {"on-demand": round(rng.uniform(2, 6), 2)}},
              {"id": "b", "accelerator": "gpu-a", "provider": "pb", "gpus_per_node": rng.choice([1, 2]),
               "price_per_gpu_hour": {"on-demand": round(rng.uniform(2, 6), 2), "reserved-1y": 1.0}}]
    commitments = []
    if rng.random() < 0.7:
        s = rng.randint(-30, 50)
        e = rng.randint(max(s + 10, 5), 110)
        commitments.append({"offer": "b", "tier": "reserved-1y", "gpus": rng.randint(1, k),
                            "start": (START + dt.timedelta(days=s)).isoformat(),
                            "end": (START + dt.timedelta(days=e)).isoformat()})
    if rng.random() < 0.5:
        m = rng.choice([2, 4])
        per_gpu_hour = rng.uniform(0.5, 4.0)
        offers.append({"id": "c", "accelerator": "gpu-a", "provider": "own", "gpus_per_node": m,
                       "price_per_gpu_hour": {},
                       "buy": {"price_per_node": round(per_gpu_hour * 24 * 365 * 4 * m, -2), "life_years": 4,
                               "node_power_kw": 5, "lead_time_days": rng.randint(10, 80)}})
    if rng.random() < 0.5:
        offers.append({"id": "d", "accelerator": "gpu-b", "provider": "pd", "gpus_per_node": 1,
                       "price_per_gpu_hour": {"on-demand": round(rng.uniform(3, 12), 2)}})
    for o in offers:
        o.setdefault("available_gpus", {})
    data = quarter([w], commitments=commitments, reservation_starts="plan_start", tiers=["on-demand", "buy"],
                   moves=rng.choice(["same_hardware", "same_hardware", "any", "never"]))
    data["offers"] = offers
    data["accelerators"] = [{"id": "gpu-a", "memory_gb": 80}, {"id": "gpu-b", "memory_gb": 80}]
    data["day_types"] = {"all": H}
    data["facility"] = {"usd_per_kwh": 0.0}
    return data


def _periods(data: dict) -> list[tuple[int, int]]:
    """[first day, last day + 1) of each contract period: cut at each contract's start and end and the delivery."""
    cuts = {0, H}
    for c in data["commitments"]:
        s = (dt.date.fromisoformat(c["start"]) - START).days
        e = (dt.date.fromisoformat(c["end"]) - START).days + 1
        if e > 0 and s < H:
            cuts |= {max(0, s), min(H, e)}
    for o in data["offers"]:
        if "buy" in o and 0 < o["buy"]["lead_time_days"] < H:
            cuts.add(o["buy"]["lead_time_days"])
    b = sorted(cuts)
    return list(zip(b, b[1:]))


def _enumerated(data: dict) -> float:
    """The cheapest plan, every config per period (as policy.moves allows) and every number of nodes bought."""
    w = data["workloads"][0]
    peak = w["demand"]["peak_output_tokens_per_s"]
    profile = w["demand"]["profile"]
    goodput = {g["accelerator"]: g["goodput_output_tokens_per_s"] for g in w["measured"]}
    offers = {o["id"]: o for o in data["offers"]}
    periods = _periods(data)
    moves = data["policy"]["moves"]

    def gpus(o: dict, h: int) -> int:
        return math.ceil(peak * profile[h] / goodput[o["accelerator"]] - 1e-9)

    def signed(a: int, b: int) -> int:
        g = 0
        for c in data["commitments"]:
            s = (dt.date.fromisoformat(c["start"]) - START).days
            e = (dt.date.fromisoformat(c["end"]) - START).days + 1
            g += c["gpus"] if s <= a and e >= b else 0
        return g

    def period_cost(oid: str, a: int, b: int, nodes: int) -> float:
        o = offers[oid]
        m = o["gpus_per_node"]
        if "buy" in o:
            if a < o["buy"]["lead_time_days"] or any(gpus(o, h) > nodes * m for h in range(24)):
                return math.inf
            return 0.0
        k = signed(a, b) if oid == "b" else 0
        price = o["price_per_gpu_hour"]["on-demand"]
        return (b - a) * sum(math.ceil(max(0, gpus(o, h) - k) / m) * m * price for h in range(24))

    best = math.inf
    most = max(math.ceil(peak / goodput["gpu-a"] / offers["c"]["gpus_per_node"]) if "c" in offers else 0, 0)
    for nodes in range(most + 1):
        bought = 0.0
        if nodes:
            c = offers["c"]
            bought = nodes * c["buy"]["price_per_node"] / 4 / 365 * (H - c["buy"]["lead_time_days"])
        for choice in itertools.product(sorted(offers), repeat=len(periods)):
            first = offers[choice[0]]["accelerator"]
            if moves == "never" and len(set(choice)) > 1:
                continue
            if moves == "same_hardware" and any(offers[o]["accelerator"] != first for o in choice):
                continue
            cost = bought + sum(period_cost(o, a, b, nodes) for o, (a, b) in zip(choice, periods))
            best = min(best, cost)
    return best


SOLVERS = [s for s in ("highs", "cbc") if s in available_solvers()]


@pytest.mark.parametrize("solver", SOLVERS)
def test_moves_match_the_brute_force_on_random_small_plans(tmp_path, solver):
    rng = random.Random(4501 if solver == "highs" else 4502)
    for i in range(10):
        data = _random_plan(rng)
        r = _solve(tmp_path, data, solver, f"p{i}.yaml")
        assert r.status == "optimal", i
        assert r.cost_total == pytest.approx(_enumerated(data), rel=1e-9, abs=1e-6), (i, data["policy"]["moves"])


def test_moves_of_offer_only_never_cost_more_than_no_moves(tmp_path):
    """The default (same_hardware) only adds choices to moves: never; and moves: never is the program as it was."""
    rng = random.Random(4503)
    for i in range(5):
        data = _random_plan(rng)
        data["policy"]["moves"] = "never"
        never = _solve(tmp_path, data, name=f"never{i}.yaml")
        data["policy"].pop("moves")
        default = _solve(tmp_path, data, name=f"default{i}.yaml")
        assert default.cost_total <= never.cost_total + 1e-6, i
        assert never.cost_total == pytest.approx(_enumerated({**data, "policy": {**data["policy"], "moves": "never"}}))


def test_the_result_of_a_plan_that_moves_names_each_period(tmp_path):
    r = _solve(tmp_path, _lead_time_plan())
    assert [p.label for p in r.periods] == [x.period for x in r.workload("chat").configs_by_period]
