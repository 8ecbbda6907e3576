"""The workbook's Scenarios sheet (plans with `scenarios:`): what the plan costs if each comes true, and the
risk measure over them as live formulas.

    cost if it came true = decided once (reservations, servers bought, their fixed costs) + its hourly part
    expected             = SUMPRODUCT(weights, costs)
    P90                  = the smallest cost whose weight at or below it reaches 90%
    cvar at α            = min over the costs η of η + Σ weight × (cost − η)⁺ ÷ (1 − α)
    worst                = the largest cost

The hourly parts are planopt's, scaled by the Summary's hourly tiers now ÷ their expected value solved (so
edited prices and days move them, and the expected cost stays the Summary's); regrets are planopt's (values);
the first stage reads the Summary's tiers. Each Python value beside a formula is computed the way the
formula computes it.
"""

from __future__ import annotations

from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet, rng
from optimizer.report.xlsx.refs import Refs
from optimizer.report.xlsx.summary import tier_values, tiers_formula
from optimizer.results.types import PlanResult

SHEET = "Scenarios"
Q = 0.9
TOL = 1e-12
"""quantile's tolerance (results.scenarios): a weight within it of 90% reaches 90%."""

HEAD = ["Scenario", "Weight", "Decided once", "Hourly part", "Cost if it came true", "GPU-hours on hourly tiers",
        "Regret", "Weight at or below its cost", "Cost at or above P90"]
NAME, WEIGHT, FIRST, HOURLY, COST, SHORT, REGRET, BELOW, P90 = range(9)
CVAR = 9


def write_scenarios(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    risk = result.risk
    assert risk is not None and result.scenarios
    ws, book = sh.ws, sh.book
    cvar = risk.measure == "cvar"
    sh.widths([26, 10, 14, 14, 15, 14, 13, 13, 14, 16])
    sh.text(0, 0, "Scenarios: what the plan costs if each comes true, and the risk measure over them", "title")
    sh.intro(1, "Reservations and servers bought are decided once, before the scenario is known (the first stage); "
                "on-demand, spot, the API and serving energy follow each scenario (its hourly part, planopt's result; "
                "prices or days edited on Assumptions scale every hourly part alike, exact for the expected cost — "
                "re-solve for each scenario's own). "
                f"The plan's total is the {L.risk_name(result)}: {L.risk_meaning(result)}. Weights are inputs: the "
                "expected cost, the P90 and the risk measure follow them; the plan does not (re-solve to re-optimise).",
             9, 3)
    r = _first_stage(sh, result, refs, 3)
    first_cell, first_v = refs.scenario["first"]

    r += 2
    sh.text(r, 0, "Each scenario", "h2")
    r += 1
    head = r
    sh.header(r, 0, HEAD + (["CVaR with η at its cost"] if cvar else []))
    ws.set_row(r, 30)
    rows = result.scenarios
    first, last = head + 1, head + len(rows)
    W, C = rng(sh.name, first, last, WEIGHT), rng(sh.name, first, last, COST)
    weights = [s.weight for s in rows]
    # Each hourly part follows the Summary's hourly tiers (prices and days edited on Assumptions): scaled by their
    # total now ÷ their expected value solved — exact for the expected cost, a first reading for each scenario
    tiers_f = f"({tiers_formula(result)})"
    tiers_v = 0.0
    for v in tier_values(result, refs).values():  # in the Summary's order: the same sum as its cell
        tiers_v += v
    solved = 0.0
    for s in rows:
        solved += s.weight * s.cost_hourly
    scale = (tiers_v - first_v) / solved if solved else None
    hourly = [s.cost_hourly * scale if scale is not None else s.cost_hourly for s in rows]
    costs = []
    for h in hourly:
        costs.append(first_v + h)
    below = []
    for c in costs:
        acc = 0.0
        for w, c2 in zip(weights, costs):
            acc += w * (1.0 if c2 <= c else 0.0)
        below.append(acc)
    top = max(costs)
    level = risk.level if risk.level is not None else 0.9
    cvals = _cvar_values(weights, costs, level)
    for i, s in enumerate(rows):
        r += 1
        n = r + 1
        sh.text(r, NAME, s.name)
        sh.inp(r, WEIGHT, s.weight, "pct")
        sh.calc(r, FIRST, first_cell, first_v, num="money0")
        if scale is not None:
            sh.calc(r, HOURLY, f"{s.cost_hourly!r}*({tiers_f}-{first_cell})/{solved!r}", hourly[i], num="money0")
        else:
            sh.num(r, HOURLY, s.cost_hourly, num="money0")
        sh.calc(r, COST, f"C{n}+D{n}", costs[i], num="money0")
        sh.num(r, SHORT, s.shortfall_gpu_hours, num="int")
        sh.num(r, REGRET, risk.regret.get(s.name), num="money0")
        sh.calc(r, BELOW, f"SUMPRODUCT({W},--({C}<=E{n}))", below[i], num="pct")
        sh.calc(r, P90, f'IF(H{n}>={Q}-{TOL!r},E{n},"")', costs[i] if below[i] >= Q - TOL else "", num="money0")
        if cvar:
            sh.calc(r, CVAR, f"E{n}+SUMPRODUCT({W},({C}>E{n})*({C}-E{n}))/(1-risk_level)", cvals[i], num="money0")
    r += 1
    sh.text(r, 0, "Total weight", "total")
    total_w = 0.0
    for w in weights:
        total_w += w
    sh.calc(r, WEIGHT, f"SUM({W})", total_w, "total", num="pct")
    for col in range(FIRST, P90 + 1 + (1 if cvar else 0)):
        sh.text(r, col, "", "total")
    sh.text(r + 1, 0, "Weights should add up to 100%.", "note")

    # the measures over the costs above
    r += 3
    sh.text(r, 0, "Over the scenarios", "h2")
    r += 1
    expected = 0.0
    for w, c in zip(weights, costs):
        expected += w * c
    sh.text(r, 0, "Expected cost (Σ weight × cost)")
    sh.calc(r, 1, f"SUMPRODUCT({W},{C})", expected, num="money0")
    book.name("scenario_expected", sh.name, r, 1)
    same = "equals the Summary's cost by tier"
    edited = ("weights edited: the Summary's cost by tier, Cash flow and Showback keep the solve's weights, and so "
              "do regret and the value of the stochastic solution below (re-solve)")
    sh.calc(r, 2, f'IF(ABS(B{r + 1}-{refs.tiers_name})<0.5,"{same}","{edited}")',
            same if abs(expected - tiers_v) < 0.5 else edited, "hint")
    exp_row = r
    r += 1
    p90 = min(c for c, b in zip(costs, below) if b >= Q - TOL)
    sh.text(r, 0, "P90 (cost at the 90th percentile)")
    sh.calc(r, 1, f"MIN({rng(sh.name, first, last, P90)})", p90, num="money0")
    book.name("scenario_p90", sh.name, r, 1)
    sh.text(r, 2, "the smallest cost whose weight at or below it reaches 90%", "hint")
    if cvar:
        r += 1
        sh.text(r, 0, "CVaR level α")
        sh.inp(r, 1, level, "pct")
        book.name("risk_level", sh.name, r, 1)
        sh.text(r, 2, "the mean of the costliest (1 − α) of outcomes by weight", "hint")
    r += 1
    sh.text(r, 0, f"Risk measure: {L.risk_name(result)} at these weights", "big")
    if cvar:
        v = min(cvals)
        sh.calc(r, 1, f"MIN({rng(sh.name, first, last, CVAR)})", v, "big", num="money0")
    elif risk.measure == "worst":
        v = top
        sh.calc(r, 1, f"MAX({C})", v, "big", num="money0")
    else:
        v = expected
        sh.calc(r, 1, f"B{exp_row + 1}", v, "big", num="money0")
    book.name("scenario_risk", sh.name, r, 1)
    refs.scenario["risk"] = ("scenario_risk", v)
    refs.scenario["expected"] = ("scenario_expected", expected)
    sh.text(r, 2, f"planopt, at the solve's weights: {risk.value:,.0f} (the plan's total)", "hint")
    r += 1
    regrets = [risk.regret[s.name] for s in rows if s.name in risk.regret]
    sh.text(r, 0, "Largest regret (cost there − the best plan had it been known)")
    if regrets:
        sh.calc(r, 1, f"MAX({rng(sh.name, first, last, REGRET)})", max(regrets), num="money0")
    else:
        sh.num(r, 1, None)
    worst = L.max_regret(result)
    if worst is not None and L.regret_ranged(result):  # a scenario's own solve stopped short of the gap
        r += 1
        sh.text(r, 0, "Largest regret it can be (against each scenario's solve bound, where the time stopped it)")
        sh.num(r, 1, worst[1], num="money0")
    r += 1
    sh.text(r, 0, "Plan decided for the mean scenario, run through every scenario (same measure, the solve's "
            "weights)")
    sh.num(r, 1, risk.mean_plan_cost, num="money0")
    r += 1
    sh.text(r, 0, "Value of the stochastic solution (that − this plan's measure, the solve's weights)")
    sh.num(r, 1, None if risk.mean_plan_cost is None else risk.mean_plan_cost - risk.value, num="money0")
    span = risk.vss_range
    if span:  # a solve behind it stopped short of its gap
        r += 1
        sh.text(r, 0, "  it lies between (each cost between its solve's bound and the plan found)")
        sh.num(r, 1, span[0], num="money0")
        sh.num(r, 2, span[1], num="money0")
    if risk.mean_plan_returned:
        r += 1
        sh.text(r, 0, "This plan is the mean scenario's plan: the two-stage solve's own plan cost more when its time "
                "limit stopped it", "note")
    r += 1
    basis = getattr(risk, "basis", "")
    sh.text(r, 0, "Regret and the mean scenario's plan come from further solves (values, not formulas)"
            + (f"; they are {basis}." if basis and basis != "optimal" else "."), "note")
    ws.freeze_panes(head + 1, 1)
    sh.page(r, CVAR if cvar else P90)


def _cvar_values(weights: list[float], costs: list[float], level: float) -> list[float]:
    out = []
    for c in costs:
        tail = 0.0
        for w, c2 in zip(weights, costs):
            tail += w * ((1.0 if c2 > c else 0.0) * (c2 - c))
        out.append(c + tail / (1.0 - level))
    return out


def _first_stage(sh: Sheet, result: PlanResult, refs: Refs, r: int) -> int:
    """Decided once: reserved capacity and servers bought (Summary's tiers) and their fixed energy and space."""
    sh.text(r, 0, "Decided once (the same in every scenario)", "h2")
    s0 = result.scenarios[0]
    planopt = s0.cost_total - s0.cost_hourly
    parts: list[tuple[str, str, float]] = [("Reserved capacity (Summary)", "cost_reserved",
                                            refs.tier_cost.get("reserved", 0.0))]
    if result.own is not None:
        parts.append(("Servers bought: the horizon's share of owning them (Summary)", "cost_buy",
                      refs.tier_cost.get("buy", 0.0)))
    known = 0.0
    for _label, _f, v in parts:
        known += v
    rest = planopt - known
    if abs(rest) > 0.005:
        parts.append(("Servers' idle energy, space and support (fixed, planopt)", "", rest))
    first = r + 1
    total = 0.0
    for label, f, v in parts:
        r += 1
        sh.text(r, 0, label)
        if f:
            sh.calc(r, 1, f, v, num="money0")
        else:
            sh.num(r, 1, v, num="money0")
        total += v
    r += 1
    sh.text(r, 0, "Decided once, total", "total")
    sh.calc(r, 1, f"SUM(B{first + 1}:B{r})", total, "total", num="money0")
    refs.scenario["first"] = (f"$B${r + 1}", total)
    return r
