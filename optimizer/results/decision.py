"""The decision a result hands its reader, as one model: each new commitment and purchase with its status
(sign, or provisional while the plan is unproven) and the caveats it carries, and the lines around them (the
all-in spend, what binds, capacity left on hourly tiers). The console, the HTML report and the workbook's
Summary take their words from here, so the three say the same thing.

No I/O and no third-party imports: data in, data out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from optimizer import formatting, vocab
from optimizer.results.evidence import rests_on_unvalidated
from optimizer.results.types import HourlySupply, PlanResult, WorkloadResult

Money = Callable[..., str]
"""money(value, decimals=0) -> text, in the result's currency."""

Status = Literal["sign", "provisional"]

GAP_TOLERANCE = 1e-12
"""A gap equal to the target, up to float noise, meets it."""

NAMES_SHOWN = 4
"""Workloads named in one caveat before the rest are counted."""


# --- caveats ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UnvalidatedEstimate:
    """Workloads served on the item's capacity whose goodput is an estimate no published result backs."""

    workloads: tuple[str, ...]
    offer: str
    group: str
    """The estimate's group (generation/precision/engine/model class), or the config where the result has none."""
    points: int | None
    """Published points behind the group (None: the result does not say)."""
    kind: Literal["unvalidated_estimate"] = "unvalidated_estimate"

    @property
    def text(self) -> str:
        names = list(self.workloads[:NAMES_SHOWN])
        if len(self.workloads) > NAMES_SHOWN:
            names.append(formatting.plural(len(self.workloads) - NAMES_SHOWN, "other workload"))
        backing = ("no published result calibrates its generation and datatype" if self.points is None
                   else formatting.plural(self.points, "published point"))
        return (f"rests on an unvalidated estimate: {formatting.join_words(names)} on {self.offer} "
                f"({self.group}, {backing})")


@dataclass(frozen=True)
class EstimatedPrice:
    """The offer's price for the item's tier is an estimate, not a published price."""

    offer: str
    tier: str
    kind: Literal["estimated_price"] = "estimated_price"

    @property
    def text(self) -> str:
        return f"price is an estimate: no published {self.tier} price for {self.offer} (the catalog derives it)"


@dataclass(frozen=True)
class Provisional:
    """The search stopped short of the plan's target gap: a cheaper plan may hold other commitments."""

    gap: float | None
    """The proven gap between the plan found and the best bound (None: no bound was proven)."""
    mip_gap: float
    """The plan's target (policy.mip_gap)."""
    rerun: str
    """What to run to prove the plan."""
    kind: Literal["provisional"] = "provisional"

    @property
    def text(self) -> str:
        where = ("with no proven bound" if self.gap is None
                 else f"at {self.gap:.2%} of the bound (target {self.mip_gap:.2%})")
        return f"provisional: the search stopped {where}; rerun with {self.rerun} before signing"


@dataclass(frozen=True)
class ReservationUse:
    """How much of the item's GPU-hours the plan's workloads use over the horizon, against its break-even: it
    informs, and asks for a check (not a plain "Sign") only when the use is below break-even."""

    utilization: float
    break_even: float | None = None
    """The utilization from which it is cheaper than on demand (reserved price ÷ on-demand price); None: the
    result has no on-demand price to weigh it against."""
    on_demand_capped: bool = False
    """The offer's on-demand cap binds: below break-even the reservation still supplies what on demand cannot."""
    kind: Literal["reservation_use"] = "reservation_use"

    @property
    def warns(self) -> bool:
        """Below break-even the same GPU-hours would cost less on demand: read before signing."""
        return self.break_even is not None and self.utilization < self.break_even - 1e-9

    @property
    def text(self) -> str:
        if self.break_even is None:
            return f"runs at {self.utilization:.0%} use over the horizon"
        why = ("" if not self.warns else " — its on-demand cap binds, so on demand cannot serve those hours"
               if self.on_demand_capped else " — on demand would cost less for the hours it serves")
        return f"runs at {self.utilization:.0%} use; break-even {self.break_even:.0%}{why}"


Caveat = UnvalidatedEstimate | EstimatedPrice | Provisional | ReservationUse

WARNINGS = frozenset({"unvalidated_estimate", "estimated_price", "provisional"})
"""Caveats that hold back a plain "Sign" (reservation use does only below its break-even: ReservationUse.warns)."""


# --- the model ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    """One new commitment or purchase the plan asks its reader to sign."""

    action: Literal["reserve", "buy"]
    offer: str
    accelerator: str
    provider: str
    tier: str
    gpus: int
    nodes: int | None
    """Servers bought (buy); None for a reservation."""
    term_months: int | None
    """A reservation's term; None for servers bought."""
    price_per_gpu_hour: float | None
    cost_over_term: float
    """A reservation's full-term commitment; servers bought: their price at delivery."""
    monthly: float | None
    start: str | None
    """First day: the plan's start for a reservation, delivery for servers (None without a start_date)."""
    end: str | None
    status: Status
    caveats: tuple[Caveat, ...]
    sentence: str
    """The item in words (its heading is `heading`)."""

    @property
    def warned(self) -> bool:
        return any(c.kind in WARNINGS or getattr(c, "warns", False) for c in self.caveats)

    @property
    def heading(self) -> str:
        """Sign (or Buy) only when proven and with no caveat; Provisional while unproven; Check otherwise."""
        if self.status == "provisional":
            return "Provisional"
        if self.warned:
            return "Check"
        return "Sign" if self.action == "reserve" else "Buy"


@dataclass(frozen=True)
class Line:
    """A line of the decision that is no commitment: the spend, a limit that binds, hourly capacity, or
    that nothing new is signed."""

    what: str
    text: str
    topic: str
    """reserve, buy (that nothing is reserved or bought), spend, binds or hourly."""
    caveats: tuple[Caveat, ...] = ()


@dataclass(frozen=True)
class Row:
    """What a renderer shows: a heading, a sentence and the caveats under it."""

    what: str
    text: str
    caveats: tuple[str, ...]
    status: str
    """sign, provisional, check (caveats to read first) or info (no commitment)."""
    topic: str
    """reserve or buy (an item, or that there is none), spend, binds or hourly."""
    item: Item | None = None


@dataclass(frozen=True)
class Decision:
    entries: list[Item | Line]
    """Reading order: reservations (or that there are none), servers bought (or none), then the spend, what
    binds and hourly capacity."""
    provisional: Provisional | None
    """Set when the plan is unproven: every item then carries it."""

    @property
    def items(self) -> list[Item]:
        return [e for e in self.entries if isinstance(e, Item)]

    @property
    def lines(self) -> list[Line]:
        return [e for e in self.entries if isinstance(e, Line)]

    def rows(self) -> list[Row]:
        return [_row(e) if isinstance(e, Item) else _line_row(e) for e in self.entries]


def _row(x: Item) -> Row:
    status = x.status if x.status == "provisional" else ("check" if x.warned else "sign")
    return Row(x.heading, x.sentence, tuple(c.text for c in x.caveats), status, x.action, x)


def _line_row(n: Line) -> Row:
    return Row(n.what, n.text, tuple(c.text for c in n.caveats),
               "provisional" if any(c.kind == "provisional" for c in n.caveats) else "info", n.topic)


# --- whether an estimate is validated: ONE place --------------------------------------------------------------

def _unvalidated(row: WorkloadResult) -> tuple[bool, str | None, int | None]:
    """(rests on an unvalidated estimate, its group, published points behind it) for a workload row.

    The row's `validation` (results written with `calibrated` read it as one: jsonio), through
    results.evidence.rests_on_unvalidated, the one test; a measured config, an API-only workload and a fixed
    reservation rest on no estimate.
    """
    if row.offer is None or row.kind == "reserve" or not rests_on_unvalidated(row):
        return False, None, None
    v = row.validation
    assert v is not None
    return True, v.group, v.points


# --- provisional ------------------------------------------------------------------------------------------------

def unproven(status: str, gap: float | None, mip_gap: float | None) -> bool:
    """True when the search stopped short of the plan's target gap: a gap above it, or a plan found with no
    bound proven at all."""
    if status not in ("optimal", "feasible"):
        return False
    if gap is None:
        return status == "feasible"
    return mip_gap is not None and gap > float(mip_gap) + GAP_TOLERANCE


def rerun_hint(result: PlanResult) -> str:
    """The command that gives the search more room, with the policy key that does the same: more work when the
    work limit stopped it (solver.stopped_by), a longer time limit when the safety cap did (or nothing says)."""
    cmd = f"planopt solve {result.file}" if result.file else "planopt solve PLAN.yaml"
    stops = {w.stopped_by for w in result.solver.work}
    if stops and "safety cap" not in stops:
        return f"a larger work limit (`{cmd} --work-limit 4`, or a larger policy.work_limit)"
    limit = result.policy.get("time_limit_s")
    more = _seconds(5 * float(limit)) if isinstance(limit, (int, float)) and limit > 0 else "600"
    text = f"a longer time limit (`{cmd} --time-limit {more}`, or a larger policy.time_limit_s"
    if "work_limit" in result.policy:
        text += " and policy.work_limit"
    return text + ")"


def _seconds(s: float) -> str:
    return f"{s:,.0f}" if s >= 10 else f"{s:g}"


def provisional(result: PlanResult) -> Provisional | None:
    """The provisional caveat every new commitment and purchase carries, or None when the plan is proven."""
    mip_gap = result.policy.get("mip_gap")
    if not unproven(result.solver.status, result.solver.gap, mip_gap):
        return None
    return Provisional(result.solver.gap, float(mip_gap or 0.0), rerun_hint(result))


def marked(result: PlanResult) -> PlanResult:
    """The result with `provisional` set on every new reservation and server bought, from its own solver gap and
    policy.mip_gap: nothing of an unproven plan is handed over as signed (and a proven one clears the flags)."""
    flag = unproven(result.solver.status, result.solver.gap, result.policy.get("mip_gap"))
    new = [n if n.provisional == flag else replace(n, provisional=flag) for n in result.new_commitments]
    spend = [n if n.provisional == flag else replace(n, provisional=flag) for n in result.new_spend_commitments]
    own = result.own
    if own is not None and any(b.provisional != flag for b in own.bought):
        own = replace(own, bought=[replace(b, provisional=flag) for b in own.bought])
    if new == result.new_commitments and own is result.own and spend == result.new_spend_commitments:
        return result
    return replace(result, new_commitments=new, own=own, new_spend_commitments=spend)


# --- caveats of one item ----------------------------------------------------------------------------------------

def resting_on(result: PlanResult, offer: str, tier: str) -> list[WorkloadResult]:
    """Workloads served on an offer's held capacity: those using its GPU-hours of the tier (a reserved tier, or
    buy for servers bought), or every workload on the offer where the result does not split GPU-hours by tier."""
    on = [w for w in result.workloads if w.offer == offer]
    split = [w for w in on if w.gpu_hours_by_tier]
    if not split:
        return on
    key = vocab.TIER_GROUP.get(tier, tier)
    return [w for w in split if w.gpu_hours_by_tier.get(key, 0.0) > 0]


def unvalidated_caveats(result: PlanResult, offer: str, tier: str) -> list[UnvalidatedEstimate]:
    """One caveat per estimate group behind the offer's held capacity that no published result validates."""
    groups: dict[tuple[str, int | None], list[str]] = {}
    for w in resting_on(result, offer, tier):
        bad, group, points = _unvalidated(w)
        if bad:
            label = group or " · ".join(x for x in (w.accelerator, w.precision, w.layout or vocab.parallel_label(w.tp, w.mig)) if x)
            groups.setdefault((label, points), []).append(w.name)
    return [UnvalidatedEstimate(tuple(names), offer, g, p) for (g, p), names in sorted(groups.items(), key=lambda kv: kv[0][0])]


def price_estimated(result: PlanResult, offer: str, tier: str) -> bool:
    """Whether the offer's price for the tier is an estimate: the purchase's flag, else the offer's."""
    for p in result.purchases:
        if p.offer == offer and p.tier == tier:
            return p.price_estimated
    return bool(result.offers.get(offer, {}).get("estimated", {}).get(tier, False))


def _caveats(result: PlanResult, offer: str, tier: str, prov: Provisional | None,
             utilization: float | None, break_even: float | None = None) -> tuple[Caveat, ...]:
    out: list[Caveat] = [prov] if prov is not None else []
    out += unvalidated_caveats(result, offer, tier)
    if price_estimated(result, offer, tier):
        out.append(EstimatedPrice(offer, tier))
    if utilization is not None:
        capped = any(b.family == "cap_on_demand" and b.what == f"{offer} on-demand" for b in result.binding)
        out.append(ReservationUse(float(utilization), None if break_even is None else float(break_even), capped))
    return tuple(out)


# --- the decision -------------------------------------------------------------------------------------------------

def decide(result: PlanResult, money: Money | None = None) -> Decision:
    """The decision of a result, its words in `money`'s format (default: the result's currency)."""
    if money is None:
        cur = result.currency
        money = lambda v, nd=0: formatting.money(v, cur, nd)  # noqa: E731
    prov = provisional(result)
    status: Status = "provisional" if prov is not None else "sign"
    entries: list[Item | Line] = []
    regret = max_regret(result)
    for n in result.new_commitments:
        last = f", last day {n.end}" if n.end else f", {n.end_text}"
        if n.start and n.start != result.start_date:  # a renewal or later start (policy.reservation_starts)
            last = f", from {n.start}{last}"
        if getattr(n, "upfront", 0.0):
            last += f"; {money(n.upfront)} paid up front ({n.payment})"
        sentence = (f"{n.gpus} GPUs of {n.offer} {n.tier} at {money(n.price_per_gpu_hour, 2)}/GPU-hour: "
                    f"{money(n.monthly)} a month, {money(n.total_committed)} over the term{last}"
                    + (f"; regret across the {len(result.scenarios)} scenarios at most {money(regret[1])} "
                       f"(if {regret[0]} comes true" + ("" if _same_money(regret[2], regret[1]) else
                                                        f"; at least {money(regret[2])}: the best plan for it "
                                                        "alone was not proven in the time, so its regret lies "
                                                        "between the two")
                       + ")" if regret else ""))
        entries.append(Item("reserve", n.offer, n.accelerator, n.provider, n.tier, n.gpus, None, n.term_months,
                          n.price_per_gpu_hour, n.total_committed, n.monthly, n.start, n.end,
                          "provisional" if prov is not None or getattr(n, "provisional", False) else status,
                          _caveats(result, n.offer, n.tier, prov, n.utilization, n.break_even_utilization), sentence))
    if not result.new_commitments:
        entries.append(Line("Provisional", "no new reservation in the plan found so far", "reserve", (prov,))
                       if prov is not None else Line("Sign", "no new reservation", "reserve"))
    for c in result.new_spend_commitments:  # a Savings Plan or committed-use discount: dollars an hour, not GPUs
        text = (f"{c.provider} spend commitment ({c.term}, {c.discount:.0%} off on-demand) of "
                f"{money(c.usd_per_hour, 2)}/hour: {money(c.monthly)} a month, {money(c.total_committed)} over the "
                f"term{f', last day {c.end}' if c.end else ''}; {c.utilization:.0%} of it used this horizon "
                f"(break-even {c.break_even_utilization:.0%})")
        entries.append(Line("Provisional", text, "reserve", (prov,) if prov is not None else ())
                       if prov is not None or c.provisional else Line("Sign", text, "reserve"))
    own = result.own
    if own is not None:
        for b in own.bought:
            entries.append(Item("buy", b.offer, b.accelerator, _provider(result, b.offer), "buy", b.gpus, b.nodes,
                              None, _buy_price(result, b.offer), b.capex, None, b.delivery_date, None,
                              "provisional" if prov is not None or getattr(b, "provisional", False) else status,
                              _caveats(result, b.offer, "buy", prov, None), b.decision))
        if not own.bought and any(r.offer for r in own.break_even):
            text = "no server: renting is cheaper at this plan's prices and demand"
            entries.append(Line("Provisional", text, "buy", (prov,)) if prov is not None else Line("Buy", text, "buy"))
    entries += _other_lines(result, money)
    return Decision(entries, prov)


def _provider(result: PlanResult, offer: str) -> str:
    return str(result.offers.get(offer, {}).get("provider", ""))


def _buy_price(result: PlanResult, offer: str) -> float | None:
    p = next((p for p in result.purchases if p.offer == offer and p.tier == "buy"), None)
    return None if p is None else p.price_per_gpu_hour


def _other_lines(result: PlanResult, money: Money) -> list[Line]:
    """The all-in spend, the caps that bind, and capacity on hourly tiers at the busiest hour."""
    out = []
    own = result.own
    days = f"{result.horizon_days} day{'' if result.horizon_days == 1 else 's'}"
    spend = f"{money(result.cost_all_in)} all-in for the {days}"
    if result.cost_committed:
        spend += f" = {money(result.cost_total)} new spend + {money(result.cost_committed)} already committed"
    if result.cost_idle > 0.5:
        spend += f"; {money(result.cost_idle)} of the new spend buys GPU-hours no workload uses at that hour"
    if own is not None and own.capex:
        spend += f"; the servers bought cost {money(own.capex)} in cash at delivery (the spend counts this horizon's share)"
    out.append(Line("Spend", spend, "spend"))
    for text in what_binds(result, money):
        out.append(Line("Binds", text, "binds"))
    hourly: dict[tuple[str, str, int], list[int]] = {}
    for period, h in by_period(result):
        row = hourly.setdefault((h.day_type, period, h.hour), [0, 0])
        row[0] += h.on_demand_gpus
        row[1] += h.spot_gpus
    if hourly:
        top = max(sum(v) for v in hourly.values())
        order = {d: i for i, d in enumerate(result.day_types)}
        ties = sorted((k for k, v in hourly.items() if sum(v) == top),  # the first such hour of the plan's day types
                      key=lambda k: (order.get(k[0], len(order)), k[1], k[2]))
        (d, period, hour), (od, sp) = ties[0], hourly[ties[0]]
        if od + sp:
            when = f"{d} {hour:02d}:00" + (f", {period}" if period else "")
            if len(ties) > 1:
                when += f", and {formatting.plural(len(ties) - 1, 'other hour')} as busy"
            out.append(Line("Hourly", f"{od + sp:,} GPUs rest on hourly capacity at the hour it peaks ({when}): "
                                      f"{od:,} on-demand, {sp:,} spot — not guaranteed where a provider runs short",
                            "hourly"))
    return out


# --- what the lines read (the report's labels re-export these) ---------------------------------------------------

def caps_that_bind(result: PlanResult) -> list:
    """What binds the plan: caps and overflow limits. What limits a config's goodput (TPOT, TTFT,
    memory) belongs to its workload's row, not here."""
    return [b for b in result.binding if b.family != "goodput"]


NOTHING_BINDS = "no cap, overflow limit or facility limit binds"


def what_binds(result: PlanResult, money: Money) -> list[str]:
    """The one account of what binds the plan, which every report words from here (the Decision's Binds lines,
    Summary's "What binds", the console, the HTML): the caps and overflow limits reached, then each facility
    limit that binds (raising it saves money, re-solved) with what one more MW or rack would save; a facility
    limit that is full but whose next MW or rack saves nothing is said to be full and not binding. When
    nothing binds it says so, and still names a full limit."""
    binds, full = facility_binds(result, money)
    out = [f"{b.what}: {b.detail}" for b in caps_that_bind(result)] + binds
    return (out or [NOTHING_BINDS]) + full


def facility_binds(result: PlanResult, money: Money) -> tuple[list[str], list[str]]:
    """The facility's part of what_binds: the limits that bind (with what one more would save), and those
    full without binding."""
    binds: list[str] = []
    full: list[str] = []
    if result.own is None:
        return binds, full
    f = result.own.facility
    for limit, value, used in (("power_kw", f.power_kw, f.power_kw_used), ("racks", f.racks, f.racks_used)):
        if limit in f.binding:
            binds.append(facility_sentence(result, limit, money))
        elif value is not None and used >= value - 1e-9:
            full.append(facility_sentence(result, limit, money, binds=False))
    return binds, full


def facility_sentence(result: PlanResult, limit: str, money: Money, binds: bool = True) -> str:
    """One facility limit, with what one more MW or rack would save (when re-solved): one that binds, or
    (`binds` false) one that is full without binding."""
    f = result.own.facility  # type: ignore[union-attr]
    if limit == "power_kw":
        text = f"facility power: {f.power_kw_used:,.0f} of {f.power_kw:,.0f} kW taken by servers"
        more, unit = f.marginal.get("power_kw_plus_1000"), "MW"
    else:
        text = f"facility racks: {f.racks_used} of {f.racks} rack positions taken"
        more, unit = f.marginal.get("racks_plus_1"), "rack"
    if binds:
        return text + ("" if more is None else f"; one more {unit} would save {money(more)}")
    return text + (" (full; what one more would save is not priced)" if more is None
                   else f" (full, but one more {unit} would save {money(more)}: it does not bind)")


def by_period(result: PlanResult) -> Iterator[tuple[str, HourlySupply]]:
    """Each hourly row with each contract period it holds in: its own, or — the row of an offer whose supply does
    not change at a contract's end (period "") — every period. An hour of one period is not the same hour of
    another, so peaks are read period by period; "" alone when nothing changes inside the horizon."""
    periods = [p.label for p in result.periods] if any(h.period for h in result.hourly) else [""]
    for h in result.hourly:
        for period in ([h.period] if h.period else periods):
            yield period, h


def max_regret(result: PlanResult) -> tuple[str, float, float] | None:
    """The scenario where this plan may regret most: (name, the most its regret can be, the regret against the
    best plan found for it). The two differ when that scenario's own solve stopped short of the gap."""
    if result.risk is None or not result.risk.regret:
        return None
    ranges = {k: regret_range(result, k) for k in result.risk.regret}
    name, (found, most) = max(ranges.items(), key=lambda kv: (kv[1][1], kv[0]))
    return name, most, found


def regret_range(result: PlanResult, name: str) -> tuple[float, float]:
    """A scenario's regret against the best plan found for it, and the most it can be (its solve's bound)."""
    assert result.risk is not None
    found = result.risk.regret[name]
    return found, max(found, result.risk.regret_upto.get(name, found))


def _same_money(a: float, b: float) -> bool:
    return abs(b - a) < 0.5


same_money = _same_money
