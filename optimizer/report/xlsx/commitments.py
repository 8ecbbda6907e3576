"""The workbook's Commitments sheet: contracts already signed, new reservations over their full term,
and an expiry calendar — all formulas over the GPUs, prices and dates on the sheet."""

from __future__ import annotations

import datetime as dt

from optimizer.report.xlsx.cells import Sheet, ref, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult

DATE = "yyyy-mm-dd"
EPOCH = dt.date(1899, 12, 30)  # Excel's (and LibreOffice's) day 0 in the 1900 date system


def serial(iso: str) -> int:
    return (dt.date.fromisoformat(iso) - EPOCH).days


def write_commitments(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    sh.widths([28, 12, 9, 12, 12, 12, 12, 14, 16, 14, 16, 14, 14, 12, 12, 12, 12, 16, 16])
    sh.text(0, 0, "Commitments: contracts already signed, new reservations over their full term", "title")
    sh.intro(1, "Contracts signed before this plan are used first; their cost is sunk, so it is not in the plan's "
                "total (shown here as committed spend). A new reservation commits GPUs × price × 24 × its term; "
                "the plan's cost counts only this horizon's share.", 12, 2)
    r = _signed(sh, result, refs, 3)
    r = _new(sh, result, refs, r + 2)
    r = _expiry(sh, result, refs, r + 2)
    ws.freeze_panes(3, 1)
    sh.page(r, 13)


def _signed(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "Contracts already signed (sunk: used first, not in the plan's cost)", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Offer", "Tier", "GPUs", "Start", "End (last day)", "Price per GPU-hour", "Days in the horizon",
                     "GPU-hours in the horizon", "Committed spend in the horizon", "Contract days",
                     "Contract total", "Per month", "GPU-hours used", "Used"])
    sh.ws.set_row(r, 30)
    spend = total = monthly = 0.0
    for c in result.commitments:
        r += 1
        n = r + 1
        sh.text(r, 0, c.offer)
        sh.text(r, 1, c.tier)
        sh.num(r, 2, c.gpus, num="int")
        sh.num(r, 3, serial(c.start), num=DATE)
        sh.num(r, 4, serial(c.end), num=DATE)
        cell = sh.inp(r, 5, c.price_per_gpu_hour, "money2")
        refs.contract_price.setdefault((c.offer, c.tier, round(c.price_per_gpu_hour, 6)), cell)
        refs.price_value[cell] = c.price_per_gpu_hour
        if result.start_date is not None and _overlap(result, c.start, c.end) == c.days_in_horizon:
            # the days the contract overlaps the horizon, from its dates and horizon_days (Assumptions)
            first = refs.start_date or serial(result.start_date)
            sh.calc(r, 6, f"MAX(0,MIN({first}+{refs.horizon}-1,E{n})-MAX(D{n},{first})+1)", c.days_in_horizon,
                    num="int")
        else:
            sh.num(r, 6, c.days_in_horizon, num="int")
        gh = c.gpus * 24 * c.days_in_horizon
        sh.calc(r, 7, f"C{n}*24*G{n}", gh, num="int")
        refs.contract_gh.setdefault((c.offer, c.tier, round(c.price_per_gpu_hour, 6)), []).append((ref(sh.name, r, 7),
                                                                                                 gh))
        v = gh * c.price_per_gpu_hour
        sh.calc(r, 8, f"H{n}*F{n}", v, num="money0")
        spend += v
        days = serial(c.end) - serial(c.start) + 1
        sh.calc(r, 9, f"E{n}-D{n}+1", days, num="int")
        t = c.gpus * c.price_per_gpu_hour * 24 * days
        sh.calc(r, 10, f"C{n}*F{n}*24*J{n}", t, num="money0")
        total += t
        m = c.gpus * c.price_per_gpu_hour * 24 * 365 / 12
        sh.calc(r, 11, f"C{n}*F{n}*24*365/12", m, num="money0")
        monthly += m
        sh.num(r, 12, c.gpu_hours_used, num="int")
        sh.calc(r, 13, f"IF(H{n}=0,0,M{n}/H{n})", c.gpu_hours_used / gh if gh else 0.0, num="pct")
    if not result.commitments:
        r += 1
        sh.text(r, 0, "None: the plan lists no contract that overlaps its horizon.", "note")
    first, last = head + 1, max(r, head + 1)
    refs.signed = {"gpus": rng(sh.name, first, last, 2), "end": rng(sh.name, first, last, 4),
                   "monthly": rng(sh.name, first, last, 11), "offer": rng(sh.name, first, last, 0),
                   "gh": rng(sh.name, first, last, 7), "spend": rng(sh.name, first, last, 8)}
    for o in {c.offer for c in result.commitments}:
        gh_o = sum(c.gpus * 24 * c.days_in_horizon for c in result.commitments if c.offer == o)
        spend_o = sum(c.gpus * 24 * c.days_in_horizon * c.price_per_gpu_hour for c in result.commitments if c.offer == o)
        refs.committed_rate[o] = spend_o / gh_o if gh_o else 0.0
    r += 1
    sh.text(r, 0, "Total" + (" (with the signed spend commitments' spend: Spend commitments)"
                             if refs.spend_committed else ""), "total")
    for col, v in ((8, spend), (10, total), (11, monthly)):
        f = f"SUM({rng(sh.name, first, last, col)})" if result.commitments else "0"
        if col == 8 and refs.spend_committed:
            f, v = f"{f}+{refs.spend_committed[0]}", v + refs.spend_committed[1]
            spend = v
        sh.calc(r, col, f, v, "total", num="money0")
    sh.book.name("committed_spend", sh.name, r, 8)
    refs.committed = (ref(sh.name, r, 8), spend)
    return r


def _overlap(result: PlanResult, start: str, end: str) -> int:
    """Days a contract from `start` to `end` (last day) overlaps the horizon, as the Days formula counts them."""
    assert result.start_date is not None
    first = serial(result.start_date)
    return max(0, min(first + result.horizon_days - 1, serial(end)) - max(serial(start), first) + 1)


def _new(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "New reservations over their full term", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Offer", "Tier", "GPUs", "Price per GPU-hour", "Term (days)", "Term (months)", "Start",
                     "End (last day: start + term − 1)", "This horizon's share", "Total committed", "Per month",
                     "Beyond the horizon", "GPU-hours used", "Used", "On-demand price per GPU-hour",
                     "Break-even use (price ÷ on-demand)", "Covers (share of the offer's use)",
                     "Saving vs on-demand (horizon)", "Saving vs on-demand (full term, at this use)"])
    sh.ws.set_row(r, 30)
    P = refs.purchases
    dated = result.start_date is not None
    share_t = total_t = monthly_t = beyond_t = 0.0
    for x in result.new_commitments:
        r += 1
        n = r + 1
        sh.text(r, 0, x.offer)
        sh.text(r, 1, x.tier)
        if sum(1 for y in result.new_commitments if (y.offer, y.tier) == (x.offer, x.tier)) > 1:
            sh.num(r, 2, x.gpus, num="int")  # reservations of the offer and tier starting on several days
        else:
            sh.calc(r, 2, f'SUMIFS({P["gpus"]},{P["offer"]},"="&A{n},{P["tier"]},"="&B{n})', x.gpus, num="int")
        price = refs.price.get((x.offer, x.tier))
        if price:
            sh.calc(r, 3, price, x.price_per_gpu_hour, num="money2")
        else:
            sh.num(r, 3, x.price_per_gpu_hour, num="money2")
        sh.num(r, 4, x.term_days, num="int")
        sh.num(r, 5, x.term_months, num="int")
        if dated:
            start = serial(x.start)  # type: ignore[arg-type]
            sh.num(r, 6, start, num=DATE)
            sh.calc(r, 7, f"G{n}+E{n}-1", start + x.term_days - 1, num=DATE)
        else:
            sh.text(r, 6, "plan start")
            sh.text(r, 7, x.end_text)
        late = serial(x.start) - serial(result.start_date) if dated and x.start else 0  # type: ignore[arg-type]
        share = x.gpus * x.price_per_gpu_hour * 24 * (refs.horizon_days - late)
        if late:  # it starts after the horizon's first day: the horizon holds it from its start
            first = refs.start_date or serial(result.start_date)  # type: ignore[arg-type]
            sh.calc(r, 8, f"C{n}*D{n}*24*({refs.horizon}-(G{n}-{first}))", share,
                    num="money0")
        else:
            sh.calc(r, 8, f"C{n}*D{n}*24*{refs.horizon}", share, num="money0")
        total = x.gpus * x.price_per_gpu_hour * 24 * x.term_days
        sh.calc(r, 9, f"C{n}*D{n}*24*E{n}", total, num="money0")
        sh.calc(r, 10, f"J{n}/F{n}", total / x.term_months, num="money0")
        sh.calc(r, 11, f"J{n}-I{n}", total - share, num="money0")
        _use(sh, refs, x, r, share, total)
        share_t += share
        total_t += total
        monthly_t += total / x.term_months
        beyond_t += total - share
    if not result.new_commitments:
        r += 1
        sh.text(r, 0, "None: the plan buys no reserved capacity.", "note")
    first, last = head + 1, max(r, head + 1)
    refs.new = {"gpus": rng(sh.name, first, last, 2), "last": rng(sh.name, first, last, 7),
                "monthly": rng(sh.name, first, last, 10)}
    r += 1
    sh.text(r, 0, "Total", "total")
    for col, v in ((8, share_t), (9, total_t), (10, monthly_t), (11, beyond_t)):
        f = f"SUM({rng(sh.name, first, last, col)})" if result.new_commitments else "0"
        sh.calc(r, col, f, v, "total", num="money0")
    sh.book.name("new_commitments_total", sh.name, r, 9)
    refs.new_total = (ref(sh.name, r, 9), total_t)
    return r


def _use(sh: Sheet, refs: Refs, x, r: int, share: float, total: float) -> None:
    """A new reservation's use against on demand (columns M–S): used GPU-hours as solved, the rest formulas over
    the row's GPUs, prices and term, so an edited price moves break-even and saving."""
    if x.utilization is None:  # a result written before its use was kept
        sh.text(r, 12, "–")
        return
    n = r + 1
    held = x.gpus * 24 * refs.horizon_days
    used = x.utilization * held
    sh.num(r, 12, used, num="int")
    util = used / held if held else 0.0
    sh.calc(r, 13, f"IF(C{n}*24*{refs.horizon}=0,0,M{n}/(C{n}*24*{refs.horizon}))", util, num="pct")
    if x.coverage is not None:
        sh.num(r, 16, x.coverage, num="pct")
    if x.break_even_utilization is None or not x.saving_vs_on_demand:
        sh.text(r, 14, "no on-demand price")
        return
    cell = refs.price.get((x.offer, "on-demand"))
    if cell:  # the offer's own on-demand price on Assumptions
        od = refs.price_value.get(cell, x.price_per_gpu_hour / x.break_even_utilization)
        sh.calc(r, 14, cell, od, num="money2")
    else:  # another offer's (saving_basis says which): as the result weighed it
        od = x.price_per_gpu_hour / x.break_even_utilization
        sh.num(r, 14, od, num="money2")
    sh.calc(r, 15, f"IF(O{n}=0,0,D{n}/O{n})", x.price_per_gpu_hour / od if od else 0.0, num="pct")
    sh.calc(r, 17, f"M{n}*O{n}-I{n}", used * od - share, num="money0")
    sh.calc(r, 18, f"N{n}*C{n}*24*E{n}*O{n}-J{n}", util * x.gpus * 24 * x.term_days * od - total, num="money0")


def _expiry(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "Expiry calendar: reserved GPUs whose last day of service falls in each quarter", "h2")
    if not result.expiry:
        r += 1
        why = "the plan has no start_date" if result.start_date is None else "no reserved capacity"
        sh.text(r, 0, f"No calendar: {why}.", "note")
        return r
    r += 1
    sh.header(r, 0, ["Quarter", "First day", "Last day", "Signed GPUs ending", "New GPUs ending",
                     "Monthly amount ending", "Reserved GPUs after the quarter"])
    sh.ws.set_row(r, 30)
    S, N = refs.signed, refs.new
    has_s, has_n = bool(result.commitments), bool(result.new_commitments)
    for e in result.expiry:
        r += 1
        n = r + 1
        sh.text(r, 0, e.quarter)
        sh.num(r, 1, serial(e.first_day), num=DATE)
        sh.num(r, 2, serial(e.last_day), num=DATE)
        within_s = f'SUMIFS({{v}},{S["end"]},">="&B{n},{S["end"]},"<="&C{n})'
        within_n = f'SUMIFS({{v}},{N["last"]},">="&B{n},{N["last"]},"<="&C{n})'
        sh.calc(r, 3, within_s.format(v=S["gpus"]) if has_s else "0", e.committed_gpus_ending, num="int")
        sh.calc(r, 4, within_n.format(v=N["gpus"]) if has_n else "0", e.new_gpus_ending, num="int")
        parts = ([within_s.format(v=S["monthly"])] if has_s else []) + ([within_n.format(v=N["monthly"])] if has_n else [])
        sh.calc(r, 5, "+".join(parts) or "0", _monthly_ending(result, e.first_day, e.last_day), num="money0")
        after = ([f'SUMIFS({S["gpus"]},{S["end"]},">"&C{n})'] if has_s else []) + \
            ([f'SUMIFS({N["gpus"]},{N["last"]},">"&C{n})'] if has_n else [])
        sh.calc(r, 6, "+".join(after) or "0", e.gpus_after, num="int")
    return r


def _monthly_ending(result: PlanResult, first: str, last: str) -> float:
    """As the formula adds it: signed contracts' monthly amounts, then new reservations'."""
    s = sum(c.gpus * c.price_per_gpu_hour * 24 * 365 / 12 for c in result.commitments if first <= c.end <= last)
    n = 0.0
    for x in result.new_commitments:
        if x.end is not None and first <= x.end <= last:
            n += x.gpus * x.price_per_gpu_hour * 24 * x.term_days / x.term_months
    if result.commitments and result.new_commitments:
        return s + n
    return s if result.commitments else n
