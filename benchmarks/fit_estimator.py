"""Fit the goodput estimator's efficiencies and its per-engine tuning (catalogs/estimator.yaml) on published benchmarks.

    python benchmarks/fit_estimator.py [--cv model|family|engine|all] [--quick] [--write] [--prior-weight W]
                                       [--nominal-concurrency]

Least squares on the log error log(predicted / published) (scipy.optimize.least_squares, bounded
trust region), one residual per row, over the rows estimator_accuracy.py reads
(benchmarks/data/benchmarks.csv, published.csv and every online_*.csv — never TensorRT-LLM 1.0
tables, MLPerf v5.0/v5.1 or InferenceX results). An online row at a fixed concurrency gives two
residuals (output tok/s per GPU and TPOT), each weighted 1/√2 so the row counts once.

Two layers of parameters:
  - shared: the efficiencies every engine runs at (eta_*, the MoE compute factor, the generation factors,
    the link efficiencies), the default fixed costs and the closed-loop wave share (the share of the other
    prompts' prefills a closed-loop load test's prompt waits behind: optimizer/physics/concurrency.py);
  - per engine and generation (EstimatorParams.engines): the fixed per-step costs a serving engine pays
    — step_overhead_ms, allreduce_latency_us (fused all-reduce), moe_layer_us (fused routing) — and its
    small-batch bandwidth efficiency eta_memory, and its closed-loop wave share. One is free where the
    training rows have at least ENGINE_MIN_ROWS rows of that (engine, generation) that identify it; a ridge residual
    prior_weight · (engine value − shared value) / scale keeps an engine with few rows near the shared
    value. Engines the data cannot identify get no entry and run at the shared values.
Online rows are judged at the mean concurrency their harness measured, where their notes record it
(--nominal-concurrency: at the nominal one).
Left out by rule, not by result, and still reported (estimator_accuracy.left_out): memory-starved rows,
bursts (QPS = INF, closed batches), development builds, speculative decoding and prefix caching.
Parameters a training set has no rows for (a generation's factor, FP4's efficiencies) stay at their
neutral values: a held-out family is predicted from the others alone.

--cv model | family | engine   leave one model / architecture family / engine out (refit on the rest,
                               warm-started from the full fit); --cv all: the three.
--quick      fewer iterations of the full fit (development; the numbers move a little). Each held-out
             fold starts from the full fit and takes at most 15 evaluations.
--write      writes the fitted values, the engines block, held_out and the validation table into
             catalogs/estimator.yaml (the schema defaults in optimizer/inputs/schema/estimator.py are
             updated by hand from the printed values: a test keeps them equal).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
import estimator_accuracy  # noqa: E402
from estimator_accuracy import (  # noqa: E402
    all_cases,
    comparable,
    left_out,
    load_catalog,
    online_summary,
    predict,
    summarize,
    table,
)

from optimizer.inputs.schema.estimator import EstimatorParams  # noqa: E402
from optimizer.physics.validation import GENERIC  # noqa: E402
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
    ("closed_loop_wave_share", 0.3, 0.0, 1.0, ("kind", "online-conc")),
]
NEUTRAL = {"generation_factor": 1.0}
"""Where a parameter cannot be fitted: generations at 1 (like Hopper), FP4 borrows FP8 (DTYPE_FALLBACK)."""

ENGINE_FREE = [
    # parameter, lower, upper, prior scale (the deviation from the shared value one ridge unit costs), needs
    ("step_overhead_ms", 0.0, 10.0, 0.5, None),
    ("allreduce_latency_us", 0.0, 60.0, 10.0, "tp"),
    ("moe_layer_us", 0.0, 400.0, 30.0, "moe"),
    ("eta_memory", 0.3, 1.0, 0.1, None),
    ("moe_compute_factor", 0.2, 2.0, 0.2, "moe"),
    ("closed_loop_wave_share", 0.0, 1.0, 0.2, "closed-loop"),
]
"""What a serving engine changes on a generation: its fixed per-step costs and its small-batch bandwidth
efficiency, and the compute efficiency of its MoE kernels (fused routing and grouped GEMMs are the
engine's own). Dense compute efficiencies stay shared (the GEMM libraries are the same under every engine)."""
ENGINE_MIN_ROWS = 3
"""Fewest fitted rows of an (engine, generation) that identify one of its parameters."""
ENGINES = ("trtllm", "vllm", "sglang", "atom", "neuron")
"""Engine ids that get tuning (`other` rows run at the shared values)."""
PRIOR_WEIGHT = 0.3
LOSS, F_SCALE = "soft_l1", 0.3
"""Robust least squares: a residual beyond a log error of 0.3 (±35 %) counts linearly, not squared, so a
handful of published rows 2–10× off every neighbour (an engine's INT4 MoE kernels on Hopper, a docs page
timing a run with large fixed costs) cannot drag an engine's values; they stay in the fit and in the
held-out tables."""
ONLINE_WEIGHT = 1.0 / math.sqrt(2.0)


def to_params(names: list[str], x: np.ndarray, base: EstimatorParams | None = None) -> EstimatorParams:
    data = (base or EstimatorParams(generation_factor={}, group_factor={}, engines={})).model_dump()
    for name, v in zip(names, x):
        if name.startswith("engines."):
            _, engine, gen, key = name.split(".")
            data["engines"].setdefault(engine, {}).setdefault(gen, {})[key] = float(v)
        elif "." in name:
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
    if what == "kind":
        return bool((rows["kind"] == value).any())
    return True


SMALL_BATCH_KINDS = ("online-conc", "online-conc-tpot", "online-tpot", "batch-latency")
"""Rows that tell engines apart: online rows at a concurrency or a request rate and static-batch latency,
where fixed per-step costs and small-batch bandwidth show. Offline maximum-throughput rows (TensorRT-LLM on
NVIDIA, vLLM on AMD, large batches) fix the shared efficiencies, as they always did."""


def _identifying(rows: pd.DataFrame, needs: str | None, cat) -> pd.Series:
    """Small-batch rows that say something about an engine parameter: any, with a TP group, MoE."""
    small = rows["kind"].isin(SMALL_BATCH_KINDS)
    if needs == "tp":
        return small & (rows["layout"].str.match(r"^tp([2-9]|\d\d)") | rows["layout"].str.contains(r"tp\d+ ×"))
    if needs == "moe":
        return small & rows["model"].map(lambda m: bool(cat["models"][m].experts and cat["models"][m].experts > 1))
    if needs == "closed-loop":  # a wave needs others in flight: one client alone waits behind nobody
        return (rows["kind"] == "online-conc") & (rows["concurrency"] > 1)
    return small


def engine_free(rows: pd.DataFrame, cat) -> list[tuple[str, float, float, float, str]]:
    """(name, lower, upper, prior scale, prior name) of every engine parameter the rows identify: an
    engine-wide value ('*', pulled toward the shared one) where the engine's rows identify it, and a
    generation's own value (pulled toward the engine-wide one) where the engine has rows on more than
    one generation and this generation's rows identify it."""
    out = []
    for engine, erows in rows.groupby("engine"):
        if engine not in ENGINES:
            continue
        gens = sorted(erows["family"].unique())
        for key, lo, hi, scale, needs in ENGINE_FREE:
            if int(_identifying(erows, needs, cat).sum()) < ENGINE_MIN_ROWS:
                continue
            wide = f"engines.{engine}.*.{key}"
            out.append((wide, lo, hi, scale, key))
            if len(gens) < 2:
                continue
            for gen in gens:
                part = erows[erows["family"] == gen]
                if int(_identifying(part, needs, cat).sum()) >= ENGINE_MIN_ROWS:
                    out.append((f"engines.{engine}.{gen}.{key}", lo, hi, scale, wide))
    return out


def relevance_of(cases, rows: pd.DataFrame, cat) -> dict[str, set]:
    """Row ids each shared parameter moves at all, measured on the shared model (no engine tuning): the
    sparsity of the Jacobian (a generation's factor moves only its rows, FP4 efficiencies only FP4 rows)."""
    free = [f for f in FREE if _supported(f[4], rows, cat)]
    names = [f[0] for f in free]
    x = np.array([f[1] for f in free])
    base = np.array([predict(c, cat, to_params(names, x)).predicted for c in cases])
    out = {}
    for j, name in enumerate(names):
        xp = x.copy()
        xp[j] = x[j] * 1.05 if x[j] * 1.05 <= free[j][3] else x[j] * 0.95
        if xp[j] == x[j]:
            xp[j] = x[j] + 0.01 * (free[j][3] - free[j][2])
        pred = np.array([predict(c, cat, to_params(names, xp)).predicted for c in cases])
        out[name] = set(rows["row"].to_numpy()[pred != base].tolist())
    return out


def _weights(rows: pd.DataFrame) -> np.ndarray:
    return np.where(rows["kind"].isin(["online-conc", "online-conc-tpot"]), ONLINE_WEIGHT, 1.0)


def fit(cases, rows: pd.DataFrame, cat, verbose: bool = True, max_nfev: int = 300,
        start: dict[str, float] | None = None, prior_weight: float = PRIOR_WEIGHT,
        relevance: dict[str, set] | None = None, shared: bool = True, engines: bool = True,
        base: EstimatorParams | None = None):
    """Fit the parameters the rows identify; return (names, values, standard errors, params).
    `start` warm-starts from earlier values (by name); `shared` / `engines` say which layer is free (the
    other stays at `base`)."""
    free = [f for f in FREE if _supported(f[4], rows, cat)] if shared else []
    eng = engine_free(rows, cat) if engines else []
    base = base or EstimatorParams(generation_factor={}, group_factor={}, engines={})
    names = [f[0] for f in free] + [e[0] for e in eng]
    lo = np.array([f[2] for f in free] + [e[1] for e in eng])
    hi = np.array([f[3] for f in free] + [e[2] for e in eng])
    shared_x0 = {f[0]: f[1] for f in free}
    x0 = np.array([f[1] for f in free] + [shared_x0.get(e[4].split(".")[-1], getattr(base, e[4].split(".")[-1]))
                                          for e in eng])
    if start:
        x0 = np.array([start.get(n, v) for n, v in zip(names, x0)])
    x0 = np.clip(x0, lo + 1e-9, hi - 1e-9)
    targets = np.array([published_of_case(c) for c in cases])
    w = _weights(rows)
    n_shared = len(free)
    # ridge residuals: engine value − shared value (the shared one free, or its default)
    pairs = [(n_shared + i, names.index(e[4]) if e[4] in names else None, e[3],
              getattr(base, e[4].split(".")[-1])) for i, e in enumerate(eng)]

    # Which rows each parameter moves (sparse Jacobian): the rows it is relevant to (`relevance`, measured
    # once on the shared model) among those that read it — a shared fixed cost only the rows whose
    # engine has no value of its own, an engine-wide value the engine's generations without their own.
    own = {tuple(e[0].split(".")[1:]) for e in eng}
    ids = rows["row"].to_numpy()

    def relevant(key: str) -> np.ndarray:
        if relevance is None or key not in relevance:
            return np.ones(len(rows), dtype=bool)
        return np.isin(ids, list(relevance[key]))

    support: dict[int, np.ndarray] = {}
    engine_keys = {k for k, *_ in ENGINE_FREE}
    for j, name in enumerate(names[:n_shared]):
        mask = relevant(name)
        if name in engine_keys:
            mask &= ~np.array([(e, g, name) in own or (e, "*", name) in own
                               for e, g in zip(rows["engine"], rows["family"])])
        support[j] = np.where(mask)[0]
    for i, e in enumerate(eng):
        _, engine, gen, key = e[0].split(".")
        mask = (rows["engine"] == engine).to_numpy() & relevant(key)
        if gen == "*":  # the generations without a value of their own
            mask &= ~rows["family"].map(lambda g: (engine, g, key) in own).to_numpy()
        else:
            mask &= (rows["family"] == gen).to_numpy()
        support[n_shared + i] = np.where(mask)[0]
    # columns whose rows do not overlap are perturbed together, and only their rows are evaluated
    colour: list[tuple[set, list[int]]] = []
    for j in sorted(support, key=lambda j: -len(support[j])):
        s_j = set(support[j].tolist())
        for used, members in colour:
            if not used & s_j:
                used |= s_j
                members.append(j)
                break
        else:
            colour.append((set(s_j), [j]))
    groups = [(members, np.array(sorted(used), dtype=int)) for used, members in colour]

    def data_residuals(x, idx=None):
        params = to_params(names, x, base)
        if idx is None:
            idx = np.arange(len(cases))
        pred = np.array([predict(cases[i], cat, params).predicted for i in idx])
        return w[idx] * np.log(np.maximum(pred, 1e-9) / targets[idx])

    def penalty(x):
        return np.array([prior_weight * (x[j] - (x[s] if s is not None else d)) / scale for j, s, scale, d in pairs])

    cache: dict[str, np.ndarray] = {}

    def residuals(x):
        f = data_residuals(x)
        cache["x"], cache["f"] = x.copy(), f
        return np.concatenate([f, penalty(x)])

    def jac(x):
        f0 = cache["f"] if "x" in cache and np.array_equal(cache["x"], x) else data_residuals(x)
        m = len(f0)
        J = np.zeros((m + len(pairs), len(x)))
        for group, idx in groups:
            if not len(idx):
                continue
            xp = x.copy()
            steps = {}
            for j in group:
                h = 1e-3 * max(1.0, abs(x[j]))
                if x[j] + h > hi[j]:
                    h = -h
                xp[j] = x[j] + h
                steps[j] = h
            fp = np.zeros(m)
            fp[idx] = data_residuals(xp, idx)
            for j, h in steps.items():
                rows_j = support[j]
                J[rows_j, j] = (fp[rows_j] - f0[rows_j]) / h
        for k, (j, s, scale, _d) in enumerate(pairs):
            J[m + k, j] = prior_weight / scale
            if s is not None:
                J[m + k, s] = -prior_weight / scale
        return J

    res = least_squares(residuals, x0, jac=jac, bounds=(lo, hi), x_scale=(hi - lo) / 4,
                        xtol=1e-8, ftol=1e-9, max_nfev=max_nfev, loss=LOSS, f_scale=F_SCALE)
    dof = max(1, len(res.fun) - len(res.x))
    se = np.sqrt(np.diag(np.linalg.pinv(res.jac.T @ res.jac)) * (res.fun @ res.fun) / dof)
    if verbose:
        print(f"# least_squares: {res.message} ({res.nfev} evaluations, cost {res.cost:.4f})", flush=True)
    return names, res.x, se, to_params(names, res.x, base)


def fit_two_stage(cases, rows: pd.DataFrame, cat, verbose: bool = True, max_nfev: int = 300,
                  start: dict[str, float] | None = None, prior_weight: float = PRIOR_WEIGHT,
                  relevance: dict[str, set] | None = None):
    """The shared layer first, on every row as if every engine ran alike (what an engine with no tuning —
    and `generic` — runs at); then each engine's values with the shared ones fixed, pulled toward them."""
    n1, x1, se1, p1 = fit(cases, rows, cat, verbose, max_nfev, start, prior_weight, relevance, engines=False)
    n2, x2, se2, _ = fit(cases, rows, cat, verbose, max_nfev, start, prior_weight, relevance, shared=False,
                         base=p1)
    names, x = n1 + n2, np.concatenate([x1, x2])
    return names, x, np.concatenate([se1, se2]), to_params(names, x)


PRUNE_BELOW = 0.1
"""An engine value within this share of its prior scale of the value it would inherit is dropped: the
data do not tell that engine apart there."""


def settle(names: list[str], x: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The values as the catalog carries them: four significant digits, and engine values that differ
    from what they would inherit (engine-wide, else shared) by less than PRUNE_BELOW of their prior
    scale dropped (a generation's value first compared with its engine-wide one)."""
    x = np.array([float(f"{v:.4g}") for v in x])
    value = dict(zip(names, x))
    scale = {k: sc for k, _lo, _hi, sc, _n in ENGINE_FREE}
    keep = dict(value)
    for name in sorted((n for n in names if n.startswith("engines.")), key=lambda n: n.split(".")[2] == "*"):
        _, engine, gen, key = name.split(".")
        wide = f"engines.{engine}.*.{key}"
        inherit = keep.get(wide, value.get(key, getattr(EstimatorParams(), key))) if gen != "*" else \
            value.get(key, getattr(EstimatorParams(), key))
        if abs(value[name] - inherit) < PRUNE_BELOW * scale[key]:
            if gen == "*" and any(n.startswith(f"engines.{engine}.") and n.endswith(f".{key}") and n != name
                                  for n in keep):
                continue  # generations of their own inherit nothing from it, the others do: keep it
            del keep[name]
    out = [n for n in names if n in keep]
    return out, np.array([keep[n] for n in out])


def published_of_case(case) -> float:
    return case.published_per_replica if case.published_per_replica is not None else case.published


def cross_validate(cases, rows: pd.DataFrame, keep: np.ndarray, cat, by: str, start: dict[str, float],
                   max_nfev: int, prior_weight: float, relevance: dict[str, set] | None = None,
                   fitter=None) -> pd.DataFrame:
    fitter = fitter or fit
    held = []
    for group in sorted(rows[by].astype(str).unique()):
        train_mask = keep & (rows[by].astype(str) != group).to_numpy()
        test_idx = np.where((rows[by].astype(str) == group).to_numpy())[0]
        train = [c for c, k in zip(cases, train_mask) if k]
        t = time.perf_counter()
        names, x, _, _ = fitter(train, rows[train_mask], cat, verbose=False, max_nfev=max_nfev, start=start,
                                prior_weight=prior_weight, relevance=relevance)
        params = to_params(*settle(names, x))
        part = table([predict(cases[i], cat, params) for i in test_idx], cat)
        part["cv"] = f"{by}={group}"
        part["fitted"] = keep[test_idx]
        held.append(part)
        print(f"# held out {by}={group}: {len(test_idx)} rows ({time.perf_counter() - t:.0f} s)", flush=True)
    return pd.concat(held, ignore_index=True)


def legacy(df: pd.DataFrame) -> pd.DataFrame:
    """The benchmark throughput rows (offline, MLPerf Server) of benchmarks.csv and published.csv."""
    return df[df.throughput & ~df.online]


def print_tables(title: str, df: pd.DataFrame) -> None:
    """The tables every run prints: legacy throughput rows, latency rows, per engine, per family, online."""
    fitted = df[df.fitted]
    print(f"== {title}: benchmark throughput rows (benchmarks.csv, published.csv)")
    thr = legacy(fitted)
    print(summarize(thr.assign(all_="all"), "all_").to_string())
    print(summarize(thr, ["family", "precision"]).to_string())
    print(f"== {title}: latency rows")
    print(summarize(fitted[~fitted.throughput & ~fitted.online], ["suite", "kind"]).to_string())
    print(f"== {title}: every fitted row per engine and per family (tok/s and TPOT rows together)")
    print(summarize(fitted, "engine").to_string())
    print(summarize(fitted, "family").to_string())
    on = fitted[fitted.online]
    if len(on):
        print(f"== {title}: online rows at a fixed concurrency")
        print("   " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                for k, v in online_summary(on).items()))
        tok = on[on.kind == "online-conc"]
        print(summarize(tok, ["family", "precision"]).to_string())
        print(summarize(tok, ["engine", "family"]).to_string())
        print(summarize(on[on.kind == "online-conc-tpot"], ["engine", "family"]).to_string())


def held_out_ratio(sel: pd.DataFrame) -> dict[str, float]:
    """P10, P50 and P90 of what a held-out row really delivered per unit of estimated goodput
    (published ÷ predicted): the spread a plan built on estimates carries (policy.estimate_error)."""
    ratio = 1.0 / (1.0 + sel["error"].to_numpy())
    return {f"p{q}": float(np.percentile(ratio, q)) for q in (10, 50, 90)}


MIN_POINTS = 3


def validation_table(cv: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per group generation/dtype/engine/model-class: the published points behind it and the P10/P90 of
    the held-out goodput error (estimated ÷ published − 1, leave one model out), over the fitted
    throughput rows (offline, MLPerf Server, online tok/s per GPU); with the pooled groups '*' (every
    engine; every engine and class) a group with too few points of its own borrows from."""
    sel = cv[cv.fitted & cv.throughput]
    # rows of no known engine ran at the shared values: the group an estimate that names no engine reads
    sel = sel.assign(engine=sel["engine"].replace({"other": GENERIC}))
    out = {}
    pooled = [sel, sel.assign(engine="*"), sel.assign(engine="*", model_class="*")]  # engine, then class dropped
    for part_rows in pooled:
        for (gen, dtype, engine, cls), part in part_rows.groupby(["family", "precision", "engine", "model_class"]):
            e = part["error"].to_numpy()
            out[f"{gen}/{dtype}/{engine}/{cls}"] = {"points": int(len(e)),
                                                    "error_p10": round(float(np.percentile(e, 10)), 3),
                                                    "error_p90": round(float(np.percentile(e, 90)), 3)}
    return dict(sorted(out.items()))


def _g(v: float) -> str:
    return f"{v:.4g}"


def write_catalog(path: Path, names: list[str], x: np.ndarray, held: dict[str, float] | None,
                  validation: dict | None) -> None:
    """Rewrite the fitted numbers in catalogs/estimator.yaml in place (comments kept) and its engines,
    held_out and validation blocks."""
    text = path.read_text(encoding="utf-8")
    values = dict(zip(names, x))
    for name, v in values.items():
        if name.startswith("engines."):
            continue
        if "." in name:
            key, sub = name.split(".")
            text = re.sub(rf"(\n  {key}: \{{[^}}]*\b{sub}: )[\d.]+", rf"\g<1>{_g(v)}", text)
            text = re.sub(rf"(\n  {key}:\n(?:    .*\n)*?    {sub}: )[\d.]+", rf"\g<1>{_g(v)}", text)
        else:
            text = re.sub(rf"(\n  {name}: +)[\d.]+", rf"\g<1>{_g(v)}", text)
    engines: dict[str, dict[str, dict[str, float]]] = {}
    for name, v in values.items():
        if name.startswith("engines."):
            _, engine, gen, key = name.split(".")
            engines.setdefault(engine, {}).setdefault(gen, {})[key] = v
    lines = ["  engines:"]
    for engine in sorted(engines):
        lines.append(f"    {engine}:")
        for gen in sorted(engines[engine]):
            body = ", ".join(f"{k}: {_g(v)}" for k, v in engines[engine][gen].items())
            label = '"*"' if gen == "*" else gen
            lines.append(f"      {label}: {{{body}}}")
    block = "\n".join(lines) if engines else "  engines: {}"
    text = re.sub(r"\n  engines:(?: \{\})?\n(?:    .*\n)*", "\n" + block + "\n", text) if "\n  engines:" in text \
        else text.replace("\n  source:", "\n" + block + "\n  source:")
    if held:
        text = re.sub(r"(\n  held_out: )\{[^}]*\}", rf"\g<1>{{p10: {held['p10']:.3f}, p50: {held['p50']:.3f}, "
                      rf"p90: {held['p90']:.3f}}}", text)
    if validation is not None:
        vl = ["  validation:", f"    min_points: {MIN_POINTS}", "    groups:"]
        vl += [f"      {k}: {{points: {g['points']}, error_p10: {g['error_p10']}, error_p90: {g['error_p90']}}}"
               for k, g in validation.items()]
        vblock = "\n".join(vl)
        if "\n  validation:" in text:
            text = re.sub(r"\n  validation:\n(?:    .*\n)*", "\n" + vblock + "\n", text)
        else:
            text = text.replace("\n  source:", "\n" + vblock + "\n  source:")
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalogs", type=Path, default=None)
    ap.add_argument("--cv", choices=["model", "family", "engine", "all", "both"], default=None)
    ap.add_argument("--quick", action="store_true", help="fewer iterations (development)")
    ap.add_argument("--write", action="store_true", help="write the fit into catalogs/estimator.yaml")
    ap.add_argument("--prior-weight", type=float, default=PRIOR_WEIGHT)
    ap.add_argument("--joint", action="store_true",
                    help="fit the shared and the engine layer together (default: the shared layer first)")
    ap.add_argument("--save-cv", type=Path, default=None, help="folder to write the held-out rows to (CSV)")
    ap.add_argument("--nominal-concurrency", action="store_true",
                    help="judge online rows at their nominal concurrency, not at the mean concurrency their "
                         "harness measured (where recorded)")
    args = ap.parse_args(argv)
    estimator_accuracy.HELD_CONCURRENCY = not args.nominal_concurrency
    cat = load_catalog(args.catalogs or catalogs_dir())
    cases = comparable(all_cases(), cat)
    # Predict once (neutral efficiencies) to resolve MLPerf TP choices and the memory-starved flags.
    base = table([predict(c, cat, EstimatorParams(engines={})) for c in cases], cat)
    keep = in_fit(base).to_numpy()
    fitted = [c for c, k in zip(cases, keep) if k]
    nfev = 40 if args.quick else 300
    t = time.perf_counter()
    relevance = relevance_of(fitted, base[keep], cat)
    fitter = fit if args.joint else fit_two_stage
    names, x, se, params = fitter(fitted, base[keep], cat, max_nfev=nfev, prior_weight=args.prior_weight,
                                  relevance=relevance)
    print(f"# fitted on {len(fitted)} of {len(cases)} rows in {time.perf_counter() - t:.0f} s")
    print("# parameter: value ± standard error (from the Jacobian; bounds ignored)")
    for name, v, s in zip(names, x, se):
        print(f"{name}: {v:.4g}  ± {s:.2g}")
    start = dict(zip(names, x))
    names, x = settle(names, x)
    params = to_params(names, x)
    print(f"# as the catalog carries them: {sum(n.startswith('engines.') for n in names)} engine values "
          f"(of {sum(n.startswith('engines.') for n in start)} fitted; the rest inherit)")
    df = table([predict(c, cat, params) for c in cases], cat)
    df["fitted"] = keep
    print_tables("in-sample", df)
    print("== in-sample, rows left out of the fit by rule")
    print(summarize(df[~df.fitted].assign(why=left_out(df[~df.fitted])), ["why", "suite", "kind"]).to_string())
    cv_nfev = 15  # each fold starts from the full fit: a few steps settle it
    by_list = {"model": ["model"], "family": ["family"], "engine": ["engine"], "both": ["model", "family"],
               "all": ["model", "family", "engine"]}.get(args.cv or "", [])
    held = validation = None
    for by in by_list:
        cv = cross_validate(cases, base, keep, cat, by, start, cv_nfev, args.prior_weight, relevance, fitter)
        print_tables(f"held out (leave one {by} out)", cv)
        q = held_out_ratio(legacy(cv[cv.fitted]))
        print(f"# held-out goodput ratio, published ÷ estimated (benchmark throughput rows): "
              + ", ".join(f"{k} {v:.3f}" for k, v in q.items()))
        if by == "model":
            held, validation = q, validation_table(cv)
            print("# validation groups (leave one model out): " + str(len(validation)))
            for k, g in validation.items():
                print(f"  {k}: {g}")
        if args.save_cv:
            cv.to_csv(args.save_cv / f"cv_{by}.csv", index=False)
    if args.write:
        write_catalog((args.catalogs or catalogs_dir()) / "estimator.yaml", names, x, held, validation)
        print("# wrote catalogs/estimator.yaml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
