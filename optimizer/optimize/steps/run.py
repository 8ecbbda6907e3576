"""One solve's context, shared by its steps: the options it was called with, the SolvePolicy it reads (solve_policy:
the plan's policy and the options over strategy.POLICY), the work each step has left and the safety cap, and what
the steps have found so far (Run); the gap and the SolveInfo every step states its result in."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import pulp

from optimizer.candidates.types import CandidateSet
from optimizer.inputs.loading import LoadedPlan
from optimizer.optimize import work
from optimizer.optimize.calendar import Segments
from optimizer.optimize.policy import SolvePolicy, WorkLimit
from optimizer.optimize.program import Program
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.solver import Basis


@dataclass(frozen=True)
class SolveOptions:
    solver: str | None = None
    time_limit_s: float | None = None
    """The safety cap in seconds (--time-limit; default the plan's policy.time_limit_s)."""
    mip_gap: float | None = None
    work_limit: float | None = None
    """The plan's work limit times this (--work-limit; default 1)."""
    alternatives: int = 3
    """Other configs per workload to price in the solved program (price_alternatives); 0: none."""
    progress: Callable[[str, float, float | None, float | None], None] | None = None
    """Hears the solve: (phase, seconds since the start, best plan's cost, best bound). Phases: "bound"
    (the relaxation), "plan" (the rounded plan), "search" (branch and bound, HiGHS only), "alternatives",
    "decompose" (a round of a scenario plan solved by scenario)."""
    parallel: str | None = None
    """Where a plan solved by scenario runs its scenarios' solves: serial, process or ray (--parallel; default
    SolvePolicy.decompose_engine)."""


def settings(loaded: LoadedPlan, options: SolveOptions) -> tuple[str, float, float]:
    """Solver, safety cap (seconds) and gap target: the options where given, else the plan's policy."""
    pol = loaded.plan.policy
    return (options.solver or pol.solver, options.time_limit_s or pol.time_limit_s,
            pol.mip_gap if options.mip_gap is None else options.mip_gap)


def solve_policy(loaded: LoadedPlan, options: SolveOptions, base: SolvePolicy) -> SolvePolicy:
    """The SolvePolicy of one solve: `base`'s tuning (strategy.POLICY) with the plan's policy — solver, gap,
    work limit, safety cap — and the options (the command line's) over it."""
    solver, cap, gap = settings(loaded, options)
    stated = loaded.plan.policy.work_limit
    limit = WorkLimit(stated.nodes, stated.lp_iterations, stated.shares.model_dump())
    priced = base.price_max_alternatives
    if options.work_limit is not None:
        limit = limit.scaled(options.work_limit)
        priced = max(1, round(priced * options.work_limit))
    return replace(base, solver=solver, mip_gap=gap, safety_cap_s=cap, work=limit, price_max_alternatives=priced,
                   decompose=getattr(loaded.plan.policy, "decompose", base.decompose))


@dataclass
class Run:
    """One strategy._solve: the program and its plan, the policy (its budgets and tuning), the safety cap's clock,
    and what the steps have found so far (the bound, the incumbent plan's cost and values, the solver that answered
    and its fallback note)."""

    prog: Program
    loaded: LoadedPlan
    cands: CandidateSet
    segments: Segments
    options: SolveOptions
    solver: str
    policy: SolvePolicy
    """The SolvePolicy the steps read (solve_policy: strategy.POLICY, the plan's policy and the options)."""
    started: float
    """When the solve began (time.perf_counter): the safety cap counts from it."""
    bound: float | None = None
    incumbent: float | None = None
    values: dict[str, float | None] | None = None
    note: str | None = None
    planned: bool = False
    """A plan is in hand. Until then the calls a first plan rests on (the relaxation and its cut rounds, step 2's
    solves, and the search when step 2 found none) are not cut by the safety cap before they have a plan
    (solver.solve's cap_needs_plan): a plan comes out however busy the machine (unproven, it is marked
    provisional). From then on the cap stops every call, which only ends the search for better plans and
    proofs."""

    @property
    def gap_target(self) -> float:
        return self.policy.mip_gap

    def capped(self) -> bool:
        """A plan is in hand and the safety cap is reached: no step starts another solver call."""
        return self.planned and cap_left(self.policy, self.started) <= 0

    def has_work(self, step: str) -> bool:
        """Step `step` has nodes and iterations left, and the safety cap is not reached."""
        nodes, iterations = work_left(self.policy, step)
        return nodes > 0 and iterations > 0 and not self.capped()

    def limits(self, step: str, share: float = 1.0) -> dict[str, Any]:
        """solver.solve's limits for a call of step `step` (limits): without the safety cap while no plan is in
        hand (planned)."""
        return limits(self.policy, step, self.started, share, capped=self.planned)

    def tell(self, phase: str, inc: float | None, bnd: float | None) -> None:
        if self.options.progress is not None:
            self.options.progress(phase, time.perf_counter() - self.started, inc, bnd)

    def info(self, status: str, gap: float | None, objective: float | None, bound: float | None,
             overhead_s: float) -> SolveInfo:
        return _info(self.solver, status, self.started, gap, objective, bound, self.note, overhead_s)


def cap_left(policy: SolvePolicy, started: float) -> float:
    """Seconds left of the safety cap of a solve that began at `started`."""
    return policy.safety_cap_s - (time.perf_counter() - started)


def work_left(policy: SolvePolicy, step: str) -> tuple[int, int]:
    """(nodes, simplex iterations) step `step` has left of its share of the work limit: its share less what its
    calls have spent so far in the solve's tally (work.spent)."""
    nodes, iterations = policy.work.step(step)
    spent_iterations, spent_nodes = work.spent(step)
    return nodes - spent_nodes, iterations - spent_iterations


def limits(policy: SolvePolicy, step: str, started: float, share: float = 1.0, capped: bool = True
           ) -> dict[str, Any]:
    """solver.solve's limits for one call of step `step`: `share` of the step's work left (at least one node
    and one iteration), the safety cap's seconds left — heeded only once the call has a plan when not `capped`
    (a call a first plan rests on: cap_needs_plan) — and the policy's threads."""
    nodes, iterations = work_left(policy, step)
    return {"node_limit": max(1, int(share * nodes)), "iteration_limit": max(1, int(share * iterations)),
            "time_limit_s": max(0.01, cap_left(policy, started)), "cap_needs_plan": not capped,
            "threads": policy.threads}


def _objective_value(prog: Program) -> float:
    return float(pulp.value(prog.prob.objective) or 0.0)


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(objective) < 1e-9:
        return 0.0 if abs(bound) < 1e-9 else None
    return max(0.0, (objective - bound) / abs(objective))


def _rows(prog: Program) -> int:
    return sum(len(names) for names in prog.constraint_families.values())


def _info(solver: str, status: str, started: float, gap: float | None, objective: float | None,
          bound: float | None, note: str | None, overhead_s: float = 0.0) -> SolveInfo:
    return SolveInfo(solver, status, time.perf_counter() - started, gap, objective, bound, note,  # type: ignore[arg-type]
                     overhead_s)
