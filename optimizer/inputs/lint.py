"""Plan lint: what is valid but looks wrong. A plan that loads is solved as written; these are the sentences that
ask whether it says what its author meant (a price in cents, seconds written as milliseconds, a calendar that
disagrees with the day counts). `solve` carries them as notes on the result and `validate` prints them as warnings.

Each check reads the loaded plan alone: no catalog, candidates or solve.
"""

from __future__ import annotations

import datetime as dt

from optimizer.inputs.demand import profile_warning
from optimizer.inputs.derived import peak_derivation
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.plan import PEAK_HOUR_TOLERANCE, Plan, per_rack
from optimizer.vocab import profile_for

STEEP_PRICE_PER_GPU_HOUR = 100.0
"""A price per GPU-hour above this is likely cents or a node's price (a warning, in DOLLAR_LIKE currencies)."""
DOLLAR_LIKE = ("USD", "EUR", "GBP", "CHF", "CAD", "AUD", "SGD", "NZD")
SLOW_TTFT_MS, SLOW_TPOT_MS = 600_000.0, 10_000.0
"""Targets above these (10 minutes to a first token, 10 s a token) are likely seconds written as ms × 1000."""
PER_TOKEN_LIKE_USD_PER_M = 0.001
"""An API price per million tokens below this (a tenth of a cent) is a price per token written as per million."""
CALENDAR_SLACK_DAYS = 3
"""Stated days of a day type may differ this much from the calendar's (holidays taken out) before validate asks
whether they are swapped."""


def lint(plan: Plan) -> list[str]:
    """Every warning for the plan, in plan order: spot pools with no spot tier, steep prices, day counts the
    calendar contradicts, contracts outside the horizon, per-token API prices, offers no provider allows, owned
    servers above the facility, SLOs in seconds, and hourly profiles that never reach the peak or contradict the
    peak-hour share the business numbers state."""
    return [*_policy(plan), *_prices(plan), *_calendar(plan), *_contracts(plan), *_api_prices(plan),
            *_providers(plan), *_facility(plan), *_late_hardware(plan), *_workloads(plan)]


def _policy(plan: Plan) -> list[str]:
    if "spot_pools" in plan.policy.model_fields_set and plan.policy.spot_pools and "spot" not in plan.policy.tiers:
        return [f"policy.spot_pools names {', '.join(plan.policy.spot_pools)}, but policy.tiers has no spot: no "
                "pool rents spot — add spot to policy.tiers, or remove spot_pools"]
    return []


def _prices(plan: Plan) -> list[str]:
    out = []
    for o in plan.offers if plan.currency.upper() in DOLLAR_LIKE else []:
        steep = sorted(t for t in o.price_per_gpu_hour if (o.price(t) or 0) > STEEP_PRICE_PER_GPU_HOUR)
        if steep:
            out.append(f"offer {o.id}: {o.price(steep[0]):g} {plan.currency} per GPU-hour ({steep[0]}) is far above "
                       "any accelerator's rent — is it in cents, or per node-hour? prices are per GPU-hour")
    return out


def calendar_days(plan: Plan) -> dict[str, int]:
    """Each day type's days in the calendar from start_date (empty without a start_date or day types)."""
    if plan.start_date is None or not plan.day_types:
        return {}
    out = dict.fromkeys(plan.day_types, 0)
    for k in range(plan.horizon_days):
        t = plan.day_type_of(plan.start_date + dt.timedelta(days=k))
        if t is not None:
            out[t] += 1
    return out


def _by_base(counts: dict[str, float], base: dict[str, str]) -> dict[str, float]:
    """Days per day type of a scenario plan's program copy, added up per day type the plan states."""
    out: dict[str, float] = {}
    for k, n in counts.items():
        out[base.get(k, k)] = out.get(base.get(k, k), 0) + n
    return out


def _calendar(plan: Plan) -> list[str]:
    calendar: dict[str, float] = dict(calendar_days(plan))
    stated: dict[str, float] = dict(plan.day_type_days())
    sd = scenario_days(plan)
    if sd is not None:  # the program's copy: each day type once per scenario, its days weighted — add them up
        calendar, stated = _by_base(calendar, sd.base), _by_base(stated, sd.base)
    off = {t: (n, calendar.get(t, 0)) for t, n in stated.items() if abs(n - calendar.get(t, 0)) > CALENDAR_SLACK_DAYS}
    if not (calendar and off):
        return []
    return ["day_types state " + ", ".join(f"{t} {n:g}" for t, (n, _c) in off.items())
            + f", but the calendar from start_date {plan.start_date} has "
            + ", ".join(f"{t} {c}" for t, (_n, c) in off.items())
            + " — the program prices the days stated: are they swapped, or for another horizon?"]


def _contracts(plan: Plan) -> list[str]:
    """A contract outside the horizon costs and supplies nothing here."""
    if plan.start_date is None:
        return []
    out = []
    last = plan.start_date + dt.timedelta(days=plan.horizon_days - 1)
    for c in plan.commitments:
        if c.end < plan.start_date or c.start > last:
            out.append(f"the contract on {c.offer} ({c.start} to {c.end}) lies outside the horizon "
                       f"({plan.start_date} to {last}): it supplies and costs nothing in this plan — check "
                       "its dates, or start_date and horizon_days")
    return out


def _api_prices(plan: Plan) -> list[str]:
    out = []
    for w in plan.workloads:
        api = w.api
        if api is not None and 0 < max(api.usd_per_m_input, api.usd_per_m_output) < PER_TOKEN_LIKE_USD_PER_M:
            out.append(f"{w.name}: api prices {api.usd_per_m_input:g} and {api.usd_per_m_output:g} per million "
                       "tokens are far below any API's — per token? prices are per million tokens "
                       f"({api.usd_per_m_output:g} per token is usd_per_m_output: {api.usd_per_m_output * 1e6:g})")
    return out


def _providers(plan: Plan) -> list[str]:
    """An offer written in the plan, then filtered out unseen."""
    providers = plan.policy.providers
    if providers is None:
        return []
    return [f"offer {o.id} is in the plan, but its provider {o.provider} is not in policy.providers "
            f"({', '.join(providers)}): no workload may use it — add {o.provider} to policy.providers, "
            "or remove the offer"
            for o in plan.offers if o.provider not in providers and o.provider != "own"]


def _facility(plan: Plan) -> list[str]:
    out = []
    fac = plan.facility
    kw = sum(o.node_power_kw * o.nodes for o in plan.owned)
    if fac.power_kw is not None and kw > fac.power_kw:
        out.append(f"the servers owned draw {kw:,.0f} kW at load, above facility.power_kw {fac.power_kw:,.0f}: "
                   "nothing can be bought under it — check facility.power_kw (kW of IT power) and owned nodes")
    positions = sum(-(-o.nodes // per_rack(o.gpus_per_node, o.nodes_per_rack)) for o in plan.owned)
    if fac.racks is not None and positions > fac.racks:
        out.append(f"the servers owned take {positions:,} rack positions, above facility.racks {fac.racks:,}: "
                   "nothing can be bought under it — check facility.racks and owned nodes_per_rack")
    return out


def _late_hardware(plan: Plan) -> list[str]:
    """Servers that cannot serve in this horizon: a buy offer delivered after its last day (ordered on the first),
    owned servers entering service after it."""
    out = []
    H = plan.horizon_days
    for o in plan.offers:
        lead = o.buy.lead_time_days if o.buy is not None else None
        if lead is not None and lead >= H:
            out.append(f"offer {o.id}: buy.lead_time_days {lead:,} is beyond the horizon ({H:,} days): servers "
                       "ordered on its first day arrive after it ends and serve nothing in this plan — check "
                       "lead_time_days (days, not hours), or lengthen horizon_days")
    if plan.start_date is None:
        return out
    last = plan.start_date + dt.timedelta(days=H - 1)
    for i, o in enumerate(plan.owned):
        if o.since is not None and o.since > last:
            out.append(f"owned[{i}] ({o.nodes:,} × {o.accelerator}): since {o.since} is after the horizon's last day "
                       f"{last}: they serve nothing in this plan — check since (the day they entered service), or "
                       "start_date and horizon_days")
    return out


def _workloads(plan: Plan) -> list[str]:
    """Each workload in turn: SLO targets in seconds, then its hourly profile against its peak."""
    out = []
    for w in plan.workloads:
        for name, limit in (("ttft_ms", SLOW_TTFT_MS), ("tpot_ms", SLOW_TPOT_MS)):
            v = getattr(w.slo, name)
            if v is not None and v > limit:
                out.append(f"{w.name}: slo.{name} {v:,.0f} ms is {v / 60000:,.1f} minutes — targets are in "
                           f"milliseconds ({v / 1e6:g} s is {name}: {v / 1000:g})")
        if w.demand is not None and w.demand.profile is not None:
            lists = ([w.demand.profile] if isinstance(w.demand.profile, list)
                     else list(w.demand.profile.values()))
            top = max(max(v) for v in lists)
            if 0 < top < 1 - PEAK_HOUR_TOLERANCE and isinstance(w.demand.profile, list):
                out.append(f"{w.name}: demand.profile never reaches the peak (its busiest hour is {top:g}): the "
                           f"fleet is sized for {top:.0%} of peak_output_tokens_per_s — if the peak is the "
                           f"busiest hour, divide the profile by {top:g}")
            elif 0 < top < 1 - PEAK_HOUR_TOLERANCE:
                each = {t: max(v) for t, v in w.demand.profile.items()}  # type: ignore[union-attr]
                shares = [t for t, v in w.demand.profile.items()  # type: ignore[union-attr]
                          if abs(sum(v) - 1) <= 0.05 and max(v) < top]
                out.append(f"{w.name}: demand.profile never reaches the peak on any day type (busiest hours: "
                           + ", ".join(f"{t} {m:g}" for t, m in each.items()) + f"): the fleet is sized for "
                           f"{top:.0%} of peak_output_tokens_per_s"
                           + (f" — {', '.join(shares)} add{'s' if len(shares) == 1 else ''} up to 1: shares of "
                              "the day, not fractions of the peak? divide each such list by its busiest hour"
                              if shares else " — if the peak is the busiest day type's busiest hour, divide "
                              f"every list by {top:g}"))
        d = peak_derivation(plan, w)
        if d is None:
            continue
        assert w.demand is not None
        profiles = {t: profile_for(w.demand.profile, t) for t in plan.day_type_days()}
        warning = profile_warning(w.name, d, profiles, stated_profile=w.demand.profile is not None)
        if warning:
            out.append(warning)
    return out


STALE_PRICE_DAYS = 90
"""A price checked more than this many days before the plan's first day is warned of: rents move by the quarter
(new generations, provider cuts), so a price from before the last quarter may no longer be offered."""


def price_date(as_of: str | None) -> dt.date | None:
    """The day a price's `as_of` stands for: YYYY-MM-DD itself, YYYY-MM its month's first day (so a month-only
    date counts from the earliest day it may mean); None when absent or not a date."""
    if not as_of:
        return None
    text = str(as_of).strip()
    try:
        if len(text) == 7:
            return dt.date.fromisoformat(text + "-01")
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def stale_prices(plan: Plan, offers) -> list[str]:
    """One warning naming every offer whose price `as_of` is more than STALE_PRICE_DAYS before the plan's
    start_date, among `offers` (those its configs can run on) and the plan's own offers, and one naming every
    savings plan (savings_plans[i]) whose discount's `as_of` is (none without a start_date, or for entries
    without an as_of)."""
    if plan.start_date is None:
        return []
    limit = plan.start_date - dt.timedelta(days=STALE_PRICE_DAYS)
    every = {o.id: o for o in [*plan.offers, *offers]}
    stale = sorted((o.id, o.as_of) for o in every.values()
                   if (d := price_date(getattr(o, "as_of", None))) is not None and d < limit)
    out = []
    if stale:
        shown = ", ".join(f"{oid} (as_of {as_of})" for oid, as_of in stale)
        out.append(f"prices more than {STALE_PRICE_DAYS} days older than start_date {plan.start_date} (before "
                   f"{limit}): {shown} — check them against today's prices (planopt catalog import-prices reads "
                   "SkyPilot's catalog) and update as_of, or give the plan's own offers")
    plans = [(i, sp) for i, sp in enumerate(plan.savings_plans)
             if (d := price_date(sp.as_of)) is not None and d < limit]
    if plans:
        shown = ", ".join(f"savings_plans[{i}] ({sp.provider} {sp.term}, {sp.discount:.0%} off, as_of {sp.as_of})"
                          for i, sp in plans)
        out.append(f"savings plan discounts more than {STALE_PRICE_DAYS} days older than start_date "
                   f"{plan.start_date} (before {limit}): {shown} — check each against the provider's Savings Plans "
                   "or committed-use price page and update discount and as_of")
    return out
