"""The workbook's Cash flow sheet: the horizon's all-in spend by month (GPU-hours × the prices on
Assumptions and Commitments), a month-by-kind table that adds up to the all-in total, and every
commitment's payments month by month for up to 36 months."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from optimizer import formatting
from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet, ref, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.results.cashflow import pnl_and_cash
from optimizer.results.own import capex_month
from optimizer.results.types import PlanResult
from optimizer.vocab import UPFRONT_SHARE

OWN_TIERS = {"buy": "ownership", "facility": "facility"}
"""Cash-flow tiers of servers of your own → their cost on the Own hardware sheet (refs.own_offer)."""
KINDS = (("committed", "Committed (signed before)"), ("new", "New GPUs"), ("api", "API"))


def write_cash_flow(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    sh.widths([12, 14, 28, 13, 11, 13, 12, 15, 15, 15])
    sh.text(0, 0, "Cash flow: the horizon's spend by month, and every commitment month by month", "title")
    sh.intro(1, "GPU-hours in each month (a day type's days spread over the calendar days of that type; new "
                "GPU-hours are each month's share of the offer's on Purchases, so days edited on Assumptions flow "
                "through) × the "
                "price on Assumptions (new) or Commitments (signed). The months add up to the all-in spend: new "
                "spend + committed spend. Months are calendar months from start_date (M1, M2, … of 30 days "
                "without one)." + (" Servers of your own (tiers buy and facility): their costs on Own hardware, "
                                   "spread evenly over the days they serve." if result.own is not None else "")
             + _capex_note(result),
             9, 4 if result.own is not None else 3)
    r = _horizon(sh, result, refs, 3)
    r = _by_month(sh, result, refs, r + 2)
    r = _schedule(sh, result, refs, r + 2)
    ws.freeze_panes(3, 0)
    sh.page(r, 9)


def _capex_note(result: PlanResult) -> str:
    """Servers bought are spend here as their horizon share (depreciation, cost of capital, support), not the
    cash paid for them: say what is paid, and when."""
    bought = [b for b in result.own.bought if b.capex] if result.own is not None else []
    if not bought:
        return ""
    paid = "; ".join(f"{formatting.money(b.capex, result.currency)} for {b.offer} at delivery"
                     + (f" on {b.delivery_date}" if b.delivery_date else "") for b in bought)
    return (" Servers bought count as their ownership share, not as cash: the cash out is " + paid
            + " (Own hardware).")


def _horizon(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "The horizon, month by month", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Month", "Provider", "Offer (API: workload)", "Tier", "Kind", "GPU-hours", "Price per GPU-hour",
                     "Amount", SHARE_HEAD])
    sh.ws.set_row(r, 30)
    api_total: dict[str, float] = {}
    own_total: dict[tuple[str, str], float] = {}
    for c in result.cash_flow:
        if c.kind == "api":
            api_total[c.offer] = api_total.get(c.offer, 0.0) + c.amount
        elif c.tier in OWN_TIERS:
            own_total[(c.offer, c.tier)] = own_total.get((c.offer, c.tier), 0.0) + c.amount
    total = 0.0
    for c in result.cash_flow:
        r += 1
        n = r + 1
        for col, text in enumerate((c.month, c.provider, c.offer, c.tier, c.kind)):
            sh.text(r, col, text)
        if c.kind == "api":
            v = _share_of(sh, r, c.amount, api_total.get(c.offer, 0.0), *refs.api_cost.get(c.offer, (None, 0.0)))
        elif (c.offer, c.tier, c.kind) in refs.spend_cash:  # a spend commitment: its share of its cell
            key = (c.offer, c.tier, c.kind)
            v = _share_of(sh, r, c.amount, refs.spend_cash_whole.get(key, 0.0), *refs.spend_cash[key])
        elif c.tier in OWN_TIERS:  # servers of your own: the Own hardware sheet's cost, spread as the result spreads it
            v = _share_of(sh, r, c.amount, own_total[(c.offer, c.tier)],
                          *refs.own_offer.get(c.offer, {}).get(OWN_TIERS[c.tier], (None, 0.0)))
        else:
            whole = refs.purchase_gh.get((c.offer, c.tier)) if c.kind == "new" else None
            signed = refs.contract_gh.get((c.offer, c.tier, round(c.price_per_gpu_hour, 6)), [])
            if c.kind == "committed" and len(signed) == 1:  # its contract's GPU-hours in the horizon (Commitments)
                whole = signed[0]
            if whole is not None and whole[1] > 0:
                # the month's share of the offer's GPU-hours on Purchases (which follow the days on Assumptions),
                # so the months still add up to the all-in spend when the days are edited
                sh.num(r, SHARE_COL, c.gpu_hours / whole[1], num="pct2")
                sh.calc(r, 5, f"{xl_col_to_name(SHARE_COL)}{n}*{whole[0]}", c.gpu_hours, num="int")
            else:
                sh.num(r, 5, c.gpu_hours, num="int")
            price_v = _price_cell(sh, refs, r, 6, c.offer, c.tier, c.price_per_gpu_hour, c.kind == "committed",
                                  blend=bool(result.scenarios) and c.tier in ("on-demand", "spot"))
            v = c.gpu_hours * price_v
            sh.calc(r, 7, f"F{n}*G{n}", v, num="money2")
        total += v
        refs.cash_values.append(v)
    first, last = head + 1, max(r, head + 1)
    refs.cash = {"month": rng(sh.name, first, last, 0), "offer": rng(sh.name, first, last, 2),
                 "tier": rng(sh.name, first, last, 3), "kind": rng(sh.name, first, last, 4),
                 "amount": rng(sh.name, first, last, 7)}
    r += 1
    sh.text(r, 0, "Total", "total")
    for col in range(1, 7):
        sh.text(r, col, "", "total")
    sh.calc(r, 7, f"SUM({refs.cash['amount']})" if result.cash_flow else "0", total, "total", num="money0")
    sh.book.name("cash_flow_total", sh.name, r, 7)
    refs.cash_total = (ref(sh.name, r, 7), total)
    r += 1
    if refs.tiers_name == "total_cost":
        sh.text(r, 0, "All-in spend (Summary) — the total above equals it", "note")
    else:
        sh.text(r, 0, "Expected all-in spend over the scenarios (Summary's tiers + committed) — the total above "
                      f"equals it; the plan's total is the {L.risk_name(result)}", "note")
    sh.calc(r, 7, f"{refs.tiers_name}+committed_spend", refs.all_in_value, num="money0")
    return r


def _by_month(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """Month × kind, adding up to the all-in spend; with servers bought, the cash beside it: the all-in
    without their ownership share, plus their support as it runs and their price in the month of delivery
    (results.cashflow.pnl_and_cash)."""
    bought = [b for b in result.own.bought if b.nodes] if result.own is not None else []
    sh.text(r, 0, "By month" + (": the profit and loss (all-in) against the cash" if bought else ""), "h2")
    r += 1
    head = r
    cash_head = ["Ownership share of servers bought (P&L only)", "Their support (cash as it runs)",
                 "Their price at delivery (cash only)", "Cash out"] if bought else []
    sh.header(r, 0, ["Month"] + [label for _k, label in KINDS] + ["All-in"] + cash_head)
    sh.ws.set_row(r, 45 if bought else 30)
    rows = pnl_and_cash(result.cash_flow, result.own)
    months = [row.month for row in rows]
    cash = refs.cash
    last_kind = chr(ord("A") + len(KINDS))
    allin = len(KINDS) + 1
    for row in rows:
        m = row.month
        r += 1
        n = r + 1
        sh.text(r, 0, m)
        row_total = 0.0
        for i, (kind, _label) in enumerate(KINDS, 1):
            v = _sum_value(result, refs, m, kind)
            sh.calc(r, i, f'SUMIFS({cash["amount"]},{cash["month"]},"="&A{n},{cash["kind"]},"{kind}")'
                    if result.cash_flow else "0", v, num="money0")
            row_total += v
        sh.calc(r, allin, f"SUM(B{n}:{last_kind}{n})", row_total, num="money0")
        if bought:
            _cash_cells(sh, result, refs, r, allin + 1, row_total, bought, m)
    first, last = head + 1, max(r, head + 1)
    r += 1
    sh.text(r, 0, "Total", "total")
    for i in range(1, len(KINDS) + 2):
        kinds = [KINDS[i - 1][0]] if i <= len(KINDS) else [k for k, _l in KINDS]
        col_total = sum(_sum_value(result, refs, m, k) for m in months for k in kinds)
        sh.calc(r, i, f"SUM({rng(sh.name, first, last, i)})" if months else "0", col_total, "total", num="money0")
    if bought:
        for i, key in enumerate(("ownership", "support", "capex", "cash"), allin + 1):
            sh.calc(r, i, f"SUM({rng(sh.name, first, last, i)})", sum(getattr(row, key) for row in rows), "total",
                    num="money0")
        r += 1
        sh.text(r, 0, "Cash out = all-in − the ownership share + support + the price at delivery; depreciation "
                      "and the cost of capital are not cash. Support and prices are live on Own hardware.", "note")
    return r


def _cash_cells(sh: Sheet, result: PlanResult, refs: Refs, r: int, col: int, allin: float, bought, month: str) -> None:
    """One month's ownership share, support, price at delivery and cash out (columns col … col + 3)."""
    cash, n = refs.cash, r + 1
    share_f, support_f, capex_f = [], [], []
    share_v = support_v = capex_v = 0.0
    for b in bought:
        cells = refs.own_offer.get(b.offer, {})
        ownership, support, capex = cells.get("ownership"), cells.get("support"), cells.get("capex")
        if ownership is None or support is None or capex is None:
            continue
        v = sum(v for c, v in zip(result.cash_flow, refs.cash_values)
                if c.month == month and c.offer == b.offer and c.tier == "buy")
        f = f'SUMIFS({cash["amount"]},{cash["month"]},"="&A{n},{cash["offer"]},"{b.offer}",{cash["tier"]},"buy")'
        share_f.append(f)
        share_v += v
        support_f.append(f"IF({ownership[0]}=0,0,{f}*{support[0]}/{ownership[0]})")
        support_v += v * support[1] / ownership[1] if ownership[1] else 0.0
        if capex_month(b) == month:
            capex_f.append(capex[0])
            capex_v += capex[1]
    letter = lambda c: chr(ord("A") + c)  # noqa: E731
    sh.calc(r, col, "+".join(share_f) or "0", share_v, num="money0")
    sh.calc(r, col + 1, "+".join(support_f) or "0", support_v, num="money0")
    sh.calc(r, col + 2, "+".join(capex_f) or "0", capex_v, num="money0")
    sh.calc(r, col + 3, f"{letter(col - 1)}{n}-{letter(col)}{n}+{letter(col + 1)}{n}+{letter(col + 2)}{n}",
            allin - share_v + support_v + capex_v, num="money0")


def _sum_value(result: PlanResult, refs: Refs, month: str, kind: str) -> float:
    return sum(v for c, v in zip(result.cash_flow, refs.cash_values) if c.month == month and c.kind == kind)


def _schedule(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "Commitments month by month (signed and new, up to 36 months)", "h2")
    r += 1
    if not result.commitment_schedule:
        sh.text(r, 0, "None: no reservation is signed or bought (or the plan has no start_date to date them).",
                "note")
        return r
    # a new reservation paid up front (payment options): that share of its term in its first month, the rest by days
    paid_ahead = {(x.offer, x.tier): (UPFRONT_SHARE.get(x.payment or "no_upfront", 0.0), x.term_days)
                  for x in result.new_commitments}
    upfront_col = any(share for share, _days in paid_ahead.values())
    spend = any(s.usd_per_hour is not None for s in result.commitment_schedule)
    sh.header(r, 0, ["Month", "Offer", "Provider", "Tier", "Signed / new", "GPUs", "Days of service",
                     "Price per GPU-hour" + (" (savings plan: per hour)" if spend else ""), "Amount"] + (["Paid up front (in Amount)"] if upfront_col else []))
    sh.ws.set_row(r, 30)
    head = r
    total = 0.0
    for s in result.commitment_schedule:
        r += 1
        n = r + 1
        for col, text in enumerate((s.month, s.offer, s.provider, s.tier, s.kind)):
            sh.text(r, col, text)
        sh.num(r, 6, s.days, num="int")
        if s.usd_per_hour is not None:  # a spend commitment: $/hour, no GPUs (its rate as the Spend sheet holds it)
            sh.text(r, 5, "–")
            cell = refs.spend_rate.get(s.offer)
            if cell:
                sh.calc(r, 7, cell, s.usd_per_hour, num="money2")
            else:
                sh.num(r, 7, s.usd_per_hour, num="money2")
            v = 24 * s.days * s.usd_per_hour
            sh.calc(r, 8, f"24*G{n}*H{n}", v, num="money0")
            total += v
            continue
        sh.num(r, 5, s.gpus, num="int")
        price_v = _price_cell(sh, refs, r, 7, s.offer, s.tier, s.price_per_gpu_hour, s.kind == "signed")
        share, term = paid_ahead.get((s.offer, s.tier), (0.0, 0)) if s.kind == "new" else (0.0, 0)
        if share:
            ahead = share * s.gpus * 24 * term * price_v if s.upfront else 0.0
            sh.calc(r, 9, f"{share!r}*F{n}*24*{term}*H{n}" if s.upfront else "0", ahead, num="money0")
            v = s.gpus * 24 * s.days * price_v * (1.0 - share) + ahead
            sh.calc(r, 8, f"F{n}*24*G{n}*H{n}*{1.0 - share!r}+J{n}", v, num="money0")
        else:
            v = s.gpus * 24 * s.days * price_v
            sh.calc(r, 8, f"F{n}*24*G{n}*H{n}", v, num="money0")
        total += v
    first, last = head + 1, r
    r += 1
    sh.text(r, 0, "Total", "total")
    for col in range(1, 8):
        sh.text(r, col, "", "total")
    sh.calc(r, 8, f"SUM({rng(sh.name, first, last, 8)})", total, "total", num="money0")
    return r


def _price_cell(sh: Sheet, refs: Refs, r: int, col: int, offer: str, tier: str, price: float, signed: bool,
                blend: bool = False) -> float:
    """The price of a row as a reference to where finance edits it (a signed contract's price on
    Commitments, a new purchase's on Assumptions); returns the value the reference holds. `blend`: the row's
    price may be that one × the scenarios' price factors (its month's blend of them)."""
    cell = (refs.contract_price.get((offer, tier, round(price, 6))) if signed else refs.price.get((offer, tier)))
    value = refs.price_value.get(cell, price) if cell else price
    if blend and cell and value and abs(price / value - 1.0) > 1e-9:
        factor = price / value
        value = value * factor
        sh.calc(r, col, f"{cell}*{factor!r}", value, num="money2")
        return value
    if cell:
        sh.calc(r, col, cell, value, num="money2")
    else:
        sh.num(r, col, value, num="money2")
    return value


SHARE_COL = 8
SHARE_HEAD = "Month's share (of the offer's GPU-hours on Purchases or Commitments, or of the cost it splits)"
"""Where a row that is a share of a whole held elsewhere keeps that share (the solve's), so its formula reads
a cell instead of a constant."""


def _share_of(sh: Sheet, r: int, amount: float, whole: float, cell: str | None, cell_value: float) -> float:
    """A row that is a share of a cost held elsewhere (an API's cost, an own offer's): amount ÷ whole of
    that cell, as a formula when the cell exists, else the amount itself. Returns the row's value."""
    share = amount / whole if whole else 0.0
    sh.num(r, 5, None)
    sh.num(r, 6, None)
    if cell:
        v = share * cell_value
        sh.num(r, SHARE_COL, share, num="pct2")
        sh.calc(r, 7, f"{xl_col_to_name(SHARE_COL)}{r + 1}*{cell}", v, num="money2")
    else:
        v = amount
        sh.num(r, 7, v, num="money2")
    return v
