"""Servers of your own (owned, bought) in the program, against numbers computed by hand and against a
brute-force enumeration (tests/helpers/own_enumerate.py) of tiny random plans.

Unless a test says otherwise: energy at $0.10/kWh, PUE 1.25, no colocation; 8-GPU servers; occupancy
1, no spares, no rollout, 1-GPU replicas at the measured goodput; flat demand (every hour of every day
alike), so a bought server serving all day costs, a GPU-hour, its fixed cost a day ÷ (24 × 8) plus
the serving energy. The formulas (candidates/ownership.py):

    ownership a year = price·(1 − residual)/life + cost_of_capital·price·(1 + residual)/2 + support
    idle energy a day = idle kW × PUE × tariff × 24        (idle default: 30% of the load power)
    colocation a day  = colo $/kW-month × load kW × 12 / 365
    serving energy    = (load − idle) kW / GPUs per server × PUE × tariff, per GPU-hour serving
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.own_enumerate import brute_force, random_plan
from tests.helpers.solving import seeds_by_solver

SOLVERS = available_solvers()
TARIFF, PUE = 0.10, 1.25
H = 30

# A bought H100 server, lead time 0: $300,000, 4-year life, 10% residual, 8% cost of capital,
# $10,000 support a year, 10.2 kW at load, 3.0 kW idle, in a facility charging $150 per kW-month.
BUY = {"price_per_node": 300000, "life_years": 4, "residual_fraction": 0.1, "cost_of_capital": 0.08,
       "support_per_year": 10000, "node_power_kw": 10.2, "idle_power_kw": 3.0}
COLO = 150
OWN_YEAR = 300000 * 0.9 / 4 + 0.08 * 300000 * 1.1 / 2 + 10000      # 67,500 + 13,200 + 10,000 = 90,700
IDLE_DAY = 3.0 * PUE * TARIFF * 24                                  # $9.00 a server-day
COLO_DAY = COLO * 10.2 * 12 / 365                                   # $50.30 a server-day
UNIT_DAY = OWN_YEAR / 365 + IDLE_DAY + COLO_DAY                     # $307.79 a server-day in service
SERVE = (10.2 - 3.0) / 8 * PUE * TARIFF                             # $0.1125 a GPU-hour serving
PER_GPU_HOUR = UNIT_DAY / (24 * 8) + SERVE                          # $1.7156 at 100% use


# --- plans ------------------------------------------------------------------------------------------------


def accelerators() -> list[dict]:
    return [{"id": "h100-sxm", "memory_gb": 80}, {"id": "b200", "memory_gb": 192}]


def own_plan(workloads: list[dict], offers: list[dict], *, horizon: int = H, owned: list[dict] = (),
             start: str | None = None, **facility) -> dict:
    data = {"plan": "owned test", "horizon_days": horizon, "catalogs": [],
            "policy": {"occupancy": 1.0, "spares": 0, "rollout_fraction": 0.0, "mip_gap": 0},
            "models": [{"id": "m7", "params_b": 7, "kv_gb_per_seq": 0.5}], "accelerators": accelerators(),
            "facility": {"usd_per_kwh": TARIFF, "pue": PUE, **facility}, "offers": offers, "workloads": workloads}
    if owned:
        data["owned"] = list(owned)
    if start:
        data["start_date"] = start
    return data


def buy_offer(oid: str = "buy-h100", acc: str = "h100-sxm", prices: dict | None = None, **terms) -> dict:
    return {"id": oid, "accelerator": acc, "provider": "own", "gpus_per_node": 8,
            "price_per_gpu_hour": prices or {}, "buy": {**BUY, **terms}}


def cloud_offer(oid: str = "cloud-h100", acc: str = "h100-sxm", **prices: float) -> dict:
    return {"id": oid, "accelerator": acc, "provider": "cloud", "gpus_per_node": 8,
            "price_per_gpu_hour": {k.replace("_", "-"): v for k, v in prices.items()}}


def hold(name: str, gpus: int, **extra) -> dict:
    return {"name": name, "reserve_gpus": {"count": gpus}, **extra}


def chat(name: str, tokens_per_s: float, goodput: dict[str, float]) -> dict:
    return {"name": name, "model": "m7", "precisions": ["bf16"], "tp": [1], "tokens": {"input": 1000, "output": 200},
            "measured": [{"accelerator": a, "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": g}
                         for a, g in goodput.items()],
            "demand": {"peak_output_tokens_per_s": tokens_per_s, "profile": [1.0] * 24}}


def solve(tmp_path: Path, data: dict, solver: str | None = None, name: str = "plan.yaml"):
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")  # JSON is YAML 1.2
    return solve_plan(path, SolveOptions(solver=solver))


def tiers(r) -> dict[tuple[str, str], int]:
    return {(p.offer, p.tier): p.gpus for p in r.purchases}


def check_sums(r) -> None:
    """Every plan: the tiers add up to the total, and the months of the cash flow to the all-in spend."""
    assert sum(r.cost_by_tier.values()) == pytest.approx(r.cost_total, rel=1e-9)
    assert sum(row.amount for row in r.cash_flow) == pytest.approx(r.cost_all_in, rel=1e-9)


# --- a. buy or reserve: the reserved price either side of owning's cost per GPU-hour --------------------


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("delta, tier", [(+0.005, "buy"), (-0.005, "reserved-1y")])
def test_buy_when_reserving_costs_more_than_owning(tmp_path, solver, delta, tier):
    """16 GPUs all horizon: 2 servers bought cost 2 × $307.79 × 30 + 16 × 24 × 30 × $0.1125 = 16 GPUs
    × 720 h × $1.7156; a reservation at $0.005 more per GPU-hour loses to it, at $0.005 less wins."""
    price = round(PER_GPU_HOUR + delta, 6)
    r = solve(tmp_path, own_plan([hold("hold", 16)], [buy_offer(), cloud_offer(reserved_1y=price)],
                                 colo_usd_per_kw_month=COLO), solver)
    check_sums(r)
    if tier == "buy":
        assert tiers(r) == {("buy-h100", "buy"): 16}
        buy = 2 * OWN_YEAR / 365 * H                                        # $14,909.59 ownership
        facility = 2 * (IDLE_DAY + COLO_DAY) * H + 16 * 24 * H * SERVE     # $3,558.08 + $1,296.00
        assert r.cost_by_tier["buy"] == pytest.approx(buy)
        assert r.cost_by_tier["facility"] == pytest.approx(facility)
        assert r.cost_total == pytest.approx(buy + facility)
        assert r.cost_total == pytest.approx(16 * 24 * H * PER_GPU_HOUR)   # $19,763.67
        (b,) = r.own.bought
        assert (b.nodes, b.gpus, b.delivery_day, b.capex) == (2, 16, 0, 600000)
        assert b.utilization == pytest.approx(1.0)
        assert b.depreciation_in_horizon == pytest.approx(2 * 67500 / 365 * H)
        assert b.capital_in_horizon == pytest.approx(2 * 13200 / 365 * H)
        assert b.support_in_horizon == pytest.approx(2 * 10000 / 365 * H)
    else:
        assert tiers(r) == {("cloud-h100", "reserved-1y"): 16}
        assert r.cost_total == pytest.approx(16 * price * 24 * H)          # $19,008.98
        assert r.cost_by_tier["buy"] == 0 and r.cost_by_tier["facility"] == 0
        assert r.own.bought == []
    # break-even against the reservation: owning wins below (P − F)/V of use, F fixed, V serving energy
    (row,) = [b for b in r.own.break_even if b.against == "cloud-h100"]
    assert row.fixed_per_gpu_hour == pytest.approx(UNIT_DAY / (24 * 8))
    assert row.serving_energy_per_gpu_hour == pytest.approx(SERVE)
    assert row.wins_to == pytest.approx(min(1.0, (price - UNIT_DAY / (24 * 8)) / SERVE))
    assert (row.wins_to == pytest.approx(1.0)) == (tier == "buy")


# --- b. delivered mid-horizon: on demand until then --------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
def test_on_demand_bridges_until_delivery(tmp_path, solver):
    """Ordered 2027-01-04 with a 10-day lead time: delivered 2027-01-14 (day 10). The buy offer rents
    the same servers on demand at $4.00: 16 GPUs × 24 h × 10 days on demand, then 2 servers bought
    serve the other 20 days (buying beats 20 more days on demand: $13,176 against $30,720)."""
    data = own_plan([hold("hold", 16)], [buy_offer(prices={"on-demand": 4.0}, lead_time_days=10)],
                    start="2027-01-04", colo_usd_per_kw_month=COLO)
    r = solve(tmp_path, data, solver)
    check_sums(r)
    od_hours = 16 * 24 * 10                                                 # 3,840 GPU-hours
    buy = 2 * OWN_YEAR / 365 * 20                                           # $9,939.73
    facility = 2 * (IDLE_DAY + COLO_DAY) * 20 + 16 * 24 * 20 * SERVE        # $2,372.05 + $864.00
    rows = {p.tier: p for p in r.purchases}
    assert set(rows) == {"buy", "on-demand"}
    assert rows["on-demand"].gpu_hours == pytest.approx(od_hours)
    assert rows["on-demand"].cost == pytest.approx(od_hours * 4.0)         # $15,360
    assert rows["buy"].gpus == 16 and rows["buy"].gpu_hours == pytest.approx(16 * 24 * 20)
    assert rows["buy"].cost == pytest.approx(buy)
    assert r.cost_by_tier["on_demand"] == pytest.approx(od_hours * 4.0)
    assert r.cost_by_tier["buy"] == pytest.approx(buy)
    assert r.cost_by_tier["facility"] == pytest.approx(facility)
    assert r.cost_total == pytest.approx(od_hours * 4.0 + buy + facility)
    (b,) = r.own.bought
    assert (b.order_date, b.delivery_date, b.delivery_day, b.nodes) == ("2027-01-04", "2027-01-14", 10, 2)
    assert [p.days for p in r.periods] == [10, 20]
    before = [h for h in r.hourly if h.period.startswith("2027-01-04")]
    after = [h for h in r.hourly if h.period.startswith("2027-01-14")]
    assert len(before) == len(after) == 24
    assert all((h.on_demand_gpus, h.reserved_gpus) == (16, 0) for h in before)
    assert all((h.on_demand_gpus, h.reserved_gpus) == (0, 16) for h in after)
    # the horizon runs 2027-01-04 to 2027-02-02: the bought servers' 20 days are 18 in January, 2 in February
    by = Counter()
    for row in r.cash_flow:
        by[(row.month, row.tier)] += row.amount
    assert by[("2027-02", "buy")] == pytest.approx(buy * 2 / 20)
    assert by[("2027-01", "buy")] == pytest.approx(buy * 18 / 20)
    assert by[("2027-01", "on-demand")] == pytest.approx(od_hours * 4.0)
    assert by[("2027-02", "on-demand")] == 0


# --- c. a power limit buys the denser accelerator -------------------------------------------------------


H100_KW, B200_KW = 10.2, 14.3
H100_UNIT_DAY = 250000 / 5 / 365 + 0.3 * H100_KW * PUE * TARIFF * 24      # $136.99 + $9.18 idle
B200_UNIT_DAY = 600000 / 5 / 365 + 0.3 * B200_KW * PUE * TARIFF * 24      # $328.77 + $12.87 idle
H100_SERVE = 0.7 * H100_KW / 8 * PUE * TARIFF                             # $0.1116 a GPU-hour
B200_SERVE = 0.7 * B200_KW / 8 * PUE * TARIFF                             # $0.1564 a GPU-hour
# 3,200 output tokens/s: 32 H100 replicas at 100 tok/s (4 servers, 40.8 kW), or 13 B200 at 250 (2, 28.6 kW)
H100_COST = 4 * H100_UNIT_DAY * H + 32 * 24 * H * H100_SERVE              # $20,110.35
B200_COST = 2 * B200_UNIT_DAY * H + 13 * 24 * H * B200_SERVE              # $21,962.18


def _dense_plan(**facility) -> dict:
    """Two servers to buy, no residual, no cost of capital, no support, idle at the default 30% of load."""
    simple = {"residual_fraction": 0.0, "cost_of_capital": 0.0, "support_per_year": 0.0, "life_years": 5}
    offers = [buy_offer("buy-h100", "h100-sxm", price_per_node=250000, node_power_kw=H100_KW, **simple),
              buy_offer("buy-b200", "b200", price_per_node=600000, node_power_kw=B200_KW, **simple)]
    for o in offers:
        del o["buy"]["idle_power_kw"]
    return own_plan([chat("chat", 3200, {"h100-sxm": 100, "b200": 250})], offers, **facility)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_power_limit_buys_the_denser_accelerator(tmp_path, solver):
    free = solve(tmp_path, _dense_plan(), solver, "free.yaml")
    check_sums(free)
    assert tiers(free) == {("buy-h100", "buy"): 32}
    assert free.cost_total == pytest.approx(H100_COST)
    assert free.own.facility.power_kw_used == pytest.approx(4 * H100_KW)
    assert free.own.facility.binding == []

    tight = solve(tmp_path, _dense_plan(power_kw=35), solver, "tight.yaml")   # 40.8 kW of H100s do not fit
    check_sums(tight)
    assert tiers(tight) == {("buy-b200", "buy"): 16}
    assert tight.workloads[0].gpus_at_peak == 13
    assert tight.cost_total == pytest.approx(B200_COST)
    assert tight.own.facility.power_kw_used == pytest.approx(2 * B200_KW)
    assert "power_kw" in tight.own.facility.binding
    assert tight.own.facility.marginal["power_kw_plus_1000"] == pytest.approx(B200_COST - H100_COST)  # $1,851.83


# --- d. owned servers serve first -------------------------------------------------------------------------

OWNED = {"accelerator": "h100-sxm", "nodes": 2, "gpus_per_node": 8, "node_power_kw": H100_KW,
         "support_per_year": 12000, "since": "2024-06-01", "book_value_per_node": 120000, "remaining_life_years": 2}
OWNED_FIXED = 2 * (0.3 * H100_KW * PUE * TARIFF * 24 + 12000 / 365) * H   # idle + support: $2,523.42 (sunk capital aside)


@pytest.mark.parametrize("solver", SOLVERS)
def test_owned_servers_serve_before_anything_is_rented(tmp_path, solver):
    """24 GPUs in three 8-GPU workloads, 16 GPUs owned: two workloads run on the owned servers (their
    serving energy only), the third is rented: 8 GPUs reserved at $2.00 (not 24)."""
    data = own_plan([hold("a", 8), hold("b", 8), hold("c", 8)], [cloud_offer(on_demand=3.0, reserved_1y=2.0)],
                    owned=[OWNED], start="2027-01-04")
    r = solve(tmp_path, data, solver)
    check_sums(r)
    assert sorted(w.offer for w in r.workloads) == ["cloud-h100", "owned-h100-sxm", "owned-h100-sxm"]
    assert tiers(r) == {("cloud-h100", "reserved-1y"): 8}
    serving = 16 * 24 * H * H100_SERVE                                       # $1,285.20
    assert r.cost_by_tier["reserved"] == pytest.approx(8 * 2.0 * 24 * H)    # $11,520
    assert r.cost_by_tier["facility"] == pytest.approx(OWNED_FIXED + serving)
    assert r.cost_by_tier["buy"] == 0
    assert r.cost_total == pytest.approx(8 * 2.0 * 24 * H + OWNED_FIXED + serving)
    owned = [h for h in r.hourly if h.offer == "owned-h100-sxm"]
    assert len(owned) == 24 and all(h.committed_gpus == 16 and h.demand_gpus == 16 for h in owned)
    (o,) = r.own.owned
    assert (o.offer, o.nodes, o.gpus) == ("owned-h100-sxm", 2, 16)
    assert o.utilization == pytest.approx(1.0)
    assert o.depreciation_in_horizon == pytest.approx(2 * 120000 * H / 365 / 2)   # sunk: reported only


def test_policy_providers_keeps_the_owned_servers(tmp_path):
    """`providers` names the accounts to rent from; servers you own are paid for either way and still serve
    (leaving them out had rented 24 GPUs beside 16 idle owned ones)."""
    data = own_plan([hold("a", 8), hold("b", 8), hold("c", 8)], [cloud_offer(on_demand=3.0, reserved_1y=2.0)],
                    owned=[OWNED], start="2027-01-04")
    data["policy"]["providers"] = ["cloud"]
    r = solve(tmp_path, data)
    assert sorted(w.offer for w in r.workloads) == ["cloud-h100", "owned-h100-sxm", "owned-h100-sxm"]
    assert tiers(r) == {("cloud-h100", "reserved-1y"): 8}


def test_an_owned_only_plan_short_of_owned_gpus_says_so(tmp_path):
    """No rented tier, no offer to buy: 24 GPUs of demand on 16 owned. The diagnosis names the owned GPUs
    and what to change (it had said "the diagnosis solve found no reason")."""
    from optimizer.errors import InfeasiblePlan

    data = own_plan([chat("chat", 2400.0, {"h100-sxm": 100.0})], [], owned=[OWNED], start="2027-01-04")
    data["policy"]["providers"] = ["own"]
    with pytest.raises(InfeasiblePlan) as err:
        solve(tmp_path, data)
    (reason,) = err.value.reasons
    assert reason == ("chat (24 GPUs) needs 24 owned h100-sxm GPUs in 8-GPU nodes at 00:00 on every day; "
                      "owned-h100-sxm (own) has 16 of them (short all day)")
    assert "buy more" in err.value.fix and "policy.providers" in err.value.fix


def test_a_sweep_point_spend_adds_up_to_the_cost_with_servers_of_your_own(tmp_path):
    from optimizer.results.sweep import tier_spend

    data = own_plan([hold("a", 8), hold("b", 8), hold("c", 8)], [cloud_offer(on_demand=3.0, reserved_1y=2.0)],
                    owned=[OWNED], start="2027-01-04")
    r = solve(tmp_path, data)
    spend = tier_spend(r)
    assert spend["facility"] == pytest.approx(r.cost_by_tier["facility"]) and spend["facility"] > 0
    assert sum(spend.values()) == pytest.approx(r.cost_total)


def test_a_workload_larger_than_the_owned_servers_rents_all_of_it(tmp_path):
    """A workload runs at one offer: 24 GPUs in one workload do not fit 16 owned GPUs, so all 24 are
    rented and the owned servers stand idle — their idle energy and support still count."""
    data = own_plan([hold("all", 24)], [cloud_offer(on_demand=3.0, reserved_1y=2.0)], owned=[OWNED],
                    start="2027-01-04")
    r = solve(tmp_path, data)
    check_sums(r)
    assert tiers(r) == {("cloud-h100", "reserved-1y"): 24}
    assert r.cost_total == pytest.approx(24 * 2.0 * 24 * H + OWNED_FIXED)
    assert r.own.owned[0].utilization == 0


def test_owned_servers_arriving_inside_the_horizon_count_from_then(tmp_path):
    """Owned servers in service from 2027-01-14 (day 10): their idle energy and support count for
    the 20 days from then."""
    owned = {**OWNED, "since": "2027-01-14"}
    data = own_plan([hold("a", 8)], [cloud_offer(on_demand=3.0)], owned=[owned], start="2027-01-04")
    r = solve(tmp_path, data)
    check_sums(r)
    # a workload runs at one offer all horizon: the owned offer cannot serve days 0–9, so it rents all 30
    assert tiers(r) == {("cloud-h100", "on-demand"): 8}
    assert r.cost_total == pytest.approx(8 * 3.0 * 24 * H + OWNED_FIXED * 20 / H)


# --- the program's choice, reported as made ---------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_rented_node_bought_anyway_serves_whole(tmp_path, solver):
    """12 GPUs at a buy offer that also rents 8-GPU nodes on demand at $1.00/GPU-hour, 10 days; a server
    costs $1,200 over them ($43,800 over a 1-year life), 8 kW at load, 0 idle, energy $0.50/kWh, PUE 1:
    a GPU serving costs $0.50 an hour. Best: 1 server + 1 on-demand node each hour — the rented node's
    8 GPUs are paid whole, so they serve 8 and the server only the other 4:
    1,200 + 8 × 240 h × 1.00 + 4 × 240 h × 0.50 = 3,600 (2 servers: 2,400 + 12 × 240 × 0.5 = 3,840;
    2 on-demand nodes: 3,840). Reading the server as serving 8 would report 4,080 for a plan that costs 3,600."""
    data = own_plan([hold("hold", 12)], [buy_offer(prices={"on-demand": 1.0}, price_per_node=43800, life_years=1,
                                                   residual_fraction=0.0, cost_of_capital=0.0, support_per_year=0,
                                                   node_power_kw=8.0, idle_power_kw=0.0)],
                    horizon=10, usd_per_kwh=0.5, pue=1.0)
    r = solve(tmp_path, data, solver)
    check_sums(r)
    assert tiers(r) == {("buy-h100", "buy"): 8, ("buy-h100", "on-demand"): 8}
    assert r.cost_by_tier["buy"] == pytest.approx(1200)
    assert r.cost_by_tier["on_demand"] == pytest.approx(1920)
    assert r.cost_by_tier["facility"] == pytest.approx(480)
    assert r.cost_total == pytest.approx(3600)
    assert r.cost_total == pytest.approx(r.solver.objective)
    assert all((h.reserved_gpus, h.on_demand_gpus) == (4, 8) for h in r.hourly)
    assert r.own.bought[0].utilization == pytest.approx(0.5)


def test_owned_servers_beyond_the_facility_leave_nothing_to_buy(tmp_path):
    """6 owned servers draw 30 kW in 2 rack positions; the facility states 10 kW and 1 rack. Nothing
    more can be bought — the plan is not infeasible: the 12 GPUs run on the owned servers."""
    owned = {"accelerator": "h100-sxm", "nodes": 6, "gpus_per_node": 8, "node_power_kw": 5.0, "idle_power_kw": 1.5}
    data = own_plan([hold("hold", 12)], [buy_offer(prices={"on-demand": 3.0})], owned=[owned], horizon=10,
                    power_kw=10, racks=1, pue=1.2)
    r = solve(tmp_path, data)
    check_sums(r)
    assert r.workloads[0].offer == "owned-h100-sxm"
    assert r.own.bought == []
    idle = 6 * 1.5 * 1.2 * TARIFF * 24 * 10                                  # $259.20
    serving = 12 * (5.0 - 1.5) / 8 * 1.2 * TARIFF * 24 * 10                  # $151.20
    assert r.cost_total == pytest.approx(idle + serving)
    assert r.own.facility.power_kw_used == pytest.approx(30)


# --- the enumerator on the hand-computed plans -------------------------------------------------------------


def test_the_enumerator_agrees_with_the_hand_values():
    a = own_plan([hold("hold", 16)], [buy_offer(), cloud_offer(reserved_1y=round(PER_GPU_HOUR + 0.005, 6))],
                 colo_usd_per_kw_month=COLO)
    assert brute_force(a) == pytest.approx(16 * 24 * H * PER_GPU_HOUR)
    b = own_plan([hold("hold", 16)], [buy_offer(prices={"on-demand": 4.0}, lead_time_days=10)],
                 start="2027-01-04", colo_usd_per_kw_month=COLO)
    assert brute_force(b) == pytest.approx(16 * 24 * 10 * 4.0 + 2 * UNIT_DAY * 20 + 16 * 24 * 20 * SERVE)
    assert brute_force(_dense_plan()) == pytest.approx(H100_COST)
    assert brute_force(_dense_plan(power_kw=35)) == pytest.approx(B200_COST)
    d = own_plan([hold("a", 8), hold("b", 8), hold("c", 8)], [cloud_offer(on_demand=3.0, reserved_1y=2.0)],
                 owned=[OWNED], start="2027-01-04")
    assert brute_force(d) == pytest.approx(8 * 2.0 * 24 * H + OWNED_FIXED + 16 * 24 * H * H100_SERVE)
    tight = copy.deepcopy(d)
    tight["workloads"] = [hold("all", 24)]
    assert brute_force(tight) == pytest.approx(24 * 2.0 * 24 * H + OWNED_FIXED)


# --- brute force against the program ------------------------------------------------------------------------

SEEDS = list(range(60))
_PLANS: dict[int, tuple[dict, float]] = {}


def expected(seed: int) -> tuple[dict, float]:
    if seed not in _PLANS:
        plan = random_plan(seed)
        best = brute_force(plan)
        assert best is not None
        _PLANS[seed] = (plan, best)
    return _PLANS[seed]


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(SEEDS, SOLVERS))
def test_optimizer_matches_brute_force(tmp_path, seed, solver):
    plan, best = expected(seed)
    r = solve(tmp_path, plan, solver)
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(best, rel=1e-6, abs=1e-6), json.dumps(plan)
    check_sums(r)
    fac = r.own.facility
    if fac.power_kw is not None and r.own.bought:
        assert fac.power_kw_used <= fac.power_kw + 1e-9
    if fac.racks is not None and r.own.bought:
        assert fac.racks_used <= fac.racks


def test_the_random_plans_cover_the_cases():
    plans = [expected(s)[0] for s in SEEDS]
    H_of = {id(p): p["horizon_days"] for p in plans}
    buys = [(p, o["buy"]) for p in plans for o in p["offers"] if "buy" in o]
    feats = {
        "owned": any(p.get("owned") for p in plans),
        "owned arriving inside": any(o.get("since", "2000") > p["start_date"] for p in plans for o in p.get("owned", [])),
        "owned since before": any(o.get("since", "3000") < p["start_date"] for p in plans for o in p.get("owned", [])),
        "lead 0": any(b["lead_time_days"] == 0 for _p, b in buys),
        "lead inside": any(0 < b["lead_time_days"] < H_of[id(p)] for p, b in buys),
        "lead past the horizon": any(b["lead_time_days"] >= H_of[id(p)] for p, b in buys),
        "on-demand bridging": any(o.get("price_per_gpu_hour") and "buy" in o for p in plans for o in p["offers"]),
        "two buy offers": any(sum("buy" in o for o in p["offers"]) == 2 for p in plans),
        "reserved": any("reserved-1y" in o["price_per_gpu_hour"] for p in plans for o in p["offers"]),
        "power limit": any("power_kw" in p["facility"] for p in plans),
        "rack limit": any("racks" in p["facility"] for p in plans),
        "hourly tariff": any(isinstance(p["facility"]["usd_per_kwh"], list) for p in plans),
        "colocation": any("colo_usd_per_kw_month" in p["facility"] for p in plans),
        "interactive": any("demand" in w for p in plans for w in p["workloads"]),
        "reservation": any("reserve_gpus" in w for p in plans for w in p["workloads"]),
        "two workloads": any(len(p["workloads"]) == 2 for p in plans),
        "offer filter": any("offers" in w for p in plans for w in p["workloads"]),
        "two pools sharing": any(p["policy"].get("share_reserved_across_pools") is True for p in plans),
        "two pools apart": any(p["policy"].get("share_reserved_across_pools") is False for p in plans),
    }
    assert all(feats.values()), feats
    assert not math.isinf(sum(expected(s)[1] for s in SEEDS))


def test_a_facility_too_small_for_the_servers_needed_says_which_limit(tmp_path):
    """Only servers to buy (lead time 0, no price to rent), 16 GPUs of demand, power for one 10.2 kW server:
    the diagnosis names the facility's power and its fix, not a cap of GPUs."""
    from optimizer.errors import InfeasiblePlan

    data = own_plan([hold("a", 16)], [buy_offer()], power_kw=15)
    with pytest.raises(InfeasiblePlan) as err:
        solve(tmp_path, data)
    assert err.value.reasons == ["the servers the plan needs to buy draw 20.4 kW at load; the facility has 15.0 kW "
                                 "for them (facility.power_kw 15)"]
    assert err.value.fix.startswith("raise facility.power_kw")
