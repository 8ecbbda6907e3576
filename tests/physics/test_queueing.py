"""Load-aware TTFT and percentile TPOT: the queueing math by hand, the roofline's TTFT by hand, and a
TTFT target that load makes binding raising the replica count."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from optimizer.physics.queueing import (
    erlang_c,
    mean_wait_s,
    poisson_quantile,
    pooled_wait_quantile_s,
    wait_quantile_s,
)
from optimizer.physics.roofline import Roofline
from optimizer.pipeline import solve_plan

# --- the queue, by hand ---------------------------------------------------------------------------


def test_md1_mean_wait_is_rho_s_over_2_1_minus_rho():
    # λ = 5/s, service 0.1 s: ρ = 0.5, W = 0.5 × 0.1 / (2 × 0.5) = 0.05 s
    assert mean_wait_s(1, 5.0, 0.1) == pytest.approx(0.05)


def test_md1_p99_wait_by_hand():
    # P(wait > t) = ρ·exp(−t/τ), τ = s / (2(1 − ρ)) = 0.1 s: t99 = 0.1 × ln(0.5 / 0.01)
    assert wait_quantile_s(1, 5.0, 0.1, 99) == pytest.approx(0.1 * math.log(50))
    assert wait_quantile_s(1, 5.0, 0.1, 50) == pytest.approx(0.0)  # half never wait: the median is 0


def test_erlang_c_two_servers_by_hand():
    # a = 1 Erlang on 2 servers: Erlang B = (1/2) / (1 + 1 + 1/2) = 0.2; C = 0.2 / (1 − 0.5 × 0.8) = 1/3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # the mean M/D/c wait is C × s / (2(c − a)) = (1/3) × 0.1 / 2
    assert mean_wait_s(2, 10.0, 0.1) == pytest.approx(1 / 60)


def test_a_share_of_a_shared_pool_runs_at_the_utilisation_it_pays_for():
    # Half a server paid by a stream of 2.5/s at 0.1 s: the pool's one server serves two such streams,
    # ρ = 2.5 × 0.1 / 0.5 = 0.5 — M/D/1 at λ = 5/s: t99 = 0.1 × ln(0.5 / 0.01). It was queued as one
    # whole server of its own at ρ = 0.25.
    assert pooled_wait_quantile_s(0.5, 2.5, 0.1, 99) == pytest.approx(0.1 * math.log(50))
    assert pooled_wait_quantile_s(0.5, 2.5, 0.1, 99) > wait_quantile_s(0.5, 2.5, 0.1, 99)
    # 1.5 servers: two whole servers fed 2 / 1.5 streams, each server at ρ = 10 × 0.1 / 1.5 = 2/3
    assert pooled_wait_quantile_s(1.5, 10.0, 0.1, 90) == pytest.approx(wait_quantile_s(2, 10.0 * 2 / 1.5, 0.1, 90))
    # whole servers are unchanged; a paid share at 100% never drains
    assert pooled_wait_quantile_s(2, 10.0, 0.1, 99) == wait_quantile_s(2, 10.0, 0.1, 99)
    assert pooled_wait_quantile_s(0.5, 5.0, 0.1, 99) == math.inf


def test_a_saturated_queue_never_drains():
    assert wait_quantile_s(1, 10.0, 0.1, 99) == math.inf
    assert erlang_c(1, 1.5) == 1.0


def test_poisson_quantile_by_hand():
    # mean 2: P(≤5) = 0.983, P(≤6) = 0.9955, so the 99th percentile is 6
    assert poisson_quantile(2.0, 99) == 6
    assert poisson_quantile(0.0, 99) == 0
    assert poisson_quantile(400, 50) == pytest.approx(400 - 1 / 6, abs=0.01)


# --- TTFT at a batch, by hand ---------------------------------------------------------------------

def hand_roofline(servers: int = 1) -> Roofline:
    """A replica whose decode step takes 10 ms whatever the batch and whose prefill costs 0.1 ms a token."""
    return Roofline(
        input_tokens=1000, output_tokens=100, bw=1e12, c_dec=1e15, c_pre=1e15, p=1.0, pp=1,
        dense_bytes=1e10, expert_bytes=0.0, expert_share=0.0, gemm_flops_per_seq=0.0, kv_bytes_per_seq=0.0,
        attn_flops_per_seq=0.0, comm_fixed_s=0.0, comm_s_per_seq=0.0, overhead=0.0,
        prefill_flops_per_token=1e11, prefill_comm_s_per_token=0.0, prefill_alone_s_per_token=1e-4,
        prefill_alone_fixed_s=0.0, prefill_servers=servers, chunk_tokens=8192)


def test_ttft_at_a_batch_by_hand():
    rl = hand_roofline()
    b = 16
    tpot = 0.010 + b * 1000 / 100 * 1e-4  # decode + the prefill of the B·I/O tokens that arrive per step
    assert rl.tpot_s(b) == pytest.approx(tpot)
    lam = b / (tpot * 100)  # requests per second at batch 16
    s = 1000 * 1e-4  # one request's prefill
    rho = lam * s
    tau = s / (2 * (1 - rho))
    wait99 = tau * math.log(rho / 0.01)
    assert rl.ttft_s(b, 99) == pytest.approx(wait99 + 0.010 + s)
    assert rl.ttft_s(b) == pytest.approx(rho * s / (2 * (1 - rho)) + 0.010 + s)  # the mean
    assert rl.ttft_s(4, 99) < rl.ttft_s(b, 99) < rl.ttft_s(32, 99)  # a busier replica waits longer


def test_percentile_tpot_by_hand():
    rl = hand_roofline()
    # a request decodes for 100 steps while 16 others arrive on average; at p99 it sees Q = the 99th
    # percentile of Poisson(16) arrivals, each bringing 1000 prompt tokens spread over its 100 steps
    q = poisson_quantile(16, 99)
    assert rl.tpot_s(16, 99) == pytest.approx(0.010 + q * 1000 / 100 * 1e-4)
    assert q > 16 and rl.tpot_s(16, 99) > rl.tpot_s(16)


# --- a TTFT target that load makes binding adds replicas --------------------------------------------

PLAN = """\
plan: prefill-heavy assistant
horizon_days: 30
policy: {{tiers: [on-demand], spares: 0, rollout_fraction: 0}}
workloads:
  - name: summarize
    model: llama-3.1-8b
    precisions: [fp8]
    accelerators: [h100-sxm]
    tp: [1]
    parallelism: [tp]
    tokens: {{input: 8000, output: 20}}
    slo: {{{slo}}}
    demand: {{peak_output_tokens_per_s: 2000}}
"""


def _solve(tmp_path: Path, slo: str, name: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(PLAN.format(slo=slo), encoding="utf-8")
    return solve_plan(path).workload("summarize")


def test_a_ttft_target_that_load_makes_binding_adds_replicas(tmp_path):
    loose = _solve(tmp_path, "tpot_ms: 200", "loose")
    tight = _solve(tmp_path, "tpot_ms: 200, ttft_ms: 1000", "tight")
    assert tight.bound == "ttft"
    assert tight.goodput_output_tokens_per_s < loose.goodput_output_tokens_per_s
    assert tight.replicas.total > loose.replicas.total
    # the replicas are the peak over goodput at the occupancy, by hand
    assert tight.replicas.base == math.ceil(2000 / (tight.goodput_output_tokens_per_s * 0.6) - 1e-9)
    # and at the planned load the queue is shorter than at the SLO's limit
    assert tight.ttft_at_load_ms is not None and tight.ttft_at_load_ms <= 1000
