"""Fit the goodput estimator's efficiencies (catalogs/estimator.yaml) on benchmarks.csv.

    python benchmarks/fit_estimator.py [BENCHMARKS_CSV] [--cv model|suite|accelerator]

Least squares on the log error log(predicted / published) (scipy.optimize.least_squares,
bounded trust region), one residual per row, over:
  - offline max-throughput rows (output tok/s per replica),
  - TensorRT-LLM online rows at a finite request rate (TPOT at the published load),
  - MLPerf Server rows (goodput at the SLO) and the OCI batch sweep (end-to-end latency).
Left out, by rule and not by result: rows the planner's fit marks memory-starved (< 10 GB of
KV cache per GPU, see estimator_accuracy.py) and online rows at QPS=INF (a burst of 500
requests at once, not the steady state the roofline describes). Both are still reported.
With --cv the fit is repeated leaving one group out and the held-out error is printed.
Prints the fitted parameters as YAML for catalogs/estimator.yaml.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
from estimator_accuracy import (  # noqa: E402
    DEFAULT_CSV,
    load_catalog,
    parse_rows,
    predict,
    summarize,
    table,
)

from optimizer.inputs.schema.estimator import EstimatorParams  # noqa: E402
from optimizer.resources import catalogs_dir  # noqa: E402

# name, initial value, lower, upper
FREE = [
    ("eta_memory", 0.8, 0.3, 1.0),
    ("eta_compute_decode.bf16", 0.6, 0.1, 1.0),
    ("eta_compute_decode.fp8", 0.5, 0.1, 1.0),
    ("eta_compute_prefill.bf16", 0.7, 0.1, 1.0),
    ("eta_compute_prefill.fp8", 0.5, 0.1, 1.0),
    ("moe_compute_factor", 0.7, 0.2, 1.5),
    ("roofline_sharpness", 2.5, 1.0, 12.0),
    ("step_overhead_ms", 1.0, 0.0, 10.0),
    ("allreduce_latency_us", 8.0, 0.0, 60.0),
    ("eta_scale_up", 0.5, 0.05, 1.0),
    ("generation_factor.cdna3", 1.0, 0.2, 1.5),
]


def to_params(x: np.ndarray, base: EstimatorParams | None = None) -> EstimatorParams:
    data = (base or EstimatorParams()).model_dump()
    for (name, *_), v in zip(FREE, x):
        if "." in name:
            key, sub = name.split(".")
            data[key] = {**data[key], sub: float(v)}
        else:
            data[name] = float(v)
    return EstimatorParams.model_validate(data)


def in_fit(df: pd.DataFrame) -> pd.Series:
    return ~df["starved"] & (df["load"] != "QPS=INF")


def fit(cases, cat, x0=None) -> tuple[np.ndarray, EstimatorParams]:
    lo = np.array([f[2] for f in FREE])
    hi = np.array([f[3] for f in FREE])
    x0 = np.array([f[1] for f in FREE]) if x0 is None else x0

    def residuals(x):
        params = to_params(x)
        return np.array([np.log(predict(c, cat, params).predicted / published_of(c)) for c in cases])

    res = least_squares(residuals, x0, bounds=(lo, hi), x_scale=(hi - lo) / 4, diff_step=1e-3,
                        xtol=1e-6, ftol=1e-7, max_nfev=400)
    print(f"# least_squares: {res.message} ({res.nfev} evaluations, cost {res.cost:.4f})")
    global STDERR
    dof = max(1, len(res.fun) - len(res.x))
    jtj = res.jac.T @ res.jac
    STDERR = np.sqrt(np.diag(np.linalg.pinv(jtj)) * (res.fun @ res.fun) / dof)
    return res.x, to_params(res.x)


STDERR: np.ndarray | None = None


def published_of(case) -> float:
    return getattr(case, "published_per_replica", case.published)


BARE = dict(eta_memory=1.0, eta_compute_decode={"bf16": 1.0, "fp8": 1.0},
            eta_compute_prefill={"bf16": 1.0, "fp8": 1.0}, moe_compute_factor=1.0,
            roofline_sharpness=64.0, step_overhead_ms=0.0, allreduce_latency_us=0.0,
            eta_scale_up=1.0, generation_factor={})


def _global(g: float) -> EstimatorParams:
    return EstimatorParams(**{**BARE, "eta_memory": g, "eta_compute_decode": {"bf16": g, "fp8": g},
                              "eta_compute_prefill": {"bf16": g, "fp8": g}, "eta_scale_up": g})


def ablation(cases, cat) -> None:
    """Score simpler models on the fitted rows: why the estimator has the parameters it has."""
    def score(params: EstimatorParams) -> pd.DataFrame:
        return summarize(table([predict(c, cat, params) for c in cases]), "kind")

    print("== bare roofline (all efficiencies 1, max(), no overheads)")
    print(score(EstimatorParams(**BARE)).to_string())
    res = least_squares(lambda x: np.array([np.log(predict(c, cat, _global(x[0])).predicted
                                                   / published_of(c)) for c in cases]),
                        [0.5], bounds=([0.05], [1.0]))
    print(f"== one global efficiency, fitted: {res.x[0]:.3f}")
    print(score(_global(res.x[0])).to_string())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--catalogs", type=Path, default=None)
    ap.add_argument("--cv", choices=["model", "suite", "accelerator"], default=None)
    ap.add_argument("--ablation", action="store_true",
                    help="also score a bare roofline and a roofline with one global efficiency")
    args = ap.parse_args(argv)
    cat = load_catalog(args.catalogs or catalogs_dir())
    cases = parse_rows(args.csv)
    # predict once to resolve MLPerf TP choices and the memory-starved flags
    base = table([predict(c, cat, EstimatorParams()) for c in cases])
    keep = in_fit(base).to_numpy()
    fitted_cases = [c for c, k in zip(cases, keep) if k]
    t = time.perf_counter()
    x, params = fit(fitted_cases, cat)
    print(f"# fitted on {len(fitted_cases)} of {len(cases)} rows in {time.perf_counter() - t:.0f} s")
    print("# parameter: value ± standard error (from the Jacobian; bounds ignored)")
    for (name, *_), v, se in zip(FREE, x, STDERR):
        print(f"{name}: {v:.4g}  ± {se:.2g}")
    df = table([predict(c, cat, params) for c in cases])
    df["fitted"] = keep
    print(summarize(df.assign(all="all"), ["kind", "fitted"]).to_string())
    if args.ablation:
        ablation(fitted_cases, cat)
    if args.cv:
        held = []
        for group in sorted(base[args.cv].astype(str).unique()):
            train = [c for c, k, g in zip(cases, keep, base[args.cv].astype(str)) if k and g != group]
            test = [c for c, g in zip(cases, base[args.cv].astype(str)) if g == group]
            _, p = fit(train, cat)  # from the neutral start: nothing leaks from the full fit
            part = table([predict(c, cat, p) for c in test])
            part["cv_group"] = group
            held.append(part)
            print(f"held out {args.cv}={group}: {len(test)} rows", flush=True)
        cv = pd.concat(held)
        cv["fitted"] = in_fit(cv)
        print(f"== cross-validated (leave one {args.cv} out), held-out errors")
        print(summarize(cv, ["kind", "fitted"]).to_string())
        print(summarize(cv, ["cv_group", "kind"]).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
