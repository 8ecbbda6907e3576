"""A two-stage plan read scenario by scenario: each one's cost had it come true, the risk measure over
them, and its hourly exposure. No PuLP: arithmetic on what extract already priced by segment.
"""

from __future__ import annotations

from optimizer.inputs.scenarios import ScenarioDays
from optimizer.inputs.schema.plan import Plan
from optimizer.results.types import HourlySupply, RiskInfo, ScenarioRow


def risk_value(costs: dict[str, float], weights: dict[str, float], measure: str, level: float) -> float:
    """expected: Σ π·C; worst: max C; cvar at α: min_η η + Σ π·(C − η)⁺ / (1 − α) (the mean of the worst
    1 − α of outcomes; the minimum is at one of the costs)."""
    if measure == "worst":
        return max(costs.values())
    if measure == "cvar":
        return min(eta + sum(weights[n] * max(0.0, c - eta) for n, c in costs.items()) / (1.0 - level)
                   for eta in costs.values())
    return sum(weights[n] * c for n, c in costs.items())


def quantile(costs: dict[str, float], weights: dict[str, float], q: float) -> float:
    """The smallest cost C with P(cost ≤ C) ≥ q."""
    acc = 0.0
    for n, c in sorted(costs.items(), key=lambda kv: (kv[1], kv[0])):
        acc += weights[n]
        if acc >= q - 1e-12:
            return c
    return max(costs.values())


def rows(plan: Plan, sd: ScenarioDays, first_stage: float, stage2: dict[str, float], hourly: list[HourlySupply],
         day_days: dict[str, float], seg_type: dict[str, str]) -> tuple[list[ScenarioRow], RiskInfo]:
    """`stage2`: segment → its hourly capacity, API and serving energy (as weighted in the program);
    `seg_type`: segment → its day type; hourly rows' GPUs × `day_days` of their row give the exposure."""
    names = list(dict.fromkeys(s.name for s in sd.scenario.values()))
    weights = {s.name: s.weight for s in sd.scenario.values()}
    hourly_cost = {n: 0.0 for n in names}
    for seg, v in stage2.items():
        sc = sd.scenario.get(seg_type.get(seg, seg))
        if sc is not None:
            hourly_cost[sc.name] += v / sc.weight
    short = {n: 0.0 for n in names}
    for h in hourly:
        sc = sd.scenario.get(h.day_type)
        if sc is not None:
            short[sc.name] += (h.on_demand_gpus + h.spot_gpus) * day_days.get(h.day_type + "|" + h.period, 0.0) \
                / sc.weight
    costs = {n: first_stage + hourly_cost[n] for n in names}
    risk = plan.policy.risk
    value = risk_value(costs, weights, risk.measure, risk.level)
    out = [ScenarioRow(n, weights[n], costs[n], hourly_cost[n], short[n]) for n in names]
    info = RiskInfo(risk.measure, risk.level if risk.measure == "cvar" else None, value,
                    risk_value(costs, weights, "expected", 0.0), quantile(costs, weights, 0.9))
    return out, info
