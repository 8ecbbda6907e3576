"""Demand that changes month by month: a plan whose workloads state `peak_by_month` is planned with one
day type per (day type, calendar month) — `weekday` becomes `weekday-2027-01`, `weekday-2027-02`, … — so
the program plans each month apart the way it plans each day type: reserved capacity stays one level for
the horizon, on-demand, spot and the API follow the month. A plan without monthly peaks is unchanged.

No solving, no I/O: a plan in, a plan out (pipeline.prepare calls it before candidates are built).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.plan import DayType, Plan, Workload
from optimizer.vocab import profile_for


def horizon_months(plan: Plan) -> list[str]:
    """The calendar months (YYYY-MM) the horizon touches, in order."""
    if plan.start_date is None:
        return []
    out: list[str] = []
    for k in range(plan.horizon_days):
        m = (plan.start_date + dt.timedelta(days=k)).strftime("%Y-%m")
        if not out or out[-1] != m:
            out.append(m)
    return out


def monthly(plan: Plan) -> bool:
    return any(w.demand is not None and w.demand.peak_by_month for w in plan.workloads)


def _apportion(total: int, weights: list[int]) -> list[int]:
    """Split `total` days in proportion to `weights` (calendar days), in whole days (largest remainder)."""
    s = sum(weights)
    if s == 0:
        return [0] * len(weights)
    exact = [total * w / s for w in weights]
    out = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def split_by_month(plan: Plan) -> tuple[dict[str, DayType], dict[str, tuple[str, str]]]:
    """The plan's day types cut by calendar month: new name → DayType, and new name → (day type, month).

    A day type's days (as the plan states them) are shared among the months in proportion to its
    calendar days in each (whole days); when the plan's counts match the calendar this is the calendar.
    """
    assert plan.start_date is not None
    months = horizon_months(plan)
    days = plan.day_type_days()
    weekdays = plan.day_type_weekdays()
    cal = {(d, m): 0 for d in days for m in months}
    for k in range(plan.horizon_days):
        date = plan.start_date + dt.timedelta(days=k)
        d = plan.day_type_of(date)
        if d is not None:
            cal[(d, date.strftime("%Y-%m"))] += 1
    types: dict[str, DayType] = {}
    origin: dict[str, tuple[str, str]] = {}
    for d, n in days.items():
        shares = _apportion(n, [cal[(d, m)] for m in months])
        if not any(cal[(d, m)] for m in months):  # a type the calendar never meets: evenly
            shares = _apportion(n, [1] * len(months))
        for m, k in zip(months, shares):
            if k <= 0:
                continue
            name = f"{d}-{m}"
            types[name] = DayType(days=k, days_of_week=list(weekdays[d]), month=m)
            origin[name] = (d, m)
    return types, origin


def _workload(w: Workload, origin: dict[str, tuple[str, str]], months: list[str]) -> Workload:
    if w.demand is None:
        return w
    base = w.demand.peak_output_tokens_per_s
    assert base is not None
    by_month = {m: (w.demand.peak_by_month or {}).get(m, base) for m in months}
    peak = max(by_month.values())
    profile = {name: [v * by_month[m] / peak for v in profile_for(w.demand.profile, d)]
               for name, (d, m) in origin.items()}
    demand = w.demand.model_copy(update={"peak_output_tokens_per_s": peak, "profile": profile})
    return w.model_copy(update={"demand": demand})


def expand(loaded: LoadedPlan) -> LoadedPlan:
    """The plan with one day type per (day type, month) when any workload's demand changes by month."""
    plan = loaded.plan
    if not monthly(plan) or plan.start_date is None:
        return loaded
    types, origin = split_by_month(plan)
    months = horizon_months(plan)
    workloads = [_workload(w, origin, months) for w in plan.workloads]
    return replace(loaded, plan=plan.model_copy(update={"day_types": types, "workloads": workloads}))
