"""The integer program, built one constraint family at a time: define_variables, then one define_* per
family, then the objective. Each family's index sets, inequality and meaning are stated once, in
optimize.families (docs/model.md is generated from it); a define_* docstring says how it is built.

Every sizing number is a constant computed before this module runs (physics, candidates); every cost
coefficient is optimize.costs'. The valid inequalities are in optimize.cuts, the tie-break program among
plans of equal cost in optimize.tiebreak.
"""

from __future__ import annotations

import collections
import itertools
import math
import operator

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.build import allowed_tiers
from optimizer.candidates.overflow import keys_of, without_ceiling
from optimizer.inputs import prices as unit_prices
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import ScenarioDays, goodput_factor, scenario_days
from optimizer.inputs.schema.plan import Workload
from optimizer.optimize import costs, spend
from optimizer.candidates.types import Candidate, CandidateSet, DayHour
from optimizer.optimize.calendar import Segments
from optimizer.optimize.cuts import add_cuts
from optimizer.optimize.moves import (api_cost_terms, define_moves, move_terms, move_variables, movers, moved,
                                      period_keys)
from optimizer.optimize.program import (
    SERVES,
    Program,
    affine,
    api_share,
    batch_goodput,
    batch_volume,
    config_id,
    gpu_cands,
    is_split,
    reserved_by_offer,
    reserved_nodes,
    share_groups,
    split_classes,
    split_goodput,
    weighted_sum,
    workload_id,
    workloads_of,
)
from optimizer.optimize.solution import OfferPoolHour
from optimizer.processes import collection_paused
from optimizer.physics.batch import batch_replica_hours
from optimizer.units import SECONDS_PER_HOUR, ceil_tol
from optimizer.vocab import HOURLY_TIERS, RESERVED_TIERS


def build_model(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, *, elastic: bool = False,
                cuts: bool = True, baseline: dict[str, tuple[str, float]] | None = None,
                sole_tenant: dict[str, float] | None = None) -> Program:
    """min horizon cost  s.t. choice, committed split, batch volume, supply, sharing, caps [, cuts].

    `cuts` adds the valid inequalities (define_node_rounding) now; without, separate_cuts() adds
    those a solved relaxation violates and add_cuts() the rest (all of them make the relaxation much
    slower to solve). `baseline` maps a workload to its last plan's candidate key and the cost of
    moving it (define_baseline); `sole_tenant` the configs taken at a cost solved apart (define_sole_tenant).
    """
    with collection_paused():
        return _built(loaded, cands, segments, elastic=elastic, cuts=cuts, baseline=baseline, sole_tenant=sole_tenant)


def _built(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, *, elastic: bool, cuts: bool,
           baseline: dict[str, tuple[str, float]] | None, sole_tenant: dict[str, float] | None) -> Program:
    plan = loaded.plan
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    prog = Program(pulp.LpProblem("planopt", pulp.LpMinimize), plan, cands, offers, segments,
                   {w.name: i for i, w in enumerate(plan.workloads)}, elastic=elastic,
                   own=ownership.terms(plan, loaded.catalog.offers), sole_tenant=dict(sole_tenant or {}))
    define_variables(prog)
    define_choice(prog)
    define_split(prog)
    define_share(prog)
    define_committed_split(prog)
    define_batch_volume(prog)
    define_supply(prog)
    define_reserved_sharing(prog)
    define_caps(prog)
    define_commitments_at_low(prog)
    define_facility(prog)
    define_savings_plans(prog)
    define_moves(prog)
    if cuts:
        add_cuts(prog)
    define_objective(prog)
    define_baseline(prog, baseline or {})
    return prog


def _committed_supply(prog: Program, o: str, p: str, seg: str):
    """Committed GPUs pool p may use at offer o in a segment when it borrows none from other pools."""
    k = prog.segments.committed_at(o, seg)
    if not k:
        return 0
    v = prog.committed_split.get((o, p, prog.segments.period_of(seg)))
    return k if v is None else v


# ---------------------------------------------------------------------------------------------
# variables

def define_variables(prog: Program) -> None:
    """Every variable of the program (see the module docstring), with its bounds."""
    names, plan = prog.names, prog.plan
    prog.movers = movers(prog)
    # x[c]: one binary per config of a workload that has more than one
    for w in plan.workloads:
        cs = prog.cands.by_workload[w.name]
        if len(cs) == 1:
            prog.choice[cs[0].key] = 1
            continue
        for c in cs:
            prog.choice[c.key] = prog.variable(names("x", config_id(prog, c)), cat=pulp.LpBinary)

    # a[o,p,π]: committed GPUs split among pools that do not share reservations
    if plan.policy.share_reserved_across_pools is False and prog.segments.calendar is not None:
        cal = prog.segments.calendar
        committed_offers = {o for o, _s in prog.segments.committed}
        pools: dict[str, set[str]] = {}
        for c in prog.cands.all():
            if c.offer in committed_offers and c.offer not in prog.own:  # owned servers are shared (L)
                pools.setdefault(c.offer, set()).add(c.pool)  # type: ignore[arg-type]
        varying = set(prog.segments.offer_segments)
        for o, ps in sorted(pools.items()):
            if len(ps) < 2:
                continue
            levels = [(per.index, per.committed.get(o, 0)) for per in cal.periods] if o in varying \
                else [(None, cal.constant(o))]
            for pi, k in levels:
                if not k:
                    continue
                tag = "all" if pi is None else f"p{pi + 1}"
                for p in sorted(ps):
                    prog.committed_split[(o, p, pi)] = prog.prob.add_variable(
                        names("committed", o, p, tag), lowBound=0, upBound=k, cat=pulp.LpInteger)

    # GPUs each interactive config and reservation uses: constants × x[c]
    for w in plan.workloads:
        if w.kind not in ("interactive", "reserve"):
            continue
        if is_split(prog, w):
            _split_variables(prog, w)
            continue
        if w.name in prog.movers:  # x[c,π]: its config per contract period
            move_variables(prog, w)
            continue
        for c in gpu_cands(prog, w):
            x = prog.choice[c.key]
            var = x if isinstance(x, pulp.LpVariable) else None
            if c.offer in prog.segments.offer_segments:  # per contract period: the same GPUs in each
                prog.gpu_demand[c.key] = {(s, h): (c.gpus[(d, h)], var) for s, d in prog.segments.of_offer(c.offer)
                                          for h in range(24) if c.gpus[(d, h)]}
            else:  # {dh: (g, var) for dh, g in c.gpus.items() if g}, by C loops: a large plan has millions
                prog.gpu_demand[c.key] = dict(itertools.compress(
                    zip(c.gpus.keys(), zip(c.gpus.values(), itertools.repeat(var))), c.gpus.values()))

    # n[c,s,h] and y[c,s]: batch replica-hours inside the window, and tokens sent to the API
    for w in workloads_of(prog, "batch"):
        assert w.batch is not None
        vol, share, window = batch_volume(w), api_share(w), set(w.batch.hours())
        for c in gpu_cands(prog, w):
            cid = config_id(prog, c)
            # No n ≤ nmax·x row: replica-hours of a config that is not chosen count toward no volume
            # and only cost GPUs, so the program leaves them at zero anyway.
            gd = prog.gpu_demand.setdefault(c.key, {})
            for s, d in prog.segments.of_offer(c.offer):
                nmax = batch_replica_hours(vol, batch_goodput(prog, c, d))
                named = names.series("n", cid, s)
                for h in range(24):
                    if h in window:
                        n = prog.variable(named(h), lowBound=0, upBound=nmax)
                        prog.batch_replicas[(c.key, s, h)] = n
                        gd[(s, h)] = (c.gpu_fraction, n)
                if share > 0:  # as a share of the day's volume: rows of order 1, whatever the tokens
                    prog.batch_api[(c.key, s)] = prog.variable(
                        names("api_volume", cid, s), lowBound=0, upBound=share)

    prog.pool_demand = _pool_demand(prog)
    _share_variables(prog)
    prog.pool_offer_pairs = sorted({(c.offer, c.pool) for c in prog.cands.all()  # type: ignore[misc]
                                    if c.offer and c.key not in prog.sole_tenant})

    # R[o,(p),k]: reserved nodes, one level for the horizon (a cap bounds them)
    shared = plan.policy.share_reserved_across_pools
    for o, p in prog.pool_offer_pairs:
        offer = prog.offers[o]
        for k in allowed_tiers(plan, offer, p):
            key = (o, None if shared or k == "buy" else p, k)
            if k not in RESERVED_TIERS + ("buy",) or key in prog.reserved:
                continue
            if k == "buy" and not costs.service_days(prog.segments, o):
                continue  # delivered after the horizon: nothing it could serve
            cap = None if prog.elastic else offer.available_gpus.get(k)  # type: ignore[call-overload]
            prog.reserved[key] = prog.prob.add_variable(
                names("reserved", o, p if key[1] is not None else "all", k), lowBound=0,
                upBound=cap // offer.gpus_per_node if cap is not None else None, cat=pulp.LpInteger)
            if k == "buy":
                continue
            for t in prog.segments.starts(o):  # R[o,(p),k,t]: a reservation started later (a renewal)
                prog.reserved_later[(*key, t)] = prog.prob.add_variable(
                    names("reserved", o, p if key[1] is not None else "all", k, f"d{t}"), lowBound=0,
                    upBound=cap // offer.gpus_per_node if cap is not None else None, cat=pulp.LpInteger)

    # L, D, S per (offer, pool, segment, hour) with demand; bounded by the most the pool could ask
    ub = _demand_upper_bound(prog)
    _share_bound(prog, ub)
    pools_of_offer: dict[str, list[str]] = {}
    for o, p in prog.pool_offer_pairs:
        pools_of_offer.setdefault(o, []).append(p)
    for o, p, s, h in sorted(prog.pool_demand):
        offer = prog.offers[o]
        m = offer.gpus_per_node
        tiers = prog.tiers(o, p)
        bound = ub.get((o, p, s, h), 0)
        already_paid = reserved_nodes(prog, o, p, tiers) or prog.segments.committed_at(o, s)
        if already_paid and (shared and len(pools_of_offer[o]) > 1 or o in prog.own):
            prog.lent[(o, p, s, h)] = prog.variable(names("lent", o, p, s, h), lowBound=0, upBound=bound)
        if "on-demand" in tiers:
            nmax = math.ceil(bound / m)
            cap = None if prog.elastic else offer.available_gpus.get("on-demand")
            if cap is not None:
                nmax = min(nmax, cap // m)
            prog.on_demand[(o, p, s, h)] = prog.variable(
                names("od", o, p, s, h), lowBound=0, upBound=nmax, cat=pulp.LpInteger)
        if "spot" in tiers:
            keep = 1.0 - offer.spot_interruption
            nmax = ceil_tol(bound / (m * keep))
            cap = None if prog.elastic else offer.available_gpus.get("spot")
            if cap is not None:
                nmax = min(nmax, cap // m)
            prog.spot[(o, p, s, h)] = prog.variable(
                names("spot", o, p, s, h), lowBound=0, upBound=nmax, cat=pulp.LpInteger)

    # e[o,k,s,h]: diagnosis only, one per cap row
    if prog.elastic:
        for o, offer in prog.offers.items():
            for k in RESERVED_TIERS:
                if offer.available_gpus.get(k) is not None and any(  # type: ignore[call-overload]
                        oo == o and kk == k for (oo, _p, kk) in prog.reserved):
                    prog.cap_excess[(o, k, None, None)] = prog.prob.add_variable(
                        names("excess", o, k, "all", "all"), lowBound=0)
            for tier, table in (("on-demand", prog.on_demand), ("spot", prog.spot)):
                if offer.available_gpus.get(tier) is None:  # type: ignore[call-overload]
                    continue
                for s, h in sorted({(s, h) for (oo, _p, s, h) in table if oo == o}):
                    prog.cap_excess[(o, tier, s, h)] = prog.prob.add_variable(
                        names("excess", o, tier, s, h), lowBound=0)

        # the facility's power and rack positions for servers bought (kW, positions)
        if any(k == "buy" for (_o, _p, k) in prog.reserved):
            for limit in ("power_kw", "racks"):
                if getattr(plan.facility, limit) is not None:
                    prog.cap_excess[("facility", limit, None, None)] = prog.prob.add_variable(
                        names("excess", "facility", limit), lowBound=0)
        # GPUs owned or signed for are caps too: what the program may not exceed
        for o, _p, s, h in sorted(prog.pool_demand):
            tier = _committed_tier(prog, o, s)
            if tier is not None and (o, tier, s, h) not in prog.cap_excess:
                prog.cap_excess[(o, tier, s, h)] = prog.prob.add_variable(names("excess", o, tier, s, h), lowBound=0)

    # Q[o]: rack positions of servers bought at o, when the facility counts racks and a rack holds several
    if plan.facility.racks is not None:
        for (o, _p, k), _v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0]):
            if k == "buy" and prog.own[o].nodes_per_rack > 1:
                prog.racks[o] = prog.prob.add_variable(names("racks", o), lowBound=0, cat=pulp.LpInteger)


def _pool_demand(prog: Program) -> dict[OfferPoolHour, pulp.LpAffineExpression]:
    """GPU demand grouped by (offer, pool, segment, hour), in the order each group is first met, each sum's terms
    in the configs' order. A large plan has millions of these terms: each config's are handed to their groups,
    and each group made one expression, by C loops (map, zip), without a Python step per term."""
    by_pair: dict[tuple[str, str], collections.defaultdict[DayHour, list]] = {}
    order: list[OfferPoolHour] = []
    for w in prog.plan.workloads:
        for c in gpu_cands(prog, w):
            gd = prog.gpu_demand.get(c.key)
            if not gd:
                continue
            pair = (c.offer, c.pool)
            groups = by_pair.get(pair)  # type: ignore[arg-type]
            if groups is None:
                groups = by_pair[pair] = collections.defaultdict(list)  # type: ignore[index]
            known = len(groups)
            collections.deque(map(list.append, map(groups.__getitem__, gd.keys()), gd.values()), maxlen=0)
            if len(groups) != known:  # groups first met here, in this config's order
                order.extend((c.offer, c.pool, *dh) for dh in itertools.islice(groups, known, None))  # type: ignore[misc]
    out = {}
    for k in order:
        o, p, d, h = k
        out[k] = _demand_sum(by_pair[(o, p)][(d, h)])
    return out


def _demand_sum(terms: list) -> pulp.LpAffineExpression:
    """One group's demand from its configs' (GPUs, variable or None) terms, as a term-by-term sum makes it: each
    variable's term 0.0 + GPUs (summed when a variable comes twice), a sole config's GPUs (None) in the constant."""
    coefs, variables = zip(*terms)
    if not any(map(operator.is_, variables, itertools.repeat(None))):
        e = pulp.LpAffineExpression(constant=0.0)
        dict.update(e, zip(variables, map(operator.add, itertools.repeat(0.0), coefs)))
        if len(e) == len(terms):
            return e
    constant = 0.0
    summed: list = []
    for coef, var in terms:
        if var is None:
            constant += coef
        else:
            summed.append((var, 0.0 + coef))
    e = pulp.LpAffineExpression(constant=constant)
    for var, coef in summed:
        e[var] = e[var] + coef if var in e else coef
    return e


def _demand_upper_bound(prog: Program) -> dict[OfferPoolHour, int]:
    """Most GPUs the pool could ask of the offer at an hour (for variable bounds): per workload, its
    largest config at the offer and hour, summed over the pool's workloads."""
    ub: dict[OfferPoolHour, int] = {}
    sums: dict[tuple[str, str, str], tuple[list, list[bool]]] = {}  # (offer, pool, segment) → GPUs and met, by hour
    day_hours = {d: [(d, h) for h in range(24)] for d in prog.segments.day_types}  # a day type's keys, hour by hour
    for w in prog.plan.workloads:
        hours = w.batch.hours() if w.kind == "batch" and w.batch is not None else []
        inside = [h in hours for h in range(24)]
        # the largest GPUs any config asks at (offer, day type), hour by hour
        most: dict[tuple[str, str], list[int]] = {}
        for c in gpu_cands(prog, w):
            for dtype in dict.fromkeys(d for _s, d in prog.segments.of_offer(c.offer)):
                if c.gpus:
                    keys = day_hours.get(dtype) or [(dtype, h) for h in range(24)]
                    row = list(map(c.gpus.__getitem__, keys))
                elif c.kind == "batch":
                    g = ceil_tol(batch_replica_hours(batch_volume(w), batch_goodput(prog, c, dtype)) * c.gpu_fraction)
                    row = [g if i else -1 for i in inside]  # -1: outside the window, no demand
                else:
                    continue
                key = (c.offer, dtype)  # type: ignore[assignment]
                so_far = most.get(key)
                most[key] = row if so_far is None else list(map(max, so_far, row))
        if is_split(prog, w):  # several configs at one offer may each carry part of the traffic
            most = {}
            for c in gpu_cands(prog, w):
                for dtype in dict.fromkeys(d for _s, d in prog.segments.of_offer(c.offer)):
                    row = [c.gpus[(dtype, h)] for h in range(24)]
                    key = (c.offer, dtype)  # type: ignore[assignment]
                    so_far = most.get(key)
                    most[key] = row if so_far is None else [a + b for a, b in zip(so_far, row)]
        for (o, dtype), row in most.items():
            whole = min(row) >= 0  # no hour outside a batch window (-1)
            for s, d in prog.segments.of_offer(o):
                if d != dtype:
                    continue
                k = (o, w.pool, s)
                acc = sums.get(k)
                if acc is None:
                    acc = sums[k] = ([0] * 24, [False] * 24)
                if whole:  # every hour: summed by one C loop
                    acc[0][:] = map(operator.add, acc[0], row)
                    acc[1][:] = itertools.repeat(True, 24)
                    continue
                for h, g in enumerate(row):
                    if g >= 0:
                        acc[0][h] += g
                        acc[1][h] = True
    for (o, p, s), (total, met) in sums.items():
        for h in range(24):
            if met[h]:
                ub[(o, p, s, h)] = total[h]
    return ub


# ---------------------------------------------------------------------------------------------
# constraint families

def define_choice(prog: Program) -> None:
    """Rows of family `choice` (optimize.families): one config per workload with several (a split workload's
    configs are each used or not: family split)."""
    for w in prog.plan.workloads:
        if is_split(prog, w):
            continue
        xs = [x for c in prog.cands.by_workload[w.name] if isinstance(x := prog.choice[c.key], pulp.LpVariable)]
        if xs:
            prog.add("choice", pulp.lpSum(xs) == 1, prog.names("choice", workload_id(prog, w)))


def _split_variables(prog: Program, w: Workload) -> None:
    """A split workload's variables (family split): z[c,b] for each class a config can serve, and per config,
    segment and hour its base replicas B, rollout replicas U and whole GPUs g, all integer; its GPUs in the
    supply rows are g."""
    names, pol = prog.names, prog.plan.policy
    for c in gpu_cands(prog, w):
        cid = config_id(prog, c)
        for b, g in enumerate(split_goodput(prog, w, c)[0]):
            if g > 0:
                prog.split_share[(c.key, b)] = prog.prob.add_variable(names("z", cid, b), lowBound=0, upBound=1)
        gd = prog.gpu_demand.setdefault(c.key, {})
        for s, _d in prog.segments.of_offer(c.offer):
            for h in range(24):
                for part in ("base", "rollout", "gpus"):
                    if part == "rollout" and pol.rollout_fraction == 0:
                        continue
                    prog.split_replicas[(c.key, part, s, h)] = prog.prob.add_variable(
                        names(f"split_{part}", cid, s, h), lowBound=0, cat=pulp.LpInteger)
                gd[(s, h)] = (1.0, prog.split_replicas[(c.key, "gpus", s, h)])


def define_split(prog: Program) -> None:
    """Rows of family `split` (optimize.families): each class's requests divided among a split workload's
    configs (split_share), each config's base replicas carry the loads sent to it at the occupancy
    (split_load, Mélange's constraint), a config that serves any traffic is used (split_used: its spares),
    rollout on top (split_rollout), and its GPUs are whole (split_gpus)."""
    pol = prog.plan.policy
    for w in prog.plan.workloads:
        if not is_split(prog, w):
            continue
        wid, cs = workload_id(prog, w), gpu_cands(prog, w)
        out_shares = split_classes(prog, w)
        demand = prog.cands.demand[w.name]
        api = _split_api(prog, w, wid, out_shares, demand)
        for b in range(len(out_shares)):
            zs = [prog.split_share[(c.key, b)] for c in cs if (c.key, b) in prog.split_share]
            prog.add("split", pulp.lpSum(zs + api[b:b + 1]) == 1, prog.names("split_share", wid, b))
        for c in cs:
            cid, u = config_id(prog, c), prog.choice[c.key]
            goodputs, sources = split_goodput(prog, w, c)
            for b in range(len(out_shares)):
                z = prog.split_share.get((c.key, b))
                if z is not None:
                    prog.add("split", z <= u, prog.names("split_used", cid, b))
            # a replica that may serve no traffic is never needed: base is 0 unless the config is used
            most = ceil_tol(max(demand.values(), default=0.0) / (min(g for g in goodputs if g > 0)
                                                                 * pol.occupancy * _least_factor(prog, sources, c)))
            for s, d in prog.segments.of_offer(c.offer):
                for h in range(24):
                    base = prog.split_replicas[(c.key, "base", s, h)]
                    load = pulp.lpSum(
                        demand[(d, h)] * share / (goodputs[b] * goodput_factor(prog.plan, sources[b], d)) * z
                        for b, share in enumerate(out_shares)
                        if (z := prog.split_share.get((c.key, b))) is not None and demand[(d, h)] > 0)
                    prog.add("split", pol.occupancy * base >= load, prog.names("split_load", cid, s, h))
                    prog.add("split", base <= most * u, prog.names("split_used", cid, s, h))
                    total = base + pol.spares * u
                    ro = prog.split_replicas.get((c.key, "rollout", s, h))
                    if ro is not None:
                        prog.add("split", ro >= pol.rollout_fraction * total,
                                 prog.names("split_rollout", cid, s, h))
                        total = total + ro
                    prog.add("split", prog.split_replicas[(c.key, "gpus", s, h)] >= c.gpu_fraction * total,
                             prog.names("split_gpus", cid, s, h))


def _split_api(prog: Program, w, wid: str, out_shares: list[float],
               demand: dict) -> list[pulp.LpVariable]:
    """A split workload's API overflow: a[b], the share of class b's requests the gateway sends to the API at
    every hour (a router's weight beside its configs' z[c,b]), with at most api.max_share of the output tokens
    (Σ_b σ_b · a[b] ≤ max_share, row split_api); the tokens it sends a day, per day type, are
    Program.api_volume, priced in the objective's api term. Empty without an api: block."""
    if w.api is None or w.api.max_share <= 0:
        return []
    a = [prog.prob.add_variable(prog.names("split_api", wid, b), lowBound=0, upBound=1)
         for b in range(len(out_shares))]
    sent = pulp.lpSum(s * x for s, x in zip(out_shares, a))
    prog.add("split", sent <= w.api.max_share, prog.names("split_api", wid))
    for d in prog.segments.day_types:
        prog.api_volume[(w.name, d)] = SECONDS_PER_HOUR * sum(demand[(d, h)] for h in range(24)) * sent
    return a


def _least_factor(prog: Program, sources: tuple[str, ...], c: Candidate) -> float:
    """The smallest goodput multiplier any of the program's day types applies to a class of c (1 without
    scenarios)."""
    days = {d for _s, d in prog.segments.of_offer(c.offer)}
    return min([goodput_factor(prog.plan, src, d) for src in sources for d in days] or [1.0])


def _share_time(prog: Program, cs: list[Candidate], o: str, d: str, h: int) -> float:
    """The GPUs' worth of time the group's members would take at once, at the occupancy (a bound)."""
    return sum(c.share_time.get((d, h), 0.0) for c in cs) / prog.plan.policy.occupancy


def _share_variables(prog: Program) -> None:
    """The variables of family share (optimize.families): per (offer, pool) with configs that may share GPUs, u[o,p]
    and per segment and hour the group's base GPUs B and rollout GPUs U, whole; the group's GPUs in the supply row
    of (o, p, s, h) are B + spares · u + U."""
    pol = prog.plan.policy
    for (o, p), cs in sorted(share_groups(prog).items()):
        u = prog.prob.add_variable(prog.names("share_used", o, p), lowBound=0, upBound=1)
        prog.share_used[(o, p)] = u
        for s, d in prog.segments.of_offer(o):
            for h in range(24):
                most = ceil_tol(_share_time(prog, cs, o, d, h))
                base = prog.prob.add_variable(prog.names("share_base", o, p, s, h), lowBound=0, upBound=most,
                                              cat=pulp.LpInteger)
                prog.share_gpus[(o, p, "base", s, h)] = base
                gpus = base + pol.spares * u
                if pol.rollout_fraction > 0:
                    ro = prog.prob.add_variable(prog.names("share_rollout", o, p, s, h), lowBound=0,
                                                upBound=ceil_tol(pol.rollout_fraction * (most + pol.spares)),
                                                cat=pulp.LpInteger)
                    prog.share_gpus[(o, p, "rollout", s, h)] = ro
                    gpus = gpus + ro
                key = (o, p, s, h)
                prog.pool_demand[key] = prog.pool_demand[key] + gpus if key in prog.pool_demand else gpus


def _share_bound(prog: Program, ub: dict[OfferPoolHour, int]) -> None:
    """Add to the most GPUs a pool could ask (define_variables' bounds) the most its group sharing GPUs could."""
    pol = prog.plan.policy
    for (o, p), cs in share_groups(prog).items():
        for s, d in prog.segments.of_offer(o):
            for h in range(24):
                most = ceil_tol(_share_time(prog, cs, o, d, h))
                k = (o, p, s, h)
                ub[k] = ub.get(k, 0) + most + pol.spares + ceil_tol(pol.rollout_fraction * (most + pol.spares))


def define_share(prog: Program) -> None:
    """Rows of family `share` (optimize.families): at each offer and pool whose workloads may share GPUs, the members'
    memory fits each shared GPU (share_memory), the group keeps its spares once some member is in it (share_used),
    its base GPUs carry the time its members' demand takes at the occupancy (share_load), rollout on top
    (share_rollout)."""
    pol = prog.plan.policy
    for (o, p), cs in sorted(share_groups(prog).items()):
        u = prog.share_used[(o, p)]
        xs = [(c, prog.choice[c.key]) for c in cs]
        prog.add("share", pulp.lpSum(c.share_memory * x for c, x in xs) <= 1, prog.names("share_memory", o, p))
        for c, x in xs:
            prog.add("share", u >= x, prog.names("share_used", config_id(prog, c)))
        for s, d in prog.segments.of_offer(o):
            for h in range(24):
                base = prog.share_gpus[(o, p, "base", s, h)]
                load = [c.share_time[(d, h)] * x for c, x in xs if c.share_time.get((d, h), 0.0) > 0]
                if load:
                    prog.add("share", pol.occupancy * base >= pulp.lpSum(load), prog.names("share_load", o, p, s, h))
                ro = prog.share_gpus.get((o, p, "rollout", s, h))
                if ro is not None:
                    prog.add("share", ro >= pol.rollout_fraction * (base + pol.spares * u),
                             prog.names("share_rollout", o, p, s, h))


def define_committed_split(prog: Program) -> None:
    """Rows of family `committed_split` (optimize.families), one per offer and contract period where
    pools that do not share reservations split the GPUs under contract."""
    by_level: dict[tuple[str, int | None], list[pulp.LpVariable]] = {}
    for (o, _p, pi), v in prog.committed_split.items():
        by_level.setdefault((o, pi), []).append(v)
    for (o, pi), vs in by_level.items():
        k = vs[0].upBound
        tag = "all" if pi is None else f"p{pi + 1}"
        prog.add("committed_split", pulp.lpSum(vs) <= k, prog.names("committed_split", o, tag))


def define_batch_volume(prog: Program) -> None:
    """Rows of families `batch_volume` and `batch_api` (optimize.families), per batch config and segment.
    The rows are divided by the day's volume V so every coefficient is of order 1. With max_share 1 the
    API-only config sends all of V to the API at a constant cost (in the objective). Also records each
    workload's tokens sent a day (Program.api_volume) for the objective."""
    for w in workloads_of(prog, "batch"):
        vol, cands = batch_volume(w), gpu_cands(prog, w)
        for s in dict.fromkeys(s for c in cands for s, _d in prog.segments.of_offer(c.offer)):
            sent = []
            for c in cands:
                day = dict(prog.segments.of_offer(c.offer)).get(s)
                if day is None:
                    continue
                x, cid = prog.choice[c.key], config_id(prog, c)
                rate = batch_goodput(prog, c, day)
                per_hour = SECONDS_PER_HOUR * rate / vol
                produced: dict = {n: per_hour for h in range(24)
                                  if (n := prog.batch_replicas.get((c.key, s, h))) is not None}
                y = prog.batch_api.get((c.key, s))
                if y is not None:
                    if isinstance(x, pulp.LpVariable):
                        prog.add("batch_api", y <= api_share(w) * x, prog.names("batch_api", cid, s))
                    produced[y] = 1
                    sent.append(vol * y)
                # `LpAffineExpression(produced) >= x`, the row PuLP makes, without copying `produced` for x
                produce = pulp.LpAffineExpression(produced)
                if isinstance(x, pulp.LpVariable) and x not in produce:
                    dict.__setitem__(produce, x, -1)
                    volume = pulp.LpConstraint(produce, pulp.LpConstraintGE)
                else:
                    volume = produce >= x
                prog.add("batch_volume", volume, prog.names("batch_volume", cid, s))
            if sent:
                prog.api_volume[(w.name, s)] = pulp.lpSum(sent)


def _committed_tier(prog: Program, o: str, s: str) -> str | None:
    """"owned" or "signed" when GPUs owned or signed for at the offer during the segment bound what it supplies."""
    if not prog.segments.committed_at(o, s):
        return None
    own = prog.own.get(o)
    return "owned" if own is not None and own.kind == "owned" else "signed"


def _committed_excess(prog: Program, o: str, s: str, h: int):
    """Diagnosis only: the GPUs beyond those owned or signed for at the offer in that hour (0 outside diagnosis)."""
    tier = _committed_tier(prog, o, s)
    return prog.cap_excess.get((o, tier, s, h), 0) if tier is not None else 0


def define_supply(prog: Program) -> None:
    """Rows of family `supply` (optimize.families), per (offer, pool, segment, hour) with demand. Where
    the pool borrows nothing (pools do not share, or it is the offer's only pool) its own reserved and
    committed GPUs stand in for L."""
    for o, p, s, h in sorted(prog.pool_demand):
        offer = prog.offers[o]
        m = offer.gpus_per_node
        # Σ supply ≥ demand as PuLP's `lpSum(supply) >= demand` makes it (terms in that order, the same
        # coefficients), from lists: the row is one of the program's largest families
        terms: list = []
        constant = 0.0
        lent = prog.lent.get((o, p, s, h))
        if lent is not None:
            terms.append((lent, 1))
        else:
            res_nodes = reserved_nodes(prog, o, p, prog.tiers(o, p), s)
            if res_nodes or prog.segments.committed_at(o, s):
                # m · Σ R + committed + excess: constants summed as PuLP sums them
                part = 0.0
                terms.extend((v, m) for v in res_nodes)
                for extra in (_committed_supply(prog, o, p, s), _committed_excess(prog, o, s, h)):
                    if isinstance(extra, pulp.LpVariable):
                        terms.append((extra, 1))
                    elif not (isinstance(extra, int) and extra == 0):
                        part += extra
                constant += part
        od = prog.on_demand.get((o, p, s, h))
        if od is not None:
            terms.append((od, m))
        spot = prog.spot.get((o, p, s, h))
        if spot is not None:
            terms.append((spot, (1.0 - offer.spot_interruption) * m))
        prog.add("supply", _at_least(terms, constant, prog.pool_demand[(o, p, s, h)]),
                 prog.names("supply", o, p, s, h))


def _at_least(lhs: list, lhs_constant: float, rhs: pulp.LpAffineExpression) -> pulp.LpConstraint:
    """Σ lhs + lhs_constant ≥ rhs, the row PuLP's `lhs >= rhs` makes (lhs's terms, then rhs's negated, in that
    order): rhs's terms negated and put in the row's dictionary by C loops, without a Python step per term (the
    supply rows' demand sums hold every config of a pool). `lhs`: (variable, coefficient) pairs as PuLP's sum of
    them holds them."""
    expr = affine(lhs, lhs_constant - rhs.constant)
    n = len(expr)
    dict.update(expr, zip(rhs.keys(), map(operator.sub, itertools.repeat(0), rhs.values())))
    if len(expr) != n + len(rhs):  # a variable on both sides: its coefficients added, in order
        terms = dict(affine(lhs).items())
        for v, coef in rhs.items():
            terms[v] = terms.get(v, 0) - coef
        expr = pulp.LpAffineExpression(terms, constant=lhs_constant - rhs.constant)
    return pulp.LpConstraint(expr, pulp.LpConstraintGE)


def define_reserved_sharing(prog: Program) -> None:
    """Rows of family `reserved_sharing` (optimize.families), per (offer, segment, hour) where pools
    borrow. In diagnosis, + e[o,s,h] (where no pool borrows, the supply row carries it)."""
    by_offer_hour: dict[tuple[str, str, int], list] = {}
    for (o, p, s, h), v in prog.lent.items():
        by_offer_hour.setdefault((o, s, h), []).append(v)
    now, later = reserved_by_offer(prog)
    for (o, s, h), lent in sorted(by_offer_hour.items()):
        m = prog.offers[o].gpus_per_node
        res = [v for _p, k, v in now.get(o, ()) if k != "buy" or prog.segments.delivered(o, s)]
        res += [v for _p, _k, t, v in later.get(o, ()) if t <= prog.segments.first_day(s)]
        prog.add("reserved_sharing", pulp.lpSum(lent) <= m * pulp.lpSum(res) + prog.segments.committed_at(o, s)
                 + _committed_excess(prog, o, s, h),
                 prog.names("reserved_sharing", o, s, h))


def define_caps(prog: Program) -> None:
    """Rows of families `cap_reserved`, `cap_on_demand` and `cap_spot` (optimize.families). A cap on a
    single variable is its upper bound instead (define_variables), outside diagnosis."""
    now, later = reserved_by_offer(prog)
    # each hourly table's variables by offer, then (segment, hour), in the table's order
    hourly: dict[tuple[str, str], dict[tuple[str, int], list]] = {}
    for tier, table in zip(HOURLY_TIERS, (prog.on_demand, prog.spot)):
        for (oo, _p, s, h), v in table.items():
            hourly.setdefault((tier, oo), {}).setdefault((s, h), []).append(v)
    for o, offer in prog.offers.items():
        m = offer.gpus_per_node
        for k in RESERVED_TIERS:
            cap = offer.available_gpus.get(k)  # type: ignore[call-overload]
            # reservations only add up over the horizon: all of them are held at its end
            vs = [v for _p, kk, v in now.get(o, ()) if kk == k] + [v for _p, kk, _t, v in later.get(o, ()) if kk == k]
            if cap is not None and (len(vs) > 1 or prog.elastic and vs):
                prog.add("cap_reserved", m * pulp.lpSum(vs) <= cap + prog.cap_excess.get((o, k, None, None), 0),
                         prog.names("cap_reserved", o, k))
        for tier in HOURLY_TIERS:
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
            if cap is None:
                continue
            for (s, h), vs in sorted(hourly.get((tier, o), {}).items()):
                if len(vs) > 1 or prog.elastic:
                    family = f"cap_{tier.replace('-', '_')}"
                    prog.add(family, m * pulp.lpSum(vs) <= cap + prog.cap_excess.get((o, tier, s, h), 0),
                             prog.names(family, o, s, h))


def define_commitments_at_low(prog: Program) -> None:
    """Rows of family `commit_low` (optimize.families), with policy.size_commitments_at: low: the GPUs reserved and
    bought at an offer are at most what its chosen configs need at the low end of their estimates' bands
    (Candidate.commit_gpus); the rest of their need runs on hourly tiers. Batch configs and reserved blocks count
    the most GPUs they may use (they lower nothing); an offer no bound would lower gets no row."""
    if prog.plan.policy.size_commitments_at != "low":
        return
    by_offer: dict[str, list[Candidate]] = {}
    for w in prog.plan.workloads:
        for c in gpu_cands(prog, w):
            by_offer.setdefault(c.offer, []).append(c)  # type: ignore[arg-type]
    shared = {o for o, _p in prog.share_used}  # a group's GPUs have no bound of their own: no row
    for o, cs in sorted(by_offer.items()):
        if o in shared:
            continue
        held = [v for (oo, *_rest), v in (*prog.reserved.items(), *prog.reserved_later.items()) if oo == o]
        bounds = [_commit_bound(prog, c) for c in cs]
        if not held or any(b is None for b in bounds) or all(b[0] >= b[1] for b in bounds):  # type: ignore[index]
            continue
        m = prog.offers[o].gpus_per_node
        prog.add("commit_low", m * pulp.lpSum(held)
                 <= pulp.lpSum(b[0] * prog.choice[c.key] for c, b in zip(cs, bounds)),  # type: ignore[index]
                 prog.names("commit_low", o))


def _commit_bound(prog: Program, c: Candidate) -> tuple[int, int] | None:
    """(GPUs commitments may hold for config c, the most GPUs it uses): an interactive config's commit_gpus and
    busiest hour; a reserved block's GPUs twice; a batch config's most replicas at an hour, in GPUs, twice
    (None when unbounded: then its offer gets no row)."""
    if c.kind == "batch":
        ub = [v.upBound for (k, _s, _h), v in prog.batch_replicas.items() if k == c.key]
        if any(u is None for u in ub):
            return None
        most = ceil_tol(max(ub, default=0) * c.gpu_fraction)
        return most, most
    need = max(c.gpus.values(), default=0)
    if c.kind == "reserve":
        return need, need
    return None if c.commit_gpus is None else (min(c.commit_gpus, need), need)


def define_facility(prog: Program) -> None:
    """Rows of families `facility_power` and `facility_racks` (optimize.families): the facility's limits
    on servers bought (owned ones are constants). Owned servers already beyond a limit leave nothing to buy
    under it (not an infeasible plan). In diagnosis, + e[facility, limit] on the right of each."""
    fac = prog.plan.facility
    bought = [(o, v) for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0]) if k == "buy"]
    kw_owned, racks_owned = ownership.owned_facility_use(prog.own)
    if fac.power_kw is not None and bought:
        room = max(0.0, fac.power_kw - kw_owned)
        prog.add("facility_power", pulp.lpSum(prog.own[o].load_kw * v for o, v in bought)
                 <= room + prog.cap_excess.get(("facility", "power_kw", None, None), 0), "facility_power")
    if fac.racks is not None and bought:
        positions = []
        for o, v in bought:
            q = prog.racks.get(o)
            if q is None:
                positions.append(v)
                continue
            prog.add("facility_racks", prog.own[o].nodes_per_rack * q >= v, prog.names("rack_positions", o))
            positions.append(q)
        prog.add("facility_racks", pulp.lpSum(positions)
                 <= max(0, fac.racks - racks_owned) + prog.cap_excess.get(("facility", "racks", None, None), 0),
                 "facility_racks")


def define_savings_plans(prog: Program) -> None:
    """Variables U[j] (new commitments) and c[j,o,s,h], and rows of families `spend_cover` and `spend_list`
    (optimize.families): each hour a spend commitment covers at most its U of discounted spend across its offers,
    and an offer's covered list spend (c ÷ (1 − δ), over the commitments covering it) is at most its on-demand
    list spend that hour. The objective's `savings_plan` term pays U for every hour and credits the list spend
    covered (savings_plan_terms)."""
    plans = spend.spend_plans(prog.plan, prog.offers)
    prog.spend_plans = plans
    if not plans:
        return
    names, segs = prog.names, prog.segments
    od_by: dict[tuple[str, str, int], list] = {}
    for (o, _p, s, h), v in prog.on_demand.items():
        od_by.setdefault((o, s, h), []).append(v)
    for p in plans:
        if not p.signed:
            prog.spend_new[p.key] = prog.prob.add_variable(names("spend", p.key), lowBound=0)
    by_offer_hour: dict[tuple[str, str, int], list] = {}  # (offer, cell, h) → [c ÷ (1 − δ)]
    list_spend: dict[tuple[str, str, int], pulp.LpAffineExpression] = {}
    for p in plans:
        u = prog.spend_new.get(p.key, p.usd_per_hour)
        for cell, at in spend.cells(segs, p.offers):
            if not spend.runs_in(p, segs, cell):
                continue
            for h in range(24):
                cs = []
                for o in p.offers:
                    nodes = od_by.get((o, at[o], h))
                    if not nodes:
                        continue
                    if (o, cell, h) not in list_spend:
                        rate = costs.hourly_per_node(prog.plan, segs, prog.offers[o], "on-demand", at[o], 1.0)
                        list_spend[(o, cell, h)] = rate * pulp.lpSum(nodes)
                    c = prog.prob.add_variable(names("spend_covered", p.key, o, cell, h), lowBound=0)
                    prog.spend_covered[(p.key, o, cell, h)] = c
                    cs.append(c)
                    by_offer_hour.setdefault((o, cell, h), []).append(c / (1.0 - p.discount))
                if cs:
                    prog.add("spend_cover", pulp.lpSum(cs) <= u, names("spend_cover", p.key, cell, h))
    for (o, cell, h), covered in sorted(by_offer_hour.items()):
        prog.add("spend_list", pulp.lpSum(covered) <= list_spend[(o, cell, h)], names("spend_list", o, cell, h))


def savings_plan_terms(prog: Program) -> tuple[pulp.LpAffineExpression, dict[str, pulp.LpAffineExpression]]:
    """The objective term `savings_plan`: (what the new commitments cost over the hours they run, the list spend
    covered by segment as a credit ≤ 0). Signed commitments are sunk: only their coverage is here."""
    days = prog.segments.days()
    by_key = {p.key: p for p in prog.spend_plans}
    paid = pulp.lpSum(spend.hours_held(prog.plan, by_key[k]) * u for k, u in sorted(prog.spend_new.items()))
    credit: dict[str, list] = {}
    for (k, _o, cell, _h), c in prog.spend_covered.items():
        credit.setdefault(cell, []).append(-days[cell] / (1.0 - by_key[k].discount) * c)
    return paid, {cell: pulp.lpSum(cs) for cell, cs in credit.items()}


def define_objective(prog: Program) -> None:
    """The objective (optimize.families.OBJECTIVE states each term). Every coefficient is optimize.costs'
    price of one unit, the same the result is costed with; contracts already signed are sunk: not here."""
    plan, segments = prog.plan, prog.segments
    H = plan.horizon_days
    reserved = pulp.lpSum(costs.reserved_per_node(prog.offers[o], k, H) * v
                          for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0] + str(kv[0][1]) + kv[0][2])
                          if k != "buy")
    if prog.reserved_later:
        reserved += pulp.lpSum(costs.reserved_per_node(prog.offers[o], k, H, t) * v
                               for (o, _p, k, t), v in prog.reserved_later.items())
    od = weighted_sum((prog.hourly_rate(o, "on-demand", s), v) for (o, _p, s, _h), v in prog.on_demand.items())
    spot = weighted_sum((prog.hourly_rate(o, "spot", s), v) for (o, _p, s, _h), v in prog.spot.items())
    api_terms = [c.api_cost * prog.choice[c.key] for c in prog.cands.all()
                 if c.api_cost and c.key not in prog.sole_tenant and not moved(prog, c)]
    api_terms += [t for c in prog.cands.all() if c.api_cost and moved(prog, c) for t in api_cost_terms(prog, c)]
    by_name = {w.name: w for w in plan.workloads}
    days = segments.days()
    for (wn, s), y in prog.api_volume.items():
        api_terms.append(days[s] * costs.api_per_token(by_name[wn]) * y)
    bought, fixed, serving = _own_costs(prog)
    facility = fixed + serving
    sole_tenant = define_sole_tenant(prog)
    sp_paid, sp_credit = savings_plan_terms(prog)
    savings_plan = sp_paid + pulp.lpSum(sp_credit.values())
    prog.cost_terms = {"reserved": reserved, "on_demand": od, "spot": spot, "api": pulp.lpSum(api_terms),
                       "buy": bought, "facility": facility, "sole_tenant": sole_tenant, "savings_plan": savings_plan}
    if prog.move_overlap:
        prog.cost_terms["moves"] = move_terms(prog)
    penalty = pulp.lpSum(_excess_penalty(prog) * v for v in prog.cap_excess.values())
    sd = scenario_days(plan)
    if sd is not None and plan.policy.risk.measure != "expected":
        prog.prob += define_risk(prog, sd, reserved + bought + fixed + sp_paid) + penalty
        return
    # reserved + od + spot + … summed into one copy of `reserved`, as `+` would, without copying the sum so far at
    # every `+` (the hourly terms are most of a large program's columns)
    objective = reserved.copy()
    for part in (od, spot, pulp.lpSum(api_terms), bought, facility, sole_tenant, savings_plan, penalty,
                 prog.cost_terms.get("moves", 0)):
        objective.addInPlace(part)
    prog.prob += objective



def define_sole_tenant(prog: Program) -> pulp.LpAffineExpression:
    """A config c alone at its offer o (no other workload has a config there) takes nothing any other
    workload could use, so what o costs when c is chosen — its reserved, on-demand and spot nodes, the
    API share, hour by hour — is o's cheapest way to serve c alone, K_c, solved apart (strategy). In the
    program it is the objective term `sole_tenant` and, when no plan at o serves c, a row of family `sole_tenant`
    (optimize.families); o has no variables or rows. Exact: the program with o's capacity in it would choose, for x[c] = 1,
    that same cheapest capacity, since nothing else draws on it. K_c may first be a lower bound (the
    relaxation of o alone; the program is then a relaxation of the plan), made exact for the configs a
    solution chooses before that solution is taken (strategy._settle_sole_tenants); a solution that chooses c
    gets o's hours from the program without sole-tenant configs (strategy._with_sole_tenant_hours).
    Why: an offer only one workload can use still brings its hourly nodes, caps and rows into the
    program; on plans/q4.yaml 16 of nightly-summaries' configs are alone at their offers and their rows
    made the solver's root work several times longer (benchmarks/SOLVER.md, "How the solve works").
    """
    terms = []
    for key, cost in prog.sole_tenant.items():
        x = prog.choice[key]
        if math.isinf(cost):  # a row, not a bound: forcing c (explain) is then infeasible, as it is
            prog.add("sole_tenant", x <= 0, prog.names("sole_tenant", prog.candidate_ids[key]))
            continue
        terms.append(cost * x)
    return pulp.lpSum(terms)



def _second_stage(prog: Program, sd: ScenarioDays) -> dict[str, pulp.LpAffineExpression]:
    """Each scenario's second-stage cost as if it were certain: its segments' hourly capacity, API and
    serving energy, their days divided by the scenario's weight."""
    days = prog.segments.days()
    terms: dict[str, list] = {}

    def scn(s: str) -> tuple[str, float] | None:
        sc = sd.scenario.get(prog.segments.segments[s][0])
        return (sc.name, sc.weight) if sc is not None else None

    for tier, table in (("on-demand", prog.on_demand), ("spot", prog.spot)):
        for (o, _p, s, _h), v in table.items():
            k = scn(s)
            if k:
                terms.setdefault(k[0], []).append(
                    costs.hourly_per_node(prog.plan, prog.segments, prog.offers[o], tier, s, days[s] / k[1]) * v)
    by_name = {w.name: w for w in prog.plan.workloads}
    for (wn, s), y in prog.api_volume.items():
        k = scn(s)
        if k:
            terms.setdefault(k[0], []).append(days[s] / k[1] * costs.api_per_token(by_name[wn]) * y)
    for c in prog.cands.all():
        if not c.api_cost or not c.api_output_tokens_per_day:
            continue
        price = costs.api_per_token(by_name[c.workload])
        for d, tokens in c.api_output_tokens_per_day.items():
            sc = sd.scenario.get(d)
            if sc is not None and tokens:
                terms.setdefault(sc.name, []).append(days[d] / sc.weight * tokens * price * prog.choice[c.key])
    for (o, _p, s, h), v in prog.lent.items():
        t = prog.own.get(o)
        k = scn(s)
        if t is not None and k and t.serving_energy(h):
            terms.setdefault(k[0], []).append(costs.serving_energy(t, prog.segments, s, h, days[s] / k[1]) * v)
    by_key = {p.key: p for p in prog.spend_plans}
    for (key, _o, cell, _h), c in prog.spend_covered.items():  # the list spend a commitment covers (savings_plan)
        k = scn(cell)
        if k:
            terms.setdefault(k[0], []).append(-days[cell] / k[1] / (1.0 - by_key[key].discount) * c)
    names = dict.fromkeys(sc.name for sc in sd.scenario.values())
    return {n: pulp.lpSum(terms.get(n, [])) for n in names}


def define_risk(prog: Program, sd: ScenarioDays, first_stage: pulp.LpAffineExpression) -> pulp.LpAffineExpression:
    """The objective over scenarios by policy.risk: the objective term `risk` and the rows of families
    `risk_worst` or `risk_cvar` (optimize.families). Expected, the default, needs none: the days of each
    scenario's day types carry its weight."""
    risk = prog.plan.policy.risk
    q = _second_stage(prog, sd)
    weights = {sc.name: sc.weight for sc in sd.scenario.values()}
    if risk.measure == "worst":
        t = prog.prob.add_variable("risk_worst", lowBound=0)
        for n, e in q.items():
            prog.add("risk_worst", t >= e, prog.names("risk_worst", n))
        return first_stage + t
    eta = prog.prob.add_variable("risk_var")
    us = []
    for n, e in q.items():
        u = prog.prob.add_variable(prog.names("risk_excess", n), lowBound=0)
        prog.add("risk_cvar", u >= e - eta, prog.names("risk_cvar", n))
        us.append(weights[n] * u)
    return first_stage + eta + pulp.lpSum(us) / (1.0 - risk.level)


def _own_costs(prog: Program) -> tuple[pulp.LpAffineExpression, pulp.LpAffineExpression, pulp.LpAffineExpression]:
    """The objective terms `buy` and `facility` (optimize.families), priced by optimize.costs. Returned as
    (buy, the facility's fixed costs, serving energy)."""
    buy, fac, serving = [], [], []
    const = 0.0
    for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0]):
        if k != "buy":
            continue
        t, n = prog.own[o], costs.service_days(prog.segments, o)
        buy.append(costs.bought_per_node(t, n) * v)
        fac.append(costs.bought_running_per_node(t, n) * v)
    for o, t in prog.own.items():
        if t.kind == "owned":
            const += costs.owned_running(t, costs.owned_days(prog.plan, prog.segments, t))
    for (o, _p, s, h), v in sorted(prog.lent.items()):
        t = prog.own.get(o)
        if t is not None and t.serving_energy(h):
            serving.append(costs.serving_energy(t, prog.segments, s, h) * v)
    return pulp.lpSum(buy), pulp.lpSum(fac) + const, pulp.lpSum(serving)


def _excess_penalty(prog: Program) -> float:
    """Cost of one GPU beyond a cap in diagnosis mode: more than a whole node of the dearest offer
    over the horizon, ten times over, so the program exceeds caps only where it must."""
    prices = [p for o in prog.offers.values() for t in o.price_per_gpu_hour if (p := o.price(t))]
    nodes = max((o.gpus_per_node for o in prog.offers.values()), default=1)
    return 10.0 * unit_prices.held(nodes, max(prices, default=1.0), prog.plan.horizon_days) + 1.0


def _split_moved(prog: Program, w: Workload, last: set[str]) -> pulp.LpVariable:
    """m_w ∈ [0, 1], 1 when a split workload's configs are not its last ones (family baseline_split): a last
    config left (m ≥ 1 − x[c]; one used serves some traffic) or another one used (m ≥ x[c]); its shares of the
    size classes move freely."""
    m = prog.prob.add_variable(prog.names("baseline_moved", workload_id(prog, w)), lowBound=0, upBound=1)
    for c in prog.cands.by_workload[w.name]:
        x = prog.choice.get(c.key)
        if not isinstance(x, pulp.LpVariable):
            continue
        cid = config_id(prog, c)
        if without_ceiling(c.key) in last:  # kept: used, and serving some traffic (not held empty)
            prog.add("baseline_split", m >= 1 - x, prog.names("baseline_left", cid))
            prog.add("baseline_split", prog.serves(c.key) >= SERVES * x, prog.names("baseline_serves", cid))
        else:
            prog.add("baseline_split", m >= x, prog.names("baseline_added", cid))
    return m


def _schedule_left(prog: Program, w: Workload, keys: list[str]) -> pulp.LpVariable:
    """m_w ∈ [0, 1], 1 when a workload that may move leaves, in some contract period, the hardware its last plan ran
    on that period's first day (`keys`: period_keys): family baseline_moves."""
    m = prog.prob.add_variable(prog.names("baseline_moved", workload_id(prog, w)), lowBound=0, upBound=1)
    for pi, key in enumerate(keys):
        xs = [x for c in prog.cands.by_workload[w.name] if without_ceiling(c.key) == without_ceiling(key)
              and isinstance(x := prog.choice_at_period(c.key, pi), pulp.LpVariable)]
        if xs:
            prog.add("baseline_moves", m >= 1 - pulp.lpSum(xs),
                     prog.names("baseline_left", workload_id(prog, w), f"p{pi + 1}"))
    return m


def define_baseline(prog: Program, baseline: dict[str, tuple[str, float]]) -> None:
    """Stable re-plans (--baseline): keep a workload's last choice b_w unless moving saves more, the
    objective term `baseline` (optimize.families; τ = policy.change_threshold, C_w = w's cost in the last
    plan, H(b): b's hardware at every API ceiling). So a workload moves only when the plan saves more than τ·C_w by it; its API overflow ceiling may move
    freely (the ceilings follow the demand). A last choice that is no longer a candidate (it no longer
    fits, or its offer is gone) costs nothing to leave. The penalty is not a cost: results recompute costs
    from the solved purchases.
    """
    tau = prog.plan.policy.change_threshold
    terms = []
    for w in prog.plan.workloads:
        if w.name not in baseline:
            continue
        key, cost = baseline[w.name]
        per_period = period_keys(prog, w.name, key)  # a last plan that moved: its config on each period's first day
        if len(per_period) > 1 and tau * cost > 0:
            prog.baseline_penalty[w.name] = (key, tau * cost)
            terms.append(tau * cost * _schedule_left(prog, w, per_period))
            continue
        key = per_period[0]
        last = {without_ceiling(k) for k in keys_of(key)}  # a split workload's last configs, each of them
        xs = [x for c in prog.cands.by_workload[w.name] if without_ceiling(c.key) in last
              and isinstance(x := prog.choice.get(c.key), pulp.LpVariable)]
        if not xs or tau * cost <= 0:
            continue  # gone, or the only config left: nothing to keep
        prog.baseline_penalty[w.name] = (key, tau * cost)
        if is_split(prog, w):
            terms.append(tau * cost * _split_moved(prog, w, last))
        else:
            terms.append(tau * cost * (1 - pulp.lpSum(xs)))
    if terms:
        prog.prob.setObjective(prog.prob.objective + pulp.lpSum(terms))
