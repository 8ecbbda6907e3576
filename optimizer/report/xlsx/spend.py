"""The workbook's Spend commitments sheet (only when the plan has a savings plan or a signed spend commitment):
each commitment's $/hour, discount and days, what it costs in the horizon and over its term, the on-demand spend
at list price it covers (the solve's), and its use, break-even and saving — formulas over those cells.

The Summary's tiers are the result's: on-demand is Purchases' on-demand at list less the list spend every
commitment covers plus the new commitments' discounted spend that paid for it; `cost_savings_plan` is the new
commitments' horizon share less that discounted spend (paid, not used). A signed commitment's spend in the
horizon joins the committed spend (Commitments).
"""

from __future__ import annotations

from optimizer.report.xlsx.cells import Sheet, ref, rng
from optimizer.report.xlsx.commitments import DATE, serial
from optimizer.report.xlsx.refs import Refs
from optimizer.results.spend import TERM_MONTHS, cash_label
from optimizer.results.types import PlanResult

SHEET = "Spend commitments"


def has_spend(result: PlanResult) -> bool:
    return bool(result.new_spend_commitments or result.spend_commitments or "savings_plan" in result.cost_by_tier)


def write_spend(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    sh.widths([20, 12, 8, 10, 12, 12, 12, 16, 16, 14, 16, 12, 12, 16, 18, 16])
    sh.text(0, 0, "Spend commitments: Savings Plans and committed-use discounts", "title")
    sh.intro(1, "A spend commitment pays its $/hour every hour it runs and covers its provider's on-demand use "
                "up to that amount at the discount: covered use at list price L costs (1 − discount) × L of it. "
                "On-demand covered (at list) is the solve's; the rest are formulas over this sheet and Assumptions. "
                "Used: the covered discounted spend ÷ the commitment; break-even: 1 − discount.", 12, 3)
    cash: dict[tuple[str, str, str], tuple[str, float]] = {}
    r = 3
    sh.text(r, 0, "Signed before this plan (sunk: committed spend)", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Provider", "Per hour", "Term", "Discount", "Start", "End (last day)", "Days in the horizon",
                     "Committed spend in the horizon", "On-demand covered (at list)", "Used"])
    sh.ws.set_row(r, 30)
    spend_t = covered_t = 0.0
    for c in result.spend_commitments:
        r += 1
        n = r + 1
        sh.text(r, 0, c.provider)
        sh.inp(r, 1, c.usd_per_hour, "money2")
        sh.text(r, 2, c.term)
        sh.inp(r, 3, c.discount, "pct")
        sh.num(r, 4, serial(c.start), num=DATE)
        sh.num(r, 5, serial(c.end), num=DATE)
        if refs.start_date:
            sh.calc(r, 6, f"MAX(0,MIN({refs.start_date}+{refs.horizon}-1,F{n})-MAX(E{n},{refs.start_date})+1)",
                    c.days_in_horizon, num="int")
        else:
            sh.num(r, 6, c.days_in_horizon, num="int")
        v = c.usd_per_hour * 24 * c.days_in_horizon
        sh.calc(r, 7, f"B{n}*24*G{n}", v, num="money0")
        sh.num(r, 8, c.covered_on_demand, num="money0")
        sh.calc(r, 9, f"IF(H{n}=0,0,I{n}*(1-D{n})/H{n})", c.covered_on_demand * (1 - c.discount) / v if v else 0.0,
                num="pct")
        label = cash_label(c.provider, c.term, c.key)
        refs.spend_rate[label] = ref(sh.name, r, 1)
        cash[(label, "savings_plan", "committed")] = (ref(sh.name, r, 7), v)
        cash[(label, "on-demand", "new")] = (f"(-{ref(sh.name, r, 8)})", -c.covered_on_demand)
        spend_t += v
        covered_t += c.covered_on_demand
    if not result.spend_commitments:
        r += 1
        sh.text(r, 0, "None.", "note")
    first, last = head + 1, max(r, head + 1)
    r += 1
    sh.text(r, 0, "Total", "total")
    f = (lambda col: f"SUM({rng(sh.name, first, last, col)})" if result.spend_commitments else "0")
    sh.calc(r, 7, f(7), spend_t, "total", num="money0")
    sh.book.name("committed_spend_plans", sh.name, r, 7)
    refs.spend_committed = (ref(sh.name, r, 7), spend_t)
    sh.calc(r, 8, f(8), covered_t, "total", num="money0")
    signed_cov = ref(sh.name, r, 8)

    r += 2
    sh.text(r, 0, "New: signed by this plan, over their full term", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Provider", "Per hour", "Term", "Discount", "Start", "End (last day)", "Term (days)",
                     "This horizon's share", "Total committed", "Per month", "On-demand covered (at list)", "Used",
                     "Break-even use", "Saving vs on-demand (horizon)", "Saving vs on-demand (full term, at this use)",
                     "Covered discounted spend (paid by it)"])
    sh.ws.set_row(r, 30)
    share_t = cov_t = used_t = 0.0
    for x in result.new_spend_commitments:
        label = cash_label(x.provider, x.term, x.key)
        r += 1
        n = r + 1
        sh.text(r, 0, x.provider)
        sh.num(r, 1, x.usd_per_hour, num="money2")  # the solve's choice
        sh.text(r, 2, x.term)
        sh.inp(r, 3, x.discount, "pct")
        if x.start and x.end:
            sh.num(r, 4, serial(x.start), num=DATE)
            sh.calc(r, 5, f"E{n}+G{n}-1", serial(x.end), num=DATE)
        else:
            sh.text(r, 4, "plan start")
            sh.text(r, 5, f"after {x.term_days:,} days")
        sh.num(r, 6, x.term_days, num="int")
        late = serial(x.start) - serial(result.start_date) if x.start and result.start_date else 0
        days = min(refs.horizon_days - late, x.term_days)
        held = f"({refs.horizon}-(E{n}-{refs.start_date}))" if late and refs.start_date else \
            (str(days) if late else refs.horizon)
        if days < refs.horizon_days - late:  # a term shorter than what is left of the horizon
            held = f"MIN({held},G{n})"
        sh.calc(r, 7, f"B{n}*24*{held}", x.usd_per_hour * 24 * days, num="money0")
        share = x.usd_per_hour * 24 * days
        total = x.usd_per_hour * 24 * x.term_days
        sh.calc(r, 8, f"B{n}*24*G{n}", total, num="money0")
        sh.calc(r, 9, f"I{n}/{TERM_MONTHS[x.term]}", total / TERM_MONTHS[x.term], num="money0")
        sh.num(r, 10, x.covered_on_demand, num="money0")
        use = x.covered_on_demand * (1 - x.discount) / share if share else 0.0
        sh.calc(r, 11, f"IF(H{n}=0,0,K{n}*(1-D{n})/H{n})", use, num="pct")
        sh.calc(r, 12, f"1-D{n}", 1 - x.discount, num="pct")
        sh.calc(r, 13, f"K{n}-H{n}", x.covered_on_demand - share, num="money0")
        sh.calc(r, 14, f"I{n}*(L{n}/(1-D{n})-1)", total * (use / (1 - x.discount) - 1), num="money0")
        sh.calc(r, 15, f"K{n}*(1-D{n})", x.covered_on_demand * (1 - x.discount), num="money0")
        used_t += x.covered_on_demand * (1 - x.discount)
        refs.spend_rate[label] = ref(sh.name, r, 1)
        if label:
            cash[(label, "savings_plan", "new")] = (ref(sh.name, r, 7), share)
            cash[(label, "on-demand", "new")] = (f"(-{ref(sh.name, r, 10)})", -x.covered_on_demand)
        share_t += share
        cov_t += x.covered_on_demand
    if not result.new_spend_commitments:
        r += 1
        sh.text(r, 0, "None: the plan signs no spend commitment.", "note")
    first, last = head + 1, max(r, head + 1)
    r += 1
    sh.text(r, 0, "Total", "total")
    g = (lambda col: f"SUM({rng(sh.name, first, last, col)})" if result.new_spend_commitments else "0")
    sh.calc(r, 7, g(7), share_t, "total", num="money0")
    sh.calc(r, 10, g(10), cov_t, "total", num="money0")
    sh.calc(r, 15, g(15), used_t, "total", num="money0")
    new_share, new_cov, new_used = ref(sh.name, r, 7), ref(sh.name, r, 10), ref(sh.name, r, 15)
    r += 2
    sh.text(r, 0, "The plan's cost tiers (Summary)", "h2")
    r += 1
    credit = cov_t + covered_t - used_t
    sh.text(r, 0, "On-demand: off the list price on Purchases — the on-demand covered at list, less the new "
                  "commitments' discounted spend that paid for it", "wrap")
    sh.calc(r, 7, f"{new_cov}+{signed_cov}-{new_used}", credit, num="money0")
    refs.spend_od_credit = (ref(sh.name, r, 7), credit)
    refs.tier_cost["on_demand"] = refs.tier_cost.get("on_demand", 0.0) - credit
    r += 1
    net = share_t - used_t
    sh.text(r, 0, "Spend commitments (paid, not used): the new commitments' horizon share less the discounted "
                  "spend they covered", "wrap")
    sh.calc(r, 7, f"{new_share}-{new_used}", net, num="money0")
    refs.spend_net = (ref(sh.name, r, 7), net)
    refs.tier_cost["savings_plan"] = net
    refs.spend_cash = {k: v for k, v in cash.items()}
    refs.spend_cash_whole = {}
    for row in result.cash_flow:
        k = (row.offer, row.tier, row.kind)
        if k in cash:
            refs.spend_cash_whole[k] = refs.spend_cash_whole.get(k, 0.0) + row.amount
    sh.page(r, 15)


__all__ = ["SHEET", "has_spend", "write_spend"]
