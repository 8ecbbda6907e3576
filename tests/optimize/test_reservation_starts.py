"""New reservations that start after the horizon's first day (policy.reservation_starts): a renewal the day
after a signed contract ends, or a month's first day.

The quarter of tests/helpers/commitments.py: 2026-10-01 (a Thursday) + 92 days = 66 weekdays and 26 weekend
days, goodput 100 tok/s per 1-GPU replica at occupancy 1, no spares, no rollout — a demand of 100·k tok/s
needs exactly k GPUs. The brute force below prices every start and level day by day on its own (no optimizer
import) and is checked against the program solved by HiGHS and CBC without a time limit.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import math
import random

import pytest

from optimizer.optimize.calendar import reservation_days
from optimizer.inputs.loading import load_plan
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan
from tests.helpers.commitments import H100, OD, R1Y, chat, contract, quarter
from tests.helpers.small_plans import offer, write
from tests.helpers.solving import NO_TIME_LIMIT

START = dt.date(2026, 10, 1)
PAYMENTS = ("no_upfront", "partial_upfront", "all_upfront")
H = 92


def _solve(tmp_path, data, solver: str = "highs"):
    return solve_plan(write(tmp_path, data), SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT))


def _reserved(result) -> dict[str | None, int]:
    """Reserved GPUs by start (None: the horizon's first day)."""
    out: dict[str | None, int] = {}
    for p in result.purchases:
        if p.tier.startswith("reserved"):
            out[p.start] = out.get(p.start, 0) + p.gpus
    return out


# --- (a) the renewal case ------------------------------------------------------------------------------

def test_sixteen_signed_gpus_ending_mid_quarter_are_renewed_the_day_after(tmp_path):
    """16 signed GPUs end 2026-11-14 under the same load: the plan signs 16 from 2026-11-15 (its 47 days
    reserved, $4.60 × 16 × 24 × 47 = $83,021) instead of renting them on demand ($113,541) or reserving
    from the first day ($162,509)."""
    data = quarter([chat(16)], commitments=[contract(16, "2025-11-15", "2026-11-14")])
    r = _solve(tmp_path, data)
    assert _reserved(r) == {"2026-11-15": 16}
    assert not any(p.tier == "on-demand" for p in r.purchases)
    assert r.cost_total == pytest.approx(16 * R1Y * 24 * 47)
    n, = r.new_commitments
    assert (n.start, n.end, n.gpus) == ("2026-11-15", "2027-11-14", 16)
    assert n.horizon_share == pytest.approx(16 * R1Y * 24 * 47)
    assert n.total_committed == pytest.approx(16 * R1Y * 24 * 365)
    assert n.beyond_horizon == pytest.approx(16 * R1Y * 24 * (365 - 47))
    # the cash months hold it from its first day: nothing new in October, 16 days in November
    new = {c.month: c.gpu_hours for c in r.cash_flow if c.kind == "new" and c.tier == "reserved-1y"}
    assert new == {"2026-11": 16 * 24 * 16, "2026-12": 16 * 24 * 31}
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.cost_all_in)
    # the commitment schedule starts it on 2026-11-15 too
    sched = [s for s in r.commitment_schedule if s.kind == "new"]
    assert sched[0].month == "2026-11" and sched[0].days == 16


def test_plan_start_keeps_reservations_on_the_first_day(tmp_path):
    """policy.reservation_starts: plan_start is the program without later starts: 31 days on demand beat
    92 reserved (16 × 24 × 47 × 6.88 = $124,170 < $162,509)."""
    data = quarter([chat(16)], commitments=[contract(16, "2025-11-15", "2026-11-14")],
                   reservation_starts="plan_start")
    r = _solve(tmp_path, data)
    assert _reserved(r) == {}
    assert r.cost_total == pytest.approx(16 * OD * 24 * 47)


def test_without_contracts_ending_inside_the_horizon_nothing_changes(tmp_path):
    """The default adds no start (and no segment) to a plan whose contracts outlast the horizon."""
    data = quarter([chat(16)], commitments=[contract(8, "2026-01-01", "2027-06-30")])
    assert reservation_days(load_plan(write(tmp_path, data)).plan) == []
    r = _solve(tmp_path, data)
    assert _reserved(r) == {None: 8}
    assert r.periods == []


# --- (b) hand-computed cases ---------------------------------------------------------------------------

def test_monthly_starts_follow_a_load_that_arrives_in_december(tmp_path):
    """No contract: the load needs 8 GPUs only from December (a contract that supplies 8 until 11-30 stands
    for it). monthly: 8 reserved from 12-01 for 31 days; expiries gives the same day here (the contract's end)."""
    for mode in ("monthly", "expiries"):
        data = quarter([chat(8)], commitments=[contract(8, "2026-01-01", "2026-11-30")], reservation_starts=mode)
        r = _solve(tmp_path, data)
        assert _reserved(r) == {"2026-12-01": 8}, mode
        assert r.cost_total == pytest.approx(8 * R1Y * 24 * 31), mode


def test_monthly_start_days_are_the_months_first_days(tmp_path):
    data = quarter([chat(8)], reservation_starts="monthly")
    plan = load_plan(write(tmp_path, data)).plan
    assert reservation_days(plan) == [31, 61]  # 2026-11-01, 2026-12-01
    data = quarter([chat(8)], commitments=[contract(8, "2026-01-01", "2026-11-14")], reservation_starts="monthly")
    assert reservation_days(load_plan(write(tmp_path, data)).plan) == [31, 45, 61]


def test_a_renewal_beside_a_first_day_reservation_under_a_cap(tmp_path):
    """16 GPUs needed, 8 signed until 2026-11-14, reserved cap 16: 8 from the first day and 8 from the
    expiry ($4.60 × 8 × 24 × (92 + 47) = $122,755) beat 16 from the first day ($162,509) and 8 from the
    first day with 8 on demand after the expiry ($143,339); a cap of 8 leaves only the last."""
    data = quarter([chat(16)], commitments=[contract(8, "2025-11-15", "2026-11-14")])
    data["offers"] = [offer(H100, "h100-sxm", m=8, caps={"reserved-1y": 16}, on_demand=OD, reserved_1y=R1Y)]
    r = _solve(tmp_path, data)
    assert _reserved(r) == {None: 8, "2026-11-15": 8}
    assert r.cost_total == pytest.approx(8 * R1Y * 24 * (92 + 47))
    data["offers"][0]["available_gpus"] = {"reserved-1y": 8}
    r = _solve(tmp_path, data)
    assert _reserved(r) == {None: 8}
    assert r.cost_total == pytest.approx(8 * R1Y * 24 * 92 + 8 * OD * 24 * 47)


# --- (c) brute force on random small plans ------------------------------------------------------------

def _random_plan(seed: int) -> dict:
    rng = random.Random(seed)
    m = rng.choice([1, 2, 4])
    od = round(rng.uniform(5.0, 8.0), 2)
    res = round(od * rng.uniform(0.5, 0.9), 2)
    caps = {}
    if rng.random() < 0.4:
        caps["reserved-1y"] = m * rng.randint(1, 3)
    gpus = rng.randint(2, 8)
    profile = [rng.choice([1.0, 0.75, 0.5, 0.25]) for _ in range(24)]
    profile[rng.randrange(24)] = 1.0
    contracts = []
    for _ in range(rng.randint(0, 2)):
        end = START + dt.timedelta(days=rng.randint(5, 100))
        contracts.append(contract(rng.randint(1, gpus), "2026-01-01", end.isoformat()))
    data = quarter([chat(gpus, profile)], m=m, commitments=contracts,
                   reservation_starts=rng.choice(["plan_start", "expiries", "monthly"]))
    data["offers"] = [offer(H100, "h100-sxm", m=m, caps=caps, on_demand=od, reserved_1y=res)]
    if rng.random() < 0.5:  # payment options, some of them allowed
        options = {o: round(res * f, 2) for o, f in zip(PAYMENTS, (1.0, rng.uniform(0.85, 1.05), rng.uniform(0.8, 1.1)))
                   if o == "no_upfront" or rng.random() < 0.8}
        data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = options
        data["policy"]["payment"] = [o for o in PAYMENTS if rng.random() < 0.7] or ["all_upfront"]
    return data


def _reserved_price(data: dict) -> float | None:
    """The reserved-1y price the plan pays: the least of the options policy.payment allows (a bare number is
    no_upfront); None when none is allowed (not sold)."""
    p = data["offers"][0]["price_per_gpu_hour"]["reserved-1y"]
    options = p if isinstance(p, dict) else {"no_upfront": p}
    allowed = [v for o, v in options.items() if o in data["policy"].get("payment", PAYMENTS)]
    return min(allowed) if allowed else None


def _brute_force(data: dict) -> float:
    """The least horizon cost over every level of every allowed start, priced day by day: a reservation from
    day t costs m · price · 24 · (92 − t); each hour's GPUs beyond the signed and reserved ones are on demand
    in whole nodes."""
    o = data["offers"][0]
    m, od, res = o["gpus_per_node"], o["price_per_gpu_hour"]["on-demand"], _reserved_price(data)
    cap = o["available_gpus"].get("reserved-1y")
    w = data["workloads"][0]
    need = [math.ceil(w["demand"]["peak_output_tokens_per_s"] / 100 * f - 1e-9) for f in w["demand"]["profile"]]
    signed = []
    for c in data["commitments"]:
        first, last = dt.date.fromisoformat(c["start"]), dt.date.fromisoformat(c["end"])
        signed.append([c["gpus"] if first <= START + dt.timedelta(days=k) <= last else 0 for k in range(H)])
    held = [sum(s[k] for s in signed) for k in range(H)]
    mode = data["policy"]["reservation_starts"]
    starts = {0}
    if mode != "plan_start":
        starts |= {(dt.date.fromisoformat(c["end"]) - START).days + 1 for c in data["commitments"]}
    if mode == "monthly":
        starts |= {31, 61}
    starts = sorted(t for t in starts if 0 <= t < H)
    most = math.ceil(max(need) / m) if res is not None else 0
    best = math.inf
    for levels in itertools.product(range(most + 1), repeat=len(starts)):
        if cap is not None and m * sum(levels) > cap:
            continue
        cost = sum(n * m * (res or 0.0) * 24 * (H - t) for n, t in zip(levels, starts))
        for k in range(H):
            mine = held[k] + m * sum(n for n, t in zip(levels, starts) if t <= k)
            cost += sum(math.ceil(max(0, g - mine) / m) * m * od for g in need)
        best = min(best, cost)
    return best


SEEDS = list(range(12))


@pytest.mark.parametrize("solver", available_solvers())
@pytest.mark.parametrize("seed", SEEDS)
def test_starts_match_brute_force(tmp_path, seed, solver):
    data = _random_plan(seed)
    r = _solve(tmp_path, data, solver)
    assert r.status == "optimal"
    assert r.cost_total == pytest.approx(_brute_force(data), rel=1e-9, abs=1e-6), data
    # the purchases cost what the horizon holds of them, and the cash months add up to all-in
    assert sum(p.cost for p in r.purchases) == pytest.approx(r.cost_total, abs=1e-6)
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.cost_all_in, rel=1e-9)
    for n in r.new_commitments:
        first = (dt.date.fromisoformat(n.start) - START).days
        assert n.horizon_share == pytest.approx(n.gpus * n.price_per_gpu_hour * 24 * (H - first))


def test_the_random_plans_cover_the_cases():
    plans = [_random_plan(s) for s in SEEDS]
    modes = {p["policy"]["reservation_starts"] for p in plans}
    assert modes == {"plan_start", "expiries", "monthly"}
    assert any(p["commitments"] and p["policy"]["reservation_starts"] == "expiries" for p in plans)
    assert any(p["offers"][0]["available_gpus"] for p in plans)
    assert {p["offers"][0]["gpus_per_node"] for p in plans} >= {1, 4}
    paid = [p for p in plans if isinstance(p["offers"][0]["price_per_gpu_hour"]["reserved-1y"], dict)]
    assert paid and any(set(p["policy"]["payment"]) != set(PAYMENTS) for p in paid)


# --- (d) payment options ------------------------------------------------------------------------------

def _paid(tmp_path, options: dict, **policy):
    data = quarter([chat(16)], **policy)
    data["offers"] = [offer(H100, "h100-sxm", m=8, on_demand=OD)]
    data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = options
    return _solve(tmp_path, data)


OPTIONS = {"no_upfront": 4.60, "partial_upfront": 4.45, "all_upfront": 4.30}


def test_the_cheapest_payment_option_is_taken_and_paid_up_front(tmp_path):
    """16 GPUs at $4.30 all upfront: the horizon costs 16 × 4.30 × 24 × 92 = $151,910.40; the whole term,
    $602,688, is paid on 2026-10-01 and nothing more after (commitment schedule)."""
    r = _paid(tmp_path, OPTIONS)
    p, = [p for p in r.purchases if p.tier == "reserved-1y"]
    assert (p.payment, p.price_per_gpu_hour, p.gpus) == ("all_upfront", 4.30, 16)
    assert r.cost_total == pytest.approx(16 * 4.30 * 24 * 92)
    n, = r.new_commitments
    term = 16 * 4.30 * 24 * 365
    assert (n.payment, n.upfront, n.total_committed) == ("all_upfront", pytest.approx(term), pytest.approx(term))
    months = [(s.month, s.amount, s.upfront) for s in r.commitment_schedule if s.kind == "new"]
    assert months[0] == ("2026-10", pytest.approx(term), pytest.approx(term))
    assert all(a == 0 and u == 0 for _m, a, u in months[1:])
    assert len(months) == 12


def test_policy_payment_restricts_the_options_and_partial_pays_half_first(tmp_path):
    """policy.payment without all_upfront: partial at $4.45; half the term on the first day, the other half
    by days of service (October: 31 of 365 days), and the months add up to the term."""
    r = _paid(tmp_path, OPTIONS, payment=["no_upfront", "partial_upfront"])
    n, = r.new_commitments
    term = 16 * 4.45 * 24 * 365
    assert (n.payment, n.price_per_gpu_hour) == ("partial_upfront", 4.45)
    assert n.upfront == pytest.approx(term / 2)
    assert r.cost_total == pytest.approx(16 * 4.45 * 24 * 92)
    months = [s for s in r.commitment_schedule if s.kind == "new"]
    assert months[0].amount == pytest.approx(term / 2 + 16 * 4.45 * 24 * 31 / 2)
    assert months[1].amount == pytest.approx(16 * 4.45 * 24 * 30 / 2) and months[1].upfront == 0
    assert sum(s.amount for s in months) == pytest.approx(n.total_committed)
    assert sum(s.upfront for s in months) == pytest.approx(n.upfront)


def test_no_upfront_only_keeps_a_bare_price_and_drops_options_not_allowed(tmp_path):
    r = _paid(tmp_path, OPTIONS, payment=["no_upfront"])
    n, = r.new_commitments
    assert (n.payment, n.price_per_gpu_hour, n.upfront) == ("no_upfront", 4.60, 0.0)
    months = [s for s in r.commitment_schedule if s.kind == "new"]
    assert months[0].amount == pytest.approx(16 * 4.60 * 24 * 31)
    # only all_upfront allowed, the offer has no such option: it sells no reservation, all on demand
    r = _paid(tmp_path, {"no_upfront": 4.60}, payment=["all_upfront"])
    assert _reserved(r) == {} and r.cost_total == pytest.approx(16 * OD * 24 * 92)


def test_a_renewal_paid_up_front_pays_in_its_first_month(tmp_path):
    data = quarter([chat(16)], commitments=[contract(16, "2025-11-15", "2026-11-14")])
    data["offers"] = [offer(H100, "h100-sxm", m=8, on_demand=OD)]
    data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = dict(OPTIONS)
    r = _solve(tmp_path, data)
    n, = r.new_commitments
    assert (n.start, n.payment) == ("2026-11-15", "all_upfront")
    months = [s for s in r.commitment_schedule if s.kind == "new"]
    assert (months[0].month, months[0].upfront) == ("2026-11", pytest.approx(16 * 4.30 * 24 * 365))
    assert sum(s.amount for s in months) == pytest.approx(n.total_committed)
    # the horizon's spend by month (the plan's cost, not cash) still adds up to all-in
    assert sum(c.amount for c in r.cash_flow) == pytest.approx(r.cost_all_in)
    # the reports say when it starts and what it pays up front
    from rich.console import Console

    from optimizer.report.console import render_result
    from optimizer.report.html import render_html

    con = Console(width=400, record=True, file=io.StringIO())
    con.print(render_result(r))
    text = con.export_text()
    assert "2026-11-15" in text and "all upfront, $" in text
    page = render_html(r)
    assert "First day" in page and "all upfront ($" in page


@pytest.mark.parametrize("edit, key, words", [
    ({"reserved-1y": {"no_upfrnt": 4.6}}, "offers[0].price_per_gpu_hour.reserved-1y.no_upfrnt", "did you mean"),
    ({"reserved-1y": {}}, "offers[0].price_per_gpu_hour.reserved-1y", "no payment option"),
    ({"on-demand": {"all_upfront": 4.6}}, "offers[0]", "only a reservation is paid up front"),
])
def test_bad_payment_options_are_refused_with_their_key_path(tmp_path, edit, key, words):
    from optimizer.errors import PlanError

    data = quarter([chat(16)])
    data["offers"] = [offer(H100, "h100-sxm", m=8, on_demand=OD, reserved_1y=4.6)]
    data["offers"][0]["price_per_gpu_hour"].update(edit)
    with pytest.raises(PlanError) as e:
        load_plan(write(tmp_path, data))
    text = str(e.value)
    assert key in text and words in text, text


def test_a_bad_payment_policy_is_refused(tmp_path):
    from optimizer.errors import PlanError

    data = quarter([chat(16)], payment=["someday"])
    with pytest.raises(PlanError) as e:
        load_plan(write(tmp_path, data))
    assert "policy.payment[0]" in str(e.value) and "no_upfront" in str(e.value)


# --- the workbook -------------------------------------------------------------------------------------

def test_the_workbook_holds_a_renewal_from_its_start_and_recalculates(tmp_path):
    """8 reserved from the first day and 8 from the expiry, half paid up front: two Purchases rows, each
    holding its own days, and a commitment schedule with each upfront half in its first month; the workbook's
    total is the result's, and every formula recalculates in LibreOffice to its value."""
    import openpyxl

    from optimizer.report.xlsx import workbook as excel
    from tests.helpers.office import check_formulas, recalculate

    data = quarter([chat(16)], commitments=[contract(8, "2025-11-15", "2026-11-14")],
                   payment=["no_upfront", "partial_upfront"])
    data["offers"] = [offer(H100, "h100-sxm", m=8, on_demand=OD)]
    data["offers"][0]["price_per_gpu_hour"]["reserved-1y"] = {"no_upfront": R1Y, "partial_upfront": 4.45}
    r = _solve(tmp_path, data)
    assert _reserved(r) == {None: 8, "2026-11-15": 8}
    assert {n.payment for n in r.new_commitments} == {"partial_upfront"}
    book = tmp_path / "renewal.xlsx"
    excel.write_workbook(r, book)
    wb = openpyxl.load_workbook(book, data_only=True)
    sheet, coord = next(iter(wb.defined_names["total_cost"].destinations))
    assert wb[sheet][coord.replace("$", "")].value == pytest.approx(r.cost_total, rel=1e-9)
    again = recalculate(tmp_path, [book])
    check_formulas(book, again["renewal"])
    sheet = openpyxl.load_workbook(book, data_only=True)["Cash flow"]
    head = next(row for row in sheet.iter_rows(values_only=True) if "Paid up front (in Amount)" in row)
    col = head.index("Paid up front (in Amount)")
    paid = [row[col] for row in sheet.iter_rows(values_only=True) if len(row) > col and isinstance(row[col], float)]
    assert sum(paid) == pytest.approx(sum(n.upfront for n in r.new_commitments), rel=1e-9)
