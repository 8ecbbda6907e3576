"""PlanResult → one self-contained HTML file: inline CSS and SVG, nothing fetched from the network.

The template (templates/report.html.j2) gets plain strings and numbers; every plan string is escaped
by jinja2 (autoescape on, StrictUndefined). Solver seconds are left out; the footer's time is
SOURCE_DATE_EPOCH when set, so the same result then gives the same bytes (report/provenance.py).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from optimizer import formatting, vocab
from optimizer.atomic import atomic_write
from optimizer.report import labels as L
from optimizer.report.chargeback import centre_months
from optimizer.report.charts import SUPPLY_KEYS, Charts, pool_periods, pool_series, shown_scenario
from optimizer.report.console import break_even_text
from optimizer.report.provenance import Provenance, price_sources, provenance
from optimizer.resources import templates_dir
from optimizer.results.cashflow import pnl_and_cash
from optimizer.results import showback as sb
from optimizer.results.jsonio import as_written
from optimizer.results.own import book_view
from optimizer.results.types import PlanResult, WorkloadResult

TEMPLATE = "report.html.j2"


def write_html(result: PlanResult, path: Path) -> None:
    """Write OUTDIR/<plan>.html atomically: a failure leaves no partial file."""
    text = render_html(result)
    with atomic_write(Path(path)) as tmp:
        tmp.write_text(text, encoding="utf-8")


def render_html(result: PlanResult, made: Provenance | None = None) -> str:
    result = as_written(result)  # the numbers the JSON keeps: `report` re-renders the same bytes
    made = made or provenance()
    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["nobreak"] = nobreak
    return env.get_template(TEMPLATE).render(**context(result), made=made, price_sources=price_sources(result))


# Chromium breaks a line after a date's hyphens (2026-02-/15) even in running text.
DATE = re.compile(r"\b\d{4}-(?:\d{2}-\d{2}|\d{2}|Q[1-4])\b")


def nobreak(text: Any) -> Markup:
    """Escaped text whose dates stay on one line."""
    return Markup(DATE.sub(lambda m: f'<span class="n">{m.group(0)}</span>', str(escape(text))))


def context(result: PlanResult) -> dict[str, Any]:
    cur = result.currency
    money = lambda x, d=0: formatting.money(x, cur, d).replace(" ", "\u00a0")  # noqa: E731  '1,234 EUR' on one line
    total = result.cost_total
    charts = Charts()
    by_tier = L.tiers_total(result)  # = total, but under a cvar or worst-case measure: the expected cost
    tiers = [{"key": k, "label": vocab.COST_LABELS[k], "total": money(v), "per_day": money(v / result.horizon_days),
              "share": f"{v / by_tier:.1%}" if by_tier else "–", "width": round(100 * v / by_tier, 2) if by_tier else 0,
              "color": L.TIER_COLORS[k]}
             for k, v in ((k, result.cost_by_tier.get(k, 0.0)) for k in L.cost_keys(result))]
    expected_tiers = result.risk is not None and result.risk.measure != "expected"
    decision = [{"what": r.what, "text": r.text, "caveats": list(r.caveats), "status": r.status,
                 "buy": r.topic == "buy"}
                for r in L.decision_rows(result, money)]
    gap = result.solver.gap
    mip_gap = result.policy.get("mip_gap")
    return {
        "plan": result.plan, "file": result.file, "currency": cur, "horizon_days": result.horizon_days,
        "horizon_text": formatting.days_text(result.horizon_days),
        "status": result.status, "solver": result.solver.name,
        "gap": "unknown" if gap is None else f"{gap:.2%}",
        "stopped_early": gap is not None and mip_gap is not None and gap > float(mip_gap) + 1e-12,
        "per_day": money(result.cost_per_day), "total": money(total), "tiers": tiers,
        "tiers_total": money(by_tier), "tiers_per_day": money(by_tier / result.horizon_days),
        "tiers_label": "Expected over the scenarios" if expected_tiers else "Total",
        "risk_name": L.risk_name(result),
        "scenarios": _scenarios(result, money, charts),
        "all_in": money(result.cost_all_in) if result.cost_committed else None,
        "decision": decision,
        "showback": _showback(result, money),
        "committed_total": money(result.cost_committed),
        "gpus_at_peak": f"{_fleet_peak(result):,}",
        "notes": list(result.notes), "binding": L.caps_that_bind(result), "shared": L.shared_lines(result),
        "binding_facility": [t for part in L.facility_binds(result, money) for t in part],
        "purchases": [{"offer": p.offer, "accelerator": p.accelerator, "provider": p.provider, "region": p.region,
                       "tier": p.tier, "gpus": f"{p.gpus:,}", "gpu_hours": f"{p.gpu_hours:,.0f}",
                       "price": money(L.price_paid(result, p), 2), "estimated": p.price_estimated,
                       "cost": money(p.cost), "color": L.TIER_COLORS[vocab.TIER_GROUP[p.tier]]}
                      for p in result.purchases],
        "mix_svg": Markup(charts.purchase_mix(result)) if result.purchases else None,
        "pools": [_pool(result, p, charts) for p in _pools(result)],
        "pools_scenario": shown_scenario(result),
        "workloads": [_workload(result, w, money) for w in result.workloads],
        "risk_pools": [_pool_risk(result, p) for p in _pools(result)],
        "caps": _caps(result),
        "alternatives": _alternatives(result, money), "alternatives_intro": L.ALTERNATIVES_INTRO,
        "dropped_summary": _dropped_summary(result),
        "dropped": result.dropped,
        "assumptions": _assumptions(result, money),
        "command": f"planopt solve {result.file}" if result.file else "planopt solve PLAN.yaml",
        "commitments": _commitments(result, money),
        "changes": _changes(result, money),
        "own": _own(result, money, charts, [d for d in decision if d["buy"]]),
        "cash_months": _cash_months(result, money),
        "owned_color": L.OWNED_COLOR, "bought_color": L.TIER_COLORS["buy"],
    }


def _showback(result: PlanResult, money) -> dict[str, Any]:
    """The showback by team (a plan without teams: by workload), and the chargeback, cost centre × month, each
    cost centre's tiers under it: what the result's showback rows add up to (the all-in, or the book view)."""
    target = sb.target(result) if result.showback else result.cost_all_in
    book = bool(result.showback) and sb.basis(result) == "book"
    table = centre_months(result)
    return {
        "rows": [{"team": r["team"], "cost_center": r["cost_center"], "workloads": ", ".join(r["workloads"]) or "–",
                  "new": money(r["new"]), "committed": money(r["committed"]), "book": money(r.get("book", 0.0)),
                  "all_in": money(r["all_in"]),
                  "share": f"{r['all_in'] / target:.1%}" if target else "–"}
                 for r in result.showback_by_team()],
        "total_label": "Book view" if book else "All-in",
        "spread": result.policy.get("idle") == "spread" and bool(result.showback),
        "book": book,
        "months": table["months"],
        "centres": [{"cost_center": c["cost_center"] or "–", "months": [money(c["months"][m]) for m in table["months"]],
                     "total": money(c["total"]), "committed": money(c["committed"]), "idle": money(c["idle_share"]),
                     "tiers": [{"tier": L.SHOWBACK_TIERS.get(t["tier"], t["tier"]),
                                "months": [money(t["months"][m]) for m in table["months"]], "total": money(t["total"])}
                               for t in sorted(c["tiers"].values(), key=lambda t: _tier_rank(t["tier"]))]}
                    for c in table["centres"]],
        "totals": [money(table["totals"][m]) for m in table["months"]], "total": money(table["total"]),
    }


def _tier_rank(tier: str) -> tuple[int, str]:
    return (sb.TIER_ORDER.index(tier) if tier in sb.TIER_ORDER else len(sb.TIER_ORDER), tier)


def _scenarios(result: PlanResult, money, charts: Charts) -> dict[str, Any] | None:
    """A plan with scenarios: each one's cost had it come true (chart and table with regret), the risk measure
    and the value of the stochastic solution, and, with months, the fan of monthly peaks against the reserved
    level."""
    risk = result.risk
    if risk is None or not result.scenarios:
        return None
    worst = L.max_regret(result)
    rows = [{"name": r.name, "weight": f"{r.weight:.0%}", "cost": money(r.cost_total),
             "first": money(r.cost_total - r.cost_hourly), "hourly": money(r.cost_hourly),
             "shortfall": f"{r.shortfall_gpu_hours:,.0f}",
             "regret": L.regret_text(result, r.name, money),
             "hot": worst is not None and worst[1] > 0.5 and worst[0] == r.name}
            for r in result.scenarios]
    fan = L.month_fan(result)
    fan_rows = []
    if fan is not None:
        for i, m in enumerate(fan["months"]):
            fan_rows.append({"month": m, "cells": [f"{fan['peak'][s][i]:,.0f}" for s in fan["scenarios"]],
                             "held": f"{fan['held'][i]:,}",
                             "over": any(fan["peak"][s][i] > fan["held"][i] for s in fan["scenarios"])})
    return {"rows": rows, "lines": L.risk_lines(result, money), "measure": L.risk_name(result),
            "meaning": L.risk_meaning(result), "value": money(risk.value), "expected": money(risk.expected),
            "p90": money(risk.p90), "vss": None if risk.vss is None else money(risk.vss),
            "mean_plan": None if risk.mean_plan_cost is None else money(risk.mean_plan_cost),
            "max_regret": None if worst is None else {"name": worst[0], "value": money(worst[1])},
            "regret_ranged": L.regret_ranged(result),
            "svg": Markup(charts.scenario_costs(result)),
            "fan": None if fan is None else {"svg": Markup(charts.month_fan(fan)), "scenarios": fan["scenarios"],
                                             "rows": fan_rows}}


def _own(result: PlanResult, money, charts: Charts, buy_lines: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Servers of your own: the buy decision, owned and bought servers, capex against opex, the profit and
    loss against the cash by month, break-even against renting, and the facility."""
    own = result.own
    if own is None:
        return None
    start = dt.date.fromisoformat(result.start_date) if result.start_date else None

    def day(k: int) -> str:
        if k <= 0:
            return "start"
        return (start + dt.timedelta(days=k)).isoformat() if start else f"day {k + 1}"

    servers = [{"offer": r.offer, "status": "owned", "units": f"{r.nodes:,}",
                "gpus": f"{r.gpus:,}", "from": day(r.in_service_day), "use": f"{r.utilization:.0%}",
                "ownership": "sunk", "running": money(r.running_in_horizon), "value": money(r.book_value),
                "depreciation": money(r.depreciation_in_horizon), "payback": "–", "npv": "–", "against": ""}
               for r in own.owned]
    servers += [{"offer": b.offer, "status": "bought", "units": f"{b.nodes:,}",
                 "gpus": f"{b.gpus:,}", "from": b.delivery_date or day(b.delivery_day), "use": f"{b.utilization:.0%}",
                 "ownership": money(b.ownership_in_horizon), "running": money(b.running_in_horizon),
                 "value": money(b.capex), "depreciation": money(b.depreciation_in_horizon),
                 "payback": (f"{b.payback_months:,.0f} months" if b.payback_months is not None
                             else "never" if b.alternative else "–"),
                 "npv": "–" if b.npv_per_unit is None else money(b.npv_per_unit),
                 "against": b.alternative or ""} for b in own.bought]
    share = [("Depreciation", sum(b.depreciation_in_horizon for b in own.bought)),
             ("Cost of capital", sum(b.capital_in_horizon for b in own.bought)),
             ("Support", sum(b.support_in_horizon for b in own.bought))]
    ownership = result.cost_by_tier.get("buy", 0.0)
    book = book_view(result)
    assert book is not None
    break_even = [{"offer": b.offer, "accelerator": b.accelerator, "fixed": money(b.fixed_per_gpu_hour, 2),
                   "energy": money(b.serving_energy_per_gpu_hour, 2), "against": b.against, "tier": b.tier,
                   "price": money(b.price_per_gpu_hour, 2), "wins": break_even_text(b), "never": b.wins_from is None}
                  for b in own.break_even]
    return {"buy": buy_lines, "servers": servers, "capex": money(own.capex), "ownership": money(ownership),
            "opex": money(own.opex), "sunk": money(own.sunk_depreciation) if own.owned else None,
            "share": [(k, money(v)) for k, v in share] if own.bought else [],
            "months": _own_months(result, money), "break_even": break_even,
            "break_even_svg": Markup(charts.break_even(result)) if own.break_even else None,
            "facility": _facility(result, money),
            "book": {"total": money(book.total), "line": L.book_line(result, money)}}


def _own_months(result: PlanResult, money) -> dict[str, Any]:
    """By month, the profit and loss against the cash (results.cashflow.pnl_and_cash)."""
    rows = pnl_and_cash(result.cash_flow, result.own)
    keys = ("rented", "facility", "ownership", "support", "capex", "pnl", "cash")

    def row(month: str, m: dict[str, float]) -> dict[str, str]:
        return {"month": month, **{k: money(m[k]) for k in keys}}

    total = {k: sum(getattr(r, k) for r in rows) for k in keys}
    return {"rows": [row(r.month, {k: getattr(r, k) for k in keys}) for r in rows], "total": row("Total", total),
            "rented_label": "Renting, API and contracts" if result.commitments else "Renting and API"}


def _facility(result: PlanResult, money) -> dict[str, Any]:
    f = result.own.facility  # type: ignore[union-attr]
    rows = []
    for key, what, used, limit, more, unit in (
            ("power_kw", "Power (kW)", f.power_kw_used, f.power_kw, "power_kw_plus_1000", "one more MW"),
            ("racks", "Racks", float(f.racks_used), f.racks, "racks_plus_1", "one more rack")):
        binds = key in f.binding
        saving = f.marginal.get(more) if binds else None
        rows.append({"what": what, "used": f"{used:,.0f}", "limit": "not stated" if limit is None else f"{limit:,.0f}",
                     "left": "–" if limit is None else f"{limit - used:,.0f}",
                     "pct": round(min(100.0, 100 * used / limit), 1) if limit else None,
                     "binds": binds, "full": limit is not None and used >= limit,
                     "saving": "–" if saving is None else money(saving), "unit": unit})
    return {"rows": rows, "pue": f"{f.pue:g}", "liquid": "yes" if f.liquid_cooling else "no",
            "binding": L.facility_binds(result, money)[0], "full": L.facility_binds(result, money)[1]}


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def _commitments(result: PlanResult, money) -> dict[str, Any] | None:
    """Committed vs new spend, signed contracts, new reservations over their term, the expiry calendar."""
    if not (result.commitments or result.new_commitments or result.spend_commitments or result.new_spend_commitments):
        return None
    new_spend = result.cost_total
    contracts = [{"offer": c.offer, "tier": c.tier, "gpus": f"{c.gpus:,}", "start": c.start, "end": c.end,
                  "price": money(c.price_per_gpu_hour, 2), "days": f"{c.days_in_horizon:,}",
                  "spend": money(c.spend_in_horizon), "total": money(c.total_committed), "monthly": money(c.monthly),
                  "used": f"{c.gpu_hours_used / c.gpu_hours_in_horizon:.0%}" if c.gpu_hours_in_horizon else "–"}
                 for c in result.commitments]
    new = [{"offer": n.offer, "tier": n.tier, "gpus": f"{n.gpus:,}", "price": money(n.price_per_gpu_hour, 2),
            "term": f"{n.term_days:,} days" + (f", {n.payment.replace('_', ' ')}" if n.payment not in (None, "no_upfront") else "")
            + (f" ({money(n.upfront)} up front)" if n.upfront else ""),
            "start": n.start or "plan start", "end": n.end_text, "share": money(n.horizon_share),
            "total": money(n.total_committed), "monthly": money(n.monthly), "beyond": money(n.beyond_horizon),
            "used": _pct(n.utilization), "break_even": _pct(n.break_even_utilization), "coverage": _pct(n.coverage),
            "below": n.utilization is not None and n.break_even_utilization is not None
            and n.utilization < n.break_even_utilization,
            "saving": money(n.saving_vs_on_demand["horizon"]) if n.saving_vs_on_demand else "–",
            "saving_term": money(n.saving_vs_on_demand["full_term"]) if n.saving_vs_on_demand else "–"}
           for n in result.new_commitments]
    expiry = [{"quarter": e.quarter, "signed": f"{e.committed_gpus_ending:,}", "new": f"{e.new_gpus_ending:,}",
               "monthly": money(e.monthly_ending), "after": f"{e.gpus_after:,}",
               "ending": bool(e.committed_gpus_ending or e.new_gpus_ending)} for e in result.expiry]
    return {"committed": money(result.cost_committed), "new": money(new_spend),
            "all_in": money(new_spend + result.cost_committed),
            "full_term": money(sum(n.total_committed for n in result.new_commitments)),
            "contracts": contracts, "new_rows": new, "expiry": expiry, **_spend_rows(result, money),
            "saving_basis": "; ".join(dict.fromkeys(n.saving_basis for n in result.new_commitments if n.saving_basis)),
            "periods": [{"label": p.label, "days": f"{p.days:,}",
                         "committed": ", ".join(f"{o} {g:,}" for o, g in p.committed.items()) or "none"}
                        for p in result.periods]}


def _spend_rows(result: PlanResult, money) -> dict[str, Any]:
    """Spend commitments (Savings Plans, committed-use discounts): signed ones, and new ones over their term."""
    signed = [{"provider": c.provider, "per_hour": money(c.usd_per_hour, 2), "term": c.term,
               "discount": f"{c.discount:.0%}", "start": c.start, "end": c.end, "days": f"{c.days_in_horizon:,}",
               "spend": money(c.spend_in_horizon), "covered": money(c.covered_on_demand), "used": _pct(c.utilization)}
              for c in result.spend_commitments]
    new = [{"provider": n.provider, "per_hour": money(n.usd_per_hour, 2), "term": n.term,
            "discount": f"{n.discount:.0%}", "start": n.start or "plan start",
            "end": n.end or f"after {n.term_days:,} days", "share": money(n.horizon_share),
            "total": money(n.total_committed), "monthly": money(n.monthly), "covered": money(n.covered_on_demand),
            "used": _pct(n.utilization), "break_even": _pct(n.break_even_utilization), "coverage": _pct(n.coverage),
            "below": n.utilization < n.break_even_utilization,
            "saving": money(n.saving_vs_on_demand["horizon"]), "saving_term": money(n.saving_vs_on_demand["full_term"])}
           for n in result.new_spend_commitments]
    return {"spend_signed": signed, "spend_new": new}


def _changes(result: PlanResult, money) -> dict[str, Any] | None:
    b = result.baseline
    if b is None:
        return None
    return {"file": b.file, "threshold": f"{b.change_threshold:.1%}", "kept": len(b.kept), "notes": b.notes,
            "rows": [{"workload": c.workload, "from": c.from_label, "to": c.to_label, "before": money(c.cost_before),
                      "after": money(c.cost_after), "saving": money(c.saving), "reason": c.reason}
                     for c in b.changes]}


def _pools(result: PlanResult) -> list[str]:
    seen: dict[str, None] = {}
    for w in result.workloads:
        seen.setdefault(w.pool, None)
    for h in result.hourly:
        seen.setdefault(h.pool, None)
    return list(seen)


def _fleet_peak(result: PlanResult) -> int:
    at: Counter = Counter()
    for p, h in L.by_period(result):
        at[(p, h.day_type, h.hour)] += h.reserved_gpus + h.on_demand_gpus + h.spot_gpus + h.committed_gpus
    return max(at.values(), default=0)


def _pool_peak(result: PlanResult, pool: str, hourly_first: bool = False
               ) -> tuple[str, dict[str, list[float]] | None, int, str]:
    """The pool's busiest hour — or, `hourly_first`, the hour it rests most on on-demand and spot: (day type,
    that period's series, hour, "weekday 16:00[, period]").

    With contract periods each period's own supply is searched (a day type's average over them would
    blend, say, the on-demand GPUs before a delivery with the fewer after it). Ties: the busiest hour resting
    most on hourly capacity, the hour most on it with the most demand."""
    best: tuple[tuple[float, float], str | None, str, int] | None = None
    series: dict[str | None, dict[str, dict[str, list[float]]]] = {}
    for period in pool_periods(result, pool):
        s = series[period] = pool_series(result, pool, period)
        for d in result.day_types:
            for h, v in enumerate(s[d]["demand"]):
                key = (round(v, 6), round(s[d]["on_demand"][h] + s[d]["spot"][h], 6))
                if hourly_first:
                    key = key[::-1]
                if best is None or key > best[0]:
                    best = (key, period, d, h)
    if best is None:
        return "", None, 0, "–"
    _key, period, d, h = best
    return d, series[period][d], h, f"{d} {h:02d}:00" + (f", {period}" if period else "")


def _pool(result: PlanResult, pool: str, charts: Charts) -> dict[str, Any]:
    s = pool_series(result, pool)
    _d, at, h, when = _pool_peak(result, pool)
    level = max((v for dd in s for v in s[dd]["reserved"]), default=0)
    offers = sorted({x.offer for x in result.hourly if x.pool == pool})
    held = sum(p.gpus for p in result.purchases if p.tier in vocab.RESERVED_TIERS and p.offer in offers)
    return {"name": pool, "svg": Markup(charts.pool(result, pool)),
            "workloads": [w.name for w in result.workloads if w.pool == pool],
            "offers": offers, "level": f"{level:,.0f}", "held": f"{held:,}",
            "peak": {"at": when, **{k: f"{at[k][h]:,.0f}" if at else "0" for k in SUPPLY_KEYS}}}


def _pool_risk(result: PlanResult, pool: str) -> dict[str, Any]:
    """The hour the pool rests most on on-demand and spot (a pool whose busiest hour is all reserved may
    still lean on spot after a contract ends)."""
    _d, at, h, when = _pool_peak(result, pool, hourly_first=True)
    res, od, sp = (at[k][h] if at else 0.0 for k in ("reserved", "on_demand", "spot"))
    res += sum(at[k][h] for k in ("committed", "owned", "bought")) if at else 0.0  # held whatever the hour
    supply = res + od + sp
    share = (od + sp) / supply if supply else 0.0
    return {"pool": pool, "at": when, "demand": f"{at['demand'][h]:,.0f}" if at else "0",
            "reserved": f"{res:,.0f}", "on_demand": f"{od:,.0f}", "spot": f"{sp:,.0f}",
            "share": f"{share:.0%}", "width": round(100 * share, 1), "warn": share >= 0.5}


def _caps(result: PlanResult) -> list[dict[str, Any]]:
    """Per offer and tier in use: the most GPUs used at one hour (reserved: held) against its cap."""
    use: dict[tuple[str, str], float] = {}
    at: Counter = Counter()
    for h in result.hourly:
        at[(h.offer, "on-demand", h.period, h.day_type, h.hour)] += h.on_demand_gpus
        at[(h.offer, "spot", h.period, h.day_type, h.hour)] += h.spot_gpus
    for (o, t, _p, _d, _h), v in at.items():
        use[(o, t)] = max(use.get((o, t), 0.0), v)
    for p in result.purchases:
        if p.tier in vocab.RESERVED_TIERS:
            use[(p.offer, p.tier)] = use.get((p.offer, p.tier), 0.0) + p.gpus
    rows = []
    for (o, t), u in sorted(use.items()):
        if u <= 0:
            continue
        info = result.offers.get(o, {})
        cap = info.get("available_gpus", {}).get(t)
        node = info.get("gpus_per_node", 1)
        row = {"offer": o, "tier": t, "use": f"{u:,.0f}", "cap": "not stated" if cap is None else f"{cap:,}",
               "headroom": "–", "pct": None, "warn": False, "unknown": cap is None}
        if cap is not None:
            row.update(headroom=f"{cap - u:,.0f}", pct=round(min(100.0, 100 * u / cap), 1) if cap else 100.0,
                       warn=cap - u < node)
        rows.append(row)
    return rows


def _workload(result: PlanResult, w: WorkloadResult, money) -> dict[str, Any]:
    return {"name": w.name, "pool": w.pool, "kind": w.kind,
            "choice": L.split_choice(w) if w.split else L.choice_label(w),
            "model": w.model or "–", "goodput": f"{w.goodput_output_tokens_per_s:,.0f}",
            "source": w.goodput_source, "bound": w.bound or "–", "memory": None if w.split else _memory(w),
            "sizing": _sizing(result, w), "api_share": f"{w.api_share:.1%}" if w.api_share else "",
            "cost": money(w.cost), "per_day": money(w.cost / result.horizon_days),
            "committed": money(w.committed_cost) if w.committed_cost else "",
            "all_in": money(w.cost + w.committed_cost),
            "all_in_per_day": money((w.cost + w.committed_cost) / result.horizon_days),
            "gpus_at_peak": f"{w.gpus_at_peak:,}", **_split(w, money, result.horizon_days),
            "moves": "; ".join(f"from {x.start or x.period} on {x.config}" for x in L.config_changes(w, first=True))}


def _split(w: WorkloadResult, money, days: int) -> dict[str, Any]:
    """split: by_size — the request-size classes and, for each config that serves, its share of each class's
    requests, goodput at each class's sizes, replicas and GPUs at the peak, and cost."""
    if not w.split:
        return {"split": None}
    classes = [f"{k.share:.0%} of requests, {k.input:,.0f} → {k.output:,.0f} tokens" for k in w.size_classes]
    rows = []
    for label, shares in w.split.items():
        x = w.split_configs.get(label)
        rows.append({"label": label, "shares": [f"{z:.0%}" for z in shares],
                     "goodput": [f"{g:,.0f}" for g in w.split_goodput.get(label, [])],
                     "replicas": f"{x.replicas.total:,}" if x is not None else "–",
                     "gpus": f"{w.split_gpus_at_peak.get(label, 0):,}",
                     "cost": money(x.cost) if x is not None else "–",
                     "per_day": money(x.cost / days) if x is not None else "–"})
    classes = classes or [f"class {b + 1}" for b in range(len(next(iter(w.split.values()))))]
    return {"split": {"words": L.split_words(w), "classes": classes, "configs": rows}}


def _cash_months(result: PlanResult, money) -> dict[str, Any] | None:
    """Month by month: new spend (rented, API, servers of your own), committed spend, all-in, and the cash out
    (results.cashflow.pnl_and_cash: servers bought paid at delivery). The months add up to all-in. None
    when the result has no cash flow (results written before it was kept)."""
    if not result.cash_flow:
        return None
    keys = ("new", "committed", "api", "own")
    by: dict[str, dict[str, float]] = {}
    for c in result.cash_flow:
        m = by.setdefault(c.month, dict.fromkeys(keys, 0.0))
        kind = "own" if c.tier in ("buy", "facility") else c.kind if c.kind in keys else "new"
        m[kind] += c.amount
    cash = {m.month: m.cash for m in pnl_and_cash(result.cash_flow, result.own)}
    for month in cash:
        by.setdefault(month, dict.fromkeys(keys, 0.0))
    rows, totals = [], dict.fromkeys(keys + ("all_in", "cash"), 0.0)
    for month in [m for m in cash] + [m for m in by if m not in cash]:
        m = by[month]
        values = {**m, "all_in": sum(m.values()), "cash": cash.get(month, sum(m.values()))}
        for k, v in values.items():
            totals[k] += v
        rows.append({"month": month, **{k: money(v) for k, v in values.items()}})
    return {"rows": rows, "total": {k: money(v) for k, v in totals.items()},
            "own": result.own is not None or any(c.tier in ("buy", "facility") for c in result.cash_flow),
            "api": any(c.kind == "api" for c in result.cash_flow),
            "committed": any(c.kind == "committed" for c in result.cash_flow)}


MEMORY_COLORS = {"weights": "#2f5d8a", "kv": "#7fae5a", "reserve": "#a6a6a6", "free": "#dfe7d3"}


def _memory(w: WorkloadResult) -> dict[str, Any] | None:
    """Per replica: weights | KV for the sequences it needs | reserve | free, as bar segments."""
    if w.offer is None or w.kind == "reserve" or w.total_gb <= 0:
        return None
    kv = min(max(w.free_gb, 0.0), w.needed_concurrency * w.kv_gb_per_seq)
    seqs = "sequence" if w.needed_concurrency == 1 else "sequences"
    parts = [("weights", "weights", w.weights_gb), ("kv", f"KV for {w.needed_concurrency:,} {seqs}", kv),
             ("reserve", "reserve", w.reserve_gb), ("free", "free", max(w.free_gb - kv, 0.0))]
    x, segs = 0.0, []
    for key, label, gb in parts:
        width = 100.0 * gb / w.total_gb
        segs.append({"key": key, "label": label, "gb": f"{gb:,.1f}", "x": round(x, 3), "w": round(width, 3),
                     "color": MEMORY_COLORS[key], "show": width >= 9})
        x += width
    return {"total": f"{w.total_gb:,.1f}", "segments": segs, "kv_per_seq": f"{w.kv_gb_per_seq:.3f}" + (
        f" ({w.kv_copies:g} copies across the replica's GPUs: {w.kv_gb_per_seq / w.kv_copies:.3f} GB each)" if w.kv_copies > 1 else ""),
            "fit": f"{w.kv_concurrency:,}", "need": f"{w.needed_concurrency:,}",
            # a measured point the memory model cannot place is kept (measurements beat the model): say so
            "over": w.goodput_source == "measured" and w.needed_concurrency > w.kv_concurrency}


def _sizing(result: PlanResult, w: WorkloadResult) -> list[str]:
    """The replica arithmetic at the peak hour, in words and numbers."""
    note = L.sizing_note(w)
    r = w.replicas
    if w.split:
        return L.split_sizing(result, w)
    if note:
        if w.kind == "batch":
            return [note, f"{r.total:,} replicas at its busiest hour, {w.gpus_at_peak:,} GPUs; "
                          f"{w.gpu_hours:,.0f} GPU-hours of work over the horizon"]
        if w.kind == "reserve":
            return [note, f"{w.gpus_at_peak:,} GPUs on {w.offer}"]
        return [note]
    pol = result.policy
    occ, roll = float(pol.get("occupancy", 1.0)), float(pol.get("rollout_fraction", 0.0))
    api = w.hourly_api_tokens_per_s.get(w.peak_day_type, [0.0] * 24)[w.peak_hour] if w.hourly_api_tokens_per_s else 0
    served = w.peak_output_tokens_per_s - api
    q = served / (w.goodput_output_tokens_per_s * occ) if w.goodput_output_tokens_per_s else 0.0
    lines = [w.peak_derivation.text()] if w.peak_derivation is not None else []
    lines.append(f"peak {w.peak_output_tokens_per_s:,.0f} output tok/s ({w.peak_day_type}, {w.peak_hour:02d}:00)"
                 + (f" − {api:,.0f} sent to the API = {served:,.0f}" if api > 0 else ""))
    lines.append(f"÷ ({w.goodput_output_tokens_per_s:,.0f} tok/s per replica × {occ:.0%} occupancy) = {q:,.2f}"
                 f" → {r.base:,} base replicas")
    lines.append(f"+ {r.spares} spare + ⌈{roll:.0%} × {r.base + r.spares:,}⌉ = {r.rollout:,} for a rollout"
                 f" → {r.total:,} replicas")
    g = w.gpus_per_replica
    per = f"MIG {w.mig} ({g:.2f} GPU)" if w.mig else f"{g:g} GPU{'' if g == 1 else 's'}"
    lines.append(f"× {per} per replica → {w.gpus_at_peak:,} GPUs at the peak")
    return lines


def _alternatives(result: PlanResult, money) -> list[dict[str, Any]]:
    out: dict[str, list] = {}
    kinds = {w.name: w.kind for w in result.workloads}
    for a in result.alternatives:
        goodput, source, gpus = L.alternative_figures(kinds.get(a.workload), a.goodput_output_tokens_per_s,
                                                      a.goodput_source, a.gpus_at_peak)
        out.setdefault(a.workload, []).append({
            "rank": a.rank, "label": a.label, "goodput": goodput, "source": source, "gpus": gpus,
            "cost": money(a.standalone_cost),
            "difference": L.alternative_difference(a.difference, money), "basis": L.BASIS.get(a.basis, a.basis)})
    return [{"workload": k, "rows": v} for k, v in out.items()]


def _dropped_summary(result: PlanResult) -> list[dict[str, Any]]:
    by: dict[str, Counter] = {}
    for x in result.dropped:
        by.setdefault(x.workload, Counter())[x.family] += 1
    return [{"workload": w, "total": sum(c.values()),
             "families": " · ".join(f"{f} {n}" for f, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))}
            for w, c in by.items()]


def _assumptions(result: PlanResult, money) -> dict[str, Any]:
    tiers = L.used_tiers(result)
    prices = []
    for o, info in result.offers.items():
        ps, est = info.get("prices", {}), info.get("estimated", {})
        prices.append({"offer": o, "accelerator": info.get("accelerator", ""), "provider": info.get("provider", ""),
                       "region": info.get("region", ""), "node": info.get("gpus_per_node", 1),
                       "cells": [("–" if ps.get(t) is None else money(ps[t], 2) + ("*" if est.get(t) else ""))
                                 for t in tiers]})
    policy = []
    for k, v in result.policy.items():
        if isinstance(v, bool):
            v = "yes" if v else "no"
        elif isinstance(v, (list, tuple)):
            v = ", ".join(map(str, v)) or "none"
        elif v is None:
            v = "any"
        elif k in ("occupancy", "memory_reserve", "rollout_fraction", "change_threshold"):
            v = f"{float(v):.0%}"
        elif k == "mip_gap":
            v = f"{float(v):.2%}"
        elif k == "risk" and isinstance(v, dict):  # {measure, level}: words, not a Python mapping
            v = (v.get("measure") if v.get("measure") in ("expected", "worst") or v.get("level") is None
                 else f"{v['measure']} at level {float(v['level']):g}")
        policy.append((L.POLICY_LABELS.get(k, k), str(v)))
    apis = [{"workload": w, "input": money(a.get("usd_per_m_input", 0.0), 2),
             "output": money(a.get("usd_per_m_output", 0.0), 2), "max_share": f"{a.get('max_share', 0.0):.0%}"}
            for w, a in result.apis.items()]
    return {"tiers": tiers, "prices": prices, "policy": policy, "apis": apis,
            "day_types": [(d, L.day_type_days(result, d)) for d in result.day_types],
            "estimated": any("*" in c for p in prices for c in p["cells"])}
