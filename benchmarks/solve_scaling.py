"""How planopt's solve scales: the shipped plans, and generated plans of 10, 100 and 1,000 workloads
over the full catalog.

    python benchmarks/solve_scaling.py [--plans plans/q4.yaml …] [--repeats 5] [--sizes 10 100 1000]
                                       [--solvers highs cbc] [--seed 0]

Prints one row per (size, solver): candidates enumerated and kept after exact pruning, the
program's variables and rows, seconds to enumerate candidates, to build the program, and to
solve it to the plan's 1% target (the gap it proved), then the seconds to a proven 0.1% and the
seconds the tie-break pass took after it (strategy.break_ties: the schedule among plans of equal cost).
Solve seconds include rebuilding the program inside the solve; with --repeats, the median of that many
solves. Beside each wall time, the process's CPU seconds (`cpu`: its own and its finished child processes', which
size a large plan's workloads): on a shared machine the wall time says how busy it was, the CPU time what the work
took. A script, not a test: numbers depend on the machine (this one: 2 cores, HiGHS and CBC with one
thread). Alternatives are not priced here (the core's speed); `planopt solve` adds that after.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer.candidates.build import build_candidates  # noqa: E402
from optimizer.errors import SolverError  # noqa: E402
from optimizer.optimize.calendar import segment  # noqa: E402
from optimizer.optimize.model import build_model  # noqa: E402
from optimizer.optimize.solver import available_solvers  # noqa: E402
from optimizer.optimize.strategy import SolveOptions, solve_candidates  # noqa: E402
from optimizer.pipeline import as_solved  # noqa: E402
from optimizer.synth.plans import generate  # noqa: E402


def run(size: int, solver: str, seed: int, limit: float, repeats: int = 1) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"p{size}.yaml"
        path.write_text(generate(size, seed, mip_gap=0.01, time_limit_s=limit), encoding="utf-8")
        return measure(path, str(size), solver, limit, repeats)


def cpu() -> float:
    """CPU seconds of this process and of its child processes that have finished."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(path: Path, label: str, solver: str, limit: float, repeats: int = 1) -> dict:
    loaded = as_solved(path)  # months, estimates and scenarios cut in, as `planopt solve` does
    t0, c0 = time.perf_counter(), cpu()
    cands = build_candidates(loaded)
    t1, c1 = time.perf_counter(), cpu()
    prog = build_model(loaded, cands, segment(loaded.plan, cands.offer_ids()), cuts=False)
    t2, c2 = time.perf_counter(), cpu()
    row = {"size": label, "solver": solver, "enumerated": len(cands.all()) + cands.pruned,
           "kept": len(cands.all()), "vars": len(prog.prob.variables()), "rows": len(prog.prob.constraints),
           "cand_s": t1 - t0, "build_s": t2 - t1, "cand_cpu": c1 - c0, "build_cpu": c2 - c1}
    del prog
    for target, key in ((0.01, "1%"), (0.001, "0.1%")):
        runs = []
        for _ in range(repeats):
            try:
                t, c = time.perf_counter(), cpu()
                _, info = solve_candidates(loaded, cands, SolveOptions(solver=solver, time_limit_s=limit,
                                                                       mip_gap=target, alternatives=0))
                runs.append((info.seconds, info.gap, info.status, time.perf_counter() - t - info.seconds, cpu() - c))
            except SolverError:
                runs.append((None, None, "no plan", None, None))
        done = sorted((r for r in runs if r[0] is not None), key=lambda r: r[0])
        mid = done[len(done) // 2] if done else (None, None, "no plan", None, None)
        (row[f"solve_{key}"], row[f"gap_{key}"], row[f"status_{key}"], row[f"tidy_{key}"],
         row[f"cpu_{key}"]) = mid
    return row


def fmt_s(t: float | None) -> str:
    return "–" if t is None else f"{t:.2f}"


def fmt_cpu(t: float | None) -> str:
    return "–" if t is None else f"{t:.1f}"


def fmt_gap(g: float | None) -> str:
    return "–" if g is None else f"{g:.2%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plans", type=Path, nargs="*", default=[], help="plan files to measure first")
    ap.add_argument("--repeats", type=int, default=1, help="solves per row; the median is shown")
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--solvers", nargs="+", default=[s for s in ("highs", "cbc") if s in available_solvers()])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=300, help="per solve, seconds")
    args = ap.parse_args()
    head = (f"{'plan':>24} {'solver':<6} {'configs':>8} {'kept':>7} {'vars':>7} {'rows':>7} "
            f"{'cand s':>7} {'cpu':>6} {'build s':>8} {'cpu':>6} {'solve s':>8} {'cpu':>6} {'gap':>7} {'to 0.1% s':>10} "
            f"{'cpu':>6} {'gap':>7} {'tidy s':>7}")
    print(head)
    print("-" * len(head))
    jobs = [(lambda p=p, sv=sv: measure(p, p.stem, sv, args.time_limit, args.repeats)) for p in args.plans
            for sv in args.solvers]
    jobs += [(lambda n=n, sv=sv: run(n, sv, args.seed, args.time_limit, args.repeats)) for n in args.sizes
             for sv in args.solvers]
    for job in jobs:
        r = job()
        s1 = "–" if r["solve_1%"] is None else f"{r['solve_1%']:.1f}"
        s2 = "–" if r["solve_0.1%"] is None else f"{r['solve_0.1%']:.1f}"
        print(f"{r['size']:>24} {r['solver']:<6} {r['enumerated']:>8} {r['kept']:>7} {r['vars']:>7} {r['rows']:>7} "
              f"{r['cand_s']:>7.1f} {r['cand_cpu']:>6.1f} {r['build_s']:>8.1f} {r['build_cpu']:>6.1f} {s1:>8} "
              f"{fmt_cpu(r['cpu_1%']):>6} {fmt_gap(r['gap_1%']):>7} {s2:>10} {fmt_cpu(r['cpu_0.1%']):>6} "
              f"{fmt_gap(r['gap_0.1%']):>7} {fmt_s(r['tidy_0.1%']):>7}", flush=True)


if __name__ == "__main__":
    main()
