"""split: any — a workload's whole traffic divided among its configs in one share each (a router blind to request
sizes), each config sized on its share of every hour at its goodput over the mix: against an enumeration that
imports nothing from the optimizer (brute_force_split of the plan's one-class view), for HiGHS and CBC; and
across providers when a cap binds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.split import SEEDS, brute_force_split, random_split_plan, single_config_cost, whole_traffic_view
from tests.helpers.solving import seeds_by_solver

SOLVERS = available_solvers()


def _solve(plan: dict, tmp_path: Path, solver: str | None = None):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return solve_plan(path, SolveOptions(solver=solver))


def _any(seed: int) -> dict:
    plan = random_split_plan(seed)
    plan["policy"]["split"] = "any"
    return plan


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(SEEDS, SOLVERS))
def test_split_any_matches_enumeration(seed: int, solver: str, tmp_path: Path) -> None:
    plan = _any(seed)
    best = brute_force_split(whole_traffic_view(plan))
    result = _solve(plan, tmp_path, solver)
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(best, rel=1e-7, abs=1e-6), json.dumps(plan)
    w = result.workloads[0]
    assert all(len(shares) == 1 for shares in w.split.values())  # one share of the whole traffic per config
    assert sum(shares[0] for shares in w.split.values()) == pytest.approx(1.0, abs=1e-6)


def test_split_any_lies_between_by_size_and_none() -> None:
    """A share of the whole traffic is a share of every class: by_size can do what any does, none cannot."""
    for seed in SEEDS:
        plan = _any(seed)
        assert brute_force_split(plan) <= brute_force_split(whole_traffic_view(plan)) + 1e-6
        assert brute_force_split(whole_traffic_view(plan)) <= single_config_cost(plan) + 1e-6
    helps = [s for s in SEEDS if brute_force_split(whole_traffic_view(_any(s))) < single_config_cost(_any(s)) - 1e-6]
    assert helps, "no random plan is cheaper split as a whole: the enumeration tests nothing of split: any"


def _capped(split: str) -> dict:
    """One chat workload of 2,000 output tok/s at 250 tok/s a GPU (8 GPUs) with no request-size mix; provider
    a's GPUs at $2/h are capped at 5, provider b's cost $3/h."""
    return {"plan": "capped", "horizon_days": 1, "catalogs": [],
            "policy": {"occupancy": 1, "spares": 0, "rollout_fraction": 0, "tiers": ["on-demand"], "mip_gap": 0,
                       "split": split},
            "models": [{"id": "m", "params_b": 7, "kv_gb_per_seq": 0.2}],
            "accelerators": [{"id": "gpu", "memory_gb": 80}],
            "offers": [{"id": "a-gpu", "accelerator": "gpu", "provider": "a", "gpus_per_node": 1,
                        "price_per_gpu_hour": {"on-demand": 2.0}, "available_gpus": {"on-demand": 5}},
                       {"id": "b-gpu", "accelerator": "gpu", "provider": "b", "gpus_per_node": 1,
                        "price_per_gpu_hour": {"on-demand": 3.0}}],
            "workloads": [{"name": "chat", "model": "m", "tp": [1], "tokens": {"input": 500, "output": 200},
                           "measured": [{"accelerator": "gpu", "precision": "bf16", "tp": 1,
                                         "goodput_output_tokens_per_s": 250}],
                           "demand": {"peak_output_tokens_per_s": 2000, "profile": [1.0] * 24}}]}


@pytest.mark.parametrize("solver", SOLVERS)
def test_split_any_spreads_across_providers_when_a_cap_binds(solver: str, tmp_path: Path) -> None:
    none = _solve(_capped("none"), tmp_path, solver)
    assert none.cost_total == pytest.approx(8 * 3.0 * 24)  # all 8 GPUs at b: a holds only 5
    spread = _solve(_capped("any"), tmp_path, solver)
    assert spread.cost_total == pytest.approx((5 * 2.0 + 3 * 3.0) * 24)  # 5 at a, the other 3 at b
    w = spread.workloads[0]
    assert {x.offer: x.replicas.total for x in w.split_configs.values()} == {"a-gpu": 5, "b-gpu": 3}
    assert sorted(round(s[0], 6) for s in w.split.values()) == [0.375, 0.625]
