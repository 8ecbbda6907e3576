"""One solve's context, shared by its steps: the options it was called with, the policy it reads, its clock, and what
the steps have found so far (Run); the gap and the SolveInfo every step states its result in."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import pulp

from optimizer.candidates.types import CandidateSet
from optimizer.inputs.loading import LoadedPlan
from optimizer.optimize.calendar import Segments
from optimizer.optimize.policy import SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import SolveInfo


@dataclass(frozen=True)
class SolveOptions:
    solver: str | None = None
    time_limit_s: float | None = None
    mip_gap: float | None = None
    alternatives: int = 3
    """Other configs per workload to price in the solved program (price_alternatives); 0: none."""
    progress: Callable[[str, float, float | None, float | None], None] | None = None
    """Hears the solve: (phase, seconds since the start, best plan's cost, best bound). Phases: "bound"
    (the relaxation), "plan" (the rounded plan), "search" (branch and bound, HiGHS only), "alternatives"."""


def settings(loaded: LoadedPlan, options: SolveOptions) -> tuple[str, float, float]:
    """Solver, time limit and gap target: the options where given, else the plan's policy."""
    pol = loaded.plan.policy
    return (options.solver or pol.solver, options.time_limit_s or pol.time_limit_s,
            pol.mip_gap if options.mip_gap is None else options.mip_gap)


@dataclass
class Run:
    """One strategy._solve: the program and its plan, the policy, the clock, and what the steps have found so far (the
    bound, the incumbent plan's cost and values, the solver that answered and its fallback note)."""

    prog: Program
    loaded: LoadedPlan
    cands: CandidateSet
    segments: Segments
    options: SolveOptions
    solver: str
    limit: float
    gap_target: float
    started: float
    policy: SolvePolicy
    """The SolvePolicy the steps read (strategy.POLICY when the solve began)."""
    settle_s: float = 0.0
    """The last seconds of the limit kept for settling sole-tenant configs (strategy._solve_settled)."""
    bound: float | None = None
    incumbent: float | None = None
    values: dict[str, float | None] | None = None
    note: str | None = None

    def left(self) -> float:
        return self.limit - (time.perf_counter() - self.started)

    def room(self) -> float:
        """What step 2 may use: the time left but the settling's, unless the relaxation has run into it."""
        return self.left() - self.settle_s if self.left() > self.settle_s else self.left()

    def search_left(self) -> float:
        """What step 3 may use: from a plan in hand it leaves the settling's time; without one it may use it."""
        return self.left() - (self.settle_s if self.incumbent is not None else 0.0)

    def tell(self, phase: str, inc: float | None, bnd: float | None) -> None:
        if self.options.progress is not None:
            self.options.progress(phase, time.perf_counter() - self.started, inc, bnd)

    def info(self, status: str, gap: float | None, objective: float | None, bound: float | None,
             overhead_s: float) -> SolveInfo:
        return _info(self.solver, status, self.started, gap, objective, bound, self.note, overhead_s)


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
