"""How the two-stage program grows: plans/q4.yaml with three months of growth and N demand scenarios.

    python benchmarks/scenario_scaling.py                    # 1 and 5 scenarios, 150 s each
    python benchmarks/scenario_scaling.py --scenarios 3 --time-limit 60
    python benchmarks/scenario_scaling.py --scenarios 20 --decompose --parallel process   # by scenario
    python benchmarks/scenario_scaling.py --scenarios 20 --decompose --parallel ray

For each N: the program's size, the LP relaxation's time, and where the solve stood at the time limit
(status, gap, cost). The plan is built in memory the way `planopt forecast` writes one: each interactive
workload's peak × 1.03, 1.08, 1.14 in 2027-01…03, and scenarios spread evenly around the P50 (up to 7 from
SPREAD; more, evenly from its lowest to its highest factor). With --decompose the plan is solved by scenario
(policy.decompose scenarios, optimize/steps/decompose.py) on --parallel's engine, the stopping rule the plan's
work limit and the rounds' count; the table then gives wall and CPU seconds (this process and its finished
workers), the rounds, the Lagrangian bound, and the first stage the plan signs (to compare engines).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import datetime as dt  # noqa: E402

from optimizer.candidates.build import build_candidates  # noqa: E402
from optimizer.inputs import months, scenarios  # noqa: E402
from optimizer.inputs.loading import load_plan  # noqa: E402
from optimizer.inputs.schema.plan import Scenario  # noqa: E402
from optimizer.optimize.model import build_model  # noqa: E402
from optimizer.optimize.solver import solve  # noqa: E402
from optimizer.optimize.strategy import SolveOptions, _segments, solve_candidates  # noqa: E402

GROWTH = {"2027-01": 1.03, "2027-02": 1.08, "2027-03": 1.14}
SPREAD = (0.82, 0.92, 1.0, 1.09, 1.21, 1.3, 0.75)


def forecast_plan(n: int):
    loaded = load_plan(ROOT / "plans" / "q4.yaml")
    plan = loaded.plan
    workloads = []
    for w in plan.workloads:
        if w.demand is not None:
            p = w.demand.peak_output_tokens_per_s
            w = w.model_copy(update={"demand": w.demand.model_copy(update={
                "peak_output_tokens_per_s": p * max(GROWTH.values()),
                "peak_by_month": {m: p * g for m, g in GROWTH.items()}})})
        workloads.append(w)
    factors = sorted(SPREAD[:n])
    if n > len(SPREAD):
        lo, hi = min(SPREAD), max(SPREAD)
        factors = [round(lo + (hi - lo) * i / (n - 1), 4) for i in range(n)]
    scns = [Scenario(name=f"s{i + 1}", weight=1.0 / n, demand={"all": f}) for i, f in enumerate(factors)]
    plan = plan.model_copy(update={"start_date": dt.date(2027, 1, 1), "horizon_days": 90,
                                   "day_types": {"weekday": 64, "weekend": 26}, "workloads": workloads,
                                   "scenarios": scns if n > 1 else []})
    return scenarios.expand(months.expand(replace(loaded, plan=plan)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--time-limit", type=float, default=150.0)
    ap.add_argument("--decompose", action="store_true", help="solve by scenario (progressive hedging)")
    ap.add_argument("--parallel", choices=["serial", "process", "ray"], default="process")
    ap.add_argument("--gap", type=float, default=0.01)
    args = ap.parse_args(argv)
    if args.decompose:
        return by_scenario(args)
    print("| scenarios | day types | variables | rows | LP relaxation | at the limit | gap | cost |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|")
    for n in args.scenarios:
        loaded = forecast_plan(n)
        cands = build_candidates(loaded)
        prog = build_model(loaded, cands, _segments(loaded, cands), cuts=True)
        t = time.perf_counter()
        solve(prog.prob, "highs", time_limit_s=args.time_limit, relax=True)
        lp = time.perf_counter() - t
        t = time.perf_counter()
        _sol, info = solve_candidates(loaded, cands, SolveOptions(time_limit_s=args.time_limit, alternatives=0,
                                                                  mip_gap=0.01))
        took = time.perf_counter() - t
        gap = f"{info.gap:.1%}" if info.gap is not None else "–"
        print(f"| {n} | {len(loaded.plan.day_type_days())} | {len(prog.prob.variables()):,} | "
              f"{len(prog.prob.constraints):,} | {lp:.1f} s | {info.status} after {took:.0f} s | {gap} | "
              f"${info.objective:,.0f} |", flush=True)
    return 0


def _heard(phase: str, seconds: float, plan: float | None, bound: float | None) -> None:
    if phase == "decompose":
        print(f"  {seconds:.0f} s: best plan {plan}, bound {bound}", file=sys.stderr, flush=True)


def by_scenario(args) -> int:
    import json
    import resource

    print("| scenarios | engine | wall | CPU | rounds | status | gap | bound | cost | first stage |")
    print("|---:|---|---:|---:|---:|---|---:|---:|---:|---|")
    for n in args.scenarios:
        loaded = forecast_plan(n)
        policy = loaded.plan.policy.model_copy(update={"decompose": "scenarios"})
        loaded = replace(loaded, plan=loaded.plan.model_copy(update={"policy": policy}))
        cands = build_candidates(loaded)
        t, cpu = time.perf_counter(), time.process_time()
        sol, info = solve_candidates(loaded, cands, SolveOptions(time_limit_s=args.time_limit, alternatives=0,
                                                                  mip_gap=args.gap, parallel=args.parallel,
                                                                  progress=_heard))
        took = time.perf_counter() - t
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = time.process_time() - cpu + kids.ru_utime + kids.ru_stime
        d = info.decomposition
        first = {"configs": dict(sorted(sol.chosen.items())),
                 "reserved": {"/".join(str(x) for x in k): v for k, v in sorted(sol.reserved_nodes.items(), key=repr)
                              if v}}
        gap = f"{info.gap:.2%}" if info.gap is not None else "–"
        rounds = d.iterations if d else "–"
        print(f"| {n} | {args.parallel} | {took:.0f} s | {cpu:.0f} s | {rounds} | {info.status} | {gap} | "
              f"${info.bound:,.0f} | ${info.objective:,.0f} | {json.dumps(first, sort_keys=True)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
