"""Why no plan meets the caps, in words: the program re-solved with its caps — and the GPUs owned or signed
for — made elastic, and the excess read back as a shortfall per offer, tier and day type (a batch job's
in its window, a facility's in kW or racks)."""

from __future__ import annotations

import datetime as dt

from optimizer import vocab
from optimizer.candidates import ownership
from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.errors import InfeasiblePlan
from optimizer.inputs.loading import LoadedPlan
from optimizer.optimize.calendar import Segments
from optimizer.optimize.model import build_model
from optimizer.optimize.policy import DEFAULT_POLICY
from optimizer.optimize.solver import solve
from optimizer.physics.batch import batch_gpu_hours

HELD_TIERS = ("owned", "signed")
"""Diagnosis 'tiers' that are GPUs held (owned servers, contracts signed), not a provider's cap."""
HELD_FIX = {
    "owned": "the servers you own are all this plan may use there: buy more (an offer with buy:, rented until they arrive), allow "
             "rented tiers and providers (policy.tiers, policy.providers), or allow API overflow",
    "power_kw": "raise facility.power_kw, buy denser servers, or allow rented tiers and providers (policy.tiers, "
                "policy.providers) or API overflow",
    "racks": "raise facility.racks, buy denser servers, or allow rented tiers and providers (policy.tiers, "
             "policy.providers) or API overflow",
    "signed": "the signed contracts are all this plan may use there: allow on-demand, spot or reserved at the "
              "offer (policy.tiers), other offers, or API overflow",
}


def diagnose(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, solver: str,
             time_limit_s: float) -> InfeasiblePlan:
    """Say in words why no plan meets the caps: re-solve with caps — and the GPUs owned or signed for —
    made elastic and read the excess."""
    reasons, tiers = _diagnosis(loaded, cands, segments, solver, time_limit_s)
    fix = HELD_FIX[tiers.pop()] if len(tiers) == 1 and next(iter(tiers)) in HELD_FIX else None
    return InfeasiblePlan(reasons, fix=fix)


def _diagnosis(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, solver: str, time_limit_s: float
               ) -> tuple[list[str], set[str]]:
    """The reasons, and the tiers ("owned", "signed" or a rented one) whose limits they are about."""
    plan = loaded.plan
    prog = build_model(loaded, cands, segments, elastic=True, cuts=False)  # the cuts hold only within the caps
    # on work, as every solve (the time limit only its safety cap): the same reasons on every machine
    info = solve(prog.prob, solver, time_limit_s=time_limit_s, mip_gap=0.0, node_limit=DEFAULT_POLICY.work.nodes,
                 threads=DEFAULT_POLICY.threads)
    if info.status not in ("optimal", "feasible"):
        return ["no plan meets the constraints, and the diagnosis solve found no reason either"], set()
    sol = prog.solution()
    chosen = cands.chosen(sol.chosen)
    # Group the excess by offer, tier and day type; name the worst hour and every hour affected.
    groups: dict[tuple[str, str, str | None], list[tuple[int | None, float]]] = {}
    for (o, tier, d, h), excess in sol.cap_excess.items():
        if excess >= 0.5:
            groups.setdefault((o, tier, d), []).append((h, excess))
    reasons = [_facility_shortfall(loaded, prog, limit, hours[0][1]) for (o, limit, _d), hours in sorted(groups.items())
               if o == "facility"]
    for (o, tier, d), hours in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))):
        if o == "facility":
            continue
        offer = prog.offers[o]
        if tier in HELD_TIERS:  # the GPUs held then, not a cap
            cap = prog.segments.committed_at(o, d or "")
        else:
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
        worst_h, worst = max(hours, key=lambda he: (he[1], -(he[0] or 0)))
        at_offer = [w for w in plan.workloads if chosen[w.name].offer == o]
        short_hours = sorted(h for h, _ in hours if h is not None)
        if worst_h is None:
            who = " and ".join(w.name for w in at_offer) or "the plan"
            reasons.append(f"{who} {'needs' if len(at_offer) == 1 else 'need'} {int(round(cap + worst))} {tier} "
                           f"{offer.accelerator} GPUs for the horizon; {o} ({offer.provider}) can supply {cap}")
            continue
        busy = [w for w in at_offer if any(sol.gpus_at(chosen[w.name].key, (d, h)) > 0 for h in short_hours)]
        dtype, _n, period = segments.segments.get(d or "", (d, 0, None))  # a day type, or one in a contract period
        day = vocab.day_type_words(dtype or "")
        if period is not None and segments.calendar is not None:
            day += f" from {segments.calendar.periods[period].label}"
        if busy and all(w.kind == "batch" for w in busy):
            # A batch job can move within its window: say what the window holds, not one hour.
            for w in busy:
                reasons.append(_batch_shortfall(w, chosen[w.name], offer, tier, cap, day))
            continue
        users = [f"{w.name} ({int(round(sol.gpus_at(chosen[w.name].key, (d, worst_h))))} GPUs)" for w in busy
                 if sol.gpus_at(chosen[w.name].key, (d, worst_h)) > 0]
        who = " and ".join(users) if users else "the plan"
        verb = "needs" if len(users) == 1 else "need"
        need = int(round(cap + worst))
        tail = " (short all day)" if len(short_hours) == 24 else f" (short at {_hour_ranges(short_hours)})"
        unit = f" in {offer.gpus_per_node}-GPU nodes" if offer.gpus_per_node > 1 else ""
        reasons.append(f"{who} {verb} {need} {tier} {offer.accelerator} GPUs{unit} at {worst_h:02d}:00 on {day}; "
                       f"{o} ({offer.provider}) {_supplies(tier, cap)}{tail}")
    reasons += _unbridged_deliveries(loaded, prog)
    if not reasons:
        reasons.append("no plan meets the constraints")
    return reasons, {tier for (_o, tier, _d) in groups}


def _unbridged_deliveries(loaded: LoadedPlan, prog) -> list[str]:
    """Offers to buy whose servers arrive inside the horizon with nothing rented at the offer until then: a
    workload serves from one offer for the whole horizon, so none can move there (a cause the excess hides)."""
    cal, out = prog.segments.calendar, []
    for o in sorted(prog.own):
        day = cal.deliveries.get(o) if cal is not None else None
        offer = prog.offers[o]
        if not day or prog.own[o].kind != "buy" or any(offer.sells(t) for t in ("on-demand", "spot")):
            continue
        when = f"on {loaded.plan.start_date + dt.timedelta(days=day)}" if loaded.plan.start_date else f"on day {day}"
        out.append(f"{o}'s servers arrive {when}, {day} days into the horizon, and {o} has no on-demand price to "
                   f"serve from until then — a workload runs at one offer for the whole horizon (give "
                   f"{o} price_per_gpu_hour: {{on-demand: …}} to rent the same machine until they arrive)")
    return out


def _facility_shortfall(loaded: LoadedPlan, prog, limit: str, excess: float) -> str:
    """'the servers the plan needs to buy draw 20.4 kW at load; the facility has 9.6 kW for them (…)'."""
    fac = loaded.plan.facility
    kw_owned, racks_owned = ownership.owned_facility_use(prog.own)
    if limit == "power_kw":
        room = max(0.0, fac.power_kw - kw_owned)
        less = f", less {kw_owned:,.1f} kW the owned servers draw" if kw_owned else ""
        return (f"the servers the plan needs to buy draw {room + excess:,.1f} kW at load; the facility has "
                f"{room:,.1f} kW for them (facility.power_kw {fac.power_kw:g}{less})")
    room = max(0, fac.racks - racks_owned)
    less = f", less {racks_owned} the owned servers take" if racks_owned else ""
    return (f"the servers the plan needs to buy take {room + excess:,.0f} rack positions; the facility has "
            f"{room} for them (facility.racks {fac.racks}{less})")


def _supplies(tier: str, gpus: int) -> str:
    return {"owned": f"has {gpus} of them", "signed": f"has {gpus} under contract"}.get(tier, f"can supply {gpus}")


def _batch_shortfall(w, c: Candidate, offer, tier: str, cap: int, day: str) -> str:
    """'nightly needs 16 GPU-hours a day in its window 22:00–06:00 …; the cap of 1 GPU gives at most 8'."""
    assert w.batch is not None
    share = w.api.max_share if w.api is not None else 0.0
    need = batch_gpu_hours((1 - share) * w.batch.output_tokens_per_day, c.goodput, c.gpu_fraction)
    window = w.batch.hours()
    start, end = w.batch.window_hours
    span = "all day" if len(window) == 24 else f"{start:02d}:00–{end:02d}:00"
    held = f"has {cap} {tier} {offer.accelerator} GPUs" if tier in HELD_TIERS else \
        f"caps {tier} at {cap} {offer.accelerator} GPUs"
    return (f"{w.name} needs {need:,.0f} GPU-hours a day in its window {span} on {day} ({c.label}); "
            f"{offer.id} ({offer.provider}) {held}, "
            f"at most {cap * len(window):,} GPU-hours in the window")


def _hour_ranges(hours: list[int]) -> str:
    """[13, 14, 15, 18] -> '13:00–16:00, 18:00–19:00'."""
    out, start, prev = [], None, None
    for h in hours + [None]:  # type: ignore[list-item]
        if h is not None and prev is not None and h == prev + 1:
            prev = h
            continue
        if start is not None:
            out.append(f"{start:02d}:00–{(prev + 1) % 24:02d}:00")
        start = prev = h
    return ", ".join(out)
