"""Moves at a month's first day in month plans (demand.peak_by_month, no scenarios): policy.moves there, explain's
forced alternatives and --baseline's switching cost over a workload's configs per contract period.

The plan of 90 days from 2027-01-01 (Jan 31, Feb 28, Mar 31 days), one day type `all`, goodput 100 tok/s per 1-GPU
replica at occupancy 1, no spares, no rollout, on demand only: a month's peak of 100·k tok/s needs exactly k GPUs.
`big` sells 8-GPU nodes at $2.00 per GPU-hour, `small` 1-GPU nodes at $3.00; demand 2, 4, 8 GPUs in Jan, Feb, Mar:
  small: 3.00 · 24 · (2·31 + 4·28 + 8·31) = $30,384;  big: 8 · 2.00 · 24 · 90 = $34,560;
  small in Jan and Feb, big in March: 3.00 · 24 · (62 + 112) + 16 · 24 · 31 = 12,528 + 11,904 = $24,432.
The brute force prices each month's config on its own (no optimizer import).
"""

from __future__ import annotations

import json
import math
import random

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, explain, solve_plan
from optimizer.results.baseline import load_baseline
from optimizer.results.jsonio import to_dict
from tests.helpers.solving import NO_TIME_LIMIT
from tests.helpers.tiny_plans import write

SOLVERS = [s for s in ("highs", "cbc") if s in available_solvers()]
MONTHS = {"2027-01": 31, "2027-02": 28, "2027-03": 31}
RISING = {"2027-01": 200, "2027-02": 400, "2027-03": 800}


def _offer(oid: str, m: int, price: float, acc: str = "a0", cap: int | None = None) -> dict:
    return {"id": oid, "accelerator": acc, "provider": f"p-{oid}", "gpus_per_node": m,
            "price_per_gpu_hour": {"on-demand": price},
            "available_gpus": {"on-demand": cap} if cap is not None else {}}


def month_plan(by_month: dict | None = None, moves: str | None = None, offers: list[dict] | None = None,
               profile: list[float] | None = None) -> dict:
    by_month = RISING if by_month is None else by_month
    offers = offers or [_offer("big", 8, 2.0), _offer("small", 1, 3.0)]
    policy: dict = {"tiers": ["on-demand"], "mip_gap": 0, "spares": 0, "rollout_fraction": 0, "occupancy": 1.0,
                    "time_limit_s": NO_TIME_LIMIT}
    if moves is not None:
        policy["moves"] = moves
    accs = sorted({o["accelerator"] for o in offers})
    return {
        "plan": "month moves", "horizon_days": 90, "start_date": "2027-01-01", "catalogs": [], "policy": policy,
        "models": [{"id": "m0", "params_b": 8, "kv_gb_per_seq": 0.5}],
        "accelerators": [{"id": a, "memory_gb": 80} for a in accs],
        "offers": offers,
        "workloads": [{"name": "w0", "model": "m0", "tp": [1], "parallelism": ["tp"],
                       "offers": [o["id"] for o in offers], "tokens": {"input": 1000, "output": 200},
                       "measured": [{"accelerator": a, "precision": "bf16", "tp": 1,
                                     "goodput_output_tokens_per_s": 100 * (i + 1)} for i, a in enumerate(accs)],
                       "demand": {"peak_output_tokens_per_s": max(by_month.values()),
                                  "profile": profile or [1.0] * 24, "peak_by_month": by_month}}],
    }


def _solve(tmp_path, data: dict, solver: str = "highs", name: str = "plan.yaml", **kw):
    return solve_plan(write(tmp_path, data, name), SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT), **kw)


# --- by hand --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", SOLVERS)
def test_a_month_plan_moves_to_the_cheaper_offer_at_a_month_boundary(tmp_path, solver):
    """Growing into whole 8-GPU nodes: small's 1-GPU nodes while 2 and 4 GPUs, big's from 2027-03-01."""
    r = _solve(tmp_path, month_plan(), solver)
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(24_432)
    assert [(m.date, m.from_offer, m.to_offer) for m in r.moves] == [("2027-03-01", "small", "big")]
    assert r.moves[0].saving == pytest.approx(8 * 3.0 * 24 * 31 - 8 * 2.0 * 24 * 31)  # March on small less on big
    w = r.workload("w0")
    assert [(x.start, x.offer) for x in w.configs_by_period] == [
        ("2027-01-01", "small"), ("2027-02-01", "small"), ("2027-03-01", "big")]
    assert [p.label for p in r.periods] == ["2027-01-01 to 2027-01-31", "2027-02-01 to 2027-02-28",
                                            "2027-03-01 to 2027-03-31"]
    never = _solve(tmp_path, month_plan(moves="never"), solver, "never.yaml")
    assert never.cost_total == pytest.approx(30_384) and not never.moves and not never.periods


def test_moves_any_changes_the_accelerator_at_a_month_boundary(tmp_path):
    """Demand 2, 4, 16 GPUs of a0; `fast` sells a1 (twice a0's goodput) on 8-GPU nodes at $2.50. same_hardware
    stays on a0 — small, then two big nodes in March: 24 · (6 · 31 + 12 · 28 + 32 · 31) = $36,336 (a1 all quarter:
    20 · 24 · 90 = $43,200); with any, March runs on one a1 node instead: 24 · (6 · 31 + 12 · 28 + 20 · 31) =
    $27,408."""
    offers = [_offer("big", 8, 2.0), _offer("small", 1, 3.0), _offer("fast", 8, 2.5, acc="a1")]
    data = month_plan({"2027-01": 200, "2027-02": 400, "2027-03": 1600}, offers=offers)
    same = _solve(tmp_path, data, name="same.yaml")
    assert same.cost_total == pytest.approx(36_336)
    assert [(m.date, m.to_offer) for m in same.moves] == [("2027-03-01", "big")]
    data["policy"]["moves"] = "any"
    anyr = _solve(tmp_path, data, name="any.yaml")
    assert anyr.cost_total == pytest.approx(27_408)
    assert [(m.date, m.to_offer) for m in anyr.moves] == [("2027-03-01", "fast")]


def test_a_month_plan_where_no_workload_can_move_keeps_its_program(tmp_path):
    """One offer per hardware: no month cut, the day types' segments as before moves (no contract period)."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.calendar import month_days
    from optimizer.optimize.model import build_model
    from optimizer.optimize.strategy import _segments
    from optimizer.pipeline import as_solved

    for offers, cut in (([_offer("big", 8, 2.0)], False), (None, True)):
        loaded = as_solved(load_plan(write(tmp_path, month_plan(offers=offers), f"one{cut}.yaml")))
        assert month_days(loaded.plan) == [31, 59]
        cands = build_candidates(loaded)
        segments = _segments(loaded, cands)
        assert (segments.calendar is not None) is cut
        prog = build_model(loaded, cands, segments, cuts=False)
        assert bool(prog.movers) is cut
        if not cut:
            assert set(segments.segments) == {"all-2027-01", "all-2027-02", "all-2027-03"}


# --- explain and --baseline -----------------------------------------------------------------------------------

def test_explain_prices_an_alternative_as_that_config_for_the_horizon(tmp_path):
    """The plan runs small, then big from March; big forced is big all quarter ($34,560), not big in January with
    the workload free to move after it."""
    path = write(tmp_path, month_plan(), "plan.yaml")
    ex = explain(path, "w0", SolveOptions(solver="highs", time_limit_s=NO_TIME_LIMIT), count=1)
    assert ex.result is not None and ex.result.cost_total == pytest.approx(24_432)
    alt, = ex.alternatives
    assert "big" in alt.key
    assert alt.total_cost == pytest.approx(34_560, abs=1)


def test_solve_alternatives_price_a_config_for_the_horizon(tmp_path):
    """solve's own alternatives hold the forced config in every period too: big all quarter."""
    r = solve_plan(write(tmp_path, month_plan(), "plan.yaml"),
                   SolveOptions(solver="highs", time_limit_s=NO_TIME_LIMIT, alternatives=1))
    alt = next(a for a in r.alternatives if a.workload == "w0" and a.rank > 0)
    assert alt.difference == pytest.approx(34_560 - 24_432, abs=1)


def _baseline(tmp_path, data: dict, name: str):
    r = _solve(tmp_path, data, name=name + ".yaml")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(to_dict(r)), encoding="utf-8")
    return r, load_baseline(path)


def test_a_baseline_that_moved_is_kept_period_by_period(tmp_path):
    """Re-solving the plan against its own result keeps its move: no switching cost, nothing changed."""
    first, last = _baseline(tmp_path, month_plan(), "last")
    assert " | from 2027-03-01=" in last.choices["w0"].key  # calendar.schedule_key
    data = month_plan()
    data["policy"]["change_threshold"] = 0.5
    r = _solve(tmp_path, data, name="again.yaml", baseline=last)
    assert r.cost_total == pytest.approx(first.cost_total)
    assert r.baseline.kept == ["w0"] and not r.baseline.changes
    assert [(m.date, m.to_offer) for m in r.moves] == [("2027-03-01", "big")]


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_baseline_that_did_not_move_charges_a_move_in_any_period(solver, tmp_path):
    """The last plan ran small all quarter (moves: never). A move to big in March saves $5,952: with a threshold of
    50% of the last cost ($15,192) it stays on small in every period; at 10% ($3,038) it moves and says why."""
    _r, last = _baseline(tmp_path, month_plan(moves="never"), "last")
    data = month_plan()
    data["policy"]["change_threshold"] = 0.5
    stay = _solve(tmp_path, data, solver, "stay.yaml", baseline=last)
    assert stay.cost_total == pytest.approx(30_384) and not stay.moves
    assert stay.baseline.kept == ["w0"]
    data["policy"]["change_threshold"] = 0.1
    move = _solve(tmp_path, data, solver, "move.yaml", baseline=last)
    assert move.cost_total == pytest.approx(24_432)
    change, = move.baseline.changes
    assert change.workload == "w0" and change.saving == pytest.approx(5_952)


# --- brute force ----------------------------------------------------------------------------------------------

def _random_plan(rng: random.Random) -> dict:
    """Two to four offers: a0 on 1-, 2-, 4- or 8-GPU nodes (one may have a cap), maybe a1 (goodput 200); a peak
    by month of 100·k tok/s; a flat or two-level profile; moves same_hardware, any or never."""
    offers = [_offer(f"o{i}", rng.choice([1, 2, 4, 8]), round(rng.uniform(1.5, 4.0), 2))
              for i in range(rng.randint(2, 3))]
    if rng.random() < 0.4:
        offers[0]["available_gpus"] = {"on-demand": rng.choice([4, 8, 16])}
    if rng.random() < 0.5:
        offers.append(_offer("b", rng.choice([1, 8]), round(rng.uniform(3.0, 8.0), 2), acc="a1"))
    by_month = {m: 100 * rng.randint(1, 12) for m in MONTHS}
    profile = [rng.choice([0.5, 1.0]) for _ in range(24)]
    profile[rng.randrange(24)] = 1.0
    return month_plan(by_month, rng.choice(["same_hardware", "same_hardware", "any", "never"]), offers, profile)


def _enumerated(data: dict) -> float:
    """The cheapest plan: each month's offer on its own (as policy.moves allows), nodes bought hour by hour."""
    w = data["workloads"][0]
    goodput = {g["accelerator"]: g["goodput_output_tokens_per_s"] for g in w["measured"]}
    profile, by_month = w["demand"]["profile"], w["demand"]["peak_by_month"]

    def month_cost(o: dict, month: str) -> float:
        m, cap = o["gpus_per_node"], o["available_gpus"].get("on-demand")
        total = 0.0
        for h in range(24):
            gpus = math.ceil(by_month[month] * profile[h] / goodput[o["accelerator"]] - 1e-9)
            bought = math.ceil(gpus / m) * m
            if cap is not None and bought > cap:
                return math.inf
            total += bought * o["price_per_gpu_hour"]["on-demand"]
        return total * MONTHS[month]

    offers = data["offers"]
    moves = data["policy"]["moves"]
    if moves == "never":
        return min(sum(month_cost(o, m) for m in MONTHS) for o in offers)
    groups = [offers] if moves == "any" else [[o for o in offers if o["accelerator"] == a]
                                              for a in sorted({o["accelerator"] for o in offers})]
    return min(sum(min(month_cost(o, m) for o in g) for m in MONTHS) for g in groups)


@pytest.mark.parametrize("solver", SOLVERS)
def test_month_moves_match_the_brute_force_on_random_small_plans(tmp_path, solver):
    rng = random.Random(4511 if solver == "highs" else 4512)
    for i in range(8):
        data = _random_plan(rng)
        want = _enumerated(data)
        if math.isinf(want):
            continue
        r = _solve(tmp_path, data, solver, f"p{i}.yaml")
        assert r.status == "optimal", i
        assert r.cost_total == pytest.approx(want, rel=1e-9, abs=1e-6), (i, data["policy"]["moves"])
