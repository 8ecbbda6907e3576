"""Brute force vs the integer program: the optimal horizon cost of tiny random plans, computed twice.

The enumerator (tests/helpers/bruteforce.py) derives candidates from the plan on its own (fit rule,
replica formula, nodes, caps, shared or per-pool reservations) and searches every choice of one config
per workload and every purchase; it imports nothing from the optimizer. No LP, no PuLP.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.errors import InfeasiblePlan
from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.bruteforce import NO_PLAN, PLANNED, SEEDS, brute_force, expected
from tests.helpers.solving import seeds_by_solver

SOLVERS = available_solvers()


def _solves_to_the_brute_force_optimum(seed: int, solver: str, tmp_path: Path) -> None:
    """Seed `seed`'s random plan, which has a plan, solved by `solver`: proven, at the enumerator's optimum."""
    plan, best = expected(seed)
    assert best is not None, f"seed {seed} has no plan: list it in NO_PLAN"
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    result = solve_plan(path, SolveOptions(solver=solver))
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(best, rel=1e-7, abs=1e-6), json.dumps(plan)


# --- the tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(SEEDS, SOLVERS))
def test_optimizer_matches_brute_force(seed: int, solver: str, tmp_path: Path) -> None:
    plan, best = expected(seed)
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")  # JSON is YAML 1.2
    options = SolveOptions(solver=solver)
    if best is None:
        with pytest.raises(InfeasiblePlan):
            solve_plan(path, options)
    else:
        result = solve_plan(path, options)
        assert result.status == "optimal"
        assert result.cost_total == pytest.approx(best, rel=1e-7, abs=1e-6), json.dumps(plan)


def test_the_random_plans_cover_the_cases() -> None:
    """Enough solvable plans, some infeasible ones, and every feature the generator can switch on."""
    outcomes = [expected(s) for s in SEEDS]
    solvable = [p for p, best in outcomes if best is not None]
    assert len(solvable) >= 50
    assert [s for s, (_, best) in zip(SEEDS, outcomes) if best is None] == list(NO_PLAN)
    assert any(best is None for _p, best in outcomes), "no plan is infeasible through its caps"
    feats = {
        "unshared": any(not p["policy"]["share_reserved_across_pools"] and
                        len({w["pool"] for w in p["workloads"]}) > 1 for p in solvable),
        "shared": any(p["policy"]["share_reserved_across_pools"] and
                      len({w["pool"] for w in p["workloads"]}) > 1 for p in solvable),
        "caps": any(o["available_gpus"] for p in solvable for o in p["offers"]),
        "nodes 4": any(o["gpus_per_node"] == 4 for p in solvable for o in p["offers"]),
        "nodes 2": any(o["gpus_per_node"] == 2 for p in solvable for o in p["offers"]),
        "reserved": any("reserved-1y" in p["policy"]["tiers"] for p in solvable),
        "reserved-3y": any("reserved-3y" in p["policy"]["tiers"] for p in solvable),
        "spot": any("spot" in p["policy"]["tiers"] and p["policy"]["spot_pools"] for p in solvable),
        "reservation workload": any(any("reserve_gpus" in w for w in p["workloads"]) for p in solvable),
        "day types": any("day_types" in p for p in solvable),
        "same accelerator at two offers": any(len({o["accelerator"] for o in p["offers"]}) < len(p["offers"])
                                              for p in solvable),
    }
    assert all(feats.values()), feats


@pytest.mark.slow
def test_some_random_plans_have_a_dominated_offer(tmp_path) -> None:
    """The optimizer drops offers another offer dominates: the cross-check must see that happen."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import load_plan

    hits = 0
    for seed in SEEDS:
        path = tmp_path / f"p{seed}.yaml"
        path.write_text(json.dumps(expected(seed)[0]), encoding="utf-8")
        dropped = build_candidates(load_plan(path)).dropped
        hits += any(d.family == "dominated" and d.option.startswith("offer ") for d in dropped)
    assert hits >= 3


def test_enumerator_on_a_hand_sized_case() -> None:
    """The enumerator itself, on numbers small enough to check by hand.

    One workload on 2-GPU nodes at 1.00/GPU-h on demand, 0.60 reserved; γ 100, occupancy 0.5,
    1 spare, no rollout; peak 100 for 6 hours (2 base + 1 spare = 3 GPUs), 0 otherwise (1 spare GPU).
    1 reserved node all day (2 × 0.60 × 24 = 28.80) + 1 on-demand node at the 6 peak hours
    (2 × 1.00 × 6 = 12) = 40.80; 2 reserved nodes cost 57.60, on demand only 18 × 2 + 6 × 4 = 60.
    """
    plan = {
        "plan": "hand", "horizon_days": 1, "catalogs": [],
        "policy": {"occupancy": 0.5, "memory_reserve": 0.1, "spares": 1, "rollout_fraction": 0.0,
                   "tiers": ["reserved-1y", "on-demand"], "share_reserved_across_pools": True,
                   "spot_pools": [], "mip_gap": 0},
        "models": [{"id": "m", "params_b": 1, "kv_gb_per_seq": 0.1}],
        "accelerators": [{"id": "a", "memory_gb": 80}],
        "offers": [{"id": "o", "accelerator": "a", "provider": "p", "gpus_per_node": 2,
                    "price_per_gpu_hour": {"on-demand": 1.0, "reserved-1y": 0.6}, "available_gpus": {}}],
        "workloads": [{"name": "w", "model": "m", "pool": "interactive", "precisions": ["bf16"], "tp": [1],
                       "tokens": {"input": 1, "output": 1},
                       "measured": [{"accelerator": "a", "precision": "bf16", "tp": 1,
                                     "goodput_output_tokens_per_s": 100}],
                       "demand": {"peak_output_tokens_per_s": 100, "profile": [0.0] * 18 + [1.0] * 6}}],
    }
    assert brute_force(plan) == pytest.approx(40.8)
    plan["offers"][0]["available_gpus"] = {"on-demand": 1}  # no whole node on demand
    assert brute_force(plan) == pytest.approx(57.6)
    plan["offers"][0]["available_gpus"] = {"on-demand": 1, "reserved-1y": 3}  # and 1 reserved node at most
    assert brute_force(plan) is None
    plan["offers"][0]["available_gpus"] = {}
    plan["policy"]["tiers"] = ["on-demand"]
    assert brute_force(plan) == pytest.approx(60)


@pytest.mark.skipif("highs" not in SOLVERS, reason="HiGHS (highspy) is not installed")
@pytest.mark.parametrize("seed", PLANNED)
def test_configs_chosen_whole_when_the_held_plan_is_far_match_brute_force(seed: int, tmp_path: Path,
                                                                           monkeypatch) -> None:
    """Step 2's way of configs chosen whole, taken whenever the relaxation's configs held give a plan above the
    bound (POLICY.choice_min_rows and far_from_bound at zero: the random plans are far smaller than the
    programs that take it), still ends at the brute-force optimum."""
    from optimizer.optimize import strategy

    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, choice_min_rows=0, far_from_bound=0.0))
    _solves_to_the_brute_force_optimum(seed, "highs", tmp_path)


@pytest.mark.parametrize(("seed", "solver"), seeds_by_solver(PLANNED[:20], SOLVERS))
def test_rounding_the_first_relaxation_before_cut_rounds_matches_brute_force(seed: int, solver: str, tmp_path: Path,
                                                                              monkeypatch) -> None:
    """Step 2 rounding the first relaxation before any cut round, as programs of POLICY.round_first_min_columns
    variables do (at zero: every random plan takes that way), then the cut rounds and step 2 again when that plan is
    not proven: still the brute-force optimum, for HiGHS and CBC."""
    from optimizer.optimize import strategy

    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, round_first_min_columns=0))
    _solves_to_the_brute_force_optimum(seed, solver, tmp_path)


@pytest.mark.skipif("highs" not in SOLVERS, reason="HiGHS (highspy) is not installed")
@pytest.mark.parametrize("seed", PLANNED[:10])
def test_the_first_relaxations_plan_stands_when_step_2_again_has_none(seed: int, tmp_path: Path, monkeypatch) -> None:
    """Rounding the first relaxation before the cut rounds (threshold 0), with step 2 run again finding no plan: the
    first plan is kept — returned when proven against the lifted bound, else searched from — and the solve still
    ends at the brute-force optimum."""
    from optimizer.optimize import strategy

    monkeypatch.setattr(strategy, "POLICY", replace(strategy.POLICY, round_first_min_columns=0))
    calls = []
    real = strategy.round_plan

    def second_finds_none(run, relaxed, on_relaxed=None):
        calls.append(run.incumbent)
        if len(calls) == 1:
            return real(run, relaxed, on_relaxed)
        run.bound = max(run.bound or relaxed.objective, relaxed.objective)
        run.incumbent, run.values = None, None
        return None

    monkeypatch.setattr(strategy, "round_plan", second_finds_none)
    _solves_to_the_brute_force_optimum(seed, "highs", tmp_path)
