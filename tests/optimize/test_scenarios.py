"""Two-stage plans (plan `scenarios`, policy.risk) against a brute-force enumeration, and by hand.

The enumerator (tests/helpers/scenario_enumerate.py) imports nothing from the optimizer but the entry point: it sizes each workload's
replicas from its measured goodput (base = ceil(D / (goodput × occupancy)), no spares, no rollout),
tries every config (offer) per workload and every reserved level per offer (the first stage, shared by
all scenarios), buys on-demand (or spot) nodes hour by hour for what reserved GPUs do not cover in each
scenario at its price multipliers (the second stage), and weighs the scenarios' costs — first stage +
that scenario's hourly part — by the plan's risk measure: expected, worst, or cvar at a level (the mean
of the worst 1 − level of outcomes, by weight). No LP, no PuLP.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.tiny_plans import ceil, write
from tests.helpers.scenario_enumerate import H, MEASURES, SEEDS, brute_force, expected, gpus, risk_of, scenario_costs
from tests.helpers.solving import seeds_by_solver

_yaml = YAML(typ="safe", pure=True)
_yaml.default_flow_style = False

SOLVERS = available_solvers()
REL = 1e-6

runner = CliRunner()



# --- brute force vs the program ----------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(SEEDS, SOLVERS))
def test_two_stage_matches_brute_force(seed: int, solver: str, tmp_path: Path) -> None:
    plan, best = expected(seed)
    result = solve_plan(write(tmp_path, plan), SolveOptions(solver=solver))
    assert result.status == "optimal"
    why = json.dumps(plan)
    assert result.cost_total == pytest.approx(best, rel=REL, abs=1e-6), why

    # what the program decided, re-priced scenario by scenario by the enumerator
    choice = {w.name: w.offer for w in result.workloads}
    reserved = {p.offer: p.gpus // p.gpus_per_node for p in result.purchases if p.tier == "reserved-1y"}
    first, second = scenario_costs(plan, choice, reserved, plan["scenarios"])
    rows = {r.name: r for r in result.scenarios}
    assert list(rows) == [s["name"] for s in plan["scenarios"]]
    for s, q in zip(plan["scenarios"], second):
        row = rows[s["name"]]
        assert row.weight == s["weight"]
        assert row.cost_total == pytest.approx(first + q, rel=REL, abs=1e-6), (s["name"], why)
        assert row.cost_hourly == pytest.approx(q, rel=REL, abs=1e-6), (s["name"], why)

    risk = result.risk
    measure = plan["policy"]["risk"]["measure"]
    assert risk is not None and risk.measure == measure
    assert risk.value == pytest.approx(result.cost_total, rel=1e-9)
    costs = [rows[s["name"]].cost_total for s in plan["scenarios"]]
    weights = [s["weight"] for s in plan["scenarios"]]
    assert risk.expected == pytest.approx(risk_of(costs, weights, "expected", 0), rel=REL)
    assert risk.p90 == pytest.approx(min(c for c in costs if sum(p for p, d in zip(weights, costs) if d <= c)
                                         >= 0.9 - 1e-12), rel=REL)
    # the value of the stochastic solution and each scenario's regret
    assert risk.vss is not None and risk.vss >= -1e-6 * max(1.0, result.cost_total), why
    assert risk.mean_plan_cost == pytest.approx(result.cost_total + risk.vss, rel=1e-9)
    assert set(risk.regret) == set(rows)
    for s in plan["scenarios"]:
        regret = risk.regret[s["name"]]
        assert regret >= 0
        alone = brute_force(plan, [{**s, "weight": 1.0}], "expected")
        assert rows[s["name"]].cost_total - regret == pytest.approx(alone, rel=REL, abs=1e-6), (s["name"], why)


def test_the_random_plans_cover_the_cases() -> None:
    plans = [expected(s)[0] for s in SEEDS]
    feats = {
        "measure " + m: sum(p["policy"]["risk"]["measure"] == m for p in plans) >= 10 for m in MEASURES
    } | {
        "2 scenarios": any(len(p["scenarios"]) == 2 for p in plans),
        "3 scenarios": any(len(p["scenarios"]) == 3 for p in plans),
        "4 scenarios": any(len(p["scenarios"]) == 4 for p in plans),
        "2 workloads": any(len(p["workloads"]) == 2 for p in plans),
        "2 offers to choose from": any(len(w["offers"]) == 2 for p in plans for w in p["workloads"]),
        "spot": any("spot" in p["policy"]["tiers"] for p in plans),
        "price by provider": any(k.startswith("p") for p in plans for s in p["scenarios"]
                                 for k in s.get("prices", {})),
        "demand by workload": any(k.startswith("w") for p in plans for s in p["scenarios"]
                                  for k in s.get("demand", {})),
        "zero demand": any(0.0 in s.get("demand", {}).values() for p in plans for s in p["scenarios"]),
        "goodput multiplier": any("goodput" in s for p in plans for s in p["scenarios"]),
        "tp 2": any(w["tp"] == [2] for p in plans for w in p["workloads"]),
        "4-GPU nodes": any(o["gpus_per_node"] == 4 for p in plans for o in p["offers"]),
    }
    assert all(feats.values()), feats


def test_risk_measure_changes_the_decision() -> None:
    """Some random plans reserve differently under their risk measure than under the expected cost
    (else the cvar and worst cases would test nothing the expected case does not)."""
    differs = 0
    for seed in SEEDS:
        plan, best = expected(seed)
        if plan["policy"]["risk"]["measure"] == "expected":
            continue
        # the plan that is best on average, judged by this plan's measure
        differs += best < _judge_expected_plan(plan) - 1e-6
    assert differs >= 3


def _judge_expected_plan(plan: dict) -> float:
    """The risk measure of the first stage that minimizes the expected cost (the cheapest such, by the
    measure, among ties)."""
    risk = plan["policy"]["risk"]
    offers = {o["id"]: o for o in plan["offers"]}
    names = [w["name"] for w in plan["workloads"]]
    weights = [s["weight"] for s in plan["scenarios"]]
    scored = []
    for combo in itertools.product(*[w["offers"] for w in plan["workloads"]]):
        choice = dict(zip(names, combo))
        used = sorted(set(combo))
        top = [(ceil(max(sum(gpus(plan, w, offers[o], s)[h] for w in plan["workloads"] if choice[w["name"]] == o)
                          for s in plan["scenarios"] for h in range(24)) / offers[o]["gpus_per_node"])
                if "reserved-1y" in offers[o]["price_per_gpu_hour"] else 0) for o in used]
        for levels in itertools.product(*[range(t + 1) for t in top]):
            first, second = scenario_costs(plan, choice, dict(zip(used, levels)), plan["scenarios"])
            totals = [first + q for q in second]
            scored.append((risk_of(totals, weights, "expected", 0),
                           risk_of(totals, weights, risk["measure"], risk.get("level", 0.9))))
    low = min(e for e, _r in scored)
    return min(r for e, r in scored if e <= low + 1e-9)


# --- by hand ------------------------------------------------------------------------------------------


def hand_plan(measure: str, level: float | None = None) -> dict:
    """One offer of 1-GPU nodes, 1.50 reserved and 2.00 on demand per GPU-hour; goodput 100 at
    occupancy 1 and a flat 400 tokens/s: 4 GPUs all day. Scenarios low (× 0.5: 2 GPUs, weight 0.5),
    mid (4 GPUs, 0.3), high (× 2: 8 GPUs, 0.2). Over 30 days (720 hours), R reserved GPUs cost
    720·(1.5·R + 2·Σ_scenario (n − R)⁺)."""
    risk = {"measure": measure} | ({"level": level} if level is not None else {})
    return {
        "plan": f"hand {measure}", "horizon_days": H, "catalogs": [],
        "policy": {"tiers": ["reserved-1y", "on-demand"], "mip_gap": 0, "spares": 0, "rollout_fraction": 0,
                   "occupancy": 1.0, "risk": risk},
        "models": [{"id": "m0", "params_b": 8, "kv_gb_per_seq": 0.5}],
        "accelerators": [{"id": "a0", "memory_gb": 80}],
        "offers": [{"id": "o0", "accelerator": "a0", "provider": "p0", "gpus_per_node": 1,
                    "price_per_gpu_hour": {"reserved-1y": 1.5, "on-demand": 2.0}}],
        "scenarios": [{"name": "low", "weight": 0.5, "demand": {"all": 0.5}},
                      {"name": "mid", "weight": 0.3},
                      {"name": "high", "weight": 0.2, "demand": {"w0": 2.0}}],
        "workloads": [{"name": "w0", "model": "m0", "tp": [1], "parallelism": ["tp"], "offers": ["o0"],
                       "tokens": {"input": 1000, "output": 200},
                       "measured": [{"accelerator": "a0", "precision": "bf16", "tp": 1,
                                     "goodput_output_tokens_per_s": 100}],
                       "demand": {"peak_output_tokens_per_s": 400, "profile": [1.0] * 24}}],
    }


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("measure", "level", "gpus", "costs", "value"), [
    # expected: one more reserved GPU saves 2·P(n > R): 2 while R < 2 (> 1.5), 1 for R in 2..3 (< 1.5):
    # R = 2; low 720·3 = 2160, mid 720·(3 + 4) = 5040, high 720·(3 + 12) = 10800; 0.5·2160 + 0.3·5040 +
    # 0.2·10800 = 4752
    ("expected", None, 2, {"low": 2160, "mid": 5040, "high": 10800}, 4752),
    # cvar 0.7: the worst 30% = high (0.2) and a third of mid (0.1): a reserved GPU saves 2 for R < 4,
    # 2·0.2/0.3 = 1.33 for R in 4..7 (< 1.5): R = 4; low 4320, mid 4320, high 720·(6 + 8) = 10080;
    # (0.2·10080 + 0.1·4320) / 0.3 = 8160
    ("cvar", 0.7, 4, {"low": 4320, "mid": 4320, "high": 10080}, 8160),
    # cvar 0.5: the worst half = high (0.2) and mid (0.3): saves 2 for R < 4, 0.8 after: R = 4;
    # (0.2·10080 + 0.3·4320) / 0.5 = 6624
    ("cvar", 0.5, 4, {"low": 4320, "mid": 4320, "high": 10080}, 6624),
    # worst: the high scenario decides; a reserved GPU saves 2 > 1.5 up to 8: R = 8, 720·12 everywhere
    ("worst", None, 8, {"low": 8640, "mid": 8640, "high": 8640}, 8640),
])
def test_risk_measures_by_hand(solver, measure, level, gpus, costs, value, tmp_path) -> None:
    result = solve_plan(write(tmp_path, hand_plan(measure, level)), SolveOptions(solver=solver))
    res = [p for p in result.purchases if p.tier == "reserved-1y"]
    assert [p.gpus for p in res] == [gpus]
    assert {r.name: r.cost_total for r in result.scenarios} == pytest.approx(costs, rel=1e-9)
    assert result.cost_total == pytest.approx(value, rel=1e-9)
    assert result.risk.value == pytest.approx(value, rel=1e-9)
    assert result.risk.level == level
    assert result.risk.expected == pytest.approx(0.5 * costs["low"] + 0.3 * costs["mid"] + 0.2 * costs["high"])
    assert result.risk.p90 == costs["high"]  # P(cost ≤ the high one) = 1 is the first to reach 0.9
    # the mean scenario: demand × (0.5·0.5 + 0.3 + 0.2·2) = 0.95 → 3.8 → 4 GPUs flat, reserved 4 (1.5 < 2);
    # judged by this measure it is the cvar plan (R = 4), dearer for expected and worst
    mean = {"expected": 0.5 * 4320 + 0.3 * 4320 + 0.2 * 10080, "cvar": value, "worst": 10080}[measure]
    assert result.risk.mean_plan_cost == pytest.approx(mean, rel=1e-9)
    assert result.risk.vss == pytest.approx(mean - value, rel=1e-9, abs=1e-6)
    assert result.risk.vss >= -1e-6
    # regret: the best plan per scenario reserves exactly its need (1.5 < 2): 720·1.5·n
    best = {"low": 2160, "mid": 4320, "high": 8640}
    assert result.risk.regret == pytest.approx({k: costs[k] - best[k] for k in best}, abs=1e-6)
    assert all(r >= 0 for r in result.risk.regret.values())


def test_hand_plan_agrees_with_the_enumerator() -> None:
    for measure, level, value in [("expected", None, 4752), ("cvar", 0.7, 8160), ("cvar", 0.5, 6624),
                                  ("worst", None, 8640)]:
        assert brute_force(hand_plan(measure, level)) == pytest.approx(value, rel=1e-12)


def test_cvar_formula_in_the_json(tmp_path) -> None:
    """The CLI's JSON: scenarios rows and risk, cvar at 0.7 (the worst 30%: high whole, mid a third)."""
    path = write(tmp_path, hand_plan("cvar", 0.7))
    res = runner.invoke(app, ["solve", str(path), "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    rows = {r["name"]: r for r in d["scenarios"]}
    assert d["cost"]["total"] == pytest.approx((0.2 * rows["high"]["cost_total"] + 0.1 * rows["mid"]["cost_total"]) / 0.3)
    assert d["risk"]["measure"] == "cvar" and d["risk"]["level"] == 0.7
    assert d["risk"]["value"] == pytest.approx(8160)
    assert rows["high"]["cost_hourly"] == pytest.approx(720 * 2 * 4)
    assert rows["low"]["cost_hourly"] == 0 and rows["mid"]["cost_hourly"] == 0
    assert rows["high"]["shortfall_gpu_hours"] == pytest.approx(4 * 720)


# --- bad input ------------------------------------------------------------------------------------------


def _refused(tmp_path: Path, plan: dict, *fragments: str) -> str:
    path = tmp_path / "bad.yaml"
    with path.open("w", encoding="utf-8") as f:
        _yaml.dump(plan, f)
    res = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    for f in fragments:
        assert f in res.output, res.output
    assert not (tmp_path / "out").exists()
    return res.output


def _line(tmp_path: Path, text: str) -> int:
    return next(i for i, ln in enumerate((tmp_path / "bad.yaml").read_text().splitlines(), 1) if text in ln)


def test_weights_must_add_up_to_one(tmp_path) -> None:
    plan = hand_plan("expected")
    plan["scenarios"][2]["weight"] = 0.1
    out = _refused(tmp_path, plan, "scenario weights add up to 0.9, not 1")
    assert f"bad.yaml:{_line(tmp_path, 'scenarios:')}:" in out


def test_scenario_naming_an_unknown_workload(tmp_path) -> None:
    plan = hand_plan("expected")
    plan["scenarios"][2]["demand"] = {"w9": 2.0}
    out = _refused(tmp_path, plan, "'w9' is not a workload, a pool or all")
    assert f"bad.yaml:{_line(tmp_path, 'w9')}:" in out


def test_scenario_pricing_a_reserved_tier(tmp_path) -> None:
    plan = hand_plan("expected")
    plan["scenarios"][2]["prices"] = {"reserved-1y": 2.0}
    _refused(tmp_path, plan, "'reserved-1y' is not an hourly tier or a provider")


def test_cvar_without_scenarios(tmp_path) -> None:
    plan = hand_plan("cvar", 0.9)
    del plan["scenarios"]
    out = _refused(tmp_path, plan, "risk measure cvar weighs scenarios, and the plan has none")
    assert f"bad.yaml:{_line(tmp_path, 'risk:')}:" in out


def test_duplicate_scenario_names(tmp_path) -> None:
    plan = hand_plan("expected")
    plan["scenarios"][1]["name"] = "low"
    _refused(tmp_path, plan, "duplicate scenario name 'low'")


def test_a_regret_that_could_not_be_computed_is_named(tmp_path, monkeypatch) -> None:
    """A side solve that fails leaves that scenario out of the regret, and the basis says which."""
    import optimizer.studies.value as value
    from optimizer.errors import SolverError

    real = value.solve_candidates

    def failing_for_high(plan, cands, options, **kw):
        scns = plan.plan.scenarios
        if len(scns) == 1 and scns[0].name == "high":
            raise SolverError("stopped")
        return real(plan, cands, options, **kw)

    monkeypatch.setattr(value, "solve_candidates", failing_for_high)
    result = solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs"))
    assert set(result.risk.regret) == {"low", "mid"}
    assert result.risk.basis.startswith("partly computed: no regret for high")
    assert result.risk.vss is not None


def test_a_regret_against_an_unproven_best_plan_is_a_range(tmp_path, monkeypatch) -> None:
    """When a scenario's own solve stops short of the gap, its regret is a range: against the best plan found
    (regret) up to against that solve's bound (regret_upto), and the reports say both."""
    from dataclasses import replace as dc_replace

    import optimizer.studies.value as value
    from optimizer.report import labels as L

    real = value.solve_candidates

    def unproven_for_high(plan, cands, options, **kw):
        sol, info = real(plan, cands, options, **kw)
        scns = plan.plan.scenarios
        if len(scns) == 1 and scns[0].name == "high":  # as if the time had stopped it $1,000 above its bound
            info = dc_replace(info, status="feasible", bound=info.objective - 1000.0, gap=None)
        return sol, info

    monkeypatch.setattr(value, "solve_candidates", unproven_for_high)
    result = solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs"))
    risk = result.risk
    assert risk.regret_upto["high"] == pytest.approx(risk.regret["high"] + 1000.0, abs=1e-6)
    assert {k: risk.regret_upto[k] for k in ("low", "mid")} == {k: risk.regret[k] for k in ("low", "mid")}
    assert "the best plan for high" in risk.basis
    money = lambda v, nd=0: f"${v:,.{nd}f}"  # noqa: E731
    assert L.regret_text(result, "high", money) == f"{money(risk.regret['high'])}–{money(risk.regret_upto['high'])}"
    assert L.regret_text(result, "low", money) == money(risk.regret["low"])
    assert L.max_regret(result) == ("high", risk.regret_upto["high"], risk.regret["high"])
    sign = [text for head, text in L.decision_lines(result, money) if head == "Sign"]
    assert result.new_commitments  # the hand plan reserves
    assert f"at most {money(risk.regret_upto['high'])} (if high comes true; at least {money(risk.regret['high'])}: " \
           "the best plan for it alone was not proven in the time" in sign[0]
    # the workbook adds the largest regret it can be; the HTML shows the range and says what it means
    import openpyxl

    from optimizer.report import html
    from optimizer.report.provenance import provenance
    from optimizer.report.xlsx import workbook as excel
    book = tmp_path / "ranged.xlsx"
    excel.write_workbook(result, book)
    sh = openpyxl.load_workbook(book)["Scenarios"]
    row = next(r for r in sh.iter_rows() if str(r[0].value).startswith("Largest regret it can be"))
    assert row[1].value == pytest.approx(risk.regret_upto["high"])
    page = html.render_html(result, provenance())
    assert L.regret_text(result, "high", lambda v, nd=0: f"${v:,.{nd}f}") in page
    assert "A range is a regret whose scenario's own solve stopped short of the gap" in page


def test_a_value_of_the_stochastic_solution_from_unproven_solves_is_a_range(tmp_path, monkeypatch) -> None:
    """When the mean plan's run through the scenarios stops short of its gap, the VSS is a range: from its
    solve's bound to the plan it found (this plan proven); the risk lines and the workbook say so."""
    from dataclasses import replace as dc_replace

    import openpyxl

    import optimizer.studies.value as value
    from optimizer.report import labels as L
    from optimizer.report.xlsx import workbook as excel

    real = value.solve_candidates

    def unproven_evaluation(plan, cands, options, **kw):
        sol, info = real(plan, cands, options, **kw)
        if kw.get("reserved") is not None:  # the mean plan's decision, run through the scenarios
            info = dc_replace(info, status="feasible", bound=info.objective - 500.0, gap=None)
        return sol, info

    monkeypatch.setattr(value, "solve_candidates", unproven_evaluation)
    result = solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs"))
    risk = result.risk
    assert result.solver.status == "optimal" and risk.vss is not None
    assert risk.vss_range == pytest.approx([risk.vss - 500.0, risk.vss], abs=1e-6)
    money = lambda v, nd=0: f"${v:,.{nd}f}"  # noqa: E731
    line = next(x for x in L.risk_lines(result, money) if x.startswith("Value of the stochastic solution"))
    assert f"VSS {money(risk.vss)} — somewhere from {money(risk.vss - 500.0)} to {money(risk.vss)}" in line
    book = tmp_path / "vss.xlsx"
    excel.write_workbook(result, book)
    sh = openpyxl.load_workbook(book)["Scenarios"]
    row = next(r for r in sh.iter_rows() if str(r[0].value).strip().startswith("it lies between"))
    assert [row[1].value, row[2].value] == pytest.approx(risk.vss_range)
    # proven solves: no range
    monkeypatch.setattr(value, "solve_candidates", real)
    assert solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs")).risk.vss_range is None
    # a mean plan cheaper than this one: only a solve stopped early can leave that, and the lines say so
    low = dc_replace(result, risk=dc_replace(risk, vss=-100.0, mean_plan_cost=risk.value - 100.0, vss_range=None))
    assert any("the time limit stopped this plan's solve early" in x for x in L.risk_lines(low, money))
    assert not any("stopped this plan's solve early" in x for x in L.risk_lines(result, money))


def test_a_mean_plan_cheaper_than_the_two_stage_plan_found_is_the_plan_returned(tmp_path, monkeypatch) -> None:
    """When the time limit leaves the two-stage solve with a plan dearer than the mean scenario's plan run
    through the scenarios, that plan — one the program could have chosen — is returned, with the two-stage
    solve's bound and the gap to it. By hand (hand_plan): the two-stage optimum reserves 2 GPUs (4752);
    the mean scenario (demand × 0.95: 3.8 GPUs) reserves 4, which costs 4320 / 4320 / 10080, expected 5472;
    the solve is made to stop at 8 reserved GPUs (8640 in every scenario)."""
    from dataclasses import replace as dc_replace

    import optimizer.pipeline as pipeline

    real = pipeline.solve_candidates
    main = {"calls": 0}

    def stopped_at_eight(plan, cands, options, **kw):
        sol, info = real(plan, cands, options, **kw)
        if len(plan.plan.scenarios) == 3 and "reserved" not in kw and main["calls"] == 0:
            main["calls"] += 1  # the two-stage solve, as if the time had stopped it at a dear plan
            dear, dinfo = real(plan, cands, options, reserved={k: 8.0 for k in sol.reserved_nodes}, **kw)
            return dear, dc_replace(dinfo, status="feasible", bound=info.objective,
                                    gap=(dinfo.objective - info.objective) / dinfo.objective)
        return sol, info

    monkeypatch.setattr(pipeline, "solve_candidates", stopped_at_eight)
    result = solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs"))
    assert [p.gpus for p in result.purchases if p.tier == "reserved-1y"] == [4]
    assert {r.name: r.cost_total for r in result.scenarios} == pytest.approx(
        {"low": 4320, "mid": 4320, "high": 10080}, rel=1e-9)
    assert result.cost_total == pytest.approx(5472, rel=1e-9)
    assert result.status == result.solver.status == "feasible"
    assert result.solver.bound == pytest.approx(4752, rel=1e-9)
    assert result.solver.gap == pytest.approx((5472 - 4752) / 5472, rel=1e-6)
    assert result.risk.mean_plan_cost == pytest.approx(5472, rel=1e-9)
    assert result.risk.vss == pytest.approx(0.0, abs=1e-6)
    # regrets are this plan's: low alone reserves 2 (2160), mid 4 (4320), high 8 (8640)
    assert result.risk.regret == pytest.approx({"low": 2160, "mid": 0, "high": 1440}, abs=1e-6)
    assert any("plan decided for the mean scenario" in n and "$8,640" in n for n in result.notes)
    assert result.alternatives == []
    assert [r.key for r in result.candidates if r.chosen] == [result.workload("w0").key]
    assert result.risk.mean_plan_returned
    from optimizer.report import labels as L
    money = lambda v, nd=0: f"${v:,.{nd}f}"  # noqa: E731
    lines = L.risk_lines(result, money)
    assert any(line.startswith("Value of the stochastic solution: this plan is the one decided for the mean "
                               "scenario") and "$5,472" in line for line in lines), lines
    assert not any("VSS" in line for line in lines)
    import openpyxl

    from optimizer.report.xlsx import workbook as excel
    book = tmp_path / "mean.xlsx"
    excel.write_workbook(result, book)
    texts = [str(r[0].value) for r in openpyxl.load_workbook(book)["Scenarios"].iter_rows()]
    assert any(t.startswith("This plan is the mean scenario's plan") for t in texts)
    assert not solve_plan(write(tmp_path, hand_plan("expected")), SolveOptions(solver="highs")).risk.mean_plan_returned
