"""A scenario plan solved by scenario: progressive hedging's hub and spokes (Watson, Woodruff et al., mpi-sppy:
https://github.com/Pyomo/mpi-sppy), kept small — a Lagrangian bound from the scenarios' own programs and plans
from their first stages, each scenario's solve a task on the process pool or on Ray (optimizer.parallel, the
engines `sweep` uses).

The two-stage program (inputs.scenarios) decides once for every scenario — each workload's config, the
reserved and bought levels R[o,p,k] (and later starts), the new spend commitments — and per scenario the hourly
capacity. Its objective is Σ_s w_s f_s(first stage), f_s the cost with scenario s certain. So:

  bound   each scenario's own program (its days at weight 1, its first stage free) with Lagrangian prices W_s on
          the configs and reserved levels, Σ_s w_s W_s = 0: Σ_s w_s (each one's proven bound) is a lower bound on
          the plan (W = 0 first: the wait-and-see bound). The prices follow the scenarios' disagreement,
          W_s += step · (x_s − x̄), the step Polyak's (θ · (best plan − bound) / ‖x − x̄‖²), so no price
          needs a hand-set scale;
  plans   a first stage (the scenarios' consensus, rounded; at the start also the scenario's own that is nearest
          it) held, each scenario's second stage solved alone: Σ_s w_s (each one's cost) is a plan's cost;
  end     the bound and the best plan within the gap, or SolvePolicy.decompose_iterations rounds; the best first
          stage is then solved as the whole plan with it held (strategy.solve_candidates with `fix` and
          `reserved`), so the Solution and the result are the usual ones, its gap against the Lagrangian bound.

Every scenario's solve stops on its own work limit (the plan's policy.work_limit, the scenario's own tally), the
rounds on a count: the same answer on any machine and whichever engine ran it — tasks are gathered in the
scenarios' order, never in the order they finished.
"""

from __future__ import annotations

import contextvars
import math
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import pulp

from optimizer import parallel
from optimizer.candidates.types import CandidateSet
from optimizer.errors import InfeasiblePlan, SolverError
from optimizer.inputs.derived import ScenarioDays, with_program_input
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import scenario_days
from optimizer.optimize import work
from optimizer.optimize.policy import SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Decomposition, Solution, SolveInfo
from optimizer.optimize.steps.run import SolveOptions, _gap

Key = tuple
"""A first-stage variable: ("choice", candidate key), ("reserved", (offer, pool, tier)),
("later", (offer, pool, tier, day)) or ("spend", commitment key)."""

ENGINES: dict[str, parallel.Engine] = {"serial": "serial", "process": "processes", "processes": "processes",
                                       "ray": "ray"}


def wanted(loaded: LoadedPlan, policy: SolvePolicy) -> bool:
    """Whether the plan is solved by scenario: policy.decompose `scenarios`, or `auto` with at least
    policy.decompose_min_scenarios scenarios; only for the expected cost (cvar and the worst case weigh the
    scenarios' costs jointly, which the scenarios' own programs cannot bound by a weighted sum)."""
    sd = scenario_days(loaded.plan)
    if policy.decompose == "never" or sd is None or loaded.plan.policy.risk.measure != "expected":
        return False
    n = len({s.name for s in sd.scenario.values()})
    if n < 2:
        return False
    return policy.decompose == "scenarios" or n >= policy.decompose_min_scenarios


def scenario_names(loaded: LoadedPlan) -> list[tuple[str, float]]:
    """(scenario, weight) in the plan's order."""
    sd = scenario_days(loaded.plan)
    assert sd is not None
    return list({s.name: s.weight for s in sd.scenario.values()}.items())


def scenario_plan(loaded: LoadedPlan, name: str) -> LoadedPlan:
    """The expanded plan's scenario `name` alone, as if certain: its day types only, their days divided by its
    weight. The day types keep their names, so the two-stage plan's candidates serve it unchanged (a program
    of the same configs and first-stage variables)."""
    plan = loaded.plan
    sd = scenario_days(plan)
    assert sd is not None and plan.day_types is not None
    keep = [d for d, s in sd.scenario.items() if s.name == name]
    weight = sd.scenario[keep[0]].weight
    one = sd.scenario[keep[0]].model_copy(update={"weight": 1.0})
    given = plan.day_types
    types = {d: given[d].model_copy(update={"days": given[d].days / weight})  # type: ignore[union-attr]
             for d in keep}
    out = plan.model_copy(update={"day_types": types, "scenarios": [one]})
    return replace(loaded, plan=with_program_input(out, scenarios=ScenarioDays({d: sd.base[d] for d in keep},
                                                                               {d: one for d in keep})))


def scenario_candidates(cands: CandidateSet, loaded_one: LoadedPlan) -> CandidateSet:
    """The two-stage plan's candidates with only the day types of scenario_plan's plan: the same configs (keys,
    goodput, first-stage variables), each one's hours and API volume those of its scenario."""
    keep = set(loaded_one.plan.day_types or {})

    def one(c):
        return replace(c, gpus={dh: v for dh, v in c.gpus.items() if dh[0] in keep},
                       replicas={dh: v for dh, v in c.replicas.items() if dh[0] in keep},
                       share_time={dh: v for dh, v in c.share_time.items() if dh[0] in keep},
                       api_output_tokens_per_day={d: v for d, v in c.api_output_tokens_per_day.items() if d in keep})

    return replace(cands, by_workload={w: [one(c) for c in cs] for w, cs in cands.by_workload.items()},
                   demand={w: {dh: v for dh, v in by.items() if dh[0] in keep} for w, by in cands.demand.items()})


def price_terms(prog: Program, prices: dict[Key, float]) -> pulp.LpAffineExpression:
    """The Lagrangian terms Σ W[v]·v on the program's first-stage variables (a key the program lacks — a config
    fixed, an offer priced apart — is left out: its agreement across scenarios is then not priced, still a
    relaxation)."""
    tables = {"choice": prog.choice, "reserved": prog.reserved, "later": prog.reserved_later,
              "spend": prog.spend_new}
    terms = []
    for (kind, key), w in sorted(prices.items(), key=lambda kv: repr(kv[0])):
        v = tables[kind].get(key)
        if isinstance(v, pulp.LpVariable) and w:
            terms.append(w * v)
    return pulp.lpSum(terms)


@dataclass(frozen=True)
class Piece:
    """One scenario's solve, as plain values (what a worker sends back)."""

    status: str
    objective: float | None
    bound: float | None
    chosen: dict[str, str]
    first: dict[Key, float]
    """The first stage it chose (choice → 1, reserved and later levels, spend), zeros left out."""
    iterations: int = 0
    nodes: int = 0
    stopped_by: str = "optimal"


def _first_stage(sol: Solution) -> dict[Key, float]:
    out: dict[Key, float] = {("choice", k): 1.0 for k in sol.chosen.values()}
    out.update({("reserved", k): float(v) for k, v in sol.reserved_nodes.items() if v})
    out.update({("later", k): float(v) for k, v in sol.reserved_later.items() if v})
    out.update({("spend", k): float(v) for k, v in sol.spend_new.items() if v})
    return out


def _held(first: dict[Key, float]) -> dict[tuple, float]:
    """A first stage as strategy.solve_candidates's `reserved`."""
    out: dict[tuple, float] = {}
    for (kind, key), v in first.items():
        if kind in ("reserved", "later"):
            out[key] = v
        elif kind == "spend":
            out[("spend", key)] = v
    return out


Solve = Callable[..., tuple[Solution, SolveInfo]]
"""strategy.solve_candidates, handed in (strategy calls this module; a worker process gets it by reference)."""


def solve_scenario(solve: Solve, loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions, name: str,
                   prices: dict[Key, float] | None, fix: dict[str, str] | None,
                   first: dict[Key, float] | None, cap_s: float) -> Piece:
    """Scenario `name` alone (scenario_plan) by `solve`: with `prices`, its Lagrangian program; with `fix` and
    `first`, its second stage at that first stage; `cap_s` the safety cap's seconds left. In a context of its own,
    so its work is its own tally and limit whichever process runs it."""
    one = scenario_plan(loaded, name)
    try:
        sol, info = contextvars.Context().run(solve, one, scenario_candidates(cands, one),
                                              replace(options, time_limit_s=cap_s), fix=fix,
                                              reserved=None if first is None else _held(first), prices=prices)
    except (InfeasiblePlan, SolverError):
        return Piece("infeasible", None, None, {}, {})
    its = sum(w.simplex_iterations for w in info.work)
    nodes = sum(w.mip_nodes for w in info.work)
    stop = min((w.stopped_by for w in info.work), key=work.STOPS.index, default="optimal")
    return Piece(info.status, info.objective, info.bound, dict(sol.chosen), _first_stage(sol), its, nodes, stop)


def _consensus(pieces: list[Piece], weights: list[float], workloads: dict[str, list[str]]) -> dict[Key, float]:
    """The scenarios' first stages averaged and rounded: each workload's config the most weight chose (the
    first in key order on a tie), each level the nearest whole (spend as averaged)."""
    mean = _mean(pieces, weights)
    out: dict[Key, float] = {}
    for w, keys in workloads.items():
        best = max(sorted(keys), key=lambda k: mean.get(("choice", k), 0.0))
        out[("choice", best)] = 1.0
    for k, v in mean.items():
        if k[0] in ("reserved", "later") and round(v):
            out[k] = float(round(v))
        elif k[0] == "spend" and v > 1e-9:
            out[k] = v
    return out


def _mean(pieces: list[Piece], weights: list[float]) -> dict[Key, float]:
    keys = sorted({k for p in pieces for k in p.first}, key=repr)
    return {k: sum(w * p.first.get(k, 0.0) for p, w in zip(pieces, weights)) for k in keys}


def _chosen(first: dict[Key, float], workload_of: dict[str, str]) -> dict[str, str]:
    return {workload_of[k]: k for (kind, k), v in first.items() if kind == "choice" and v > 0.5}


def _ordered(run: parallel.Workers, tasks: list[tuple]) -> list[Any]:
    """Every task on the engine, the results in the tasks' order (not the order they finished)."""
    out: list[Any] = [None] * len(tasks)
    at: dict[int, int] = {}
    queue: Iterator[int] = iter(range(len(tasks)))
    for i in queue:
        at[run.submit(*tasks[i])] = i
        if len(at) >= run.slots:
            break
    while at:
        ticket, result = run.next()
        out[at.pop(ticket)] = result
        nxt = next(queue, None)
        if nxt is not None:
            at[run.submit(*tasks[nxt])] = nxt
    return out


def solve_by_scenario(solve: Solve, loaded: LoadedPlan, cands: CandidateSet, options: SolveOptions,
                      policy: SolvePolicy, started: float) -> tuple[Solution, SolveInfo] | None:
    """The plan by progressive hedging (the module's docstring), each scenario's solve and the last one by `solve`
    (strategy.solve_candidates); None when a scenario's own program has no plan (the caller then solves the
    two-stage program, whose diagnosis says why)."""
    names = scenario_names(loaded)
    total = sum(w for _n, w in names)
    weights = [w / total for _n, w in names]
    engine = ENGINES[options.parallel or policy.decompose_engine]
    sub = replace(options, alternatives=0, progress=None, parallel=None,
                  mip_gap=policy.mip_gap * policy.decompose_gap_share)
    workloads = {w: [c.key for c in cs] for w, cs in cands.by_workload.items() if cs}
    workload_of = {k: w for w, keys in workloads.items() for k in keys}
    done: list[tuple[int, int, str]] = []  # each scenario solve's work, in the order they were asked for

    def tally(pieces: list[Piece]) -> None:
        done.extend((p.iterations, p.nodes, p.stopped_by) for p in pieces)

    def cap_left() -> float:
        """The safety cap's seconds left, the same for every solve of a round (each solve is cut at it)."""
        return max(0.01, policy.safety_cap_s - (time.perf_counter() - started))

    best: tuple[float, dict[Key, float]] | None = None
    bound = -math.inf
    tried: set[tuple] = set()
    rounds = 0
    theta = policy.decompose_step
    prices: list[dict[Key, float]] = [{} for _ in names]
    count = min(len(names), policy.decompose_workers or os.cpu_count() or 1)
    with parallel.workers(solve_scenario, (solve, loaded, cands, sub), engine=engine, count=count,
                          tasks=len(names)) as run:

        def evaluate(first: dict[Key, float]) -> None:
            nonlocal best
            sig = tuple(sorted(first.items(), key=repr))
            if sig in tried:
                return
            tried.add(sig)
            fix = _chosen(first, workload_of)
            pieces = _ordered(run, [(n, None, fix, first, cap_left()) for n, _w in names])
            tally(pieces)
            if any(p.objective is None for p in pieces):
                return  # a scenario cannot be served at this first stage
            cost = sum(w * p.objective for p, w in zip(pieces, weights))  # type: ignore[operator]
            if best is None or cost < best[0] - 1e-9 * max(1.0, abs(cost)):
                best = (cost, first)

        while rounds < policy.decompose_iterations:
            if options.progress is not None:
                options.progress("decompose", time.perf_counter() - started, best[0] if best else None,
                                 bound if bound > -math.inf else None)
            if cap_left() <= 0.01:
                done.append((0, 0, "safety cap"))
                break
            pieces = _ordered(run, [(n, prices[i] or None, None, None, cap_left())
                                    for i, (n, _w) in enumerate(names)])
            tally(pieces)
            rounds += 1
            if any(p.bound is None for p in pieces):
                return None
            value = sum(w * p.bound for p, w in zip(pieces, weights))  # type: ignore[operator]
            improved = value > bound + 1e-9 * max(1.0, abs(value))
            bound = max(bound, value)
            mean = _mean(pieces, weights)
            consensus = _consensus(pieces, weights, workloads)
            evaluate(consensus)
            if rounds == 1:  # the scenario whose own first stage is nearest the mean
                near = min(range(len(pieces)), key=lambda i: (_distance(pieces[i].first, mean), i))
                evaluate(pieces[near].first)
            if best is not None and (_gap(best[0], bound) or 0.0) <= policy.mip_gap:
                break
            priced = [k for k in mean if k[0] in ("choice", "reserved", "later")]
            spread = sum(w * (p.first.get(k, 0.0) - mean[k]) ** 2 for p, w in zip(pieces, weights) for k in priced)
            if spread <= 1e-12 or best is None:
                break  # the scenarios agree: their common first stage is the plan, the bound its proof
            if not improved:
                theta /= 2
            step = theta * (best[0] - value) / spread
            for i, p in enumerate(pieces):
                for k in priced:
                    g = p.first.get(k, 0.0) - mean[k]
                    if g:
                        prices[i][k] = prices[i].get(k, 0.0) + step * g
    with work.step("decompose"):  # the scenarios' solves, each a call of the step
        for its, nodes, stop in done:
            work.record(its, nodes, stop)  # type: ignore[arg-type]
    if best is None:
        return None
    _cost, first = best
    sol, info = solve(loaded, cands, replace(options, parallel=None, time_limit_s=cap_left()),
                      fix=_chosen(first, workload_of), reserved=_held(first))
    lower = bound
    gap = _gap(info.objective, lower) if info.objective is not None else None
    status = info.status
    if status in ("optimal", "feasible"):
        status = "optimal" if gap is not None and gap <= policy.mip_gap + 1e-12 else "feasible"
    how = Decomposition("progressive hedging", rounds, lower, len(names), engine)
    return sol, replace(info, status=status, gap=gap, bound=lower, seconds=time.perf_counter() - started,
                        decomposition=how)


def _distance(first: dict[Key, float], mean: dict[Key, float]) -> float:
    keys = set(first) | set(mean)
    return sum((first.get(k, 0.0) - mean.get(k, 0.0)) ** 2 for k in sorted(keys, key=repr)
               if k[0] != "spend")
