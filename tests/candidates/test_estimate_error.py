"""policy.estimate_error: the estimator's held-out error planned for, as a headroom or as three scenarios.

Checked by hand: estimated goodput (and only estimated goodput) is scaled by the catalog's held-out
ratios; the scenarios cross the plan's own with P10/P50/P90 at weights 0.3/0.4/0.3; the dearer the
goodput scenario, the more it costs; the result says what it planned for; a bad value is refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.inputs import estimates
from optimizer.inputs.catalog import load_estimator_params
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.tiny_plans import write

runner = CliRunner()
HELD_OUT = load_estimator_params().held_out


def _plan(mode: str | None = None, scenarios: list[dict] | None = None) -> dict:
    """Two workloads on one H100 offer: chat on estimated goodput, tagger on a measured one."""
    policy: dict = {"tiers": ["reserved-1y", "on-demand"], "mip_gap": 0, "time_limit_s": 600}
    if mode is not None:
        policy["estimate_error"] = mode
    plan = {
        "plan": "estimate error", "horizon_days": 30, "catalogs": ["builtin"], "policy": policy,
        "workloads": [
            {"name": "chat", "model": "llama-3.1-8b", "precisions": ["fp8"], "offers": ["lambda-h100-sxm"],
             "tokens": {"input": 1000, "output": 200}, "slo": {"ttft_ms": 1000, "tpot_ms": 40},
             "demand": {"peak_output_tokens_per_s": 60000, "profile": [0.5] * 8 + [1.0] * 12 + [0.5] * 4}},
            {"name": "tagger", "model": "llama-3.1-8b", "precisions": ["fp8"], "offers": ["lambda-h100-sxm"],
             "tp": [1], "tokens": {"input": 500, "output": 50},
             "measured": [{"accelerator": "h100-sxm", "precision": "fp8", "tp": 1, "goodput_output_tokens_per_s": 900}],
             "demand": {"peak_output_tokens_per_s": 3000, "profile": [1.0] * 24}},
        ],
    }
    if scenarios is not None:
        plan["scenarios"] = scenarios
    return plan


def _goodputs(path: Path) -> dict[str, dict[str, float]]:
    loaded = load_plan(path)
    cands = build_candidates(estimates.expand(loaded))
    return {w: {c.key: c.goodput for c in cs} for w, cs in cands.by_workload.items()}


def _headroom(path: Path) -> dict[str, dict[str, float]]:
    """What policy.estimate_error: headroom keeps of each estimated config's goodput: the low end of its group's
    error band, 1 ÷ (1 + error_p90) (catalogs/estimator.yaml validation), or the global P10 where it has none."""
    cands = build_candidates(estimates.expand(load_plan(path)))
    return {w: {c.key: (1.0 / (1.0 + c.validation.error_p90)
                        if c.validation is not None and c.validation.error_p90 is not None else HELD_OUT["p10"])
                for c in cs} for w, cs in cands.by_workload.items()}


def test_catalog_ratios_are_ordered() -> None:
    assert 0 < HELD_OUT["p10"] < HELD_OUT["p50"] < HELD_OUT["p90"]
    assert HELD_OUT["p10"] < 1 < HELD_OUT["p90"]


def test_headroom_scales_estimates_only(tmp_path: Path) -> None:
    as_is = _goodputs(write(tmp_path, _plan(), "as_is.yaml"))
    held = _goodputs(write(tmp_path, _plan("headroom"), "headroom.yaml"))
    kept = _headroom(write(tmp_path, _plan(), "bands.yaml"))
    assert set(as_is["chat"]) == set(held["chat"]) and as_is["chat"]
    for key, g in as_is["chat"].items():
        assert held["chat"][key] == pytest.approx(g * kept["chat"][key], rel=1e-12)
    assert held["tagger"] == as_is["tagger"]  # measured: as measured


def test_headroom_costs_more_and_says_so(tmp_path: Path) -> None:
    base = solve_plan(write(tmp_path, _plan(), "a.yaml"), SolveOptions(solver="highs"))
    held = solve_plan(write(tmp_path, _plan("headroom"), "b.yaml"), SolveOptions(solver="highs"))
    assert held.cost_total > base.cost_total
    chat = {w.name: w for w in held.workloads}["chat"]
    chat0 = {w.name: w for w in base.workloads}["chat"]
    if chat.key == chat0.key:
        kept = _headroom(write(tmp_path, _plan(), "c.yaml"))["chat"][chat.key]
        assert chat.goodput_output_tokens_per_s == pytest.approx(chat0.goodput_output_tokens_per_s * kept, rel=1e-9)
    assert any("policy.estimate_error: headroom" in n for n in held.notes)
    assert not any("estimate_error" in n for n in base.notes)


def test_expanding_twice_is_expanding_once(tmp_path: Path) -> None:
    for mode in ("headroom", "scenarios"):
        loaded = estimates.expand(load_plan(write(tmp_path, _plan(mode), f"{mode}.yaml")))
        again = estimates.expand(loaded)
        assert again is loaded


def test_scenarios_cross_the_plans_own(tmp_path: Path) -> None:
    loaded = estimates.expand(load_plan(write(tmp_path, _plan("scenarios"), "alone.yaml")))
    got = [(s.name, s.weight, s.goodput) for s in loaded.plan.scenarios]
    assert got == [("goodput-p10", 0.3, HELD_OUT["p10"]), ("goodput-p50", 0.4, HELD_OUT["p50"]),
                   ("goodput-p90", 0.3, HELD_OUT["p90"])]
    own = [{"name": "low", "weight": 0.25, "demand": {"all": 0.8}},
           {"name": "high", "weight": 0.75, "demand": {"chat": 1.5}, "goodput": 0.9}]
    loaded = estimates.expand(load_plan(write(tmp_path, _plan("scenarios", own), "crossed.yaml")))
    rows = {s.name: s for s in loaded.plan.scenarios}
    assert list(rows) == [f"{n}-goodput-{q}" for n in ("low", "high") for q in ("p10", "p50", "p90")]
    assert sum(s.weight for s in rows.values()) == pytest.approx(1.0)
    assert rows["high-goodput-p90"].weight == pytest.approx(0.75 * 0.3)
    assert rows["high-goodput-p10"].goodput == pytest.approx(0.9 * HELD_OUT["p10"])
    assert rows["high-goodput-p50"].demand == {"chat": 1.5}
    assert rows["low-goodput-p50"].demand == {"all": 0.8}


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_scenarios_are_solved_and_reported(tmp_path: Path, solver: str) -> None:
    path = write(tmp_path, _plan("scenarios"))
    res = runner.invoke(app, ["solve", str(path), "--json", "--solver", solver, "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    rows = {r["name"]: r for r in d["scenarios"]}
    assert list(rows) == ["goodput-p10", "goodput-p50", "goodput-p90"]
    assert [rows[n]["weight"] for n in rows] == pytest.approx([0.3, 0.4, 0.3])
    # less goodput per replica never costs less: the same reservations, more hourly capacity
    assert rows["goodput-p10"]["cost_total"] >= rows["goodput-p50"]["cost_total"] >= rows["goodput-p90"]["cost_total"]
    assert rows["goodput-p10"]["cost_total"] > rows["goodput-p90"]["cost_total"]
    assert d["cost"]["total"] == pytest.approx(sum(r["weight"] * r["cost_total"] for r in rows.values()), rel=1e-9)
    assert d["policy"]["estimate_error"] == "scenarios"
    assert any("policy.estimate_error: scenarios" in n for n in d["notes"])


def test_cvar_with_estimate_scenarios_needs_no_scenarios_of_its_own(tmp_path: Path) -> None:
    plan = _plan("scenarios")
    plan["policy"]["risk"] = {"measure": "cvar", "level": 0.7}
    result = solve_plan(write(tmp_path, plan), SolveOptions(solver="highs"))
    assert result.risk is not None and result.risk.measure == "cvar"
    assert [r.name for r in result.scenarios] == ["goodput-p10", "goodput-p50", "goodput-p90"]


def test_a_bad_mode_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("plan: bad\nhorizon_days: 30\npolicy:\n  estimate_error: p10\n"
                    "workloads:\n  - {name: w, pool: experiments, reserve_gpus: {count: 8}}\n", encoding="utf-8")
    res = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "bad.yaml:4:" in res.output
    assert "headroom" in res.output and "scenarios" in res.output
    assert not (tmp_path / "out").exists()


def _batch_plan(mode: str) -> dict:
    """One batch job on estimated goodput, on-demand 8-GPU nodes at $2/GPU-hour, all day to run in."""
    return {
        "plan": "batch estimate error", "horizon_days": 30, "catalogs": ["builtin"],
        "policy": {"tiers": ["on-demand"], "mip_gap": 0, "estimate_error": mode},
        "offers": [{"id": "h100-here", "accelerator": "h100-sxm", "provider": "here", "gpus_per_node": 8,
                    "price_per_gpu_hour": {"on-demand": 2.0}}],
        "workloads": [{"name": "nightly", "model": "llama-3.1-8b", "pool": "batch", "precisions": ["fp8"],
                       "tp": [1], "offers": ["h100-here"], "tokens": {"input": 2000, "output": 300},
                       "slo": {"tpot_ms": 200},
                       "batch": {"output_tokens_per_day": 4.0e9, "window_hours": [0, 0]}}],
    }


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_batch_work_follows_the_goodput_scenarios(tmp_path: Path, solver: str) -> None:
    """By hand: a day's volume V at goodput γ·g takes V ÷ (3600·γ·g) replica-hours of f GPUs, in whole
    8-GPU node-hours over the day: cost = 30 days × 8 × $2 × ceil(f·V ÷ (3600·γ·g·8))."""
    path = write(tmp_path, _batch_plan("scenarios"))
    loaded = estimates.expand(load_plan(path))
    result = solve_plan(path, SolveOptions(solver=solver))
    w = result.workloads[0]
    assert w.goodput_source == "estimated"
    gamma, f = w.goodput_output_tokens_per_s, w.gpus_per_replica
    costs = {r.name: r.cost_total for r in result.scenarios}
    for s in loaded.plan.scenarios:
        node_hours = math.ceil(f * 4.0e9 / (3600 * gamma * s.goodput * 8) - 1e-9)
        assert costs[s.name] == pytest.approx(30 * 8 * 2.0 * node_hours, rel=1e-9), s.name
    assert costs["goodput-p10"] > costs["goodput-p90"]
    head = solve_plan(write(tmp_path, _batch_plan("headroom"), "headroom.yaml"), SolveOptions(solver=solver))
    node_hours = math.ceil(f * 4.0e9 / (3600 * gamma * HELD_OUT["p10"] * 8) - 1e-9)
    assert head.cost_total == pytest.approx(30 * 8 * 2.0 * node_hours, rel=1e-9)


def test_overflow_spills_by_the_scenarios_goodput(tmp_path: Path) -> None:
    """With the fleet capped at b base replicas, each hour sends max(0, demand − b·γ·g·occupancy) to the
    API, g the scenario's goodput ratio: a slower scenario spills more."""
    plan = _plan("scenarios")
    plan["workloads"] = plan["workloads"][:1]
    plan["workloads"][0]["api"] = {"usd_per_m_input": 0.05, "usd_per_m_output": 0.10, "max_share": 0.3}
    result = solve_plan(write(tmp_path, plan), SolveOptions(solver="highs"))
    w = result.workloads[0]
    assert "/cap" in w.key, "the cheap API should cap the fleet"
    b = int(w.key.rsplit("/cap", 1)[1])
    occ = 0.6
    g = {s.name: s.goodput for s in estimates.expand(load_plan(write(tmp_path, plan, "again.yaml"))).plan.scenarios}
    spilled = {}
    for day, rates in w.hourly_api_tokens_per_s.items():
        scenario = day.split("~")[1]
        for h, y in enumerate(rates):
            want = max(0.0, w.hourly_demand[day][h] - b * w.goodput_output_tokens_per_s * g[scenario] * occ)
            assert y == pytest.approx(want, rel=1e-9, abs=1e-6), (day, h)
        spilled[scenario] = sum(rates)
    assert spilled["goodput-p10"] > spilled["goodput-p50"] >= spilled["goodput-p90"]


def test_explain_says_the_goodput_carries_the_headroom(tmp_path: Path) -> None:
    path = write(tmp_path, _plan("headroom"))
    res = runner.invoke(app, ["explain", str(path), "--workload", "chat", "--top", "1"])
    assert res.exit_code == 0, res.output
    assert "planned at the held-out P10 of the estimate" in res.output
    res = runner.invoke(app, ["explain", str(path), "--workload", "tagger", "--top", "1"])
    assert res.exit_code == 0, res.output
    assert "held-out P10" not in res.output  # measured goodput: as measured
