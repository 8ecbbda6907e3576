"""Words and groupings shared by the workbook and the HTML report (no I/O, no third-party imports)."""

from __future__ import annotations

from optimizer import vocab
from optimizer.results.types import PlanResult, WorkloadResult

TIER_COLORS = {"buy": "#5b4a8a", "facility": "#8a6d3b", "reserved": "#2f5d8a", "on_demand": "#e39b2d", "spot": "#7fae5a", "api": "#9b6fb0"}
DEMAND_COLOR = "#c0392b"
COMMITTED_COLOR = "#5b6770"
"""Contracts signed before the plan (plan `commitments`)."""
OWNED_COLOR = "#3b2f5e"
"""Servers the plan owns already (bought ones: TIER_COLORS["buy"])."""
POLICY_LABELS = {
    "occupancy": "Target occupancy", "memory_reserve": "Memory reserve", "spares": "Spare replicas",
    "rollout_fraction": "Rollout headroom", "tiers": "Purchase tiers allowed", "spot_pools": "Pools that may use spot",
    "mig_pools": "Pools that may use MIG slices", "providers": "Providers", "share_reserved_across_pools":
    "Reserved capacity shared across pools", "solver": "Solver", "time_limit_s": "Solver time limit (s)",
    "mip_gap": "Target gap", "change_threshold": "Change threshold (with a baseline)"}


def config_label(w: WorkloadResult) -> str:
    """How a chosen config reads in a Config column: TP degree, MIG slice, a reservation, or the API."""
    if w.offer is None:
        return "API only"
    if w.kind == "reserve":
        return f"{vocab.plural(w.gpus_at_peak, 'GPU')} reserved"
    return w.layout or vocab.parallel_label(w.tp, w.mig)


def choice_label(w: WorkloadResult) -> str:
    return vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout)


def sizing_note(w: WorkloadResult) -> str:
    """Why a workload's replicas are not the peak-hour arithmetic (empty when they are)."""
    if w.offer is None:
        return "served entirely by the API: no replicas"
    if w.kind == "batch":
        return "batch: scheduled inside its window, not sized at a peak"
    if w.kind == "reserve":
        return "fixed reservation: GPUs held all day"
    return ""


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
    "workload's choice kept, minus the plan's cost. It is never below −(proven gap × the plan's cost), and it "
    "is at most what re-optimizing every workload around it would cost (`planopt explain PLAN --workload NAME` "
    "does that). Rank 0 is the chosen config; standalone cost (its GPU-hours at the cheapest hourly tier) only "
    "ranks them.")

BASIS = {
    "chosen": "the chosen config",
    "optimal": "re-solved",
    "bounded": "at most this: best plan within the node limit",
    "infeasible": "no plan with the other workloads' choices kept",
    "not priced": "not priced: no plan within the solve's limits",
    "standalone": "standalone costs compared (a result from an older planopt)",
}


def alternative_difference(difference: float | None, money) -> str:
    """A priced difference, signed; a dash when there is none."""
    if difference is None:
        return "–"
    return ("+" if difference >= 0 else "−") + money(abs(difference))


def caps_that_bind(result: PlanResult) -> list:
    """What binds the plan: caps and overflow limits. What limits a config's goodput (TPOT, TTFT,
    memory) belongs to its workload's row, not here."""
    return [b for b in result.binding if b.family != "goodput"]


def facility_sentence(result: PlanResult, limit: str, money) -> str:
    """One binding facility limit, with what one more MW or rack would save (when re-solved)."""
    f = result.own.facility  # type: ignore[union-attr]
    if limit == "power_kw":
        text = f"facility power: {f.power_kw_used:,.0f} of {f.power_kw:,.0f} kW taken by servers"
        more = f.marginal.get("power_kw_plus_1000")
        if more is not None:
            text += f"; one more MW would save {money(more)}"
    else:
        text = f"facility racks: {f.racks_used} of {f.racks} rack positions taken"
        more = f.marginal.get("racks_plus_1")
        if more is not None:
            text += f"; one more rack would save {money(more)}"
    return text


def decision_lines(result: PlanResult, money) -> list[tuple[str, str]]:
    """What the plan asks of its reader, in order: (heading, sentence) pairs for console, HTML and
    workbook — reservations to sign, the all-in spend, the caps that bind, capacity on hourly tiers."""
    out = []
    days = f"{result.horizon_days} day{'' if result.horizon_days == 1 else 's'}"
    for n in result.new_commitments:
        last = f", last day {n.end}" if n.end else f", {n.end_text}"
        out.append(("Sign", f"{n.gpus} GPUs of {n.offer} {n.tier} at {money(n.price_per_gpu_hour, 2)}/GPU-hour: "
                            f"{money(n.monthly)} a month, {money(n.total_committed)} over the term{last}"))
    if not result.new_commitments:
        out.append(("Sign", "no new reservation"))
    own = result.own
    if own is not None:
        for b in own.bought:
            out.append(("Buy", b.decision))
        if not own.bought and any(r.offer for r in own.break_even):
            out.append(("Buy", "no server: renting is cheaper at this plan's prices and demand"))
    spend = f"{money(result.cost_all_in)} all-in for the {days}"
    if result.cost_committed:
        spend += f" = {money(result.cost_total)} new spend + {money(result.cost_committed)} already committed"
    if result.cost_idle > 0.5:
        spend += f"; {money(result.cost_idle)} of the new spend buys GPU-hours no workload uses at that hour"
    if own is not None and own.capex:
        spend += f"; the servers bought cost {money(own.capex)} in cash at delivery (the spend counts this horizon's share)"
    out.append(("Spend", spend))
    caps = caps_that_bind(result)
    for b in caps:
        out.append(("Binds", f"{b.what}: {b.detail}"))
    if own is not None:
        for limit in own.facility.binding:
            out.append(("Binds", facility_sentence(result, limit, money)))
        caps = caps or own.facility.binding  # type: ignore[assignment]
    if not caps:
        out.append(("Binds", "no cap or overflow limit binds"))
    hourly: dict[tuple[str, str, int], list[int]] = {}
    for h in result.hourly:
        k = (h.day_type, h.period, h.hour)
        row = hourly.setdefault(k, [0, 0])
        row[0] += h.on_demand_gpus
        row[1] += h.spot_gpus
    if hourly:
        (d, period, hour), (od, sp) = max(hourly.items(), key=lambda kv: (sum(kv[1]), kv[0]))
        if od + sp:
            when = f"{d} {hour:02d}:00" + (f", {period}" if period else "")
            out.append(("Hourly", f"{od + sp} GPUs rest on hourly capacity at its busiest hour ({when}): "
                                  f"{od} on-demand, {sp} spot — not guaranteed where a provider runs short"))
    return out
