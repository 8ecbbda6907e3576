"""Assumptions: every input finance may change (days, policy, prices, API prices), as defined names;
who wrote the workbook, when, and where each offer's prices come from."""

from __future__ import annotations

from xlsxwriter.utility import xl_col_to_name

from optimizer.report import labels as L
from optimizer.report.provenance import Provenance, price_sources
from optimizer.report.xlsx.cells import Sheet, defined_name, ref, rng
from optimizer.report.xlsx.commitments import DATE, serial
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult


def write_assumptions(sh: Sheet, result: PlanResult, refs: Refs, made: Provenance) -> None:
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
    if result.start_date is not None:  # a date stored as a date, named: formulas read it (Commitments' days)
        sh.text(r, 6, "First day")
        sh.num(r, 7, float(serial(result.start_date)), num=DATE)
        sh.book.name("start_date", sh.name, r, 7)
        refs.start_date = "start_date"
    r += 1
    first_day_row = r + 1
    sh.text(r, 0, "Day type", "head")
    sh.text(r, 1, "Days", "head")
    sh.text(r, 2, "on-demand and spot are paid per day of each type", "hint")
    for d, n in result.day_types.items():
        r += 1
        sh.text(r, 0, d)
        refs.days[d] = sh.inp(r, 1, n, "days", name=defined_name("days", d))
        w = L.scenario_weight(result, d)
        if w:  # a scenario's day type: its calendar days × the scenario's weight
            sh.text(r, 2, f"{n / w:,.4g} days × the scenario's weight {w:.4g}", "hint")
    r += 1
    days_sum = sum(result.day_types.values())
    sh.text(r, 0, "Day types add up to", "total")
    sum_ref = f"SUM({rng(sh.name, first_day_row, r - 1, 1)})"
    sh.calc(r, 1, sum_ref, days_sum, "total", num="days")
    ok = abs(days_sum - result.horizon_days) < 1e-6  # weighted days (scenarios) add up in floating point
    sh.ws.write_formula(r, 2, f'=IF(ABS({sum_ref}-{refs.horizon})<0.000001,"matches the horizon",'
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

    r = _business_demand(sh, result, refs, r)
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
                refs.price_value[refs.price[(o, t)]] = float(p)
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
    r = write_provenance(sh, result, made, r + 2)
    ws.freeze_panes(3, 0)
    sh.page(r, LAST_COL, landscape=False)


def _business_demand(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """Workloads sized from business numbers: the numbers as inputs, the peak as their formula (Workloads'
    peak demand reads it). Same order of operations as PeakDerivation, so the stored value is the float
    planopt sized with."""
    derived = [(w.name, w.peak_derivation) for w in result.workloads if w.peak_derivation is not None]
    if not derived:
        return r
    r += 2
    sh.text(r, 0, "Demand from business numbers (Workloads' peak demand follows)", "h2")
    sh.text(r, 2, "peak = users × active × requests × tokens × busiest hour's share ÷ 3,600 s (or ÷ 86,400 s × "
                  "peak ÷ mean) × (1 + growth)^(horizon ÷ 30): sized for the horizon's end", "hint")
    r += 1
    sh.header(r, 0, ["Workload", "Users", "Share active on a peak day", "Requests per active user a day",
                     "Output tokens per request", "Busiest hour's share of the day", "Peak ÷ mean hour",
                     "Monthly growth of users", "Peak output tok/s"])
    sh.ws.set_row(r, 30)
    for wname, d in derived:
        r += 1
        sh.text(r, 0, wname)

        def put(c: int, v: float, num: str | None, key: str, check: str) -> str:
            cell = sh.inp(r, c, v, num, name=defined_name("demand", wname, key))
            sh.ws.data_validation(r, c, r, c, VALIDATION[check])
            return cell

        users = put(1, d.users, "int", "users", "positive")
        active = put(2, d.active_share, "pct", "active_share", "share")
        requests = put(3, d.requests_per_active_user_per_day, None, "requests", "positive")
        tokens = put(4, d.output_tokens, "int", "output_tokens", "positive")
        daily = f"{users}*{active}*{requests}*{tokens}"
        if d.peak_hour_share is not None:
            share = put(5, d.peak_hour_share, "pct", "peak_hour_share", "share")
            sh.num(r, 6, None)
            formula = f"{daily}*{share}/3600"
        else:
            sh.num(r, 5, None)
            ratio = put(6, d.peak_to_mean or 0.0, None, "peak_to_mean", "positive")
            formula = f"{daily}/86400*{ratio}"
        growth = put(7, d.monthly_growth, "pct", "monthly_growth", "growth")
        formula += f"*(1+{growth})^({refs.horizon}/30)"
        sh.calc(r, 8, formula, d.peak_output_tokens_per_s, num="int")
        name = defined_name("demand", wname, "peak")
        cell = name if name and sh.book.name(name, sh.name, r, 8) else ref(sh.name, r, 8)
        refs.peak[wname] = (cell, d.peak_output_tokens_per_s)
    return r


LAST_COL = 9
SOURCE_CHARS_PER_LINE = 110  # columns C:J at Calibri 10, with room to spare


def write_provenance(sh: Sheet, result: PlanResult, made: Provenance, r: int) -> int:
    """planopt's version, the time written, and per offer its price source and as-of date; returns the last row."""
    sh.text(r, 0, "About this workbook", "h2")
    r += 1
    sh.text(r, 0, "Written by")
    sh.text(r, 1, f"planopt {made.version}")
    r += 1
    sh.text(r, 0, "Written at")
    sh.text(r, 1, made.generated_text)
    if made.pinned:
        sh.text(r, 3, "the time SOURCE_DATE_EPOCH gives", "hint")
    if result.file:
        r += 1
        sh.text(r, 0, "From the plan")
        sh.text(r, 1, result.file)
    sources = price_sources(result)
    if not sources:
        return r
    r += 2
    sh.text(r, 0, "Where the prices come from", "h2")
    r += 1
    sh.header(r, 0, ["Offer", "As of"])
    sh.ws.merge_range(r, 2, r, LAST_COL, "Price source", sh.fmt("head"))
    for s in sources:
        r += 1
        sh.text(r, 0, s.offer)
        sh.text(r, 1, s.as_of, "left")
        sh.ws.merge_range(r, 2, r, LAST_COL, "", sh.fmt("wrap"))
        sh.text(r, 2, s.source, "wrap")  # over the merged cell: plan text is written as text, never a formula
        lines = -(-len(s.source) // SOURCE_CHARS_PER_LINE)
        if lines > 1:
            sh.ws.set_row(r, 13 * lines)
    return r


# Data validation on the policy inputs: a typo is refused, not silently priced.
VALIDATION = {
    "occupancy": {"validate": "decimal", "criteria": "between", "minimum": 0.0001, "maximum": 1,
                  "error_message": "Occupancy is a share in (0, 1]."},
    "spares": {"validate": "integer", "criteria": ">=", "value": 0, "error_message": "Spares is a whole number ≥ 0."},
    "rollout_fraction": {"validate": "decimal", "criteria": ">=", "value": 0,
                         "error_message": "Rollout headroom is a share ≥ 0."},
    "positive": {"validate": "decimal", "criteria": ">", "value": 0, "error_message": "A number > 0."},
    "share": {"validate": "decimal", "criteria": "between", "minimum": 0.0001, "maximum": 1,
              "error_message": "A share in (0, 1]: 30% is 0.3."},
    "growth": {"validate": "decimal", "criteria": "between", "minimum": 0, "maximum": 1,
               "error_message": "Monthly growth is a share in [0, 1]: 5% is 0.05."},
}


DAILY_COL = 11
"""The API table's first column of output tokens sent a day, one column per day type (right of its Note)."""


def _tokens_sent(result: PlanResult, w, sent: float, refs: Refs, sh: Sheet | None = None,
                 r: int = 0) -> tuple[str, float]:
    """Output tokens sent over the horizon as a day type's tokens a day × its days (cells above), so
    the API cost follows the calendar. A day's tokens: the hourly overflow (interactive), or the
    horizon's tokens spread evenly over its days (batch). With `sh`, each day type's tokens a day are written
    in row `r` (from DAILY_COL) and the formula reads those cells rather than holding the numbers."""
    days = {d: refs.days[d] for d in result.day_types if d in refs.days}
    rates = w.hourly_api_tokens_per_s if w is not None else {}
    per_day = {d: sum(rates.get(d, [])) * 3600.0 for d in days}
    if not days:
        return repr(sent), sent
    if not any(per_day.values()):
        per_day = {d: sent / result.horizon_days for d in days}
    else:  # the rates are rounded in the result: scale so that the days as planned give the tokens sent
        planned = sum(v * result.day_types[d] for d, v in per_day.items())
        per_day = {d: v * sent / planned for d, v in per_day.items()}
    parts = []
    for i, (d, v) in enumerate(per_day.items()):
        if not v:
            continue
        if sh is not None:
            sh.num(r, DAILY_COL + i, v, num="tokens")
            parts.append(f"{xl_col_to_name(DAILY_COL + i)}{r + 1}*{days[d]}")
        else:
            parts.append(f"{v!r}*{days[d]}")
    value = sum(v * result.day_types[d] for d, v in per_day.items() if v)
    return ("+".join(parts) or "0"), value


def api_table(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """API cost = output tokens sent × (price per M output + price per M input × input/output) / 1e6."""
    if not result.apis:
        return r
    sh.text(r, 0, "API overflow: tokens the gateway sends to an API", "h2")
    r += 1
    head = r
    sh.header(r, 0, ["Workload", "Share of tokens sent", "Output tokens sent (a day's × the days above)",
                     "Input tokens per request", "Output tokens per request", "Price per M input",
                     "Price per M output", "", "", "Cost over the horizon", "Note"]
              + [f"Output tokens sent a day: {d}" for d in result.day_types if d in refs.days])
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
            sent_formula, sent = _tokens_sent(result, w, api_cost / per_token, refs, sh, r)
            sh.calc(r, 2, sent_formula, sent, num="tokens")
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
