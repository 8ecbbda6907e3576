"""Each constraint family of the integer program, biting on a small plan with a hand-computed answer.

Unless a test says otherwise: one day, occupancy 1, no spares, no rollout, goodput 100 tok/s per
1-GPU replica — so a demand of 100·k tok/s needs exactly k GPUs, and costs are GPU-hours × price.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.candidates import build as candidates_mod
from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.errors import InfeasiblePlan, PlanError
from optimizer.inputs.loading import load_plan
from optimizer.optimize.solver import available_solvers
from optimizer.optimize.strategy import solve_candidates
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.paths import ROOT
from tests.helpers.small_plans import PEAKY, api, batch, interactive, offer, plan, write
from tests.helpers.solving import NO_TIME_LIMIT
from tests.helpers.steps import patch_steps


SEED = ROOT / "plans" / "seed-fleet.yaml"



def solve(tmp_path: Path, data: dict, solver: str | None = None):
    return solve_plan(write(tmp_path, data), SolveOptions(solver=solver))


def tiers(result) -> dict[tuple[str, str], int]:
    """GPUs bought per (offer, tier); unshared reservations come as one row per pool, summed here."""
    out: dict[tuple[str, str], int] = {}
    for p in result.purchases:
        out[(p.offer, p.tier)] = out.get((p.offer, p.tier), 0) + p.gpus
    return out


def hours(on: int, off: int = 0) -> list[float]:
    """`on` hours at full demand from midnight, then none."""
    return [1.0] * on + [0.0] * (24 - on)


# --- reserved tiers: only past break-even ----------------------------------------------------------


@pytest.mark.parametrize("solver", available_solvers())
def test_reserved_for_a_flat_load(tmp_path, solver):
    """Reserved at 0.6 × on-demand: 1 GPU all day reserved = 24 × 0.60 = 14.40 < 24.00 on demand."""
    r = solve(tmp_path, plan([interactive("w", 100)], [offer("o", on_demand=1.0, reserved_1y=0.6)]), solver)
    assert tiers(r) == {("o", "reserved-1y"): 1}
    assert r.cost_total == pytest.approx(14.4)
    assert r.cost_by_tier["reserved"] == pytest.approx(14.4)


@pytest.mark.parametrize("on_hours, tier, cost", [
    (14, "on-demand", 14.0),     # 58% of hours: 14 GPU-hours on demand < 14.40 reserved
    (15, "reserved-1y", 14.4),   # 62.5%: 15.00 on demand > 14.40 reserved
])
def test_reserved_only_past_break_even(tmp_path, on_hours, tier, cost):
    r = solve(tmp_path, plan([interactive("w", 100, hours(on_hours))],
                             [offer("o", on_demand=1.0, reserved_1y=0.6)]))
    assert tiers(r) == {("o", tier): 1}
    assert r.cost_total == pytest.approx(cost)


def test_reserved_covers_the_base_on_demand_the_peak(tmp_path):
    """2 GPUs all day, a 3rd for 8 hours: reserve 2 (2 × 24 × 0.6 = 28.80), rent the 3rd (8 × 1 = 8)."""
    profile = [2 / 3] * 16 + [1.0] * 8
    r = solve(tmp_path, plan([interactive("w", 300, profile)], [offer("o", on_demand=1.0, reserved_1y=0.6)]))
    assert tiers(r) == {("o", "reserved-1y"): 2, ("o", "on-demand"): 1}
    assert r.cost_total == pytest.approx(36.8)


def test_reserved_cost_spans_the_horizon_and_day_types(tmp_path):
    """Reserved is paid 24 h × horizon_days; on-demand per day type's days.

    weekday (5 days): 1 GPU 24 h; weekend (2 days): none. Reserved 1 GPU: 0.6 × 24 × 7 = 100.80;
    on demand: 5 × 24 × 1.0 = 120. So reserved.
    With reserved at 0.75: 126 > 120, so on demand.
    """
    data = plan([interactive("w", 100)], [offer("o", on_demand=1.0, reserved_1y=0.6)])
    data["workloads"][0]["demand"]["profile"] = {"weekday": [1.0] * 24, "weekend": [0.0] * 24}
    data.update(horizon_days=7, day_types={"weekday": 5, "weekend": 2})
    r = solve(tmp_path, data)
    assert tiers(r) == {("o", "reserved-1y"): 1}
    assert r.cost_total == pytest.approx(100.8)
    data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = 0.75
    r = solve(tmp_path, data)
    assert tiers(r) == {("o", "on-demand"): 1}
    assert r.cost_total == pytest.approx(120.0)


# --- node granularity ----------------------------------------------------------------------------


def test_three_gpus_on_an_eight_gpu_node_buy_eight(tmp_path):
    r = solve(tmp_path, plan([interactive("w", 300)], [offer("o", m=8, on_demand=2.0)]))
    assert tiers(r) == {("o", "on-demand"): 8}
    assert r.cost_total == pytest.approx(8 * 2.0 * 24)
    assert r.workload("w").gpus_at_peak == 3


def test_workloads_in_one_pool_share_nodes(tmp_path):
    """3 + 3 GPUs in one pool fit one 8-GPU node; in two pools each pool rents its own node."""
    same = solve(tmp_path, plan([interactive("a", 300), interactive("b", 300)], [offer("o", m=8, on_demand=2.0)]))
    assert tiers(same) == {("o", "on-demand"): 8}
    assert same.cost_total == pytest.approx(384)
    two = solve(tmp_path, plan([interactive("a", 300), interactive("b", 300, pool="small")],
                               [offer("o", m=8, on_demand=2.0)]))
    assert tiers(two) == {("o", "on-demand"): 16}
    assert two.cost_total == pytest.approx(768)


@pytest.mark.parametrize("shared, cost", [(True, 8 * 1.2 * 24), (False, 2 * 8 * 1.2 * 24)])
def test_reserved_nodes_lent_across_pools_only_when_shared(tmp_path, shared, cost):
    """Two pools of 3 GPUs each: one shared reserved node (230.40) carries both; unshared, each
    pool holds its own (460.80, still below an on-demand node per pool: 2 × 384)."""
    data = plan([interactive("a", 300), interactive("b", 300, pool="small")],
                [offer("o", m=8, on_demand=2.0, reserved_1y=1.2)], share_reserved_across_pools=shared)
    r = solve(tmp_path, data)
    assert r.cost_total == pytest.approx(cost)
    assert tiers(r) == {("o", "reserved-1y"): 8 if shared else 16}


def test_shared_reservation_lends_gpus_by_the_hour(tmp_path):
    """Pool A needs 4 GPUs by day (12 h), pool B 4 by night: one shared 4-GPU node serves both
    (4 × 0.6 × 24 = 57.60); unshared, each pool needs its own: reserved 4 GPUs each (115.20) or
    on-demand 12 h each (2 × 48 = 96), so 96."""
    day, night = [0.0] * 12 + [1.0] * 12, [1.0] * 12 + [0.0] * 12
    data = plan([interactive("a", 400, day), interactive("b", 400, night, pool="small")],
                [offer("o", m=4, on_demand=1.0, reserved_1y=0.6)])
    assert solve(tmp_path, data).cost_total == pytest.approx(57.6)
    data["policy"]["share_reserved_across_pools"] = False
    assert solve(tmp_path, data).cost_total == pytest.approx(96.0)


# --- caps ------------------------------------------------------------------------------------------------


def test_a_cap_forces_a_second_offer(tmp_path):
    """Two workloads of 4 GPUs; the cheap offer sells 4 on demand: one moves to the dear offer."""
    offers = [offer("cheap", "gpu-a", caps={"on-demand": 4}, on_demand=1.0), offer("dear", "gpu-b", on_demand=1.5)]
    r = solve(tmp_path, plan([interactive("a", 400), interactive("b", 400)], offers))
    assert tiers(r) == {("cheap", "on-demand"): 4, ("dear", "on-demand"): 4}
    assert r.cost_total == pytest.approx((4 * 1.0 + 4 * 1.5) * 24)
    assert sorted(w.offer for w in r.workloads) == ["cheap", "dear"]
    uncapped = copy.deepcopy(plan([interactive("a", 400), interactive("b", 400)], offers))
    uncapped["offers"][0]["available_gpus"] = {}
    assert solve(tmp_path, uncapped).cost_total == pytest.approx(8 * 1.0 * 24)


def test_a_workload_does_not_split_across_offers(tmp_path):
    """6 GPUs, the cheap offer sells 4: one config per workload, so all 6 on the dear offer."""
    offers = [offer("cheap", "gpu-a", caps={"on-demand": 4}, on_demand=1.0), offer("dear", "gpu-b", on_demand=1.5)]
    r = solve(tmp_path, plan([interactive("w", 600)], offers))
    assert tiers(r) == {("dear", "on-demand"): 6}
    assert r.cost_total == pytest.approx(6 * 1.5 * 24)


def test_reserved_cap(tmp_path):
    """Reserved capped at 2 GPUs: a flat 3-GPU load reserves 2 and rents 1 (2×14.40 + 24)."""
    r = solve(tmp_path, plan([interactive("w", 300)],
                             [offer("o", caps={"reserved-1y": 2}, on_demand=1.0, reserved_1y=0.6)]))
    assert tiers(r) == {("o", "reserved-1y"): 2, ("o", "on-demand"): 1}
    assert r.cost_total == pytest.approx(2 * 14.4 + 24)


def test_caps_that_cannot_cover_the_peak_name_workload_hour_and_offer(tmp_path):
    """4 GPUs at 14:00, 2 otherwise; 3 on-demand GPUs to be had: exit 1, and the reason says so."""
    profile = [0.5] * 24
    profile[14] = 1.0
    data = plan([interactive("chat", 400, profile)], [offer("tight-offer", caps={"on-demand": 3}, on_demand=1.0)],
                tiers=["on-demand"])
    path = write(tmp_path, data)
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(path)
    text = "\n".join(exc.value.reasons)
    assert "chat" in text and "14:00" in text and "tight-offer" in text, text
    assert "need" in text and "4" in text and "3" in text
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    assert "14:00" in res.output and "tight-offer" in res.output and "chat" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


# --- spot -----------------------------------------------------------------------------------------------


def test_spot_only_for_pools_allowed_to(tmp_path):
    """Spot at 0.40 vs on-demand 1.00: interactive (not a spot pool) pays on demand."""
    data = plan([interactive("chat", 100)], [offer("o", on_demand=1.0, spot=0.4)], tiers=["on-demand", "spot"])
    r = solve(tmp_path, data)
    assert tiers(r) == {("o", "on-demand"): 1}
    assert r.cost_total == pytest.approx(24.0)
    data["policy"]["spot_pools"] = ["batch", "interactive"]
    r = solve(tmp_path, data)
    assert tiers(r) == {("o", "spot"): 1}
    assert r.cost_total == pytest.approx(24 * 0.4)


@pytest.mark.parametrize("interruption, tier, cost", [
    (0.0, "spot", 24 * 0.4),        # 24 replica-hours on 24 spot GPU-hours
    (0.5, "spot", 48 * 0.4),        # each spot GPU counts half: 48 spot GPU-hours, 19.20 < 24 on demand
    (0.75, "on-demand", 24 * 1.0),  # a quarter: 96 × 0.40 = 38.40 > 24 on demand
])
def test_spot_derated_by_interruption_for_batch(tmp_path, interruption, tier, cost):
    """A batch job of 24 replica-hours (100 tok/s × 3600 × 24 tokens) in a 24-hour window."""
    o = offer("o", on_demand=1.0, spot=0.4)
    o["spot_interruption"] = interruption
    r = solve(tmp_path, plan([batch("nightly", 100 * 3600 * 24, [0, 0])], [o], tiers=["on-demand", "spot"]))
    assert {t for (_o, t) in tiers(r)} == {tier}
    assert r.cost_total == pytest.approx(cost)


# --- cooling ----------------------------------------------------------------------------------------


def test_rented_liquid_cooled_accelerators_need_no_facility(tmp_path):
    """Rented capacity brings its own cooling: a liquid-cooled offer is a candidate without facility.liquid_cooling."""
    data = plan([interactive("w", 100, accs=("gpu-air", "gpu-liquid"))],
                [offer("air", "gpu-air", on_demand=2.0), offer("liquid", "gpu-liquid", on_demand=1.0)])
    data["accelerators"] = [{"id": "gpu-air", "memory_gb": 80},
                            {"id": "gpu-liquid", "memory_gb": 80, "cooling": "liquid"}]
    r = solve(tmp_path, data)
    assert r.workload("w").offer == "liquid"
    assert r.cost_total == pytest.approx(24.0)
    assert not any(d.family == "cooling" for d in r.dropped)


# --- API overflow and build vs buy -------------------------------------------------------------------



# Overflow is "when the fleet is full": the fleet is sized for a ceiling of B base replicas and the
# gateway sends each hour's demand above B·γ·occupancy to the API; B is as low as keeps each day
# type's spilled tokens within api.max_share of its tokens (candidates.overflow_levels).


@pytest.mark.parametrize("share, ceiling, gpu_hours, api_tok_s_h", [
    (0.0, 10, 22 * 5 + 2 * 10, 0),
    (0.05, 7, 22 * 5 + 2 * 7, 600),    # 650 allowed: B 7 spills 2 × 300 = 600; B 6 would spill 800
    (0.1, 5, 24 * 5, 1000),            # 1 300 allowed: B 5 spills 2 × 500; B 4 would spill 3 400
])
def test_overflow_capped_at_max_share_of_the_days_tokens(tmp_path, share, ceiling, gpu_hours, api_tok_s_h):
    """A nearly free API ($0.01/M output tokens) takes as much as the share allows."""
    r = solve(tmp_path, plan([interactive("chat", 1000, PEAKY, api=api(0.01, share))], [offer("o", on_demand=1.0)]))
    w = r.workload("chat")
    assert w.offer == "o"
    assert max(w.hourly_gpus["all"]) == ceiling
    assert r.cost_by_tier["on_demand"] == pytest.approx(gpu_hours)
    assert r.cost_by_tier["api"] == pytest.approx(api_tok_s_h * 3600 * 0.01 / 1e6)
    assert w.api_share == pytest.approx(api_tok_s_h / 13000)
    assert w.api_share <= share + 1e-12


def test_overflow_of_a_flat_load(tmp_path):
    """1000 tok/s all day: a ceiling of 9 replicas spills 100 of 1000 every hour, 10% > 5%: no overflow
    at 5%; at 10%, 9 replicas (216 GPU-hours) and 2 400 tok/s·h to the API."""
    r = solve(tmp_path, plan([interactive("chat", 1000, api=api(0.01, 0.05))], [offer("o", on_demand=1.0)]))
    assert r.workload("chat").api_share == 0
    assert r.cost_total == pytest.approx(240.0)
    r = solve(tmp_path, plan([interactive("chat", 1000, api=api(0.01, 0.1))], [offer("o", on_demand=1.0)]))
    assert r.workload("chat").api_share == pytest.approx(0.1)
    assert r.cost_total == pytest.approx(216.0 + 2400 * 3600 * 0.01 / 1e6)


def test_overflow_share_is_per_day_not_per_hour(tmp_path):
    """Peak 1000 tok/s for 2 hours, 100 otherwise: the day has 2×1000 + 22×100 = 4 200 tok/s·h;
    10% = 420 may go to the API: a ceiling of 8 replicas spills 2 × 200 = 400 at the peak hours.
    GPUs: 22 × 1 + 2 × 8 = 38, plus 400 × 3600 tokens at $0.01/M. Read per hour, 10% of each
    peak hour would allow a ceiling of 9 only: 40."""
    profile = [0.1] * 22 + [1.0] * 2
    r = solve(tmp_path, plan([interactive("chat", 1000, profile, api=api(0.01, 0.1))], [offer("o", on_demand=1.0)]))
    assert r.cost_by_tier["on_demand"] == pytest.approx(38.0)
    assert r.cost_total == pytest.approx(38.0 + 400 * 3600 * 0.01 / 1e6)


def test_overflow_share_per_day_type(tmp_path):
    """Weekday as PEAKY, weekend 500 flat; 5% of each day type: the weekday ceiling of 7 spills
    nothing at the weekend. GPU-hours 5 × (22 × 5 + 2 × 7) + 2 × 24 × 5 = 860; API 5 × 600 tok/s·h."""
    data = plan([interactive("chat", 1000, api=api(0.01, 0.05))], [offer("o", on_demand=1.0)])
    data["workloads"][0]["demand"]["profile"] = {"weekday": PEAKY, "weekend": [0.5] * 24}
    data.update(horizon_days=7, day_types={"weekday": 5, "weekend": 2})
    r = solve(tmp_path, data)
    assert r.cost_by_tier["on_demand"] == pytest.approx(860.0)
    assert r.cost_by_tier["api"] == pytest.approx(5 * 600 * 3600 * 0.01 / 1e6)


def test_overflow_shrinks_the_rollout_share_too(tmp_path):
    """1 spare, rollout 0.5: 500 tok/s needs 5 + 1 + ceil(3) = 9 GPUs; the peak 10 + 1 + 6 = 17, at a
    ceiling of 7 only 7 + 1 + 4 = 12. 5% overflow: 22 × 9 + 2 × 12 = 222 GPU-hours instead of 232."""
    data = plan([interactive("chat", 1000, PEAKY, api=api(0.01, 0.05))], [offer("o", on_demand=1.0)],
                spares=1, rollout_fraction=0.5)
    r = solve(tmp_path, data)
    assert r.cost_by_tier["on_demand"] == pytest.approx(222.0)
    w = r.workload("chat")
    assert max(w.hourly_gpus["all"]) == 12
    assert w.api_share == pytest.approx(600 / 13000)


def test_overflow_ceiling_as_low_as_the_share_allows(tmp_path):
    """10 000 tok/s all day, a nearly free API, max_share 0.95: a ceiling of 5 replicas spills 95%."""
    r = solve(tmp_path, plan([interactive("chat", 10000, api=api(0.01, 0.95))], [offer("o", on_demand=1.0)]))
    assert r.cost_by_tier["on_demand"] == pytest.approx(5 * 24)
    assert r.workload("chat").api_share == pytest.approx(0.95)
    assert r.cost_total == pytest.approx(120 + 0.95 * 10000 * 3600 * 24 * 0.01 / 1e6)


@pytest.mark.parametrize("price, served_by", [(0.01, "api"), (1000.0, "o")])
def test_build_vs_buy(tmp_path, price, served_by):
    """max_share 1: the whole workload may go to the API. 100 tok/s all day with 1 spare:
    the GPUs cost 2 × 24 = 48; the API 100 × 86 400 tokens = 8.64 M at $0.01/M = 0.0864 (buy)
    or at $1000/M = 8 640 (build)."""
    data = plan([interactive("chat", 100, api=api(price, 1.0))], [offer("o", on_demand=1.0)], spares=1)
    r = solve(tmp_path, data)
    w = r.workload("chat")
    if served_by == "api":
        assert w.offer is None
        assert w.api_share == pytest.approx(1.0)
        assert r.cost_total == pytest.approx(0.0864)
        assert not r.purchases
    else:
        assert w.offer == "o"
        assert w.api_share == pytest.approx(0.0)
        assert r.cost_total == pytest.approx(48.0)


# --- batch windows ---------------------------------------------------------------------------------------


def test_batch_runs_inside_its_window_wrapping_midnight(tmp_path):
    """16 replica-hours inside [22, 6) — hours 22, 23, 0..5: 2 GPUs for 8 hours = 16 GPU-hours."""
    r = solve(tmp_path, plan([batch("nightly", 100 * 3600 * 16, [22, 6])], [offer("o", on_demand=1.0)]))
    gpus = r.workload("nightly").hourly_gpus["all"]
    window = {22, 23, 0, 1, 2, 3, 4, 5}
    assert all(g == 0 for h, g in enumerate(gpus) if h not in window), gpus
    assert sum(gpus) == 16
    assert r.cost_total == pytest.approx(16.0)


def test_batch_window_with_a_cap(tmp_path):
    """1 on-demand GPU to be had: 8 window hours give 8 of the 16 replica-hours — no plan;
    the whole day as window gives 16."""
    capped = offer("o", caps={"on-demand": 1}, on_demand=1.0)
    with pytest.raises(InfeasiblePlan):
        solve(tmp_path, plan([batch("nightly", 100 * 3600 * 16, [22, 6])], [capped]))
    r = solve(tmp_path, plan([batch("nightly", 100 * 3600 * 16, [0, 0])], [capped]))
    assert r.cost_total == pytest.approx(16.0)
    assert max(r.workload("nightly").hourly_gpus["all"]) == 1


def test_batch_overflow_to_the_api(tmp_path):
    """max_share 0.5 of a 16 replica-hour job to a nearly free API: 8 GPU-hours + 2.88 M tokens at $0.01/M."""
    r = solve(tmp_path, plan([batch("nightly", 100 * 3600 * 16, [22, 6], api=api(0.01, 0.5))],
                             [offer("o", on_demand=1.0)]))
    assert r.cost_by_tier["on_demand"] == pytest.approx(8.0)
    assert r.cost_by_tier["api"] == pytest.approx(0.5 * 100 * 3600 * 16 * 0.01 / 1e6)
    assert r.workload("nightly").api_share == pytest.approx(0.5)


def test_batch_fills_idle_gpus_of_its_pool(tmp_path):
    """Interactive needs 3 GPUs of an 8-GPU node all day; a batch job of 5 × 24 replica-hours in the
    same pool runs on the 5 idle GPUs: still one node, 8 × 24 = 192."""
    r = solve(tmp_path, plan([interactive("chat", 300), batch("fill", 100 * 3600 * 24 * 5, [0, 0], pool="interactive")],
                             [offer("o", m=8, on_demand=1.0)]))
    assert tiers(r) == {("o", "on-demand"): 8}
    assert r.cost_total == pytest.approx(192.0)


@pytest.mark.parametrize("shared, cost", [(True, 4 * 0.6 * 24), (False, 2 * 4 * 12 * 1.0)])
def test_reserved_node_serves_chat_by_day_and_batch_by_night(tmp_path, shared, cost):
    """Chat needs 4 GPUs 08:00–20:00; a batch job of 48 replica-hours runs in [20, 8). Shared, one
    reserved 4-GPU node carries both (57.60); unshared, each pool rents 48 GPU-hours (96)."""
    data = plan([interactive("chat", 400, [0.0] * 8 + [1.0] * 12 + [0.0] * 4),
                 batch("night", 100 * 3600 * 48, [20, 8])],
                [offer("o", m=4, on_demand=1.0, reserved_1y=0.6)], share_reserved_across_pools=shared)
    r = solve(tmp_path, data)
    assert r.cost_total == pytest.approx(cost)
    night = r.workload("night").hourly_gpus["all"]
    assert all(g == 0 for g in night[8:20]), night


# --- fixed reservations ------------------------------------------------------------------------------------


def test_reserve_gpus_takes_all_from_one_offer(tmp_path):
    """12 GPUs; the cheap offer sells 8: all 12 on the dear one (12 × 1.5 × 24 = 432), not 8 + 4."""
    offers = [offer("cheap", "gpu-a", caps={"on-demand": 8}, on_demand=1.0), offer("dear", "gpu-b", on_demand=1.5)]
    research = {"name": "research", "pool": "experiments", "reserve_gpus": {"count": 12}}
    r = solve(tmp_path, plan([research], offers, tiers=["on-demand"]))
    assert tiers(r) == {("dear", "on-demand"): 12}
    assert r.cost_total == pytest.approx(432.0)
    research["reserve_gpus"]["count"] = 8
    r = solve(tmp_path, plan([research], offers, tiers=["on-demand"]))
    assert tiers(r) == {("cheap", "on-demand"): 8}
    research["reserve_gpus"]["count"] = 20
    offers[1]["available_gpus"] = {"on-demand": 16}
    with pytest.raises(InfeasiblePlan):
        solve(tmp_path, plan([research], offers, tiers=["on-demand"]))


# --- TP and the scale-up domain ------------------------------------------------------------------------


def test_tp_beyond_the_scale_up_domain_is_dropped(tmp_path):
    data = plan([interactive("w", 100, tp=[1, 2, 4, 8])], [offer("o", m=8, on_demand=1.0)])
    data["accelerators"][0]["scale_up_gpus"] = 2
    w = data["workloads"][0]
    w["measured"] = [{"accelerator": "gpu-a", "precision": "bf16", "tp": t, "goodput_output_tokens_per_s": 100 * t}
                     for t in (1, 2, 4, 8)]
    w["accelerators"] = ["gpu-a"]
    cands = build_candidates(load_plan(write(tmp_path, data)))
    kept_or_dominated = {c.tp for c in cands.by_workload["w"]} | {
        int(d.option.rsplit("tp", 1)[1]) for d in cands.dropped if d.family == "dominated"}
    assert kept_or_dominated == {1, 2}
    scale_up = [d for d in cands.dropped if d.family == "scale-up"]
    assert {d.option for d in scale_up} == {"gpu-a · bf16 · tp4", "gpu-a · bf16 · tp8"}
    assert all("scale-up domain" in d.reason for d in scale_up)


def test_tp_beyond_the_node_is_dropped(tmp_path):
    """A replica never spans two purchase units: TP 4 on 2-GPU nodes is dropped."""
    data = plan([interactive("w", 100, tp=[2, 4])], [offer("o", m=2, on_demand=1.0)])
    data["workloads"][0]["measured"] = [
        {"accelerator": "gpu-a", "precision": "bf16", "tp": t, "goodput_output_tokens_per_s": 100 * t} for t in (2, 4)]
    data["workloads"][0]["accelerators"] = ["gpu-a"]
    cands = build_candidates(load_plan(write(tmp_path, data)))
    assert [c.tp for c in cands.by_workload["w"]] == [2]
    assert any(d.family == "scale-up" and "tp4" in d.option for d in cands.dropped)


def test_only_tp_beyond_the_scale_up_domain_fits(tmp_path):
    """200 B at bf16 = 400 GB needs 8 × 80 GB; the domain is 4 GPUs: no candidate, exit 2, with reasons."""
    data = plan([interactive("big", 100, tp=[1, 2, 4, 8])], [offer("o", m=8, on_demand=1.0)])
    data["models"][0]["params_b"] = 200
    data["accelerators"][0]["scale_up_gpus"] = 4
    data["workloads"][0]["accelerators"] = ["gpu-a"]
    data["workloads"][0]["measured"] = [
        {"accelerator": "gpu-a", "precision": "bf16", "tp": t, "goodput_output_tokens_per_s": 100 * t}
        for t in (1, 2, 4, 8)]
    with pytest.raises(PlanError, match="no candidate config") as exc:
        solve(tmp_path, data)
    text = str(exc.value)
    assert "scale-up" in text and "fit" in text


# --- input errors and exit codes for the two "no plan" cases ----------------------------------------------


def test_a_model_that_fits_nowhere_is_an_input_error(tmp_path):
    data = plan([interactive("huge", 100, tp=[1, 2, 4, 8])], [offer("o", m=8, on_demand=1.0)])
    data["models"][0]["params_b"] = 1000
    data["workloads"][0]["measured"] = []
    path = write(tmp_path, data)
    with pytest.raises(PlanError) as exc:
        solve_plan(path)
    p = exc.value.problems[0]
    assert p.file == str(path) and p.line is not None
    assert "'huge' has no candidate config" in p.message
    assert "does not fit" in p.message and "fit:" in p.message
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert f"{path}:" in res.output and "no candidate config" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


# --- golden case: the seed ---------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", available_solvers())
def test_seed_golden(solver):
    r = solve_plan(SEED, SolveOptions(solver=solver))
    w = r.workload("chat-70b")
    assert (w.replicas.base, w.replicas.spares, w.replicas.rollout, w.replicas.total) == (11, 1, 3, 15)
    assert w.gpus_at_peak == 30
    assert w.kv_concurrency == 46
    assert w.weights_gb == pytest.approx(70)
    assert (w.precision, w.tp) == ("fp8", 2)
    assert r.cost_per_day == pytest.approx(1800)
    assert r.cost_total == pytest.approx(1800)
    assert tiers(r) == {("seed-cloud-80gb", "on-demand"): 30}


def _seed_variant(tmp_path: Path, edit) -> Path:
    text = SEED.read_text(encoding="utf-8")
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(text)
    edit(data)
    return write(tmp_path, data, "seed-variant.yaml")


def test_seed_at_ninety_percent_occupancy(tmp_path):
    """ceil(9000 / (1400 × 0.9)) = 8 base + 1 spare + ceil(0.25 × 9) = 3 → 12 replicas = 24 GPUs = $1,440/day."""
    path = _seed_variant(tmp_path, lambda d: d["policy"].update(occupancy=0.9))
    w = solve_plan(path).workload("chat-70b")
    assert w.replicas.base == 8
    assert w.replicas.total == 12
    assert w.gpus_at_peak == 24
    assert solve_plan(path).cost_per_day == pytest.approx(24 * 2.5 * 24)


def _sixteen_bit(d: dict, precisions: list[str], tps: list[int]) -> None:
    """TPOT 30 ms: a 1400 tok/s replica keeps ceil(1400 × 0.03) = 42 sequences in flight.
    Measured as if the memory did not matter: on 2 GPUs bf16's weights leave room for 2 sequences, a
    measurement the memory model contradicts. A measurement is never dropped by the model's own KV check: it is
    kept, and the result names both numbers."""
    w = d["workloads"][0]
    w.update(precisions=precisions, tp=tps, slo={"tpot_ms": 30})
    goodput = {("fp8", 2): 1400, ("bf16", 2): 1400, ("fp8", 4): 2500, ("bf16", 4): 2400}
    w["measured"] = [{"accelerator": "gpu-80gb", "precision": p, "tp": t, "goodput_output_tokens_per_s": goodput[p, t]}
                     for p in precisions for t in tps]
    d["offers"][0]["gpus_per_node"] = max(tps)


def test_seed_sixteen_bit_measured_on_two_gpus_is_kept_and_named(tmp_path):
    """bf16 on 2 GPUs: 140 GB of weights leave 4 GB = 2 sequences < the 42 its measured 1400 tok/s needs at
    30 ms: kept (the measurement wins), at ceil(9000 / 840) = 11 + 1 + 3 = 15 replicas = 30 GPUs in 4-GPU
    nodes = 32 GPUs = $1,920/day, cheaper than bf16 on 4 GPUs (10 replicas = 40 GPUs); the result names both
    numbers."""
    path = _seed_variant(tmp_path, lambda d: _sixteen_bit(d, ["bf16"], [2, 4]))
    r = solve_plan(path)
    w = r.workload("chat-70b")
    assert (w.precision, w.tp, w.kv_concurrency) == ("bf16", 2, 2)
    assert w.replicas.total == 15 and w.gpus_at_peak == 30
    assert r.cost_per_day == pytest.approx(32 * 2.5 * 24)
    said = [n for n in r.notes if "bf16 · tp2" in n or "tp2" in n and "bf16" in n]
    assert any("needs 42 sequences" in n and "holds 2" in n and "kept" in n for n in said), r.notes


def test_seed_sixteen_or_eight_bit_on_two_gpus_takes_the_cheapest_measurement(tmp_path):
    path = _seed_variant(tmp_path, lambda d: _sixteen_bit(d, ["bf16", "fp8"], [2]))
    r = solve_plan(path)
    w = r.workload("chat-70b")
    assert w.tp == 2 and w.gpus_at_peak == 30
    assert r.cost_per_day == pytest.approx(1800)


# --- dominance pruning is exact ---------------------------------------------------------------------------


def _unpruned(loaded, monkeypatch):
    """Every candidate: neither dominated configs nor dominated offers dropped."""
    with monkeypatch.context() as mp:
        mp.setattr(candidates_mod, "prune_dominated", lambda cands, *a, **k: (sorted(cands, key=lambda c: c.key), []))
        mp.setattr(candidates_mod, "pareto_configs", lambda cands: (list(cands), []))
        if hasattr(candidates_mod, "dominated_offers"):
            mp.setattr(candidates_mod, "dominated_offers", lambda *a, **k: {})
        if hasattr(candidates_mod, "dominated_offers_by_configs"):
            mp.setattr(candidates_mod, "dominated_offers_by_configs", lambda *a, **k: {})
        return build_candidates(loaded)


def _mixed_plan(seed: int) -> dict:
    """Interactive (with and without overflow), batch on spot, and a reservation, on 2- and 4-GPU nodes."""
    import random

    rng = random.Random(seed)
    accs = [{"id": "gpu-a", "memory_gb": 80}, {"id": "gpu-b", "memory_gb": 48}]
    offers = [offer("oa", "gpu-a", m=rng.choice([2, 4]), on_demand=round(rng.uniform(2, 4), 2),
                    reserved_1y=round(rng.uniform(1, 2), 2), spot=round(rng.uniform(0.5, 1.5), 2)),
              offer("ob", "gpu-b", m=rng.choice([1, 2, 4]), on_demand=round(rng.uniform(1, 3), 2),
                    spot=round(rng.uniform(0.4, 1.0), 2))]
    offers[0]["spot_interruption"] = rng.choice([0.0, 0.1, 0.25])

    def measured(base: float) -> list[dict]:
        return [{"accelerator": a["id"], "precision": p, "tp": t,
                 "goodput_output_tokens_per_s": round(base * t ** rng.uniform(0.6, 1.1) * (1.3 if p == "fp8" else 1), 1)}
                for a in accs for p in ("bf16", "fp8") for t in (1, 2, 4)]

    def profile() -> list[float]:
        return [round(rng.choice([0.1, 0.4, 0.7, 1.0]), 2) for _ in range(6) for _ in range(4)]

    ws = [
        interactive("chat", round(rng.uniform(300, 1500)), profile(), precisions=["bf16", "fp8"], tp=[1, 2, 4],
                    measured=measured(rng.uniform(150, 400)), api=api(rng.choice([0.5, 5.0, 50.0]), 0.2)),
        interactive("tools", round(rng.uniform(200, 900)), profile(), pool="small", precisions=["bf16", "fp8"],
                    tp=[1, 2, 4], measured=measured(rng.uniform(150, 400))),
        batch("nightly", round(rng.uniform(2, 20) * 3600 * 200), [22, 6], precisions=["bf16", "fp8"], tp=[1, 2, 4],
              measured=measured(rng.uniform(150, 400)), api=api(rng.choice([1.0, 100.0]), rng.choice([0.0, 0.5]))),
        {"name": "research", "pool": "experiments", "reserve_gpus": {"count": rng.randint(1, 6)}},
    ]
    data = plan(ws, offers, occupancy=0.6, spares=1, rollout_fraction=0.25,
                spot_pools=["batch", "experiments"], share_reserved_across_pools=rng.random() < 0.5)
    data["accelerators"] = accs
    data["models"][0]["params_b"] = 30
    return data


@pytest.mark.parametrize("seed", [2, 3, 6, 8, 9])  # seeds that solve in well under a second
def test_dominance_pruning_never_changes_the_optimum(tmp_path, monkeypatch, seed):
    loaded = load_plan(write(tmp_path, _mixed_plan(seed)))
    pruned = build_candidates(loaded)
    full = _unpruned(loaded, monkeypatch)
    assert pruned.pruned > 0, "the test plan should have something to prune"
    assert sum(map(len, full.by_workload.values())) >= sum(map(len, pruned.by_workload.values())) + pruned.pruned
    opts = SolveOptions(solver="highs", mip_gap=0.0)
    _, with_pruning = solve_candidates(loaded, pruned, opts)
    _, without = solve_candidates(loaded, full, opts)
    assert with_pruning.status == without.status == "optimal"
    assert with_pruning.objective == pytest.approx(without.objective, rel=1e-7)


@pytest.mark.slow
def test_dominance_pruning_on_the_brute_force_plans(tmp_path, monkeypatch):
    """The interactive-only random plans of test_bruteforce: same optimum with and without pruning."""
    from tests.helpers.bruteforce import random_plan

    checked = 0
    for seed in range(16):
        loaded = load_plan(write(tmp_path, random_plan(seed), f"p{seed}.yaml"))
        pruned = build_candidates(loaded)
        if not any(d.family == "dominated" for d in pruned.dropped):
            continue
        full = _unpruned(loaded, monkeypatch)
        opts = SolveOptions(solver="highs", mip_gap=0.0)
        try:
            _, a = solve_candidates(loaded, pruned, opts)
        except InfeasiblePlan:
            with pytest.raises(InfeasiblePlan):
                solve_candidates(loaded, full, opts)
            continue
        _, b = solve_candidates(loaded, full, opts)
        assert a.objective == pytest.approx(b.objective, rel=1e-7), seed
        checked += 1
    assert checked >= 5


def test_dominated_offer_is_dropped_only_when_exact(tmp_path):
    """Same accelerator, 1-GPU nodes (machines up to 2) at 1.00 vs 2-GPU nodes at 1.10: the 2-GPU
    offer never helps. Once the cheap offer is capped (2 GPUs) it may: 3 GPUs → 2 nodes on the other."""
    offers = [offer("fine", "gpu-a", m=1, on_demand=1.0), offer("coarse", "gpu-a", m=2, on_demand=1.1)]
    offers[0]["max_gpus_per_instance"] = 2
    data = plan([interactive("w", 300)], offers, tiers=["on-demand"])
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    assert {c.offer for c in cands.all()} == {"fine"}
    assert any(d.family == "dominated" and d.option == "offer coarse" for d in cands.dropped)
    assert solve_plan(loaded).cost_total == pytest.approx(72.0)
    data["offers"][0]["available_gpus"] = {"on-demand": 2}
    r = solve(tmp_path, data)
    assert tiers(r) == {("coarse", "on-demand"): 4}
    assert r.cost_total == pytest.approx(4 * 1.1 * 24)


def test_batch_overflow_rounding_is_the_hull(tmp_path):
    """30 replica-hours a day on 4-GPU nodes at $4 a node-hour, up to 30% to an API at $4 per M tokens
    (one replica-hour is 360,000 tokens, $1.44): 8 node-hours cost $32; 7 node-hours and 2/30 of
    the day to the API $28 + $2.88 = $30.88; 6 node-hours and 6/30 $24 + $8.64 = $32.64. The LP
    relaxation with the valid inequalities (batch_mir: N + 15·y ≥ 8) already sits at $30.88."""
    from optimizer.optimize.calendar import segment
    from optimizer.optimize.model import build_model
    from optimizer.optimize.solver import solve as solve_program

    job = batch("nightly", 30 * 3600 * 100, [0, 0], accs=("gpu-a",),
                api={"usd_per_m_input": 0.0, "usd_per_m_output": 4.0, "max_share": 0.3})
    data = plan([job], [offer("nodes", "gpu-a", m=4, on_demand=1.0)], tiers=["on-demand"])
    result = solve(tmp_path, data)
    assert result.cost_total == pytest.approx(30.88)
    assert result.cost_by_tier["api"] == pytest.approx(2.88)
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()))
    assert "batch_mir" in prog.constraint_families
    assert solve_program(prog.prob, "highs", relax=True).objective == pytest.approx(30.88)


# --- the solve's steps --------------------------------------------------------------------------------


def _unroundable() -> dict:
    """w1 needs 12 GPUs, w3 6 (gpu-b only), all day. a is cheap but capped at 8 on-demand GPUs, so the
    relaxation puts half of w1 there — the whole of w1 does not fit. The optimum: w1 and w3 share c's
    8-GPU nodes, 18 GPUs in 3 nodes × 8 × 1.50 × 24 h = 864 (w1 on d's reserved instead: 2 × 8 × 1.90
    + 8 × 1.50 = 42.40 an hour)."""
    return plan([interactive("w1", 1200), interactive("w3", 600, accs=("gpu-b",))],
                [offer("a", "gpu-a", m=8, caps={"on-demand": 8}, on_demand=1.0),
                 offer("c", "gpu-b", m=8, on_demand=1.5), offer("d", "gpu-b", m=8, reserved_1y=1.9)])


@pytest.mark.parametrize("solver", available_solvers())
def test_a_relaxation_that_cannot_be_rounded_has_its_configs_chosen_whole(tmp_path, solver):
    """Step 2 holds every workload on the config the relaxation chose most; here that cannot be held.
    With only the config choices whole (capacity fractional) the program is still a relaxation, by hand:

      the LP: half of w1 on a (its rounding row asks 2 nodes of a whole w1, a's cap allows 1): one node,
        $8 an hour; the other half, 6 GPUs, on c beside w3's 6: 1.5 nodes × 8 × $1.50 = $18; $26 × 24 = $624;
      configs whole: w1 cannot sit on a, so 18 GPUs on c, 2.25 nodes × 8 × $1.50 × 24 = $648 — a better
        bound, and the configs the plan needs; held, whole nodes cost $864, the optimum."""
    from optimizer.optimize.model import build_model
    from optimizer.optimize.solver import solve as solve_program
    from optimizer.optimize.strategy import _choices_solved, _segments

    loaded = load_plan(write(tmp_path, _unroundable()))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands))
    assert solve_program(prog.prob, solver, relax=True).objective == pytest.approx(624.0)
    held, bound = _choices_solved(prog, solver, lambda share: {"time_limit_s": NO_TIME_LIMIT}, 1e-6)
    assert bound == pytest.approx(648.0, rel=1e-6)
    assert held.status == "optimal" and held.objective == pytest.approx(864.0)
    assert {w: key.split("/")[1] for w, (_v, key) in prog.largest_choices().items()} == {"w1": "c", "w3": "c"}
    # the relaxation is undone: nodes whole again
    assert all(v.cat == "Integer" for v in prog.on_demand.values())


@pytest.mark.parametrize("solver", available_solvers())
def test_a_relaxation_that_cannot_be_rounded_still_starts_the_search(tmp_path, solver, monkeypatch):
    """When the program with its choices whole finds no plan either (its work), step 2's last fallback holds
    only what the relaxation was sure of (w3 on c) and takes the first plan with w1 free; the search then
    proves the optimum (_unroundable: $864)."""
    import optimizer.optimize.strategy as strategy
    from optimizer.optimize.solver import solve as solve_program

    calls = []
    real = solve_program

    def spy(prob, solver_name="highs", **kw):
        calls.append(kw.get("first_plan", False))
        return real(prob, solver_name, **kw)

    def nothing(prog, solver_name, limits, gap, *_policy):
        return strategy.SolveInfo(solver_name, "error", 0.0, None, None, None), None

    patch_steps(monkeypatch, "solve", spy)
    patch_steps(monkeypatch, "_choices_solved", nothing)
    # offer a is w1's alone: taken apart (model.define_sole_tenant), its config would not need the fallback
    monkeypatch.setattr(strategy, "_sole_tenant_costs", lambda *a: None)
    r = solve(tmp_path, _unroundable(), solver)
    assert True in calls, "the fallback did not run"
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(864.0)
    assert {w.name: w.offer for w in r.workloads} == {"w1": "c", "w3": "c"}


@pytest.mark.parametrize("solver", available_solvers())
def test_a_relaxation_that_cannot_be_rounded_is_solved_through_its_whole_configs(tmp_path, solver):
    r = solve(tmp_path, _unroundable(), solver)
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(864.0)
    assert {w.name: w.offer for w in r.workloads} == {"w1": "c", "w3": "c"}


def test_whole_configs_given_their_pools_whole_nodes_prove_the_plan_they_hold(tmp_path):
    """After step 2 has chosen whole configs (nodes continuous: $648, _unroundable) and held them ($864), the same
    program given the rows that round each pool's GPUs up to whole nodes together at those configs
    (_rounded_in_rounds) bounds every plan, by hand:

      w1 and w3 on c: 18 GPUs, ⌈18/8⌉ = 3 nodes × 8 × $1.50 × 24 = $864 — the rows are tight at their configs;
      w1 on d instead: its 12 GPUs reserved, 2 nodes × 8 × $1.90 × 24 = $729.60, and w3's 6 GPUs left on c
        round to one node (the row loosens by ⌊12/8⌋ + min(1, 0.5/0.25) = 2 of its 3), $288: $1,017.60;
      w1 on a: its cap (8 GPUs) holds no whole w1.
    So the bound rises from $648 to $864 and the plan is proven without a search over every config."""
    from optimizer.optimize.model import build_model
    from optimizer.optimize.strategy import (
        _choices_solved,
        _rounded_in_rounds,
        _segments,
    )

    loaded = load_plan(write(tmp_path, _unroundable()))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands))
    held, bound = _choices_solved(prog, "highs", lambda share: {"time_limit_s": NO_TIME_LIMIT}, 1e-6)
    assert (held.objective, bound) == (pytest.approx(864.0), pytest.approx(648.0, rel=1e-6))
    heard = []
    incumbent, values, proven = _rounded_in_rounds(prog, "highs", lambda share: {"time_limit_s": NO_TIME_LIMIT},
                                                   lambda: True, 1e-6, held.objective, prog.values(), bound,
                                                   lambda *a: heard.append(a))
    assert proven == pytest.approx(864.0, rel=1e-6) and incumbent == pytest.approx(864.0)
    assert ("bound", pytest.approx(864.0), pytest.approx(864.0, rel=1e-6)) in heard
    assert "pooled_rounding" in prog.constraint_families
    # the plan's values are back in the program, its nodes whole
    assert {w: key.split("/")[1] for w, (_v, key) in prog.largest_choices().items()} == {"w1": "c", "w3": "c"}
    assert all(v.cat == "Integer" for v in prog.on_demand.values())
    assert {v.varValue for (o, _p, _s, _h), v in prog.on_demand.items() if o == "c"} == {3.0}  # every hour


# --- valid inequalities in the relaxation: separated, the same bound as all of them ------------------


def _relaxation(tmp_path, data, cuts: bool):
    from optimizer.optimize.calendar import segment
    from optimizer.optimize.model import build_model
    loaded = load_plan(write(tmp_path, data))
    cands = build_candidates(loaded)
    return build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()), cuts=cuts)


@pytest.mark.parametrize("solver", available_solvers())
def test_separated_node_rounding_gives_the_bound_of_every_row(tmp_path, solver):
    """3 GPUs all day: on 8-GPU nodes at $2 a GPU-hour a whole node costs $384, on 1-GPU nodes at $3 the 3 GPUs
    cost $216. Without node rounding the relaxation rents 3/8 of a node ($144); the rows it violates (one
    per hour) lift it to $216, the bound with every row, and then none is violated."""
    from optimizer.optimize.cuts import separate_cuts
    from optimizer.optimize.solver import solve as run
    data = plan([interactive("w", 300)], [offer("big", m=8, on_demand=2.0), offer("one", acc="gpu-b", on_demand=3.0)],
                tiers=["on-demand"])
    every = _relaxation(tmp_path, data, cuts=True)
    assert run(every.prob, solver, relax=True).objective == pytest.approx(216)
    prog = _relaxation(tmp_path, data, cuts=False)
    assert run(prog.prob, solver, relax=True).objective == pytest.approx(144)
    assert separate_cuts(prog) == 24
    assert run(prog.prob, solver, relax=True).objective == pytest.approx(216)
    assert separate_cuts(prog) == 0
    assert len(prog.constraint_families["node_rounding"]) == len(every.constraint_families["node_rounding"]) == 24
    plan_ = solve(tmp_path, data, solver)
    assert plan_.cost_total == pytest.approx(216)


def test_twin_workloads_are_sized_once_and_drop_under_their_own_names(tmp_path):
    """Workloads alike in everything sizing reads share one sizing (candidates.build._sizing_key): the same
    configs and goodputs, and each one's dropped options under its own name."""
    w = {"model": "llama-3.1-70b", "precisions": ["bf16", "fp8"], "accelerators": ["h100-sxm", "a100-80gb"],
         "tokens": {"input": 2000, "output": 300}, "slo": {"ttft_ms": 1000, "tpot_ms": 50},
         "demand": {"peak_output_tokens_per_s": 2000}}
    data = {"plan": "twins", "horizon_days": 30, "catalogs": ["builtin"],
            "workloads": [{"name": "left", **w}, {"name": "right", **w}]}
    cands = build_candidates(load_plan(write(tmp_path, data)))
    left = {c.key.split("/", 1)[1]: c.goodput for c in cands.by_workload["left"]}
    right = {c.key.split("/", 1)[1]: c.goodput for c in cands.by_workload["right"]}
    assert left and left == right
    drops = {name: sorted((d.option, d.family, d.reason) for d in cands.dropped if d.workload == name)
             for name in ("left", "right")}
    assert drops["left"] and drops["left"] == drops["right"]
    assert any(d.family == "fit" for d in cands.dropped if d.workload == "right")
