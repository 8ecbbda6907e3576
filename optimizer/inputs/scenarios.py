"""Scenarios as the program sees them: every day type copied once per scenario (`weekday~high`), with its
days weighted by the scenario's probability and its demand scaled by the scenario's multipliers.

That is the two-stage program with no new machinery: the program already decides one config per workload
and one reserved (and bought) level for the whole horizon — the first stage, shared by every day type —
and on-demand, spot, batch replica-hours and the API per day type and hour — the second stage, now per
scenario. With days weighted by probability, the objective is the expected cost; policy.risk `cvar` and
`worst` weigh the scenarios' second-stage costs instead (optimize.model.define_risk).

What a scenario scales:
  demand   interactive peaks (the most specific of workload, pool, `all`); batch volumes and reserved
           blocks stay as stated;
  prices   on-demand and spot prices (by tier or provider) — reserved and bought capacity is bought before
           the scenario is known, at today's prices;
  goodput  estimated goodput (a measured one is measured): a config then needs the replicas of demand ÷ it.

No solving, no I/O (pipeline.prepare calls it before candidates are built).
"""

from __future__ import annotations

from dataclasses import replace

from optimizer.inputs.derived import ScenarioDays, program_input, with_program_input
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.plan import DayType, Plan, Scenario, Workload
from optimizer.vocab import profile_for

SEP = "~"
"""Between a day type and its scenario in the program's day types (ids never hold it)."""


def goodput_factor(plan: Plan, source: str, day_type: str) -> float:
    """What a scenario does to a config's goodput on one of the program's day types: its multiplier for an
    estimated goodput, 1 for a measured one (or outside scenarios)."""
    sd = scenario_days(plan)
    return sd.goodput(day_type) if sd is not None and source == "estimated" else 1.0


def goodput_varies(plan: Plan | None) -> bool:
    """Whether scenarios scale estimated goodput: an estimated and a measured config then compare differently
    from one day type to the next."""
    sd = scenario_days(plan) if plan is not None else None
    return sd is not None and any(sd.goodput(d) != 1.0 for d in sd.base)


def demand_factor(s: Scenario, w: Workload) -> float:
    for key in (w.name, w.pool, "all"):
        if key in s.demand:
            return s.demand[key]
    return 1.0


def scenario_days(plan: Plan) -> ScenarioDays | None:
    """The day types' scenarios, for a plan that expand() produced (None for any other plan)."""
    return program_input(plan).scenarios


def _copy(plan: Plan, n: float, base: str) -> DayType:
    weekdays = plan.day_type_weekdays()[base]
    month = None
    if plan.day_types and isinstance(plan.day_types.get(base), DayType):
        month = plan.day_types[base].month  # type: ignore[union-attr]
    # days are weighted by probability, so not whole: built without validation, as the program's own
    return DayType.model_construct(days=n, days_of_week=list(weekdays), month=month)


def _workload(w: Workload, scns: list[Scenario], base_of: dict[str, tuple[str, Scenario]]) -> Workload:
    if w.demand is None:
        return w
    factors = {s.name: demand_factor(s, w) for s in scns}
    top = max(factors.values())
    if top <= 0:
        top = 1.0
    peak = w.demand.peak_output_tokens_per_s
    assert peak is not None
    profile = {name: [v * factors[s.name] / top for v in profile_for(w.demand.profile, d)]
               for name, (d, s) in base_of.items()}
    return w.model_copy(update={"demand": w.demand.model_copy(update={"peak_output_tokens_per_s": peak * top,
                                                                       "profile": profile})})


def expand(loaded: LoadedPlan) -> LoadedPlan:
    """The plan with one day type per (day type, scenario); unchanged without scenarios."""
    plan = loaded.plan
    if not plan.scenarios:
        return loaded
    days = plan.day_type_days()
    types: dict[str, DayType] = {}
    base_of: dict[str, tuple[str, Scenario]] = {}
    for d, n in days.items():
        for s in plan.scenarios:
            name = f"{d}{SEP}{s.name}"
            types[name] = _copy(plan, n * s.weight, d)
            base_of[name] = (d, s)
    workloads = [_workload(w, plan.scenarios, base_of) for w in plan.workloads]
    out = plan.model_copy(update={"day_types": types, "workloads": workloads})
    sd = ScenarioDays({k: d for k, (d, _s) in base_of.items()}, {k: s for k, (_d, s) in base_of.items()})
    return replace(loaded, plan=with_program_input(out, scenarios=sd))
