"""The sweep tests' plan: two workloads on one plan-local offer of 1-GPU nodes, goodput estimated."""

from __future__ import annotations

from pathlib import Path


PROFILE = ("[0.2, 0.2, 0.2, 0.2, 0.2, 0.3, 0.4, 0.6, 0.8, 0.9, 1.0, 1.0, "
           "1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.2]")

# Two workloads on one plan-local offer (1 GPU a node: the reserved level moves in steps of one GPU),
# goodput estimated (not measured) so `goodput` moves it too.
PLAN = """\
plan: sweep test
horizon_days: 30
catalogs: [builtin]
policy: {{occupancy: {occupancy}, spares: 1, rollout_fraction: 0.25, tiers: [reserved-1y, on-demand]}}
offers:
  - {{id: test-h100, accelerator: h100-sxm, provider: test, gpus_per_node: 1,
     price_per_gpu_hour: {{on-demand: {on_demand}, reserved-1y: 2.8}}{caps}}}
workloads:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    offers: [test-h100]
    tokens: {{input: 1000, output: 250}}
    slo: {{ttft_ms: 1000, tpot_ms: 50}}
    demand: {{peak_output_tokens_per_s: {peak}, profile: {profile}}}
  - name: summaries
    model: llama-3.1-8b
    pool: batch
    precisions: [fp8]
    offers: [test-h100]
    tokens: {{input: 3000, output: 300}}
    slo: {{tpot_ms: 200}}
    batch: {{output_tokens_per_day: {batch}}}
"""
PEAK, BATCH, ON_DEMAND = 150000.0, 1.0e9, 4.0

def write_plan(path: Path, demand: float = 1.0, on_demand: float = 1.0, occupancy: float = 0.6, caps: str = "",
               api: str | None = None) -> Path:
    """The sweep plan; `api`: the batch workload's `api:` (a flow mapping), none by default."""
    text = PLAN.format(peak=PEAK * demand, batch=BATCH * demand, on_demand=ON_DEMAND * on_demand,
                       occupancy=occupancy, profile=PROFILE, caps=caps)
    if api is not None:
        text += f"    api: {api}\n"
    path.write_text(text, encoding="utf-8")
    return path
