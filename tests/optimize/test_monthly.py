"""Demand that changes by month (demand.peak_by_month): by hand, against the plan without it, bad input,
and a brute-force enumeration of tiny random plans (no LP).

The enumerator walks the calendar itself: each day of the horizon is of its day type (weekday/weekend
or all) and its calendar month; a month's demand is its listed peak (else the stated one) × the day
type's profile; reserved nodes are one level for the horizon, on-demand nodes are bought hour by hour
per (day type, month) for what reserved GPUs do not cover.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import random
from functools import lru_cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs import months
from optimizer.inputs.loading import load_plan
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.tiny_plans import ceil, gpus_for, two_level_profile, write

SOLVERS = available_solvers()
SEEDS = list(range(14))
REL = 1e-6
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri")

runner = CliRunner()

PEAK_PROFILE = [0.5] * 8 + [1.0] * 12 + [0.5] * 4  # 12 hours at the peak, 12 at half


def hand_plan(by_month: dict | None = None, peak: float = 800) -> dict:
    """One offer of 1-GPU nodes at 1.20 reserved, 2.00 on demand per GPU-hour; goodput 100 at occupancy 1,
    so a demand of D tokens/s needs ceil(D / 100) GPUs. 90 days from 2027-01-01: Jan 31, Feb 28, Mar 31."""
    demand: dict = {"peak_output_tokens_per_s": peak, "profile": PEAK_PROFILE}
    if by_month is not None:
        demand["peak_by_month"] = by_month
    return {
        "plan": "monthly by hand", "horizon_days": 90, "start_date": "2027-01-01", "catalogs": [],
        "policy": {"tiers": ["reserved-1y", "on-demand"], "mip_gap": 0, "spares": 0, "rollout_fraction": 0,
                   "occupancy": 1.0},
        "models": [{"id": "m0", "params_b": 8, "kv_gb_per_seq": 0.5}],
        "accelerators": [{"id": "a0", "memory_gb": 80}],
        "offers": [{"id": "o0", "accelerator": "a0", "provider": "p0", "gpus_per_node": 1,
                    "price_per_gpu_hour": {"reserved-1y": 1.2, "on-demand": 2.0}}],
        "workloads": [{"name": "w0", "model": "m0", "tp": [1], "parallelism": ["tp"], "offers": ["o0"],
                       "tokens": {"input": 1000, "output": 200},
                       "measured": [{"accelerator": "a0", "precision": "bf16", "tp": 1,
                                     "goodput_output_tokens_per_s": 100}],
                       "demand": demand}],
    }


RISING = {"2027-01": 200, "2027-02": 400, "2027-03": 800}


def _solve_json(tmp_path: Path, plan: dict, name: str, solver: str = "highs") -> dict:
    path = write(tmp_path, plan, name + ".yaml")
    res = runner.invoke(app, ["solve", str(path), "--json", "--solver", solver, "--alternatives", "0",
                              "-o", str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# --- by hand ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
def test_rising_months_by_hand(solver, tmp_path) -> None:
    """Needs (peak hours / the other 12): Jan 2/1, Feb 4/2, Mar 8/4 GPUs. The R-th reserved GPU costs
    1.2 · 24 · 90 = 2592 and saves 2.00 for every hour the need is above R − 1:
      R 1: 24 h · 90 d = 2160 h → 4320;  R 2: 12·31 + 24·59 = 1788 h → 3576;
      R 3: 12·28 + 24·31 = 1080 h → 2160 < 2592: R = 2.
    On demand then: Jan 0; Feb (4 − 2) · 12 h · 28 d = 672 GPU-h; Mar ((8 − 2) + (4 − 2)) · 12 · 31 = 2976.
    Cost 2 · 2592 + 2.00 · 3648 = 5184 + 7296 = 12480 (reserving 1 or 3 costs 13464 or 12912)."""
    d = _solve_json(tmp_path, hand_plan(RISING), "rising", solver)
    assert d["day_types"] == {"all-2027-01": 31, "all-2027-02": 28, "all-2027-03": 31}
    reserved = [p for p in d["purchases"] if p["tier"] == "reserved-1y"]
    assert [p["gpus"] for p in reserved] == [2]
    assert {h["reserved_gpus"] for h in d["hourly"]} == {2}  # one level, every month
    assert {h["day_type"] for h in d["hourly"]} == set(d["day_types"])
    od_hours = {m: sum(h["on_demand_gpus"] * d["day_types"][m] for h in d["hourly"] if h["day_type"] == m)
                for m in d["day_types"]}
    assert od_hours == {"all-2027-01": 0, "all-2027-02": 672, "all-2027-03": 2976}
    need = {m: sorted({h["demand_gpus"] for h in d["hourly"] if h["day_type"] == m}) for m in d["day_types"]}
    assert need == {"all-2027-01": [1, 2], "all-2027-02": [2, 4], "all-2027-03": [4, 8]}
    assert d["cost"]["by_tier"]["reserved"] == pytest.approx(5184)
    assert d["cost"]["by_tier"]["on_demand"] == pytest.approx(7296)
    assert d["cost"]["total"] == pytest.approx(12480)
    od = next(p for p in d["purchases"] if p["tier"] == "on-demand")
    assert od["gpu_hours"] == pytest.approx(3648) and od["gpus"] == 6
    assert brute_force(hand_plan(RISING)) == pytest.approx(12480)


def test_without_monthly_peaks_the_plan_is_unchanged(tmp_path) -> None:
    """No peak_by_month: months.expand hands back the very plan it was given (so the program and its
    JSON are what they were before monthly demand existed), with or without start_date."""
    for with_start in (True, False):
        plan = hand_plan()
        if not with_start:
            del plan["start_date"]
        loaded = load_plan(write(tmp_path, plan, f"plain{with_start}.yaml"))
        assert months.expand(loaded) is loaded
    d = _solve_json(tmp_path, hand_plan(), "plain")
    assert d["day_types"] == {"all": 90}
    assert {h["day_type"] for h in d["hourly"]} == {"all"}


@pytest.mark.parametrize("solver", SOLVERS)
def test_constant_monthly_peaks_cost_what_the_plain_plan_costs(solver, tmp_path) -> None:
    """Every month at the stated peak: the same plan as without peak_by_month, cut into three months."""
    plain = _solve_json(tmp_path, hand_plan(), "plain", solver)
    flat = _solve_json(tmp_path, hand_plan({m: 800 for m in RISING}), "flat", solver)
    assert flat["cost"] == plain["cost"]
    assert flat["purchases"] == plain["purchases"]
    assert [(w["name"], w["offer"], w["replicas"]) for w in flat["workloads"]] == \
        [(w["name"], w["offer"], w["replicas"]) for w in plain["workloads"]]
    assert set(flat["day_types"]) == {"all-2027-01", "all-2027-02", "all-2027-03"}
    for h in plain["hourly"]:
        rows = [r for r in flat["hourly"] if r["hour"] == h["hour"]]
        assert len(rows) == 3
        for r in rows:
            assert {k: r[k] for k in ("demand_gpus", "reserved_gpus", "on_demand_gpus")} == \
                {k: h[k] for k in ("demand_gpus", "reserved_gpus", "on_demand_gpus")}
    # a month left out keeps the stated peak: listing two of three at it is the same plan again
    partial = _solve_json(tmp_path, hand_plan({"2027-01": 800, "2027-03": 800}), "partial", solver)
    assert partial["cost"] == plain["cost"] and partial["purchases"] == plain["purchases"]


def test_unlisted_month_keeps_the_stated_peak(tmp_path) -> None:
    """Feb not listed: it keeps the stated 800 (8/4 GPUs), so it costs what Mar does a day."""
    d = _solve_json(tmp_path, hand_plan({"2027-01": 200, "2027-03": 800}), "gap")
    need = {m: sorted({h["demand_gpus"] for h in d["hourly"] if h["day_type"] == m}) for m in d["day_types"]}
    assert need == {"all-2027-01": [1, 2], "all-2027-02": [4, 8], "all-2027-03": [4, 8]}
    assert d["cost"]["total"] == pytest.approx(brute_force(hand_plan({"2027-01": 200, "2027-03": 800})))


# --- bad input ------------------------------------------------------------------------------------------

BAD = """\
plan: bad months
horizon_days: 90
start_date: 2027-01-01
catalogs: []
policy: {{tiers: [reserved-1y, on-demand], spares: 0, rollout_fraction: 0}}
models: [{{id: m0, params_b: 8, kv_gb_per_seq: 0.5}}]
accelerators: [{{id: a0, memory_gb: 80}}]
offers:
  - {{id: o0, accelerator: a0, provider: p0, gpus_per_node: 1, price_per_gpu_hour: {{reserved-1y: 1.2, on-demand: 2.0}}}}
workloads:
  - name: w0
    model: m0
    tokens: {{input: 1000, output: 200}}
    measured: [{{accelerator: a0, precision: bf16, tp: 1, goodput_output_tokens_per_s: 100}}]
    demand:
      peak_output_tokens_per_s: 800
      peak_by_month:
        2027-01: 200
        {month}: 400
"""


def _refused(tmp_path: Path, text: str, *fragments: str) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    for f in fragments:
        assert f in res.output, res.output
    assert not (tmp_path / "out").exists()
    return res.output


def test_month_outside_the_horizon(tmp_path) -> None:
    out = _refused(tmp_path, BAD.format(month="2027-04"), "month 2027-04 is outside the horizon (2027-01 to 2027-03)")
    assert f"{tmp_path / 'bad.yaml'}:19:" in out  # the line of 2027-04


def test_month_before_the_horizon(tmp_path) -> None:
    out = _refused(tmp_path, BAD.format(month="2026-12"), "month 2026-12 is outside the horizon")
    assert f"{tmp_path / 'bad.yaml'}:19:" in out


def test_monthly_peaks_without_start_date(tmp_path) -> None:
    text = BAD.format(month="2027-02").replace("start_date: 2027-01-01\n", "")
    out = _refused(tmp_path, text, "the plan has no start_date", "add start_date")
    assert f"{tmp_path / 'bad.yaml'}:16:" in out  # peak_by_month:


def test_month_thirteen(tmp_path) -> None:
    out = _refused(tmp_path, BAD.format(month="2027-13"), "month '2027-13' is not YYYY-MM")
    assert f"{tmp_path / 'bad.yaml'}:17:" in out  # peak_by_month: (the mapping holding the month)


def test_empty_monthly_peaks(tmp_path) -> None:
    text = BAD.format(month="x").replace("        2027-01: 200\n        x: 400\n", "").replace(
        "peak_by_month:", "peak_by_month: {}")
    _refused(tmp_path, text, "is empty")


# --- random tiny plans vs the enumerator --------------------------------------------------------------


def _profile(rng: random.Random) -> list[float]:
    return two_level_profile(rng, 0.3)


def calendar(plan: dict) -> list[tuple[str, str]]:
    """(day type, YYYY-MM) of every day of the horizon."""
    start = dt.date.fromisoformat(plan["start_date"])
    out = []
    for k in range(plan["horizon_days"]):
        day = start + dt.timedelta(days=k)
        d = "all" if "day_types" not in plan else (
            "weekday" if day.strftime("%a").lower() in WEEKDAYS else "weekend")
        out.append((d, day.strftime("%Y-%m")))
    return out


def random_plan(seed: int) -> dict:
    rng = random.Random(104729 * seed + 3)
    year = rng.choice([2027, 2028])  # 2028: a leap February
    month = 12 if seed % 7 == 3 else rng.randint(1, 11)  # 12: across the year end
    start = dt.date(year, month, rng.choice([1, 1, rng.randint(2, 27)]))
    n_months = rng.choice([2, 3])
    end_month = dt.date(year + (month + n_months - 1 > 12), (month + n_months - 2) % 12 + 1, 1)
    last = (end_month.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)
    if rng.random() < 0.3:
        last = end_month + dt.timedelta(days=rng.randint(0, 20))  # the last month in part
    horizon = (last - start).days + 1
    plan: dict = {"plan": f"monthly tiny plan {seed}", "horizon_days": horizon, "start_date": start.isoformat(),
                  "catalogs": []}
    cal = calendar(plan)
    touched = sorted({m for _d, m in cal})
    weekly = rng.random() < 0.4
    if weekly:
        plan["day_types"] = {"weekday": sum(1 for k in range(horizon)
                                            if (start + dt.timedelta(days=k)).weekday() < 5)}
        plan["day_types"]["weekend"] = horizon - plan["day_types"]["weekday"]
    offers = []
    for i in range(rng.choice([1, 2, 3])):
        od = round(rng.uniform(1.0, 4.0), 2)
        prices = {"on-demand": od}
        if rng.random() < 0.85:
            prices["reserved-1y"] = round(od * rng.uniform(0.35, 0.9), 2)
        offers.append({"id": f"o{i}", "accelerator": f"a{i % 2}", "provider": f"p{i}",
                       "gpus_per_node": rng.choice([1, 2, 4]), "price_per_gpu_hour": prices})
    occupancy = rng.choice([0.5, 0.6, 0.8, 1.0])
    workloads = []
    for i in range(rng.choice([1, 2])):
        allowed = sorted(rng.sample([o["id"] for o in offers], min(len(offers), rng.choice([1, 2]))))
        nodes = min(o["gpus_per_node"] for o in offers if o["id"] in allowed)
        tp = rng.choice([1, 2]) if nodes >= 2 else 1
        goodput = {a: round(rng.uniform(300, 1500), 1) for a in ("a0", "a1")}
        scale = sum(goodput.values()) / 2 * occupancy
        peak = round(scale * rng.uniform(0.5, 4.0), 1)
        by_month = {m: round(scale * rng.uniform(0.3, 5.0), 1) for m in touched if rng.random() < 0.8}
        if not by_month:
            by_month = {touched[-1]: round(peak * 1.5, 1)}
        demand: dict = {"peak_output_tokens_per_s": peak, "peak_by_month": by_month}
        demand["profile"] = ({"weekday": _profile(rng), "weekend": _profile(rng)} if weekly and rng.random() < 0.7
                             else _profile(rng))
        workloads.append({
            "name": f"w{i}", "model": "m0", "tp": [tp], "parallelism": ["tp"], "offers": allowed,
            "tokens": {"input": 1000, "output": 200},
            "measured": [{"accelerator": a, "precision": "bf16", "tp": tp, "goodput_output_tokens_per_s": g}
                         for a, g in goodput.items()],
            "demand": demand})
    plan.update({
        "policy": {"tiers": ["reserved-1y", "on-demand"], "mip_gap": 0, "spares": 0, "rollout_fraction": 0,
                   "occupancy": occupancy, "time_limit_s": 600},
        "models": [{"id": "m0", "params_b": 8, "kv_gb_per_seq": 0.5}],
        "accelerators": [{"id": "a0", "memory_gb": 80}, {"id": "a1", "memory_gb": 80}],
        "offers": offers, "workloads": workloads})
    return plan


def gpus(plan: dict, w: dict, offer: dict, day_type: str, month: str) -> list[int]:
    tp = w["tp"][0]
    g = next(m["goodput_output_tokens_per_s"] for m in w["measured"] if m["accelerator"] == offer["accelerator"])
    dem = w["demand"]
    peak = dem.get("peak_by_month", {}).get(month, dem["peak_output_tokens_per_s"])
    prof = dem["profile"] if isinstance(dem["profile"], list) else dem["profile"][day_type]
    occ = plan["policy"]["occupancy"]
    return [gpus_for(peak * v, g, occ, tp) for v in prof]


def brute_force(plan: dict) -> float:
    offers = {o["id"]: o for o in plan["offers"]}
    horizon = plan["horizon_days"]
    days: dict[tuple[str, str], int] = {}
    for key in calendar(plan):
        days[key] = days.get(key, 0) + 1
    names = [w["name"] for w in plan["workloads"]]
    allowed = [w.get("offers", list(offers)) for w in plan["workloads"]]
    best = math.inf
    for combo in itertools.product(*allowed):
        choice = dict(zip(names, combo))
        used = sorted(set(combo))
        need = {(o, key): [0] * 24 for o in used for key in days}
        for w in plan["workloads"]:
            o = choice[w["name"]]
            for key in days:
                for h, g in enumerate(gpus(plan, w, offers[o], *key)):
                    need[(o, key)][h] += g
        total = 0.0
        for o in used:
            m = offers[o]["gpus_per_node"]
            prices = offers[o]["price_per_gpu_hour"]
            top = ceil(max(max(v) for (oo, _k), v in need.items() if oo == o) / m) if "reserved-1y" in prices else 0
            cheapest = math.inf
            for r in range(top + 1):
                cost = r * m * prices.get("reserved-1y", 0.0) * 24 * horizon
                for key, n in days.items():
                    cost += n * sum(m * prices["on-demand"] * ceil(max(0, g - m * r) / m) for g in need[(o, key)])
                cheapest = min(cheapest, cost)
            total += cheapest  # one pool: offers are priced apart
        best = min(best, total)
    return best


@lru_cache(maxsize=None)
def expected(seed: int) -> tuple[dict, float]:
    plan = random_plan(seed)
    return plan, brute_force(plan)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", SEEDS)
def test_monthly_matches_brute_force(seed, solver, tmp_path) -> None:
    plan, best = expected(seed)
    result = solve_plan(write(tmp_path, plan), SolveOptions(solver=solver, alternatives=0))
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(best, rel=REL, abs=1e-6), json.dumps(plan)
    # one reserved level for the horizon; one day type per (day type, month) with the calendar's days
    assert len({(p.offer, p.tier) for p in result.purchases}) == len(result.purchases)
    cal: dict[str, int] = {}
    for d, m in calendar(plan):
        cal[f"{d}-{m}"] = cal.get(f"{d}-{m}", 0) + 1
    assert result.day_types == cal


def test_the_random_plans_cover_the_cases() -> None:
    plans = [expected(s)[0] for s in SEEDS]
    touched = [sorted({m for _d, m in calendar(p)}) for p in plans]
    feats = {
        "2 months": any(len(t) == 2 for t in touched),
        "3 months": any(len(t) == 3 for t in touched),
        "weekday and weekend": any("day_types" in p for p in plans),
        "a month not listed": any(len(w["demand"]["peak_by_month"]) < len(t)
                                  for p, t in zip(plans, touched) for w in p["workloads"]),
        "starts mid-month": any(not p["start_date"].endswith("-01") for p in plans),
        "leap February": any(m == "2028-02" for t in touched for m in t),
        "year end": any(t[0][:4] != t[-1][:4] for t in touched),
        "2 workloads": any(len(p["workloads"]) == 2 for p in plans),
        "2 offers to choose from": any(len(w["offers"]) == 2 for p in plans for w in p["workloads"]),
    }
    assert all(feats.values()), feats
