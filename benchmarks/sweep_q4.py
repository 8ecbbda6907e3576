"""A 100-point sweep of plans/q4.yaml: demand 0.8–1.2 and price.on-demand 0.8–1.2, 50 values each, one key at
a time (100 points and the plan itself: 101), on the local process pool.

    python benchmarks/sweep_q4.py [--points 50] [--workers 2] [--engine process|ray] [--plan plans/q4.yaml]
                                  [--outdir DIR] [--time-limit S] [--every-point]

Prints the wall time, the points solved and those proven from solved neighbours along the price (see
optimizer.studies.sweep), the median and the slowest seconds of one solve (each measured in its worker), and the
throughput. Solved into a fresh temporary folder unless --outdir is given (then a rerun reads the points
back and solves none). `--points 5` (9 points: ×1.0 is the plan itself) checks it works in a few minutes;
`--every-point` solves every point (about N × (one q4 solve) ÷ workers). A script, not a test: numbers
depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer.pipeline import SolveOptions  # noqa: E402
from optimizer.studies.sweep import VarySpec, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", type=Path, default=ROOT / "plans" / "q4.yaml")
    ap.add_argument("--points", type=int, default=50, help="values per key (default 50: 100 points)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", choices=("process", "ray"), default="process")
    ap.add_argument("--outdir", type=Path, default=None, help="keep sweep.jsonl here (default: a temporary folder)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per point (default: the plan's)")
    ap.add_argument("--every-point", action="store_true",
                    help="solve every point (default: points along the price proven from solved neighbours)")
    args = ap.parse_args(argv)
    varies = [VarySpec("demand", 0.8, 1.2, args.points), VarySpec("price.on-demand", 0.8, 1.2, args.points)]
    options = SolveOptions(alternatives=0, time_limit_s=args.time_limit)

    def done(i: int, n: int, p) -> None:
        shown = ", ".join(f"{k}={v:g}" for k, v in p.vary.items())
        cost = "–" if p.cost_total is None else f"{p.cost_total:,.0f}"
        how = "proven" if p.interpolated else f"{p.seconds:6.1f} s"
        print(f"  {i:4d}/{n}  {shown:<36} {p.status:<10} {cost:>12}  {how:>8}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        outdir = args.outdir or Path(tmp)
        t0 = time.perf_counter()
        sweep = run_sweep(args.plan, varies, outdir, engine=args.engine, workers=args.workers, options=options,
                          every_point=args.every_point, on_start=lambda todo, back: print(f"{args.plan.name}: {todo} points to solve, {back} read "
                                                            f"back, {args.workers} workers ({args.engine})"),
                          on_point=done)
        wall = time.perf_counter() - t0
    new = [p for p in sweep.points if not p.read_back]
    solved = [p for p in new if not p.interpolated]
    secs = sorted(p.seconds for p in solved)
    print(f"\nwall {wall:.1f} s for {len(new)} points: {len(solved)} solved, {len(new) - len(solved)} proven from "
          f"solved neighbours ({sweep.read_back} read back), {args.workers} workers")
    if secs:
        print(f"per point solved: median {statistics.median(secs):.1f} s, slowest {secs[-1]:.1f} s, "
              f"fastest {secs[0]:.1f} s; {wall / len(new):.1f} s of wall time a point")
    statuses = {s: sum(1 for p in sweep.points if p.status == s) for s in sorted({p.status for p in sweep.points})}
    print("statuses: " + ", ".join(f"{n} {s}" for s, n in statuses.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
