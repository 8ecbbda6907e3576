"""What a plan does with estimates no published result validates (policy.unvalidated), commitments sized at the
low end of the estimator's band (policy.size_commitments_at), and headroom at a group's own band
(policy.estimate_error: headroom), on one estimated workload with hand-computed answers.

The plan: llama-3.1-8b at fp8 on an H100 SXM sold one GPU a node, one day, occupancy 1, no spares, no rollout,
a flat demand; reserved at half the on-demand price (a flat load is reserved whole)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.inputs.schema.estimator import GroupEvidence, ValidationTable
from optimizer.pipeline import SolveOptions, as_solved, solve_plan

from tests.helpers.small_plans import write
from tests.helpers.solving import NO_TIME_LIMIT

GROUP = "hopper/fp8/vllm/dense"
POOLED = "hopper/fp8/*/*"
OPTIONS = SolveOptions(time_limit_s=NO_TIME_LIMIT, alternatives=0)


def _plan(peak: float = 1000.0, measured: bool = False, **policy) -> dict:
    w = {"name": "chat", "model": "llama-3.1-8b", "pool": "interactive", "precisions": ["fp8"], "tp": [1],
         "offers": ["one-h100"], "engine": "vllm", "tokens": {"input": 1000, "output": 200}, "slo": {"tpot_ms": 50},
         "demand": {"peak_output_tokens_per_s": peak}}
    if measured:
        w["measured"] = [{"accelerator": "h100-sxm", "precision": "fp8", "tp": 1, "goodput_output_tokens_per_s": 900}]
    pol = {"occupancy": 1.0, "spares": 0, "rollout_fraction": 0.0, "mip_gap": 0, "tiers": ["reserved-1y", "on-demand"]}
    pol.update(policy)
    return {"plan": "evidence", "horizon_days": 1, "policy": pol,
            "offers": [{"id": "one-h100", "accelerator": "h100-sxm", "provider": "p", "gpus_per_node": 1,
                        "price_per_gpu_hour": {"on-demand": 4.0, "reserved-1y": 2.0}}],
            "workloads": [w]}


def _loaded(tmp_path: Path, data: dict, groups: dict[str, dict] | None = None) -> LoadedPlan:
    loaded = load_plan(write(tmp_path, data))
    table = ValidationTable(groups={k: GroupEvidence(**v) for k, v in (groups or {}).items()})
    est = loaded.catalog.estimator.model_copy(update={"validation": table})
    return dataclasses.replace(loaded, catalog=dataclasses.replace(loaded.catalog, estimator=est))


def _only(loaded: LoadedPlan):
    (c,) = build_candidates(as_solved(loaded)).by_workload["chat"]
    return c


def _gpus(result) -> dict[str, int]:
    return {p.tier: p.gpus for p in result.purchases}


# --- policy.unvalidated ---------------------------------------------------------------------------------------


def test_warn_names_the_chosen_config_its_group_and_points(tmp_path):
    r = solve_plan(_loaded(tmp_path, _plan()), OPTIONS)
    v = r.workload("chat").validation
    assert (v.source, v.group, v.points, v.validated) == ("estimated", GROUP, 0, False)
    warned = [n for n in r.notes if "unvalidated" in n]
    assert len(warned) == 1
    assert "workload 'chat'" in warned[0] and "one-h100" in warned[0] and GROUP in warned[0]
    assert "0 published points" in warned[0]


def test_allow_says_nothing_and_a_validated_group_is_not_warned_of(tmp_path):
    r = solve_plan(_loaded(tmp_path, _plan(unvalidated="allow")), OPTIONS)
    assert not [n for n in r.notes if "unvalidated" in n]
    r = solve_plan(_loaded(tmp_path, _plan(), {GROUP: {"points": 3, "error_p10": -0.1, "error_p90": 0.1}}), OPTIONS)
    assert r.workload("chat").validation.validated
    assert not [n for n in r.notes if "unvalidated" in n]


def test_validate_warns_of_a_workload_with_unvalidated_configs(tmp_path):
    path = write(tmp_path, _plan())
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "unvalidated" in res.output and "workload 'chat'" in res.output
    res = CliRunner().invoke(app, ["validate", str(write(tmp_path, _plan(unvalidated="allow"), "allow.yaml"))])
    assert res.exit_code == 0 and "unvalidated" not in res.output


def test_exclude_leaves_a_workload_with_no_candidate_a_plan_error_that_says_how_to_fix(tmp_path):
    with pytest.raises(PlanError) as err:
        solve_plan(_loaded(tmp_path, _plan(unvalidated="exclude")), OPTIONS)
    text = str(err.value.problems[0])
    assert "workload 'chat' has no candidate config" in text and "unvalidated" in text
    assert "measure" in text and "policy.unvalidated" in text


def test_exclude_keeps_measured_configs(tmp_path):
    r = solve_plan(_loaded(tmp_path, _plan(measured=True, unvalidated="exclude")), OPTIONS)
    v = r.workload("chat").validation
    assert r.workload("chat").goodput_source == "measured" and v.source == "measured" and v.validated


# --- policy.size_commitments_at -------------------------------------------------------------------------------


def test_low_reserves_the_fewest_gpus_the_band_allows_and_rents_the_rest(tmp_path):
    band = {POOLED: {"points": 20, "error_p10": -0.2, "error_p90": 0.3}}
    g = _only(_loaded(tmp_path, _plan(), band)).goodput
    peak = 9.5 * g  # the estimate needs ceil(9.5) = 10 GPUs all day
    at_estimate = solve_plan(_loaded(tmp_path, _plan(peak), band), OPTIONS)
    assert _gpus(at_estimate) == {"reserved-1y": 10}
    low = solve_plan(_loaded(tmp_path, _plan(peak, size_commitments_at="low"), band), OPTIONS)
    # at the band's high end the goodput is g ÷ (1 − 0.2) = 1.25 g: ceil(9.5 ÷ 1.25) = ceil(7.6) = 8 GPUs
    assert math.ceil(9.5 / 1.25) == 8
    assert _gpus(low) == {"reserved-1y": 8, "on-demand": 2}
    assert low.cost_total == pytest.approx(24 * (8 * 2.0 + 2 * 4.0))


def test_low_leaves_measured_and_bandless_configs_as_the_estimate_sizes_them(tmp_path):
    g = _only(_loaded(tmp_path, _plan())).goodput
    peak = 9.5 * g
    no_band = solve_plan(_loaded(tmp_path, _plan(peak, size_commitments_at="low")), OPTIONS)
    assert _gpus(no_band) == {"reserved-1y": 10}
    band = {POOLED: {"points": 20, "error_p10": -0.2, "error_p90": 0.3}}
    measured = solve_plan(_loaded(tmp_path, _plan(9.5 * 900, measured=True, size_commitments_at="low"), band),
                          OPTIONS)
    assert _gpus(measured) == {"reserved-1y": 10}


# --- policy.estimate_error: headroom at the group's band ------------------------------------------------------


def test_headroom_plans_an_estimate_at_its_own_band_s_low_end(tmp_path):
    raw = _only(_loaded(tmp_path, _plan())).goodput
    global_p10 = _only(_loaded(tmp_path, _plan(estimate_error="headroom"))).goodput
    loaded = _loaded(tmp_path, _plan(estimate_error="headroom"),
                     {POOLED: {"points": 20, "error_p10": -0.2, "error_p90": 0.25}})
    assert global_p10 == pytest.approx(raw * loaded.catalog.estimator.held_out["p10"])
    assert _only(loaded).goodput == pytest.approx(raw / 1.25)
    r = solve_plan(loaded, OPTIONS)
    assert any("low end of its group's held-out error band" in n for n in r.notes)


def test_low_bounds_an_offer_s_commitments_by_every_config_on_it(tmp_path):
    """A measured workload beside the estimated one on the same offer: the bound is the sum of their own — 3
    measured GPUs as they are, 8 of the estimate's 10 — so 11 reserved and 2 on demand."""
    band = {POOLED: {"points": 20, "error_p10": -0.2, "error_p90": 0.3}}
    g = _only(_loaded(tmp_path, _plan(), band)).goodput
    data = _plan(9.5 * g, size_commitments_at="low")
    measured = _plan(2.5 * 900, measured=True)["workloads"][0]
    data["workloads"].append({**measured, "name": "docs"})
    r = solve_plan(_loaded(tmp_path, data, band), OPTIONS)
    assert r.workload("docs").goodput_source == "measured"
    assert _gpus(r) == {"reserved-1y": 11, "on-demand": 2}
