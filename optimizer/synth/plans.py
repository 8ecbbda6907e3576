"""Seeded random plans over the built-in catalog, for the scaling and savings benchmarks.

    python -m optimizer.synth.plans 100 out/p100.yaml [--seed 0]

Workloads are drawn from the catalog's models: about 70% interactive (a daytime bell on
weekdays, a lower copy at weekends, a third of them with 5% API overflow), 20% batch jobs with
a night or all-day window, 10% fixed reservations. Every accelerator and offer of the built-in
catalog is a candidate; two day types (66 weekdays, 26 weekend days).
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-8b", "qwen3-32b", "mixtral-8x7b", "qwen2.5-72b",
          "llama-3.3-70b", "gpt-oss-20b"]


def _bell(rng: random.Random) -> list[float]:
    base = rng.uniform(0.05, 0.35)
    peak_hour = rng.choice([11, 13, 14, 15, 20])
    width = rng.uniform(3, 6)
    return [round(base + (1 - base) * math.exp(-((h - peak_hour) ** 2) / (2 * width ** 2)), 3) for h in range(24)]


def generate(n: int, seed: int = 0, *, mip_gap: float = 0.01, time_limit_s: float = 120) -> str:
    """YAML text of a plan with n workloads."""
    rng = random.Random(seed)
    lines = [f"plan: generated {n} workloads (seed {seed})", "horizon_days: 92", "catalogs: [builtin]",
             "day_types: {weekday: 66, weekend: 26}",
             f"policy: {{time_limit_s: {time_limit_s}, mip_gap: {mip_gap}, mig_pools: [small]}}", "workloads:"]
    for i in range(n):
        kind = rng.random()
        model = rng.choice(MODELS)
        head = [f"  - name: w{i:04d}", f"    model: {model}"]
        if kind < 0.7:
            pool = rng.choice(["interactive", "interactive", "small"]) if "8b" in model else "interactive"
            weekday = _bell(rng)
            weekend = [round(v * rng.uniform(0.3, 0.8), 3) for v in weekday]
            lines += head + [
                f"    pool: {pool}", "    precisions: [bf16, fp8]",
                f"    tokens: {{input: {rng.choice([500, 1000, 2000, 4000])}, output: {rng.choice([100, 200, 400])}}}",
                f"    slo: {{ttft_ms: {rng.choice([1000, 2000])}, tpot_ms: {rng.choice([40, 50, 80])}}}",
                f"    demand: {{peak_output_tokens_per_s: {round(rng.lognormvariate(7, 1))}, "
                f"profile: {{weekday: {weekday}, weekend: {weekend}}}}}"]
            if rng.random() < 0.3:
                lines.append("    api: {usd_per_m_input: 0.5, usd_per_m_output: 1.5, max_share: 0.05}")
        elif kind < 0.9:
            start, end = rng.choice([(22, 6), (0, 0), (20, 8)])
            volume = rng.choice([1e8, 5e8, 2e9])
            lines += head + ["    pool: batch", "    precisions: [bf16, fp8]", "    tokens: {input: 2000, output: 300}",
                             "    slo: {tpot_ms: 200}",
                             f"    batch: {{output_tokens_per_day: {volume:.1e}, window_hours: [{start}, {end}]}}"]
        else:
            lines += [f"  - name: w{i:04d}", "    pool: experiments",
                      f"    reserve_gpus: {{count: {rng.choice([8, 16])}}}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(generate(args.workloads, args.seed), encoding="utf-8")


if __name__ == "__main__":
    main()
