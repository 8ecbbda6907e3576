"""The work a solve did, step by step, and what stopped each step: the simplex iterations and branch-and-bound
nodes its solver calls report, and the limit (or proof) each ended on — SolveInfo.work, the result's `solver.work`
and `solver.stopped_by`.

solver.solve reports every call (record); strategy.solve_candidates keeps the tally (tally) and names the step its
calls belong to (step). A call outside a tally (a study's side solve, explain's re-solves) is not counted.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Iterator

from optimizer.optimize.solution import StepWork, StopReason

STOPS: tuple[StopReason, ...] = ("error", "safety cap", "iterations", "nodes", "alternatives", "solutions", "gap",
                                 "optimal", "infeasible")
"""What can stop a solver call, the one that says least about the answer first: a step's calls are said by the
first of these any of them stopped on ("safety cap": cut short by the wall clock, the one stop a faster machine
might not have made — every other is the same on every machine)."""


class Tally:
    """The calls of one solve, by step, in the order the steps first ran."""

    def __init__(self) -> None:
        self.steps: dict[str, StepWork] = {}
        self.current = "solve"

    def add(self, iterations: int, nodes: int, stopped_by: StopReason) -> None:
        was = self.steps.get(self.current, StepWork(self.current, 0, 0, 0, "infeasible"))
        stop = min(was.stopped_by, stopped_by, key=STOPS.index) if was.solves else stopped_by
        self.steps[self.current] = StepWork(self.current, was.solves + 1, was.simplex_iterations + iterations,
                                            was.mip_nodes + nodes, stop)

    def stop(self, stopped_by: StopReason) -> None:
        """The current step ended on a limit of its own (no solver call stopped on it): counted as its stop."""
        was = self.steps.get(self.current, StepWork(self.current, 0, 0, 0, stopped_by))
        self.steps[self.current] = replace(was, stopped_by=min(was.stopped_by, stopped_by, key=STOPS.index))

    def work(self) -> tuple[StepWork, ...]:
        return tuple(self.steps.values())


_ACTIVE: ContextVar[Tally | None] = ContextVar("planopt_work_tally", default=None)


@contextmanager
def tally() -> Iterator[Tally]:
    """The tally of the solve in progress: a new one, or the one already kept (a solve that starts again, as
    solve_candidates does without sole-tenant configs, adds to it)."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    kept = Tally()
    token = _ACTIVE.set(kept)
    try:
        yield kept
    finally:
        _ACTIVE.reset(token)


@contextmanager
def step(name: str) -> Iterator[None]:
    """The solver calls made inside are counted as step `name`'s (the innermost step named)."""
    active = _ACTIVE.get()
    if active is None:
        yield
        return
    was, active.current = active.current, name
    try:
        yield
    finally:
        active.current = was


def record(iterations: int | None, nodes: int | None, stopped_by: StopReason) -> None:
    """One solver call's work, counted in the tally's current step (nothing when no tally is kept)."""
    active = _ACTIVE.get()
    if active is not None:
        active.add(max(0, iterations or 0), max(0, nodes or 0), stopped_by)


def stopped(stopped_by: StopReason) -> None:
    """The tally's current step ended on a limit of its own — its share of the work checked between its calls, or a
    count — rather than on one its solver calls reported (nothing when no tally is kept)."""
    active = _ACTIVE.get()
    if active is not None:
        active.stop(stopped_by)


def spent(step: str) -> tuple[int, int]:
    """(simplex iterations, nodes) step `step`'s calls have spent so far in the solve's tally ((0, 0) outside one:
    a step called on its own has its whole budget at every call)."""
    active = _ACTIVE.get()
    done = active.steps.get(step) if active is not None else None
    return (done.simplex_iterations, done.mip_nodes) if done is not None else (0, 0)
