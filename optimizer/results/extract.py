"""Solved values → PlanResult: the plan, its candidates and the Solution read into plain data. No PuLP."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from optimizer import vocab
from optimizer.candidates import ownership, prune
from optimizer.candidates.overflow import ceiling_rate
from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.inputs import prices
from optimizer.inputs.derived import peak_derivation, program_input
from optimizer.inputs.lint import lint, stale_prices
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan
from optimizer.optimize import costs
from optimizer.optimize.calendar import Period
from optimizer.optimize.solution import Solution, SolveInfo
from optimizer.physics import replicas as rep
from optimizer.results import cashflow as cf
from optimizer.results import evidence
from optimizer.results import contracts as cm
from optimizer.results import decision
from optimizer.results import own
from optimizer.results import scenarios as scn
from optimizer.results import showback as sb
from optimizer.results.types import (
    AlternativeRow,
    Binding,
    CandidateRow,
    HourlySupply,
    MoveRow,
    PeriodConfig,
    PlanResult,
    Purchase,
    ReplicaCount,
    SharedGroup,
    SharedMember,
    SizeClassRow,
    SplitConfig,
    WorkloadResult,
)
from optimizer.results.spend import TIER as SPEND_TIER
from optimizer.results.spend import result as spend_result
from optimizer.results.spend import schedule as spend_schedule
from optimizer.units import SECONDS_PER_HOUR
from optimizer.vocab import RESERVED_TIERS, TIER_GROUP

HOURLY = ("on_demand", "spot")


@dataclass(frozen=True)
class Solved:
    """A plan, its candidates, the offers they run on and what the solve decided."""

    plan: Plan
    cands: CandidateSet
    sol: Solution
    offers: dict[str, Offer]

    @classmethod
    def of(cls, plan: Plan, cands: CandidateSet, sol: Solution, catalog_offers: dict[str, Offer]) -> "Solved":
        return cls(plan, cands, sol, {o: catalog_offers[o] for o in cands.offer_ids()})


def _int(v: float) -> int:
    return int(round(v))


def extract(plan: Plan, cands: CandidateSet, sol: Solution, info: SolveInfo, catalog_offers: dict[str, Offer],
            file: str) -> PlanResult:
    """Read a solve into a PlanResult; costs recomputed from the integer values."""
    solved = Solved.of(plan, cands, sol, catalog_offers)
    pol = plan.policy
    days = plan.day_type_days()
    seg_days = sol.segments.days()
    H = plan.horizon_days
    chosen = cands.chosen(sol.chosen)

    # GPUs in use per candidate and hour, and per (offer, pool, segment, h); a segment is a day
    # type, or a day type within a contract period on an offer whose committed GPUs change
    hourly_gpus: dict[str, dict[str, list[int]]] = {}
    workload_gh: dict[str, float] = {}
    config_gh: dict[tuple[str, str], float] = {}  # (workload, config) → GPU-hours of work, for split workloads
    offer_pool_demand: dict[tuple[str, str, str, int], int] = {}
    members: dict[tuple[str, str, str, int], list[tuple[str, float]]] = {}
    # split workloads: the same GPUs by (workload, config), so each config is charged what it used
    by_config: dict[tuple[str, str, str, int], list[tuple[tuple[str, str], float]]] = {}
    shared_exact: dict[tuple[str, str, str, int], float] = {}  # a group sharing GPUs: its GPUs (its members' parts)
    for w in plan.workloads:
        per: dict[str, list[int]] = {d: [0] * 24 for d in days}
        gh = 0.0
        for c in _serving(solved, w.name, chosen[w.name]):  # a split workload's every config that serves
            one: dict[str, list[int]] = {d: [0] * 24 for d in days}
            for s, d in sol.segments.of_offer(c.offer):
                row = one[d]
                for h in range(24):
                    exact = _gpus(sol.gpus_at(c.key, (s, h))) if c.kind != "api" else 0.0
                    g = math.ceil(exact - 1e-9)  # a batch job's 20.3 replica-hours keep 21 GPUs busy that hour
                    row[h] = max(row[h], g)
                    gh += seg_days[s] * exact  # …and use 20.3 GPU-hours: the rest of the 21st is idle
                    if sol.split.get(w.name):
                        config_gh[(w.name, c.key)] = config_gh.get((w.name, c.key), 0.0) + seg_days[s] * exact
                    if c.share and exact and c.offer:  # a group's GPUs are whole together, not member by member
                        k = (c.offer, c.pool, s, h)
                        shared_exact[k] = shared_exact.get(k, 0.0) + exact
                        members.setdefault(k, []).append((w.name, exact))
                    elif g and c.offer:
                        k = (c.offer, c.pool, s, h)
                        offer_pool_demand[k] = offer_pool_demand.get(k, 0) + g
                        members.setdefault(k, []).append((w.name, exact))
                        if sol.split.get(w.name):
                            by_config.setdefault(k, []).append(((w.name, c.key), exact))
            for d in days:  # a moving workload's configs serve in turn: its busiest period's GPUs
                per[d] = [max(a, b) if w.name in sol.moves else a + b for a, b in zip(per[d], one[d])]
        hourly_gpus[w.name] = per
        workload_gh[w.name] = gh
    for k, g in shared_exact.items():
        offer_pool_demand[k] = offer_pool_demand.get(k, 0) + math.ceil(g - 1e-6)

    # Purchases and their costs
    purchases: list[Purchase] = []
    offer_cost: dict[str, float] = {}
    cost_by_tier = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "api": 0.0}
    own_terms = ownership.terms(plan, catalog_offers)
    if own_terms:
        cost_by_tier = {"buy": 0.0, "facility": 0.0, **cost_by_tier}
    own_fixed: dict[str, float] = {}  # offer → idle energy, space (and owned servers' support) for the horizon
    reserved_gpus: dict[tuple[str, str | None], int] = {}  # held from the horizon's first day
    later_gpus: dict[tuple[str, str | None], list[tuple[int, int]]] = {}  # → (start day, GPUs) of later starts
    stage2: dict[str, float] = {}  # segment → hourly capacity, serving energy and API: what each scenario adds
    held = [((o, p, k, 0), v) for (o, p, k), v in sol.reserved_nodes.items()] + list(sol.reserved_later.items())
    for (o, p, k, t), v in sorted(held, key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2], kv[0][3])):
        nodes = _int(v)
        if nodes <= 0:
            continue
        offer = solved.offers[o]
        gpus = nodes * offer.gpus_per_node
        if t:
            later_gpus.setdefault((o, p), []).append((t, gpus))
        else:
            reserved_gpus[(o, p)] = reserved_gpus.get((o, p), 0) + gpus
        if k == "buy":
            t, n = own_terms[o], costs.service_days(sol.segments, o)
            cost = nodes * costs.bought_per_node(t, n)
            own_fixed[o] = own_fixed.get(o, 0.0) + nodes * costs.bought_running_per_node(t, n)
            cost_by_tier["buy"] += cost
            offer_cost[o] = offer_cost.get(o, 0.0) + cost
            _add_purchase(purchases, offer, k, gpus, prices.gpu_hours_held(gpus, n),
                          cost / prices.gpu_hours_held(gpus, n) if n else 0.0, cost)
            continue
        price = prices.gpu_hour(offer, k)
        cost = nodes * costs.reserved_per_node(offer, k, H, t)
        cost_by_tier["reserved"] += cost
        offer_cost[o] = offer_cost.get(o, 0.0) + cost
        start = (plan.start_date + datetime.timedelta(days=t)).isoformat() if t and plan.start_date else None
        _add_purchase(purchases, offer, k, gpus, prices.gpu_hours_held(gpus, H - t), price, cost, start)
    for tier, table in (("on-demand", sol.on_demand_nodes), ("spot", sol.spot_nodes)):
        per_offer: dict[str, dict[tuple[str, int], int]] = {}
        for (o, _p, d, h), v in table.items():
            g = _int(v) * solved.offers[o].gpus_per_node
            if g:
                per_offer.setdefault(o, {})
                per_offer[o][(d, h)] = per_offer[o].get((d, h), 0) + g
        for o in sorted(per_offer):
            offer = solved.offers[o]
            price = offer.price(tier) or 0.0
            gpu_hours = sum(seg_days[d] * g for (d, _h), g in per_offer[o].items())
            cost = 0.0
            for (d, _h), g in per_offer[o].items():
                paid = g // offer.gpus_per_node * costs.hourly_per_node(plan, sol.segments, offer, tier, d)
                cost += paid
                stage2[d] = stage2.get(d, 0.0) + paid
            cost_by_tier[TIER_GROUP[tier]] += cost
            offer_cost[o] = offer_cost.get(o, 0.0) + cost
            _add_purchase(purchases, offer, tier, max(per_offer[o].values()), gpu_hours, price, cost)
    spent = spend_result(plan, sol, solved.offers)  # spend commitments: their tier, signed ones sunk
    if spent.present:  # the on-demand nodes a commitment covers cost their share of it, not list
        for i, pu in enumerate(purchases):
            credit = spent.offer_credit.get(pu.offer, 0.0) if pu.tier == "on-demand" else 0.0
            if credit:
                purchases[i] = replace(pu, cost=pu.cost - credit)
                cost_by_tier["on_demand"] -= credit
                offer_cost[pu.offer] = offer_cost.get(pu.offer, 0.0) - credit
        cost_by_tier[SPEND_TIER] = spent.tier_cost
        for cell, credit in spent.credit_by_cell.items():
            stage2[cell] = stage2.get(cell, 0.0) - credit
    purchases.sort(key=lambda p: (p.offer, vocab.tier_rank(p.tier), p.start or ""))

    def reserved_at(o: str, p: str | None, seg: str) -> int:
        """Reserved GPUs (o, p) holds during a segment: those from the first day and those started by then."""
        day = sol.segments.first_day(seg)
        return reserved_gpus.get((o, p), 0) + sum(g for t, g in later_gpus.get((o, p), ()) if t <= day)

    # Hourly supply by tier per (offer, pool); contracts signed before the plan are used first
    cal = sol.segments.calendar
    periods = cm.period_rows(cal) if cal is not None else []
    hourly: list[HourlySupply] = []
    alloc: dict[str, dict[tuple[str, str], float]] = {}
    by_day: dict[str, dict[tuple[str, str, str], float]] = {}  # workload → (offer, tier, day type) → GPU-hours
    alloc_config: dict = {}  # (workload, config) → as alloc, for split workloads
    by_day_config: dict = {}
    keys = sorted(set(offer_pool_demand) | set(sol.on_demand_nodes) | set(sol.spot_nodes))
    committed_used: dict[tuple[str, int | None], float] = {}
    serving = {o: 0.0 for o in own_terms}  # offer → serving energy over the horizon
    row_days: dict[str, float] = {}  # "day type|period" of an hourly row → the days it stands for
    served = {o: [0.0] * 24 for o in own_terms}  # offer → GPU-hours its own GPUs serve at each hour of day
    shared = _shared_use(solved, sol, keys, offer_pool_demand, reserved_at, frozenset(own_terms))
    for o, p, d, h in keys:
        m = solved.offers[o].gpus_per_node
        od = _int(sol.on_demand_nodes.get((o, p, d, h), 0)) * m
        sp = _int(sol.spot_nodes.get((o, p, d, h), 0)) * m
        dem = offer_pool_demand.get((o, p, d, h), 0)
        k = sol.segments.committed_at(o, d)
        if (o, p, d, h) in shared:
            com, res = shared[(o, p, d, h)]
            if o in own_terms:
                energy = (com + res) * costs.serving_energy(own_terms[o], sol.segments, d, h)
                serving[o] += energy
                stage2[d] = stage2.get(d, 0.0) + energy
                served[o][h] += (com + res) * seg_days[d]
        elif not sol.segments.delivered(o, d):
            res = com = 0
        else:
            res = reserved_at(o, None, d) + reserved_at(o, p, d)
            com = 0
            if k:
                v = sol.committed_split.get((o, p, sol.segments.period_of(d)))
                com = min(dem, _int(v) if v is not None else k)
        if dem == 0 and od == 0 and sp == 0 and res == 0 and com == 0:
            continue
        dtype, _n, pi = sol.segments.segments.get(d, (d, 0, None))
        if com:  # the GPU-hours of work the signed GPUs carried (_allocate's), as the idle committed line counts
            work = sum(g for _name, g in members.get((o, p, d, h), []))
            committed_used[(o, pi)] = committed_used.get((o, pi), 0.0) + min(work, com) * seg_days[d]
        label = periods[pi].label if pi is not None and periods else ""
        hourly.append(HourlySupply(o, p, dtype, h, dem, res, od, sp, com, label))
        row_days[f"{dtype}|{label}"] = seg_days[d]
        _allocate(alloc, members.get((o, p, d, h), []), dem, com, res, od, sp,
                  solved.offers[o].spot_interruption, seg_days[d], o,
                  own_terms[o].serving_energy(h) if o in own_terms else 0.0, by_day, dtype)
        if (o, p, d, h) in by_config:
            _allocate(alloc_config, by_config[(o, p, d, h)], dem, com, res, od, sp,
                      solved.offers[o].spot_interruption, seg_days[d], o,
                      own_terms[o].serving_energy(h) if o in own_terms else 0.0, by_day_config, dtype)

    for o, t in own_terms.items():
        if t.kind == "owned":  # idle energy, space and support of the servers owned, for the days they serve
            own_fixed[o] = costs.owned_running(t, costs.owned_days(plan, sol.segments, t))
    if own_terms:
        cost_by_tier["facility"] = sum(own_fixed.values()) + sum(serving.values())
    rates = _rates(solved, purchases)
    rates.update(own.rates(plan, sol.segments, own_terms, purchases, own_fixed))
    results: list[WorkloadResult] = []
    by_name = {w.name: w for w in plan.workloads}
    allocated = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0}
    if own_terms:
        allocated = {"buy": 0.0, "facility": 0.0, **allocated}
    for w in plan.workloads:
        c = chosen[w.name]
        api_cost, api_share, api_rates = _api(solved, w, c, days) if w.name not in sol.moves \
            else _api_moving(solved, w, days)
        cost_by_tier["api"] += api_cost
        tiers, gh_tiers, gh_days = _charged(alloc.get(w.name, {}), by_day.get(w.name, {}), rates, own_terms)
        for t, v in tiers.items():
            allocated[t] = allocated.get(t, 0.0) + v
        cost = sum(tiers.values()) + api_cost
        results.append(replace(
            _workload_result(solved, by_name[w.name], c, hourly_gpus[w.name], workload_gh[w.name], cost, api_cost,
                             api_share, api_rates),
            cost_by_tier={**tiers, "api": api_cost}, gpu_hours_by_tier=gh_tiers, gpu_hours_by_day_type=gh_days,
            team=w.team,
            cost_center=w.cost_center, peak_derivation=peak_derivation(plan, w),
            tenants=_shares(w.tenants)))
        if w.name in sol.moves:
            results[-1] = replace(results[-1], configs_by_period=_configs_by_period(solved, w.name))
        if sol.split.get(w.name):
            results[-1] = _with_split_configs(solved, w, c, results[-1], alloc_config, by_day_config, rates,
                                              own_terms, config_gh)
    idle_by_tier = {t: max(0.0, cost_by_tier[t] - allocated[t]) for t in allocated}

    total = sum(cost_by_tier.values())
    sd = scenario_days(plan)
    scenario_rows, risk = [], None
    if sd is not None:
        for w in plan.workloads:
            _api_by_segment(solved, w, chosen[w.name], stage2)
        first = cost_by_tier["reserved"] + cost_by_tier.get("buy", 0.0) + sum(own_fixed.values()) + spent.paid_new
        seg_type = {seg: dtype for seg, (dtype, _n, _p) in sol.segments.segments.items()}
        scenario_rows, risk = scn.rows(plan, sd, first, stage2, hourly, row_days, seg_type)
        total = risk.value
    cands_rows = _candidate_rows(solved, chosen)
    binding = _binding(solved, results, purchases, hourly, offer_pool_demand)
    offers_used = {o: {"provider": off.provider, "region": off.region, "accelerator": off.accelerator,
                       "gpus_per_node": off.gpus_per_node,
                       "prices": {t: off.price(t) for t in off.price_per_gpu_hour},
                       "estimated": {t: off.estimated(t) for t in off.price_per_gpu_hour},
                       "available_gpus": dict(off.available_gpus), "spot_interruption": off.spot_interruption,
                       "source": off.source, "as_of": off.as_of}
                   for o, off in sorted(solved.offers.items())
                   if any(p.offer == o for p in purchases) or any(r.offer == o for r in results)}
    apis = {w.name: {"usd_per_m_input": w.api.usd_per_m_input, "usd_per_m_output": w.api.usd_per_m_output,
                     "max_share": w.api.max_share,
                     # mean tokens per request: the API bills the input tokens of the requests it takes
                     "input_tokens_per_request": w.tokens.input if w.tokens else 0.0,
                     "output_tokens_per_request": w.tokens.output if w.tokens else 0.0}
            for w in plan.workloads if w.api is not None}
    notes = [info.fallback_note] if info.fallback_note else []
    notes += lint(plan)
    notes += stale_prices(plan, solved.offers.values())  # the offers its configs run on, and its own
    estimate_note = program_input(plan).estimate_note
    if estimate_note:
        notes.append(estimate_note)
    notes += [n for n in cands.notes if n not in notes]  # measured points the memory model contradicts
    contracts, new, exp = [], [], []
    if cal is not None:
        notes += cal.notes
        contracts = cm.contract_rows(plan, catalog_offers, committed_used, cal)
        idle = sorted({c.offer for _i, c in cal.active} - {o for o, _s in sol.segments.committed})
        if idle:
            notes.append(f"committed GPUs at {', '.join(idle)} serve no workload: no candidate config runs there")
    if plan.policy.unvalidated == "warn":
        notes += evidence.unvalidated_notes(results, {w: c.label for w, c in chosen.items()})
    used_at: dict[str, dict[str, float]] = {}  # offer → GPU-hours the workloads used there, by tier group
    for by_offer in alloc.values():
        for (o, t), gh in by_offer.items():
            if o not in own_terms:
                used_at.setdefault(o, {})[t] = used_at.get(o, {}).get(t, 0.0) + gh
    new = cm.priced_like_recommendation(plan, cm.new_reservations(plan, purchases), solved.offers, used_at)
    exp = cm.expiry(plan, contracts, new)
    committed_rate = _committed_rates(contracts)
    results = [replace(r, committed_cost=sum(gh * committed_rate.get(o, 0.0) for (o, t), gh
                                              in alloc.get(r.name, {}).items() if t == "committed" and o not in own_terms))
               for r in results]
    cost_committed = sum(c.spend_in_horizon for c in contracts) + spent.committed
    flow = cf.cash_flow(plan, cal, hourly, purchases, contracts, results, solved.offers,
                        own.spread(own_terms, purchases, own_fixed, serving, sol.segments) if own_terms else [])
    if spent.cash:
        flow = sorted(flow + spent.cash, key=lambda r: r.month)
    own_result = own.report(plan, catalog_offers, own_terms, sol.segments, purchases, own_fixed, serving, alloc,
                            cost_by_tier, served) if own_terms else None
    result = PlanResult(
        plan=plan.plan, file=file, status=info.status, currency=plan.currency, horizon_days=H,
        day_types=dict(days), policy=pol.model_dump(mode="json"), cost_total=total,
        cost_by_tier=cost_by_tier, workloads=results, purchases=purchases, hourly=hourly,
        candidates=cands_rows, dropped=[d for d in solved.cands.dropped if d.family != "dominated"], binding=binding, solver=info,
        offers=offers_used, apis=apis, pruned=solved.cands.pruned, notes=notes,
        alternatives=_alternatives(solved, chosen),
        start_date=plan.start_date.isoformat() if plan.start_date else None,
        cost_committed=cost_committed, commitments=contracts, new_commitments=new,
        expiry=exp, periods=periods, cost_idle=sum(cost_by_tier.values()) - sum(r.cost for r in results), cost_idle_by_tier=idle_by_tier,
        cost_idle_committed=cost_committed - sum(r.committed_cost for r in results), cash_flow=flow,
        commitment_schedule=_with_spend(cf.schedule(plan, contracts, new), spend_schedule(
            plan, spent.new, spent.signed, cf.SCHEDULE_MONTHS)), own=own_result, scenarios=scenario_rows,
        risk=risk, shared_gpus=_shared_groups(solved, chosen, workload_gh),
        new_spend_commitments=spent.new, spend_commitments=spent.signed)
    result = replace(result, moves=_moves(solved, result))
    showback = sb.rows(result, plan.policy.idle, book=plan.policy.showback == "book")
    return decision.marked(replace(result, showback=showback))


def _with_spend(rows: list, spend_rows: list) -> list:
    """The commitment schedule with the spend commitments' months among the reservations', month by month."""
    if not spend_rows:
        return rows
    return sorted(rows + spend_rows, key=lambda s: s.month)


def _api_by_segment(solved: Solved, w, c: Candidate, stage2: dict[str, float]) -> None:
    """A workload's API cost added to each segment (day type) it falls in: interactive overflow by the
    tokens sent at each hour, batch by the day's volume sent."""
    if w.api is None:
        return
    price = costs.api_per_token(w)
    if c.api_output_tokens_per_day:
        for d, tokens in c.api_output_tokens_per_day.items():
            stage2[d] = stage2.get(d, 0.0) + solved.plan.day_type_days()[d] * tokens * price
        return
    days = solved.sol.segments.days()
    for (wn, s), y in solved.sol.api_volume.items():
        if wn == w.name and y:
            stage2[s] = stage2.get(s, 0.0) + days[s] * y * price


def _shared_use(solved: Solved, sol: Solution, keys: list, demand: dict[tuple[str, str, str, int], int],
                reserved_at: Callable[[str, str | None, str], int], own_offers: frozenset[str] = frozenset()
                ) -> dict[tuple[str, str, str, int], tuple[int, int]]:
    """When pools share reserved (and signed) GPUs: (committed, reserved) GPUs each pool uses at an hour.

    The solver's split of the shared GPUs among pools is one of many of equal cost (signed GPUs cost
    nothing more wherever they go), so it is read canonically: each pool first gets the shared GPUs its
    own spot and on-demand nodes cannot cover; what the shared capacity has left then serves the pools'
    remaining demand in pool order (capacity already paid for is used before what is paid by the hour);
    of each pool's shared GPUs, signed ones come first, pool by pool, and the rest are reserved — never
    more than the reserved GPUs bought. At servers of your own (`own_offers`) a GPU serving costs its
    serving energy while a rented node is paid whole, so they serve only what the pool's rented nodes
    cannot (the program's choice: L at its least), and what they have left stays idle.
    """
    groups: dict[tuple[str, str, int], list[str]] = {}
    for o, p, d, h in keys:
        if (o, p, d, h) in sol.lent:
            groups.setdefault((o, d, h), []).append(p)
    out: dict[tuple[str, str, str, int], tuple[int, int]] = {}
    for (o, d, h), pools in groups.items():
        m = solved.offers[o].gpus_per_node
        k = sol.segments.committed_at(o, d)
        capacity = k + (reserved_at(o, None, d) if sol.segments.delivered(o, d) else 0)
        use: dict[str, int] = {}
        for p in pools:
            dem = demand.get((o, p, d, h), 0)
            # spot GPUs in whole: the program counts a spot GPU as (1 − interruption) of one, so its shared GPUs
            # may be a fraction (19.64 beside 8 spot for 27); rounded up they were more than there are (q4: 33 of 32)
            own = (_int(sol.on_demand_nodes.get((o, p, d, h), 0)) + _int(sol.spot_nodes.get((o, p, d, h), 0))) * m
            use[p] = min(dem, max(0, math.ceil(dem - own - 1e-9)))
        left = max(0, capacity - sum(use.values())) if o not in own_offers else 0
        for p in pools:
            more = min(left, demand.get((o, p, d, h), 0) - use[p])
            use[p] += more
            left -= more
        signed = k
        for p in pools:
            com = min(use[p], signed)
            signed -= com
            out[(o, p, d, h)] = (com, use[p] - com)
    return out


def _shares(tenants: dict[str, float] | None) -> dict[str, float]:
    """Tenant shares scaled to add up to exactly 1 (the plan allows ±1%)."""
    total = sum((tenants or {}).values())
    return {t: v / total for t, v in sorted((tenants or {}).items())} if total > 0 else {}


def _gpus(v: float) -> float:
    """GPUs in use from the solver: whole where they are whole within its tolerance (interactive replicas),
    else the fraction (a batch job's replica-hours in an hour)."""
    r = round(v)
    return float(r) if abs(v - r) < 1e-6 else v


def _gh_tier(offer: str, tier: str, own: Collection[str]) -> str | None:
    """The tier a workload's GPU-hours count under (gpu_hours_by_tier): at servers of your own, reserved GPUs
    are bought ones (buy) and committed ones owned (owned); serving energy is money, not GPU-hours (None)."""
    if tier == "energy":
        return None
    if offer not in own or tier in HOURLY:
        return tier
    return {"reserved": "buy", "committed": "owned"}.get(tier)


def _allocate(alloc: dict[str, dict[tuple[str, str], float]], members: list[tuple[str, float]], demand: int,
              committed: int, reserved: int, on_demand: int, spot: int, interruption: float, days: float,
              offer: str, serving_energy: float = 0.0,
              by_day: dict[str, dict[tuple[str, str, str], float]] | None = None, day_type: str = "") -> None:
    """Charge one (offer, pool, segment, hour)'s GPUs to the workloads that used them.

    The pool's demand is served by the GPUs already signed for first, then reserved, then spot (at
    1 − interruption: a spot GPU carries that share of a GPU's work), then on-demand; each workload
    takes each tier in proportion to its GPUs at that hour. GPU-hours bought and not used go to
    nobody (the plan's idle line) — a batch job's fraction of a GPU-hour included: `demand` counts
    whole GPUs busy, the members their exact use. At servers of your own (committed: owned, reserved: bought), the
    serving energy of the GPUs a workload runs is its own (`energy`, in USD, not GPU-hours). `by_day` gets the
    same GPU-hours by (offer, tier, day type).
    """
    if demand <= 0 or not members:
        return
    used = sum(g for _name, g in members)  # the GPU-hours the workloads use: a batch hour's may be fractional
    left = used
    served: dict[str, float] = {}
    com = min(left, committed)
    left -= com
    res = min(left, reserved)
    left -= res
    keep = 1.0 - interruption
    spot_work = min(left, spot * keep)
    left -= spot_work
    od = min(left, on_demand)
    served = {"committed": com, "reserved": res, "spot": spot_work / keep if keep > 0 else 0.0, "on_demand": od}
    if serving_energy:
        served["energy"] = (com + res) * serving_energy
    for name, g in members:
        share = g / used
        mine = alloc.setdefault(name, {})
        for tier, v in served.items():
            if v:
                mine[(offer, tier)] = mine.get((offer, tier), 0.0) + share * v * days
                if by_day is not None and tier != "energy":
                    key = (offer, tier, day_type)
                    day = by_day.setdefault(name, {})
                    day[key] = day.get(key, 0.0) + share * v * days


def _rates(solved: Solved, purchases: list[Purchase]) -> dict[tuple[str, str], float]:
    """Price per GPU-hour by (offer, tier group): reserved at its effective rate (what the offer's
    reservations cost over the GPU-hours they hold in the horizon), on-demand and spot at their prices."""
    out: dict[tuple[str, str], float] = {}
    for o, offer in solved.offers.items():
        held = sum(p.gpu_hours for p in purchases if p.offer == o and p.tier in vocab.RESERVED_TIERS)
        cost = sum(p.cost for p in purchases if p.offer == o and p.tier in vocab.RESERVED_TIERS)
        if held:
            out[(o, "reserved")] = cost / held
        for tier, key in (("on-demand", "on_demand"), ("spot", "spot")):
            # what was paid per GPU-hour: the price, or its blend over scenarios that move it
            p = next((p for p in purchases if p.offer == o and p.tier == tier), None)
            out[(o, key)] = p.cost / p.gpu_hours if p is not None and p.gpu_hours else (offer.price(tier) or 0.0)
    return out


def _committed_rates(contracts: list) -> dict[str, float]:
    """Committed spend per committed GPU-hour in the horizon, by offer (blended over its contracts)."""
    spend: dict[str, float] = {}
    hours: dict[str, float] = {}
    for c in contracts:
        spend[c.offer] = spend.get(c.offer, 0.0) + c.spend_in_horizon
        if c.price_per_gpu_hour:
            hours[c.offer] = hours.get(c.offer, 0.0) + c.spend_in_horizon / c.price_per_gpu_hour
    return {o: spend[o] / hours[o] for o in spend if hours.get(o)}


def _add_purchase(purchases: list[Purchase], offer: Offer, tier: str, gpus: int, gpu_hours: float, price: float,
                  cost: float, start: str | None = None) -> None:
    """One row per (offer, tier, start day): reservations held per pool (not shared) add up."""
    for i, p in enumerate(purchases):
        if p.offer == offer.id and p.tier == tier and p.start == start:
            purchases[i] = replace(p, gpus=p.gpus + gpus, gpu_hours=p.gpu_hours + gpu_hours, cost=p.cost + cost)
            return
    purchases.append(Purchase(offer.id, offer.accelerator, offer.provider, offer.region, tier, gpus, gpu_hours,
                              price, offer.estimated(tier), cost, offer.gpus_per_node, start,
                              offer.payment(tier) if tier in RESERVED_TIERS else None))


def _api(solved: Solved, w, c: Candidate, days: dict[str, int]) -> tuple[float, float, dict[str, list[float]]]:
    """API cost, share of tokens, and API output tokens/s per hour for one workload."""
    if w.api is None:
        return 0.0, 0.0, {}
    price = costs.api_per_token(w)
    rates: dict[str, list[float]] = {}
    sent = total = 0.0
    if w.kind == "interactive":
        dem = solved.cands.demand[w.name]
        for d, n in days.items():
            row = []
            # a split workload sends the same share of every hour's tokens (model._split_api)
            day_tokens = SECONDS_PER_HOUR * sum(dem[(d, h)] for h in range(24))
            split_share = (solved.sol.api_volume.get((w.name, d), 0.0) / day_tokens
                           if (w.name, d) in solved.sol.api_volume and day_tokens > 0 else None)
            for h in range(24):
                if split_share is not None:
                    y = dem[(d, h)] * split_share
                elif c.kind == "api":
                    y = dem[(d, h)]
                elif c.ceiling_replicas is not None:
                    y = max(0.0, dem[(d, h)] - c.ceiling_replicas * ceiling_rate(solved.plan, c, d))
                else:
                    y = 0.0
                row.append(y)
                sent += n * SECONDS_PER_HOUR * y
                total += n * SECONDS_PER_HOUR * dem[(d, h)]
            rates[d] = row
    elif w.kind == "batch":
        assert w.batch is not None
        if c.offer in solved.sol.segments.offer_segments:
            for s, _d in solved.sol.segments.of_offer(c.offer):
                sent += solved.sol.segments.segments[s][1] * solved.sol.api_volume.get((w.name, s), 0.0)
            total = sum(n * w.batch.output_tokens_per_day for n in days.values())
        else:
            for d, n in days.items():
                y = w.batch.output_tokens_per_day if c.kind == "api" else solved.sol.api_volume.get((w.name, d), 0.0)
                sent += n * y
                total += n * w.batch.output_tokens_per_day
    share = sent / total if total > 0 else 0.0
    return sent * price, share, rates


def _workload_result(solved: Solved, w, c: Candidate, gpus_by_day: dict[str, list[int]], gpu_hours: float,
                     cost: float, api_cost: float, api_share: float, api_rates: dict[str, list[float]]) -> WorkloadResult:
    days = solved.plan.day_type_days()
    demand = solved.cands.demand.get(w.name, {})
    reps_by_day: dict[str, list[int]] = {}
    for d in days:
        row = []
        for h in range(24):
            row.append(_replicas_at(solved, w, c, d, h).total)
        reps_by_day[d] = row
    if demand:
        peak_d, peak_h = max(demand, key=lambda dh: (demand[dh], -list(days).index(dh[0]), -dh[1]))
    else:
        peak_d, peak_h = max(((d, h) for d in days for h in range(24)),
                             key=lambda dh: (gpus_by_day[dh[0]][dh[1]], -list(days).index(dh[0]), -dh[1]))
    r = _replicas_at(solved, w, c, peak_d, peak_h)
    return WorkloadResult(
        name=w.name, pool=w.pool, kind=w.kind, model=w.model, offer=c.offer, accelerator=c.accelerator,
        provider=solved.offers[c.offer].provider if c.offer else None, precision=c.precision, tp=c.tp, mig=c.mig,
        gpus_per_replica=c.gpu_fraction, goodput_output_tokens_per_s=c.goodput, goodput_source=c.goodput_source,
        bound=c.bound, weights_gb=c.weights_gb, kv_gb_per_seq=c.kv_gb_per_seq, kv_concurrency=c.kv_concurrency,
        needed_concurrency=c.needed_concurrency, total_gb=c.total_gb, reserve_gb=c.reserve_gb, free_gb=c.free_gb,
        peak_day_type=peak_d, peak_hour=peak_h, peak_output_tokens_per_s=demand.get((peak_d, peak_h), 0.0),
        replicas=ReplicaCount(r.base, r.spares, r.rollout, r.total),
        gpus_at_peak=gpus_by_day[peak_d][peak_h], cost=cost, api_share=api_share, api_cost=api_cost,
        gpu_hours=gpu_hours, candidates=len(solved.cands.by_workload[w.name]), hourly_gpus=gpus_by_day,
        hourly_replicas=reps_by_day,
        hourly_demand={d: [demand.get((d, h), 0.0) for h in range(24)] for d in days} if demand else {},
        hourly_api_tokens_per_s=api_rates, key=c.key, family=c.family, layout=c.layout, pp=c.pp, ep=c.ep,
        kv_copies=c.kv_copies, validation=c.validation, ttft_at_load_ms=c.ttft_at_load_ms, engine=c.engine,
        shared=c.share, **_split_fields(solved, w, c, (peak_d, peak_h)))


def _shared_groups(solved: Solved, chosen: dict[str, Candidate], gpu_hours: dict[str, float]) -> list[SharedGroup]:
    """The groups of workloads sharing GPUs (Solution.shared): members, their memory and time shares at the group's
    busiest hour, and the group's GPUs hour by hour."""
    sol, plan = solved.sol, solved.plan
    by_group: dict[tuple[str, str], list[Candidate]] = {}
    for w in plan.workloads:
        c = chosen[w.name]
        if c.share and c.offer:
            by_group.setdefault((c.offer, c.pool), []).append(c)
    out = []
    order = list(plan.day_type_days())
    for (o, p), cs in sorted(by_group.items()):
        hourly = {d: [0] * 24 for d in order}
        for (oo, pp, s, h), g in sol.shared.items():
            if (oo, pp) == (o, p):
                d = dict(sol.segments.of_offer(o))[s]
                hourly[d][h] = max(hourly[d][h], sum(g))
        peak_d, peak_h = max(((d, h) for d in order for h in range(24)),
                             key=lambda dh: (hourly[dh[0]][dh[1]], sum(c.share_time.get(dh, 0.0) for c in cs),
                                             -order.index(dh[0]), -dh[1]))
        base = max((sol.shared.get((o, p, s, peak_h), (0, 0, 0))[0] for s, d in sol.segments.of_offer(o)
                    if d == peak_d), default=0)

        def share(c: Candidate) -> float:
            return c.share_time.get((peak_d, peak_h), 0.0) / base if base else 0.0

        members = [SharedMember(c.workload, c.share_memory, share(c), c.goodput, gpu_hours.get(c.workload, 0.0))
                   for c in cs]
        out.append(SharedGroup(o, p, cs[0].share or "", cs[0].share_slowdown, hourly[peak_d][peak_h], peak_d, peak_h,
                               sum(c.share_memory for c in cs), sum(m.time_share for m in members), members, hourly))
    return out


def _charged(used: dict[tuple[str, str], float], days: dict[tuple[str, str, str], float],
             rates: dict[tuple[str, str], float], own_terms: dict) -> tuple[dict, dict, dict]:
    """What a workload (or one config of a split one) is charged: cost by tier, GPU-hours by tier, and the same
    GPU-hours by the day type they were used on, from the GPU-hours _allocate gave it on each (offer, tier)."""
    tiers = {t: sum(gh * rates.get((o, t), 0.0) for (o, tt), gh in used.items() if tt == t and o not in own_terms)
             for t in ("reserved", "on_demand", "spot")}
    gh_tiers = dict.fromkeys(("reserved", "on_demand", "spot", "committed")
                             + (("buy", "owned") if own_terms else ()), 0.0)
    for (o, tt), gh in used.items():
        t = _gh_tier(o, tt, own_terms)
        if t is not None:
            gh_tiers[t] += gh
    gh_days: dict[str, dict[str, float]] = {}  # the same GPU-hours by the day type they were used on
    for (o, tt, dt), gh in sorted(days.items()):
        t = _gh_tier(o, tt, own_terms)
        if t is not None and gh:
            gh_days.setdefault(t, {})[dt] = gh_days.get(t, {}).get(dt, 0.0) + gh
    for t in ("on_demand", "spot"):
        tiers[t] += sum(gh * rates.get((o, t), 0.0) for (o, tt), gh in used.items() if tt == t and o in own_terms)
    if own_terms:
        tiers.update(own.workload_costs(used, rates, own_terms))
    return tiers, gh_tiers, gh_days


def _with_split_configs(solved: Solved, w, c: Candidate, row: WorkloadResult, alloc: dict, by_day: dict,
                        rates: dict[tuple[str, str], float], own_terms: dict,
                        config_gh: dict[tuple[str, str], float]) -> WorkloadResult:
    """A split workload's row with its request-size classes and, for each config that serves, where it runs,
    its replicas at the workload's peak, and the GPU-hours and cost charged to it."""
    configs: dict[str, SplitConfig] = {}
    for x in _serving(solved, w.name, c):
        tiers, gh_tiers, gh_days = _charged(alloc.get((w.name, x.key), {}), by_day.get((w.name, x.key), {}),
                                            rates, own_terms)
        reps = _config_replicas(solved, x, row.peak_day_type, row.peak_hour)
        configs[x.label] = SplitConfig(
            key=x.key, offer=x.offer, accelerator=x.accelerator, precision=x.precision, tp=x.tp,
            gpus_per_replica=x.gpu_fraction, replicas=ReplicaCount(*reps, sum(reps)),
            gpu_hours=config_gh.get((w.name, x.key), 0.0), cost=sum(tiers.values()), cost_by_tier=tiers,
            gpu_hours_by_tier=gh_tiers, gpu_hours_by_day_type=gh_days)
    classes = [SizeClassRow(k.share, k.input, k.output) for k in w.tokens.classes()] if w.tokens else []
    if classes and _by_whole(solved, w):  # split: any — one class, the whole demand at the mix's means
        classes = [SizeClassRow(1.0, sum(k.share * k.input for k in classes), sum(k.share * k.output for k in classes))]
    return replace(row, split_configs=configs, size_classes=classes)


def _by_whole(solved: Solved, w) -> bool:
    """split: any — the workload's traffic is divided as a whole (one share per config), not by size class."""
    return w.split_mode(solved.plan.policy) == "any"


def _config_replicas(solved: Solved, x: Candidate, d: str, h: int) -> tuple[int, int, int]:
    """One config's (base, spares, rollout) replicas at a day type's hour (its busiest segment of that day type)."""
    p = solved.sol.split_replicas.get(x.key, {})
    return max((p[(s, h)] for s, dd in solved.sol.segments.of_offer(x.offer) if dd == d and (s, h) in p),
               key=sum, default=(0, 0, 0))


def _serving(solved: Solved, workload: str, c: Candidate) -> list[Candidate]:
    """The configs that serve a workload: its chosen one, and with split: by_size every other one that serves;
    a moving workload's config of each contract period."""
    moved = solved.sol.moves.get(workload)
    if moved:
        return [c] + [x for x in solved.cands.by_workload[workload] if x.key in moved and x.key != c.key]
    used = solved.sol.split.get(workload)
    if not used:
        return [c]
    return [c] + [x for x in solved.cands.by_workload[workload] if x.key in used and x.key != c.key]


def _split_fields(solved: Solved, w, c: Candidate, peak: tuple[str, int]) -> dict:
    """WorkloadResult's split, split_gpus_at_peak and split_goodput (empty unless the workload splits)."""
    used = solved.sol.split.get(w.name)
    if not used:
        return {}
    out: dict[str, dict] = {"split": {}, "split_gpus_at_peak": {}, "split_goodput": {}}
    for x in _serving(solved, w.name, c):
        out["split"][x.label] = [round(z, 9) for z in used[x.key]]
        out["split_gpus_at_peak"][x.label] = max(
            (math.ceil(_gpus(solved.sol.gpus_at(x.key, (s, peak[1]))) - 1e-9)
             for s, d in solved.sol.segments.of_offer(x.offer) if d == peak[0]), default=0)
        out["split_goodput"][x.label] = [x.goodput] if _by_whole(solved, w) else list(x.class_goodput or (x.goodput,))
    return out


def _replicas_at(solved: Solved, w, c: Candidate, d: str, h: int) -> rep.Replicas:
    parts = [solved.sol.split_replicas.get(x.key, {}) for x in _serving(solved, w.name, c)] \
        if solved.sol.split.get(w.name) else []
    if parts:  # a split workload: the replicas of every config that serves, at the day type's busiest segment
        most = [_config_replicas(solved, x, d, h) for x in _serving(solved, w.name, c)]
        base, spares, rollout = (sum(m[i] for m in most) for i in range(3))
        return rep.Replicas(base, spares, rollout, base + spares + rollout)
    if c.kind == "api":
        return rep.Replicas(0, 0, 0, 0)
    if c.share:  # one replica on every GPU of its group
        base, spares, rollout = max((solved.sol.shared.get((c.offer, c.pool, s, h), (0, 0, 0))
                                     for s, dd in solved.sol.segments.of_offer(c.offer) if dd == d),
                                    key=sum, default=(0, 0, 0))
        return rep.Replicas(base, spares, rollout, base + spares + rollout)
    if c.kind == "batch":
        n = max((_int(solved.sol.batch_replica_hours.get((c.key, s, h), 0)) for s, dd in solved.sol.segments.of_offer(c.offer)
                 if dd == d),
                default=0)
        return rep.Replicas(n, 0, 0, n)
    return c.replicas[(d, h)]


def _candidate_rows(solved: Solved, chosen: dict[str, Candidate]) -> list[CandidateRow]:
    rows = []
    for w in solved.plan.workloads:
        for c in solved.cands.by_workload[w.name]:
            peak = max(c.gpus.values()) if c.gpus else 0
            rows.append(CandidateRow(w.name, c.key, c.label, c.offer, c.accelerator, c.precision, c.tp, c.mig,
                                     c.gpu_fraction, c.goodput, c.goodput_source, c.bound, c.kv_concurrency,
                                     peak, chosen[w.name].key == c.key, c.family, c.layout, c.calibrated))
    return rows


def standalone_cost(solved: Solved, c: Candidate) -> float:
    """GPU-hours of a config over the horizon at its offer's cheapest hourly tier (a ranking key)."""
    return prune.standalone_cost(solved.plan, solved.offers, c)


def _alternatives(solved: Solved, chosen: dict[str, Candidate]) -> list[AlternativeRow]:
    """The chosen config (rank 0) and the alternatives the solve priced, in the ranking's order."""
    rows = []
    forced = solved.sol.forced
    for w in solved.plan.workloads:
        c0 = chosen[w.name]
        picks = [c for c in solved.cands.by_workload[w.name] if c.key in forced]
        if not picks:
            continue
        picks.sort(key=lambda c: (forced[c.key].difference is None, forced[c.key].difference or 0.0, c.key))
        rows.append(AlternativeRow(w.name, 0, c0.key, c0.label, c0.goodput, c0.goodput_source,
                                   max(c0.gpus.values()) if c0.gpus else 0,
                                   standalone_cost(solved, c0) if c0.kind != "api" else 0.0, 0.0, "chosen"))
        for i, c in enumerate(picks, 1):
            f = forced[c.key]
            rows.append(AlternativeRow(w.name, i, c.key, c.label, c.goodput, c.goodput_source,
                                       max(c.gpus.values()) if c.gpus else 0, standalone_cost(solved, c),
                                       f.difference, f.how))
    return rows


def _binding(solved: Solved, results: list[WorkloadResult], purchases: list[Purchase],
             hourly: list[HourlySupply], demand: dict) -> list[Binding]:
    """What limits this plan: caps reached, overflow at its share, what bounds goodput."""
    out: list[Binding] = []
    plan = solved.plan
    for o, offer in sorted(solved.offers.items()):
        for tier in ("on-demand", "spot"):
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
            if cap is None:
                continue
            use: dict[tuple[str, str, int], int] = {}
            for hs in hourly:
                if hs.offer == o:
                    at = (hs.day_type, hs.period, hs.hour)
                    use[at] = use.get(at, 0) + (hs.on_demand_gpus if tier == "on-demand" else hs.spot_gpus)
            if not use:
                continue
            (d, period, h), top = max(use.items(), key=lambda kv: (kv[1], kv[0][0], kv[0][1], -kv[0][2]))
            if cap - top < offer.gpus_per_node:
                when = f"{d}, {period}" if period else d
                out.append(Binding(f"cap_{tier.replace('-', '_')}", f"{o} {tier}",
                                   f"{top} of {cap} GPUs in use at {h:02d}:00 ({when}); no node left to add"))
        for tier in RESERVED_TIERS:
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
            held = sum(p.gpus for p in purchases if p.offer == o and p.tier == tier)
            if cap is not None and held and cap - held < offer.gpus_per_node:
                out.append(Binding("cap_reserved", f"{o} {tier}", f"{held} of {cap} GPUs reserved"))
    for r in results:
        w = next(w for w in plan.workloads if w.name == r.name)
        if w.api is not None and 0 < w.api.max_share < 1 and r.api_share >= w.api.max_share - 1e-6:
            out.append(Binding("overflow_share", r.name, f"sends its maximum {w.api.max_share:.0%} of tokens to the API"))
        if r.goodput_source == "estimated" and r.bound:
            out.append(Binding("goodput", r.name, f"goodput limited by {r.bound}"))
    return out


def _period_keys(solved: Solved, workload: str) -> list[tuple[Period, Candidate]]:
    """A moving workload's contract periods, each with its config there."""
    cal = solved.sol.segments.calendar
    assert cal is not None
    by_key = {x.key: x for x in solved.cands.by_workload[workload]}
    return [(per, by_key[k]) for per, k in zip(cal.periods, solved.sol.moves[workload])]


def _api_moving(solved: Solved, w, days: dict[str, int]) -> tuple[float, float, dict[str, list[float]]]:
    """_api for a workload that moves: each period's config on that period's days (its API rates: the first's)."""
    cost = sent = total = 0.0
    rates: dict[str, list[float]] = {}
    dem = solved.cands.demand.get(w.name, {})
    for per, c in _period_keys(solved, w.name):
        got, share, r = _api(solved, w, c, per.day_types)  # type: ignore[arg-type]
        tokens = sum(n * SECONDS_PER_HOUR * dem.get((d, h), 0.0) for d, n in per.day_types.items() for h in range(24))
        cost, sent, total = cost + got, sent + share * tokens, total + tokens
        rates = rates or r
    return cost, (sent / total if total else 0.0), rates


def _configs_by_period(solved: Solved, workload: str) -> list[PeriodConfig]:
    return [PeriodConfig(per.label, per.start.isoformat() if per.start else None, c.label, c.key, c.offer,
                         c.accelerator, c.precision, c.tp) for per, c in _period_keys(solved, workload)]


def _moves(solved: Solved, result) -> list[MoveRow]:
    """Each change of a moving workload's config between two contract periods, with its saving (MoveRow.saving)."""
    paid: dict[str, float] = {}  # offer → the cheapest price per GPU-hour the plan pays there
    for p in result.purchases:
        if p.gpu_hours > 0:
            paid[p.offer] = min(paid.get(p.offer, math.inf), p.cost / p.gpu_hours)
    out = []
    for w in solved.plan.workloads:
        if w.name not in solved.sol.moves:
            continue
        periods = _period_keys(solved, w.name)
        for i in range(1, len(periods)):
            (_prev, a), (per, b) = periods[i - 1], periods[i]
            if a.key == b.key:
                continue
            j = next((k for k in range(i + 1, len(periods)) if periods[k][1].key != b.key), len(periods))
            gpu_hours = sum(n * sum(b.gpus.get((d, h), 0) for h in range(24))
                            for q, _c in periods[i:j] for d, n in q.day_types.items())
            before = prices.gpu_hour(solved.offers[a.offer], "on-demand") if a.offer in solved.offers else 0.0
            after = paid.get(b.offer or "", 0.0)
            saving = gpu_hours * (before - after) if before else 0.0
            out.append(MoveRow(w.name, per.start.isoformat() if per.start else None, per.label, a.label, b.label,
                               a.offer, b.offer, saving))
    return out
