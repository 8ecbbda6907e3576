"""The workbook's Own hardware sheet: servers bought and owned, live.

Inputs (price, life, residual, cost of capital, support, power, units, days in service; the facility's
PUE, energy price by hour and colocation price) and the formulas of candidates.ownership over them:

    ownership share (buy) = units × (depreciation + capital + support) × days in service ÷ 365
        depreciation = price × (1 − residual) ÷ life;  capital = cost of capital × price × (1 + residual) ÷ 2
    idle energy           = units × idle kW × PUE × Σ_h price(h) × days in service
    serving energy        = Σ_h GPU-hours served at h × price(h) × (load − idle) kW ÷ GPUs per unit × PUE
    colocation            = units × colo per kW-month × load kW × 12 ÷ 365 × days in service
    (owned servers' support is a facility cost too: units × support × days in service ÷ 365)

Its totals are the Summary's buy and facility tiers. Then capex against the horizon's ownership share and
the horizon three ways (all-in; the book view, book_cost = all-in + owned depreciation − cost of capital;
cash), break-even against renting, the buy decision (payback_months and npv_per_unit, live) and what the
facility has left. Days in service are the solve's, not inputs: a later delivery is a new plan (more
rental on the bridge, the capex in another month), which only a solve prices. Each Python value beside a
formula is computed the way the formula computes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlsxwriter.utility import xl_col_to_name

from optimizer.report.xlsx.cells import Sheet, cell, defined_name, excel_round, ref, rng
from optimizer.report.xlsx.commitments import DATE, serial
from optimizer.report.xlsx.refs import Refs
from optimizer.results.own import npv_per_unit
from optimizer.results.types import OwnInputRow, PlanResult

DAYS_PER_YEAR = 365
KWH = "0.000##"
HOURS = range(24)

# the inputs table's columns
IN_HEAD = ["Offer", "Kind", "Units", "GPUs per unit", "Price per unit", "Life (years)", "Residual fraction",
           "Cost of capital", "Support per unit a year", "Load kW per unit", "Idle kW per unit", "Days in service"]
UNITS, GPN, PRICE, LIFE, RESIDUAL, COC, SUPPORT, LOAD, IDLE, DAYS = range(2, 12)
# the costs table's columns
COST_HEAD = ["Offer", "Kind", "Depreciation per unit a year", "Capital per unit a year", "Support per unit a year",
             "Ownership share (buy)", "Idle energy", "Serving energy", "Colocation", "Support of owned servers",
             "Energy and space (facility)", "Running total"]
DEP, CAP, SUP, BUY, IDLE_E, SERVE_E, COLO, OWNED_SUP, FAC, RUN = range(2, 12)


@dataclass
class _Row:
    """Where one offer's inputs and costs sit, and their values."""

    x: OwnInputRow
    inp: int = 0
    served: int = 0
    cost: int = 0
    dep: float = 0.0
    cap: float = 0.0
    buy: float = 0.0
    fac: float = 0.0


def write_own(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    own = result.own
    assert own is not None
    ws = sh.ws
    sh.widths([22, 9] + [12] * 10 + [9] * 14)
    sh.text(0, 0, "Own hardware: servers bought and owned, what they cost, and the buy decision", "title")
    sh.intro(1, "Bought servers cost the horizon's share of owning them from delivery: depreciation (price × "
                "(1 − residual) ÷ life) + cost of capital (rate × price × (1 + residual) ÷ 2) + support, a year, × "
                "days in service ÷ 365 (tier buy). Energy (idle kW all day, and (load − idle) kW ÷ GPUs per unit "
                "for every GPU-hour served, × PUE × the hour's price), colocation and owned servers' support are "
                "tier facility. Edit the blue cells: the totals feed Summary. The fleet stays as planopt chose it.",
             11, 4)
    if not own.inputs:  # a result written before the inputs were kept: the figures, not formulas
        refs.tier_cost["buy"] = result.cost_by_tier.get("buy", 0.0)
        refs.tier_cost["facility"] = result.cost_by_tier.get("facility", 0.0)
        _static(sh, result, 4)
        return
    rows = [_Row(x) for x in own.inputs]
    r = _facility_inputs(sh, result, refs, 4)
    r = _inputs(sh, result, rows, r + 2)
    r = _served(sh, rows, r + 2)
    r = _costs(sh, result, rows, refs, r + 2)
    r = _pnl(sh, result, rows, refs, r + 2)
    r = _break_even(sh, result, rows, refs, r + 2)
    r = _decision(sh, result, rows, refs, r + 2)
    r = _facility_use(sh, result, rows, r + 2)
    ws.freeze_panes(4, 1)
    sh.page(r, 25)


# --- inputs ----------------------------------------------------------------------------------------

def _facility_inputs(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    fac = result.own.facility  # type: ignore[union-attr]
    sh.text(r, 0, "Facility", "h2")
    sh.text(r, 2, "input", "input")
    sh.text(r, 3, "formula", "calc")
    sh.text(r, 4, "planopt result", "value")
    r += 1
    sh.text(r, 0, "PUE")
    refs.own["pue"] = sh.inp(r, 1, fac.pue, "dec2", name="own_pue")
    refs.own_values["pue"] = fac.pue
    sh.text(r, 2, "facility power ÷ IT power: every kW a server draws costs PUE kW", "hint")
    r += 1
    sh.text(r, 0, f"Colocation ({result.currency} per kW-month)")
    refs.own["colo"] = sh.inp(r, 1, fac.colo_usd_per_kw_month, "money2", name="own_colo_usd_per_kw_month")
    refs.own_values["colo"] = fac.colo_usd_per_kw_month
    sh.text(r, 2, "per kW of servers' load power, a month (× 12 ÷ 365 a day)", "hint")
    r += 1
    sh.text(r, 0, f"Energy price by hour ({result.currency} per kWh)", "head")
    for h in HOURS:
        sh.num(r, 1 + h, h, "head", num="hour")
    r += 1
    sh.text(r, 0, "Price")
    tariff = list(fac.tariff) if len(fac.tariff) == 24 else [0.0] * 24
    for h in HOURS:
        sh.ws.write_number(r, 1 + h, tariff[h], sh.fmt("input", num=KWH))
    refs.own["tariff"] = _range_name(sh, "own_tariff", r, 1, 24)
    refs.own_values["tariff"] = tariff
    r += 1
    sh.text(r, 0, "Summed over a day")
    total = 0.0
    for v in tariff:
        total += v
    sh.calc(r, 1, f"SUM({refs.own['tariff']})", total, num=KWH)
    refs.own["tariff_day"] = _name(sh, "own_tariff_day", r, 1)
    refs.own_values["tariff_day"] = total
    sh.text(r, 2, "a kW drawn all day costs this × PUE", "hint")
    return r


def _inputs(sh: Sheet, result: PlanResult, rows: list[_Row], r: int) -> int:
    sh.text(r, 0, "Servers of your own (per unit: a server, or a rack)", "h2")
    r += 1
    sh.header(r, 0, IN_HEAD)
    sh.ws.set_row(r, 30)
    for row in rows:
        r += 1
        x = row.x
        row.inp = r
        sh.text(r, 0, x.offer)
        sh.text(r, 1, x.kind)
        for col, key, v, num in ((UNITS, "units", x.nodes, "int"), (GPN, "gpus_per_unit", x.gpus_per_node, "int")):
            sh.inp(r, col, v, num, name=defined_name("own", x.offer, key))
        if x.kind == "buy":
            for col, key, v, num in ((PRICE, "price_per_unit", x.price_per_node, "money0"),
                                     (LIFE, "life_years", x.life_years, "dec2"),
                                     (RESIDUAL, "residual_fraction", x.residual_fraction, "pct"),
                                     (COC, "cost_of_capital", x.cost_of_capital, "pct2")):
                sh.inp(r, col, v, num, name=defined_name("own", x.offer, key))
        else:
            for col in (PRICE, LIFE, RESIDUAL, COC):
                sh.text(r, col, "sunk", "na")
        for col, key, v, num in ((SUPPORT, "support_per_year", x.support_per_year, "money0"),
                                 (LOAD, "load_kw", x.load_kw, "dec2"), (IDLE, "idle_kw", x.idle_kw, "dec2")):
            sh.inp(r, col, v, num, name=defined_name("own", x.offer, key))
        # Locked (the solve's, grey): fewer days in service means a later delivery, and with it more days
        # rented on the bridge and the capex in another month — a new plan, which only a solve prices.
        sh.num(r, DAYS, x.service_days, "value", num="#,##0.##")
        name = defined_name("own", x.offer, "service_days")
        if name:
            sh.book.name(name, sh.name, r, DAYS)
    r += 1
    sh.ws.merge_range(r, 0, r, 11, "", sh.fmt("note"))
    sh.text(r, 0, "Units: bought by this plan (0: none bought) or owned. Days in service (grey, not an input): "
                  "from delivery (bought) or from when they serve (owned) to the horizon's end, as solved. A "
                  "delivery date is not edited here: a later one adds rental until the servers arrive and moves "
                  "the capex, so change lead_time_days in the plan and solve again. Owned servers' capital is "
                  "sunk.", "note")
    sh.ws.set_row(r, 28)
    return r


def _served(sh: Sheet, rows: list[_Row], r: int) -> int:
    sh.text(r, 0, "GPU-hours served by hour of day over the horizon (the solve's result, own GPUs only)", "h2")
    r += 1
    sh.text(r, 0, "Offer", "head")
    for h in HOURS:
        sh.num(r, 1 + h, h, "head", num="hour")
    sh.text(r, 25, "Total", "head")
    for row in rows:
        r += 1
        row.served = r
        sh.text(r, 0, row.x.offer)
        total = 0.0
        for h in HOURS:
            v = row.x.served_gpu_hours_by_hour[h]
            sh.num(r, 1 + h, v, num="int")
            total += v
        sh.calc(r, 25, f"SUM(B{r + 1}:Y{r + 1})", total, num="int")
    return r


# --- costs ----------------------------------------------------------------------------------------

def _costs(sh: Sheet, result: PlanResult, rows: list[_Row], refs: Refs, r: int) -> int:
    at, V = refs.own, refs.own_values
    pue, colo, tday, tariff = at["pue"], at["colo"], at["tariff_day"], at["tariff"]
    sh.text(r, 0, f"Costs over the horizon ({result.currency})", "h2")
    r += 1
    head = r
    sh.header(r, 0, COST_HEAD)
    sh.ws.set_row(r, 30)
    for row in rows:
        r += 1
        row.cost = r
        x, i = row.x, row.inp + 1
        n = r + 1
        c = lambda col: f"{xl_col_to_name(col)}{i}"  # noqa: E731  (a cell of the offer's input row)
        sh.text(r, 0, x.offer)
        sh.text(r, 1, x.kind)
        if x.kind == "buy":
            dep, cap, buy = ownership(x)
            sh.calc(r, DEP, f"IF({c(LIFE)}=0,0,{c(PRICE)}*(1-{c(RESIDUAL)})/{c(LIFE)})", dep, num="money0")
            sh.calc(r, CAP, f"{c(COC)}*{c(PRICE)}*(1+{c(RESIDUAL)})/2", cap, num="money0")
            row.dep, row.cap = dep, cap
            sh.calc(r, BUY, f"{c(UNITS)}*(C{n}+D{n}+E{n})*{c(DAYS)}/{DAYS_PER_YEAR}", buy, num="money0")
            owned_sup = 0.0
            sh.num(r, OWNED_SUP, 0.0, num="money0")
        else:
            for col in (DEP, CAP):
                sh.text(r, col, "sunk", "na")
            buy = 0.0
            sh.num(r, BUY, 0.0, num="money0")
            owned_sup = x.nodes * x.support_per_year * x.service_days / DAYS_PER_YEAR
            sh.calc(r, OWNED_SUP, f"{c(UNITS)}*{c(SUPPORT)}*{c(DAYS)}/{DAYS_PER_YEAR}", owned_sup, num="money0")
        sh.calc(r, SUP, c(SUPPORT), x.support_per_year, num="money0")
        idle = x.nodes * x.idle_kw * V["pue"] * V["tariff_day"] * x.service_days
        sh.calc(r, IDLE_E, f"{c(UNITS)}*{c(IDLE)}*{pue}*{tday}*{c(DAYS)}", idle, num="money0")
        sp = 0.0
        for g, t in zip(x.served_gpu_hours_by_hour, V["tariff"]):
            sp += g * t
        serve = sp * (x.load_kw - x.idle_kw) / x.gpus_per_node * V["pue"]
        s = row.served + 1
        sh.calc(r, SERVE_E, f"SUMPRODUCT(B{s}:Y{s},{tariff})*({c(LOAD)}-{c(IDLE)})/{c(GPN)}*{pue}", serve,
                num="money0")
        co = x.nodes * V["colo"] * x.load_kw * 12 / DAYS_PER_YEAR * x.service_days
        sh.calc(r, COLO, f"{c(UNITS)}*{colo}*{c(LOAD)}*12/{DAYS_PER_YEAR}*{c(DAYS)}", co, num="money0")
        fac = idle + serve + co + owned_sup
        sh.calc(r, FAC, f"G{n}+H{n}+I{n}+J{n}", fac, num="money0")
        sh.calc(r, RUN, f"F{n}+K{n}", buy + fac, num="money0")
        row.buy, row.fac = buy, fac
        gpus = f"{ref(sh.name, row.inp, UNITS)}*{ref(sh.name, row.inp, GPN)}"
        refs.own_offer[x.offer] = {"ownership": (ref(sh.name, r, BUY), buy), "facility": (ref(sh.name, r, FAC), fac),
                                   "days": ref(sh.name, row.inp, DAYS), "gpus": gpus,
                                   # the facility cost's parts, for each workload's share (Workloads)
                                   "fixed": ("+".join(ref(sh.name, r, k) for k in (IDLE_E, COLO, OWNED_SUP)),
                                             idle + co + owned_sup),
                                   "serving": (ref(sh.name, r, SERVE_E), serve),
                                   "held": (f"{gpus}*24*{ref(sh.name, row.inp, DAYS)}",
                                            x.nodes * x.gpus_per_node * 24 * x.service_days)}
        if x.kind == "buy":  # what is paid in cash (Cash flow's by-month table): the price, and support as it runs
            inp = lambda col: ref(sh.name, row.inp, col)  # noqa: E731
            refs.own_offer[x.offer]["capex"] = (f"{inp(UNITS)}*{inp(PRICE)}", x.nodes * x.price_per_node)
            refs.own_offer[x.offer]["support"] = (f"{inp(UNITS)}*{inp(SUPPORT)}*{inp(DAYS)}/{DAYS_PER_YEAR}",
                                                  x.nodes * x.support_per_year * x.service_days / DAYS_PER_YEAR)
    first, last = head + 1, r
    r += 1
    sh.text(r, 0, "Total", "total")
    sh.text(r, 1, "", "total")
    for col in range(DEP, RUN + 1):
        if col in (DEP, CAP, SUP):
            sh.text(r, col, "", "total")
            continue
        v = 0.0
        for row in rows:
            v += {BUY: row.buy, FAC: row.fac, RUN: row.buy + row.fac}.get(col, _col_value(row, col, V))
        sh.calc(r, col, f"SUM({rng(sh.name, first, last, col)})", v, "total", num="money0")
    buy_t = _sum(row.buy for row in rows)
    fac_t = _sum(row.fac for row in rows)
    refs.own_buy = (_name(sh, "own_buy_total", r, BUY), buy_t)
    refs.own_facility = (_name(sh, "own_facility_total", r, FAC), fac_t)
    _name(sh, "own_total", r, RUN)
    refs.tier_cost["buy"] = buy_t  # the Summary's tiers read these totals
    refs.tier_cost["facility"] = fac_t
    r += 1
    sh.text(r, 0, "Ownership share: tier buy on Summary. Energy and space: tier facility. Owned servers' "
                  "depreciation is sunk: not in the all-in, in the book view (see below).", "note")
    return r


def ownership(x: OwnInputRow) -> tuple[float, float, float]:
    """A bought offer's depreciation and capital per unit a year, and its ownership share over the horizon,
    computed as the costs table's formulas compute them (Purchases prices the buy row from the share)."""
    dep = x.price_per_node * (1.0 - x.residual_fraction) / x.life_years if x.life_years else 0.0
    cap = x.cost_of_capital * x.price_per_node * (1.0 + x.residual_fraction) / 2.0
    return dep, cap, x.nodes * (dep + cap + x.support_per_year) * x.service_days / DAYS_PER_YEAR


def _col_value(row: _Row, col: int, V: dict) -> float:
    """A costs-table cell's value recomputed as its formula does (for the totals' stored values)."""
    x = row.x
    if col == IDLE_E:
        return x.nodes * x.idle_kw * V["pue"] * V["tariff_day"] * x.service_days
    if col == SERVE_E:
        sp = 0.0
        for g, t in zip(x.served_gpu_hours_by_hour, V["tariff"]):
            sp += g * t
        return sp * (x.load_kw - x.idle_kw) / x.gpus_per_node * V["pue"]
    if col == COLO:
        return x.nodes * V["colo"] * x.load_kw * 12 / DAYS_PER_YEAR * x.service_days
    if col == OWNED_SUP:
        return x.nodes * x.support_per_year * x.service_days / DAYS_PER_YEAR if x.kind == "owned" else 0.0
    return 0.0


def _sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


# --- P&L against cash ------------------------------------------------------------------------------

def all_in(result: PlanResult, refs: Refs) -> tuple[str, float]:
    """The all-in cell as formulas read it (Summary's all_in_cost: the total, plus committed spend when the
    plan has signed contracts) and its value as Summary stores it."""
    total = refs.scenario["risk"][1] if refs.tiers_name != "total_cost" else \
        _sum(refs.tier_cost.get(k, 0.0) for k in ("buy", "facility", "reserved", "on_demand", "spot",
                                                  "savings_plan")) \
        + (refs.api_total[1] if refs.api_total else 0.0)
    committed = refs.committed[1] if ((result.commitments or result.spend_commitments) and refs.committed) else 0.0
    return "all_in_cost", total + committed


def _pnl(sh: Sheet, result: PlanResult, rows: list[_Row], refs: Refs, r: int) -> int:
    """Bought servers' share of the all-in against their cash, the servers owned, then the horizon three
    ways: all-in (what the plan minimises), the book (depreciation owned and bought + opex; the cost of
    capital apart) and cash (capex at delivery, support as it runs)."""
    own = result.own
    assert own is not None
    sh.text(r, 0, "Servers bought: their share of the all-in, the book and the cash", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Offer", "Units", "Delivered", "Capex at delivery (cash)", "Depreciation in the horizon (book)",
                     "Cost of capital in the horizon (not an expense)", "Support in the horizon (opex)",
                     "Ownership share (all-in)", "Book value at the horizon's end", "Share of capex expensed"])
    sh.ws.set_row(r, 30)
    delivered = {b.offer: b.delivery_date or f"day {b.delivery_day}" for b in own.bought}
    capex_t = share_t = support_t = dep_t = cap_t = 0.0
    bought = [row for row in rows if row.x.kind == "buy" and row.x.nodes]
    for row in bought:
        r += 1
        x, i, k, n = row.x, row.inp + 1, row.cost + 1, r + 1
        sh.text(r, 0, x.offer)
        sh.calc(r, 1, f"C{i}", x.nodes, num="int")
        when = delivered.get(x.offer, "")
        if len(when) == 10 and when[4] == "-":  # a delivery date is stored as a date; "day N" (no start_date) as text
            sh.num(r, 2, float(serial(when)), num=DATE)
        else:
            sh.text(r, 2, when)
        capex = x.nodes * x.price_per_node
        sh.calc(r, 3, f"C{i}*E{i}", capex, num="money0")
        dep = x.nodes * row.dep * x.service_days / DAYS_PER_YEAR
        cap = x.nodes * row.cap * x.service_days / DAYS_PER_YEAR
        sup = x.nodes * x.support_per_year * x.service_days / DAYS_PER_YEAR
        for col, src, v in ((4, "C", dep), (5, "D", cap), (6, "E", sup)):
            sh.calc(r, col, f"C{i}*{src}{k}*L{i}/{DAYS_PER_YEAR}", v, num="money0")
        sh.calc(r, 7, f"F{k}", row.buy, num="money0")
        sh.calc(r, 8, f"D{n}-E{n}", capex - dep, num="money0")
        sh.calc(r, 9, f"IF(D{n}=0,0,E{n}/D{n})", dep / capex if capex else 0.0, num="pct")
        capex_t += capex
        share_t += row.buy
        support_t += sup
        dep_t += dep
        cap_t += cap
    if not bought:
        r += 1
        sh.text(r, 0, "None: the plan buys no servers.", "note")
    first, last = head + 1, max(r, head + 1)
    r += 1
    sh.text(r, 0, "Total", "total")
    for col, v in ((3, capex_t), (4, dep_t), (5, cap_t), (6, support_t), (7, share_t)):
        sh.calc(r, col, f"SUM({rng(sh.name, first, last, col)})" if bought else "0", v, "total", num="money0")
    _name(sh, "own_capex", r, 3)
    dep_bought = _name(sh, "own_depreciation_bought", r, 4)
    capital = _name(sh, "own_cost_of_capital", r, 5)
    refs.book_cells["cost_of_capital"] = (capital, cap_t)
    support_cell = f"G{r + 1}"

    dep_owned_v = 0.0
    dep_owned = "0"
    if own.owned:
        r += 2
        sh.text(r, 0, "Servers owned already (capital sunk: their depreciation is in the book, not in the all-in)",
                "total")
        r += 1
        sh.header(r, 0, ["Offer", "Units", "GPUs", "Book value", "Depreciation in the horizon", "GPU-hours used",
                         "Use"])
        sh.ws.set_row(r, 30)
        o_first = r + 1
        for o in own.owned:
            r += 1
            sh.text(r, 0, o.offer)
            sh.num(r, 1, o.nodes, num="int")
            sh.num(r, 2, o.gpus, num="int")
            sh.num(r, 3, o.book_value, num="money0")
            sh.num(r, 4, o.depreciation_in_horizon, num="money0")
            sh.num(r, 5, o.gpu_hours_used, num="int")
            sh.num(r, 6, o.utilization, num="pct")
            dep_owned_v += o.depreciation_in_horizon
        r += 1
        sh.text(r, 0, "Total", "total")
        sh.calc(r, 4, f"SUM({rng(sh.name, o_first, r - 1, 4)})", dep_owned_v, "total", num="money0")
        dep_owned = _name(sh, "own_depreciation_owned", r, 4)
        refs.book_cells["depreciation_owned"] = (dep_owned, dep_owned_v)
        r += 1
        sh.text(r, 0, "Straight line: the book value over the remaining life, for the days they serve.", "note")

    all_in_ref, all_in_v = all_in(result, refs)
    total_v = _sum(refs.tier_cost.get(k, 0.0) for k in ("buy", "facility", "reserved", "on_demand", "spot",
                                                        "savings_plan")) \
        + (refs.api_total[1] if refs.api_total else 0.0)
    r += 2
    sh.text(r, 0, "The horizon three ways: all-in, book, cash", "total")
    r += 1
    sh.text(r, 0, "All-in (Summary's all_in_cost: what the plan minimises; bought servers at their ownership share)")
    sh.calc(r, 3, all_in_ref, all_in_v, num="money0")
    a = r + 1
    r += 1
    sh.text(r, 0, "… less the cost of capital of servers bought (shown apart: not an expense)")
    sh.calc(r, 3, f"-{capital}", -cap_t, num="money0")
    r += 1
    sh.text(r, 0, "… plus the depreciation of servers owned (sunk, so not in the all-in)")
    sh.calc(r, 3, dep_owned, dep_owned_v, num="money0")
    r += 1
    book_v = all_in_v - cap_t + dep_owned_v
    sh.text(r, 0, "Book view (P&L): depreciation, owned and bought, + opex", "total")
    sh.calc(r, 3, f"D{a}+D{a + 1}+D{a + 2}", book_v, "total", num="money0")
    book = _name(sh, "book_cost", r, 3)
    r += 1
    sh.text(r, 0, "… of which depreciation of servers owned")
    sh.calc(r, 3, dep_owned, dep_owned_v, num="money0")
    r += 1
    sh.text(r, 0, "… of which depreciation of servers bought")
    sh.calc(r, 3, dep_bought, dep_t, num="money0")
    r += 1
    opex_v = all_in_v - dep_t - cap_t
    sh.text(r, 0, "… of which opex: renting, contracts, API, energy, space and support")
    sh.calc(r, 3, f"{book}-{dep_owned}-{dep_bought}", book_v - dep_owned_v - dep_t, num="money0")
    _name(sh, "book_opex", r, 3)
    assert abs(opex_v - (book_v - dep_owned_v - dep_t)) <= 1e-6 * max(1.0, abs(opex_v))
    r += 2
    sh.text(r, 0, "Cost in the horizon (new spend: Summary's total)" if refs.tiers_name == "total_cost"
            else "Cost in the horizon (new spend: Summary's expected cost over the scenarios)")
    sh.calc(r, 3, refs.tiers_name, total_v, num="money0")
    r += 1
    sh.text(r, 0, "… of which the ownership share of servers bought")
    sh.calc(r, 3, "own_buy_total", share_t, num="money0")
    r += 1
    sh.text(r, 0, "… of which support, paid as it runs")
    sh.calc(r, 3, support_cell, support_t, num="money0")
    r += 1
    sh.text(r, 0, "Cash out in the horizon: the total without the ownership share, plus support as it runs and "
            "capex at delivery")
    sh.calc(r, 3, f"D{r - 2}-D{r - 1}+D{r}+own_capex", total_v - share_t + support_t + capex_t, num="money0")
    return r


# --- break-even and the decision -------------------------------------------------------------------

def _break_even(sh: Sheet, result: PlanResult, rows: list[_Row], refs: Refs, r: int) -> int:
    own = result.own
    assert own is not None
    V, at = refs.own_values, refs.own
    sh.text(r, 0, "Break-even: owning against renting the same accelerator", "h2")
    r += 1
    sh.ws.merge_range(r, 0, r, 11, "", sh.fmt("note"))
    sh.text(r, 0, "Owning costs fixed + serving energy × use per GPU-hour owned. Against an hourly price P it wins "
                  "from use = fixed ÷ (P − serving energy); against a reservation (paid whatever the use) up to "
                  "use = (P − fixed) ÷ serving energy.", "note")
    sh.ws.set_row(r, 28)
    r += 1
    sh.header(r, 0, ["Buy offer", "Accelerator", "Fixed per GPU-hour owned", "Serving energy per GPU-hour used",
                     "Against", "Tier", "Price per GPU-hour", "Owning wins from use", "up to use"])
    sh.ws.set_row(r, 30)
    by_offer = {row.x.offer: row for row in rows}
    for b in own.break_even:
        r += 1
        n = r + 1
        sh.text(r, 0, b.offer)
        sh.text(r, 1, b.accelerator)
        row = by_offer.get(b.offer)
        if row is None:
            sh.num(r, 2, b.fixed_per_gpu_hour, num="money2")
            sh.num(r, 3, b.serving_energy_per_gpu_hour, num="money2")
            f, v = b.fixed_per_gpu_hour, b.serving_energy_per_gpu_hour
        else:
            x, i, k = row.x, row.inp + 1, row.cost + 1
            per_day = (row.dep + row.cap + x.support_per_year) / DAYS_PER_YEAR \
                + x.idle_kw * V["pue"] * V["tariff_day"] + V["colo"] * x.load_kw * 12 / DAYS_PER_YEAR
            f = per_day / (24 * x.gpus_per_node)
            sh.calc(r, 2, f"((C{k}+D{k}+E{k})/{DAYS_PER_YEAR}+K{i}*{at['pue']}*{at['tariff_day']}"
                          f"+{at['colo']}*J{i}*12/{DAYS_PER_YEAR})/(24*D{i})", f, num="money2")
            v = (x.load_kw - x.idle_kw) / x.gpus_per_node * V["pue"] * V["tariff_day"] / 24
            sh.calc(r, 3, f"(J{i}-K{i})/D{i}*{at['pue']}*{at['tariff_day']}/24", v, num="money2")
        sh.text(r, 4, b.against)
        sh.text(r, 5, b.tier)
        price_ref = refs.price.get((b.against, b.tier))
        if price_ref:
            sh.calc(r, 6, price_ref, b.price_per_gpu_hour, num="money2")
        else:
            sh.inp(r, 6, b.price_per_gpu_hour, "money2")
        p = b.price_per_gpu_hour
        if b.tier.startswith("reserved"):  # paid whatever the use: owning wins up to (P − F) ÷ V
            lo = "never" if p <= f else 0.0
            hi = "never" if p <= f else (min(1.0, (p - f) / v) if v > 0 else 1.0)
            sh.calc(r, 7, f'IF(G{n}<=C{n},"never",0)', lo, num="pct")
            sh.calc(r, 8, f'IF(G{n}<=C{n},"never",IF(D{n}>0,MIN(1,(G{n}-C{n})/D{n}),1))', hi, num="pct")
        else:  # paid per GPU-hour used: owning wins from F ÷ (P − V)
            lo_v = f / (p - v) if p > v else None
            ok = lo_v is not None and lo_v <= 1.0
            sh.calc(r, 7, f'IF(G{n}<=D{n},"never",IF(C{n}/(G{n}-D{n})>1,"never",C{n}/(G{n}-D{n})))',
                    lo_v if ok else "never", num="pct")
            sh.calc(r, 8, f'IF(G{n}<=D{n},"never",IF(C{n}/(G{n}-D{n})>1,"never",1))', 1.0 if ok else "never",
                    num="pct")
    if not own.break_even:
        r += 1
        sh.text(r, 0, "No rented price of the same accelerator to compare with.", "note")
    return r


def _decision(sh: Sheet, result: PlanResult, rows: list[_Row], refs: Refs, r: int) -> int:
    """Each server bought against its cheapest rented alternative at the use the solve gave it: the saving a
    month before owning, the payback (price ÷ saving) and the NPV over its life, live on the inputs and the
    alternative's price (results.own computes the JSON's the same way)."""
    own = result.own
    assert own is not None
    V, at = refs.own_values, refs.own
    sh.text(r, 0, "The buy decision", "h2")
    if not own.bought:
        r += 1
        sh.text(r, 0, "Buy nothing: renting (and the servers owned) cost less over this horizon.", "note")
        return r
    r += 1
    sh.ws.merge_range(r, 0, r, 11, "", sh.fmt("note"))
    sh.text(r, 0, "Per unit, at the use the solve gave the servers bought and the alternative's price: renting "
                  "costs the price per GPU-hour (a reservation) or the price × use (by the hour); running one costs "
                  "idle energy, space and support per GPU-hour owned + serving energy × use. Saving a month = "
                  "(renting − running) × GPUs per unit × 24 × 365 ÷ 12. Payback = price ÷ saving. NPV: the saving "
                  "each month of the life, discounted at the cost of capital ÷ 12, + residual × price at the end, "
                  "− price.", "note")
    sh.ws.set_row(r, 42)
    r += 1
    sh.header(r, 0, ["Offer", "Units", "Use (solved)", "Against", "Price per GPU-hour against",
                     "Renting per GPU-hour owned", "Running per GPU-hour owned", "Saving per unit a month",
                     "Payback (months)", "NPV per unit over its life"])
    sh.ws.set_row(r, 30)
    by_offer = {row.x.offer: row for row in rows}
    for b in own.bought:
        r += 1
        n = r + 1
        row = by_offer.get(b.offer)
        sh.text(r, 0, b.offer)
        sh.num(r, 2, b.utilization, num="pct")
        sh.text(r, 3, b.alternative or "–")
        if row is None or not b.alternative:
            sh.num(r, 1, b.nodes, num="int")
            sh.num(r, 8, b.payback_months, num="dec1")
            sh.num(r, 9, b.npv_per_unit, num="money0")
        else:
            x, i, k = row.x, row.inp + 1, row.cost + 1
            sh.calc(r, 1, f"C{i}", x.nodes, num="int")
            oid, _, tier = b.alternative.rpartition(" ")
            price_v = next((e.price_per_gpu_hour for e in own.break_even
                            if e.offer == b.offer and e.against == oid and e.tier == tier), 0.0)
            price_ref = refs.price.get((oid, tier))
            if price_ref:
                sh.calc(r, 4, price_ref, price_v, num="money2")
            else:
                sh.inp(r, 4, price_v, "money2")
            held = tier.startswith("reserved")  # paid whatever the use
            renting = price_v if held else price_v * b.utilization
            sh.calc(r, 5, f"E{n}" if held else f"E{n}*C{n}", renting, num="money2")
            running = (x.idle_kw * V["pue"] * V["tariff_day"] + V["colo"] * x.load_kw * 12 / DAYS_PER_YEAR
                       + x.support_per_year / DAYS_PER_YEAR) / (24 * x.gpus_per_node) \
                + (x.load_kw - x.idle_kw) / x.gpus_per_node * V["pue"] * V["tariff_day"] / 24 * b.utilization
            sh.calc(r, 6, f"(K{i}*{at['pue']}*{at['tariff_day']}+{at['colo']}*J{i}*12/{DAYS_PER_YEAR}"
                          f"+I{i}/{DAYS_PER_YEAR})/(24*D{i})+(J{i}-K{i})/D{i}*{at['pue']}*{at['tariff_day']}/24*C{n}",
                    running, num="money2")
            saving = (renting - running) * x.gpus_per_node * 24 * DAYS_PER_YEAR / 12
            sh.calc(r, 7, f"(F{n}-G{n})*D{i}*24*{DAYS_PER_YEAR}/12", saving, num="money0")
            months = x.price_per_node / saving if saving > 0 else "never"
            sh.calc(r, 8, f'IF(H{n}<=0,"never",E{i}/H{n})', months, num="dec1")
            npv = npv_per_unit(x.price_per_node, saving, x.life_years, x.residual_fraction, x.cost_of_capital)
            sh.calc(r, 9, f"IF(H{i}=0,H{n}*F{i}*12+G{i}*E{i}-E{i},"
                          f"H{n}*(1-(1+H{i}/12)^(-F{i}*12))/(H{i}/12)+G{i}*E{i}*(1+H{i}/12)^(-F{i}*12)-E{i})",
                    npv, num="money0")
            payback = ref(sh.name, r, 8)
            for name in (defined_name("own", b.offer, "payback_months"), "payback_months"):
                if name and sh.book.name(name, sh.name, r, 8):
                    payback = name
            for name in (defined_name("own", b.offer, "npv_per_unit"), "npv_per_unit"):
                if name:
                    sh.book.name(name, sh.name, r, 9)
            refs.own_offer.setdefault(b.offer, {})["payback"] = (payback, months)
        r += 1
        sh.ws.merge_range(r, 0, r, 11, "", sh.fmt("note"))
        if not write_live_text(sh, r, 0, b.decision, result, refs, "note"):
            sh.text(r, 0, b.decision, "note")
        sh.fit_row(r, b.decision, 150)
    return r


def _literal(s: str) -> str:
    """A text as a formula's string: quotes doubled, at most 255 characters a literal (Excel's limit), line
    breaks as CHAR(10)."""
    parts = []
    for i, line in enumerate(s.split("\n")):
        if i:
            parts.append("CHAR(10)")
        line = line.replace('"', '""')
        chunks = [line[j:j + 200] for j in range(0, len(line), 200)] or [""]
        parts += [f'"{c}"' for c in chunks if c or len(chunks) == 1]
    return "&".join(parts)


def _live(text: str, b, payback: str, months) -> tuple[str, str] | None:
    """`text` with the decision's payback phrase read from the payback cell: the formula, and its value."""
    if not b.alternative or b.decision not in text:
        return None
    never = f"; never paid back against {b.alternative} at {b.utilization:.0%} use"
    for tail in (f", paid back in {b.payback_months:.0f} months against {b.alternative}"
                 if b.payback_months is not None else None, never):
        if tail and b.decision.endswith(tail):
            base = b.decision[:-len(tail)]
            break
    else:
        return None
    before, _, after = text.partition(b.decision)
    paid = f'", paid back in "&TEXT({payback},"0")&" months against {b.alternative.replace(chr(34), chr(34) * 2)}"'
    phrase = f'IF(ISNUMBER({payback}),{paid},{_literal(never)})'
    formula = "&".join(p for p in (_literal(before + base) if before + base else "", phrase,
                                   _literal(after) if after else "") if p)
    value_tail = (f", paid back in {excel_round(months, 0):.0f} months against {b.alternative}"
                  if isinstance(months, (int, float)) else never)
    return formula, before + base + value_tail + after


def write_live_text(sh: Sheet, r: int, c: int, text: str, result: PlanResult, refs: Refs, *styles: str) -> bool:
    """Write `text` as a formula when it holds a buy decision whose payback the Own hardware sheet computes
    (Summary's Decision, this sheet's decision line): its months then follow an edited price. False when the
    text holds none (the caller writes it as text)."""
    if result.own is None:
        return False
    for b in result.own.bought:
        at = refs.own_offer.get(b.offer, {}).get("payback")
        live = _live(text, b, at[0], at[1]) if at else None
        if live:
            sh.ws.write_formula(r, c, "=" + live[0], sh.fmt(*styles), live[1])
            return True
    return False


def _binds(sh: Sheet, r: int, binding: bool, left: float) -> None:
    """Whether the limit bound the solve — or, once inputs are edited past it, that the servers no longer fit
    (in red)."""
    said = "yes" if binding else "full, but one more saves nothing" if left <= 0 else "no"
    sh.calc(r, 4, f'IF(D{r + 1}<0,"over the limit: re-solve","{said}")', "over the limit: re-solve" if left < 0
            else said)
    sh.ws.conditional_format(r, 3, r, 4, {"type": "formula", "criteria": f"=$D${r + 1}<0", "format": sh.fmt("short")})


def _facility_use(sh: Sheet, result: PlanResult, rows: list[_Row], r: int) -> int:
    fac = result.own.facility  # type: ignore[union-attr]
    sh.text(r, 0, "The facility: what owned and bought servers take of it", "h2")
    r += 1
    sh.header(r, 0, ["", "Limit", "Used", "Left", "Binds"])
    first, last = rows[0].inp + 1, rows[-1].inp + 1
    r += 1
    sh.text(r, 0, "Power (kW, servers' load)")
    sh.num(r, 1, fac.power_kw, num="dec1")
    used = 0.0
    for row in rows:
        used += row.x.nodes * row.x.load_kw
    sh.calc(r, 2, f"SUMPRODUCT(C{first}:C{last},J{first}:J{last})", used, num="dec1")
    if fac.power_kw is not None:
        sh.calc(r, 3, f"B{r + 1}-C{r + 1}", fac.power_kw - used, num="dec1")
        _binds(sh, r, "power_kw" in fac.binding, fac.power_kw - used)
    else:
        sh.text(r, 3, "no limit", "na")
        sh.text(r, 4, "no")
    r += 1
    sh.text(r, 0, "Racks")
    sh.num(r, 1, fac.racks, num="int")
    sh.num(r, 2, fac.racks_used, num="int")
    if fac.racks is not None:
        sh.calc(r, 3, f"B{r + 1}-C{r + 1}", fac.racks - fac.racks_used, num="int")
        _binds(sh, r, "racks" in fac.binding, fac.racks - fac.racks_used)
    else:
        sh.text(r, 3, "no limit", "na")
        sh.text(r, 4, "no")
    r += 1
    sh.text(r, 0, "Liquid cooling")
    sh.text(r, 1, "yes" if fac.liquid_cooling else "no", "value")
    labels = {"power_kw_plus_1000": "One more MW would save (re-solved)",
              "racks_plus_1": "One more rack position would save (re-solved)"}
    for k, v in fac.marginal.items():
        r += 1
        sh.text(r, 0, labels.get(k, k))
        sh.num(r, 1, v, num="money0")
    if not fac.marginal:
        r += 1
        sh.text(r, 0, "What one more MW or rack would save is priced only when the plan may buy servers and "
                      "sets that limit.", "note")
    return r


def _static(sh: Sheet, result: PlanResult, r: int) -> None:
    """A result without the inputs (written before they were kept): its figures as values."""
    sh.text(r, 0, "This result was written before the inputs were kept: figures, not formulas. Re-solve the plan "
                  "for a live sheet.", "note")
    r += 1
    sh.header(r, 0, ["Tier", "Over the horizon"])
    for k in ("buy", "facility"):
        r += 1
        sh.text(r, 0, k)
        sh.num(r, 1, result.cost_by_tier.get(k, 0.0), num="money0")


# --- names ----------------------------------------------------------------------------------------

def _name(sh: Sheet, name: str, r: int, c: int) -> str:
    """Define a name for one cell; what formulas use to read it."""
    return name if sh.book.name(name, sh.name, r, c) else ref(sh.name, r, c)


def _range_name(sh: Sheet, name: str, r: int, c1: int, c2: int) -> str:
    """Define a name for a row of cells; what formulas use to read them."""
    address = f"{ref(sh.name, r, c1)}:{cell(r, c2, True, True)}"
    if name.lower() in sh.book.names:
        return address
    sh.book.names.add(name.lower())
    sh.book.wb.define_name(name, "=" + address)
    return name
