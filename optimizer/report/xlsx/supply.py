"""Supply: GPUs by tier over the day, per day type, with demand (and charts)."""

from __future__ import annotations

from optimizer import vocab
from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet, ref
from optimizer.report.xlsx.hourly import WHOLE_HORIZON, hourly_rows
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult

SUPPLY_SERIES = (("reserved", "Reserved in use", L.TIER_COLORS["reserved"]),
                 ("od", "On-demand", L.TIER_COLORS["on_demand"]),
                 ("spot", "Spot", L.TIER_COLORS["spot"]))


def write_supply(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws, wb = sh.ws, sh.book.wb
    sh.widths([10, 12, 12, 12, 12, 12, 3])
    sh.text(0, 0, "Supply: GPUs by tier over the day, against demand", "title")
    sh.intro(1, "Sums of Hourly over offers and pools. Spot counts here at full size; batch work plans for its "
                  "interruptions, so spot supply can exceed demand.", 5, 4)
    own = result.own is not None
    # servers bought are held every hour like reservations (Hourly shows them as reserved in use)
    tiers = (*vocab.RESERVED_TIERS, "buy") if own else vocab.RESERVED_TIERS
    sh.text(2, 0, "Reserved or bought GPUs held (all offers, every hour)" if own else
            "Reserved GPUs held (all offers, every hour)")
    held_v = sum(p["gpus"] for p in refs.purchase_rows if p["tier"] in tiers)
    held_f = "+".join(f'SUMIFS({refs.purchases["gpus"]},{refs.purchases["tier"]},"{t}")' for t in tiers)
    sh.calc(2, 4, held_f, held_v, "big", num="int")
    held = ref(sh.name, 2, 4)
    waiting = _not_delivered(result, refs)  # period → (formula, GPUs) of servers bought not yet delivered in it
    rows = hourly_rows(result)
    committed = "committed" in refs.hourly  # contracts signed before, or servers owned: Hourly's column
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
        if period is None and d in refs.days:  # the days on Assumptions, as they are edited
            sh.calc(r, 1, f'{refs.days[d]}&" days in the plan; GPUs in use at each hour"',
                    f"{n:g} days in the plan; GPUs in use at each hour", "subtitle")  # type: ignore[arg-type]
        else:
            days_txt = (f"{L.day_type_days(result, d, n)} in the plan" if period is None
                        else f"{period}: {L.day_type_days(result, d, n)}")
            sh.text(r, 1, f"{days_txt}; GPUs in use at each hour", "subtitle")
        if period is not None:
            sh.text(r, 6, period, "value")
        r += 1
        sh.header(r, 0, ["Hour", "GPUs demanded", "Reserved or bought in use" if own else "Reserved in use",
                         "On-demand", "Spot", "Reserved or bought held" if own else "Reserved held"]
                  + ([("Committed or owned in use" if own else "Committed in use")] if committed else []))
        ws.set_row(r, 30)
        first = r + 1
        day = f"$A${title_row + 1}"
        wild = any(ch in d for ch in "~*?")  # scenario day types (weekday~high): ~ escapes in criteria; compare exactly
        for hour in range(24):
            r += 1
            sh.num(r, 0, hour, "value", "center", num="hour")
            at = [h for h in rows if h.day_type == d and h.hour == hour and h.period in ("", period)]
            for c, key, attr in ((1, "demand", "demand_gpus"), (2, "reserved", "reserved_gpus"),
                                 (3, "od", "on_demand_gpus"), (4, "spot", "spot_gpus"),
                                 (6, "committed", "committed_gpus")):
                if c == 6 and not committed:
                    continue
                H = refs.hourly
                if period is None:
                    v = sum(getattr(h, attr) for h in at)
                    f = (f'SUMIFS({H[key]},{H["day_type"]},"="&{day},{H["hour"]},$A{r + 1})' if not wild else
                         f'SUMPRODUCT(({H["day_type"]}={day})*({H["hour"]}=$A{r + 1})*{H[key]})')
                else:  # this period's rows, then those that hold all horizon (added in the formula's order)
                    v = sum(getattr(h, attr) for h in at if h.period) + sum(getattr(h, attr) for h in at if not h.period)
                    f = "+".join((f'SUMIFS({H[key]},{H["day_type"]},"="&{day},{H["hour"]},$A{r + 1},'
                                  f'{H["period"]},"="&{p})') if not wild else
                                 f'SUMPRODUCT(({H["day_type"]}={day})*({H["hour"]}=$A{r + 1})*({H["period"]}={p})'
                                 f'*{H[key]})'
                                 for p in (f"$G${title_row + 1}", f'"{WHOLE_HORIZON}"'))
                sh.calc(r, c, f, v, num="int")
            if period in waiting:  # before their delivery, servers bought are not held yet
                f_wait, v_wait = waiting[period]
                sh.calc(r, 5, f"{held}-({f_wait})", held_v - v_wait, num="int")
            else:
                sh.calc(r, 5, held, held_v, num="int")
        _supply_chart(sh, wb, title_row, first, r, with_held=held_v > 0, committed=committed)
        r += 3
    ws.freeze_panes(3, 0)
    sh.page(r, 20)


def _not_delivered(result: PlanResult, refs: Refs) -> dict[str | None, tuple[str, int]]:
    """Per contract period, the GPUs of servers bought that are delivered after it starts (Purchases' buy
    rows, as a formula, and their count)."""
    own = result.own
    if own is None or not result.periods:
        return {}
    out: dict[str | None, tuple[str, int]] = {}
    first = 0
    for p in result.periods:
        late = [b for b in own.bought if b.nodes and b.delivery_day > first]
        if late:
            f = "+".join(f'SUMIFS({refs.purchases["gpus"]},{refs.purchases["tier"]},"buy",'
                         f'{refs.purchases["offer"]},"{b.offer}")' for b in late)
            out[p.label] = (f, sum(next((r["gpus"] for r in refs.purchase_rows
                                         if r["offer"] == b.offer and r["tier"] == "buy"), 0) for b in late))
        first += p.days
    return out


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
