"""The workbook's Showback sheet: each workload's spend by team and cost centre, read from the Workloads sheet
(new spend and its share of committed contracts); with policy.idle: spread, each line's share of what no
workload used; with policy.showback: book, each line's owned depreciation and cost of capital; the totals by
team; and the chargeback, cost centre × month × tier, with live sums of its rows.

The lines add up to what the result's showback rows add up to (results.showback): the all-in, or the book."""

from __future__ import annotations

from optimizer.report import labels as L
from optimizer.report.chargeback import centre_rows
from optimizer.report.xlsx.cells import Sheet, cell, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.results import showback as sb
from optimizer.results.types import PlanResult, owners, team_centres

NO_CENTRE = "–"
"""The cost centre of rows booked to none (what no workload used; a workload without one)."""


def _q(text: str) -> str:
    """A string literal's text inside a formula."""
    return text.replace('"', '""')


def _share(part: float, whole: float) -> float:
    return part / whole if abs(whole) > 1e-12 else 0.0


def write_showback(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    spread = result.policy.get("idle") == "spread"
    book = sb.basis(result) == "book"
    parts = sb.lines(result, "spread" if spread else "separate", book) if result.showback else {}
    per_team = sb.has_teams(result)
    # the columns: key → header
    cols = [("team", "Team"), ("cc", "Cost centre"), ("name", "Workload"), ("new", "New spend"),
            ("com", "Committed spend (signed before)")]
    if spread:
        cols += [("f_new", "Its share of the new spend no workload used"),
                 ("f_com", "Its share of the committed spend no workload used"),
                 ("idle", "Spend no workload used that it carries")]
    if book:
        cols += [("f_dep", "Its share of the owned servers' depreciation"), ("dep", "Depreciation of servers owned"),
                 ("f_cap", "Its share of the cost of capital"), ("cap", "Cost of capital (out of the book)")]
    # spend commitments: the Workloads sheet prices on-demand use at list and holds no savings plan; what they
    # change is shared among the lines as the result's showback charges it — the new ones' (covered use at the
    # discount, their unused rest) and the signed ones' spend (its used part to the workloads whose use it
    # covered: results.showback.signed_spend_used)
    sp_parts = {}
    for key, terms in (("sp_new", [(refs.spend_net, "+"), (refs.spend_od_credit, "-")]),
                       ("sp_com", [(refs.spend_committed, "+")])):
        terms = [(x, sign) for x, sign in terms if x is not None]
        value = sum(x[1] if sign == "+" else -x[1] for x, sign in terms)
        if parts and terms and abs(value) > 1e-9:
            sp_parts[key] = ("".join(f"{sign}{x[0]}" for x, sign in terms), value)
    if "sp_new" in sp_parts:
        cols += [("f_sp_new", "Its share of what new spend commitments save"),
                 ("sp_new", "New spend commitments (covered use at the discount, unused commitment)")]
    if "sp_com" in sp_parts:
        cols += [("f_sp_com", "Its share of the signed spend commitments"),
                 ("sp_com", "Signed spend commitments (the used part to the workloads it covered)")]
    cols += [("total", "Book view (its part)" if book else "All-in"), ("share", "Share of the workload")]
    C = {k: i for i, (k, _h) in enumerate(cols)}
    sh.widths([24, 16, 22] + [16] * (len(cols) - 4) + [14])
    sh.text(0, 0, "Showback: who used what, by team and cost centre", "title")
    sh.intro(1, "Each workload pays for the tiers it used hour by hour (see Workloads) plus its share of the "
                "contracts signed before this plan. GPU-hours bought and used by no workload at that hour are "
                + ("shared among the workloads that used the same tier that month, by their cost there "
                   "(policy.idle: spread; each line's shares are the solve's, the amounts live). "
                   if spread else "their own line (policy.idle: separate). ")
                + ("The lines add up to the book view (policy.showback: book): owned servers' depreciation goes "
                   "to the workloads that ran on them by GPU-hours, the cost of capital of servers bought is "
                   "taken out. " if book else "")
                + ("Spend commitments (see Spend commitments) change what the Workloads sheet prices at list: each "
                   "line carries its share of that change as the solve charged it (covered use at the discount; a "
                   "signed commitment's used part to the workloads whose on-demand use it covered, the rest idle). "
                   if sp_parts else "")
                + "Teams and cost centres come from the plan's workloads (team:, cost_center:); a tenant that "
                  "names a team books to that team's cost centre.", len(cols) - 1, 3)
    r = 3
    sh.header(r, 0, [h for _k, h in cols])
    ws.set_row(r, 45)
    head = r
    centres = team_centres(result.workloads)
    lines: list[tuple[str, str | None, str, float, tuple | None, dict[str, float]]] = []
    for w in sorted(result.workloads, key=lambda w: (w.team is None and not w.tenants, w.team or "", w.name)):
        # a tenant that names a team books to that team's cost centre
        for team, cc, share in owners(w, centres):
            lines.append((team, cc, w.name, share, refs.workload_cells.get(w.name), parts.get((team, cc, w.name), {})))
    lines.append((sb.IDLE, None, "–", 1.0, refs.workload_cells.get(""), parts.get((sb.IDLE, None, None), {})))
    idle_new = sum(p.get("idle_new", 0.0) for *_x, p in lines)
    idle_com = sum(p.get("idle_committed", 0.0) for *_x, p in lines)
    dep_all = sum(p.get(sb.DEPRECIATION, 0.0) for *_x, p in lines)
    cap_all = sum(p.get(sb.CAPITAL, 0.0) for *_x, p in lines)
    (idle_new_cell, idle_new_v), (idle_com_cell, idle_com_v) = refs.workload_cells.get("") or (("0", 0.0), ("0", 0.0))
    dep_cell, dep_v = refs.book_cells.get("depreciation_owned", ("0", 0.0))
    cap_cell, cap_v = refs.book_cells.get("cost_of_capital", ("0", 0.0))
    first = head + 1
    values: dict[int, dict[str, float]] = {}
    for i, (team, cc, name, share, cells, p) in enumerate(lines):
        r = head + 1 + i
        n = r + 1
        idle_line = team == sb.IDLE
        sh.text(r, C["team"], team)
        sh.text(r, C["cc"], cc or "–")
        sh.text(r, C["name"], name)
        (new_cell, new_v), (com_cell, com_v) = cells or (("0", 0.0), ("0", 0.0))
        v: dict[str, float] = {}
        if share == 1.0:
            f_new, f_com = new_cell, com_cell
        else:  # a tenant's share of the workload (calibrate measures it from the log's tenant column)
            f_new, f_com = f"{cell(r, C['share'])}*{new_cell}", f"{cell(r, C['share'])}*{com_cell}"
            new_v, com_v = share * new_v, share * com_v
        if spread:
            sh.num(r, C["f_new"], 0.0 if idle_line else _share(p.get("idle_new", 0.0), idle_new), num="pct")
            sh.num(r, C["f_com"], 0.0 if idle_line else _share(p.get("idle_committed", 0.0), idle_com), num="pct")
            if idle_line:  # the spend no workload used, less what the lines above carry
                above = f"SUM({rng(sh.name, first, r - 1, C['f_new'])})"
                above_c = f"SUM({rng(sh.name, first, r - 1, C['f_com'])})"
                s_new = sum(values[x]["f_new"] for x in values)
                s_com = sum(values[x]["f_com"] for x in values)
                f_new, new_v = f"{new_cell}*(1-{above})", new_v * (1 - s_new)
                f_com, com_v = f"{com_cell}*(1-{above_c})", com_v * (1 - s_com)
                v["f_new"] = v["f_com"] = 0.0
            else:
                v["f_new"] = _share(p.get("idle_new", 0.0), idle_new)
                v["f_com"] = _share(p.get("idle_committed", 0.0), idle_com)
                v["idle"] = v["f_new"] * idle_new_v + v["f_com"] * idle_com_v
                sh.calc(r, C["idle"], f"{cell(r, C['f_new'])}*{idle_new_cell}+{cell(r, C['f_com'])}*{idle_com_cell}",
                        v["idle"], num="money0")
            if idle_line:
                sh.num(r, C["idle"], 0.0, num="money0")
                v["idle"] = 0.0
        sh.calc(r, C["new"], f_new, new_v, num="money0")
        sh.calc(r, C["com"], f_com, com_v, num="money0")
        v["new"], v["com"] = new_v, com_v
        total_f, total_v = f"{cell(r, C['new'])}+{cell(r, C['com'])}", new_v + com_v
        if spread:
            total_f, total_v = f"{total_f}+{cell(r, C['idle'])}", total_v + v["idle"]
        if book:
            v["f_dep"] = _share(p.get(sb.DEPRECIATION, 0.0), dep_all)
            v["f_cap"] = _share(p.get(sb.CAPITAL, 0.0), cap_all)
            sh.num(r, C["f_dep"], v["f_dep"], num="pct")
            sh.num(r, C["f_cap"], v["f_cap"], num="pct")
            v["dep"], v["cap"] = v["f_dep"] * dep_v, -(v["f_cap"] * cap_v)
            sh.calc(r, C["dep"], f"{cell(r, C['f_dep'])}*{dep_cell}", v["dep"], num="money0")
            sh.calc(r, C["cap"], f"-{cell(r, C['f_cap'])}*{cap_cell}", v["cap"], num="money0")
            total_f, total_v = f"{total_f}+{cell(r, C['dep'])}+{cell(r, C['cap'])}", total_v + v["dep"] + v["cap"]
        p_key = (sb.IDLE, None, None) if idle_line else (team, cc, name)
        got = parts.get(p_key, {})
        idle_new_part = v.get("f_new", 0.0) * idle_new_v if spread and not idle_line else 0.0
        idle_com_part = v.get("f_com", 0.0) * idle_com_v if spread and not idle_line else 0.0
        moved = {"sp_new": sum(got.get(k, 0.0) for k in ("new", "idle_new", sb.DEPRECIATION, sb.CAPITAL))
                 - (new_v + idle_new_part + v.get("dep", 0.0) + v.get("cap", 0.0)),
                 "sp_com": got.get("committed", 0.0) + got.get("idle_committed", 0.0) - (com_v + idle_com_part)}
        for key, (f, value) in sp_parts.items():
            v[f"f_{key}"] = moved[key] / value
            v[key] = v[f"f_{key}"] * value
            sh.num(r, C[f"f_{key}"], v[f"f_{key}"], num="pct")
            sh.calc(r, C[key], f"{cell(r, C[f'f_{key}'])}*({f})", v[key], num="money0")
            total_f, total_v = f"{total_f}+{cell(r, C[key])}", total_v + v[key]
        sh.calc(r, C["total"], total_f, total_v, num="money0")
        v["total"] = total_v
        sh.num(r, C["share"], share, num="pct")
        values[r] = v
    risk = sum(p.get("risk", 0.0) for p in parts.values())
    r = head + len(lines)
    if abs(risk) > 1e-6:  # a plan with scenarios: its risk measure over the sum of its tiers
        r += 1
        sh.text(r, C["team"], sb.RISK)
        sh.text(r, C["cc"], "–")
        sh.text(r, C["name"], "–")
        if refs.scenario.get("risk") and refs.scenario.get("expected"):  # the Scenarios sheet's measure − expected
            (risk_cell, risk_v), (exp_cell, exp_v) = refs.scenario["risk"], refs.scenario["expected"]
            risk = risk_v - exp_v
            sh.calc(r, C["new"], f"{risk_cell}-{exp_cell}", risk, num="money0")
        else:
            sh.num(r, C["new"], risk, num="money0")
        sh.calc(r, C["total"], cell(r, C["new"]), risk, num="money0")
        values[r] = {"new": risk, "total": risk}
    last = r
    r += 1
    sh.text(r, 0, f"Total (the {'book view' if book else 'all-in spend'})", "total")
    for c in range(1, len(cols)):
        sh.text(r, c, "", "total")
    sums = [k for k in ("new", "com", "idle", "dep", "cap", "sp_new", "sp_com", "total") if k in C]
    for k in sums:
        sh.calc(r, C[k], f"SUM({rng(sh.name, first, last, C[k])})", sum(v.get(k, 0.0) for v in values.values()),
                "total", num="money0")
    sh.book.name("showback_total", sh.name, r, C["total"])

    r += 3
    sh.text(r, 0, "By team and cost centre", "h2")
    r += 1
    sh.header(r, 0, ["Team", "Cost centre", "Workloads"] + [h for k, h in cols if k in sums])
    ws.set_row(r, 45)
    teams = list(dict.fromkeys((t, cc or "–") for t, cc, *_x in lines))
    T, CC = rng(sh.name, first, last, C["team"]), rng(sh.name, first, last, C["cc"])
    for team, cc in teams:
        r += 1
        n = r + 1
        sh.text(r, 0, team)
        sh.text(r, 1, cc)
        names = [name for t, c, name, *_x in lines if (t, c or "–") == (team, cc) and name != "–"]
        sh.text(r, 2, ", ".join(names) if per_team or len(names) != 1 else names[0])
        mine = [values[first + i] for i, (t, c, *_x) in enumerate(lines) if (t, c or "–") == (team, cc)]
        for j, k in enumerate(sums):
            src = rng(sh.name, first, last, C[k])
            sh.calc(r, 3 + j, f'SUMIFS({src},{T},"="&A{n},{CC},"="&B{n})', sum(v.get(k, 0.0) for v in mine),
                    num="money0")
    ws.freeze_panes(head + 1, 0)
    r = _centre_months(sh, result, r + 3)
    sh.page(r, len(cols) - 1)


def _centre_months(sh: Sheet, result: PlanResult, r: int) -> int:
    """The chargeback: the result's showback rows by cost centre × month × tier (new, committed, idle share),
    then cost centre × month as live sums of those rows, each cost centre's tiers under it. Returns the last row."""
    rows = centre_rows(result)
    if not rows:
        return r
    sh.text(r, 0, "Chargeback: cost centre × month", "h2")
    r += 1
    sh.text(r, 0, "Each cost centre's spend by month, summed (SUMPRODUCT) from the rows below it — the result's showback "
                  "by cost centre, month and tier, as `planopt report --chargeback` exports them. "
                  "Idle share: the part no workload used (its own rows under policy.idle: separate).", "note")
    months = list(dict.fromkeys(x["month"] for x in rows))
    # the rows' table sits below the matrix: its place is known before the matrix is written
    centres = list(dict.fromkeys(x["cost_center"] for x in rows))
    order = {t: i for i, t in enumerate(sb.TIER_ORDER)}
    tiers = {c: sorted(dict.fromkeys(x["tier"] for x in rows if x["cost_center"] == c),
                       key=lambda t: (order.get(t, len(order)), t)) for c in centres}
    matrix_rows = sum(1 + len(t) for t in tiers.values()) + 1
    r += 2
    head = r
    detail_head = head + matrix_rows + 3
    d_first, d_last = detail_head + 1, detail_head + len(rows)
    D = {k: rng(sh.name, d_first, d_last, i) for i, k in
         enumerate(("cc", "month", "tier", "new", "committed", "amount", "idle"))}
    sh.header(r, 0, ["Cost centre", "Tier"] + months + ["Total", "… of which committed", "… of which idle"])
    sh.ws.set_row(r, 30)
    centre_rows_at = []
    total_c = 2 + len(months)
    for c in centres:
        for t in [None] + tiers[c]:
            r += 1
            n = r + 1
            label = c or NO_CENTRE
            if t is None:
                sh.text(r, 0, label, "total")
            sh.text(r, 1, "all tiers" if t is None else L.SHOWBACK_TIERS.get(t, t))
            mine = [x for x in rows if x["cost_center"] == c and (t is None or x["tier"] == t)]
            # exact text matches (SUMPRODUCT): a SUMIFS criterion such as "2026-10" may be read as a date
            match = f'({D["cc"]}="{_q(c or NO_CENTRE)}")' + ("" if t is None else f'*({D["tier"]}="{_q(t)}")')
            for j, m in enumerate(months):
                v = sum(x["amount"] for x in mine if x["month"] == m)
                sh.calc(r, 2 + j, f'SUMPRODUCT({match}*({D["month"]}="{_q(m)}")*{D["amount"]})', v, num="money0")
            sh.calc(r, total_c, f"SUM({cell(r, 2)}:{cell(r, total_c - 1)})", sum(x["amount"] for x in mine),
                    num="money0")
            for j, k in ((1, "committed"), (2, "idle")):
                sh.calc(r, total_c + j, f'SUMPRODUCT({match}*{D[k]})',
                        sum(x["committed" if k == "committed" else "idle_share"] for x in mine), num="money0")
            if t is None:
                centre_rows_at.append(n)
    r += 1
    sh.text(r, 0, "Total", "total")
    sh.text(r, 1, "", "total")
    for j in range(len(months) + 3):
        col = 2 + j
        key = ("amount" if j <= len(months) else ("committed", "idle_share")[j - len(months) - 1])
        want = (sum(x["amount"] for x in rows if x["month"] == months[j]) if j < len(months) else
                sum(x[key] for x in rows))
        refs_ = "+".join(f"{cell(n - 1, col)}" for n in centre_rows_at)
        sh.calc(r, col, refs_, want, "total", num="money0")
    assert r < detail_head
    r = detail_head
    sh.header(r, 0, ["Cost centre", "Month", "Tier", "New spend", "Committed spend", "Amount", "Idle share"])
    for x in rows:
        r += 1
        sh.text(r, 0, x["cost_center"] or NO_CENTRE)
        sh.text(r, 1, x["month"])
        sh.text(r, 2, x["tier"])
        sh.num(r, 3, x["new"], num="money2")
        sh.num(r, 4, x["committed"], num="money2")
        sh.calc(r, 5, f"{cell(r, 3)}+{cell(r, 4)}", x["new"] + x["committed"], num="money2")
        sh.num(r, 6, x["idle_share"], num="money2")
    return r
