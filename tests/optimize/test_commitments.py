"""Contracts signed before the plan (`commitments`) and new reservations over their full term.

Unless a test says otherwise: the quarter 2026-10-01 (a Thursday) + 92 days = 66 weekdays and 26
weekend days; goodput 100 tok/s per 1-GPU replica at occupancy 1, no spares, no rollout — so a
demand of 100·k tok/s needs exactly k GPUs; an H100 offer sold in 8-GPU nodes at $6.88 on demand
and $4.60 reserved for a year.
"""

from __future__ import annotations

import copy
import datetime as dt
import json

import pulp
import pytest
from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.optimize.calendar import calendar, segment
from optimizer.optimize.model import build_model
from optimizer.pipeline import solve_plan
from optimizer.results.jsonio import dumps, from_dict, to_dict

from tests.helpers import shipped
from tests.helpers.commitments import H100, OD, PEAKY, R1Y, chat, contract, quarter
from tests.helpers.paths import PLANS
from tests.helpers.small_plans import batch, interactive, offer, write
from tests.helpers.small_plans import plan as small_plan


def bought(result) -> dict[str, int]:
    return {p.tier: p.gpus for p in result.purchases}


def gpu_hours(result, tier: str) -> float:
    return sum(p.gpu_hours for p in result.purchases if p.tier == tier)


# --- acceptance: 64 reserved H100 GPUs already signed until after the horizon ----------------------

# 128 GPUs for 16 hours, 96 for the other 8. Reserved ($4.60 × 24 = $110.40 a day) beats on-demand
# for a GPU used more than 16.05 hours, so GPUs 1–96 are reserved and 97–128 rented for 16 hours.
NEW_RESERVED_WITHOUT = 96 * R1Y * 24 * 92             # 975,052.80
ON_DEMAND = 32 * OD * 16 * 92                         # 324,075.52


def test_without_contracts_the_base_is_reserved(tmp_path):
    r = solve_plan(write(tmp_path, quarter([chat(128, PEAKY)])))
    assert bought(r) == {"reserved-1y": 96, "on-demand": 32}
    assert r.cost_total == pytest.approx(NEW_RESERVED_WITHOUT + ON_DEMAND)   # 1,299,128.32
    assert r.cost_committed == 0 and r.commitments == [] and r.periods == []


def test_signed_gpus_are_used_first_and_the_new_reservation_shrinks(tmp_path):
    """64 signed GPUs (at the contract's own $4.20) cover GPUs 1–64 all quarter: only 32 new reserved."""
    data = quarter([chat(128, PEAKY)], commitments=[contract(64, "2026-03-01", "2027-02-28", price_per_gpu_hour=4.20)])
    r = solve_plan(write(tmp_path, data))
    assert bought(r) == {"reserved-1y": 32, "on-demand": 32}
    assert r.cost_by_tier["reserved"] == pytest.approx(32 * R1Y * 24 * 92)      # 325,017.60
    assert r.cost_total == pytest.approx(32 * R1Y * 24 * 92 + ON_DEMAND)      # 649,093.12: new spend only
    # committed spend, apart: 64 GPUs × $4.20 × 24 h × 92 days in the horizon
    assert r.cost_committed == pytest.approx(64 * 4.20 * 24 * 92)              # 593,510.40
    c, = r.commitments
    assert (c.days_in_horizon, c.contract_days) == (92, 365)
    assert c.total_committed == pytest.approx(64 * 4.20 * 24 * 365)           # 2,354,688
    assert c.monthly == pytest.approx(64 * 4.20 * 24 * 365 / 12)
    assert c.gpu_hours_used == c.gpu_hours_in_horizon == 64 * 24 * 92         # every signed GPU busy
    assert {(h.committed_gpus, h.reserved_gpus) for h in r.hourly} == {(64, 32)}
    # the horizon is not split: the contract covers all of it
    assert r.periods == [] and {h.period for h in r.hourly} == {""}
    d = to_dict(r)
    assert d["cost"]["total"] == pytest.approx(649_093.12) and d["cost"]["committed"] == pytest.approx(593_510.40)
    assert d["commitments"][0]["spend_in_horizon"] == pytest.approx(593_510.40)


def test_new_reservations_show_their_full_term(tmp_path):
    data = quarter([chat(128, PEAKY)], commitments=[contract(64, "2026-03-01", "2027-02-28")])
    r = solve_plan(write(tmp_path, data))
    n, = r.new_commitments
    assert (n.tier, n.gpus, n.term_days, n.term_months) == ("reserved-1y", 32, 365, 12)
    assert n.total_committed == pytest.approx(32 * R1Y * 24 * 365)            # 1,289,472
    assert n.monthly == pytest.approx(107_456.0)
    assert n.horizon_share == pytest.approx(325_017.60)                        # what cost_total counts
    assert n.beyond_horizon == pytest.approx(1_289_472 - 325_017.60)
    assert (n.start, n.end) == ("2026-10-01", "2027-09-30")                    # the 365th day: last of service
    # what ends when: the signed 64 in 2027-Q1 (2027-02-28), the new 32 on 2027-09-30 (Q3)
    ending = {e.quarter: (e.committed_gpus_ending, e.new_gpus_ending) for e in r.expiry}
    assert ending == {"2026-Q4": (0, 0), "2027-Q1": (64, 0), "2027-Q2": (0, 0), "2027-Q3": (0, 32)}
    assert [e.gpus_after for e in r.expiry] == [96, 32, 32, 0]
    d = json.loads(dumps(r))
    assert d["new_commitments"][0]["total_committed"] == pytest.approx(1_289_472)
    assert from_dict(d).new_commitments[0].total_committed == pytest.approx(1_289_472)


def test_a_3_year_reservation_commits_three_years(tmp_path):
    data = quarter([chat(8)], m=1)
    data["offers"][0]["price_per_gpu_hour"] = {"on-demand": OD, "reserved-3y": 3.00}
    data["policy"]["tiers"] = ["reserved-3y", "on-demand"]
    del data["start_date"]
    r = solve_plan(write(tmp_path, data))
    n, = r.new_commitments
    assert (n.gpus, n.term_days, n.term_months) == (8, 1095, 36)
    assert n.total_committed == pytest.approx(8 * 3.00 * 24 * 1095)           # 630,720 for a 92-day plan
    assert n.monthly == pytest.approx(630_720 / 36)
    assert n.horizon_share == pytest.approx(8 * 3.00 * 24 * 92) == r.cost_total
    assert (n.start, n.end, n.end_text) == (None, None, "after 1,095 days")
    assert r.expiry == []                                                      # no dates, no calendar


def test_signed_capacity_that_covers_the_demand_buys_nothing(tmp_path):
    data = quarter([chat(64)], commitments=[contract(64, "2026-01-01", "2027-06-30")])
    r = solve_plan(write(tmp_path, data))
    assert r.purchases == [] and r.cost_total == 0
    assert r.cost_committed == pytest.approx(64 * R1Y * 24 * 92)


def test_signed_gpus_need_not_be_whole_nodes(tmp_path):
    """60 signed GPUs, 64 needed in 8-GPU nodes: one more node on demand (4 of its GPUs idle)."""
    data = quarter([chat(64)], commitments=[contract(60, "2026-01-01", "2027-06-30")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    assert bought(r) == {"on-demand": 8}
    assert gpu_hours(r, "on-demand") == 8 * 24 * 92
    assert {h.committed_gpus for h in r.hourly} == {60}


# --- acceptance: a contract that ends on day 30 of the 92-day quarter -------------------------------

def test_a_contract_ending_on_day_30_supplies_30_days_only(tmp_path):
    """64 GPUs all day; the 64 signed ones end 2026-10-30 (day 30): on demand for the other 62 days."""
    data = quarter([chat(64)], commitments=[contract(64, "2026-02-01", "2026-10-30")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    assert gpu_hours(r, "on-demand") == 64 * 24 * 62                            # 95,232 GPU-hours
    assert r.cost_total == pytest.approx(64 * 24 * 62 * OD)                    # 655,196.16
    assert r.cost_committed == pytest.approx(64 * R1Y * 24 * 30)               # 211,968: its 30 days
    # two periods with their own calendars: Oct 1–30 has 22 weekdays and 8 weekend days
    assert [(p.start, p.end, p.days, p.day_types) for p in r.periods] == [
        ("2026-10-01", "2026-10-30", 30, {"weekday": 22, "weekend": 8}),
        ("2026-10-31", "2026-12-31", 62, {"weekday": 44, "weekend": 18})]
    first, second = (p.label for p in r.periods)
    assert {(h.committed_gpus, h.on_demand_gpus) for h in r.hourly if h.period == first} == {(64, 0)}
    assert {(h.committed_gpus, h.on_demand_gpus) for h in r.hourly if h.period == second} == {(0, 64)}
    assert sum(r.period_days(h) * h.on_demand_gpus for h in r.hourly) == 64 * 24 * 62
    c, = r.commitments
    assert c.days_in_horizon == 30 and c.gpu_hours_used == 64 * 24 * 30


@pytest.mark.parametrize("end, tiers", [
    ("2026-10-30", {"reserved-1y": 64}),    # 62 days on demand ($655,196) > 92 days reserved ($650,035)
    ("2026-12-19", {"on-demand": 64}),      # 12 days on demand ($126,812) < 92 days reserved
])
def test_reserve_or_rent_what_replaces_an_ending_contract(tmp_path, end, tiers):
    """Reservations starting on the horizon's first day only (policy.reservation_starts: plan_start)."""
    data = quarter([chat(64)], commitments=[contract(64, "2026-02-01", end)], reservation_starts="plan_start")
    r = solve_plan(write(tmp_path, data))
    assert bought(r) == tiers
    expected = 64 * R1Y * 24 * 92 if "reserved-1y" in tiers else 64 * OD * 24 * 12
    assert r.cost_total == pytest.approx(expected)


@pytest.mark.parametrize("end, left", [("2026-10-30", 62), ("2026-12-19", 12)])
def test_an_ending_contract_is_renewed_the_day_after_it_ends(tmp_path, end, left):
    """policy.reservation_starts: expiries (the default): a reservation from the day after the contract ends
    replaces it, dearer by the hour than nothing but cheaper than renting or reserving from the first day."""
    data = quarter([chat(64)], commitments=[contract(64, "2026-02-01", end)])
    r = solve_plan(write(tmp_path, data))
    assert bought(r) == {"reserved-1y": 64}
    assert r.cost_total == pytest.approx(64 * R1Y * 24 * left)
    n, = r.new_commitments
    assert n.start == (dt.date.fromisoformat(end) + dt.timedelta(days=1)).isoformat()
    assert n.horizon_share == pytest.approx(64 * R1Y * 24 * left)
    assert n.total_committed == pytest.approx(64 * R1Y * 24 * 365)


def test_a_batch_job_uses_signed_gpus_while_they_last(tmp_path):
    """8 GPUs × 8 hours a night; the signed 8 GPUs end on day 30: 64 GPU-hours a night on demand after."""
    job = batch("nightly", 8 * 8 * 100 * 3600, [0, 8], pool="batch", accs=("h100-sxm",))
    data = quarter([job], m=1, commitments=[contract(8, "2026-02-01", "2026-10-30")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    assert gpu_hours(r, "on-demand") == pytest.approx(64 * 62)
    assert r.workload("nightly").gpu_hours == pytest.approx(64 * 92)


@pytest.mark.parametrize("shared", [True, False])
def test_pools_share_signed_gpus_or_split_them(tmp_path, shared):
    """Two pools of 8 GPUs each on one offer, 12 GPUs signed: either way one 8-GPU node is rented."""
    ws = [chat(8), interactive("tools", 800, pool="small", accs=("h100-sxm",))]
    data = quarter(ws, commitments=[contract(12, "2026-01-01", "2027-06-30")], tiers=["on-demand"],
                   share_reserved_across_pools=shared)
    r = solve_plan(write(tmp_path, data))
    assert bought(r) == {"on-demand": 8}
    assert gpu_hours(r, "on-demand") == 8 * 24 * 92
    assert sum(h.committed_gpus for h in r.hourly if h.day_type == "weekday" and h.hour == 0) == 12


@pytest.mark.parametrize("shared", [True, False])
def test_pools_after_a_contract_ends(tmp_path, shared):
    ws = [chat(8), interactive("tools", 800, pool="small", accs=("h100-sxm",))]
    data = quarter(ws, commitments=[contract(16, "2026-01-01", "2026-10-30")], tiers=["on-demand"],
                   share_reserved_across_pools=shared)
    r = solve_plan(write(tmp_path, data))
    assert gpu_hours(r, "on-demand") == 16 * 24 * 62


# --- the model: unchanged without contracts that start or end inside the horizon ---------------------

def _size(tmp_path, data, name, cuts=False):
    loaded = load_plan(write(tmp_path, data, name))
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()), cuts=cuts)
    return len(prog.prob.variables()), len(prog.prob.constraints()), prog


def test_the_model_is_the_same_size_unless_a_contract_starts_or_ends_inside(tmp_path):
    ws = [chat(128, PEAKY), interactive("tools", 800, [0.5] * 12 + [1.0] * 12, pool="small", accs=("h100-sxm",)),
          batch("nightly", 8 * 8 * 100 * 3600, [0, 8], pool="batch", accs=("h100-sxm",))]
    base = quarter(ws)
    covering = quarter(ws, commitments=[contract(64, "2026-01-01", "2027-06-30")])
    outside = quarter(ws, commitments=[contract(64, "2025-01-01", "2025-12-31")])
    ending = quarter(ws, commitments=[contract(64, "2026-01-01", "2026-10-30")])
    v0, c0, p0 = _size(tmp_path, base, "a.yaml")
    assert p0.segments.calendar is None and p0.segments.offer_segments == {}
    assert _size(tmp_path, covering, "b.yaml")[:2] == (v0, c0)
    assert _size(tmp_path, outside, "c.yaml")[:2] == (v0, c0)
    v3, c3, p3 = _size(tmp_path, ending, "d.yaml")
    assert v3 > v0 and c3 > c0 and set(p3.segments.offer_segments) == {H100}
    # the node-rounding cuts only lose rows where signed GPUs already cover a workload
    with_cuts = _size(tmp_path, base, "a.yaml", cuts=True)[1]
    assert _size(tmp_path, covering, "b.yaml", cuts=True)[1] <= with_cuts
    assert _size(tmp_path, outside, "c.yaml", cuts=True)[1] == with_cuts
    # the sunk cost is not in the objective: it has no constant term
    assert pulp.value(p0.prob.objective.constant) == 0


def test_a_contract_outside_the_horizon_is_reported_and_ignored(tmp_path):
    data = quarter([chat(8)], m=1, commitments=[contract(64, "2025-01-01", "2025-12-31")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    assert r.commitments == [] and r.cost_committed == 0
    assert gpu_hours(r, "on-demand") == 8 * 24 * 92
    assert any("does not overlap" in n and "ignored" in n for n in r.notes)


def test_calendar_shares_day_types_pro_rata_when_the_plan_disagrees_with_the_calendar(tmp_path):
    data = quarter([chat(8)], commitments=[contract(8, "2026-01-01", "2026-10-30")])
    data["day_types"] = {"weekday": 60, "weekend": 32}        # the plan counts holidays as weekend days
    cal = calendar(load_plan(write(tmp_path, data)).plan)
    first, second = cal.periods
    assert first.day_types["weekday"] == pytest.approx(60 * 22 / 66)
    assert first.day_types["weekend"] == pytest.approx(32 * 8 / 26)
    assert sum(p.day_types["weekday"] for p in cal.periods) == pytest.approx(60)
    assert any("pro rata" in n for n in cal.notes)


# --- input rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("start_date"), "no start_date"),
    (lambda d: d["commitments"][0].update(offer="cloud-a-h10"), "unknown offer 'cloud-a-h10'"),
    (lambda d: d["commitments"][0].update(tier="on-demand"), "reserved-1y"),
    (lambda d: d["commitments"][0].update(end="2025-12-31"), "end is before start"),
    (lambda d: d["offers"][0]["price_per_gpu_hour"].pop("reserved-1y"), "no reserved-1y price"),
])
def test_bad_commitments_are_refused(tmp_path, edit, message):
    data = quarter([chat(8)], commitments=[contract(8, "2026-01-01", "2026-12-31")], tiers=["on-demand"])
    edit(data)
    with pytest.raises(PlanError, match=message):
        load_plan(write(tmp_path, data))


def test_a_contract_price_is_enough_when_the_offer_sells_no_such_tier(tmp_path):
    data = quarter([chat(8)], commitments=[contract(8, "2026-01-01", "2026-12-31", price_per_gpu_hour=3.0)],
                   tiers=["on-demand"])
    data["offers"][0]["price_per_gpu_hour"].pop("reserved-1y")
    r = solve_plan(write(tmp_path, data))
    assert r.cost_committed == pytest.approx(8 * 3.0 * 24 * 92) and r.cost_total == 0


# --- views ------------------------------------------------------------------------------------------

def test_json_round_trip_and_old_results_still_load(tmp_path):
    data = quarter([chat(64)], commitments=[contract(64, "2026-02-01", "2026-10-30")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    text = dumps(r)
    assert dumps(from_dict(json.loads(text))) == text
    old = json.loads(text)
    for k in ("commitments", "new_commitments", "expiry", "periods", "start_date"):
        old.pop(k)
    old["cost"].pop("committed")
    for h in old["hourly"]:
        h.pop("period", None)
        h.pop("committed_gpus", None)
    back = from_dict(copy.deepcopy(old))
    assert back.commitments == [] and back.cost_committed == 0


def test_console_shows_committed_apart_from_new_spend(tmp_path):
    data = quarter([chat(128, PEAKY)], commitments=[contract(64, "2026-03-01", "2027-02-28")])
    res = CliRunner().invoke(app, ["solve", str(write(tmp_path, data)), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "$650,035 already committed" in res.output
    assert "New reservations over their full term" in res.output and "$1,289,472" in res.output
    assert "2027-09-30" in res.output and "2027-10-01" not in res.output    # the last day of service
    page = (tmp_path / "out" / "plan.html").read_text(encoding="utf-8")
    assert 'id="commitments"' in page and "$1,289,472" in page and "$650,035" in page


# --- cross-check: with every choice fixed and no reservations, the periods are independent plans -------

def _random_plan(seed: int) -> tuple[dict, int]:
    """Two offers (nodes of 1–8 GPUs), two pools, interactive and batch work, each workload with one
    config; on-demand and spot only — so the quarter is exactly its periods solved apart."""
    import random

    rng = random.Random(seed)
    offers = [offer("oa", "gpu-a", m=rng.choice([1, 2, 4, 8]), on_demand=round(rng.uniform(1, 3), 2),
                    spot=round(rng.uniform(0.4, 0.9), 2)),
              offer("ob", "gpu-b", m=rng.choice([1, 2, 4]), on_demand=round(rng.uniform(1, 3), 2))]
    offers[0]["spot_interruption"] = rng.choice([0.0, 0.1])

    def profile() -> list[float]:
        return [round(rng.choice([0.2, 0.5, 1.0]), 2) for _ in range(6) for _ in range(4)]

    ws = [interactive("chat", rng.randint(3, 20) * 100, {"weekday": profile(), "weekend": profile()},
                      accs=("gpu-a",)),
          interactive("tools", rng.randint(1, 9) * 100, profile(), pool="small", accs=("gpu-a",)),
          interactive("search", rng.randint(1, 9) * 100, profile(), pool="small", accs=("gpu-b",)),
          batch("nightly", rng.randint(4, 40) * 100 * 3600, [22, 6], accs=("gpu-a",))]
    data = small_plan(ws, offers, tiers=["on-demand", "spot"], share_reserved_across_pools=rng.random() < 0.5)
    data.update(horizon_days=92, start_date="2026-10-01", day_types={"weekday": 66, "weekend": 26})
    day = rng.randint(5, 85)
    gpus = rng.randint(1, 24)
    data["commitments"] = [{"offer": "oa", "tier": "reserved-1y", "gpus": gpus, "start": "2026-01-01",
                            "end": f"{__import__('datetime').date(2026, 10, 1) + __import__('datetime').timedelta(days=day - 1)}",
                            "price_per_gpu_hour": 1.0}]
    data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = 1.0
    return data, day


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_split_quarter_costs_what_its_periods_cost_apart(tmp_path, seed):
    import datetime as dt

    data, day = _random_plan(seed)
    whole = solve_plan(write(tmp_path, data, "whole.yaml"))
    assert len(whole.periods) == 2
    first, second = copy.deepcopy(data), copy.deepcopy(data)
    (p1, p2) = whole.periods
    first.update(horizon_days=day, day_types={k: int(v) for k, v in p1.day_types.items()})
    second.update(horizon_days=92 - day, start_date=str(dt.date(2026, 10, 1) + dt.timedelta(days=day)),
                  day_types={k: int(v) for k, v in p2.day_types.items()}, commitments=[])
    a = solve_plan(write(tmp_path, first, "first.yaml"))
    b = solve_plan(write(tmp_path, second, "second.yaml"))
    assert a.periods == [] and a.commitments[0].days_in_horizon == day
    assert whole.cost_total == pytest.approx(a.cost_total + b.cost_total, rel=1e-9, abs=1e-6)
    assert whole.cost_committed == pytest.approx(a.cost_committed)
    for tier in ("on-demand", "spot"):
        assert gpu_hours(whole, tier) == pytest.approx(gpu_hours(a, tier) + gpu_hours(b, tier))


def test_when_a_cap_cannot_replace_an_ending_contract_the_reason_names_the_period(tmp_path):
    from optimizer.errors import InfeasiblePlan

    data = quarter([chat(64)], commitments=[contract(64, "2026-02-01", "2026-10-30")], tiers=["on-demand"])
    data["offers"][0]["available_gpus"] = {"on-demand": 32}
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(write(tmp_path, data))
    assert any("on weekdays from 2026-10-31 to 2026-12-31" in r and "can supply 32" in r for r in exc.value.reasons)


def test_a_contract_starting_inside_the_horizon_supplies_from_its_first_day(tmp_path):
    """Signed, starting 2026-11-30 (day 61): on demand for the first 60 days, then the contract."""
    data = quarter([chat(64)], commitments=[contract(64, "2026-11-30", "2027-11-29")], tiers=["on-demand"])
    r = solve_plan(write(tmp_path, data))
    assert gpu_hours(r, "on-demand") == 64 * 24 * 60
    assert r.cost_committed == pytest.approx(64 * R1Y * 24 * 32)
    assert [p.days for p in r.periods] == [60, 32]


def test_a_contracts_hours_used_and_its_idle_cost_add_up():
    """q4's signed H200s: "used" had counted a batch hour's GPUs whole (64,480 GPU-hours) where the idle
    committed line counts its work (64,336.92): 143 GPU-hours, $677, read two ways."""
    result = shipped.solved(PLANS / "q4.yaml")
    idle = sum((c.gpu_hours_in_horizon - c.gpu_hours_used) * c.price_per_gpu_hour for c in result.commitments)
    assert idle == pytest.approx(result.cost_idle_committed, rel=1e-9)
    assert any(c.gpu_hours_used != int(c.gpu_hours_used) for c in result.commitments)  # a batch job's fraction
