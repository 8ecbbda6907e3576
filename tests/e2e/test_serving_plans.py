"""The 2026 fleet's serving layouts solve and explain themselves (plans/serving/): pipeline stages across
nodes, experts with data-parallel attention, weight-only MXFP4 on Hopper, tensor parallelism over PCIe,
and a GB200 NVL72 rack."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import solve_plan

from tests.helpers.paths import PLANS

SERVING = PLANS / "serving"


def _explain(plan: Path, workload: str) -> str:
    res = CliRunner().invoke(app, ["explain", str(plan), "--workload", workload, "--count", "2"])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.slow
def test_405b_at_bf16_on_h100_spans_two_nodes_in_pipeline_stages():
    plan = SERVING / "llama-405b-bf16-h100.yaml"
    w = solve_plan(plan).workload("frontier-chat")
    assert w.family == "pp" and w.accelerator == "h100-sxm" and w.gpus_per_replica >= 16
    assert w.layout and "pp" in w.layout
    out = _explain(plan, "frontier-chat")
    assert "does not fit" in out and "tp8" in out and "pp2" in out


@pytest.mark.slow
def test_deepseek_v3_is_sized_with_experts_over_gpus_and_one_latent_copy():
    plan = SERVING / "deepseek-v3-fp8.yaml"
    cands = build_candidates(load_plan(plan))
    ep = [c for c in cands.by_workload["reasoning"] if c.family == "ep"]
    assert ep, "no expert-parallel candidate"
    assert all(c.kv_copies == 1 for c in ep)
    tp = [c for c in cands.by_workload["reasoning"] if c.family == "tp"]
    assert all(c.kv_copies == c.tp for c in tp)  # the MLA latent on every GPU of a TP group
    w = solve_plan(plan).workload("reasoning")
    assert w.family in ("ep", "tp", "pp", "disagg")
    assert "ep" in _explain(plan, "reasoning")


def test_gpt_oss_120b_runs_on_one_h100_with_mxfp4_weights():
    plan = SERVING / "gpt-oss-120b-mxfp4-h100.yaml"
    w = solve_plan(plan).workload("assistant")
    assert (w.accelerator, w.precision, w.gpus_per_replica) == ("h100-sxm", "mxfp4", 1)
    assert w.weights_gb < 70  # MXFP4 experts, 16-bit attention and embeddings: the 65 GB checkpoint


def test_70b_at_fp8_on_four_l40s_over_pcie():
    plan = SERVING / "llama-70b-fp8-l40s.yaml"
    w = solve_plan(plan).workload("chat")
    assert (w.accelerator, w.tp, w.gpus_per_replica) == ("l40s", 4, 4)
    assert "l40s" in _explain(plan, "chat")


@pytest.mark.slow
def test_405b_on_a_gb200_nvl72_rack():
    plan = SERVING / "llama-405b-gb200-nvl72.yaml"
    r = solve_plan(plan)
    w = r.workload("frontier-chat")
    assert w.offer == "coreweave-gb200-rack" and w.accelerator == "gb200"
    assert all(p.gpus % 72 == 0 for p in r.purchases)  # whole racks


def test_disaggregated_replicas_share_whole_prefill_groups():
    """A disaggregated replica is a whole decode group and a share of prefill groups: at every hour the
    fleet holds whole decode groups and whole prefill groups (it had rounded replicas × GPUs per replica:
    13 replicas of a tp4 decode and 1.875 tp2 prefill groups made 101 GPUs, not 52 + 25 × 2 = 102)."""
    from optimizer.candidates.types import whole_gpus

    assert whole_gpus(13, 7.75, (1.875, 2)) == 102 and whole_gpus(13, 7.75) == 101
    cands = build_candidates(load_plan(SERVING / "llama-405b-gb200-nvl72.yaml"))
    disagg = [c for c in cands.all() if c.family == "disagg"]
    assert disagg and all(c.prefill_groups is not None for c in disagg)
    for c in disagg:
        groups, per = c.prefill_groups
        decode = round(c.gpu_fraction - groups * per)
        for dh, g in c.gpus.items():
            n = c.replicas[dh].total
            assert g == n * decode + math.ceil(n * groups - 1e-9) * per, (c.key, dh)
        # TTFT at the planned load (the plan's occupancy of the goodput), not the full-load one
        assert c.ttft_at_load_ms is not None and c.ttft_at_load_ms < c.ttft_ms, c.key


def test_a_moe_model_spreads_its_experts_over_a_whole_nvl72_rack():
    """A GB200 NVL72 rack is one 72-GPU NVLink domain: ep72 is a candidate beside the powers of two (it was
    refused as not a power of two, and as more than the 64 GPUs a replica could have)."""
    cands = build_candidates(load_plan(PLANS / "owned-cluster.yaml"),
                             keep_dominated=frozenset({"agents-moe"}))
    rack = {c.layout for c in cands.by_workload["agents-moe"] if c.offer == "buy-gb200-nvl72" and c.family == "ep"}
    assert "ep72 (dp-attention)" in rack and "ep64 (dp-attention)" in rack
    res = CliRunner().invoke(app, ["fit", "--model", "deepseek-r1", "--accelerator", "gb200", "--precision", "fp4",
                                   "--ep", "72"])
    assert res.exit_code == 0 and "ep72" in res.output, res.output
