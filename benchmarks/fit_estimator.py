"""Fit the goodput estimator's efficiencies (catalogs/estimator.yaml) on published benchmarks.

    python benchmarks/fit_estimator.py [--cv model|family|both] [--write] [--quick]

Least squares on the log error log(predicted / published) (scipy.optimize.least_squares, bounded
trust region), one residual per row, all rows weighted equally, over the rows estimator_accuracy.py
reads (benchmarks/data/benchmarks.csv and benchmarks/data/published.csv — never TensorRT-LLM 1.0
tables or MLPerf v5.1 results). Left out by rule, not by result, and still reported:
  - memory-starved rows (< 10 GB of KV cache per GPU in the engine's own accounting: the batch
    limit, not the kernels, decides them);
  - bursts rather than steady states: online rows at QPS = INF, and closed batches (every request
    submitted at once, timed from the first prefill to the last token: dstack);
  - rows run on development builds of an engine (dstack's DeepSeek-R1 runs of Feb–Mar 2025: the
    engines' first MLA/MoE kernels, 2–4× off every later result).
Parameters a training set has no rows for (a generation's factor, FP4's efficiencies) stay at their
neutral values: a held-out family is predicted from the others alone.

--cv model   leave one model out;  --cv family   leave one architecture family out (hopper, blackwell,
ampere, ada, cdna3, cdna4);  --cv both   both. Held-out errors per (family, precision) are printed, and
the P10/P50/P90 of published ÷ estimated goodput over the held-out rows (leaving one model out:
estimator.held_out in catalogs/estimator.yaml, the spread policy.estimate_error plans for).
--write      rewrites the fitted values into catalogs/estimator.yaml (keeping its comments' numbers
             to be updated by hand from the printed table).
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
    all_cases,
    left_out,
    load_catalog,
    predict,
    summarize,
    table,
)

from optimizer.inputs.schema.estimator import EstimatorParams  # noqa: E402
from optimizer.resources import catalogs_dir  # noqa: E402

# name, initial value, lower, upper; `needs` says which rows identify the parameter
FREE = [
    ("eta_memory", 0.85, 0.3, 1.0, None),
    ("eta_compute_decode.bf16", 0.6, 0.1, 1.0, ("dtype", "bf16")),
    ("eta_compute_decode.fp8", 0.5, 0.1, 1.0, ("dtype", "fp8")),
    ("eta_compute_decode.fp4", 0.4, 0.05, 1.0, ("dtype", "fp4")),
    ("eta_compute_prefill.bf16", 0.7, 0.1, 1.0, ("dtype", "bf16")),
    ("eta_compute_prefill.fp8", 0.6, 0.1, 1.0, ("dtype", "fp8")),
    ("eta_compute_prefill.fp4", 0.4, 0.05, 1.0, ("dtype", "fp4")),
    ("moe_compute_factor", 0.7, 0.2, 1.5, ("moe", True)),
    ("moe_layer_us", 20.0, 0.0, 400.0, ("moe", True)),
    ("roofline_sharpness", 2.0, 1.0, 12.0, None),
    ("step_overhead_ms", 2.0, 0.0, 10.0, None),
    ("allreduce_latency_us", 15.0, 0.0, 60.0, None),
    ("eta_scale_up", 0.5, 0.05, 1.0, None),
    ("eta_pcie", 0.5, 0.05, 1.0, ("generation", "ada")),
    ("generation_factor.ampere", 1.0, 0.3, 1.5, ("generation", "ampere")),
    ("generation_factor.ada", 1.0, 0.3, 1.5, ("generation", "ada")),
    ("generation_factor.blackwell", 1.0, 0.3, 1.5, ("generation", "blackwell")),
    ("generation_factor.cdna3", 0.6, 0.2, 1.5, ("generation", "cdna3")),
    ("generation_factor.cdna4", 0.6, 0.2, 1.5, ("generation", "cdna4")),
]
NEUTRAL = {"generation_factor": 1.0}
"""Where a parameter cannot be fitted: generations at 1 (like Hopper), FP4 borrows FP8 (DTYPE_FALLBACK)."""


def to_params(names: list[str], x: np.ndarray, base: EstimatorParams | None = None) -> EstimatorParams:
    data = (base or EstimatorParams(generation_factor={}, group_factor={})).model_dump()
    for name, v in zip(names, x):
        if "." in name:
            key, sub = name.split(".")
            data[key] = {**data[key], sub: float(v)}
        else:
            data[name] = float(v)
    return EstimatorParams.model_validate(data)


def in_fit(df: pd.DataFrame) -> pd.Series:
    return left_out(df) == ""


def _supported(spec, rows: pd.DataFrame, cat) -> bool:
    if spec is None:
        return True
    what, value = spec
    if what == "dtype":
        return bool((rows["precision"] == value).any())
    if what == "generation":
        return bool((rows["family"] == value).any())
    if what == "moe":
        return bool(rows["model"].map(lambda m: bool(cat["models"][m].experts)).any())
    return True


def fit(cases, rows: pd.DataFrame, cat, verbose: bool = True, max_nfev: int = 300):
    """Fit the parameters the rows identify; return (names, values, standard errors, params)."""
    free = [f for f in FREE if _supported(f[4], rows, cat)]
    names = [f[0] for f in free]
    lo = np.array([f[2] for f in free])
    hi = np.array([f[3] for f in free])
    x0 = np.array([f[1] for f in free])
    targets = np.array([published_of_case(c) for c in cases])

    def residuals(x):
        params = to_params(names, x)
        pred = np.array([predict(c, cat, params).predicted for c in cases])
        return np.log(np.maximum(pred, 1e-9) / targets)

    res = least_squares(residuals, x0, bounds=(lo, hi), x_scale=(hi - lo) / 4, diff_step=1e-3,
                        xtol=1e-8, ftol=1e-9, max_nfev=max_nfev)
    dof = max(1, len(res.fun) - len(res.x))
    se = np.sqrt(np.diag(np.linalg.pinv(res.jac.T @ res.jac)) * (res.fun @ res.fun) / dof)
    if verbose:
        print(f"# least_squares: {res.message} ({res.nfev} evaluations, cost {res.cost:.4f})", flush=True)
    return names, res.x, se, to_params(names, res.x)


def published_of_case(case) -> float:
    return case.published_per_replica if case.published_per_replica is not None else case.published


def cross_validate(cases, rows: pd.DataFrame, keep: np.ndarray, cat, by: str) -> pd.DataFrame:
    held = []
    for group in sorted(rows[by].astype(str).unique()):
        train_mask = keep & (rows[by].astype(str) != group).to_numpy()
        test_idx = np.where((rows[by].astype(str) == group).to_numpy())[0]
        train = [c for c, k in zip(cases, train_mask) if k]
        t = time.perf_counter()
        _, _, _, params = fit(train, rows[train_mask], cat, verbose=False, max_nfev=150)
        part = table([predict(cases[i], cat, params) for i in test_idx], cat)
        part["cv"] = f"{by}={group}"
        part["fitted"] = keep[test_idx]
        held.append(part)
        print(f"# held out {by}={group}: {len(test_idx)} rows ({time.perf_counter() - t:.0f} s)", flush=True)
    return pd.concat(held)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalogs", type=Path, default=None)
    ap.add_argument("--cv", choices=["model", "family", "both"], default=None)
    args = ap.parse_args(argv)
    cat = load_catalog(args.catalogs or catalogs_dir())
    cases = [c for c in all_cases() if c.model in cat["models"] and c.accelerator in cat["accelerators"]
             and c.precision in cat["precisions"]]
    # Predict once (neutral efficiencies) to resolve MLPerf TP choices and the memory-starved flags.
    base = table([predict(c, cat, EstimatorParams()) for c in cases], cat)
    keep = in_fit(base).to_numpy()
    fitted = [c for c, k in zip(cases, keep) if k]
    t = time.perf_counter()
    names, x, se, params = fit(fitted, base[keep], cat)
    print(f"# fitted on {len(fitted)} of {len(cases)} rows in {time.perf_counter() - t:.0f} s")
    print("# parameter: value ± standard error (from the Jacobian; bounds ignored)")
    for name, v, s in zip(names, x, se):
        print(f"{name}: {v:.4g}  ± {s:.2g}")
    df = table([predict(c, cat, params) for c in cases], cat)
    df["fitted"] = keep
    print("== in-sample, fitted rows, by (family, precision)")
    print(summarize(df[df.fitted & df.throughput], ["family", "precision"]).to_string())
    print(summarize(df[df.fitted & ~df.throughput], ["suite", "kind"]).to_string())
    print("== in-sample, rows left out of the fit by rule")
    print(summarize(df[~df.fitted], ["suite", "kind"]).to_string())
    groups = {"model": ["model"], "family": ["family"], "both": ["model", "family"]}.get(args.cv or "", [])
    for by in groups:
        cv = cross_validate(cases, base, keep, cat, by)
        print(f"== held out (leave one {by} out): throughput rows in the fit population")
        sel = cv[cv.fitted & cv.throughput]
        print(summarize(sel.assign(all_="all"), "all_").to_string())
        print(summarize(sel, ["family", "precision"]).to_string())
        print(summarize(cv[cv.fitted & ~cv.throughput], ["suite", "kind"]).to_string())
        q = held_out_ratio(sel)
        where = " (estimator.held_out in catalogs/estimator.yaml)" if by == "model" else ""
        print(f"# held-out goodput ratio, published ÷ estimated{where}: " + ", ".join(f"{k} {v:.3f}" for k, v in q.items()))
    return 0


def held_out_ratio(sel: pd.DataFrame) -> dict[str, float]:
    """P10, P50 and P90 of what a held-out row really delivered per unit of estimated goodput
    (published ÷ predicted): the spread a plan built on estimates carries (policy.estimate_error)."""
    ratio = 1.0 / (1.0 + sel["error"].to_numpy())
    return {f"p{q}": float(np.percentile(ratio, q)) for q in (10, 50, 90)}


if __name__ == "__main__":
    raise SystemExit(main())
