"""The workbook's Showback sheet: each workload's spend by team and cost centre, read from the
Workloads sheet (new spend and its share of committed contracts), and the totals by team."""

from __future__ import annotations

from optimizer.report.xlsx.cells import Sheet, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult, owners, team_centres


def write_showback(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    sh.widths([24, 16, 22, 16, 16, 16, 30])
    sh.text(0, 0, "Showback: who used what, by team and cost centre", "title")
    sh.intro(1, "Each workload pays for the tiers it used hour by hour (see Workloads) plus its share of the "
                "contracts signed before this plan; GPU-hours bought and used by no workload at that hour are "
                "their own line, never spread. Teams and cost centres come from the plan's workloads (team:, "
                "cost_center:); a tenant that names a team books to that team's cost centre.", 6, 3)
    r = 3
    sh.header(r, 0, ["Team", "Cost centre", "Workload", "New spend", "Committed spend (signed before)", "All-in",
                     "Share of the workload"])
    ws.set_row(r, 30)
    head = r
    lines = []
    centres = team_centres(result.workloads)
    for w in sorted(result.workloads, key=lambda w: (w.team is None and not w.tenants, w.team or "", w.name)):
        # a tenant that names a team books to that team's cost centre
        lines += [(team, cc or "–", w.name, share, refs.workload_cells.get(w.name))
                  for team, cc, share in owners(w, centres)]
    lines.append(("not used by any workload", "–", "–", 1.0, refs.workload_cells.get("")))
    values: dict[int, tuple[float, float]] = {}
    for team, cc, name, share, cells in lines:
        r += 1
        n = r + 1
        sh.text(r, 0, team)
        sh.text(r, 1, cc)
        sh.text(r, 2, name)
        (new_cell, new_v), (com_cell, com_v) = cells or (("0", 0.0), ("0", 0.0))
        if share == 1.0:
            sh.calc(r, 3, new_cell, new_v, num="money0")
            sh.calc(r, 4, com_cell, com_v, num="money0")
        else:  # a tenant's share of the workload (calibrate measures it from the log's tenant column)
            sh.calc(r, 3, f"G{n}*{new_cell}", share * new_v, num="money0")
            sh.calc(r, 4, f"G{n}*{com_cell}", share * com_v, num="money0")
            new_v, com_v = share * new_v, share * com_v
        sh.calc(r, 5, f"D{n}+E{n}", new_v + com_v, num="money0")
        sh.num(r, 6, share, num="pct")
        values[r] = (new_v, com_v)
    first, last = head + 1, r
    r += 1
    sh.text(r, 0, "Total (the all-in spend)", "total")
    for c in (1, 2):
        sh.text(r, c, "", "total")
    for c, k in ((3, 0), (4, 1)):
        sh.calc(r, c, f"SUM({rng(sh.name, first, last, c)})", sum(v[k] for v in values.values()), "total",
                num="money0")
    sh.calc(r, 5, f"SUM({rng(sh.name, first, last, 5)})", sum(a + b for a, b in values.values()), "total",
            num="money0")

    r += 3
    sh.text(r, 0, "By team and cost centre", "h2")
    r += 1
    sh.header(r, 0, ["Team", "Cost centre", "Workloads", "New spend", "Committed spend (signed before)", "All-in"])
    teams = list(dict.fromkeys((t, cc) for t, cc, _n, _s, _c in lines))
    T, C = rng(sh.name, first, last, 0), rng(sh.name, first, last, 1)
    for team, cc in teams:
        r += 1
        n = r + 1
        sh.text(r, 0, team)
        sh.text(r, 1, cc)
        names = [name for t, c, name, _s, _c in lines if (t, c) == (team, cc) and name != "–"]
        sh.text(r, 2, ", ".join(names) or "–")
        mine = [values[first + i] for i, (t, c, _n, _s, _x) in enumerate(lines) if (t, c) == (team, cc)]
        for col, k in ((3, 0), (4, 1)):
            src = rng(sh.name, first, last, col)
            sh.calc(r, col, f'SUMIFS({src},{T},"="&A{n},{C},"="&B{n})', sum(v[k] for v in mine), num="money0")
        sh.calc(r, 5, f"D{n}+E{n}", sum(a + b for a, b in mine), num="money0")
    ws.freeze_panes(head + 1, 0)
    sh.page(r, 6)
