"""Savings against hand-made plans: planopt's optimum against three plans a planner makes by hand.

    python benchmarks/savings.py                      # plans/q4.yaml + generated plans of 10, 30, 100 workloads
    python benchmarks/savings.py --sizes 10 --seeds 0 --no-q4

Baselines, each with planopt's own sizing (goodput, occupancy, spares, rollout, whole nodes):
  (a) the seed's rule — each workload alone on its cheapest config, its peak GPUs held 24 h a
      day, on demand, rounded up to whole nodes of that offer;
  (b) the best single accelerator type — every workload restricted to one accelerator type and
      the plan solved by planopt (reserved, spot, overflow and all); the cheapest type that can
      serve every workload (the comparison Mélange makes);
  (c) (a) plus reservations — each workload alone on its cheapest config under this rule: its
      trough (the least GPUs it needs at any hour) reserved in whole nodes, on demand above it
      hour by hour.
(a) and (c) are computed from the candidates (optimizer.candidates.build_candidates: hourly GPU
constants per config) without the integer program; they ignore capacity caps and the API, so
they can only look cheaper than a plan that respects them. Savings are in percent of the baseline.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizer.candidates.build import build_candidates, day_hours  # noqa: E402
from optimizer.candidates.types import Candidate  # noqa: E402
from optimizer.errors import InfeasiblePlan, PlanError, SolverError  # noqa: E402
from optimizer.inputs.loading import LoadedPlan, load_plan  # noqa: E402
from optimizer.optimize.strategy import SolveOptions, solve_candidates  # noqa: E402
from optimizer.results.extract import extract  # noqa: E402
from optimizer.vocab import RESERVED_TERM_DAYS  # noqa: E402

RESERVED = tuple(RESERVED_TERM_DAYS)


def _generate():
    from optimizer.synth.plans import generate

    return generate


# --- hand-made baselines from the candidates -----------------------------------------------------------


def hourly_gpus(loaded: LoadedPlan, c: Candidate) -> dict[tuple[str, int], int]:
    """GPUs a config needs at each (day type, hour); a batch job runs evenly across its window."""
    if c.gpus:
        return dict(c.gpus)
    w = next(w for w in loaded.plan.workloads if w.name == c.workload)
    assert w.batch is not None
    window = w.batch.hours()
    replicas = math.ceil(w.batch.output_tokens_per_day / (3600.0 * c.goodput * len(window)) - 1e-9)
    gpus = math.ceil(replicas * c.gpu_fraction - 1e-9)
    return {(d, h): (gpus if h in window else 0) for d, h in day_hours(loaded.plan)}


def _options(loaded: LoadedPlan, cands) -> dict[str, list[Candidate]]:
    """Per workload, the GPU configs a hand-made plan may use: no API, no overflow ceiling, sold on demand."""
    pol, offers = loaded.plan.policy, loaded.catalog.offers
    out = {}
    for w in loaded.plan.workloads:
        out[w.name] = [c for c in cands.by_workload[w.name]
                       if c.kind != "api" and c.ceiling_replicas is None and "on-demand" in pol.tiers
                       and offers[c.offer].price("on-demand") is not None]
    return out


def peak_on_demand(loaded: LoadedPlan, cands) -> float:
    """(a): each workload's cheapest config at its peak, held 24 h, on demand, in whole nodes."""
    H = loaded.plan.horizon_days
    total = 0.0
    for name, options in _options(loaded, cands).items():
        best = math.inf
        for c in options:
            offer = loaded.catalog.offers[c.offer]
            m = offer.gpus_per_node
            nodes = math.ceil(max(hourly_gpus(loaded, c).values()) / m)
            best = min(best, nodes * m * offer.price("on-demand") * 24 * H)
        if best == math.inf:
            raise ValueError(f"{name}: no on-demand config for baseline (a)")
        total += best
    return total


def trough_reserved(loaded: LoadedPlan, cands) -> float:
    """(c): each workload's cheapest config with its trough reserved (whole nodes, the cheaper of
    rounding down or up) and on demand above it, hour by hour."""
    plan = loaded.plan
    H, days = plan.horizon_days, plan.day_type_days()
    total = 0.0
    for name, options in _options(loaded, cands).items():
        best = math.inf
        for c in options:
            offer = loaded.catalog.offers[c.offer]
            m, od = offer.gpus_per_node, offer.price("on-demand")
            need = hourly_gpus(loaded, c)
            reserved_prices = [p for t in RESERVED if t in plan.policy.tiers and (p := offer.price(t)) is not None]
            levels = {0}
            if reserved_prices:
                trough = min(need.values())
                levels |= {trough // m, math.ceil(trough / m)}
            for r in levels:
                cost = r * m * (min(reserved_prices) if r else 0.0) * 24 * H
                cost += sum(days[d] * math.ceil(max(0, g - r * m) / m) * m * od for (d, _h), g in need.items())
                best = min(best, cost)
        if best == math.inf:
            raise ValueError(f"{name}: no on-demand config for baseline (c)")
        total += best
    return total


# --- (b): one accelerator type for the whole fleet, solved by planopt ---------------------------------------


@dataclass(frozen=True)
class Solved:
    cost: float
    gap: float | None
    seconds: float


def solve(loaded: LoadedPlan, options: SolveOptions, cands=None) -> Solved:
    started = time.perf_counter()
    cands = cands if cands is not None else build_candidates(loaded)
    sol, info = solve_candidates(loaded, cands, options)
    result = extract(loaded.plan, cands, sol, info, loaded.catalog.offers, loaded.file)
    return Solved(result.cost_total, result.solver.gap, time.perf_counter() - started)


def restricted(loaded: LoadedPlan, acc: str, *, keep_filters: bool = True) -> LoadedPlan | None:
    """The plan with every workload on accelerator `acc`; None when a workload's own accelerator
    list excludes it (unless `keep_filters` is off: then the lists are replaced)."""
    workloads = []
    for w in loaded.plan.workloads:
        if w.reserve_gpus is not None:
            allowed = w.reserve_gpus.accelerators
            if keep_filters and allowed is not None and acc not in allowed:
                return None
            workloads.append(w.model_copy(update={"reserve_gpus": w.reserve_gpus.model_copy(update={"accelerators": [acc]})}))
        else:
            if keep_filters and w.accelerators is not None and acc not in w.accelerators:
                return None
            workloads.append(w.model_copy(update={"accelerators": [acc]}))
    return LoadedPlan(loaded.plan.model_copy(update={"workloads": workloads}), loaded.catalog, loaded.doc)


def best_single_type(loaded: LoadedPlan, options: SolveOptions) -> tuple[float, str, float | None, int]:
    """Cheapest feasible single-accelerator fleet: (cost, accelerator, gap, types tried).

    When the workloads' own accelerator lists leave no common type (q4: no accelerator is
    qualified for all nine), the lists are set aside and the accelerator is marked '*': that
    baseline has more freedom than the optimizer, so the saving against it is understated.
    """
    providers = loaded.plan.policy.providers
    types = sorted({o.accelerator for o in loaded.catalog.offers.values()
                    if o.accelerator in loaded.catalog.accelerators and (providers is None or o.provider in providers)})
    best: tuple[float, str, float | None] = (math.inf, "none", None)
    for keep_filters in (True, False):
        for acc in types:
            one = restricted(loaded, acc, keep_filters=keep_filters)
            if one is None:
                continue
            try:
                s = solve(one, options)
            except (PlanError, InfeasiblePlan, SolverError):
                continue  # some workload cannot run on it, or its caps cannot carry the fleet
            if s.cost < best[0]:
                best = (s.cost, acc if keep_filters else acc + "*", s.gap)
        if math.isfinite(best[0]):
            break
    return best[0], best[1], best[2], len(types)


# --- the table ---------------------------------------------------------------------------------------------


def row(label: str, path: Path, options: SolveOptions) -> dict:
    started = time.perf_counter()
    loaded = load_plan(path)
    # The baselines buy the whole fleet: so does planopt here (q4's contracts signed before are set aside).
    loaded = LoadedPlan(loaded.plan.model_copy(update={"commitments": []}), loaded.catalog, loaded.doc)
    cands = build_candidates(loaded)
    opt = solve(loaded, options, cands)
    a = peak_on_demand(loaded, cands)
    c = trough_reserved(loaded, cands)
    b, acc, b_gap, tried = best_single_type(loaded, options)
    return {"plan": label, "workloads": len(loaded.plan.workloads), "optimum": opt.cost, "gap": opt.gap,
            "a": a, "b": b, "b_acc": acc, "b_gap": b_gap, "c": c, "types": tried,
            "seconds": time.perf_counter() - started}


def saving(baseline: float, optimum: float) -> str:
    if not math.isfinite(baseline):
        return "n/a"
    return f"{100 * (baseline - optimum) / baseline:.1f}%"


def money(x: float) -> str:
    return f"${x:,.0f}" if math.isfinite(x) else "infeasible"


def print_table(rows: list[dict]) -> None:
    head = ["plan", "workloads", "planopt (gap)", "(a) peak on demand", "saving", "(b) best single type",
            "saving", "(c) trough reserved", "saving", "time"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for r in rows:
        gap = f"{100 * r['gap']:.2f}%" if r["gap"] is not None else "?"
        print("| " + " | ".join([
            r["plan"], str(r["workloads"]), f"{money(r['optimum'])} ({gap})",
            money(r["a"]), saving(r["a"], r["optimum"]),
            f"{money(r['b'])} ({r['b_acc']})", saving(r["b"], r["optimum"]),
            money(r["c"]), saving(r["c"], r["optimum"]), f"{r['seconds']:.0f} s"]) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 30, 100], help="workloads per generated plan")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2], help="generator seeds")
    ap.add_argument("--no-q4", action="store_true", help="skip plans/q4.yaml")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per solve")
    ap.add_argument("--mip-gap", type=float, default=0.01, help="relative gap per solve (q4 keeps its own 0.1%%)")
    args = ap.parse_args()
    generate = _generate()
    rows = []
    if not args.no_q4:
        rows.append(row("plans/q4.yaml", ROOT / "plans" / "q4.yaml",
                        SolveOptions(time_limit_s=args.time_limit, alternatives=0)))
        print(f"# q4 done in {rows[-1]['seconds']:.0f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            for seed in args.seeds:
                path = Path(tmp) / f"generated-{n}-{seed}.yaml"
                path.write_text(generate(n, seed, mip_gap=args.mip_gap, time_limit_s=args.time_limit), encoding="utf-8")
                rows.append(row(f"generated {n} (seed {seed})", path,
                                SolveOptions(time_limit_s=args.time_limit, mip_gap=args.mip_gap, alternatives=0)))
                print(f"# {rows[-1]['plan']} done in {rows[-1]['seconds']:.0f} s", file=sys.stderr)
    print_table(rows)
    tried = ", ".join(str(r["types"]) for r in rows)
    gaps = ", ".join(f"{100 * r['b_gap']:.2f}%" if r["b_gap"] is not None else "?" for r in rows)
    print(f"\naccelerator types tried for (b), per plan: {tried}; proven gap of the best single-type fleet: {gaps}")
    if any(r["b_acc"].endswith("*") for r in rows):
        print("* no accelerator type is on every workload's own accelerator list: the lists were set aside for (b)")


if __name__ == "__main__":
    main()
