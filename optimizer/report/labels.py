"""Words and groupings shared by the workbook and the HTML report (no I/O, no third-party imports)."""

from __future__ import annotations

import re
from typing import Any

from optimizer import formatting, vocab
from optimizer.results.decision import (  # noqa: F401  (the report's names for them)
    NOTHING_BINDS,
    Row,
    by_period,
    caps_that_bind,
    decide,
    facility_binds,
    facility_sentence,
    max_regret,
    regret_range,
    what_binds,
)
from optimizer.results.decision import same_money as _same_money
from optimizer.results.own import book_view
from optimizer.results.types import PlanResult, WorkloadResult

SHOWBACK_TIERS = {"committed": "signed before", "reserved": "reserved", "buy": "servers bought",
                  "facility": "energy, space, support", "on_demand": "on-demand", "spot": "spot", "api": "API",
                  "depreciation_owned": "depreciation of servers owned",
                  "cost_of_capital": "cost of capital (out of the book)", "risk": "scenario weighting",
                  "savings_plan": "savings plan (unused commitment)"}
"""The showback's tiers (results.showback) as the reports name them."""
TIER_COLORS = {"buy": "#5b4a8a", "facility": "#8a6d3b", "reserved": "#2f5d8a", "on_demand": "#e39b2d", "spot": "#7fae5a", "api": "#9b6fb0",
               "savings_plan": "#3f8f8a"}
DEMAND_COLOR = "#c0392b"
COMMITTED_COLOR = "#5b6770"
"""Contracts signed before the plan (plan `commitments`)."""
OWNED_COLOR = "#3b2f5e"
"""Servers the plan owns already (bought ones: TIER_COLORS["buy"])."""
POLICY_LABELS = {
    "occupancy": "Target occupancy", "memory_reserve": "Memory reserve", "spares": "Spare replicas",
    "rollout_fraction": "Rollout headroom", "tiers": "Purchase tiers allowed", "spot_pools": "Pools that may use spot",
    "mig_pools": "Pools that may use MIG slices",
    "share_pools": "Pools whose workloads may share GPUs", "share_mode": "How shared GPUs are shared",
    "share_slowdown": "Slowdown of a shared GPU (measured)", "providers": "Providers", "share_reserved_across_pools":
    "Reserved capacity shared across pools", "solver": "Solver", "time_limit_s": "Solver time limit (s)",
    "mip_gap": "Target gap", "change_threshold": "Change threshold (with a baseline)",
    "estimate_error": "Estimator error planned for", "risk": "Risk measure over the scenarios"}


def config_label(w: WorkloadResult) -> str:
    """How a chosen config reads in a Config column: TP degree, MIG slice, a reservation, or the API."""
    if w.offer is None:
        return "API only"
    if w.kind == "reserve":
        return f"{formatting.plural(w.gpus_at_peak, 'GPU')} held"
    engine = vocab.shown_engine(w.engine)
    return ((w.layout or vocab.parallel_label(w.tp, w.mig)) + (f" · {engine}" if engine else "")
            + (f" · shared ({vocab.SHARE_MODES.get(w.shared, w.shared)})" if w.shared else ""))


def choice_label(w: WorkloadResult) -> str:
    return vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout,
                              engine=vocab.shown_engine(w.engine), shared=w.shared)


def shared_lines(result: PlanResult) -> list[str]:
    """One line per group of workloads sharing GPUs (policy.share_pools): where, how, its GPUs at its busiest hour,
    and each member's share of every GPU's memory and of the group's time."""
    out = []
    for g in result.shared_gpus:
        members = ", ".join(f"{m.workload} ({m.memory_share:.0%} of memory, {m.time_share:.0%} of time)"
                            for m in g.members)
        out.append(f"{g.offer} · pool {g.pool} · {vocab.SHARE_MODES.get(g.mode, g.mode)} "
                   f"(slowdown {g.slowdown:.0%}): {formatting.plural(g.gpus_at_peak, 'GPU')} at "
                   f"{g.peak_hour:02d}:00 ({g.peak_day_type}), each holding {members}; together "
                   f"{g.memory_share:.0%} of each GPU's memory, {g.time_share:.0%} of its time")
    return out


def sizing_note(w: WorkloadResult) -> str:
    """Why a workload's replicas are not the peak-hour arithmetic (empty when they are)."""
    if w.offer is None:
        return "served entirely by the API: no replicas"
    if w.kind == "batch":
        return "batch: scheduled inside its window, not sized at a peak"
    if w.kind == "reserve":
        return "fixed reservation: GPUs held all day"
    return ""


def split_choice(w: WorkloadResult) -> str:
    """A split workload's choice: its configs."""
    return split_words(w) + ": " + " + ".join(w.split)


def split_words(w: WorkloadResult) -> str:
    """'split by request size among 2 configs', or, its traffic divided as a whole (one class), 'split among 2
    configs'."""
    how = " by request size" if len(w.size_classes) > 1 else ""
    return f"split{how} among {len(w.split)} configs"


def size_classes_text(w: WorkloadResult) -> str:
    """A split workload's request-size classes: '40% 250→100 · 20% 250→800 · …'."""
    return " · ".join(f"{k.share:.0%} {k.input:,.0f}→{k.output:,.0f}" for k in w.size_classes)


def split_sizing(result: PlanResult, w: WorkloadResult) -> list[str]:
    """A split workload's replica arithmetic at its peak: each config carries its share of each class's output
    tokens, at its goodput for that class's sizes, and is rounded to whole replicas on the sum."""
    occ = float(result.policy.get("occupancy", 1.0))
    weights = [k.share * k.output for k in w.size_classes]
    whole = sum(weights)
    sigma = [v / whole for v in weights] if whole else []
    lines = [w.peak_derivation.text()] if w.peak_derivation is not None else []
    lines.append(f"peak {w.peak_output_tokens_per_s:,.0f} output tok/s ({w.peak_day_type}, {w.peak_hour:02d}:00), "
                 "of which each size class carries its share of the output tokens: "
                 + " · ".join(f"{s:.1%}" for s in sigma))
    for label, z in w.split.items():
        g = w.split_goodput.get(label, [])
        load = sum(s * zb / gb for s, zb, gb in zip(sigma, z, g) if gb)
        x = w.split_configs.get(label)
        reps = f" → {x.replicas.base:,} base replicas, {x.replicas.total:,} with spares and rollout" if x else ""
        lines.append(f"{label}: Σ share of tokens × share served ÷ goodput = {load * 1e3:,.4f} replicas per 1,000 "
                     f"tok/s; × {w.peak_output_tokens_per_s:,.0f} ÷ {occ:.0%} occupancy = "
                     f"{w.peak_output_tokens_per_s * load / occ if occ else 0.0:,.2f}{reps}; "
                     f"{w.split_gpus_at_peak.get(label, 0):,} GPUs")
    lines.append(f"together {w.replicas.total:,} replicas, {w.gpus_at_peak:,} GPUs at the peak")
    return lines


def cost_keys(result: PlanResult) -> tuple[str, ...]:
    """The cost-by-tier keys a report lists: buy and facility first when the plan has hardware of its own."""
    return (*vocab.OWN_COST_KEYS, *vocab.COST_KEYS) if result.own is not None else vocab.COST_KEYS


def used_tiers(result: PlanResult) -> list[str]:
    """Purchase tiers priced by any offer in the result, in canonical order."""
    seen = {t for o in result.offers.values() for t in o.get("prices", {})}
    seen |= {p.tier for p in result.purchases}
    return [t for t in vocab.TIERS if t in seen]


ALTERNATIVES_INTRO = (
    "Each alternative priced in the program: the plan re-solved with that config forced and every other "
    "workload's choice kept, minus the plan's cost. It is never below −(proven gap × the plan's cost), and "
    "re-optimizing every workload around the alternative costs at most this, often much less (`planopt explain "
    "PLAN --workload NAME` does that). Rank 0 is the chosen config; standalone cost (its GPU-hours at the "
    "cheapest hourly tier) only ranks them.")

BASIS = {
    "chosen": "the chosen config",
    "optimal": "re-solved",
    "bounded": "at most this: best plan within the node limit",
    "infeasible": "no plan with the other workloads' choices kept",
    "not priced": "not priced: no plan within the solve's limits",
    "standalone": "standalone costs compared (a result from an older planopt)",
}


def alternative_figures(kind: str | None, goodput: float, source: str, gpus_at_peak: int) -> tuple[str, str, str]:
    """An alternative's goodput, its source and its GPUs at the peak as tables show them: a reservation has
    no goodput, a batch job no peak (it is scheduled in its window, not sized at an hour)."""
    held = kind == "reserve"
    return ("—" if held else f"{goodput:,.0f}", "—" if held else source,
            "—" if kind == "batch" else f"{gpus_at_peak:,}")


def alternative_difference(difference: float | None, money) -> str:
    """A priced difference, signed; a dash when there is none."""
    if difference is None:
        return "–"
    return ("+" if difference >= 0 else "−") + money(abs(difference))


def decision_lines(result: PlanResult, money) -> list[tuple[str, str]]:
    """What the plan asks of its reader, in order: (heading, sentence) pairs — the decision's rows
    (results.decision) without the caveats under them (`decision_rows` has those)."""
    return [(r.what, r.text) for r in decision_rows(result, money)]


def decision_rows(result: PlanResult, money) -> list[Row]:
    """The decision as console, HTML and workbook show it: each row's heading, sentence and caveats."""
    return decide(result, money).rows()


# --- scenarios -------------------------------------------------------------------------------------

SCENARIO_SEP = "~"
"""Between a day type and its scenario in a scenario plan's day types (inputs.scenarios.SEP)."""
MONTH = re.compile(r"-(\d{4}-\d{2})$")
"""A month's day type ends in its month (inputs.months: weekday-2027-01)."""


def risk_name(result: PlanResult) -> str:
    """The risk measure in words: 'expected cost', 'CVaR at 80%', 'worst case'."""
    return "" if result.risk is None else risk_words(result.risk.measure, result.risk.level)


def risk_words(measure: str, level: float | None) -> str:
    if measure == "cvar":
        return f"CVaR at {level:.0%}" if level is not None else "CVaR"
    return "worst case" if measure == "worst" else "expected cost"


def risk_meaning(result: PlanResult) -> str:
    """What the plan's total is over its scenarios."""
    risk = result.risk
    if risk is None:
        return ""
    if risk.measure == "cvar":
        tail = 1.0 - (risk.level or 0.0)
        return f"the mean cost of the costliest {tail:.0%} of outcomes by weight"
    if risk.measure == "worst":
        return "the costliest scenario's cost"
    return "Σ weight × cost over the scenarios"


def price_paid(result: PlanResult, p) -> float:
    """A purchase's price per GPU-hour as paid: with scenarios that move on-demand or spot prices, their blend
    (cost ÷ GPU-hours); otherwise the price."""
    if result.scenarios and p.tier in ("on-demand", "spot") and p.gpu_hours:
        return p.cost / p.gpu_hours
    return p.price_per_gpu_hour


def regret_text(result: PlanResult, name: str, money) -> str:
    """A scenario's regret in words: "$1,200", or "$1,200–$5,400" when its own solve was not proven."""
    if result.risk is None or name not in result.risk.regret:
        return "–"
    found, most = regret_range(result, name)
    return money(found) if _same_money(found, most) else f"{money(found)}–{money(most)}"


def regret_ranged(result: PlanResult) -> bool:
    """Some scenario's regret is a range (its own solve stopped short of the gap)."""
    return result.risk is not None and any(not _same_money(*regret_range(result, k)) for k in result.risk.regret)


def tiers_total(result: PlanResult) -> float:
    """Σ cost by tier: the plan's total, except under a cvar or worst-case measure (then the tiers are expected
    values over the scenarios and the total is the measure)."""
    return sum(result.cost_by_tier.values())


def risk_lines(result: PlanResult, money) -> list[str]:
    """The risk measure with expected and P90, and the value of the stochastic solution, in sentences."""
    risk = result.risk
    if risk is None:
        return []
    first = f"Risk measure: {risk_name(result)} ({risk_meaning(result)}) = {money(risk.value)}"
    if risk.measure != "expected":
        first += f"; expected {money(risk.expected)}"
    first += f"; P90 {money(risk.p90)}."
    if risk.measure != "expected":
        first += (f" Cost by tier shows expected values over the scenarios (they add up to {money(tiers_total(result))}); "
                  f"the plan's total is the {risk_name(result)}.")
    out = [first]
    if risk.mean_plan_returned and risk.mean_plan_cost is not None:
        span = risk.vss_range
        out.append("Value of the stochastic solution: this plan is the one decided for the mean scenario, run "
                   f"through every scenario ({money(risk.mean_plan_cost)}): the two-stage solve's own plan cost more "
                   "when its work limit (or the safety cap) stopped it" + (
                       f", and a two-stage plan may be worth up to {money(span[1])} more than it"
                       if span and span[1] > 0.5 else "") + " — raise policy.work_limit or --work-limit.")
    elif risk.mean_plan_cost is not None and risk.vss is not None:
        span = risk.vss_range
        out.append(f"Value of the stochastic solution: the plan decided for the mean scenario would cost "
                   f"{money(risk.mean_plan_cost)} by the same measure, this plan {money(risk.value)}: "
                   f"VSS {money(risk.vss)}" + (
                       f" — somewhere from {money(span[0])} to {money(span[1])}, as the solves behind it stopped "
                       "short of their gaps (each cost lies between its solve's bound and the plan found)."
                       if span else "."))
        if risk.vss < -0.5:
            out.append("The plan decided for the mean scenario costs less over these scenarios than this plan: this "
                       "program could have chosen it, so the time limit stopped this plan's solve early — raise "
                       "policy.time_limit_s or --time-limit.")
    else:
        out.append("Value of the stochastic solution: not computed (the mean scenario's plan could not be solved "
                   "or run through the scenarios).")
    basis = getattr(risk, "basis", "")
    if basis and basis != "optimal":
        out.append(f"VSS and regret are {basis}.")
    return out


def scenario_of(day_type: str) -> tuple[str, str | None, str | None]:
    """A program day type → (the plan's day type, its month or None, its scenario or None)."""
    base, sep, scn = day_type.rpartition(SCENARIO_SEP)
    if not sep:
        base, scn = day_type, None
    m = MONTH.search(base)
    return (base[: m.start()] if m else base), (m.group(1) if m else None), scn or None


def day_type_days(result: PlanResult, day_type: str, n: float | None = None) -> str:
    """A day type's days in words; a scenario's day type says they are its calendar days × its weight
    ("4.2 days: 21 × weight 0.2"), so nobody corrects them to 21."""
    n = result.day_types.get(day_type, 0.0) if n is None else n
    w = scenario_weight(result, day_type)
    if not w:
        return formatting.days_text(n)
    return f"{n:,.4g} days: {n / w:,.4g} × weight {w:.4g}"


def scenario_weight(result: PlanResult, day_type: str) -> float | None:
    """The weight of the scenario a day type of the program's copy belongs to (None outside scenarios)."""
    return next((x.weight for x in result.scenarios if x.name == scenario_of(day_type)[2]), None)


def month_fan(result: PlanResult) -> dict[str, Any] | None:
    """Per month, each scenario's peak GPUs demanded (the busiest hour of its day types in that month, all pools),
    against the GPUs held that month whatever the hour: reserved, bought (once delivered), owned and signed
    before (the fewest held on any day of the month, where a contract ends or servers arrive in it). None
    without months."""
    if not result.scenarios:
        return None
    at: dict[tuple[str, str, int], float] = {}
    for period, h in by_period(result):
        _base, month, scn = scenario_of(h.day_type)
        if month is not None and scn is not None:
            at[(h.day_type, period, h.hour)] = at.get((h.day_type, period, h.hour), 0.0) + h.demand_gpus
    peak: dict[tuple[str, str], float] = {}
    for (d, _p, _h), v in at.items():
        _base, month, scn = scenario_of(d)
        key = (month, scn)  # type: ignore[assignment]
        peak[key] = max(peak.get(key, 0.0), v)  # type: ignore[arg-type]
    if not peak:
        return None
    months = sorted({m for m, _s in peak})
    names = [s.name for s in result.scenarios]
    return {"months": months, "scenarios": names,
            "peak": {s: [peak.get((m, s), 0.0) for m in months] for s in names},
            "held": [held_in_month(result, m) for m in months]}


def held_in_month(result: PlanResult, month: str) -> int:
    """GPUs held every hour of a month (YYYY-MM): reserved, bought and delivered, owned, signed before — the
    fewest on any day of it."""
    reserved = sum(p.gpus for p in result.purchases if p.tier in vocab.RESERVED_TIERS)
    bought = result.own.bought if result.own is not None else []
    if not result.periods:  # nothing starts or ends inside the horizon
        return (reserved + sum(b.gpus for b in bought) + sum(c.gpus for c in result.commitments)
                + (sum(o.gpus for o in result.own.owned) if result.own is not None else 0))
    first = f"{month}-01"
    last = f"{month}-31"  # ISO dates compare as text: no month has a 32nd
    held = []
    for p in result.periods:
        if p.start is not None and p.end is not None and (p.end < first or p.start > last):
            continue
        arrived = sum(b.gpus for b in bought if b.delivery_date is None or p.start is None or b.delivery_date <= p.start)
        started = sum(r.gpus for r in result.purchases if r.tier in vocab.RESERVED_TIERS  # a renewal from its start
                      and (r.start is None or p.start is None or r.start <= p.start))
        held.append(started + arrived + sum(p.committed.values()))
    return min(held, default=reserved)


def book_line(result: PlanResult, money) -> str | None:
    """The book view in one sentence, bridged from the all-in (results.own.book_view): None without hardware
    of your own."""
    b = book_view(result)
    if b is None:
        return None
    return (f"Book view (P&L) {money(b.total)} = depreciation of servers owned {money(b.depreciation_owned)} + "
            f"bought {money(b.depreciation_bought)} + opex {money(b.opex)}; from the all-in: {money(b.all_in)} "
            f"+ owned depreciation − cost of capital {money(b.cost_of_capital)} (shown apart: not an expense)")


def config_changes(w, first: bool = False) -> list:
    """A moving workload's configs by contract period (WorkloadResult.configs_by_period), only where the config
    changes (a month plan has a period a month, most of them alike); with `first` the first period too."""
    out, last = [], None
    for i, x in enumerate(w.configs_by_period):
        if x.key != last and (first or i > 0):
            out.append(x)
        last = x.key
    return out
