"""PlanResult → a live workbook for finance: inputs on Assumptions, costs as formulas stored with values.

Every formula is written with the value planopt computed for it (XlsxWriter `value=`), so readers
without a calculation engine see numbers and Excel still recalculates when an input changes. The
Python beside each formula computes that value the way the formula does, in the same order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import xlsxwriter

from optimizer.atomic import atomic_write
from optimizer.results.types import PlanResult
from optimizer.report import labels as L
from optimizer.report.xlsx import commitments as xlsx_commitments
from optimizer.report.xlsx import sheets as xlsx_sheets
from optimizer.report.xlsx import summary as xlsx_summary
from optimizer.results.jsonio import from_dict, to_dict
from optimizer.report.xlsx.cells import Book, Sheet, defined_name, ref, rng

SHEETS = ("Summary", "Assumptions", "Workloads", "Purchases", "Commitments", "Supply", "Hourly", "Alternatives",
          "Dropped")
FIXED_DATE = dt.datetime(2026, 1, 1)  # document properties: fixed so the same result gives the same bytes


@dataclass
class Refs:
    """Where the workbook keeps what other sheets' formulas read (filled sheet by sheet)."""

    horizon: str = ""
    horizon_days: int = 0
    days: dict[str, str] = field(default_factory=dict)
    policy: dict[str, str] = field(default_factory=dict)
    price: dict[tuple[str, str], str] = field(default_factory=dict)
    api_price: dict[tuple[str, str], str] = field(default_factory=dict)
    hourly: dict[str, str] = field(default_factory=dict)
    """Column ranges on Hourly by column key."""
    purchases: dict[str, str] = field(default_factory=dict)
    """Column ranges on Purchases by column key."""
    purchase_rows: list[dict] = field(default_factory=list)
    api_cost: dict[str, tuple[str, float]] = field(default_factory=dict)
    """workload → (cell with its API cost, value)."""
    api_total: tuple[str, float] | None = None
    tier_cost: dict[str, float] = field(default_factory=dict)
    signed: dict[str, str] = field(default_factory=dict)
    """Column ranges of the contracts already signed (Commitments)."""
    new: dict[str, str] = field(default_factory=dict)
    """Column ranges of the new reservations over their full term (Commitments)."""
    committed: tuple[str, float] | None = None
    """Cell with the committed (sunk) spend in the horizon, and its value."""
    new_total: tuple[str, float] | None = None
    """Cell with what the new reservations commit over their full terms, and its value."""


def write_workbook(result: PlanResult, path: Path) -> None:
    """Write OUTDIR/<plan>.xlsx atomically: a failure leaves no partial file."""
    with atomic_write(Path(path)) as tmp:
        build_workbook(result, tmp)


def build_workbook(result: PlanResult, target: Path) -> None:
    # The numbers the JSON keeps (rounded as it rounds them), so `planopt report` on the saved
    # JSON writes the same workbook as `planopt solve` did.
    result = from_dict(to_dict(result))
    wb = xlsxwriter.Workbook(str(target), {
        "strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False,
        "constant_memory": False})
    try:
        wb.set_properties({"title": f"planopt: {result.plan}"[:250], "subject": "Inference capacity plan",
                           "author": "planopt", "created": FIXED_DATE,
                           "comments": "Written by planopt from a solved plan; inputs on Assumptions."})
        wb.set_calc_mode("auto")
        book = Book(wb, result.currency)
        sheets = {n: book.sheet(n) for n in SHEETS}
        refs = Refs()
        write_assumptions(sheets["Assumptions"], result, refs)
        xlsx_sheets.write_hourly(sheets["Hourly"], result, refs)
        write_purchases(sheets["Purchases"], result, refs)
        xlsx_commitments.write_commitments(sheets["Commitments"], result, refs)
        xlsx_sheets.write_workloads(sheets["Workloads"], result, refs)
        xlsx_sheets.write_supply(sheets["Supply"], result, refs)
        xlsx_summary.write_summary(sheets["Summary"], result, refs)
        xlsx_sheets.write_alternatives(sheets["Alternatives"], result)
        xlsx_sheets.write_dropped(sheets["Dropped"], result)
        sheets["Summary"].ws.activate()
    finally:
        wb.close()


# --- Assumptions: every input finance may change ---------------------------------------------

def write_assumptions(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    sh.widths([34, 16, 16, 14, 14, 13, 13, 13, 13, 40])
    sh.text(0, 0, "Assumptions: the inputs you may change", "title")
    sh.text(1, 0, "input", "input")
    sh.text(1, 1, "formula", "calc")
    sh.text(1, 2, "planopt result", "value")
    sh.text(1, 3, "Edit the blue cells: costs on every sheet follow; the fleet (GPU counts) stays as "
                  "planopt chose it (see the note on Summary).", "hint")
    r = 3
    sh.text(r, 0, "Horizon and calendar", "h2")
    r += 1
    sh.text(r, 0, "Horizon")
    refs.horizon = sh.inp(r, 1, result.horizon_days, "days", name="horizon_days")
    sh.text(r, 2, "reserved capacity is paid for every day of the horizon", "hint")
    refs.horizon_days = result.horizon_days
    r += 1
    first_day_row = r + 1
    sh.text(r, 0, "Day type", "head")
    sh.text(r, 1, "Days", "head")
    sh.text(r, 2, "on-demand and spot are paid per day of each type", "hint")
    for d, n in result.day_types.items():
        r += 1
        sh.text(r, 0, d)
        refs.days[d] = sh.inp(r, 1, n, "days", name=defined_name("days", d))
    r += 1
    days_sum = sum(result.day_types.values())
    sh.text(r, 0, "Day types add up to", "total")
    sum_ref = f"SUM({rng(sh.name, first_day_row, r - 1, 1)})"
    sh.calc(r, 1, sum_ref, days_sum, "total", num="days")
    ok = days_sum == result.horizon_days
    sh.ws.write_formula(r, 2, f'=IF({sum_ref}={refs.horizon},"matches the horizon",'
                              f'"differs from the horizon: keep them equal")',
                        sh.fmt("hint"), "matches the horizon" if ok else "differs from the horizon: keep them equal")

    r += 2
    sh.text(r, 0, "Sizing policy (replica arithmetic on Workloads)", "h2")
    pol = result.policy
    for key, label, num in (("occupancy", "Target occupancy of a replica's goodput", "pct"),
                            ("spares", "Spare replicas per workload", "int"),
                            ("rollout_fraction", "Rollout headroom (share of base + spares)", "pct")):
        r += 1
        sh.text(r, 0, label)
        refs.policy[key] = sh.inp(r, 1, float(pol.get(key, 0.0)), num, name=key)
        sh.ws.data_validation(r, 1, r, 1, VALIDATION[key])

    r += 2
    tiers = L.used_tiers(result)
    sh.text(r, 0, f"Prices per GPU-hour ({result.currency})", "h2")
    r += 1
    sh.header(r, 0, ["Offer", "Provider", "Region", "Accelerator", "GPUs per node", *tiers])
    sh.text(r, 5 + len(tiers), "Estimated prices", "head")
    ws.set_row(r, 30)
    for o, info in result.offers.items():
        r += 1
        sh.text(r, 0, o)
        sh.text(r, 1, info.get("provider", ""))
        sh.text(r, 2, info.get("region", ""))
        sh.text(r, 3, info.get("accelerator", ""))
        sh.num(r, 4, info.get("gpus_per_node", 1), "value", num="int")
        prices = info.get("prices", {})
        for i, t in enumerate(tiers):
            p = prices.get(t)
            if p is None:
                sh.text(r, 5 + i, "not sold", "na")
            else:
                refs.price[(o, t)] = sh.inp(r, 5 + i, float(p), "money2", name=defined_name("price", o, t))
        est = [t for t, e in info.get("estimated", {}).items() if e]
        sh.text(r, 5 + len(tiers), ", ".join(est) and f"estimated: {', '.join(est)}", "hint")
    if result.apis:
        r += 2
        sh.text(r, 0, f"API prices ({result.currency} per million tokens)", "h2")
        r += 1
        sh.header(r, 0, ["Workload", "Input tokens", "Output tokens", "Input tokens per request",
                         "Output tokens per request", "Max share of tokens"])
        ws.set_row(r, 30)
        for wname, api in result.apis.items():
            r += 1
            sh.text(r, 0, wname)
            refs.api_price[(wname, "in")] = sh.inp(r, 1, float(api.get("usd_per_m_input", 0.0)), "money2",
                                                   name=defined_name("api", wname, "per_m_input"))
            refs.api_price[(wname, "out")] = sh.inp(r, 2, float(api.get("usd_per_m_output", 0.0)), "money2",
                                                    name=defined_name("api", wname, "per_m_output"))
            sh.num(r, 3, api.get("input_tokens_per_request"), num="int")
            sh.num(r, 4, api.get("output_tokens_per_request"), num="int")
            sh.num(r, 5, api.get("max_share"), num="pct")
    ws.freeze_panes(3, 0)
    sh.page(r, 9, landscape=False)


# Data validation on the policy inputs: a typo is refused, not silently priced.
VALIDATION = {
    "occupancy": {"validate": "decimal", "criteria": "between", "minimum": 0.0001, "maximum": 1,
                  "error_message": "Occupancy is a share in (0, 1]."},
    "spares": {"validate": "integer", "criteria": ">=", "value": 0, "error_message": "Spares is a whole number ≥ 0."},
    "rollout_fraction": {"validate": "decimal", "criteria": ">=", "value": 0,
                         "error_message": "Rollout headroom is a share ≥ 0."},
}


# --- Purchases: what is bought, per offer and tier, and the API ---------------------------------

def write_purchases(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    """cost = GPU-hours × price; reserved GPU-hours = GPUs × 24 × horizon days, on-demand and spot
    GPU-hours = Σ Hourly (GPUs × days) for the offer."""
    ws = sh.ws
    sh.widths([28, 12, 12, 13, 12, 11, 10, 14, 13, 16, 40])
    sh.text(0, 0, "Purchases: GPUs per offer and tier, and what they cost", "title")
    sh.intro(1, "Reserved GPUs are held all horizon; on-demand and spot GPUs are the most in use at one "
                  "hour, paid by the GPU-hour (see Hourly). Prices come from Assumptions.", 10, 2)
    head = 3
    sh.header(head, 0, ["Offer", "Provider", "Region", "Accelerator", "Tier", "GPUs", "GPUs per node",
                        "GPU-hours", "Price per GPU-hour", "Cost over the horizon", "Note"])
    ws.set_row(head, 30)
    rows = _purchase_rows(result)
    r = head
    od_gh, sp_gh = refs.hourly["od_gh"], refs.hourly["spot_gh"]
    hourly_offer = refs.hourly["offer"]
    for p in rows:
        r += 1
        sh.text(r, 0, p["offer"])
        sh.text(r, 1, p["provider"])
        sh.text(r, 2, p["region"])
        sh.text(r, 3, p["accelerator"])
        sh.text(r, 4, p["tier"])
        sh.num(r, 5, p["gpus"], num="int")
        sh.num(r, 6, p["gpus_per_node"], num="int")
        a = f"A{r + 1}"
        if p["tier"] in L.RESERVED_TIERS:
            gh = p["gpus"] * 24 * refs.horizon_days
            sh.calc(r, 7, f"F{r + 1}*24*{refs.horizon}", gh, num="int")
        else:
            col = od_gh if p["tier"] == "on-demand" else sp_gh
            gh = p["hourly_gpu_hours"]
            sh.calc(r, 7, f'SUMIFS({col},{hourly_offer},"="&{a})', gh, num="int")
        price_ref = refs.price.get((p["offer"], p["tier"]))
        if price_ref:
            sh.calc(r, 8, price_ref, p["price"], num="money2")
        else:
            sh.num(r, 8, p["price"], num="money2")
        cost = gh * p["price"]
        sh.calc(r, 9, f"H{r + 1}*I{r + 1}", cost, num="money0")
        p["cost_value"] = cost
        sh.text(r, 10, "estimated price (published discount policy)" if p["estimated"] else "", "hint")
    first, last = head + 1, max(r, head + 1)
    for key, col in (("offer", 0), ("accelerator", 3), ("tier", 4), ("gpus", 5), ("gpu_hours", 7),
                     ("cost", 9)):
        refs.purchases[key] = rng(sh.name, first, last, col)
    refs.purchase_rows = rows
    r += 1
    total = sum(p["cost_value"] for p in rows)
    sh.text(r, 0, "Total GPU cost", "total")
    for c in range(1, 9):
        sh.text(r, c, "", "total")
    sh.calc(r, 9, f"SUM({rng(sh.name, first, last, 9)})" if rows else "0", total, "total", num="money0")
    for t in L.PURCHASE_TIERS:
        g = L.TIER_GROUP[t]
        refs.tier_cost[g] = refs.tier_cost.get(g, 0.0) + sum(p["cost_value"] for p in rows if p["tier"] == t)
    r = _api_table(sh, result, refs, r + 3)
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(last, head + 1), 10)
    sh.page(r, 10, header_rows=(head, head))


def _purchase_rows(result: PlanResult) -> list[dict]:
    """One row per (offer, tier); reserved levels bought per pool add up."""
    rows: dict[tuple[str, str], dict] = {}
    for p in result.purchases:
        k = (p.offer, p.tier)
        if k in rows:
            rows[k]["gpus"] += p.gpus
            continue
        price = result.offers.get(p.offer, {}).get("prices", {}).get(p.tier, p.price_per_gpu_hour)
        rows[k] = {"offer": p.offer, "provider": p.provider, "region": p.region, "accelerator": p.accelerator,
                   "tier": p.tier, "gpus": p.gpus, "gpus_per_node": p.gpus_per_node, "price": float(price),
                   "estimated": p.price_estimated, "hourly_gpu_hours": _sum_rows(result, p.offer, p.tier)}
    order = {t: i for i, t in enumerate(L.PURCHASE_TIERS)}
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], order.get(k[1], 9)))]


def _sum_rows(result: PlanResult, offer: str, tier: str) -> float:
    """GPU-hours as SUMIFS over Hourly adds them: row by row, in the sheet's order."""
    total = 0.0
    for h in xlsx_sheets.hourly_rows(result):
        if h.offer == offer:
            g = h.on_demand_gpus if tier == "on-demand" else h.spot_gpus
            total += g * xlsx_sheets.row_days(result, h)
    return total


def _api_table(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """API cost = output tokens sent × (price per M output + price per M input × input/output) / 1e6."""
    if not result.apis:
        return r
    sh.text(r, 0, "API overflow: tokens the gateway sends to an API", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Workload", "Share of tokens sent", "Output tokens sent (horizon)",
                     "Input tokens per request", "Output tokens per request", "Price per M input",
                     "Price per M output", "", "", "Cost over the horizon", "Note"])
    sh.ws.set_row(r, 30)
    by_name = {w.name: w for w in result.workloads}
    for wname, api in result.apis.items():
        w = by_name.get(wname)
        r += 1
        api_cost = w.api_cost if w else 0.0
        sh.text(r, 0, wname)
        sh.num(r, 1, w.api_share if w else 0.0, num="pct")
        pin, pout = float(api.get("usd_per_m_input", 0.0)), float(api.get("usd_per_m_output", 0.0))
        tin, tout = api.get("input_tokens_per_request"), api.get("output_tokens_per_request")
        sh.calc(r, 5, refs.api_price[(wname, "in")], pin, num="money2")
        sh.calc(r, 6, refs.api_price[(wname, "out")], pout, num="money2")
        per_token = (pout + pin * tin / tout) / 1e6 if tin is not None and tout else 0.0
        if per_token > 0:
            sent = api_cost / per_token
            sh.num(r, 2, sent, num="tokens")
            sh.num(r, 3, tin, num="int")
            sh.num(r, 4, tout, num="int")
            value = sent * (pout + pin * tin / tout) / 1e6
            sh.calc(r, 9, f"C{r + 1}*(G{r + 1}+F{r + 1}*D{r + 1}/E{r + 1})/1000000", value, num="money0")
            sh.text(r, 10, "", "hint")
        else:
            value = api_cost
            sh.num(r, 2, None)
            sh.num(r, 9, value, num="money0")
            sh.text(r, 10, "token counts not in this result: cost as planopt computed it", "hint")
        refs.api_cost[wname] = (ref(sh.name, r, 9), value)
    r += 1
    total = sum(v for _, v in refs.api_cost.values())
    sh.text(r, 0, "Total API cost", "total")
    sh.calc(r, 9, f"SUM({rng(sh.name, head + 1, r - 1, 9)})", total, "total", num="money0")
    refs.api_total = (ref(sh.name, r, 9), total)
    return r
