"""Batch work in a scenario plan runs on a schedule someone can buy: the tie-break that spreads it over its window
in single-scenario plans runs in scenario (and month) plans too, each segment keeping its cost
(tie_break_segment), so the plan's cost and each scenario's are those of the plan solved without it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from optimizer.pipeline import solve_plan

PLAN = """\
plan: scenario batch spread
horizon_days: 7
catalogs: []
scenarios:
  - {name: low, weight: 0.3, demand: {nightly: 0.8}}
  - {name: mid, weight: 0.4, demand: {nightly: 1.0}}
  - {name: high, weight: 0.3, demand: {nightly: 1.3}}
policy: {occupancy: 0.6, spares: 0, rollout_fraction: 0, tiers: [on-demand], mip_gap: 0}
models:
  - {id: m8b, params_b: 8, kv_gb_per_seq: 0.1}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - {id: cloud-80gb, accelerator: gpu-80gb, provider: cloud, gpus_per_node: 1, price_per_gpu_hour: {on-demand: 2.5}}
workloads:
  - name: nightly
    model: m8b
    pool: batch
    tp: [1]
    tokens: {input: 3000, output: 300}
    batch: {output_tokens_per_day: 2.0e8, window_hours: [0, 0]}
    measured: [{accelerator: gpu-80gb, precision: bf16, tp: 1, goodput_output_tokens_per_s: 2000}]
"""

REPLICA_HOURS = 2.0e8 / (2000 * 3600)
"""A day's work in replica-hours (27.8): the plan pays 28 GPU-hours a day, however they are scheduled."""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("spread") / "plan.yaml"
    path.write_text(PLAN, encoding="utf-8")
    return solve_plan(path)


def test_a_scenario_plans_batch_spreads_over_its_window(result) -> None:
    w = next(w for w in result.workloads if w.name == "nightly")
    assert len(w.hourly_replicas) == 3  # one day type in each scenario
    for day_type, row in w.hourly_replicas.items():
        assert sum(row) >= REPLICA_HOURS
        # the work over the 24 hours of its window: a replica or two each hour, not 26 in one
        assert max(row) <= math.ceil(REPLICA_HOURS / 24) + 1, (day_type, row)


def test_spreading_keeps_the_cost(result) -> None:
    """Whole GPU-hours at $2.50: 28 a day for 7 days, as the plan costs without the spread (and on every
    scenario)."""
    assert result.cost_total == pytest.approx(math.ceil(REPLICA_HOURS) * 7 * 2.5, rel=1e-9)
    assert [round(row.cost_total, 6) for row in result.scenarios] == [math.ceil(REPLICA_HOURS) * 7 * 2.5] * 3
