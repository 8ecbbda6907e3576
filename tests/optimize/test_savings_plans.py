"""Savings-Plan-style spend commitments (savings_plans: new, U chosen; spend_commitments: signed): U $/hour of
discounted spend covers a provider's on-demand use at discount δ; an hour costs U + S − c ÷ (1 − δ), c ≤ U,
c ≤ (1 − δ)·S (families spend_cover, spend_list).

The quarter of tests/helpers/commitments.py: 2026-10-01 + 92 days, goodput 100 tok/s per 1-GPU replica at
occupancy 1, no spares, no rollout — a demand of 100·k tok/s needs exactly k GPUs. The brute force prices every
level of the commitment at each breakpoint of its piecewise-linear, convex cost (the optimum is at one), day by
day, with no optimizer import, and is checked against the program solved by HiGHS and CBC without a time limit.
"""

from __future__ import annotations

import datetime as dt
import math
import random

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan
from tests.helpers.commitments import H100, OD, chat, quarter
from tests.helpers.small_plans import offer, write
from tests.helpers.solving import NO_TIME_LIMIT

START = dt.date(2026, 10, 1)
H = 92
PROVIDER = f"prov-{H100}"


def _plan(gpus: float, profile: list[float] | None = None, *, discount: float = 0.3, m: int = 1,
          reserved: float | None = None, signed: list[dict] = ()) -> dict:
    data = quarter([chat(gpus, profile)], m=m, tiers=["on-demand"] + (["reserved-1y"] if reserved else []),
                   reservation_starts="plan_start")
    prices = {"on_demand": OD} | ({"reserved_1y": reserved} if reserved else {})
    data["offers"] = [offer(H100, "h100-sxm", m=m, **prices)]
    data["savings_plans"] = [{"provider": PROVIDER, "term": "1y", "discount": discount,
                              "source": "https://aws.amazon.com/savingsplans/compute-pricing/"}]
    data["spend_commitments"] = list(signed)
    return data


def _solve(tmp_path, data, solver: str = "highs"):
    return solve_plan(write(tmp_path, data), SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT))


# --- hand-computed ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", available_solvers())
def test_a_flat_load_is_covered_whole_at_the_discount(tmp_path, solver):
    """16 GPUs every hour, δ = 0.3: U = (1 − 0.3) · 16 · 6.88 $/hour exactly, and the quarter costs 70% of list."""
    r = _solve(tmp_path, _plan(16), solver)
    n, = r.new_spend_commitments
    assert n.usd_per_hour == pytest.approx(0.7 * 16 * OD, rel=1e-9)
    assert r.cost_total == pytest.approx(0.7 * 16 * OD * 24 * H, rel=1e-9)
    assert n.utilization == pytest.approx(1.0) and n.coverage == pytest.approx(1.0)
    assert n.break_even_utilization == pytest.approx(0.7)
    assert n.horizon_share == pytest.approx(n.usd_per_hour * 24 * H)
    assert n.total_committed == pytest.approx(n.usd_per_hour * 24 * 365)
    assert n.saving_vs_on_demand["horizon"] == pytest.approx(0.3 * 16 * OD * 24 * H, rel=1e-9)
    assert n.saving_vs_on_demand["full_term"] == pytest.approx(0.3 * 16 * OD * 24 * 365, rel=1e-9)
    assert (n.start, n.end) == ("2026-10-01", "2027-09-30")
    # the result's parts add up: purchases, tiers, cash months and showback
    assert sum(p.cost for p in r.purchases) + r.cost_by_tier["savings_plan"] == pytest.approx(r.cost_total)
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.cost_all_in)
    assert sum(s.cost + s.committed_cost for s in r.showback) == pytest.approx(r.cost_all_in)


DIURNAL = [1.0] * 16 + [0.5] * 8  # 16 GPUs for 16 hours, 8 for 8


@pytest.mark.parametrize("discount, level", [(0.3, 8), (0.4, 16)])
def test_a_diurnal_load_commits_where_the_marginal_hour_breaks_even(tmp_path, discount, level):
    """A dollar more of U is paid 24 hours and saves 1 ÷ (1 − δ) in each hour whose use it covers: above 8 GPUs'
    spend 16 hours use it, which pays when 16 ÷ (1 − δ) ≥ 24, i.e. δ ≥ 1/3. So δ = 0.3 stops at 8 GPUs'
    discounted spend; δ = 0.4 covers the 16-GPU hours too."""
    r = _solve(tmp_path, _plan(16, DIURNAL, discount=discount))
    n, = r.new_spend_commitments
    u = (1 - discount) * level * OD
    assert n.usd_per_hour == pytest.approx(u, rel=1e-9)
    day = 24 * u + sum(max(0.0, g * OD - u / (1 - discount)) for g in [16] * 16 + [8] * 8)
    assert r.cost_total == pytest.approx(day * H, rel=1e-9)
    used = sum(min(u, (1 - discount) * g * OD) for g in [16] * 16 + [8] * 8) / (24 * u)
    assert n.utilization == pytest.approx(used, rel=1e-9)


def test_without_savings_plans_nothing_changes(tmp_path):
    """The same plan without savings_plans: on demand at list, no savings_plan tier, no new_spend_commitments."""
    data = _plan(16, DIURNAL)
    del data["savings_plans"], data["spend_commitments"]
    r = _solve(tmp_path, data)
    assert r.cost_total == pytest.approx(OD * (16 * 16 + 8 * 8) * H, rel=1e-12)
    assert "savings_plan" not in r.cost_by_tier and not r.new_spend_commitments


def test_a_signed_commitment_ending_mid_quarter_is_renewed_the_day_after(tmp_path):
    """A flat 16 GPUs fully covered by a signed commitment at δ = 0.3 until 2026-11-14: the plan signs the same
    $/hour from 2026-11-15 (policy.reservation_starts: expiries, the default), for its 47 days in the horizon;
    with plan_start a commitment would run from the first day, and 92 days of it cost more than renting the 47
    days at list."""
    u = 0.7 * 16 * OD
    signed = [{"provider": PROVIDER, "usd_per_hour": u, "term": "1y", "discount": 0.3,
               "start": "2025-11-15", "end": "2026-11-14"}]
    data = _plan(16, signed=signed)
    data["policy"]["reservation_starts"] = "expiries"
    r = _solve(tmp_path, data)
    n, = r.new_spend_commitments
    assert (n.start, n.end, n.key) == ("2026-11-15", "2027-11-14", "sp0d45")
    assert n.usd_per_hour == pytest.approx(u, rel=1e-9)
    assert n.horizon_share == pytest.approx(u * 24 * 47, rel=1e-9)
    assert r.cost_total == pytest.approx(u * 24 * 47, rel=1e-9)
    data["policy"]["reservation_starts"] = "plan_start"
    (tmp_path / "first").mkdir()
    r = _solve(tmp_path / "first", data)
    assert not r.new_spend_commitments
    assert r.cost_total == pytest.approx(16 * OD * 24 * 47, rel=1e-9)


def test_a_signed_commitment_covers_while_it_runs_and_is_sunk(tmp_path):
    """$40/hour signed at δ = 0.3 until 2026-11-14 (45 days): its spend there is committed; new spend pays the rest.
    With no new plan to sign (discount too small to pay on this load: none is signed)."""
    signed = [{"provider": PROVIDER, "usd_per_hour": 40.0, "term": "1y", "discount": 0.3,
               "start": "2025-11-15", "end": "2026-11-14"}]
    data = _plan(16, discount=0.3, signed=signed)
    del data["savings_plans"]
    r = _solve(tmp_path, data)
    c, = r.spend_commitments
    assert c.days_in_horizon == 45 and c.spend_in_horizon == pytest.approx(40 * 24 * 45)
    assert r.cost_committed == pytest.approx(40 * 24 * 45)
    assert c.utilization == pytest.approx(1.0)
    assert r.cost_total == pytest.approx(16 * OD * 24 * H - 40 / 0.7 * 24 * 45, rel=1e-9)
    assert sum(x.amount for x in r.cash_flow) == pytest.approx(r.cost_all_in)


# --- brute force on random small plans --------------------------------------------------------------------

def _random_plan(seed: int) -> dict:
    rng = random.Random(seed)
    m = rng.choice([1, 2])
    gpus = rng.randint(2, 6)
    profile = [rng.choice([1.0, 0.75, 0.5, 0.25]) for _ in range(24)]
    profile[rng.randrange(24)] = 1.0
    reserved = round(OD * rng.uniform(0.55, 0.85), 2) if rng.random() < 0.5 else None
    signed = []
    if rng.random() < 0.6:
        end = START + dt.timedelta(days=rng.randint(5, 100))
        signed.append({"provider": PROVIDER, "usd_per_hour": round(rng.uniform(3, 20), 2), "term": "1y",
                       "discount": round(rng.uniform(0.1, 0.5), 2), "start": "2026-01-01", "end": end.isoformat()})
    data = _plan(gpus, profile, discount=round(rng.uniform(0.1, 0.6), 2), m=m, reserved=reserved, signed=signed)
    data["policy"]["reservation_starts"] = rng.choice(["plan_start", "expiries"])
    return data


def _brute_force(data: dict) -> float:
    """The least horizon cost over every reserved level and every pair of commitment levels at the breakpoints of
    its piecewise-linear, convex cost: C0 from the first day and C1 ≥ C0 from the signed one's expiry (a renewal
    adding C1 − C0, with policy.reservation_starts expiries). Each hour the on-demand whole nodes' list spend S is
    covered up to U_s ÷ (1 − δ_s) (the signed one, while it runs) + C ÷ (1 − δ); C is paid every hour."""
    o = data["offers"][0]
    m, od = o["gpus_per_node"], o["price_per_gpu_hour"]["on-demand"]
    res = o["price_per_gpu_hour"].get("reserved-1y")
    w = data["workloads"][0]
    need = [math.ceil(w["demand"]["peak_output_tokens_per_s"] / 100 * f - 1e-9) for f in w["demand"]["profile"]]
    delta = data["savings_plans"][0]["discount"]
    runs = [0.0] * H
    t1 = H
    for c in data["spend_commitments"]:
        last = (dt.date.fromisoformat(c["end"]) - START).days
        for k in range(min(H, last + 1)):
            runs[k] = c["usd_per_hour"] / (1 - c["discount"])
        if data["policy"]["reservation_starts"] == "expiries" and last + 1 < H:
            t1 = last + 1
    groups: dict[tuple[float, bool], int] = {}  # (signed cover, after t1) → days
    for k in range(H):
        groups[(runs[k], k >= t1)] = groups.get((runs[k], k >= t1), 0) + 1
    best = math.inf
    for n in range((math.ceil(max(need) / m) if res else 0) + 1):
        spend = [math.ceil(max(0, g - n * m) / m) * m * od for g in need]
        points = sorted({0.0} | {max(0.0, (1 - delta) * (s - r)) for s in spend for r, _ in groups})
        for c0 in points:
            for c1 in [p for p in points if p >= c0] if t1 < H else [c0]:
                cost = n * m * (res or 0.0) * 24 * H + c0 * 24 * H + (c1 - c0) * 24 * (H - t1)
                for (r, late), days in groups.items():
                    cover = r + (c1 if late else c0) / (1 - delta)
                    cost += days * sum(max(0.0, s - cover) for s in spend)
                best = min(best, cost)
    return best


SEEDS = list(range(8))


@pytest.mark.parametrize("solver", available_solvers())
@pytest.mark.parametrize("seed", SEEDS)
def test_spend_commitments_match_brute_force(tmp_path, seed, solver):
    data = _random_plan(seed)
    r = _solve(tmp_path, data, solver)
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(_brute_force(data), rel=1e-7, abs=1e-6), data
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.cost_all_in, rel=1e-9)
    for n in r.new_spend_commitments:
        assert 0 <= n.utilization <= 1 + 1e-9 and 0 <= n.coverage <= 1 + 1e-9


def test_the_random_plans_cover_the_cases():
    plans = [_random_plan(s) for s in SEEDS]
    assert any(p["spend_commitments"] and p["policy"]["reservation_starts"] == "expiries"
               and p["spend_commitments"][0]["end"] < "2026-12-31" for p in plans)
    assert any(p["spend_commitments"] for p in plans) and any(not p["spend_commitments"] for p in plans)
    assert any("reserved-1y" in p["offers"][0]["price_per_gpu_hour"] for p in plans)
    assert any(p["offers"][0]["gpus_per_node"] == 2 for p in plans)


# --- bad input --------------------------------------------------------------------------------------------

def test_bad_spend_commitments_are_refused_all_at_once(tmp_path):
    data = _plan(16)
    data["savings_plans"] = [{"provider": "nobody", "term": "1y", "discount": 0.3},
                             {"provider": PROVIDER, "term": "2y", "discount": 1.5}]
    data["spend_commitments"] = [{"provider": PROVIDER, "usd_per_hour": -3, "term": "1y", "discount": 0.2,
                                  "start": "2026-01-01", "end": "2026-12-31"}]
    path = write(tmp_path, data)
    with pytest.raises(PlanError) as e:
        load_plan(path)
    text = str(e.value)
    for where in ("savings_plans[1].term", "savings_plans[1].discount", "spend_commitments[0].usd_per_hour"):
        assert where in text, text
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output


def test_an_unknown_provider_is_named_with_its_key_path(tmp_path):
    data = _plan(16)
    data["savings_plans"] = [{"provider": "nobody", "term": "1y", "discount": 0.3}]
    data["spend_commitments"] = [{"provider": PROVIDER, "usd_per_hour": 3, "term": "1y", "discount": 0.2,
                                  "start": "2026-01-01", "end": "2026-12-31", "offers": ["elsewhere"]}]
    with pytest.raises(PlanError) as e:
        load_plan(write(tmp_path, data))
    text = str(e.value)
    assert "savings_plans[0].provider" in text and "nobody" in text, text
    assert "spend_commitments[0].offers[0]" in text and "elsewhere" in text, text


# --- the result file, the reports and the workbook ----------------------------------------------------------

SIGNED = [{"provider": PROVIDER, "usd_per_hour": 20.0, "term": "1y", "discount": 0.2, "start": "2026-01-01",
           "end": "2026-11-14"}]


def _both(tmp_path):
    """A new commitment beside a signed one ending mid-quarter, on a diurnal load."""
    return _solve(tmp_path, _plan(16, DIURNAL, discount=0.35, signed=SIGNED))


def test_the_result_file_reads_back_with_its_spend_commitments(tmp_path):
    from optimizer.results.jsonio import dumps, read_result

    r = _both(tmp_path)
    assert r.new_spend_commitments and r.spend_commitments
    path = tmp_path / "r.json"
    path.write_text(dumps(r), encoding="utf-8")
    again = read_result(path)
    assert [(n.key, n.usd_per_hour, n.utilization) for n in again.new_spend_commitments] == \
        [(n.key, pytest.approx(n.usd_per_hour), pytest.approx(n.utilization)) for n in r.new_spend_commitments]
    assert again.spend_commitments[0].spend_in_horizon == pytest.approx(20 * 24 * 45)
    assert again.cost_all_in == pytest.approx(r.cost_all_in)
    assert sum(s.cost + s.committed_cost for s in again.showback) == pytest.approx(r.cost_all_in)


@pytest.mark.parametrize("measure", ["expected", "worst"])
def test_a_commitment_is_decided_once_for_every_scenario(tmp_path, measure):
    """Demand ×0.5 or ×1 (weights 0.5): U is one number for both scenarios, each scenario pays it every hour and
    is credited what it covers. Under worst, the plan is the high scenario's alone (its cost the plan's of
    _both); the low scenario pays the same U and has all its use covered."""
    data = _plan(16, DIURNAL, discount=0.35, signed=SIGNED)
    data["scenarios"] = [{"name": "low", "weight": 0.5, "demand": {"all": 0.5}},
                         {"name": "high", "weight": 0.5, "demand": {"all": 1.0}}]
    data["policy"]["risk"] = {"measure": measure}
    r = _solve(tmp_path, data)
    n, = r.new_spend_commitments
    cost = {s.name: s.cost_total for s in r.scenarios}
    assert r.risk.expected == pytest.approx(sum(r.cost_by_tier.values()), rel=1e-9)
    assert r.risk.expected == pytest.approx(0.5 * cost["low"] + 0.5 * cost["high"], rel=1e-9)
    if measure == "worst":
        (tmp_path / "alone").mkdir()
        assert cost["high"] == pytest.approx(_both(tmp_path / "alone").cost_total, rel=1e-9)
        assert cost["low"] == pytest.approx(n.usd_per_hour * 24 * H, rel=1e-9)  # all its use covered
    # the cash months hold the expected spend over the scenarios (the tiers), with the signed commitment's
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.risk.expected + r.cost_committed, rel=1e-9)


def test_the_commitment_schedule_holds_every_month_of_a_spend_commitment(tmp_path):
    """The 36-month schedule from the horizon's first month: a new 1-year commitment's twelve months add up to
    its total, a signed one's run to its end."""
    r = _both(tmp_path)
    n, = r.new_spend_commitments
    rows = [s for s in r.commitment_schedule if s.tier == "savings_plan"]
    new = [s for s in rows if s.kind == "new"]
    assert new[0].month == "2026-10" and new[-1].month == "2027-09"
    assert sum(s.amount for s in new) == pytest.approx(n.total_committed, rel=1e-9)
    signed = [s for s in rows if s.kind == "signed"]
    assert signed[-1].month == "2026-11" and signed[-1].days == 14
    assert sum(s.amount for s in signed) == pytest.approx(20 * 24 * 45, rel=1e-9)  # from the horizon's first month


def test_carry_brings_a_new_commitment_into_the_next_quarter_as_signed(tmp_path):
    """The next quarter (2027-01-01) with --carry of this one: the new commitment runs on, signed, its spend
    committed; the signed one that ended in November is not carried."""
    from optimizer.results.jsonio import dumps
    from optimizer.results.ledger import carry_commitments

    r = _both(tmp_path)
    last = tmp_path / "last.json"
    last.write_text(dumps(r), encoding="utf-8")
    nxt = _plan(16, DIURNAL, discount=0.35)
    nxt.update(start_date="2027-01-01", horizon_days=90, day_types={"weekday": 64, "weekend": 26})
    (tmp_path / "next").mkdir()
    loaded, info = carry_commitments(load_plan(write(tmp_path / "next", nxt)), last)
    c, = loaded.plan.spend_commitments
    n = r.new_spend_commitments[0]
    assert (c.provider, c.usd_per_hour, c.start.isoformat(), c.end.isoformat()) == \
        (PROVIDER, pytest.approx(n.usd_per_hour), n.start, n.end)
    assert any("spend commitments" in note and "does not run" in note for note in info.notes), info.notes
