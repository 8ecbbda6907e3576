"""Mélange-style comparison: one service's traffic split across accelerator types by request size, against
Mélange's own ILP on the same throughputs and prices, the best single type and planopt's own split: none.

    python benchmarks/melange.py                      # benchmarks/RESULTS.md, "Split by request size"
    python benchmarks/melange.py --rates 2 8 --solver cbc

The method is Griggs et al. 2024, "Mélange: Cost Efficient LLM Serving by Exploiting GPU Heterogeneity"
(arXiv 2404.14527): profile each accelerator per request-size bucket, then choose whole GPUs of each type and
continuous shares of each bucket's requests so that every type carries the load sent to it, at least cost.
planopt states the same service as ONE workload: `tokens.mix` (the buckets), `split: by_size`, occupancy 1, no
spares or rollout, one flat day, on-demand only, one GPU per replica (tp 1), as Mélange plans.

The input, derived here (no measured numbers are borrowed):
- model: llama-3.1-8b at bf16 (the builtin catalog's card); a TPOT target of 100 ms;
- accelerators and prices: the builtin catalog's single-GPU on-demand offers of the four types Mélange compares
  (aws-l4-us-east-1, aws-a10g-us-east-1, runpod-a100-80gb, runpod-h100-sxm), their published prices;
- request sizes: a 3 × 3 grid of input {128, 1024, 4096} × output {32, 256, 1024} tokens, with shares for a mixed
  service — 70% conversational requests (short prompts: 50% of all requests at 128 tokens in, 20% at 1,024) and
  30% document requests (4,096 tokens in), each row's answers 40% short, 40% medium, 20% long (CONVERSATIONAL,
  DOCUMENT below): a choice of ours in the spirit of Mélange's mixed setting, stated so it can be changed;
- throughputs: planopt's own roofline estimate of each accelerator at each bucket's sizes (the physics, at the
  SLO), printed below — derived, not measured; a load test per bucket would replace them (`measured` points with
  input and output).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizer.candidates.build import build_candidates  # noqa: E402
from optimizer.errors import InfeasiblePlan  # noqa: E402
from optimizer.inputs.loading import load_plan  # noqa: E402
from optimizer.pipeline import SolveOptions, as_solved, solve_plan  # noqa: E402

OFFERS = ["aws-l4-us-east-1", "aws-a10g-us-east-1", "runpod-a100-80gb", "runpod-h100-sxm"]
INPUTS = [128, 1024, 4096]
OUTPUTS = [32, 256, 1024]
ROW_SHARES = {128: 0.5, 1024: 0.2, 4096: 0.3}
"""Share of requests by prompt size: conversational (128, 1,024) and document (4,096) requests."""
ANSWER_SHARES = {32: 0.4, 256: 0.4, 1024: 0.2}
"""Share of each row's requests by answer size."""


def classes() -> list[tuple[float, int, int]]:
    return [(round(ROW_SHARES[i] * ANSWER_SHARES[o], 6), i, o) for i in INPUTS for o in OUTPUTS]


def plan(requests_per_s: float, split: str, offers: list[str], solver: str) -> dict:
    mix = classes()
    mean_out = sum(s * o for s, _i, o in mix)
    return {"plan": f"melange-style, {requests_per_s:g} requests/s", "horizon_days": 1, "catalogs": ["builtin"],
            "policy": {"occupancy": 1, "spares": 0, "rollout_fraction": 0, "tiers": ["on-demand"], "mip_gap": 0,
                       "time_limit_s": 120, "solver": solver, "unvalidated": "allow"},
            "workloads": [{"name": "service", "model": "llama-3.1-8b", "precisions": ["bf16"], "tp": [1],
                           "parallelism": ["tp"], "offers": offers, "split": split, "slo": {"tpot_ms": 100},
                           "tokens": {"mix": [{"share": s, "input": i, "output": o} for s, i, o in mix]},
                           "demand": {"peak_output_tokens_per_s": round(requests_per_s * mean_out, 6),
                                      "profile": [1.0] * 24}}]}


def solve(d: dict):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        return solve_plan(path, SolveOptions())


def class_goodput(d: dict) -> dict[str, list[float]]:
    """Each offer's config → its goodput at every bucket (the candidates' estimate, before any solve)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        cands = build_candidates(as_solved(load_plan(path)))
    return {c.offer: list(c.class_goodput) for c in cands.by_workload["service"] if c.offer}


def prices(d: dict) -> dict[str, float]:
    """Each offer's on-demand $/GPU-hour, as the plan reads it from the catalog."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        offers = load_plan(path).catalog.offers
    return {o: float(offers[o].price("on-demand")) for o in d["workloads"][0]["offers"]}


def melange_ilp(mix: list[tuple[float, int, int]], goodput: dict[str, list[float]], price: dict[str, float],
                requests_per_s: float) -> float:
    """Mélange's ILP (Griggs et al. 2024, §5), stated here on its own: whole GPUs N_t of each type, continuous
    shares x_bt of each bucket's requests (its finest slicing), Σ_t x_bt = 1, Σ_b λ_b · x_bt ÷ throughput_bt ≤
    N_t (throughput 0: the type cannot serve the bucket); min Σ_t price_t · N_t ($/h)."""
    import pulp

    types = sorted(goodput)
    prob = pulp.LpProblem("melange", pulp.LpMinimize)
    n = {t: pulp.LpVariable(f"n_{k}", lowBound=0, cat=pulp.LpInteger) for k, t in enumerate(types)}
    x = {(b, t): pulp.LpVariable(f"x_{b}_{k}", lowBound=0) for b in range(len(mix)) for k, t in enumerate(types)
         if goodput[t][b] > 0}
    prob += pulp.lpSum(price[t] * n[t] for t in types)
    for b in range(len(mix)):
        prob += pulp.lpSum(x[(b, t)] for t in types if (b, t) in x) == 1
    for t in types:  # λ_b requests/s × output_b tokens ÷ the type's output tokens/s at the bucket
        prob += pulp.lpSum(requests_per_s * s * o / goodput[t][b] * x[(b, t)]
                           for b, (s, _i, o) in enumerate(mix) if (b, t) in x) <= n[t]
    prob.solve(pulp.HiGHS(msg=False, gapRel=0))
    if pulp.LpStatus[prob.status] != "Optimal":
        raise SystemExit(f"Mélange's ILP at {requests_per_s:g} requests/s: {pulp.LpStatus[prob.status]}")
    return float(pulp.value(prob.objective))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--rates", type=float, nargs="+", default=[1, 4, 16, 64], help="requests per second")
    ap.add_argument("--solver", default="highs")
    args = ap.parse_args(argv)
    mix = classes()
    print("Buckets (share of requests, input, output tokens) and planopt's estimated goodput per replica, output "
          "tokens/s:\n")
    print("| share | input | output | " + " | ".join(OFFERS) + " |")
    print("|---:|---:|---:|" + "---:|" * len(OFFERS))
    per_class = class_goodput(plan(args.rates[0], "by_size", OFFERS, args.solver))
    for b, (s, i, o) in enumerate(mix):
        cells = [f"{per_class[x][b]:,.0f}" if x in per_class and per_class[x][b] else "–" for x in OFFERS]
        print(f"| {s:.0%} | {i:,} | {o:,} | " + " | ".join(cells) + " |")
    price = prices(plan(args.rates[0], "by_size", OFFERS, args.solver))
    print("\n| requests/s | split: by_size $/h | its GPUs | Mélange's ILP $/h | best single type $/h | type | "
          "split: none $/h | saving vs best single |")
    print("|---:|---:|---|---:|---:|---|---:|---:|")
    worse = []
    for rate in args.rates:
        split = solve(plan(rate, "by_size", OFFERS, args.solver))
        none = solve(plan(rate, "none", OFFERS, args.solver))
        singles = {}
        for o in OFFERS:  # a type that cannot meet the SLO at some bucket cannot serve the service alone
            try:
                singles[o] = solve(plan(rate, "none", [o], args.solver)).cost_total / 24
            except InfeasiblePlan:
                pass
        best = min(singles, key=singles.get)
        w = split.workloads[0]
        gpus = ", ".join(f"{n} × {label.split(' · ')[0]}" for label, n in w.split_gpus_at_peak.items()) \
            or f"{w.gpus_at_peak} × {w.offer}"
        s_h = split.cost_total / 24
        melange = melange_ilp(mix, per_class, price, rate)
        if s_h > melange * (1 + 1e-7) + 1e-9:
            worse.append(f"{rate:g} requests/s: planopt ${s_h:,.4f}/h > Mélange's ${melange:,.4f}/h")
        print(f"| {rate:g} | {s_h:,.2f} | {gpus} | {melange:,.2f} | {singles[best]:,.2f} | {best} | "
              f"{none.cost_total / 24:,.2f} | {1 - s_h / singles[best]:.0%} |")
    if worse:
        print("\nplanopt's split costs more than Mélange's optimum: " + "; ".join(worse))
        return 1
    print("\nplanopt's split: by_size costs at most Mélange's optimum at every rate (the same throughputs and prices).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
