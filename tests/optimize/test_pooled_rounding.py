"""Pooled rounding rows (cuts.define_pooled_rounding): a pool's — and, where pools borrow, an offer's — GPUs
rounded up to whole nodes together, written at one set of configs. They are valid inequalities: on tiny random
plans, at every set of configs (the reference's and every other), the integer optimum is the same with them
and without. At the reference they close most of the relaxation's gap (q4), and planopt adds them where
every re-solve holds a plan's configs (alternatives priced, a plan run through the scenarios)."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from pathlib import Path

import pulp
import pytest

from optimizer.candidates.build import build_candidates
from optimizer.errors import InfeasiblePlan
from optimizer.optimize import strategy
from optimizer.optimize.calendar import segment
from optimizer.optimize.cuts import define_pooled_rounding, mir_coefficient
from optimizer.optimize.model import build_model
from optimizer.optimize.solver import solve
from optimizer.optimize.strategy import POLICY, SolveOptions
from optimizer.pipeline import as_solved
from optimizer.studies import value

from tests.helpers.bruteforce import SEEDS, random_plan
from tests.helpers.paths import PLANS
from tests.helpers.solving import NO_TIME_LIMIT
from tests.helpers.steps import patch_steps

MOST_SETS = 12
"""Config sets checked per plan (all of them when there are fewer)."""


def _programs(path: Path):
    loaded = as_solved(path)
    cands = build_candidates(loaded)
    segs = segment(loaded.plan, cands.offer_ids())
    return loaded, cands, build_model(loaded, cands, segs), build_model(loaded, cands, segs)


def _optimum(prog, configs: dict[str, str], solver: str) -> float | None:
    with prog.choices_fixed(configs):
        info = solve(prog.prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0)
    if info.status == "infeasible":
        return None
    assert info.status == "optimal"
    return info.objective


@pytest.mark.parametrize("seed", SEEDS[:40])
def test_no_set_of_configs_costs_less_or_more_with_the_rows(seed, tmp_path):
    """Rows written at a random set of configs: every set's optimum (the reference's and every other)
    is the same with and without them, and so is the program's. HiGHS only: planopt gives CBC no such rows
    (POLICY.pooled_solvers; the test below)."""
    solver = "highs"
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(random_plan(seed), indent=1), encoding="utf-8")
    _loaded, cands, plain, pooled = _programs(path)
    rng = random.Random(seed)
    keys = {w: [c.key for c in cs] for w, cs in cands.by_workload.items()}
    reference = {w: rng.choice(ks) for w, ks in keys.items()}
    define_pooled_rounding(pooled, reference)
    sets = [dict(zip(keys, combo)) for combo in itertools.product(*keys.values())]
    rng.shuffle(sets)
    for configs in [reference] + sets[:MOST_SETS]:
        want = _optimum(plain, configs, solver)
        got = _optimum(pooled, configs, solver)
        assert (want is None) == (got is None), configs
        if want is not None:
            assert got == pytest.approx(want, rel=1e-7, abs=1e-6), configs
    whole = [solve(p.prob, solver, time_limit_s=NO_TIME_LIMIT, mip_gap=0) for p in (plain, pooled)]
    assert whole[0].status == whole[1].status
    if whole[0].status == "optimal":
        assert whole[1].objective == pytest.approx(whole[0].objective, rel=1e-7, abs=1e-6)


def test_the_plan_the_rows_keep_from_cbc_is_feasible_with_them(tmp_path):
    """Random plan 14, with rows at its first configs: HiGHS finds the same $887.04 with them and without,
    and that plan meets every row — yet CBC, given them, returns $908.48 as optimal (without them, $887.04).
    Hence POLICY.pooled_solvers."""
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(random_plan(14), indent=1), encoding="utf-8")
    _loaded, cands, plain, pooled = _programs(path)
    rng = random.Random(14)
    reference = {w: rng.choice([c.key for c in cs]) for w, cs in cands.by_workload.items()}
    define_pooled_rounding(pooled, reference)
    assert _optimum(plain, reference, "highs") == pytest.approx(887.04, abs=0.01)
    assert _optimum(pooled, reference, "highs") == pytest.approx(887.04, abs=0.01)
    with plain.choices_fixed(reference):
        solve(plain.prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0)
    values = {v.name: v.varValue or 0.0 for v in plain.prob.variables()}
    for name in pooled.constraint_families["pooled_rounding"]:
        row = pooled.prob.get_constraint_by_name(name)
        assert sum(a * values[v.name] for v, a in row.items()) + row.constant >= -1e-6, name
    assert "cbc" not in POLICY.pooled_solvers


def test_the_random_plans_give_the_rows_something_to_round(tmp_path):
    """The check above is not empty: on most of its plans rows are written, and some lift the relaxation
    at their reference."""
    written = lifted = 0
    for seed in SEEDS[:30]:
        path = tmp_path / f"plan{seed}.yaml"
        path.write_text(json.dumps(random_plan(seed), indent=1), encoding="utf-8")
        _loaded, cands, plain, pooled = _programs(path)
        reference = {w: cs[0].key for w, cs in cands.by_workload.items()}
        if define_pooled_rounding(pooled, reference):
            written += 1
        with plain.choices_fixed(reference), pooled.choices_fixed(reference):
            before = solve(plain.prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True)
            after = solve(pooled.prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True)
        if before.status == "optimal" and after.objective > before.objective + 1e-6:
            lifted += 1
    assert written >= 10 and lifted >= 3, (written, lifted)


def test_at_q4s_optimal_configs_the_relaxation_nearly_meets_the_optimum():
    """plans/q4.yaml, its optimal configs held: the relaxation gives $75.1k without the rows, $80.9k with
    them, against the $81,539 optimum (hand-checked with HiGHS's own solve)."""
    _loaded, _cands, plain, pooled = _programs(PLANS / "q4.yaml")
    best = solve(plain.prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0)
    assert best.status == "optimal" and best.objective == pytest.approx(81538.56, abs=0.01)
    configs = {w: key for w, (_v, key) in plain.largest_choices().items()}
    assert define_pooled_rounding(pooled, configs) > 0
    assert define_pooled_rounding(pooled, configs) == 0  # once per reference
    with plain.choices_fixed(configs), pooled.choices_fixed(configs):
        before = solve(plain.prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True).objective
        after = solve(pooled.prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True).objective
        held = solve(pooled.prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0).objective
    assert before == pytest.approx(75065.70, abs=1.0)
    assert after == pytest.approx(80886.90, abs=1.0)
    assert held == pytest.approx(best.objective, rel=1e-9)


def test_the_rounding_by_hand():
    """The rule each term follows (cuts.mir_coefficient), on rows whose rounding is plain to see."""
    assert mir_coefficient(1.0, 0.3, True) == pytest.approx(1.0)  # y ≥ 0.3 → y ≥ 1
    assert mir_coefficient(0.5, 0.3, True) == pytest.approx(1.0)  # 0.5y ≥ 0.3 → y ≥ 1
    assert mir_coefficient(0.2, 0.3, True) == pytest.approx(2 / 3)  # 0.2y ≥ 0.3 → (2/3)y ≥ 1 → y ≥ 2
    assert mir_coefficient(2.75, 0.5, True) == pytest.approx(3.0)
    assert mir_coefficient(-0.25, 0.5, True) == pytest.approx(0.0)  # −0.25y: ⌊−0.25⌋ + min(1, 0.75/0.5)
    assert mir_coefficient(-0.75, 0.5, True) == pytest.approx(-0.5)  # −1 + 0.25/0.5
    assert mir_coefficient(0.4, 0.5, False) == pytest.approx(0.8)  # continuous: a/f


def test_a_row_by_hand():
    """One pool at one offer and hour: workloads a and b of 6 and 5 GPUs, or elsewhere (at 50 and 40), on
    8-GPU nodes at 8 a node. Together they need 11/8 = 1.375 nodes, so 2; each alone rounds to 1 (the
    per-workload rows: 1 + 1 only when both are here), and the relaxation takes 1.375 nodes. Summed and
    written at the reference (both here; x[a] = 1 − y[a]): D + 0.75·y[a] + 0.625·y[b] ≥ 1.375, rounded with
    f = 0.375 to D + y[a] + y[b] ≥ 2 — the integer optimum is the relaxation's."""
    prob = pulp.LpProblem("hand", pulp.LpMinimize)
    d = prob.add_variable("d", lowBound=0, upBound=10, cat=pulp.LpInteger)
    xa, ya, xb, yb = (prob.add_variable(n, cat=pulp.LpBinary) for n in ("xa", "ya", "xb", "yb"))
    prob += 8 * d + 50 * ya + 40 * yb
    prob += xa + ya == 1, "choice_a"
    prob += xb + yb == 1, "choice_b"
    prob += 8 * d - 6 * xa - 5 * xb >= 0, "supply"
    assert solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True).objective == pytest.approx(11.0)
    f = 11 / 8 - 1
    coef = {v: mir_coefficient(a, f, True) for v, a in ((d, 1.0), (ya, 0.75), (yb, 0.625))}
    assert coef == {d: 1.0, ya: 1.0, yb: 1.0}
    prob += pulp.lpSum(c * v for v, c in coef.items()) >= 2, "pooled"
    assert solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, relax=True).objective == pytest.approx(16.0)
    assert solve(prob, "highs", time_limit_s=NO_TIME_LIMIT, mip_gap=0).objective == pytest.approx(16.0)


@pytest.mark.parametrize("seed", SEEDS[:15])
def test_a_solve_with_every_config_held_costs_the_same_with_the_rows(seed, tmp_path, monkeypatch):
    """strategy.solve_candidates with every workload held (`fix`, as a re-plan keeping every last choice; or
    one config each, as a plan run through the scenarios) writes the rows at those configs: the same optimum
    as without them (POLICY.pooled_solvers emptied)."""
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(random_plan(seed), indent=1), encoding="utf-8")
    loaded = as_solved(path)
    cands = build_candidates(loaded)
    rng = random.Random(seed)
    fix = {w: rng.choice([c.key for c in cs]) for w, cs in cands.by_workload.items()}
    held = value._held(cands, fix)
    options = SolveOptions(solver="highs", mip_gap=0, alternatives=0)

    written: list[int] = []
    real = strategy.define_pooled_rounding
    patch_steps(monkeypatch, "define_pooled_rounding", lambda prog, ref: written.append(1) or real(prog, ref))

    def both(**kw) -> list[float | None]:
        out = []
        for solvers in (POLICY.pooled_solvers, ()):
            monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, pooled_solvers=solvers))
            try:
                out.append(strategy.solve_candidates(loaded, kw["cands"], options, fix=kw.get("fix"))[1].objective)
            except InfeasiblePlan:
                out.append(None)
        return out

    for kw in ({"cands": cands, "fix": fix}, {"cands": held} if held is not None else None):
        if kw is None:
            continue
        written.clear()
        with_rows, without = both(**kw)
        assert written  # the rows were written for the first solve (and not for the second: POLICY.pooled_solvers empty)
        assert (with_rows is None) == (without is None)
        if without is not None:
            assert with_rows == pytest.approx(without, rel=1e-7, abs=1e-6)
