"""plans/q1-forecast.yaml: plans/q4.yaml's next quarter from a forecast, written and solved.

    python benchmarks/q1_forecast.py            # write plans/q1-forecast.yaml (about 30 s)
    python benchmarks/q1_forecast.py --solve    # and solve it: seconds, status, proven gap, cost

The usage is drawn, not recorded: twelve weeks (2026-10-05 to 2026-12-27) of a gateway log for q4's
six interactive workloads, each with q4's weekday and weekend curves and peak, growing 3–6% a month,
with day and hour noise (optimizer.synth.usage.generate_growing, seed 0). `planopt forecast` then
writes q4 re-dated to 2027-01-01 for three calendar months: each workload's monthly busiest hour (P50)
and five demand scenarios from the forecast's quantiles. Batch jobs and the reservation keep q4's
numbers. The written plan's policy asks for the forecast issue's target, a 1% gap, with a safety cap of 1,800 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizer.calibrate.forecast import ForecastOptions, forecast  # noqa: E402
from optimizer.inputs.loading import load_plan  # noqa: E402
from optimizer.pipeline import SolveOptions, solve_plan  # noqa: E402
from optimizer.synth.usage import SynthWorkload, generate_growing, write  # noqa: E402
from optimizer.vocab import profile_for  # noqa: E402

Q4 = ROOT / "plans" / "q4.yaml"
OUT = ROOT / "plans" / "q1-forecast.yaml"
GROWTH = {"chat": 0.04, "code-assistant": 0.06, "agents-moe": 0.05, "support-bot": 0.03, "guardrail": 0.03,
          "autocomplete": 0.05}
HEADER = """\
# plans/q4.yaml's next quarter, with its demand from a forecast: three calendar months of growth and five
# demand scenarios, as `planopt forecast` writes them. Made by `python benchmarks/q1_forecast.py` from
# twelve weeks of a drawn usage log (q4's curves and peaks, growing 3–6% a month, seed 0):
#   planopt forecast plans/q4.yaml --usage LOG --start 2027-01-01 --months 3 -o plans/q1-forecast.yaml
# with the policy's gap set to the forecast issue's target (1%) and its time limit a safety cap (the solve stops
# on policy.work_limit, the same on any machine).
# The contracts signed for q4 still run into this quarter; q4's new reservations are not carried here.
"""


def synth_workloads() -> tuple[tuple[SynthWorkload, ...], dict[str, float]]:
    plan = load_plan(Q4).plan
    out, peaks = [], {}
    for w in plan.workloads:
        if w.kind != "interactive" or w.name not in GROWTH:
            continue
        assert w.demand is not None and w.tokens is not None
        profile = {d: list(profile_for(w.demand.profile, d)) for d in ("weekday", "weekend")}
        out.append(SynthWorkload(w.name, w.name, profile, w.tokens.input, w.tokens.output, 1.0, {"all": 1.0}))
        peaks[w.name] = float(w.demand.peak_output_tokens_per_s or 0.0)
    return tuple(out), peaks


def write_plan(out: Path = OUT) -> Path:
    workloads, peaks = synth_workloads()
    events, _truth = generate_growing(weeks=12, start=dt.date(2026, 10, 5), until=dt.date(2027, 4, 5), seed=0,
                                      peaks=peaks, monthly_growth=GROWTH, workloads=workloads)
    with tempfile.TemporaryDirectory() as tmp:
        log = write(events, Path(tmp) / "usage.parquet")
        fc = forecast(Q4, ForecastOptions(usage=(log,), start="2027-01-01", months=3, scenarios=5),
                      Path(tmp) / "next.yaml")
    text = fc.yaml_text
    for pattern, repl in ((r"(?m)^plan: .*$", "plan: 2027-Q1 inference fleet (forecast)"),
                          (r"(?m)^  time_limit_s: .*$",
                           "  time_limit_s: 14400         # a safety cap far above the solve's work "
                           "(policy.work_limit), even beside a busy machine"),
                          (r"(?m)^  mip_gap: .*$", "  mip_gap: 0.01               # the forecast issue's target: 1%\n"
                           "  work_limit: {shares: {search: 0.01}}   # the search's 200 nodes: it finds no cheaper plan "
                           "than step 2's in 1,875")):
        text, n = re.subn(pattern, repl, text, count=1)
        assert n == 1, pattern
    text = HEADER + _without_leading_comments(text)
    tmp_out = out.with_suffix(".tmp")
    tmp_out.write_text(text, encoding="utf-8")
    load_plan(tmp_out)  # it loads as a plan, or nothing is written
    tmp_out.replace(out)
    return out


def _without_leading_comments(text: str) -> str:
    lines = text.splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solve", action="store_true", help="solve the written plan and print how it went")
    ap.add_argument("--solver", default="highs")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    path = write_plan()
    print(f"wrote {path.relative_to(ROOT)} in {time.perf_counter() - t:.0f} s")
    if args.solve:
        t = time.perf_counter()
        result = solve_plan(path, SolveOptions(solver=args.solver))
        took = time.perf_counter() - t
        gap = f"{result.solver.gap:.1%}" if result.solver.gap is not None else "–"
        print("| solver | status | solve and scenario value, s | proven gap | cost.total (expected) |")
        print("|---|---|---:|---:|---:|")
        print(f"| {args.solver} | {result.status} | {took:.0f} | {gap} | ${result.cost_total:,.0f} |")
        for row in result.scenarios:
            print(f"  {row.name}: weight {row.weight:g}, ${row.cost_total:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
