"""How close `planopt forecast` gets to a known future, and how honest its band is.

For each seed: 8–12 weeks of hourly output tokens/s for two workloads (chat and code-assistant shapes,
weekday and weekend), compounding monthly growth drawn from 3–10%, a day shock and hourly noise on the
log scale (optimizer.synth.usage.generate_growing); the three calendar months after the log are
forecast (calibrate.forecast.forecast_workload, the model `planopt forecast` runs) and judged against
the busiest hour each month really had, noise included. Prints the P50's error per month ahead and how
often the P10–P90 band held the truth (an honest 80% band holds it about 80% of the time).

    python benchmarks/forecast_accuracy.py             # 40 seeds, about 4 minutes
    python benchmarks/forecast_accuracy.py --seeds 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optimizer.calibrate.forecast import History, calendar_months, forecast_workload  # noqa: E402
from optimizer.synth import usage as usage_synth  # noqa: E402

START = dt.date(2026, 10, 5)
WEEKDAYS = {"weekday": ("mon", "tue", "wed", "thu", "fri"), "weekend": ("sat", "sun")}


def case(seed: int, noise: float, day_noise: float, paths: int) -> list[tuple[str, int, float, float, float, float]]:
    """(workload, months ahead, p10, p50, p90, truth) for one seed."""
    rng = np.random.default_rng(1000 + seed)
    weeks = int(rng.integers(8, 13))
    log_end = START + dt.timedelta(days=weeks * 7 - 1)
    first = dt.date(log_end.year + log_end.month // 12, log_end.month % 12 + 1, 1)
    months = calendar_months(first, 3)
    until = months[-1][1] + dt.timedelta(days=months[-1][2])
    growth = {"chat": float(rng.uniform(0.03, 0.10)), "code-assistant": float(rng.uniform(0.03, 0.10))}
    _events, truth = usage_synth.generate_growing(weeks=weeks, until=until, start=START, seed=seed,
                                                  monthly_growth=growth, noise=noise, day_noise=day_noise,
                                                  requests_per_hour=1)
    out = []
    for name in growth:
        n = weeks * 7 * 24
        h = History(START, 0, truth.rates[name][:n], n)
        wf = forecast_workload(name, h, months, WEEKDAYS, paths=paths, seed=seed)
        for i, m in enumerate(wf.months):
            out.append((name, i + 1, m.p10, m.p50, m.p90, truth.busiest_hour(name, m.first, m.days)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.08, help="hourly noise, sd of the log")
    ap.add_argument("--day-noise", type=float, default=0.04, help="a day's shock, sd of the log")
    ap.add_argument("--paths", type=int, default=1000)
    args = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        rows += case(seed, args.noise, args.day_noise, args.paths)
    took = time.perf_counter() - t0
    print(f"{args.seeds} seeds × 2 workloads × 3 months; noise {args.noise:g} hourly, {args.day_noise:g} daily; "
          f"{took / (2 * args.seeds):.1f} s per workload forecast")
    print(f"{'month ahead':>12} {'mean |P50 err|':>15} {'max |P50 err|':>14} {'bias':>7} {'within 10%':>11} "
          f"{'P10–P90 holds':>14}")
    for k in (1, 2, 3):
        r = [x for x in rows if x[1] == k]
        err = np.array([p50 / t - 1 for _n, _k, _lo, p50, _hi, t in r])
        held = np.mean([lo <= t <= hi for _n, _k, lo, _p50, hi, t in r])
        print(f"{k:>12} {np.mean(np.abs(err)):>15.1%} {np.max(np.abs(err)):>14.1%} {np.mean(err):>+7.1%} "
              f"{np.mean(np.abs(err) <= 0.10):>11.0%} {held:>14.0%}")
    held = np.mean([lo <= t <= hi for _n, _k, lo, _p50, hi, t in rows])
    below = np.mean([t < lo for _n, _k, lo, _p50, hi, t in rows])
    print(f"all {len(rows)} cases: band holds {held:.1%} (truth below P10 {below:.1%}, above P90 "
          f"{1 - held - below:.1%})")


if __name__ == "__main__":
    main()
