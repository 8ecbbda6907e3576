"""Showback and chargeback: the all-in spend (or the book view) by team, cost centre, month and tier.

No PuLP, no I/O: arithmetic on a solved result. A workload's cost in a tier goes to the months as that
tier's spend does in the cash flow (signed contracts: the months they run; its API: its own API cash flow),
so each month and tier of the showback ties to the cash flow's. What no workload used is computed tier by
tier (the tier's cost − what the workloads used of it, as cost.idle_by_tier; signed contracts:
cost.idle_committed) and goes to the months the same way: its own rows (policy.idle: separate) or shared by
use (spread). A tenant that names a team is booked to that team's cost centre. The rows add up to the all-in
spend: Σ (cost + committed_cost) = cost.all_in.

A spend commitment signed before the plan is committed spend; the part of it the covered on-demand use took
(its discounted spend, covered_on_demand × (1 − discount)) is charged to the workloads whose on-demand use it
covered, by their covered spend (signed_spend_used), and only the rest is idle committed spend.

With policy.showback: book the rows add up to the book view instead (results.own.book_view: all-in + owned
servers' depreciation − bought servers' cost of capital). Two more tiers carry the difference, priced per
workload by results.own.book_by_workload: depreciation_owned (the owned servers' depreciation by the GPU-hours
each workload ran on them; the GPU-hours held and not used are idle like any other) and cost_of_capital
(negative: the capital part of the buy tier, which the books do not expense). They go to the months as the
offer's facility spend (owned servers) and buy spend (servers bought) do in the cash flow.
"""

from __future__ import annotations

from optimizer.results.own import book_by_workload, book_view
from optimizer.results.types import UNASSIGNED, CashFlowRow, PlanResult, ShowbackRow, owners, team_centres

IDLE = "not used by any workload"
"""The team of the rows of spend no workload used (policy.idle: separate)."""
RISK = "scenario weighting"
"""The team of the row that takes a plan with scenarios from the sum of its tiers to its risk measure."""
DEPRECIATION, CAPITAL = "depreciation_owned", "cost_of_capital"
"""The tiers of the book view's difference from the all-in (policy.showback: book)."""
TIER_ORDER = ("committed", "reserved", "buy", "facility", "on_demand", "spot", "api", DEPRECIATION, CAPITAL, "risk")

Key = tuple[str, "str | None", "str | None", str, str]
"""(team, cost centre, workload or None, month, tier)."""


def tier_of(flow: CashFlowRow) -> str:
    """The cost tier (cost.by_tier's keys, and committed) a cash-flow row belongs to."""
    if flow.kind == "committed":
        return "committed"
    return {"reserved-1y": "reserved", "reserved-3y": "reserved", "on-demand": "on_demand"}.get(flow.tier, flow.tier)


def has_teams(result: PlanResult) -> bool:
    return any(w.team or w.tenants for w in result.workloads)


def basis(result: PlanResult) -> str:
    """What the showback rows add up to: "book" (policy.showback: book, with servers of your own) or "all_in"."""
    return "book" if result.policy.get("showback") == "book" and result.own is not None else "all_in"


def target(result: PlanResult) -> float:
    """The sum of the showback rows: the book view's total or the all-in spend (basis)."""
    b = book_view(result) if basis(result) == "book" else None
    return b.total if b is not None else result.cost_all_in


def _shares(by: dict[str, float], fallback: dict[str, float]) -> dict[str, float]:
    total = sum(by.values())
    return {m: v / total for m, v in by.items()} if total > 0 else fallback


def _on_demand_hours(result: PlanResult) -> dict[str, dict[str, float]]:
    """Workload → offer → the on-demand GPU-hours it used there (a split workload's, by its configs' offers)."""
    out: dict[str, dict[str, float]] = {}
    for w in result.workloads:
        parts = [(c.offer, c.gpu_hours_by_tier.get("on_demand", 0.0)) for c in w.split_configs.values()] \
            if w.split_configs else [(w.offer, w.gpu_hours_by_tier.get("on_demand", 0.0))]
        for o, gh in parts:
            if o and gh > 0:
                out.setdefault(w.name, {})[o] = out.setdefault(w.name, {}).get(o, 0.0) + gh
    return out


def signed_spend_used(result: PlanResult) -> dict[str, float]:
    """Workload → the spend of signed spend commitments its on-demand use took (committed spend it used).

    A commitment's used spend (covered_on_demand × (1 − discount), at most its spend in the horizon) goes to its
    offers by their on-demand list spend (the GPU-hours bought there at list price), and at each offer to the
    workloads by the on-demand GPU-hours they used there, out of those bought: what covered GPUs no workload
    used stays idle."""
    if not result.spend_commitments:
        return {}
    bought: dict[str, float] = {}
    for p in result.purchases:
        if p.tier == "on-demand":
            bought[p.offer] = bought.get(p.offer, 0.0) + p.gpu_hours
    used_at = _on_demand_hours(result)
    out: dict[str, float] = {}
    for c in result.spend_commitments:
        used = min(c.spend_in_horizon, c.covered_on_demand * (1.0 - c.discount))
        listed = {o: bought.get(o, 0.0) * float(((result.offers.get(o) or {}).get("prices") or {}).get("on-demand")
                                                 or 0.0) for o in c.offers}
        total = sum(listed.values())
        if used <= 0 or total <= 0:
            continue
        for o, spend in listed.items():
            users = {w: by[o] for w, by in used_at.items() if by.get(o, 0.0) > 0}
            held = max(bought.get(o, 0.0), sum(users.values()))
            for w, gh in users.items():
                out[w] = out.get(w, 0.0) + used * spend / total * gh / held
    return out


def booked(result: PlanResult, idle: str = "separate", book: bool = False) -> dict[Key, list[float]]:
    """The showback before rows of one team are merged: key → [cost, committed_cost, idle_share], a workload's
    rows kept apart (key[2] = its name; the idle and risk rows: None)."""
    months = list(dict.fromkeys(r.month for r in result.cash_flow)) or ["M1"]
    flat = {m: 1.0 / len(months) for m in months}
    profile: dict[str, dict[str, float]] = {}  # cost tier → month → share of its cash flow
    by_offer: dict[tuple[str, str], dict[str, float]] = {}  # (tier, offer) → month → amount
    for r in result.cash_flow:
        profile.setdefault(tier_of(r), {}).setdefault(r.month, 0.0)
        profile[tier_of(r)][r.month] += r.amount
        by_offer.setdefault((tier_of(r), r.offer), {}).setdefault(r.month, 0.0)
        by_offer[(tier_of(r), r.offer)][r.month] += r.amount
    profile = {t: _shares(by, flat) for t, by in profile.items()}
    centres = team_centres(result.workloads)
    out: dict[Key, list[float]] = {}

    def add(key: Key, cost: float, committed: float, idle_part: float) -> None:
        v = out.setdefault(key, [0.0, 0.0, 0.0])
        v[0] += cost
        v[1] += committed
        v[2] += idle_part

    spend_used = signed_spend_used(result)
    for w in result.workloads:
        committed_cost = w.committed_cost + spend_used.get(w.name, 0.0)
        api = {r.month: r.amount for r in result.cash_flow if r.kind == "api" and r.offer == w.name}
        api_total = sum(api.values())
        for team, cc, share in owners(w, centres):
            for tier, cost in w.cost_by_tier.items():
                if abs(cost) < 1e-12:
                    continue
                split = ({m: v / api_total for m, v in api.items()} if tier == "api" and api_total > 0
                         else profile.get(tier, flat))
                for m, s in split.items():
                    add((team, cc, w.name, m, tier), share * cost * s, 0.0, 0.0)
            if committed_cost:
                for m, s in profile.get("committed", flat).items():
                    add((team, cc, w.name, m, "committed"), 0.0, share * committed_cost * s, 0.0)

    idle_rows: dict[tuple[str, str], tuple[float, float]] = {}  # (month, tier) → (new, committed) nobody used
    for tier, total in result.cost_by_tier.items():
        left = total - sum(w.cost_by_tier.get(tier, 0.0) for w in result.workloads)
        if abs(left) > 1e-9:
            for m, s in profile.get(tier, flat).items():
                idle_rows[(m, tier)] = (left * s, 0.0)
    idle_committed = result.cost_idle_committed - sum(spend_used.values())
    if abs(idle_committed) > 1e-9:
        for m, s in profile.get("committed", flat).items():
            idle_rows[(m, "committed")] = (0.0, idle_committed * s)

    if book and result.own is not None:
        parts = book_by_workload(result)
        owned = {r.offer for r in result.own.owned}
        bought = {b.offer for b in result.own.bought}
        # the owned depreciation runs with the offer's facility spend, the capital with its buy spend
        dep_months = _shares({m: sum(by_offer.get(("facility", o), {}).get(m, 0.0) for o in owned) for m in months},
                             flat)
        cap_months = _shares({m: sum(by_offer.get(("buy", o), {}).get(m, 0.0) for o in bought) for m in months},
                             flat)
        for w in result.workloads:
            p = parts.get(w.name)
            if p is None:
                continue
            for team, cc, share in owners(w, centres):
                for tier, amount, split in ((DEPRECIATION, p["depreciation_owned"], dep_months),
                                            (CAPITAL, -p["cost_of_capital"], cap_months)):
                    if abs(amount) > 1e-12:
                        for m, s in split.items():
                            if s:
                                add((team, cc, w.name, m, tier), share * amount * s, 0.0, 0.0)
        unused = parts.get("", {})
        for tier, amount, split in ((DEPRECIATION, unused.get("depreciation_owned", 0.0), dep_months),
                                    (CAPITAL, -unused.get("cost_of_capital", 0.0), cap_months)):
            if abs(amount) > 1e-9:
                for m, s in split.items():
                    if s:
                        idle_rows[(m, tier)] = (amount * s, 0.0)

    for (m, tier), (new, com) in sorted(idle_rows.items()):
        users = [k for k in out if k[3] == m and k[4] == tier] if idle == "spread" else []
        weight = {k: abs(out[k][0] + out[k][1]) for k in users}  # by size: cost_of_capital rows are negative
        if idle == "spread" and sum(weight.values()) <= 0:
            users = [k for k in out if k[3] == m and k[0] != IDLE] or [k for k in out if k[0] != IDLE]
            weight = {k: abs(out[k][0] + out[k][1]) for k in users}
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
    return out


def rows(result: PlanResult, idle: str = "separate", book: bool = False) -> list[ShowbackRow]:
    """The showback of `result`, its idle rows separate or spread (policy.idle), adding up to the all-in or,
    with `book` (policy.showback: book), to the book view. Rows per team (a team's workloads merged) when the
    plan names teams, else per workload."""
    per_team = has_teams(result)
    merged: dict[Key, list[float]] = {}
    for (team, cc, wl, m, tier), v in booked(result, idle, book).items():
        x = merged.setdefault((team, cc, None if per_team else wl, m, tier), [0.0, 0.0, 0.0])
        for i in range(3):
            x[i] += v[i]
    months = {m: i for i, m in enumerate(dict.fromkeys(r.month for r in result.cash_flow))}
    tiers = {t: i for i, t in enumerate(TIER_ORDER)}
    keys = sorted(merged, key=lambda k: (months.get(k[3], len(months)), k[0] in (IDLE, RISK), k[0] == UNASSIGNED,
                                         k[0], k[1] or "", k[2] or "", tiers.get(k[4], len(tiers)), k[4]))
    return [ShowbackRow(k[0], k[1], k[3], k[4], merged[k][0], merged[k][1], merged[k][2], k[2]) for k in keys]


def lines(result: PlanResult, idle: str = "separate", book: bool = False
          ) -> dict[tuple[str, str | None, str | None], dict[str, float]]:
    """Each (team, cost centre, workload) over the horizon — what the workbook's Showback lines show: the
    workload's spend it used (new, committed), the idle it carries (idle_new, idle_committed; with
    policy.idle: spread), the book's difference (depreciation_owned, cost_of_capital, with `book`); the idle
    and risk rows under workload None."""
    out: dict[tuple[str, str | None, str | None], dict[str, float]] = {}
    for (team, cc, wl, _m, tier), (cost, com, idle_part) in booked(result, idle, book).items():
        x = out.setdefault((team, cc, wl), dict.fromkeys(
            ("new", "committed", "idle_new", "idle_committed", DEPRECIATION, CAPITAL, "risk"), 0.0))
        if tier in (DEPRECIATION, CAPITAL, "risk"):
            x[tier] += cost
            continue
        x["new"] += cost
        x["committed"] += com
        if wl is not None and idle_part:  # spread: what of the row is idle, new or committed as the row is
            scale = idle_part / (cost + com) if cost + com else 0.0
            x["idle_new"] += cost * scale
            x["idle_committed"] += com * scale
            x["new"] -= cost * scale
            x["committed"] -= com * scale
    return out
