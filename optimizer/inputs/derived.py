"""What planopt derives from a stated plan, as typed values made by named functions.

A plan file states what the user knows; the program reads a few things derived from it:

  peak derivation  how a workload's peak follows from its business numbers (users, active_share, requests,
                   tokens.output, the day's shape, growth over the horizon): `peak_derivation(plan, w)`.
                   Validating the plan writes the derived peak into `demand.peak_output_tokens_per_s`
                   (Demand.fill_derived_peak), so every stage reads one peak whichever way it was given.
  program input    what the program's copy of the plan carries beyond its fields (`ProgramInput`): the
                   sentence about the estimator's error planned for (inputs.estimates.expand) and each
                   scenario day type's base day type and scenario (inputs.scenarios.expand). That copy is a
                   `ProgramPlan`; a plan read from a file is a `Plan` and has no program input.

Pure: no I/O, no solving.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from pydantic import ConfigDict, Field

from optimizer.inputs.demand import PeakDerivation
from optimizer.inputs.schema.plan import Plan, Scenario, Workload


@dataclass(frozen=True)
class ScenarioDays:
    """The expanded plan's day types: each one's base day type and scenario."""

    base: dict[str, str]
    scenario: dict[str, Scenario]

    def goodput(self, day_type: str) -> float:
        s = self.scenario.get(day_type)
        return s.goodput if s is not None else 1.0

    def price(self, day_type: str, tier: str, provider: str) -> float:
        s = self.scenario.get(day_type)
        if s is None:
            return 1.0
        return s.prices.get(tier, 1.0) * s.prices.get(provider, 1.0)


@dataclass(frozen=True)
class ProgramInput:
    """What the program's copy of a plan carries beyond the plan's own fields."""

    estimate_note: str | None = None
    """The sentence the result's notes carry about policy.estimate_error, once it is applied (never twice)."""
    scenarios: ScenarioDays | None = None
    """Each scenario day type's base day type and scenario, once scenarios are cut into day types."""


NO_PROGRAM_INPUT = ProgramInput()


class ProgramPlan(Plan):
    """The program's copy of a plan: the plan's fields (day types and workloads as the program sees them)
    and the program input derived from the stated plan. Made only by `with_program_input`, never from YAML."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    program_input: ProgramInput = Field(default=NO_PROGRAM_INPUT, exclude=True)

    def calendar_types(self, day: dt.date) -> list[str]:
        """Every day type a calendar date stands for: its day type in each scenario."""
        sd = self.program_input.scenarios
        d = self.day_type_of(day)
        if d is None or sd is None:
            return super().calendar_types(day)
        return [k for k, b in sd.base.items() if b == sd.base[d]]


def program_input(plan: Plan) -> ProgramInput:
    """The plan's program input (none for a plan as stated)."""
    return plan.program_input if isinstance(plan, ProgramPlan) else NO_PROGRAM_INPUT


def with_program_input(plan: Plan, **changes: object) -> ProgramPlan:
    """The plan as the program's copy, its program input changed by `changes` (ProgramInput's fields).
    Built without validation: the fields are the validated plan's own."""
    fields = {k: getattr(plan, k) for k in Plan.model_fields}
    pi = replace(program_input(plan), **changes)  # type: ignore[arg-type]
    return ProgramPlan.model_construct(_fields_set=set(plan.model_fields_set), **fields, program_input=pi)


def peak_derivation(plan: Plan, w: Workload) -> PeakDerivation | None:
    """How the workload's peak follows from its business numbers; None when the plan states the peak."""
    if w.demand is None or w.tokens is None:
        return None
    return w.demand.derivation(w.tokens.output, plan.horizon_days)


def peak_derivations(plan: Plan) -> dict[str, PeakDerivation]:
    """Every workload's peak derivation, by workload name (workloads that state their peak left out)."""
    return {w.name: d for w in plan.workloads if (d := peak_derivation(plan, w)) is not None}
