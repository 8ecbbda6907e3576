"""split: by_size (each request-size class of a tokens.mix divided among a workload's configs, Mélange's
constraint) against an enumeration that imports nothing from the optimizer, for HiGHS and CBC; Mélange's own
example as one workload; and the refusals of what split does not plan."""

from __future__ import annotations

import copy
import math
import json
from pathlib import Path

import pytest

from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.jsonio import dumps, read_result

from tests.helpers.split import SEEDS, brute_force_split, random_split_plan, single_config_cost
from tests.helpers.solving import seeds_by_solver

SOLVERS = available_solvers()


def _solve(plan: dict, tmp_path: Path, solver: str | None = None):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return solve_plan(path, SolveOptions(solver=solver))


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(SEEDS, SOLVERS))
def test_split_matches_enumeration(seed: int, solver: str, tmp_path: Path) -> None:
    plan = random_split_plan(seed)
    best = brute_force_split(plan)
    result = _solve(plan, tmp_path, solver)
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(best, rel=1e-7, abs=1e-6), json.dumps(plan)


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_split_none_is_one_config_over_the_mix(seed: int, tmp_path: Path) -> None:
    """split: none serves every class on one config, at the harmonic mean of its classes' goodput."""
    plan = random_split_plan(seed)
    plan["policy"]["split"] = "none"
    result = _solve(plan, tmp_path)
    assert result.cost_total == pytest.approx(single_config_cost(plan), rel=1e-7, abs=1e-6), json.dumps(plan)
    assert single_config_cost(plan) >= brute_force_split(plan) - 1e-6


def test_the_random_split_plans_split() -> None:
    """Some plans are cheapest with both configs serving (else the enumeration tests nothing of the split)."""
    split = [s for s in SEEDS
             if brute_force_split(random_split_plan(s)) < single_config_cost(random_split_plan(s)) - 1e-6]
    assert len(split) >= 4, split


# --- Mélange's example (Griggs et al. 2024, "Mélange: Cost Efficient LLM Serving by Exploiting GPU
# Heterogeneity"): A10G and A100-80GB, input × output sizes in 2 × 2 buckets, one service ----------------

MELANGE_CLASSES = [(0.4, 250, 100), (0.2, 250, 800), (0.3, 2000, 100), (0.1, 2000, 800)]
"""(share of requests, input tokens, output tokens): short and long prompts × short and long answers."""
MELANGE_GOODPUT = {"a10g": [900, 700, 220, 160], "a100-80gb": [2600, 2300, 1500, 1200]}
"""Output tokens/s one replica sustains in each bucket (illustrative: the A10G holds its own on short prompts,
the A100's compute and memory pull ahead on long ones — the shape of Mélange's Figure 2)."""
MELANGE_PRICES = {"a10g": 1.01, "a100-80gb": 3.67}
"""On-demand $/GPU-hour, as Mélange's Table 1 states (AWS g5 and p4de per GPU)."""


def melange_plan(requests_per_s: float, split: str = "by_size", accelerators=("a10g", "a100-80gb")) -> dict:
    mean_out = sum(s * o for s, _i, o in MELANGE_CLASSES)
    measured = [{"accelerator": a, "precision": "bf16", "tp": 1, "input": i, "output": o,
                 "goodput_output_tokens_per_s": MELANGE_GOODPUT[a][k]}
                for a in accelerators for k, (_s, i, o) in enumerate(MELANGE_CLASSES)]
    return {"plan": "melange", "horizon_days": 1, "catalogs": [],
            "policy": {"occupancy": 1, "spares": 0, "rollout_fraction": 0, "tiers": ["on-demand"], "mip_gap": 0,
                       "time_limit_s": 600},
            "models": [{"id": "llama2-7b", "params_b": 7, "kv_gb_per_seq": 0.5}],
            "accelerators": [{"id": "a10g", "memory_gb": 24}, {"id": "a100-80gb", "memory_gb": 80}],
            "offers": [{"id": f"aws-{a}", "accelerator": a, "provider": "aws", "gpus_per_node": 1,
                        "price_per_gpu_hour": {"on-demand": p}} for a, p in MELANGE_PRICES.items()],
            "workloads": [{"name": "chat", "model": "llama2-7b", "accelerators": list(accelerators), "split": split,
                           "tokens": {"mix": [{"share": s, "input": i, "output": o} for s, i, o in MELANGE_CLASSES]},
                           "measured": measured,
                           "demand": {"peak_output_tokens_per_s": requests_per_s * mean_out,
                                      "profile": [1.0] * 24}}]}


def _melange_optimum(requests_per_s: float) -> float:
    """Mélange's ILP at its finest slicing, by hand: each bucket's load in replicas of each type, whole GPUs of
    each type, continuous shares — the same enumeration as the random plans' (two types)."""
    plan = melange_plan(requests_per_s)
    plan["offers"] = [o for o in plan["offers"]]
    return brute_force_split(plan)


@pytest.mark.parametrize("rate", [5, 30, 120])
@pytest.mark.parametrize("solver", SOLVERS)
def test_melange_as_one_workload(rate: float, solver: str, tmp_path: Path) -> None:
    split = _solve(melange_plan(rate), tmp_path, solver).cost_total
    none = _solve(melange_plan(rate, "none"), tmp_path, solver).cost_total
    singles = [_solve(melange_plan(rate, "none", (a,)), tmp_path, solver).cost_total for a in MELANGE_PRICES]
    assert split <= min(singles) + 1e-6
    assert split <= none + 1e-6
    assert none == pytest.approx(min(singles), rel=1e-9)
    assert split == pytest.approx(_melange_optimum(rate), rel=1e-7)
    if rate >= 30:
        assert split < none - 1.0  # the split pays at these rates


def test_split_lists_each_config_with_its_class_shares(tmp_path: Path) -> None:
    result = _solve(melange_plan(30), tmp_path)
    row = next(w for w in result.workloads if w.name == "chat")
    assert len(row.split) == 2
    for b in range(len(MELANGE_CLASSES)):
        assert sum(shares[b] for shares in row.split.values()) == pytest.approx(1.0, abs=1e-6)
    assert sum(row.split_gpus_at_peak.values()) == row.gpus_at_peak
    assert row.cost == pytest.approx(result.cost_total, rel=1e-9)  # every config's GPUs are the workload's
    (tmp_path / "result.json").write_text(dumps(result), encoding="utf-8")
    back = read_result(tmp_path / "result.json")
    assert back.workloads[0].split == row.split


# --- refusals and the schema ----------------------------------------------------------------------------


def _problems(plan: dict, tmp_path: Path) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    with pytest.raises(PlanError) as err:
        load_plan(path)
    return str(err.value)


def test_mix_shares_must_add_up_to_one(tmp_path: Path) -> None:
    plan = melange_plan(5)
    plan["workloads"][0]["tokens"]["mix"][0]["share"] = 0.5
    text = _problems(plan, tmp_path)
    assert "tokens" in text and "add up to" in text


@pytest.mark.parametrize("split", ["by_size", "any"])
def test_split_refuses_what_it_does_not_plan(split: str, tmp_path: Path) -> None:
    # API overflow is planned (tests/optimize/test_split_api.py); commitments sized low are not
    plan = copy.deepcopy(melange_plan(5, split))
    plan["policy"]["size_commitments_at"] = "low"
    said = "size_commitments_at: low"
    text = _problems(plan, tmp_path)
    assert said in text and "workloads[0].split" in text, text


def test_one_class_tokens_still_read(tmp_path: Path) -> None:
    plan = melange_plan(5, "none")
    w = plan["workloads"][0]
    w["tokens"] = {"input": 250, "output": 100}
    w["measured"] = [m for m in w["measured"] if m["input"] == 250 and m["output"] == 100]
    assert _solve(plan, tmp_path).cost_total > 0


# --- a 36-bucket, four-type input against Mélange's ILP stated on its own -------------------------------------

TYPES = {"l4": 0.80, "a10g": 1.01, "a100-80gb": 1.79, "h100-sxm": 3.99}
"""$/GPU-hour on demand (illustrative)."""


def _synthetic(seed: int) -> tuple[list[tuple[float, int, int]], dict[str, list[float]]]:
    """36 buckets (6 input × 6 output sizes) with random shares, and each type's goodput per bucket: the larger
    types pull ahead as prompts grow (prefill) and answers lengthen, with noise."""
    import random

    rng = random.Random(seed)
    sizes = [(i, o) for i in (64, 256, 512, 1024, 2048, 4096) for o in (16, 64, 128, 256, 512, 1024)]
    raw = [rng.uniform(0.2, 3.0) for _ in sizes]
    shares = [r / sum(raw) for r in raw]
    speed = {"l4": 1.0, "a10g": 1.5, "a100-80gb": 5.0, "h100-sxm": 11.0}
    goodput = {t: [round(400 * speed[t] ** (1 + 0.15 * math.log2(i / 64) / 6) * rng.uniform(0.8, 1.25)
                         * (o / (o + 64)), 1) for i, o in sizes] for t in TYPES}
    return [(s, i, o) for s, (i, o) in zip(shares, sizes)], goodput


def _melange_ilp(classes, goodput, requests_per_s: float) -> float:
    """Mélange's ILP (Griggs et al. 2024, §5): whole GPUs N_t of each type, continuous shares x_bt of each bucket's
    requests, Σ_t x_bt = 1, Σ_b λ_b · x_bt ÷ throughput_bt ≤ N_t; min Σ_t price_t · N_t ($/h)."""
    import pulp

    prob = pulp.LpProblem("melange", pulp.LpMinimize)
    n = {t: prob.add_variable(f"n_{i}", lowBound=0, cat=pulp.LpInteger) for i, t in enumerate(TYPES)}
    x = {(b, t): prob.add_variable(f"x_{b}_{i}", lowBound=0) for b in range(len(classes))
         for i, t in enumerate(TYPES)}
    prob += pulp.lpSum(TYPES[t] * n[t] for t in TYPES)
    for b in range(len(classes)):
        prob += pulp.lpSum(x[(b, t)] for t in TYPES) == 1
    for t in TYPES:  # throughput in output tokens/s: λ_b requests/s × output_b tokens
        prob += pulp.lpSum(requests_per_s * s * o / goodput[t][b] * x[(b, t)]
                           for b, (s, _i, o) in enumerate(classes)) <= n[t]
    prob.solve(pulp.HiGHS(msg=False, gapRel=0))
    assert pulp.LpStatus[prob.status] == "Optimal"
    return pulp.value(prob.objective)


@pytest.mark.parametrize("seed, rate", [(1, 3.0), (2, 20.0), (3, 90.0)])
def test_a_36_bucket_input_costs_melanges_optimum(seed: int, rate: float, tmp_path: Path) -> None:
    classes, goodput = _synthetic(seed)
    mean_out = sum(s * o for s, _i, o in classes)
    plan = {"plan": "melange-36", "horizon_days": 1, "catalogs": [],
            "policy": {"occupancy": 1, "spares": 0, "rollout_fraction": 0, "tiers": ["on-demand"], "mip_gap": 0,
                       "time_limit_s": 600},
            "models": [{"id": "mod", "params_b": 7, "kv_gb_per_seq": 0.2}],
            "accelerators": [{"id": t, "memory_gb": 80} for t in TYPES],
            "offers": [{"id": f"od-{t}", "accelerator": t, "provider": "cloud", "gpus_per_node": 1,
                        "price_per_gpu_hour": {"on-demand": p}} for t, p in TYPES.items()],
            "workloads": [{"name": "service", "model": "mod", "tp": [1], "split": "by_size",
                           "tokens": {"mix": [{"share": s, "input": i, "output": o} for s, i, o in classes]},
                           "measured": [{"accelerator": t, "precision": "bf16", "tp": 1, "input": i, "output": o,
                                         "goodput_output_tokens_per_s": goodput[t][b]}
                                        for t in TYPES for b, (_s, i, o) in enumerate(classes)],
                           "demand": {"peak_output_tokens_per_s": rate * mean_out, "profile": [1.0] * 24}}]}
    result = _solve(plan, tmp_path)
    assert result.status == "optimal"
    assert result.cost_total / 24 == pytest.approx(_melange_ilp(classes, goodput, rate), rel=1e-7)


def test_solve_and_explain_show_each_config_of_a_split(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from optimizer.cli import app

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(melange_plan(30)), encoding="utf-8")
    runner = CliRunner()
    solved = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert solved.exit_code == 0, solved.output
    assert "↳ aws-a10g · bf16 · tp1" in solved.output and "↳ aws-a100-80gb · bf16 · tp1" in solved.output
    explained = runner.invoke(app, ["explain", str(path), "--workload", "chat"])
    assert explained.exit_code == 0, explained.output
    assert "split by request size among its configs" in explained.output
