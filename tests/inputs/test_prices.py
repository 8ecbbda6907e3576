"""Unit prices stated once (inputs.prices), by hand, and the configs and the program priced by them."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.candidates.overflow import api_candidate
from optimizer.inputs import prices
from optimizer.inputs.loading import load_plan
from optimizer.optimize import costs

PLAN = """\
plan: prices
horizon_days: 30
catalogs: []
policy: {occupancy: 0.6, tiers: [reserved-1y, on-demand, spot], spot_pools: [batch]}
models:
  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - {id: seed-cloud-80gb, accelerator: gpu-80gb, provider: seed, gpus_per_node: 8,
     price_per_gpu_hour: {spot: 1.0, on-demand: 2.50, reserved-1y: 1.75}}
  - {id: reserved-only, accelerator: gpu-80gb, provider: seed, gpus_per_node: 8,
     price_per_gpu_hour: {reserved-1y: 1.5, reserved-3y: 1.0}}
  - {id: spot-or-reserved, accelerator: gpu-80gb, provider: seed, gpus_per_node: 8,
     price_per_gpu_hour: {spot: 1.0, reserved-1y: 1.75}}
workloads:
  - name: chat
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand: {peak_output_tokens_per_s: 800}
    api: {usd_per_m_input: 0.5, usd_per_m_output: 2.0, max_share: 0.1}
    measured: [{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}]
"""


@pytest.fixture
def loaded(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN, encoding="utf-8")
    return load_plan(path)


def test_unit_prices_by_hand(loaded):
    plan, offers = loaded.plan, loaded.catalog.offers
    w = plan.workloads[0]
    # $2 per M output tokens, and 4 input tokens per output token at $0.5 per M: $4 per M output tokens
    assert prices.api_output_token(w) == pytest.approx(4e-6, rel=1e-15)
    assert costs.api_per_token(w) == prices.api_output_token(w)
    cloud, reserved = offers["seed-cloud-80gb"], offers["reserved-only"]
    assert prices.reserved_node(cloud, "reserved-1y", 30) == pytest.approx(8 * 1.75 * 24 * 30)
    assert costs.reserved_per_node(cloud, "reserved-1y", 30) == prices.reserved_node(cloud, "reserved-1y", 30)
    assert prices.gpu_hour(cloud, "reserved-3y") == 0.0  # not sold
    # on-demand first, spot only in a spot pool; reserved-3y is not among the policy's tiers
    assert prices.cheapest_hourly_tier(plan, cloud, "batch") == "on-demand"
    assert prices.cheapest_hourly_tier(plan, offers["spot-or-reserved"], "batch") == "spot"
    assert prices.cheapest_hourly_tier(plan, offers["spot-or-reserved"], "interactive") == "reserved-1y"
    assert prices.cheapest_hourly_tier(plan, reserved, "interactive") == "reserved-1y"
    assert prices.per_gpu_hour(24 * 8 * 3.0, 8) == pytest.approx(3.0)


def test_the_api_config_is_priced_by_the_unit_price(loaded):
    plan = loaded.plan
    w = plan.workloads[0]
    demand = {("all", h): 800.0 for h in range(24)}
    c = api_candidate(plan, w, demand)
    tokens = 30 * 24 * 3600.0 * 800.0
    assert c.api_cost == pytest.approx(tokens * prices.api_output_token(w), rel=1e-12)
