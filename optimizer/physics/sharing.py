"""Whole GPUs shared by several small models (policy.share_pools): what one workload takes of a shared GPU's
memory and time, and the interference that sharing costs.

How the planner shares a GPU (the rule the integer program states, optimize.families `share`): at an offer, the
shared GPUs of a pool form one group, and each GPU of the group holds one replica of every workload that shares
there — the router spreads each workload's traffic over all of them. So

- memory adds up on every GPU: Σ_c (weights_c + KV_c) ≤ the GPU's memory less policy.memory_reserve, where KV_c
  is the KV cache of the sequences a replica of c holds at its goodput (the concurrency its own GPU would run:
  a shared replica runs at most that many). The reserve is kept once per GPU: the processes' CUDA contexts and
  engine buffers must fit in it together (raise memory_reserve for many small processes);
- time is shared out: workload c at demand D takes D ÷ (γ_c · (1 − σ)) GPUs' worth of time, γ_c its goodput on a
  GPU of its own and σ the slowdown; the group's base GPUs carry the sum at policy.occupancy, and the group keeps
  policy.spares and rollout on top, as a workload's replicas do.

The slowdown σ (SLOWDOWN) is an estimate from public measurements, not a law: state a measured one in
policy.share_slowdown. Sources:

- NVIDIA, "Multi-Process Service" (docs.nvidia.com/deploy/mps): the kernels of MPS clients run at once on one
  GPU context, without time-slicing's context switches; memory is not partitioned unless a limit is set per client.
- NVIDIA GPU Operator, "Time-Slicing GPUs in Kubernetes" (docs.nvidia.com/datacenter/cloud-native/gpu-operator,
  gpu-sharing): replicas of a GPU take turns; no memory or fault isolation between them.
- Pebble, "NVIDIA MPS vs dedicated GPU allocation for LLM inference" (gopebble.com case study, vLLM, Qwen3-4B-FP8,
  A100-80GB): two MPS processes on one GPU delivered 7.5% less output throughput than the same load on two GPUs
  of their own (TPOT +19.5%, TTFT +1.4%).
- Databricks, "Scaling small LLMs with NVIDIA MPS" (databricks.com/blog, 2025): MPS gains throughput per GPU for
  models of ≤ 3B parameters at short-to-medium contexts; larger models and long contexts gain little or lose.
- Duan et al., "MuxServe: Flexible Spatial-Temporal Multiplexing for Multiple LLM Serving" (ICML 2024,
  arXiv:2404.02015) and Li et al., "AlpaServe" (OSDI 2023): co-locating LLMs pays when each alone leaves the GPU
  idle; purely temporal multiplexing leaves the GPU idle between turns (MuxServe's baseline), which is why
  time-slicing is planned at a larger slowdown than MPS.
- Jain et al., "Dynamic Space-Time Scheduling for GPU Inference" (NeurIPS 2018 workshop, arXiv:1901.00041):
  time-sliced sharing serialises kernels and leaves much of the GPU idle; concurrent (space) sharing recovers it
  but interferes.
"""

from __future__ import annotations

from typing import Literal

ShareMode = Literal["mps", "time_slicing"]

SLOWDOWN: dict[str, float] = {"mps": 0.10, "time_slicing": 0.20}
"""Share of a workload's goodput lost when it shares a GPU, by policy.share_mode (σ above). mps: the 7.5% two MPS
processes lost against dedicated GPUs (Pebble), rounded up for groups of more than two; time_slicing: twice that,
for the turns in which the GPU runs one process's kernels and their context switches (NVIDIA GPU Operator;
MuxServe and Jain et al. on temporal against spatial multiplexing). Estimates: a measured value goes in
policy.share_slowdown."""


def slowdown(mode: str, measured: float | None = None) -> float:
    """σ for a share mode, or the measured one."""
    return SLOWDOWN[mode] if measured is None else measured


def memory_share(weights_gb: float, kv_gb: float, usable_gb: float) -> float:
    """Share of a shared GPU's usable memory (its memory less policy.memory_reserve) one replica takes: its
    weights and its KV cache."""
    return (weights_gb + kv_gb) / usable_gb


def time_share(demand: float, goodput: float, sigma: float) -> float:
    """GPUs' worth of time a workload at `demand` output tokens/s takes on shared GPUs: D ÷ (γ · (1 − σ)), before
    policy.occupancy (the group's base GPUs carry the sum of its members' at the occupancy)."""
    return demand / (goodput * (1.0 - sigma)) if demand > 0 else 0.0
