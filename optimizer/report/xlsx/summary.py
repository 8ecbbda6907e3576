"""The workbook's Summary sheet: the headline, cost by tier, GPUs by accelerator, policy, what binds."""

from __future__ import annotations

from typing import Any

from optimizer import formatting, vocab
from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet
from optimizer.report.xlsx.own import write_live_text
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult

TIER_NAMES = {"buy": "cost_buy", "facility": "cost_facility", "reserved": "cost_reserved",
              "on_demand": "cost_on_demand", "spot": "cost_spot", "api": "cost_api",
              "savings_plan": "cost_savings_plan"}


def cost_keys(result: PlanResult) -> tuple[str, ...]:
    """The tiers Summary lists: with hardware of your own, buy and facility first (as cost.by_tier); spend
    commitments last, when the plan has any."""
    keys = (*vocab.OWN_COST_KEYS, *vocab.COST_KEYS) if result.own is not None else vocab.COST_KEYS
    return (*keys, "savings_plan") if "savings_plan" in result.cost_by_tier else keys


def tier_values(result: PlanResult, refs: Refs) -> dict[str, float]:
    """Each tier's cost as the Summary's cells hold it (cost_keys' order), read from the sheets written before."""
    out = {k: refs.tier_cost.get(k, 0.0) for k in cost_keys(result)}
    out["api"] = refs.api_total[1] if refs.api_total else 0.0
    return out


def tiers_formula(result: PlanResult) -> str:
    """The sum of the Summary's tier cells, by their names."""
    return "+".join(TIER_NAMES[k] for k in cost_keys(result))


def write_summary(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws, book = sh.ws, sh.book
    sh.widths([38, 18, 16, 16, 16, 18, 14, 14, 14])
    sh.text(0, 0, result.plan, "title")
    sh.text(1, 0, f"Inference capacity plan by planopt · {result.currency} · {formatting.days_text(result.horizon_days)}", "subtitle")
    sh.text(2, 0, "input (on Assumptions)", "input")
    sh.text(2, 1, "formula", "calc")
    sh.text(2, 2, "planopt result", "value")

    keys = cost_keys(result)
    tier_v = tier_values(result, refs)
    tiers_v = 0.0
    for k in keys:
        tiers_v += tier_v[k]
    tiers_f = tiers_formula(result)
    # under a cvar or worst-case measure over scenarios the total is that measure; the tiers are expected values
    split = refs.tiers_name != "total_cost"
    total_v = refs.scenario["risk"][1] if split else tiers_v
    r = 4
    sh.text(r, 0, "Headline", "h2")
    committed = refs.committed if result.commitments or result.spend_commitments else None
    if committed is not None:  # all-in first: what the horizon costs, signed contracts included
        r += 1
        sh.text(r, 0, "All-in over the horizon (new + committed)", "big")
        sh.calc(r, 1, "total_cost+committed_spend", total_v + committed[1], "big", num="money0")
        book.name("all_in_cost", sh.name, r, 1)
    r += 1
    new_label = "New spend over the horizon" if committed is not None else "Total cost over the horizon"
    if split:
        new_label += f": the {L.risk_name(result)} over the scenarios"
    sh.text(r, 0, new_label, "total" if committed is not None else "big")
    sh.calc(r, 1, "scenario_risk" if split else tiers_f, total_v, "total" if committed is not None else "big",
            num="money0")
    book.name("total_cost", sh.name, r, 1)
    if committed is None:  # nothing signed before: the all-in is the total
        book.name("all_in_cost", sh.name, r, 1)
    if split:
        r += 1
        sh.text(r, 0, "Expected cost over the scenarios: the tiers below add up to it")
        sh.calc(r, 1, tiers_f, tiers_v, num="money0")
        book.name("expected_cost", sh.name, r, 1)
    if result.risk is not None:
        r += 1
        sh.text(r, 0, "Risk measure over the scenarios (see Scenarios)")
        sh.text(r, 1, f"{L.risk_name(result)}: {L.risk_meaning(result)}", "value")
        if not split:
            r += 1
            sh.text(r, 0, "Expected cost over the scenarios (Scenarios: Σ weight × cost)")
            sh.calc(r, 1, refs.scenario["expected"][0], refs.scenario["expected"][1], num="money0")
    if committed is not None:
        r += 1
        sh.text(r, 0, "Already committed (signed before this plan, for the days in the horizon; sunk)")
        sh.calc(r, 1, "committed_spend", committed[1], num="money0")
    r += 1
    sh.text(r, 0, "New spend per day" if committed is not None else "Cost per day")
    sh.calc(r, 1, f"total_cost/{refs.horizon}", total_v / refs.horizon_days, "total", num="money0")
    book.name("cost_per_day", sh.name, r, 1)
    sh.text(r + 1, 0, "Horizon")
    sh.calc(r + 1, 1, refs.horizon, refs.horizon_days, num="days")
    sh.text(r + 2, 0, "Solver status")
    sh.text(r + 2, 1, _status(result), "value")
    sh.text(r + 3, 0, "Plan file")
    sh.text(r + 3, 1, result.file or "–", "value")
    if refs.sizing:  # an edited sizing input that the fleet no longer covers is flagged, not silent
        r += 1
        S = refs.sizing
        sh.text(r + 3, 0, "Workloads the fleet no longer covers (after edits on Assumptions)")
        short = sum(1 for need, have in refs.sizing_values if need is not None and need > have)
        sh.calc(r + 3, 1, f"SUMPRODUCT(ISNUMBER({S['needed']})*({S['needed']}>{S['fleet']}))", short, num="int")
        book.name("workloads_short", sh.name, r + 3, 1)
        ws.conditional_format(r + 3, 1, r + 3, 1, {"type": "cell", "criteria": ">", "value": 0,
                                                   "format": sh.fmt("short")})
        sh.text(r + 3, 2, "red on Workloads: GPUs needed > GPUs in the fleet; re-solve the plan", "note")

    r += 5
    sh.text(r, 0, "Decision", "h2")
    # text, not formulas: what the solve decided, worded once for console, HTML and workbook alike; an edit on
    # Assumptions recalculates every table of the workbook, not these sentences, and the label says so
    sh.text(r, 1, "As of the solve: these sentences state what the solve decided and do not follow edits on "
                  "Assumptions (the tables and totals do)", "note")
    money = lambda v, nd=0: formatting.money(v, result.currency, nd)  # noqa: E731
    for row in L.decision_rows(result, money):
        r += 1  # one row per line of the decision: its caveats go in its cell, so no cell below moves
        sentence = "\n".join([row.text, *(f"· {c}" for c in row.caveats)])
        sh.text(r, 0, row.what, "value")
        ws.merge_range(r, 1, r, 8, "", sh.fmt("note"))
        if not write_live_text(sh, r, 1, sentence, result, refs, "note"):  # a buy's payback: live on Own hardware
            sh.text(r, 1, sentence, "note")
        sh.fit_row(r, sentence, 110)
    r += 2
    cmd = f"planopt solve {result.file}" if result.file else "planopt solve PLAN.yaml"
    ws.merge_range(r, 0, r + 2, 5, "", sh.fmt("box"))
    sh.text(r, 0, "Changing an input on Assumptions (prices, days, occupancy, spares, rollout) recomputes the "
                  "costs of THIS fleet: the same GPU counts at the new prices and day counts. It does not "
                  "re-optimise; a different input may make another fleet cheaper. To re-optimise, change the "
                  f"plan file and run:  {cmd}", "box")
    ws.set_row(r, 22)

    r += 4
    sh.text(r, 0, "Cost by tier", "h2")
    r += 1
    tier_head = r
    sh.header(r, 0, ["Tier", "Over the horizon", "Per day", "Share"])
    formulas = _tier_formulas(refs)
    for k in keys:
        r += 1
        sh.text(r, 0, vocab.COST_LABELS[k])
        sh.calc(r, 1, formulas[k], tier_v[k], num="money0")
        book.name(TIER_NAMES[k], sh.name, r, 1)
        sh.calc(r, 2, f"B{r + 1}/{refs.horizon}", tier_v[k] / refs.horizon_days, num="money0")
        t = refs.tiers_name
        sh.calc(r, 3, f"IF({t}=0,0,B{r + 1}/{t})", tier_v[k] / tiers_v if tiers_v else 0.0, num="pct")
    r += 1
    sh.text(r, 0, "Expected over the scenarios (the total above is the risk measure)" if split else "Total", "total")
    sh.calc(r, 1, refs.tiers_name, tiers_v, "total", num="money0")
    sh.calc(r, 2, f"B{r + 1}/{refs.horizon}", tiers_v / refs.horizon_days, "total", num="money0")
    sh.calc(r, 3, f"IF({refs.tiers_name}=0,0,1)", 1.0 if tiers_v else 0.0, "total", num="pct")
    _tier_chart(sh, tier_head, r - 1, keys)

    r = _gpus_by_accelerator(sh, result, refs, tier_head + 14)
    r = _policy(sh, result, refs, r + 2)
    r = _binding(sh, result, r + 2)
    r = _commitments(sh, result, refs, r + 2)
    r = _changes(sh, result, r + 2)
    ws.hide_gridlines(2)
    sh.page(r, 8, landscape=False)


def _status(result: PlanResult) -> str:
    gap = result.solver.gap
    gap_txt = "gap unknown" if gap is None else f"proven gap {gap:.2%}"
    s = f"{result.status} ({result.solver.name}, {gap_txt})"
    mip_gap = result.policy.get("mip_gap")
    if gap is not None and mip_gap is not None and gap > float(mip_gap) + 1e-12:
        s += ": stopped at the time limit; a cheaper plan may exist"
    return s


def _tier_formulas(refs: Refs) -> dict[str, str]:
    cost, tier = refs.purchases["cost"], refs.purchases["tier"]

    def sumifs(*tiers: str) -> str:
        return "+".join(f'SUMIFS({cost},{tier},"{t}")' for t in tiers)

    out = {"reserved": sumifs(*vocab.RESERVED_TIERS), "on_demand": sumifs("on-demand"), "spot": sumifs("spot"),
           "api": refs.api_total[0] if refs.api_total else "0"}
    # servers of your own: the Own hardware sheet's totals (live over its inputs)
    out["buy"] = refs.own_buy[0] if refs.own_buy else repr(refs.tier_cost.get("buy", 0.0))
    out["facility"] = refs.own_facility[0] if refs.own_facility else repr(refs.tier_cost.get("facility", 0.0))
    out["savings_plan"] = refs.spend_net[0] if refs.spend_net else repr(refs.tier_cost.get("savings_plan", 0.0))
    if refs.spend_od_credit:  # spend commitments cover some of it
        out["on_demand"] += f"-{refs.spend_od_credit[0]}"
    return out


def _tier_chart(sh: Sheet, head: int, last: int, keys: tuple[str, ...]) -> None:
    chart = sh.book.wb.add_chart({"type": "column"})
    chart.add_series({
        "name": "Cost over the horizon", "categories": [sh.name, head + 1, 0, last, 0],
        "values": [sh.name, head + 1, 1, last, 1],
        "points": [{"fill": {"color": L.TIER_COLORS[k]}} for k in keys],
        "data_labels": {"value": True, "num_format": sh.book.nf["money0"], "font": {"size": 8}},
        "gap": 50})
    chart.set_title({"name": "Cost by tier over the horizon", "name_font": {"size": 11}})
    chart.set_legend({"none": True})
    chart.set_y_axis({"num_format": sh.book.nf["money0"], "num_font": {"size": 8},
                      "major_gridlines": {"visible": True, "line": {"color": "#E0E0E0"}}})
    chart.set_size({"width": 470, "height": 250})
    sh.ws.insert_chart(head - 1, 4, chart, {"x_offset": 25, "y_offset": 0})


def _gpus_by_accelerator(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    P = refs.purchases
    held = (*vocab.RESERVED_TIERS, "buy") if result.own is not None else vocab.RESERVED_TIERS
    sh.text(r, 0, "GPUs by accelerator and tier", "h2")
    r += 1
    owned = bool(result.own is not None and result.own.owned)
    sh.header(r, 0, ["Accelerator", ("Reserved, bought or owned GPUs" if owned else "Reserved and bought GPUs")
                     if result.own is not None else "Reserved GPUs",
                     "On-demand GPUs (peak hour)", "Spot GPUs (peak hour)", "GPU-hours", "Cost over the horizon"])
    sh.ws.set_row(r, 30)
    rows = refs.purchase_rows
    for acc in sorted({p["accelerator"] for p in rows}):
        r += 1
        sh.text(r, 0, acc)
        a = f'"="&A{r + 1}'
        mine = [p for p in rows if p["accelerator"] == acc]
        for c, tiers in ((1, held), (2, ("on-demand",)), (3, ("spot",))):
            f = "+".join(f'SUMIFS({P["gpus"]},{P["accelerator"]},{a},{P["tier"]},"{t}")' for t in tiers)
            sh.calc(r, c, f, sum(p["gpus"] for p in mine if p["tier"] in tiers), num="int")
        sh.calc(r, 4, f'SUMIFS({P["gpu_hours"]},{P["accelerator"]},{a})', _sum_in_order(rows, acc, "gh"),
                num="int")
        # servers bought: their ownership share is the purchase row; their energy, space and support are the
        # Own hardware sheet's (tier facility), so the rows add up to the total
        facility = [refs.own_offer[o]["facility"] for o in dict.fromkeys(p["offer"] for p in mine if p["tier"] == "buy")
                    if "facility" in refs.own_offer.get(o, {})]
        sh.calc(r, 5, f'SUMIFS({P["cost"]},{P["accelerator"]},{a})' + "".join(f"+{c}" for c, _v in facility),
                _sum_in_order(rows, acc, "cost") + sum(v for _c, v in facility), num="money0")
    for o in result.own.owned if result.own is not None else []:
        r += 1  # servers owned already: no purchase row, their GPUs and running cost (capital sunk)
        sh.text(r, 0, f"{o.accelerator} (owned)")
        cells = refs.own_offer.get(o.offer, {})
        if "gpus" in cells:  # the Own hardware sheet's units × GPUs per unit, and its running cost
            sh.calc(r, 1, cells["gpus"], o.gpus, num="int")
        else:
            sh.num(r, 1, o.gpus, num="int")
        if "held" in cells:  # held every hour they serve, as reserved and bought GPUs are (used: Own hardware)
            sh.calc(r, 4, cells["held"][0], cells["held"][1], num="int")
        else:
            sh.num(r, 4, o.gpu_hours_used, num="int")
        if "facility" in cells:
            sh.calc(r, 5, cells["facility"][0], cells["facility"][1], num="money0")
        else:
            sh.num(r, 5, o.running_in_horizon, num="money0")
    r += 1
    sh.text(r, 0, "On-demand and spot: the most in use at one hour on each offer, added up over offers. GPU-hours: "
            "reserved" + (", bought and owned" if result.own is not None else "") + " GPUs count every hour they are "
            "held, on-demand and spot the hours they are used."
            + (" Bought and owned servers: with their energy, space and support (Own hardware)."
               if result.own is not None else ""), "note")
    return r


def _sum_in_order(rows: list[dict], acc: str, what: str) -> float:
    total = 0.0
    for p in rows:
        if p["accelerator"] == acc:
            total += p["cost_value"] if what == "cost" else p["gh_value"]
    return total




def _policy(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    sh.text(r, 0, "Policy in force", "h2")
    pct = {"occupancy", "memory_reserve", "rollout_fraction", "mip_gap", "change_threshold"}
    for k, v in result.policy.items():
        r += 1
        sh.text(r, 0, L.POLICY_LABELS.get(k, k))
        num = "pct2" if k == "mip_gap" else ("pct" if k in pct else "#,##0.##")
        if k in refs.policy:
            sh.calc(r, 1, refs.policy[k], float(v), "left", num=num)
        else:
            _policy_value(sh, r, v, num)
    return r


def _policy_value(sh: Sheet, r: int, v: Any, num: str) -> None:
    if isinstance(v, bool):
        sh.text(r, 1, "yes" if v else "no", "value")
    elif isinstance(v, (int, float)):
        sh.num(r, 1, float(v), "value", "left", num=num)
    elif isinstance(v, (list, tuple)):
        sh.text(r, 1, ", ".join(str(x) for x in v) or "none", "value")
    elif isinstance(v, dict) and "measure" in v:  # policy.risk
        sh.text(r, 1, L.risk_words(str(v["measure"]), v.get("level")), "value")
    elif v is None:
        sh.text(r, 1, "any", "value")
    else:
        sh.text(r, 1, str(v), "value")


def _binding(sh: Sheet, result: PlanResult, r: int) -> int:
    sh.text(r, 0, "What binds", "h2")
    # the Decision's Binds lines, one account (results.decision.what_binds); goodput limits are the
    # Workloads sheet's "Goodput bound by"
    money = lambda v, nd=0: formatting.money(v, result.currency, nd)  # noqa: E731
    caps = L.caps_that_bind(result)
    binds, full = L.facility_binds(result, money)
    if not caps and not binds:
        r += 1
        sh.text(r, 0, L.NOTHING_BINDS[:1].upper() + L.NOTHING_BINDS[1:] + ".", "note")
    for b in caps:
        r += 1
        sh.text(r, 0, b.what)
        sh.ws.merge_range(r, 1, r, 5, "", sh.fmt("value"))
        sh.text(r, 1, f"{b.detail} ({b.family})", "value")
    for line in binds + full:
        r += 1
        what, _, detail = line.partition(": ")
        sh.text(r, 0, what)
        sh.ws.merge_range(r, 1, r, 5, "", sh.fmt("value"))
        sh.text(r, 1, detail, "value")
    for note in result.notes:
        r += 1
        sh.text(r, 0, "Note", "total")
        sh.ws.merge_range(r, 1, r, 5, "", sh.fmt("note"))
        sh.text(r, 1, note, "note")
    return r



def _commitments(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """Committed (sunk) spend next to new spend, and what new reservations commit over their terms."""
    sh.text(r, 0, "Committed and new spend (see Commitments)", "h2")
    committed = refs.committed or ("0", 0.0)
    new_total = refs.new_total or ("0", 0.0)
    total_v = sum(refs.tier_cost.get(k, 0.0) for k in ("buy", "facility", "reserved", "on_demand", "spot",
                                                       "savings_plan")
                  if k in cost_keys(result)) + (refs.api_total[1] if refs.api_total else 0.0)
    if refs.tiers_name != "total_cost":
        total_v = refs.scenario["risk"][1]
    rows = [("New spend in the horizon (the plan's total)", "total_cost", total_v),
            ("Already committed: contracts signed before this plan, for the days they overlap the horizon "
             "(sunk, not in the total)", committed[0], committed[1])]
    for label, f, v in rows:
        r += 1
        sh.text(r, 0, label, "wrap")
        sh.fit_row(r, label, 38)
        sh.calc(r, 1, f, v, num="money0")
    r += 1
    sh.text(r, 0, "New and committed spend in the horizon", "total")
    sh.calc(r, 1, f"B{r - 1}+B{r}", total_v + committed[1], "total", num="money0")
    r += 1
    label = "New reservations commit over their full terms"
    sh.text(r, 0, label)
    sh.calc(r, 1, new_total[0], new_total[1], num="money0")
    return r


def _changes(sh: Sheet, result: PlanResult, r: int) -> int:
    """With --baseline: every workload whose choice moved, with its saving."""
    b = result.baseline
    if b is None:
        return r
    sh.text(r, 0, f"Changes against the baseline (threshold {b.change_threshold:.1%} of a workload's cost)", "h2")
    r += 1
    if not b.changes:
        sh.text(r, 0, f"None: all {len(b.kept)} workloads kept their choice.", "note")
        return r
    sh.header(r, 0, ["Workload", "From", "To", "Cost before", "Cost after", "Saving", "Why"])
    for c in b.changes:
        r += 1
        sh.text(r, 0, c.workload)
        sh.text(r, 1, c.from_label, "wrap")
        sh.text(r, 2, c.to_label, "wrap")
        sh.num(r, 3, c.cost_before, num="money0")
        sh.num(r, 4, c.cost_after, num="money0")
        sh.calc(r, 5, f"D{r + 1}-E{r + 1}", c.cost_before - c.cost_after, num="money0")
        sh.text(r, 6, c.reason, "wrap")
        sh.fit_row(r, c.reason, 14)
    return r
