"""Showback and chargeback: the all-in spend by team, cost centre, month and tier.

No PuLP, no I/O: arithmetic on a solved result. A workload's cost in a tier goes to the months as that
tier's spend does in the cash flow (signed contracts: the months they run; its API: its own API cash flow),
so each month and tier of the showback ties to the cash flow's. What no workload used is computed tier by
tier (the tier's cost − what the workloads used of it, as cost.idle_by_tier; signed contracts:
cost.idle_committed) and goes to the months the same way: its own rows (policy.idle: separate) or shared by
use (spread). A tenant that names a team is booked to that team's cost centre. The rows add up to the all-in
spend: Σ (cost + committed_cost) = cost.all_in.
"""

from __future__ import annotations

from optimizer.results.types import UNASSIGNED, CashFlowRow, PlanResult, ShowbackRow, owners, team_centres

IDLE = "not used by any workload"
"""The team of the rows of spend no workload used (policy.idle: separate)."""
RISK = "scenario weighting"
"""The team of the row that takes a plan with scenarios from the sum of its tiers to its risk measure."""


def tier_of(flow: CashFlowRow) -> str:
    """The cost tier (cost.by_tier's keys, and committed) a cash-flow row belongs to."""
    if flow.kind == "committed":
        return "committed"
    return {"reserved-1y": "reserved", "reserved-3y": "reserved", "on-demand": "on_demand"}.get(flow.tier, flow.tier)


def has_teams(result: PlanResult) -> bool:
    return any(w.team or w.tenants for w in result.workloads)


def rows(result: PlanResult, idle: str = "separate") -> list[ShowbackRow]:
    """The showback of `result`, its idle rows separate or spread (policy.idle)."""
    months = list(dict.fromkeys(r.month for r in result.cash_flow)) or ["M1"]
    flat = {m: 1.0 / len(months) for m in months}
    profile: dict[str, dict[str, float]] = {}  # cost tier → month → share of its cash flow
    for r in result.cash_flow:
        profile.setdefault(tier_of(r), {}).setdefault(r.month, 0.0)
        profile[tier_of(r)][r.month] += r.amount
    for t, by in profile.items():
        total = sum(by.values())
        profile[t] = {m: v / total for m, v in by.items()} if total > 0 else flat

    per_team = has_teams(result)
    centres = team_centres(result.workloads)
    book: dict[tuple[str, str | None, str | None, str, str], list[float]] = {}  # key → [cost, committed, idle]

    def add(key: tuple[str, str | None, str | None, str, str], cost: float, committed: float, idle_part: float) -> None:
        v = book.setdefault(key, [0.0, 0.0, 0.0])
        v[0] += cost
        v[1] += committed
        v[2] += idle_part

    for w in result.workloads:
        api = {r.month: r.amount for r in result.cash_flow if r.kind == "api" and r.offer == w.name}
        api_total = sum(api.values())
        for team, cc, share in owners(w, centres):
            who = None if per_team else w.name
            for tier, cost in w.cost_by_tier.items():
                if abs(cost) < 1e-12:
                    continue
                split = ({m: v / api_total for m, v in api.items()} if tier == "api" and api_total > 0
                         else profile.get(tier, flat))
                for m, s in split.items():
                    add((team, cc, who, m, tier), share * cost * s, 0.0, 0.0)
            if w.committed_cost:
                for m, s in profile.get("committed", flat).items():
                    add((team, cc, who, m, "committed"), 0.0, share * w.committed_cost * s, 0.0)

    idle_rows: dict[tuple[str, str], tuple[float, float]] = {}  # (month, tier) → (new, committed) nobody used
    for tier, total in result.cost_by_tier.items():
        left = total - sum(w.cost_by_tier.get(tier, 0.0) for w in result.workloads)
        if abs(left) > 1e-9:
            for m, s in profile.get(tier, flat).items():
                idle_rows[(m, tier)] = (left * s, 0.0)
    if abs(result.cost_idle_committed) > 1e-9:
        for m, s in profile.get("committed", flat).items():
            idle_rows[(m, "committed")] = (0.0, result.cost_idle_committed * s)
    for (m, tier), (new, com) in sorted(idle_rows.items()):
        users = [k for k in book if k[3] == m and k[4] == tier] if idle == "spread" else []
        weight = {k: book[k][0] + book[k][1] for k in users}
        if idle == "spread" and sum(weight.values()) <= 0:
            users = [k for k in book if k[3] == m and k[0] != IDLE] or [k for k in book if k[0] != IDLE]
            weight = {k: abs(book[k][0] + book[k][1]) for k in users}
        norm = sum(weight.values())
        if idle == "spread" and norm > 0:
            for k in users:
                f = weight[k] / norm
                add(k, new * f, com * f, (new + com) * f)
        else:
            add((IDLE, None, None, m, tier), new, com, new + com)

    extra = result.cost_total - sum(result.cost_by_tier.values())  # scenarios: the risk measure over the tiers' sum
    if abs(extra) > 1e-6:
        for m, s in flat.items():
            add((RISK, None, None, m, "risk"), extra * s, 0.0, 0.0)

    order = {m: i for i, m in enumerate(months)}
    tiers = {t: i for i, t in enumerate(("committed", "reserved", "buy", "facility", "on_demand", "spot", "api", "risk"))}
    keys = sorted(book, key=lambda k: (order.get(k[3], len(order)), k[0] in (IDLE, RISK), k[0] == UNASSIGNED, k[0],
                                       k[1] or "", k[2] or "", tiers.get(k[4], len(tiers)), k[4]))
    return [ShowbackRow(k[0], k[1], k[3], k[4], book[k][0], book[k][1], book[k][2], k[2]) for k in keys]
