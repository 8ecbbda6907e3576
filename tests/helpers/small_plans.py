"""Small hand-made plans (tests/optimize/test_constraints.py's conventions): one day, occupancy 1,
no spares, no rollout, goodput 100 tok/s per 1-GPU replica — so a demand of 100·k tok/s needs
exactly k GPUs, and costs are GPU-hours × price."""

from __future__ import annotations

import json
from pathlib import Path


def offer(oid: str, acc: str = "gpu-a", m: int = 1, caps: dict | None = None, **prices: float) -> dict:
    prices = {k.replace("_", "-"): v for k, v in prices.items()}
    return {"id": oid, "accelerator": acc, "provider": f"prov-{oid}", "gpus_per_node": m,
            "price_per_gpu_hour": prices, "available_gpus": caps or {}}


def interactive(name: str, peak: float, profile: list[float] | None = None, pool: str = "interactive",
                goodput: float = 100, accs: tuple[str, ...] = ("gpu-a", "gpu-b"), **extra) -> dict:
    w = {"name": name, "model": "m7", "pool": pool, "precisions": ["bf16"], "tp": [1],
         "tokens": {"input": 1000, "output": 200},
         "measured": [{"accelerator": a, "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": goodput}
                      for a in accs],
         "demand": {"peak_output_tokens_per_s": peak, "profile": profile or [1.0] * 24}}
    w.update(extra)
    return w


def batch(name: str, volume: float, window: list[int], pool: str = "batch", goodput: float = 100,
          accs: tuple[str, ...] = ("gpu-a", "gpu-b"), **extra) -> dict:
    w = {"name": name, "model": "m7", "pool": pool, "precisions": ["bf16"], "tp": [1],
         "tokens": {"input": 1000, "output": 200},
         "measured": [{"accelerator": a, "precision": "bf16", "tp": 1, "goodput_output_tokens_per_s": goodput}
                      for a in accs],
         "batch": {"output_tokens_per_day": volume, "window_hours": window}}
    w.update(extra)
    return w


def plan(workloads: list[dict], offers: list[dict], **policy) -> dict:
    pol = {"occupancy": 1.0, "spares": 0, "rollout_fraction": 0.0, "mip_gap": 0,
           "tiers": ["reserved-1y", "on-demand", "spot"], "spot_pools": ["batch"]}
    pol.update(policy)
    return {"plan": "constraint test", "horizon_days": 1, "catalogs": [], "policy": pol,
            "models": [{"id": "m7", "params_b": 7, "kv_gb_per_seq": 0.5}],
            "accelerators": [{"id": "gpu-a", "memory_gb": 80}, {"id": "gpu-b", "memory_gb": 80}],
            "offers": offers, "workloads": workloads}


def write(tmp_path: Path, data: dict, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def api(out_per_m: float, max_share: float) -> dict:
    return {"usd_per_m_input": 0.0, "usd_per_m_output": out_per_m, "max_share": max_share}


PEAKY = [0.5] * 12 + [1.0] * 2 + [0.5] * 10
"""500 tok/s for 22 hours, 1000 at 12:00 and 13:00: 13 000 tok/s·h a day."""
