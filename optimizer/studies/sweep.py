"""Sensitivity sweeps: one plan solved at many points, each a few inputs moved away from the plan's own.

    from optimizer.studies.sweep import parse_vary, run_sweep
    varies = [parse_vary("demand=0.8:1.2:5"), parse_vary("price.on-demand=0.8:1.2:5")]
    sweep = run_sweep("plans/q4.yaml", varies, outdir=Path("out/sweep"), workers=4)
    sweep.points  # SweepPoint(vary, status, cost_total, reserved_gpus, …) each, in point order
    sweep.points[0].cost_all_in  # new spend + committed spend: what the horizon costs there

What a key moves (a multiplier unless said otherwise; every point starts from the plan as loaded, in
memory — the files are never edited):
    demand              every workload's demand: interactive peaks (stated, by month, or from business
                        numbers: the users), batch tokens per day; reserve_gpus counts stay
    demand.<workload>   one workload's demand, the same way (multiplies with `demand`)
    price.<tier>        every offer's price per GPU-hour on that tier (on-demand, spot, reserved-1y, reserved-3y);
                        contracts signed before keep their price
    price.api           every workload's API price (`api:` input and output tokens): what overflow and batch
                        work sent to the API cost
    goodput             every estimated goodput (catalog.estimator.goodput_factor); a measured goodput
                        stays as measured
    occupancy           policy.occupancy, the value itself
    growth              monthly_growth, the value itself, of every workload sized from business numbers

Points: one at a time around the plan (each key over its values, the others at the plan's: what a tornado
chart needs; the plan itself once), or the full grid. One solve per point, on a local process pool or Ray
tasks — except along a price: a price moves the cost of every plan linearly, so the least cost is concave
in it, and a point between two solved ones is proven from them when their bounds' chord is within the gap
of the cheaper of their plans there (results.sweep.prove_between); the points solved on such a line are its
ends, then where the plans of two solved neighbours cross. Each point is appended to OUTDIR/sweep.jsonl as
it finishes; a rerun with the same plan and keys reads those back and solves only the missing points.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ValidationError

from optimizer import parallel
from optimizer.atomic import unwritable
from optimizer.candidates.build import build_candidates, sized_alone
from optimizer.errors import (
    InfeasiblePlan,
    PlanError,
    Problem,
    SolverError,
    did_you_mean,
)
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.inputs.schema.plan import (
    MAX_GOODPUT_MULTIPLIER,
    MAX_PRICE_MULTIPLIER,
    Demand,
    Plan,
    Workload,
)
from optimizer.optimize.strategy import settings
from optimizer.pipeline import SolveOptions, as_solved, solve_plan
from optimizer.results.sweep import (
    JSONL,
    SweepPoint,
    Vary,
    append_point,
    commitment_rows,
    cost_at,
    drop_cut_line,
    prove_between,
    read_sweep,
    reserved_gpus,
    reusable,
    spend_rows,
    tier_spend,
    vary_key,
)
from optimizer.vocab import RENTED_TIERS

__all__ = ["KEYS", "VarySpec", "Sweep", "parse_vary", "check_varies", "sweep_points", "base_point",
           "apply_point", "plan_hash", "run_sweep", "ENGINES", "PriceLine", "price_lines"]

KEYS = ("demand", "goodput", "occupancy", "growth") + tuple(f"price.{t}" for t in RENTED_TIERS + ("api",))
"""Every key but `demand.<workload>` (one per workload of the plan)."""
MULTIPLIERS = ("demand", "goodput", "price")
"""Keys (and key families) whose values multiply the plan's."""
MOST = {"price": MAX_PRICE_MULTIPLIER, "goodput": MAX_GOODPUT_MULTIPLIER}
"""The largest price and goodput multipliers, a scenario's; demand's limits are the peak and volume a plan may
state (_demand_limits)."""
MAX_VALUES = 1000
MAX_POINTS = 10_000
ENGINES = ("process", "ray")
ENGINE_OF: dict[str, parallel.Engine] = {"process": "processes", "ray": "ray"}
"""--engine's words → optimizer.parallel's engines."""
VARY_FORM = "KEY=LO:HI:N, e.g. --vary demand=0.8:1.2:5"


@dataclass(frozen=True)
class VarySpec:
    """One --vary: KEY over N evenly spaced values from LO to HI (N = 1: LO alone)."""

    key: str
    lo: float
    hi: float
    n: int

    @property
    def values(self) -> list[float]:
        if self.n == 1:
            return [self.lo]
        # rounded to 12 significant digits: 0.8 + 0.1·k reads back as 0.9, not 0.9000000000000001
        return [float(f"{self.lo + (self.hi - self.lo) * i / (self.n - 1):.12g}") for i in range(self.n)]


def _bad(message: str, fix: str) -> PlanError:
    return PlanError(Problem(message, fix))


def parse_vary(text: str) -> VarySpec:
    """`KEY=LO:HI:N` → VarySpec; PlanError (exit 2) saying what is wrong. The key is checked against a
    plan by check_varies."""
    key, eq, rng = text.partition("=")
    key = key.strip()
    if not eq or not key:
        raise _bad(f"--vary {text!r} has no KEY=", f"write {VARY_FORM}")
    parts = rng.split(":")
    if len(parts) != 3:
        raise _bad(f"--vary {text!r}: the range '{rng}' is not LO:HI:N", f"write {VARY_FORM}")
    nums = []
    for name, raw in zip(("LO", "HI"), parts[:2]):
        try:
            v = float(raw)
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            raise _bad(f"--vary {text!r}: {name} '{raw.strip()}' is not a number", f"write {VARY_FORM}")
        nums.append(v)
    lo, hi = nums
    try:
        n = int(parts[2])
    except ValueError:
        raise _bad(f"--vary {text!r}: N '{parts[2].strip()}' is not a whole number",
                   f"N is how many values from LO to HI, 1 to {MAX_VALUES}: {VARY_FORM}") from None
    if not 1 <= n <= MAX_VALUES:
        raise _bad(f"--vary {text!r}: N is {n}", f"give 1 to {MAX_VALUES} values")
    if lo > hi:
        raise _bad(f"--vary {text!r}: LO {lo:g} is above HI {hi:g}", f"swap them: {key}={hi:g}:{lo:g}:{n}")
    if n == 1 and lo != hi:
        raise _bad(f"--vary {text!r}: one value (N = 1) cannot run from {lo:g} to {hi:g}",
                   f"give one value as {key}={lo:g}:{lo:g}:1, or more values: {key}={lo:g}:{hi:g}:3")
    return VarySpec(key, lo, hi, n)


def parse_varies(texts: list[str]) -> list[VarySpec]:
    """Every `--vary` parsed; PlanError (exit 2) naming each one that is wrong (check_varies then checks the
    keys against the plan)."""
    specs: list[VarySpec] = []
    problems: list[Problem] = []
    for text in texts:
        try:
            specs.append(parse_vary(text))
        except PlanError as exc:
            problems.extend(exc.problems)
    if problems:
        raise PlanError(problems)
    return specs


def _business(w: Workload) -> bool:
    return w.demand is not None and w.demand.users is not None


def check_varies(loaded: LoadedPlan, varies: list[VarySpec]) -> None:
    """PlanError (exit 2) listing every --vary that names no key of this plan or leaves its range."""
    plan = loaded.plan
    workloads = {w.name: w for w in plan.workloads}
    known = list(KEYS) + [f"demand.{w}" for w in workloads]
    problems: list[Problem] = []
    seen: set[str] = set()
    for v in varies:
        head, _dot, tail = v.key.partition(".")
        where = f"--vary {v.key}"
        if v.key in seen:
            problems.append(Problem(f"{where} is given twice", "give each key once"))
            continue
        seen.add(v.key)
        if head == "demand" and tail:
            if tail not in workloads:
                guess = did_you_mean(tail, list(workloads))
                problems.append(Problem(f"{where}: the plan has no workload '{tail}'",
                                        f"did you mean 'demand.{guess}'?" if guess else
                                        f"its workloads: {', '.join(workloads)}"))
                continue
            if workloads[tail].demand is None and workloads[tail].batch is None:
                problems.append(Problem(f"{where}: workload '{tail}' reserves a fixed count of GPUs; it has no "
                                        "demand to vary", "vary another workload, or `demand`"))
                continue
        elif v.key not in KEYS:
            guess = did_you_mean(v.key, known)
            problems.append(Problem(f"{where}: unknown key '{v.key}'",
                                    f"did you mean '{guess}'?" if guess else
                                    f"keys: {', '.join(KEYS)}, demand.<workload>"))
            continue
        if v.key == "price.api" and not any(w.api is not None for w in plan.workloads):
            problems.append(Problem(f"{where}: no workload of {loaded.file} sends tokens to an API, so its price "
                                    "changes nothing",
                                    "give a workload `api:` (its prices and max_share), or vary another key"))
            continue
        tier = tail if head == "price" else ""
        if tier in RENTED_TIERS and tier not in plan.policy.tiers:
            problems.append(Problem(f"{where}: {loaded.file} buys no {tier} (policy.tiers: "
                                    f"{', '.join(plan.policy.tiers)}), so its price changes nothing",
                                    f"vary the price of a tier it buys, or add {tier} to policy.tiers"))
            continue
        if head in MULTIPLIERS and (v.lo < 0 if _zero_stands(v.key) else v.lo <= 0):
            least = "0 (none) or above" if _zero_stands(v.key) else "above 0"
            problems.append(Problem(f"{where}: {v.lo:g} is not a multiplier (it multiplies the plan's "
                                    f"{_what(v.key)})", f"give multipliers {least}, e.g. 0.8:1.2 for ±20%"))
        elif head in MOST and v.hi > MOST[head]:  # as a scenario's multipliers: × 1e12 is a unit slip
            problems.append(Problem(f"{where}: × {v.hi:g} is beyond the × {MOST[head]:g} a scenario may state "
                                    f"(it multiplies the plan's {_what(v.key)})",
                                    f"give multipliers up to {MOST[head]:g}, e.g. 0.8:1.2 for ±20%"))
        elif v.key == "occupancy":
            problems += [Problem(f"{where}: policy.{said}", "give the share of goodput used at the peak, e.g. "
                                 "occupancy=0.5:0.8:4")
                         for x in sorted({v.lo, v.hi}) for said, _e in _schema_says(plan.policy, {"occupancy": x})]
        elif v.key == "growth":
            business = [w for w in plan.workloads if _business(w)]
            if not business:
                problems.append(Problem(f"{where}: no workload of {loaded.file} is sized from business numbers, "
                                        "so no monthly_growth applies",
                                        "vary `demand` instead, or give a workload users, active_share, … "
                                        "and monthly_growth"))
            problems += [Problem(f"{where}: {business[0].name}.demand.{said}",
                                 "give monthly growth as a share (0.05, not 5), e.g. growth=0:0.1:5")
                         for x in (sorted({v.lo, v.hi}) if business else ())
                         for said, _e in _schema_says(business[0].demand, {"monthly_growth": x})]
    problems += _demand_limits(plan, varies)
    if problems:
        raise PlanError(list(dict.fromkeys(problems)))


def _zero_stands(key: str) -> bool:
    """Keys whose multiplier may be 0: no demand (all of it, or one workload's), an API that costs nothing."""
    return key == "demand" or key.startswith("demand.") or key == "price.api"


def _schema_says(model: BaseModel | type[BaseModel], changes: dict[str, Any]) -> list[tuple[str, dict]]:
    """What the plan's schema says of a point's values, as (`key value is out of range: …`, pydantic's error): the
    model that holds them validated again with them (the points are made by model_copy, which skips validation),
    so the limits are stated in the schema alone. A class is validated with `changes` alone: what a plan could
    state instead."""
    data = changes if isinstance(model, type) else {**model.model_dump(exclude_unset=True), **changes}
    try:
        (model if isinstance(model, type) else type(model)).model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        return [(f"{'.'.join(map(str, e['loc']))} {e['input']:,.4g} is out of range: {e['msg'][:1].lower()}"
                 f"{e['msg'][1:]}" if isinstance(e["input"], (int, float)) else f"{e['msg']}", e) for e in errors]
    return []


def _demand_limits(plan: Plan, varies: list[VarySpec]) -> list[Problem]:
    """Demand multipliers that would take a workload past what a plan may state (its peak, its batch volume),
    above or below, in the schema's words: the point would solve a plan no file could hold (a peak of 1e-297
    tokens/s had solved to $0). A multiplier of 0 is no demand, and stands."""
    demand = [v for v in varies if v.key == "demand" or v.key.startswith("demand.")]
    top = {v.key: v.hi for v in demand}
    low = {v.key: min(x for x in v.values if x > 0) for v in demand if any(x > 0 for x in v.values)}
    out = []
    for w in plan.workloads:
        for ends, high in ((top, True), (low, False)):
            m = ends.get("demand", 1.0) * ends.get(f"demand.{w.name}", 1.0)
            if (m <= 1) if high else (m >= 1):
                continue
            key = f"demand.{w.name}" if f"demand.{w.name}" in ends else "demand"
            if w.demand is not None and w.demand.peak_output_tokens_per_s is not None:
                d = w.demand  # stated or derived from business numbers: the peak a plan could state instead
                months = {k: v * m for k, v in d.peak_by_month.items()} if d.peak_by_month else None
                said = _schema_says(Demand, {"peak_output_tokens_per_s": d.peak_output_tokens_per_s * m,
                                             "peak_by_month": months})
                out += _multiplier_problems(key, m, w.name, "demand", said)
            if w.batch is not None:
                said = _schema_says(w.batch, {"output_tokens_per_day": w.batch.output_tokens_per_day * m})
                out += _multiplier_problems(key, m, w.name, "batch", said)
    return out


def _multiplier_problems(key: str, m: float, workload: str, where: str,
                         said: list[tuple[str, dict]]) -> list[Problem]:
    """The schema's word on a multiplied amount (a peak, a month's peak, a batch volume), with the multiplier that
    reaches its limit."""
    out = []
    for text, e in said:
        limit = next(iter((e.get("ctx") or {}).values()), None)
        high = e["type"] in ("less_than", "less_than_equal")
        amount = e["input"] / m if isinstance(e["input"], (int, float)) else None  # the plan's own, before × m
        fix = "keep the multipliers in range" if not isinstance(limit, (int, float)) or not amount else (
            f"give a highest multiplier of at most {limit / amount:,.4g}" if high else
            f"give a lowest multiplier of at least {limit / amount:,.4g} (or 0: none)")
        out.append(Problem(f"--vary {key}: × {m:g} gives {workload} {where}.{text}", fix))
    return out


def _what(key: str) -> str:
    return {"demand": "demand", "goodput": "estimated goodput"}.get(key.partition(".")[0], "prices")


# --- points ----------------------------------------------------------------------------------------


def base_point(loaded: LoadedPlan, varies: list[VarySpec]) -> Vary:
    """The plan's own value of every swept key (multipliers: 1; growth: None where its workloads differ)."""
    out: Vary = {}
    for v in varies:
        if v.key == "occupancy":
            out[v.key] = float(loaded.plan.policy.occupancy)
        elif v.key == "growth":
            rates = {float(w.demand.monthly_growth or 0.0) for w in loaded.plan.workloads if _business(w)}  # type: ignore[union-attr]
            out[v.key] = rates.pop() if len(rates) == 1 else None
        else:
            out[v.key] = 1.0
    return out


def sweep_points(base: Vary, varies: list[VarySpec], grid: bool = False) -> list[Vary]:
    """The points to solve, in order, each once: the plan itself then each key's values with the others at
    the plan's (one at a time), or every combination (`grid`)."""
    if grid:
        size = math.prod(len(v.values) for v in varies)
        if size > MAX_POINTS:  # counted before the combinations are made: 1,000³ of them fill the memory
            raise _bad(f"the sweep has {size:,} points, more than {MAX_POINTS:,}",
                       "fewer values per key, or one at a time (drop --grid)")
        points = [dict(zip(base, combo)) for combo in itertools.product(*(v.values for v in varies))]
    else:
        points = [dict(base)] + [{**base, v.key: x} for v in varies for x in v.values]
    seen: set[str] = set()
    out = []
    for p in points:
        k = vary_key(p)
        if k not in seen:
            seen.add(k)
            out.append(p)
    if len(out) > MAX_POINTS:
        raise _bad(f"the sweep has {len(out):,} points, more than {MAX_POINTS:,}",
                   "fewer values per key, or one at a time (drop --grid)")
    return out


def apply_point(loaded: LoadedPlan, vary: Mapping[str, float | None]) -> LoadedPlan:
    """The plan with one point's values: new (frozen) objects, the loaded plan and its files untouched."""
    plan, catalog = loaded.plan, loaded.catalog
    demand = vary.get("demand")
    growth = vary.get("growth")
    api = _factor(vary.get("price.api"))
    # a workload whose demand is × 0 has none at this point: it is left out of the plan solved there (one that
    # only reserves a fixed count of GPUs has no demand to scale, and stays)
    factors = {w.name: _factor(demand) * _factor(vary.get(f"demand.{w.name}")) for w in plan.workloads}
    workloads = [_workload(w, factors[w.name], growth, plan.horizon_days, api) for w in plan.workloads
                 if factors[w.name] != 0 or (w.demand is None and w.batch is None)]
    if not workloads:
        raise PlanError(Problem("no workload has demand at this point (every demand multiplier is 0)",
                                "give a demand multiplier above 0 to at least one workload"))
    update: dict[str, Any] = {}
    if len(workloads) != len(plan.workloads) or any(a is not b for a, b in zip(workloads, plan.workloads)):
        update["workloads"] = workloads
    if vary.get("occupancy") is not None:
        update["policy"] = plan.policy.model_copy(update={"occupancy": float(vary["occupancy"])})  # type: ignore[arg-type]
    cat: dict[str, Any] = {}
    prices = {k.partition(".")[2]: float(m) for k, m in vary.items()
              if k.startswith("price.") and k != "price.api" and m is not None and m != 1}
    if prices:
        cat["offers"] = {oid: _priced(o, prices) for oid, o in catalog.offers.items()}
    if vary.get("goodput") is not None and vary["goodput"] != 1:
        cat["estimator"] = catalog.estimator.model_copy(update={"goodput_factor": float(vary["goodput"])})  # type: ignore[arg-type]
    out = loaded
    if update:
        out = dataclasses.replace(out, plan=plan.model_copy(update=update))
    if cat:
        out = dataclasses.replace(out, catalog=dataclasses.replace(catalog, **cat))
    return out


def _factor(m: float | None) -> float:
    """A multiplier as given; None (not swept) is the plan's own, × 1. A multiplier of 0 stands: no demand,
    or an API that costs nothing."""
    return 1.0 if m is None else float(m)


def _workload(w: Workload, m: float, growth: float | None, horizon_days: int, api: float = 1.0) -> Workload:
    update: dict[str, Any] = {}
    if w.api is not None and api != 1:
        update["api"] = w.api.model_copy(update={"usd_per_m_input": w.api.usd_per_m_input * api,
                                                 "usd_per_m_output": w.api.usd_per_m_output * api})
    d = w.demand
    if d is not None and (m != 1 or (growth is not None and _business(w))):
        months = None if d.peak_by_month is None else {k: v * m for k, v in d.peak_by_month.items()}
        if _business(w):
            assert d.users is not None and w.tokens is not None
            nd = d.model_copy(update={"users": d.users * m, "peak_by_month": months,
                                      "monthly_growth": d.monthly_growth if growth is None else growth})
            nd.fill_derived_peak(w.tokens.output, horizon_days)  # the peak from the numbers, as loading the plan does
        else:
            assert d.peak_output_tokens_per_s is not None
            nd = d.model_copy(update={"peak_output_tokens_per_s": d.peak_output_tokens_per_s * m,
                                      "peak_by_month": months})
        update["demand"] = nd
    if w.batch is not None and m != 1:
        update["batch"] = w.batch.model_copy(update={"output_tokens_per_day": w.batch.output_tokens_per_day * m})
    return w.model_copy(update=update) if update else w


def _priced(offer, factors: dict[str, float]):
    table = offer.price_per_gpu_hour
    if not any(t in table for t in factors):
        return offer
    new = {t: (p if t not in factors else
               p.model_copy(update={"price": p.price * factors[t]}) if hasattr(p, "price") else float(p) * factors[t])
           for t, p in table.items()}
    return offer.model_copy(update={"price_per_gpu_hour": new})


def plan_hash(loaded: LoadedPlan) -> str:
    """The plan and every catalog entry it could use, hashed: a point in sweep.jsonl is read back only for
    the same plan (an edited plan or catalog solves again)."""
    c = loaded.catalog
    data: dict[str, Any] = {"plan": loaded.plan.model_dump(mode="json"), "estimator": c.estimator.model_dump(mode="json")}
    for section in ("accelerators", "models", "precisions", "offers", "systems"):
        data[section] = {k: v.model_dump(mode="json") for k, v in sorted(getattr(c, section).items())}
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# --- solving ---------------------------------------------------------------------------------------


def solve_point(loaded: LoadedPlan, vary: Vary, options: SolveOptions, phash: str) -> SweepPoint:
    """One point solved (in a worker process or a Ray task). A point with no plan is a point too:
    infeasible, error (solver), invalid (the varied plan is refused)."""
    t0 = time.perf_counter()
    try:
        with sized_alone():  # the points are the parallelism
            result = solve_plan(apply_point(loaded, vary), options, side_process=False)
    except InfeasiblePlan as exc:
        return SweepPoint(vary, "infeasible", None, None, phash, time.perf_counter() - t0,
                          exc.reasons[0] if exc.reasons else "")
    except SolverError as exc:
        return SweepPoint(vary, "error", None, None, phash, time.perf_counter() - t0, str(exc))
    except PlanError as exc:
        return SweepPoint(vary, "invalid", None, None, phash, time.perf_counter() - t0, str(exc.problems[0]))
    return SweepPoint(vary, result.status, result.cost_total, reserved_gpus(result), phash, time.perf_counter() - t0,
                      gap=result.solver.gap, spend=tier_spend(result), solver=result.solver.name,
                      time_limit_s=float(settings(loaded, options)[1]), cost_committed=result.cost_committed,
                      new_commitments=commitment_rows(result), new_spend_commitments=spend_rows(result))


def _solve_at(loaded: LoadedPlan, options: SolveOptions, phash: str, vary: Vary) -> SweepPoint:
    """solve_point with what every point shares first (optimizer.parallel.workers' order)."""
    return solve_point(loaded, vary, options, phash)


@dataclass(frozen=True)
class Sweep:
    plan: str
    """The plan's name."""
    file: str
    currency: str
    keys: list[str]
    base: Vary
    grid: bool
    points: list[SweepPoint]
    """Every point, in point order (the plan itself first when one at a time)."""
    read_back: int
    """Points read back from sweep.jsonl rather than solved in this run."""
    other_lines: int
    """Lines of sweep.jsonl for another plan (or other keys): kept, not used."""
    jsonl: Path
    engine: str
    seconds: float
    cut_line: int | None = None
    """The line of sweep.jsonl cut off mid-write (a run stopped while writing it), dropped from the file before
    any point was appended: the point it held is solved again. None when there was none."""


OnPoint = Callable[[int, int, SweepPoint], None]
"""Hears each point as it finishes (solved, or proven from solved neighbours): (points done, points to do,
the point)."""


def run_sweep(plan: LoadedPlan | Path | str, varies: list[VarySpec], outdir: Path | str, *, grid: bool = False,
              engine: str = "process", workers: int | None = None, address: str | None = None,
              options: SolveOptions = SolveOptions(alternatives=0), extra_catalogs: list[Path | str] = (),
              every_point: bool = False,
              on_start: Callable[[int, int], None] | None = None, on_point: OnPoint | None = None) -> Sweep:
    """Solve every point not already in OUTDIR/sweep.jsonl, appending each as it finishes.

    Along a price (price.<tier> over three or more values, the other keys held) the ends are solved and a
    point between two solved ones is proven from them when it can be (results.sweep.prove_between: the least
    cost is concave in a price) rather than solved; the points solved are chosen where the plans of the two
    sides cross. `every_point` solves each point instead. Only for the expected cost: under policy.risk
    cvar or worst every point is solved.

    PlanError (exit 2, nothing written) for a key or range the plan does not allow, an unreadable
    sweep.jsonl, or Ray missing or unreachable. `on_start(to_do, read_back)` is called once the points
    are known, `on_point` as each finishes."""
    t0 = time.perf_counter()
    if engine not in ENGINES:
        raise _bad(f"unknown engine '{engine}'", f"use one of {', '.join(ENGINES)}")
    if address is not None and engine != "ray":
        raise _bad("--address names a Ray cluster", "add --engine ray, or drop --address")
    if workers is not None and workers < 1:
        raise _bad(f"--workers is {workers}", "give at least 1 worker")
    blocked = unwritable(Path(outdir), folder=True)
    if blocked:
        raise _bad(f"cannot write the sweep's points: {blocked}", "choose a writable --outdir")
    loaded = plan if isinstance(plan, LoadedPlan) else load_plan(plan, list(extra_catalogs))
    if not varies:
        raise _bad("nothing to vary", f"add at least one {VARY_FORM}")
    check_varies(loaded, varies)
    base = base_point(loaded, varies)
    wanted = sweep_points(base, varies, grid)
    phash = plan_hash(loaded)
    jsonl = Path(outdir) / JSONL
    found: dict[str, SweepPoint] = {}
    other = 0
    solver, limit, gap = settings(loaded, options)
    read = read_sweep(jsonl)
    for p in read.points:
        if p.plan_hash == phash and set(p.vary) == set(base):
            found[vary_key(p.vary)] = p
        else:
            other += 1
    found = {k: p for k, p in found.items()  # the last line of each point, if it stands for this run
             if reusable(p, every_point=every_point, solver=solver, time_limit_s=limit, gap=gap,
                         spend=bool(loaded.plan.savings_plans))}
    todo = [p for p in wanted if vary_key(p) not in found]
    read_back = len(wanted) - len(todo)
    if todo:  # the plan as written refused (no config serves a workload, …) or Ray missing: stop
        build_candidates(as_solved(loaded))  # before any point is solved
        if engine == "ray":
            parallel.ray_module()
    if read.cut_line is not None:  # the checks passed: appending follows, after whole lines only
        try:
            drop_cut_line(jsonl)
        except OSError as exc:
            raise PlanError(Problem(f"cannot drop the cut-off last line (line {read.cut_line}): "
                                    f"{exc.strerror or exc}", "make the file and its folder writable, or delete "
                                    "that line by hand", file=str(jsonl))) from None
    if on_start:
        on_start(len(todo), read_back)
    if todo:
        lines = [] if every_point or not _linear_in_prices(loaded) else price_lines(
            wanted, [v for v in varies if _linear_along(loaded, v.key)], grid)
        schedule = _Schedule(wanted, found, lines, gap, phash)
        count = 0

        def finished(point: SweepPoint) -> None:
            nonlocal count
            append_point(jsonl, point)
            schedule.done(point)
            count += 1
            if on_point:
                on_point(count, len(todo), point)

        with parallel.workers(_solve_at, (loaded, options, phash), engine=ENGINE_OF[engine], count=workers,
                              tasks=len(todo), address=address) as run:
            while True:
                for point in schedule.proven():
                    finished(point)
                for vary in schedule.next_to_solve(run.slots - len(schedule.running)):
                    schedule.start(vary)
                    run.submit(vary)
                if not schedule.running:
                    break
                finished(run.next()[1])
    points = [found[vary_key(p)] for p in wanted]
    return Sweep(loaded.plan.plan, loaded.file, loaded.plan.currency, [v.key for v in varies], base, grid, points,
                 read_back, other, jsonl, engine, time.perf_counter() - t0, read.cut_line)


def _linear_in_prices(loaded: LoadedPlan) -> bool:
    """The plan's objective moves linearly with the prices: the expected cost (a risk measure does not)."""
    return loaded.plan.policy.risk.measure == "expected"


def _linear_along(loaded: LoadedPlan, key: str) -> bool:
    """Whether every plan's cost moves linearly along the key: not the on-demand price under a spend commitment,
    whose covered use is capped by the list spend (c ≤ (1 − δ) · S), so a plan's cost is convex in that price and
    the least cost need not be concave."""
    plan = loaded.plan
    return not (key == "price.on-demand" and (plan.savings_plans or plan.spend_commitments))


@dataclass(frozen=True)
class PriceLine:
    """Points that differ only in one price.<tier> value, in its order (three or more)."""

    key: str
    points: list[Vary]


def price_lines(wanted: list[Vary], varies: list[VarySpec], grid: bool = False) -> list[PriceLine]:
    """Every line of three or more points along one price key, the other keys held: one at a time, each
    price key's values through the plan's point; a grid, its rows along the price key with the most values
    (the first of those), so that a point lies on one line at most but the plan's own point."""
    keys = [v for v in varies if v.key.startswith("price.")]
    if grid and keys:
        keys = [max(keys, key=lambda v: v.n)]  # max keeps the first of equals
    out = []
    for v in keys:
        groups: dict[str, list[Vary]] = {}
        for p in wanted:
            rest = {k: x for k, x in p.items() if k != v.key}
            groups.setdefault(vary_key(rest), []).append(p)
        for _rest, ps in sorted(groups.items()):
            if len(ps) >= 3 and all(p[v.key] is not None for p in ps):
                out.append(PriceLine(v.key, sorted(ps, key=lambda p: p[v.key])))  # type: ignore[arg-type,return-value]
    return out


class _Schedule:
    """Which points to solve next, and which are proven by those solved (see run_sweep)."""

    def __init__(self, wanted: list[Vary], found: dict[str, SweepPoint], lines: list[PriceLine], gap: float,
                 phash: str) -> None:
        self.wanted, self.found, self.lines, self.gap, self.phash = wanted, found, lines, gap, phash
        self.running: set[str] = set()
        lines_of: dict[str, int] = {}
        for line in lines:
            for p in line.points:
                lines_of[vary_key(p)] = lines_of.get(vary_key(p), 0) + 1
        on_line = set(lines_of)
        ends = {vary_key(p): p for line in lines for p in (line.points[0], line.points[-1])}
        ends.update({vary_key(p): p for line in lines for p in line.points if lines_of[vary_key(p)] > 1})
        self.ends = list(ends.values())
        self.end_keys = set(ends)
        """The ends of every line, and the plan's own point where several lines cross: solved first (they
        unlock the proofs between them). Every other point lies on one line and is proven from its two
        solved neighbours there or solved, as those neighbours' results decide: which points are solved
        does not depend on which solve finishes first, so the same plan gives the same sweep."""
        self.rest = [p for p in wanted if vary_key(p) not in on_line]
        """The points on no line: solved when no line point is ready."""

    def done(self, point: SweepPoint) -> None:
        k = vary_key(point.vary)
        self.running.discard(k)
        self.found[k] = point

    def start(self, vary: Vary) -> None:
        self.running.add(vary_key(vary))

    def _open(self, vary: Vary) -> bool:
        k = vary_key(vary)
        return k not in self.found and k not in self.running

    def _anchors(self, line: PriceLine) -> list[int]:
        """Indices of the line's points that are solved (with a plan or not), being solved, or to be solved
        first (self.ends: never proven, whatever finishes first)."""
        out = []
        for i, p in enumerate(line.points):
            k = vary_key(p)
            q = self.found.get(k)
            if k in self.running or k in self.end_keys or (q is not None and not q.interpolated):
                out.append(i)
        return out

    def proven(self) -> list[SweepPoint]:
        """Points between two solved ones that those prove, now."""
        out = []
        for line in self.lines:
            anchors = self._anchors(line)
            for a, b in zip(anchors, anchors[1:]):
                lo, hi = (self.found.get(vary_key(line.points[i])) for i in (a, b))
                if lo is None or hi is None:  # an end still solving
                    continue
                for p in line.points[a + 1:b]:
                    if not self._open(p):
                        continue
                    q = prove_between(lo, hi, p, line.key, self.gap, self.phash)
                    if q is not None:
                        self.found[vary_key(p)] = q
                        out.append(q)
        return out

    def next_to_solve(self, slots: int) -> list[Vary]:
        """Up to `slots` points to solve now: the lines' ends, then a point inside each interval whose ends are
        solved but whose points are not all proven, then the points on no line."""
        if slots <= 0:
            return []
        picks: list[Vary] = []
        for p in self.ends:
            if len(picks) >= slots:
                return picks
            if self._open(p):
                picks.append(p)
        for line in self.lines:
            anchors = self._anchors(line)
            for a, b in zip(anchors, anchors[1:]):
                inner = [p for p in line.points[a + 1:b] if self._open(p)]
                ends = [self.found.get(vary_key(line.points[i])) for i in (a, b)]
                if not inner or ends[0] is None or ends[1] is None:
                    continue
                p = _where_plans_cross(line.key, ends[0], ends[1], inner)
                if all(vary_key(p) != vary_key(q) for q in picks):
                    picks.append(p)
                if len(picks) >= slots:
                    return picks
        for p in self.rest:
            if len(picks) >= slots:
                break
            if self._open(p):
                picks.append(p)
        if not picks and not self.running:  # nothing left to wait for: whatever is still open is solved
            picks = [p for p in self.wanted if self._open(p)][:slots]
        return picks


def _where_plans_cross(key: str, lo: SweepPoint, hi: SweepPoint, inner: list[Vary]) -> Vary:
    """The point of `inner` nearest where the plans solved at lo and hi cost the same (the least cost's kink
    between them: solving there proves both sides when no third plan is cheaper), else the middle one."""
    t1, t2 = lo.vary[key], hi.vary[key]
    a1, a2 = cost_at(lo, {**lo.vary, key: t2}), cost_at(hi, {**hi.vary, key: t1})
    if None not in (t1, t2, a1, a2, lo.cost_total, hi.cost_total) and t1 < t2:  # type: ignore[operator]
        # plan lo: c1 + s1·(t − t1); plan hi: c2 + s2·(t − t2), slopes from each plan's cost at the other end
        s1 = (a1 - lo.cost_total) / (t2 - t1)  # type: ignore[operator]
        s2 = (hi.cost_total - a2) / (t2 - t1)  # type: ignore[operator]
        if abs(s1 - s2) > 1e-12:
            t = (hi.cost_total - s2 * t2 - lo.cost_total + s1 * t1) / (s1 - s2)  # type: ignore[operator]
            return min(inner, key=lambda p: abs(p[key] - t))  # type: ignore[operator]
    return inner[len(inner) // 2]
