"""How fast `planopt calibrate` reads usage logs, and how close it gets to a known truth.

Writes seeded synthetic gateway logs (Poisson arrivals over four weeks, OpenAI-style CSV) of 1M
and 10M events, calibrates tests/data/calibrate/plan.yaml from each, and prints a table:
events/s, and the error of the calibrated peak, profile and token means against the truth.

    python benchmarks/calibrate_scaling.py               # 1M and 10M events
    python benchmarks/calibrate_scaling.py --events 1e6  # just one size

Not a test (it takes about a minute and writes ~700 MB to a temporary folder, removed after).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optimizer.calibrate.run import CalibrateOptions, calibrate  # noqa: E402
from optimizer.synth import usage as usage_synth  # noqa: E402

PLAN = ROOT / "tests" / "data" / "calibrate" / "plan.yaml"


def run(n_events: int, workdir: Path, days: int, fmt: str) -> dict:
    t0 = time.perf_counter()
    events, truth = usage_synth.generate(n_events, days=days, seed=2026, mode="poisson")
    log = usage_synth.write(events, workdir / f"usage-{n_events}.{fmt}")
    gen_s = time.perf_counter() - t0
    del events
    t0 = time.perf_counter()
    cal = calibrate(PLAN, CalibrateOptions(usage=(log,)), workdir / "out.yaml")
    cal_s = time.perf_counter() - t0
    peak_err, corr_min, tok_err = 0.0, 1.0, 0.0
    for w in cal.workloads:
        if w.name in ("chat", "code-assistant"):
            peak_err = max(peak_err, abs(w.new_peak / truth.peak_output_tokens_per_s[w.name] - 1))
            for t, prof in truth.profile[w.name].items():
                corr_min = min(corr_min, float(np.corrcoef(w.new_profile[t], prof)[0, 1]))
        if w.new_tokens is not None:
            tok_err = max(tok_err, abs(w.new_tokens[0] / truth.mean_input_tokens[w.name] - 1),
                          abs(w.new_tokens[1] / truth.mean_output_tokens[w.name] - 1))
    size_mb = log.stat().st_size / 1e6
    log.unlink()
    return {"events": cal.usage.events, "MB": size_mb, "generate_s": gen_s, "calibrate_s": cal_s,
            "duckdb_s": cal.usage.seconds, "events_per_s": cal.usage.events / cal_s,
            "peak_err": peak_err, "profile_corr_min": corr_min, "token_mean_err": tok_err}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=float, action="append", help="events per log (repeatable); default 1e6 and 1e7")
    ap.add_argument("--days", type=int, default=28)
    ap.add_argument("--format", choices=["csv", "parquet", "jsonl"], default="csv")
    args = ap.parse_args()
    sizes = [int(x) for x in (args.events or [1e6, 1e7])]
    workdir = Path(tempfile.mkdtemp(prefix="planopt-calibrate-bench-"))
    rows = []
    try:
        for n in sizes:
            rows.append(run(n, workdir, args.days, args.format))
            r = rows[-1]
            print(f"  {r['events']:,} events done in {r['calibrate_s']:.1f} s", file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    head = (f"{'events':>12} {'file MB':>8} {'calibrate s':>12} {'DuckDB s':>9} {'events/s':>12} "
            f"{'peak err':>9} {'profile r (min)':>16} {'token mean err':>15}")
    print(f"planopt calibrate on a {args.days}-day synthetic {args.format.upper()} log (Poisson arrivals), "
          f"plan {PLAN.relative_to(ROOT)}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['events']:>12,} {r['MB']:>8.0f} {r['calibrate_s']:>12.1f} {r['duckdb_s']:>9.1f} "
              f"{r['events_per_s']:>12,.0f} {r['peak_err']:>9.2%} {r['profile_corr_min']:>16.4f} "
              f"{r['token_mean_err']:>15.2%}")


if __name__ == "__main__":
    main()
