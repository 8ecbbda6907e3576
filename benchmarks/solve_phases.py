"""Where one solve's time goes: candidates, then each solver call of the three steps (relaxation and its
cut rounds, step 2's plan, step 3's search, the tidy pass) with the seconds spent handing the program to
the solver and back, and the total.

    python benchmarks/solve_phases.py [--size 1000 | --plan plans/q4.yaml] [--seed 0] [--gap 0.001]
                                      [--time-limit 120]

A script, not a test: numbers depend on the machine (benchmarks/SOLVER.md, "Large plans").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer.candidates.build import build_candidates  # noqa: E402
from optimizer.optimize import solver  # noqa: E402
from optimizer.optimize.steps import relax, search, settle  # noqa: E402
from optimizer.optimize.steps import round as round_step  # noqa: E402
from optimizer.optimize.strategy import SolveOptions, solve_candidates  # noqa: E402
from optimizer.pipeline import as_solved  # noqa: E402
from optimizer.synth.plans import generate  # noqa: E402

STEPS = (relax, round_step, search, settle)
"""The steps whose solves are timed (the plan's; tidying and pricing come after, with alternatives=0 none)."""


def _money(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def measure(path: Path, gap: float, limit: float) -> None:
    loaded = as_solved(path)  # months, estimates and scenarios cut in, as `planopt solve` does
    t = time.perf_counter()
    cands = build_candidates(loaded)
    print(f"candidates {time.perf_counter() - t:8.1f} s  ({len(cands.all())} configs kept)")
    real = solver.solve
    started = time.perf_counter()

    def timed(prob, *args, **kwargs):
        t0 = time.perf_counter()
        info = real(prob, *args, **kwargs)
        what = "relaxation" if kwargs.get("relax") else "warm search" if kwargs.get("warm_start") else "search"
        print(f"  at {t0 - started:6.1f} s  {what:<12} {time.perf_counter() - t0:7.1f} s  hand-over {info.overhead_s:5.1f} s"
              f"  rows {len(prob.constraints):>7}  {info.status:<9} plan {_money(info.objective):>14}"
              f"  bound {_money(info.bound):>14}")
        return info

    for module in STEPS:  # each step calls the solver it imported
        module.solve = timed  # type: ignore[attr-defined]
    try:
        _sol, info = solve_candidates(loaded, cands, SolveOptions(time_limit_s=limit, mip_gap=gap, alternatives=0))
    finally:
        for module in STEPS:
            module.solve = real  # type: ignore[attr-defined]
    print(f"solve      {time.perf_counter() - started:8.1f} s  {info.status}, plan {_money(info.objective)}, "
          f"proven gap {100 * (info.gap or 0):.2f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1000, help="a generated plan of this many workloads")
    ap.add_argument("--plan", type=Path, help="a plan file instead of a generated one")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap", type=float, default=0.001)
    ap.add_argument("--time-limit", type=float, default=120)
    args = ap.parse_args()
    if args.plan:
        measure(args.plan, args.gap, args.time_limit)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"p{args.size}.yaml"
        path.write_text(generate(args.size, args.seed, mip_gap=args.gap, time_limit_s=args.time_limit), encoding="utf-8")
        measure(path, args.gap, args.time_limit)


if __name__ == "__main__":
    main()
