"""Workbook sheets that read Assumptions and Purchases: Hourly, Workloads, Supply, Summary, and the lists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlsxwriter.utility import xl_col_to_name

from optimizer.results.types import HourlySupply, PlanResult
from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet, ceil_clean, ceil_formula, excel_round, ref, rng

if TYPE_CHECKING:
    from optimizer.report.xlsx.workbook import Refs


def hourly_rows(result: PlanResult) -> list[HourlySupply]:
    order = {d: i for i, d in enumerate(result.day_types)}
    periods = {p.label: i for i, p in enumerate(result.periods)}
    return sorted(result.hourly, key=lambda h: (h.offer, h.pool, periods.get(h.period, -1), order.get(h.day_type, 99),
                                                h.day_type, h.hour))


WHOLE_HORIZON = "whole horizon"
"""Period of an hourly row on an offer whose committed GPUs do not change inside the horizon."""


def _days_share(result: PlanResult, h: HourlySupply) -> tuple[float, float] | None:
    """A contract period's share of a day type's days, as (numerator, denominator); None: all of them."""
    for p in result.periods:
        if p.label == h.period:
            total = sum(q.calendar_days.get(h.day_type, 0) for q in result.periods)
            if total:
                return p.calendar_days.get(h.day_type, 0), total
            return p.days, result.horizon_days
    return None


def row_days(result: PlanResult, h: HourlySupply) -> float:
    """Days an hourly row stands for, computed as its Days formula computes them."""
    n = result.day_types.get(h.day_type, 0)
    share = _days_share(result, h)
    return n if share is None else n * share[0] / share[1]


# --- Hourly: GPUs per offer, pool, day type and hour ------------------------------------------

HOURLY_COLS = ("offer", "pool", "day_type", "hour", "days", "demand", "reserved", "od", "spot", "od_gh", "spot_gh")


def write_hourly(sh: Sheet, result: PlanResult, refs: "Refs") -> None:
    ws = sh.ws
    sh.widths([28, 14, 12, 8, 8, 11, 11, 11, 11, 14, 14])
    sh.text(0, 0, "Hourly: GPUs per offer, pool, day type and hour", "title")
    sh.intro(1, "Reserved in use = reserved GPUs lent to the pool at that hour. GPU-hours = GPUs × 1 hour × "
                  "the days of the day type (Assumptions). Filter with the header arrows.", 10, 2)
    head = 3
    committed = bool(result.commitments)
    cols = HOURLY_COLS + (("committed", "period") if committed else ())
    sh.header(head, 0, ["Offer", "Pool", "Day type", "Hour", "Days", "GPUs demanded", "Reserved in use",
                        "On-demand GPUs", "Spot GPUs", "On-demand GPU-hours", "Spot GPU-hours"]
              + (["Committed in use (signed before)", "Contract period"] if committed else []))
    if committed:
        ws.set_column(11, 11, 13)
        ws.set_column(12, 12, 24)
    ws.set_row(head, 30)
    rows = hourly_rows(result)
    r = head
    for h in rows:
        r += 1
        n = row_days(result, h)
        sh.text(r, 0, h.offer)
        sh.text(r, 1, h.pool)
        sh.text(r, 2, h.day_type)
        sh.num(r, 3, h.hour, "value", "center", num="hour")
        share = _days_share(result, h)
        days_f = refs.days[h.day_type] if share is None else f"{refs.days[h.day_type]}*{share[0]:g}/{share[1]:g}"
        sh.calc(r, 4, days_f, n, num="int" if share is None else "dec2")
        if committed:
            sh.num(r, 11, h.committed_gpus, num="int")
            sh.text(r, 12, h.period or WHOLE_HORIZON)
        sh.num(r, 5, h.demand_gpus, num="int")
        sh.num(r, 6, h.reserved_gpus, num="int")
        sh.num(r, 7, h.on_demand_gpus, num="int")
        sh.num(r, 8, h.spot_gpus, num="int")
        sh.calc(r, 9, f"H{r + 1}*E{r + 1}", h.on_demand_gpus * n, num="int")
        sh.calc(r, 10, f"I{r + 1}*E{r + 1}", h.spot_gpus * n, num="int")
    last = max(r, head + 1)
    for i, key in enumerate(cols):
        refs.hourly[key] = rng(sh.name, head + 1, last, i)
    ws.freeze_panes(head + 1, 0)
    ws.autofilter(head, 0, last, len(cols) - 1)
    sh.page(last, len(cols) - 1, header_rows=(head, head), landscape=False)


# --- Workloads: the choice, memory, and the replica arithmetic as formulas -----------------------

W_HEAD = ["Workload", "Pool", "Kind", "Model", "Offer", "Accelerator", "Precision", "Config", "GPUs per replica",
          "Goodput (output tok/s per replica)", "Goodput source", "Goodput bound by",
          "Memory", "Weights", "KV per sequence", "Reserve", "Free for KV", "Sequences that fit",
          "Sequences needed",
          "Peak hour", "Peak demand (output tok/s)", "Sent to API at the peak (tok/s)", "Base replicas", "Spares",
          "Rollout", "Total replicas", "GPUs needed", "GPUs in the fleet at the peak",
          "GPU-hours", "Share of tokens to API", "Cost over the horizon", "Cost per day", "Note"]
W_GROUPS = [(0, 11, "Choice"), (12, 18, "Memory per replica (GB)"),
            (19, 27, "Sizing at the peak hour: base = ⌈(peak − API) ÷ (goodput × occupancy)⌉"),
            (28, 32, "Over the horizon")]
C = {name: i for i, name in enumerate(["name", "pool", "kind", "model", "offer", "acc", "prec", "config", "gpr",
                                       "goodput", "source", "bound", "mem", "weights", "kv", "reserve", "free",
                                       "fit", "need", "peak_at", "peak", "api", "base", "spares", "rollout",
                                       "total", "gpus", "fleet", "gh", "share", "cost", "per_day", "note"])}


def _col(key: str, row: int) -> str:
    return f"{xl_col_to_name(C[key])}{row + 1}"


def write_workloads(sh: Sheet, result: PlanResult, refs: "Refs") -> None:
    ws = sh.ws
    sh.widths([18, 10, 9, 15, 20, 9, 8, 11, 8, 10, 9, 10, 7, 7, 7, 7, 7, 8, 8,
               14, 11, 11, 8, 7, 7, 8, 8, 9, 12, 9, 14, 11, 44])
    sh.text(0, 0, "Workloads: what each one runs on, why it fits, and how many replicas", "title")
    sh.intro(1, "Replicas at each workload's peak hour: base = ⌈(peak − sent to API) ÷ (goodput × occupancy)⌉, "
                  "rollout = ⌈rollout share × (base + spares)⌉ (quotients rounded to 4 decimals first). They "
                  "follow occupancy, spares and rollout on Assumptions; the fleet's GPUs (grey) do not. Cost: the "
                  "offer's cost shared by GPU-hours, plus the workload's API cost.", 18, 3)
    for a, b, label in W_GROUPS:
        ws.merge_range(2, a, 2, b, "", sh.fmt("group"))
        sh.text(2, a, label, "group")
    head = 3
    sh.header(head, 0, W_HEAD)
    ws.set_row(head, 45)
    occ, spares, roll = refs.policy["occupancy"], refs.policy["spares"], refs.policy["rollout_fraction"]
    pol = result.policy
    first = head + 1
    last = head + max(len(result.workloads), 1)
    gh_rng, offer_rng = rng(sh.name, first, last, C["gh"]), rng(sh.name, first, last, C["offer"])
    offer_gh: dict[str, float] = {}
    for w in result.workloads:
        if w.offer:
            offer_gh[w.offer] = offer_gh.get(w.offer, 0.0) + w.gpu_hours
    offer_cost: dict[str, float] = {}
    for p in refs.purchase_rows:
        offer_cost[p["offer"]] = offer_cost.get(p["offer"], 0.0) + p["cost_value"]
    total_cost = 0.0
    r = head
    for w in result.workloads:
        r += 1
        sized = w.kind == "interactive" and w.offer is not None and w.goodput_output_tokens_per_s > 0
        texts = {"name": w.name, "pool": w.pool, "kind": w.kind, "model": w.model or "–", "offer": w.offer or "",
                 "acc": w.accelerator or "–", "prec": w.precision or "–", "config": L.config_label(w),
                 "source": w.goodput_source if w.kind != "reserve" else "–", "bound": w.bound or "–",
                 "peak_at": f"{w.peak_day_type} {w.peak_hour:02d}:00" if sized else "–"}
        for k, v in texts.items():
            sh.text(r, C[k], v)
        sh.num(r, C["gpr"], w.gpus_per_replica, num="dec2")
        has_mem = w.offer is not None and w.kind != "reserve"
        sh.num(r, C["goodput"], w.goodput_output_tokens_per_s if has_mem else None, num="int")
        for k, v, nf in (("mem", w.total_gb, "dec1"), ("weights", w.weights_gb, "dec1"), ("kv", w.kv_gb_per_seq, "dec3"),
                         ("reserve", w.reserve_gb, "dec1"), ("free", w.free_gb, "dec1"),
                         ("fit", w.kv_concurrency, "int"), ("need", w.needed_concurrency, "int")):
            sh.num(r, C[k], v if has_mem else None, num=nf)
        note = L.sizing_note(w)
        api_peak = 0.0
        if sized:
            api_peak = excel_round(w.hourly_api_tokens_per_s.get(w.peak_day_type, [0.0] * 24)[w.peak_hour], 3) \
                if w.hourly_api_tokens_per_s else 0.0
            sh.num(r, C["peak"], w.peak_output_tokens_per_s, num="int")
            sh.num(r, C["api"], api_peak, num="int")
            note = _replica_formulas(sh, r, w, api_peak, float(pol.get("occupancy", 1.0)),
                                     int(pol.get("spares", 0)), float(pol.get("rollout_fraction", 0.0)),
                                     occ, spares, roll) or note
        else:
            sh.num(r, C["peak"], None)
            sh.num(r, C["api"], None)
            for k, v in (("base", w.replicas.base), ("spares", w.replicas.spares), ("rollout", w.replicas.rollout),
                         ("total", w.replicas.total)):
                sh.num(r, C[k], v if w.offer else None, num="int")
            sh.num(r, C["gpus"], w.gpus_at_peak if w.offer else None, num="int")
        sh.num(r, C["fleet"], w.gpus_at_peak, num="int")
        sh.num(r, C["gh"], w.gpu_hours, num="int")
        sh.num(r, C["share"], w.api_share, num="pct")
        # cost: the offer's cost shared by GPU-hours (as planopt allocates it) + the workload's API cost
        parts, value = [], 0.0
        if w.offer:
            o = _col("offer", r)
            tot = f'SUMIFS({gh_rng},{offer_rng},"="&{o})'
            parts.append(f'IF({tot}=0,0,{_col("gh", r)}/{tot}*SUMIFS({refs.purchases["cost"]},'
                         f'{refs.purchases["offer"]},"="&{o}))')
            tot_v = offer_gh.get(w.offer, 0.0)
            value = 0.0 if tot_v == 0 else w.gpu_hours / tot_v * offer_cost.get(w.offer, 0.0)
        if w.name in refs.api_cost:
            cell, v = refs.api_cost[w.name]
            parts.append(cell)
            value += v
        sh.calc(r, C["cost"], "+".join(parts) or "0", value, num="money0")
        sh.calc(r, C["per_day"], f'{_col("cost", r)}/{refs.horizon}', value / refs.horizon_days, num="money0")
        total_cost += value
        sh.text(r, C["note"], note, "note")
        sh.fit_row(r, note, 44)
    # Capacity bought on offers no workload uses has no workload to be charged to: show it.
    r += 1
    idle_v = sum(refs.tier_cost.values()) + (refs.api_total[1] if refs.api_total else 0.0) - total_cost
    sh.text(r, 0, "Not used by any workload")
    sh.calc(r, C["cost"], f"total_cost-SUM({rng(sh.name, first, last, C['cost'])})", idle_v, num="money0")
    sh.calc(r, C["per_day"], f"{_col('cost', r)}/{refs.horizon}", idle_v / refs.horizon_days, num="money0")
    sh.text(r, C["note"], "capacity bought that no chosen config uses at any hour", "note")
    total_cost += idle_v
    r += 1
    sh.text(r, 0, "Total", "total")
    for c in range(1, C["cost"]):
        sh.text(r, c, "", "total")
    sh.calc(r, C["cost"], f"SUM({rng(sh.name, first, r - 1, C['cost'])})", total_cost, "total", num="money0")
    sh.calc(r, C["per_day"], f"{_col('cost', r)}/{refs.horizon}", total_cost / refs.horizon_days, "total",
            num="money0")
    ws.freeze_panes(head + 1, 1)
    sh.page(r, C["note"], header_rows=(2, head))
    # two pages wide: the choice and memory, then the sizing and cost, each with the workload names
    ws.fit_to_pages(0, 0)
    ws.set_print_scale(52)
    ws.set_v_pagebreaks([C["peak_at"]])
    ws.repeat_columns(0, 0)


def _replica_formulas(sh: Sheet, r: int, w, api_peak: float, occ_v: float, spares_v: int, roll_v: float,
                      occ: str, spares: str, roll: str) -> str:
    """Write base, spares, rollout, total and GPUs needed as formulas; values computed the same way.

    Returns a note when planopt's counts differ from the arithmetic (then its counts are written).
    """
    base = ceil_clean((w.peak_output_tokens_per_s - api_peak) / (w.goodput_output_tokens_per_s * occ_v))
    rollout = ceil_clean(roll_v * (base + spares_v))
    total = base + spares_v + rollout
    gpus = ceil_clean(total * w.gpus_per_replica)
    rep = w.replicas
    if (base, spares_v, rollout, total) != (rep.base, rep.spares, rep.rollout, rep.total):
        for k, v in (("base", rep.base), ("spares", rep.spares), ("rollout", rep.rollout), ("total", rep.total),
                     ("gpus", w.gpus_at_peak)):
            sh.num(r, C[k], v, num="int")
        return (f"planopt's counts at the peak: the solver chose {rep.base} base replicas where the arithmetic "
                f"gives {base}; written as values")
    sh.calc(r, C["base"], ceil_formula(f'({_col("peak", r)}-{_col("api", r)})/({_col("goodput", r)}*{occ})'),
            base, num="int")
    sh.calc(r, C["spares"], spares, spares_v, num="int")
    sh.calc(r, C["rollout"], ceil_formula(f'{roll}*({_col("base", r)}+{_col("spares", r)})'), rollout, num="int")
    sh.calc(r, C["total"], f'{_col("base", r)}+{_col("spares", r)}+{_col("rollout", r)}', total, num="int")
    sh.calc(r, C["gpus"], ceil_formula(f'{_col("total", r)}*{_col("gpr", r)}'), gpus, num="int")
    if api_peak > 0:
        return f"{api_peak:,.0f} output tok/s of the peak go to the API"
    return ""


# --- Supply: GPUs by tier over the day, per day type, with demand (and charts) -------------------

SUPPLY_SERIES = (("reserved", "Reserved in use", L.TIER_COLORS["reserved"]),
                 ("od", "On-demand", L.TIER_COLORS["on_demand"]),
                 ("spot", "Spot", L.TIER_COLORS["spot"]))


def write_supply(sh: Sheet, result: PlanResult, refs: "Refs") -> None:
    ws, wb = sh.ws, sh.book.wb
    sh.widths([10, 12, 12, 12, 12, 12, 3])
    sh.text(0, 0, "Supply: GPUs by tier over the day, against demand", "title")
    sh.intro(1, "Sums of Hourly over offers and pools. Spot counts here at full size; batch work plans for its "
                  "interruptions, so spot supply can exceed demand.", 5, 4)
    sh.text(2, 0, "Reserved GPUs held (all offers, every hour)")
    held_v = sum(p["gpus"] for p in refs.purchase_rows if p["tier"] in L.RESERVED_TIERS)
    held_f = "+".join(f'SUMIFS({refs.purchases["gpus"]},{refs.purchases["tier"]},"{t}")' for t in L.RESERVED_TIERS)
    sh.calc(2, 4, held_f, held_v, "big", num="int")
    held = ref(sh.name, 2, 4)
    rows = hourly_rows(result)
    committed = bool(result.commitments)
    if committed:
        ws.set_column(6, 6, 12)
    r = 4
    # With contracts that start or end inside the horizon: one section per day type and period
    # (rows of offers whose committed GPUs never change apply to every period).
    sections = [(d, n, None) for d, n in result.day_types.items()] if not result.periods else \
        [(d, p.day_types[d], p.label) for p in result.periods for d in result.day_types if p.day_types.get(d)]
    for d, n, period in sections:
        title_row = r
        sh.text(r, 0, d, "h2")
        days_txt = f"{n:g} days in the plan" if period is None else f"{period}: {n:,.2f} {d} days".replace(".00 ", " ")
        sh.text(r, 1, f"{days_txt}; GPUs in use at each hour", "subtitle")
        if period is not None:
            sh.text(r, 6, period, "value")
        r += 1
        sh.header(r, 0, ["Hour", "GPUs demanded", "Reserved in use", "On-demand", "Spot", "Reserved held"]
                  + (["Committed in use"] if committed else []))
        ws.set_row(r, 30)
        first = r + 1
        day = f"$A${title_row + 1}"
        for hour in range(24):
            r += 1
            sh.num(r, 0, hour, "value", "center", num="hour")
            at = [h for h in rows if h.day_type == d and h.hour == hour and h.period in ("", period)]
            for c, key, attr in ((1, "demand", "demand_gpus"), (2, "reserved", "reserved_gpus"),
                                 (3, "od", "on_demand_gpus"), (4, "spot", "spot_gpus"),
                                 (6, "committed", "committed_gpus")):
                if c == 6 and not committed:
                    continue
                if period is None:
                    v = sum(getattr(h, attr) for h in at)
                    f = f'SUMIFS({refs.hourly[key]},{refs.hourly["day_type"]},"="&{day},{refs.hourly["hour"]},$A{r + 1})'
                else:  # this period's rows, then those that hold all horizon (added in the formula's order)
                    v = sum(getattr(h, attr) for h in at if h.period) + sum(getattr(h, attr) for h in at if not h.period)
                    f = "+".join(f'SUMIFS({refs.hourly[key]},{refs.hourly["day_type"]},"="&{day},'
                                 f'{refs.hourly["hour"]},$A{r + 1},{refs.hourly["period"]},"="&{p})'
                                 for p in (f"$G${title_row + 1}", f'"{WHOLE_HORIZON}"'))
                sh.calc(r, c, f, v, num="int")
            sh.calc(r, 5, held, held_v, num="int")
        _supply_chart(sh, wb, title_row, first, r, with_held=held_v > 0, committed=committed)
        r += 3
    ws.freeze_panes(3, 0)
    sh.page(r, 20)


def _supply_chart(sh: Sheet, wb, title_row: int, first: int, last: int, with_held: bool,
                  committed: bool = False) -> None:
    name = sh.name
    cats = [name, first, 0, last, 0]
    col = wb.add_chart({"type": "column", "subtype": "stacked"})
    if committed:
        col.add_series({"name": [name, first - 1, 6], "categories": cats, "values": [name, first, 6, last, 6],
                        "fill": {"color": L.COMMITTED_COLOR}, "border": {"none": True}, "gap": 30})
    for i, (_, label, color) in enumerate(SUPPLY_SERIES, start=2):
        col.add_series({"name": [name, first - 1, i], "categories": cats, "values": [name, first, i, last, i],
                        "fill": {"color": color}, "border": {"none": True}, "gap": 30})
    line = wb.add_chart({"type": "line"})
    line.add_series({"name": [name, first - 1, 1], "categories": cats, "values": [name, first, 1, last, 1],
                     "line": {"color": L.DEMAND_COLOR, "width": 2.25}, "marker": {"type": "none"}})
    if with_held:
        line.add_series({"name": [name, first - 1, 5], "categories": cats, "values": [name, first, 5, last, 5],
                         "line": {"color": "#1f3864", "width": 1.5, "dash_type": "dash"},
                         "marker": {"type": "none"}})
    col.combine(line)
    col.set_title({"name": [name, title_row, 0], "name_font": {"size": 11}})
    col.set_x_axis({"name": "Hour of day", "num_format": '00":00"', "num_font": {"rotation": -45, "size": 8}})
    col.set_y_axis({"name": "GPUs", "num_format": "#,##0", "major_gridlines": {"visible": True,
                                                                                 "line": {"color": "#E0E0E0"}}})
    col.set_legend({"position": "bottom"})
    col.set_size({"width": 760, "height": 440})
    sh.ws.insert_chart(title_row, 7, col, {"x_offset": 10, "y_offset": 5})


# --- Alternatives and Dropped ----------------------------------------------------------------

def write_alternatives(sh: Sheet, result: PlanResult) -> None:
    ws = sh.ws
    sh.widths([20, 6, 40, 14, 11, 11, 16, 16])
    sh.text(0, 0, "Alternatives: the next best configs per workload", "title")
    sh.intro(1, "A quick standalone comparison: each config's GPU-hours at its offer's cheapest hourly tier, "
                  "the chosen config priced the same way. `planopt explain PLAN --workload NAME` re-solves the "
                  "whole plan for exact differences.", 7, 2)
    head = 3
    sh.header(head, 0, ["Workload", "Rank", "Config", "Goodput (output tok/s)", "Goodput source",
                        "GPUs at the peak", "Standalone cost", "More than the chosen config"])
    ws.set_row(head, 30)
    r = head
    for a in result.alternatives:
        r += 1
        sh.text(r, 0, a.workload)
        sh.num(r, 1, a.rank, num="int")
        sh.text(r, 2, a.label)
        sh.num(r, 3, a.goodput_output_tokens_per_s, num="int")
        sh.text(r, 4, a.goodput_source)
        sh.num(r, 5, a.gpus_at_peak, num="int")
        sh.num(r, 6, a.standalone_cost, num="money0")
        sh.num(r, 7, a.difference, num="money0")
    if not result.alternatives:
        r += 1
        sh.text(r, 0, "No alternatives: every workload had a single config.", "note")
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(r, head + 1), 7)
    sh.page(r, 7, header_rows=(head, head))


def write_dropped(sh: Sheet, result: PlanResult) -> None:
    ws = sh.ws
    sh.widths([20, 34, 11, 100])
    sh.text(0, 0, "Dropped: options that could not work, and why", "title")
    sh.intro(1, "Filtered before solving: does not fit, not native, beyond the scale-up domain, no allowed "
                  "tier, or dominated by a config that is never worse.", 3, 2)
    head = 3
    sh.header(head, 0, ["Workload", "Option", "Why", "Detail"])
    r = head
    for x in result.dropped:
        r += 1
        sh.text(r, 0, x.workload)
        sh.text(r, 1, x.option)
        sh.text(r, 2, x.family)
        sh.text(r, 3, x.reason, "wrap")
        sh.fit_row(r, x.reason, 100)
    if not result.dropped:
        r += 1
        sh.text(r, 0, "Nothing was dropped.", "note")
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(r, head + 1), 3)
    sh.page(r, 3, header_rows=(head, head))
