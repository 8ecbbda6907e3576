"""What the rows that round a plan's configs' GPUs to whole nodes together (cuts.define_pooled_rounding) do
to the re-solves that hold those configs: the plan's configs held (a re-plan keeping every last choice, the
mean scenario's plan run through the scenarios) and its alternatives priced after the solve
(strategy.price_alternatives), each without and with the rows.

    python benchmarks/pricing.py [--plan plans/q1-forecast.yaml] [--result OUT/q1-forecast.json]
                                 [--alternatives 3] [--budget 600]

The plan's configs come from `--result` (a `planopt solve` JSON) or, without it, from a solve here (as long as
the plan's time limit). A script, not a test: the seconds depend on the machine (benchmarks/RESULTS.md,
"Scenarios, months and sweeps").
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer.candidates.build import build_candidates  # noqa: E402
from optimizer.candidates.prune import ranked_alternatives  # noqa: E402
from optimizer.optimize import strategy  # noqa: E402
from optimizer.optimize.cuts import define_pooled_rounding  # noqa: E402
from optimizer.optimize.model import build_model  # noqa: E402
from optimizer.optimize.solver import solve  # noqa: E402
from optimizer.optimize.strategy import SolveOptions, settings, solve_candidates  # noqa: E402
from optimizer.pipeline import as_solved  # noqa: E402
from optimizer.results.jsonio import read_result  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default="plans/q1-forecast.yaml")
    ap.add_argument("--result", help="a planopt solve JSON of this plan: its configs are held")
    ap.add_argument("--alternatives", type=int, default=3, help="configs priced per workload")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds for each pricing run")
    args = ap.parse_args()

    loaded = as_solved(Path(args.plan))
    cands = build_candidates(loaded)
    if args.result:
        chosen = {w.name: w.key for w in read_result(Path(args.result)).workloads}
    else:
        sol, _info = solve_candidates(loaded, cands, SolveOptions(alternatives=0))
        chosen = dict(sol.chosen)
    solver, _limit, gap = settings(loaded, SolveOptions())
    segments = strategy._segments(loaded, cands)
    print(f"{args.plan}: {len(chosen)} workloads, gap target {gap:.2%}, {solver}")
    print(f"{'rows':>9} {'held s':>8} {'held plan':>12} {'proven':>8} {'priced':>7} {'infeasible':>10} "
          f"{'not priced':>10} {'pricing s':>10}")
    for pooled in (False, True):
        prog = build_model(loaded, cands, segments, cuts=True)
        rows = define_pooled_rounding(prog, chosen) if pooled else 0
        with prog.choices_fixed(chosen):
            t = time.perf_counter()
            held = solve(prog.prob, solver, time_limit_s=600, mip_gap=gap)
            held_s = time.perf_counter() - t
        ranked = ranked_alternatives(loaded.plan, prog.offers, cands.by_workload, chosen)
        t = time.perf_counter()
        out = strategy.price_alternatives(prog, chosen, ranked, args.alternatives, held.objective, solver, gap,
                                          dataclasses.replace(strategy.POLICY, safety_cap_s=args.budget))
        pricing_s = time.perf_counter() - t
        hows = [f.how for f in out.values()]
        proven = strategy._gap(held.objective, held.bound)
        print(f"{rows:>9,} {held_s:>8.2f} {held.objective:>12,.0f} {proven:>8.2%} "
              f"{sum(h in ('optimal', 'bounded') for h in hows):>7} {hows.count('infeasible'):>10} "
              f"{hows.count('not priced'):>10} {pricing_s:>10.1f}")


if __name__ == "__main__":
    main()
