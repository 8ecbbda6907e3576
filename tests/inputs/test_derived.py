"""The plan's derived state as typed values (inputs.derived): a plan as stated carries none; the program's
copy (ProgramPlan) carries the estimate note and the scenario day types; peak derivations are computed from
the business numbers, and the plan's peak field holds the derived peak."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.inputs import estimates, scenarios
from optimizer.inputs.derived import (NO_PROGRAM_INPUT, ProgramPlan, peak_derivation, peak_derivations,
                                      program_input)
from optimizer.inputs.loading import load_plan

PLAN = """\
plan: derived state
horizon_days: 30
catalogs: []
day_types: {weekday: 22, weekend: 8}
policy: {estimate_error: ESTIMATE, occupancy: 0.6, tiers: [reserved-1y, on-demand]}
models:
  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - {id: seed-cloud-80gb, accelerator: gpu-80gb, provider: seed, gpus_per_node: 2,
     price_per_gpu_hour: {on-demand: 2.50, reserved-1y: 1.75}}
scenarios:
  - {name: low, weight: 0.4, demand: {all: 0.5}}
  - {name: high, weight: 0.6, demand: {all: 1.5}}
workloads:
  - name: business
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand: {users: 120000, active_share: 0.25, requests_per_active_user_per_day: 12, peak_hour_share: 0.125}
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
  - name: stated
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand: {peak_output_tokens_per_s: 800}
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
"""


def load(tmp_path: Path, estimate: str = "none"):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.replace("ESTIMATE", estimate), encoding="utf-8")
    return load_plan(path)


def test_a_stated_plan_carries_no_program_input_and_its_peaks_are_derived(tmp_path):
    loaded = load(tmp_path)
    assert not isinstance(loaded.plan, ProgramPlan) and loaded.program_input == NO_PROGRAM_INPUT
    business, stated = loaded.plan.workloads
    d = peak_derivation(loaded.plan, business)
    # 120,000 × 25% × 12 × 250 × 12.5% ÷ 3,600 s
    assert d is not None and d.peak_output_tokens_per_s == business.demand.peak_output_tokens_per_s == 3125.0
    assert peak_derivation(loaded.plan, stated) is None
    assert peak_derivations(loaded.plan) == {"business": d}


def test_scenarios_make_the_programs_copy_and_keep_the_derivation(tmp_path):
    loaded = load(tmp_path)
    expanded = scenarios.expand(loaded)
    plan = expanded.plan
    assert isinstance(plan, ProgramPlan) and program_input(plan).estimate_note is None
    sd = scenarios.scenario_days(plan)
    assert sd is not None and sd is expanded.program_input.scenarios
    assert sorted(sd.base) == ["weekday~high", "weekday~low", "weekend~high", "weekend~low"]
    assert sd.base["weekend~high"] == "weekend" and sd.scenario["weekend~high"].name == "high"
    # the program's peak is the busiest scenario's; the derivation still states the business numbers' peak
    assert plan.workloads[0].demand.peak_output_tokens_per_s == pytest.approx(3125.0 * 1.5)
    assert peak_derivations(plan) == peak_derivations(loaded.plan)
    # the stated plan is left as it was
    assert scenarios.scenario_days(loaded.plan) is None and loaded.plan.workloads[0].demand.profile is None
    # what the program's copy dumps is the plan's fields only (its day types' days are weighted, not whole:
    # left out here), and it survives a trip to a worker process
    assert set(plan.model_dump(exclude={"day_types"})) == set(loaded.plan.model_dump(exclude={"day_types"}))
    again = pickle.loads(pickle.dumps(plan))
    assert program_input(again) == program_input(plan)
    copied = plan.model_copy(update={"horizon_days": 30})
    assert program_input(copied) == program_input(plan)


@pytest.mark.parametrize("mode", ["headroom", "scenarios"])
def test_the_estimate_note_is_set_once_and_kept_through_scenarios(tmp_path, mode):
    loaded = load(tmp_path, mode)
    applied = estimates.expand(loaded)
    note = applied.program_input.estimate_note
    assert note is not None and f"policy.estimate_error: {mode}" in note
    assert estimates.expand(applied) is applied  # never twice
    expanded = scenarios.expand(applied)
    assert expanded.program_input.estimate_note == note and expanded.program_input.scenarios is not None
    assert estimates.expand(replace(loaded, plan=loaded.plan)).program_input.estimate_note == note
