"""The integer program: one define_* function per constraint family, read like the math.

Sets: workloads w (pool p(w)), candidates c ∈ C(w) on offer o(c), day types d (days n_d), hours h,
purchase tiers k. Every sizing number is a constant computed before this module runs.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import pulp

from optimizer.candidates.build import allowed_tiers
from optimizer.candidates.overflow import api_price_per_output_token
from optimizer.candidates.types import Candidate, CandidateSet, DayHour
from optimizer.optimize.calendar import Calendar, calendar
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload

RESERVED_TIERS = ("reserved-1y", "reserved-3y")
SECONDS_PER_HOUR = 3600.0

OfferPoolHour = tuple[str, str, str, int]


class Namer:
    """Deterministic, PuLP-safe, collision-checked names (PuLP rewrites '-', '+', ' ' and more to '_')."""

    _unsafe = re.compile(r"[^A-Za-z0-9_.]")

    def __init__(self) -> None:
        self._seen: dict[str, tuple] = {}

    def __call__(self, family: str, *parts: object) -> str:
        name = "_".join([family] + [self._unsafe.sub("_", str(p)) for p in parts])
        key = (family,) + parts
        prev = self._seen.setdefault(name, key)
        if prev != key:
            raise ValueError(f"name collision in the program: {prev} and {key} both map to {name}")
        return name


@dataclass
class Program:
    """The built PuLP problem and handles on its variables, for results.py to read."""

    prob: pulp.LpProblem
    plan: Plan
    cands: CandidateSet
    offers: dict[str, Offer]
    workload_index: dict[str, int]
    choice: dict[str, pulp.LpVariable | int] = field(default_factory=dict)
    """candidate key -> binary (or 1 when the workload has one candidate)."""
    gpu_demand: dict[str, dict[DayHour, tuple[float, pulp.LpVariable | None]]] = field(default_factory=dict)
    """candidate key -> (d, h) -> (coefficient, variable): the config's GPUs are coefficient ×
    variable (its choice x, or batch replica-hours n), or the coefficient alone (a sole config)."""
    batch_replicas: dict[tuple[str, str, int], pulp.LpVariable] = field(default_factory=dict)
    api_volume: dict[tuple[str, str], pulp.LpAffineExpression] = field(default_factory=dict)
    """Batch overflow: output tokens per day sent to the API."""
    reserved: dict[tuple[str, str | None, str], pulp.LpVariable] = field(default_factory=dict)
    """(offer, pool or None when shared, tier) -> reserved nodes for the whole horizon."""
    lent: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    on_demand: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    spot: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    cost_terms: dict[str, pulp.LpAffineExpression] = field(default_factory=dict)
    constraint_families: dict[str, list[str]] = field(default_factory=dict)
    pool_offer_pairs: list[tuple[str, str]] = field(default_factory=list)
    elastic: bool = False
    """Diagnosis mode: caps may be exceeded at a large penalty, so the excess shows what cannot be met."""
    cap_excess: dict[tuple[str, str, str | None, int | None], pulp.LpVariable] = field(default_factory=dict)
    names: "Namer | None" = None
    has_cuts: bool = False
    calendar: Calendar | None = None
    """Contract periods of the horizon (commitments.calendar)."""
    segments: dict[str, tuple[str, float, int | None]] = field(default_factory=dict)
    """Segment → (day type, days, contract period or None). A segment is a day type, or — on an offer
    whose committed GPUs change inside the horizon — a day type within one contract period."""
    offer_segments: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Offers whose committed GPUs change inside the horizon → their (segment, day type) pairs."""
    committed: dict[tuple[str, str], int] = field(default_factory=dict)
    """(offer, segment) → GPUs already under contract (plan `commitments`), for offers that have any."""
    committed_split: dict[tuple[str, str, int | None], pulp.LpVariable] = field(default_factory=dict)
    """Reservations not shared across pools: (offer, pool, period) → committed GPUs the pool holds."""
    baseline_penalty: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Workload → (last plan's candidate key, switching cost) from --baseline (define_baseline)."""

    def gpus(self, key: str, dh: DayHour) -> float:
        """GPUs a config uses at (d, h) in the solved program."""
        coef, var = self.gpu_demand.get(key, {}).get(dh, (0.0, None))
        return coef * (var.varValue or 0.0) if var is not None else coef

    def fix_choice(self, workload: str, key: str) -> None:
        """Force a workload onto one config (explain's alternatives)."""
        x = self.choice[key]
        if isinstance(x, pulp.LpVariable):
            self.add("fixed_choice", x == 1, f"fixed_choice_w{self.workload_index[workload]}")

    @contextmanager
    def choices_fixed_to_relaxation(self) -> Iterator[None]:
        """Fix every choice to the config the solved relaxation chose most (ties: the first key), then undo."""
        saved = []
        for w in self.plan.workloads:
            xs = [(c.key, x) for c in self.cands.by_workload[w.name]
                  if isinstance(x := self.choice[c.key], pulp.LpVariable)]
            if not xs:
                continue
            best = max(xs, key=lambda kx: (round(kx[1].varValue or 0.0, 9), [-ord(ch) for ch in kx[0]]))[0]
            for key, x in xs:
                saved.append((x, x.lowBound, x.upBound))
                x.lowBound = x.upBound = 1 if key == best else 0
        try:
            yield
        finally:
            for x, lo, up in saved:
                x.lowBound, x.upBound = lo, up

    def values(self) -> dict[str, float | None]:
        """The solved value of every variable, by name (a warm start, or a plan to go back to)."""
        return {v.name: v.varValue for v in self.prob.variables()}

    def restore(self, values: dict[str, float | None]) -> None:
        for v in self.prob.variables():
            v.varValue = values.get(v.name)

    def excess(self) -> dict[tuple[str, str, str | None, int | None], float]:
        """Diagnosis mode: GPUs beyond each cap in the solved program."""
        return {k: v.varValue or 0.0 for k, v in self.cap_excess.items()}

    def add(self, family: str, constraint: pulp.LpConstraint, name: str) -> None:
        self.prob += constraint, name
        self.constraint_families.setdefault(family, []).append(name)


def build_model(loaded: LoadedPlan, cands: CandidateSet, *, elastic: bool = False, cuts: bool = True,
                baseline: dict[str, tuple[str, float]] | None = None) -> Program:
    """min horizon cost  s.t. choice, demand, batch volume, supply, sharing, caps.

    `cuts` adds the node-rounding valid inequalities now; without, add_cuts() adds them later
    (they tighten branch and bound but make the LP relaxation slower to solve). `baseline` maps a
    workload to its last plan's candidate key and the cost of moving it (define_baseline).
    """
    plan = loaded.plan
    offers = {o: loaded.catalog.offers[o] for o in sorted({c.offer for c in cands.all() if c.offer})}
    prog = Program(pulp.LpProblem("planopt", pulp.LpMinimize), plan, cands, offers,
                   {w.name: i for i, w in enumerate(plan.workloads)}, elastic=elastic)
    names = Namer()
    prog.names = names
    define_choice(prog, names)
    define_commitments(prog, names)
    define_interactive_demand(prog, names)
    define_batch_volume(prog, names)
    define_reservations(prog, names)
    define_supply(prog, names)
    define_caps(prog, names)
    if cuts:
        add_cuts(prog)
    define_objective(prog)
    define_baseline(prog, baseline or {})
    return prog


# ---------------------------------------------------------------------------------------------
# helpers

def _workloads(prog: Program, kind: str) -> list[Workload]:
    return [w for w in prog.plan.workloads if w.kind == kind]


def _gpu_cands(prog: Program, w: Workload) -> list[Candidate]:
    return [c for c in prog.cands.by_workload[w.name] if c.kind != "api"]


def _wid(prog: Program, w: Workload | str) -> str:
    name = w if isinstance(w, str) else w.name
    return f"w{prog.workload_index[name]}"


def _segs(prog: Program, offer: str | None) -> list[tuple[str, str]]:
    """(segment, day type) pairs an offer's supply is planned in: its day types, or day types × periods."""
    segs = prog.offer_segments.get(offer or "")
    if segs is not None:
        return segs
    return [(d, d) for d in prog.plan.day_type_days()]


def _committed(prog: Program, offer: str, seg: str) -> int:
    """GPUs already under contract at the offer during the segment (0 without a commitment)."""
    return prog.committed.get((offer, seg), 0) if prog.committed else 0


def _cid(prog: Program, c: Candidate) -> str:
    """Short, safe id of a candidate: workload index + its position among that workload's candidates."""
    return f"{_wid(prog, c.workload)}_c{prog.cands.by_workload[c.workload].index(c)}"


# ---------------------------------------------------------------------------------------------
# constraint families

def define_choice(prog: Program, names: Namer) -> None:
    """choice[w]:  Σ_{c∈C(w)} x[c] = 1   (x binary) — one config per workload."""
    for w in prog.plan.workloads:
        cs = prog.cands.by_workload[w.name]
        if len(cs) == 1:
            prog.choice[cs[0].key] = 1
            continue
        xs = []
        for c in cs:
            x = prog.prob.add_variable(names("x", _cid(prog, c)), cat=pulp.LpBinary)
            prog.choice[c.key] = x
            xs.append(x)
        prog.add("choice", pulp.lpSum(xs) == 1, names("choice", _wid(prog, w)))


def define_commitments(prog: Program, names: Namer) -> None:
    """Contracts already signed (plan `commitments`): capacity used first, its cost sunk (not in the objective).

    K[o,s] = GPUs under contract at offer o during segment s, whole GPUs (not nodes). They join the
    offer's reserved GPUs: in the supply row of a pool that has the offer to itself, in the
    sharing row when pools share reservations. Pools that do not share split them per contract period π:
        committed_split[o,π]:  Σ_p a[o,p,π] ≤ K[o,π]     (a integer)
    A contract that starts or ends inside the horizon cuts it into periods (commitments.calendar);
    only offers whose K changes get their supply, demand and node variables per period × day type
    (segments), so the model is unchanged without commitments or with contracts covering the horizon.
    """
    plan = prog.plan
    for d, n in plan.day_type_days().items():
        prog.segments[d] = (d, n, None)
    if not plan.commitments:
        return
    cal = calendar(plan)
    prog.calendar = cal
    varying = cal.varying_offers() & set(prog.offers)
    for o in sorted(varying):
        segs = []
        for per in cal.periods:
            for d, n in per.day_types.items():
                if n <= 0:
                    continue
                s = f"{d}@p{per.index + 1}"
                prog.segments[s] = (d, n, per.index)
                segs.append((s, d))
                if per.committed.get(o):
                    prog.committed[(o, s)] = per.committed[o]
        prog.offer_segments[o] = segs
    for o in sorted(set(prog.offers) - varying):
        if cal.constant(o):
            for d in plan.day_type_days():
                prog.committed[(o, d)] = cal.constant(o)
    if plan.policy.share_reserved_across_pools:
        return
    held = {o for o, _s in prog.committed}
    pools: dict[str, set[str]] = {}
    for c in prog.cands.all():
        if c.offer in held:
            pools.setdefault(c.offer, set()).add(c.pool)  # type: ignore[arg-type]
    for o, ps in sorted(pools.items()):
        if len(ps) < 2:
            continue
        levels = [(per.index, per.committed.get(o, 0)) for per in cal.periods] if o in varying \
            else [(None, cal.constant(o))]
        for pi, k in levels:
            if not k:
                continue
            tag = "all" if pi is None else f"p{pi + 1}"
            vs = []
            for p in sorted(ps):
                v = prog.prob.add_variable(names("committed", o, p, tag), lowBound=0, upBound=k, cat=pulp.LpInteger)
                prog.committed_split[(o, p, pi)] = v
                vs.append(v)
            prog.add("committed_split", pulp.lpSum(vs) <= k, names("committed_split", o, tag))


def _committed_supply(prog: Program, o: str, p: str, seg: str):
    """Committed GPUs pool p may use at offer o in a segment when it borrows none from other pools."""
    k = _committed(prog, o, seg)
    if not k:
        return 0
    v = prog.committed_split.get((o, p, prog.segments[seg][2]))
    return k if v is None else v


def define_interactive_demand(prog: Program, names: Namer) -> None:
    """gpus[c,d,h] = G[c,d,h] · x[c] — replicas for the peak + spares + rollout, as constants.

    G = ceil(replicas × GPUs per replica), replicas = ceil(D / (γ·occupancy)) + spares +
    ceil(rollout_fraction × (base + spares)) (sizing.replicas). With API overflow each fleet
    ceiling is its own config (candidates.overflow_levels) whose base is capped at the ceiling
    and whose spilled tokens carry a constant API cost. Reservations work the same way.
    """
    for w in prog.plan.workloads:
        if w.kind not in ("interactive", "reserve"):
            continue
        for c in _gpu_cands(prog, w):
            x = prog.choice[c.key]
            var = x if isinstance(x, pulp.LpVariable) else None
            if c.offer in prog.offer_segments:  # per contract period: the same GPUs in each
                prog.gpu_demand[c.key] = {(s, h): (c.gpus[(d, h)], var) for s, d in _segs(prog, c.offer)
                                          for h in range(24) if c.gpus[(d, h)]}
            else:
                prog.gpu_demand[c.key] = {dh: (g, var) for dh, g in c.gpus.items() if g}


def define_batch_volume(prog: Program, names: Namer) -> None:
    """Batch workloads: per config c and day type d

        batch_volume:  Σ_{h∈window} 3600·γ_c·n[c,d,h] + Y[c,d] ≥ V · x[c]
        batch_api:     Y[c,d] ≤ max_share · V · x[c]
        gpus[c,d,h] = f_c · n[c,d,h] inside the window, 0 outside

    n counts replica-hours, not servers: a batch replica may run for part of an hour, so n is
    continuous, while the GPUs that carry it are still bought in whole nodes every hour. Spot
    capacity counts at (1 − interruption) in the supply constraints. With max_share 1 the
    API-only config sends all of V to the API at a constant cost (in the objective).
    """
    for w in _workloads(prog, kind="batch"):
        assert w.batch is not None
        vol = w.batch.output_tokens_per_day
        window = w.batch.hours()
        share = w.api.max_share if w.api is not None else 0.0
        cands = _gpu_cands(prog, w)
        segs = {c.key: {s for s, _d in _segs(prog, c.offer)} for c in cands}
        for d in dict.fromkeys(s for c in cands for s, _d in _segs(prog, c.offer)):  # segments (day types)
            sent = []
            for c in cands:
                if d not in segs[c.key]:
                    continue
                x = prog.choice[c.key]
                cid = _cid(prog, c)
                nmax = math.ceil(vol / (SECONDS_PER_HOUR * c.goodput) - 1e-9)
                gd = prog.gpu_demand.setdefault(c.key, {})
                produced = []
                for h in range(24):
                    if h not in window:
                        continue
                    # No n ≤ nmax·x row: replica-hours of a config that is not chosen count toward
                    # no volume and only cost GPUs, so the program leaves them at zero anyway.
                    n = prog.prob.add_variable(names("n", cid, d, h), lowBound=0, upBound=nmax)
                    prog.batch_replicas[(c.key, d, h)] = n
                    gd[(d, h)] = (c.gpu_fraction, n)
                    produced.append(SECONDS_PER_HOUR * c.goodput * n)
                if share > 0:
                    y = prog.prob.add_variable(names("api_volume", cid, d), lowBound=0, upBound=share * vol)
                    if isinstance(x, pulp.LpVariable):
                        prog.add("batch_api", y <= share * vol * x, names("batch_api", cid, d))
                    produced.append(y)
                    sent.append(y)
                prog.add("batch_volume", pulp.lpSum(produced) >= vol * x, names("batch_volume", cid, d))
            if sent:
                prog.api_volume[(w.name, d)] = pulp.lpSum(sent)


def _pool_demand(prog: Program) -> dict[OfferPoolHour, pulp.LpAffineExpression]:
    """GPU demand grouped by (offer, pool, day type, hour), built term by term (fast)."""
    terms: dict[OfferPoolHour, dict] = {}
    consts: dict[OfferPoolHour, float] = {}
    for w in prog.plan.workloads:
        for c in _gpu_cands(prog, w):
            for (d, h), (coef, var) in prog.gpu_demand.get(c.key, {}).items():
                k = (c.offer, c.pool, d, h)  # type: ignore[assignment]
                if var is None:
                    consts[k] = consts.get(k, 0.0) + coef
                    terms.setdefault(k, {})
                else:
                    t = terms.setdefault(k, {})
                    t[var] = t.get(var, 0.0) + coef
    return {k: pulp.LpAffineExpression(list(t.items()), constant=consts.get(k, 0.0)) for k, t in terms.items()}


def _demand_upper_bound(prog: Program) -> dict[OfferPoolHour, int]:
    """Most GPUs the pool could ask of the offer at an hour (for variable bounds)."""
    ub: dict[OfferPoolHour, int] = {}
    for w in prog.plan.workloads:
        best: dict[tuple[str, str, int], int] = {}
        for c in _gpu_cands(prog, w):
            for d, dtype in _segs(prog, c.offer):
                for h in range(24):
                    if c.gpus:
                        g = c.gpus[(dtype, h)]
                    elif c.kind == "batch":
                        assert w.batch is not None
                        if h not in w.batch.hours():
                            continue
                        n = math.ceil(w.batch.output_tokens_per_day / (SECONDS_PER_HOUR * c.goodput) - 1e-9)
                        g = math.ceil(n * c.gpu_fraction - 1e-9)
                    else:
                        continue
                    key = (c.offer, d, h)  # type: ignore[assignment]
                    best[key] = max(best.get(key, 0), g)
        for (o, d, h), g in best.items():
            k = (o, w.pool, d, h)
            ub[k] = ub.get(k, 0) + g
    return ub


def define_reservations(prog: Program, names: Namer) -> None:
    """reserved[o,k] (or [o,p,k] when pools do not share): whole nodes for the whole horizon."""
    plan = prog.plan
    pairs = sorted({(c.offer, c.pool) for c in prog.cands.all() if c.offer})
    prog.pool_offer_pairs = pairs  # type: ignore[assignment]
    shared = plan.policy.share_reserved_across_pools
    for o, p in pairs:
        offer = prog.offers[o]
        for k in allowed_tiers(plan, offer, p):
            if k not in RESERVED_TIERS:
                continue
            key = (o, None if shared else p, k)
            if key in prog.reserved:
                continue
            cap = None if prog.elastic else offer.available_gpus.get(k)  # type: ignore[call-overload]
            ub = cap // offer.gpus_per_node if cap is not None else None
            prog.reserved[key] = prog.prob.add_variable(
                names("reserved", o, p if not shared else "all", k), lowBound=0, upBound=ub, cat=pulp.LpInteger)


def define_supply(prog: Program, names: Namer) -> None:
    """supply[o,p,d,h]:  lent[o,p,d,h] + m_o·od[o,p,d,h] + (1−ι_o)·m_o·spot[o,p,d,h] ≥ Σ_{c at o, in p} gpus[c,d,h]
    sharing[o,d,h]:    Σ_p lent[o,p,d,h] ≤ m_o · Σ_k reserved[o,k]          (shared reserved capacity)
    (unshared: lent[o,p,d,h] is m_o · Σ_k reserved[o,p,k] itself.) m_o = GPUs per node.
    """
    plan = prog.plan
    shared = plan.policy.share_reserved_across_pools
    demand = _pool_demand(prog)
    ub = _demand_upper_bound(prog)
    pools_of_offer: dict[str, list[str]] = {}
    for o, p in prog.pool_offer_pairs:
        pools_of_offer.setdefault(o, []).append(p)
    for o, p, d, h in sorted(demand):
        offer = prog.offers[o]
        m = offer.gpus_per_node
        tiers = allowed_tiers(plan, offer, p)
        bound = ub.get((o, p, d, h), 0)
        supply = []
        res_nodes = [v for (oo, pp, k), v in prog.reserved.items()
                     if oo == o and (pp is None or pp == p) and k in tiers]
        if res_nodes or _committed(prog, o, d):
            if shared and len(pools_of_offer[o]) > 1:
                lent = prog.prob.add_variable(names("lent", o, p, d, h), lowBound=0, upBound=bound)
                prog.lent[(o, p, d, h)] = lent
                supply.append(lent)
            else:
                supply.append(m * pulp.lpSum(res_nodes) + _committed_supply(prog, o, p, d))
        if "on-demand" in tiers:
            nmax = math.ceil(bound / m)
            cap = None if prog.elastic else offer.available_gpus.get("on-demand")
            if cap is not None:
                nmax = min(nmax, cap // m)
            v = prog.prob.add_variable(names("od", o, p, d, h), lowBound=0, upBound=nmax, cat=pulp.LpInteger)
            prog.on_demand[(o, p, d, h)] = v
            supply.append(m * v)
        if "spot" in tiers:
            keep = 1.0 - offer.spot_interruption
            nmax = math.ceil(bound / (m * keep) - 1e-9)
            cap = None if prog.elastic else offer.available_gpus.get("spot")
            if cap is not None:
                nmax = min(nmax, cap // m)
            v = prog.prob.add_variable(names("spot", o, p, d, h), lowBound=0, upBound=nmax, cat=pulp.LpInteger)
            prog.spot[(o, p, d, h)] = v
            supply.append(keep * m * v)
        prog.add("supply", pulp.lpSum(supply) >= demand[(o, p, d, h)], names("supply", o, p, d, h))
    if shared:
        by_offer_hour: dict[tuple[str, str, int], list] = {}
        for (o, p, d, h), v in prog.lent.items():
            by_offer_hour.setdefault((o, d, h), []).append(v)
        for (o, d, h), lent in sorted(by_offer_hour.items()):
            m = prog.offers[o].gpus_per_node
            res = [v for (oo, _, _k), v in prog.reserved.items() if oo == o]
            prog.add("reserved_sharing", pulp.lpSum(lent) <= m * pulp.lpSum(res) + _committed(prog, o, d),
                     names("reserved_sharing", o, d, h))


def add_cuts(prog: Program) -> None:
    """Add the valid inequalities (once)."""
    if not prog.has_cuts:
        assert prog.names is not None
        define_node_rounding(prog, prog.names)
        prog.has_cuts = True


def define_node_rounding(prog: Program, names: Namer) -> None:
    """Valid inequalities: whole nodes carry at least each workload's own GPUs.

    node_rounding[w,o,d,h]:  R_o + od[o,p,d,h] + spot[o,p,d,h] ≥ Σ_{c∈C(w) at o} ceil(G[c,d,h] / m_o) · x[c]
    batch_rounding[w,o,d]:   Σ_{h∈window} (R_o + od + spot) ≥ Σ_{c at o} ceil(GPUh_min[c] / m_o) · x[c]

    Not new rules: whatever else shares them, the nodes w can draw on (its pool's on-demand and
    spot nodes, and the reserved nodes it may borrow from) hold w's own GPUs in whole nodes;
    GPUh_min is a batch day's GPU-hours less what the API may take. They cut off
    the fractional node counts that make up most of the LP relaxation's gap.
    """
    for w in prog.plan.workloads:
        by_offer: dict[str, list[Candidate]] = {}
        for c in _gpu_cands(prog, w):
            by_offer.setdefault(c.offer, []).append(c)  # type: ignore[arg-type]
        api_share = w.api.max_share if w.api is not None else 0.0
        for o in sorted(by_offer):
            m = prog.offers[o].gpus_per_node
            if m == 1:
                continue  # whole GPUs are whole nodes: nothing to round
            cs = by_offer[o]
            res = [v for (oo, pp, _k), v in prog.reserved.items() if oo == o and (pp is None or pp == w.pool)]

            def nodes_at(d: str, h: int) -> list:
                out = list(res)
                for table in (prog.on_demand, prog.spot):
                    v = table.get((o, w.pool, d, h))
                    if v is not None:
                        out.append(v)
                return out

            for d, dtype in _segs(prog, o):
                k = _committed(prog, o, d)  # GPUs under contract need no node
                if w.kind == "batch":
                    assert w.batch is not None
                    vol = (1 - api_share) * w.batch.output_tokens_per_day
                    held = k * len(w.batch.hours())
                    terms = [(math.ceil(max(0.0, vol * c.gpu_fraction / (SECONDS_PER_HOUR * c.goodput * m) - held / m)
                                        - 1e-9), prog.choice[c.key]) for c in cs]
                    if any(n for n, _ in terms):
                        lhs = [v for h in w.batch.hours() for v in nodes_at(d, h)]
                        prog.add("batch_rounding", pulp.lpSum(lhs) >= pulp.lpSum(n * x for n, x in terms),
                                 names("batch_rounding", _wid(prog, w), o, d))
                    continue
                for h in range(24):
                    terms = [(math.ceil(max(0, c.gpus[(dtype, h)] - k) / m - 1e-9), prog.choice[c.key]) for c in cs]
                    if not any(n for n, _ in terms):
                        continue
                    prog.add("node_rounding", pulp.lpSum(nodes_at(d, h)) >= pulp.lpSum(n * x for n, x in terms),
                             names("node_rounding", _wid(prog, w), o, d, h))


def define_caps(prog: Program, names: Namer) -> None:
    """cap[o,k]:  m_o · Σ reserved[o,·,k] ≤ available_gpus[o,k];
    cap[o,k,d,h]: m_o · Σ_p nodes_k[o,p,d,h] ≤ available_gpus[o,k] for on-demand and spot (GPUs in use at once)."""
    for o, offer in prog.offers.items():
        m = offer.gpus_per_node
        for k in RESERVED_TIERS:
            cap = offer.available_gpus.get(k)  # type: ignore[call-overload]
            vs = [v for (oo, _p, kk), v in prog.reserved.items() if oo == o and kk == k]
            if cap is not None and (len(vs) > 1 or prog.elastic and vs):
                prog.add("cap_reserved", m * pulp.lpSum(vs) <= cap + _excess(prog, names, o, k, None, None),
                         names("cap_reserved", o, k))
        for tier, table in (("on-demand", prog.on_demand), ("spot", prog.spot)):
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
            if cap is None:
                continue
            by_hour: dict[tuple[str, int], list] = {}
            for (oo, _p, d, h), v in table.items():
                if oo == o:
                    by_hour.setdefault((d, h), []).append(v)
            for (d, h), vs in sorted(by_hour.items()):
                if len(vs) > 1 or prog.elastic:  # else the variable's upper bound is the cap
                    family = f"cap_{tier.replace('-', '_')}"
                    prog.add(family, m * pulp.lpSum(vs) <= cap + _excess(prog, names, o, tier, d, h),
                             names(family, o, d, h))


def _excess(prog: Program, names: Namer, o: str, tier: str, d: str | None, h: int | None):
    """In diagnosis mode, GPUs beyond the cap (penalised); otherwise nothing."""
    if not prog.elastic:
        return 0
    v = prog.prob.add_variable(names("excess", o, tier, d or "all", "all" if h is None else h), lowBound=0)
    prog.cap_excess[(o, tier, d, h)] = v
    return v


def define_objective(prog: Program) -> None:
    """min  Σ m·reserved·price_k·24·H  +  Σ_d n_d Σ_h m·(od·price_od + spot·price_spot)  +  API tokens × price.

    d runs over segments (day types, or day types within a contract period), n_d their days.
    Contracts already signed are sunk: not here.
    """
    plan = prog.plan
    days = {s: n for s, (_d, n, _p) in prog.segments.items()}
    H = plan.horizon_days
    reserved = pulp.lpSum(prog.offers[o].gpus_per_node * v * prog.offers[o].price(k) * 24 * H  # type: ignore[operator]
                          for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0] + str(kv[0][1]) + kv[0][2]))
    od = pulp.lpSum(days[d] * prog.offers[o].gpus_per_node * prog.offers[o].price("on-demand") * v  # type: ignore[operator]
                    for (o, _p, d, _h), v in prog.on_demand.items())
    spot = pulp.lpSum(days[d] * prog.offers[o].gpus_per_node * prog.offers[o].price("spot") * v  # type: ignore[operator]
                      for (o, _p, d, _h), v in prog.spot.items())
    api_terms = [c.api_cost * prog.choice[c.key] for c in prog.cands.all() if c.api_cost]
    by_name = {w.name: w for w in plan.workloads}
    for (wn, d), y in prog.api_volume.items():
        api_terms.append(days[d] * api_price_per_output_token(by_name[wn]) * y)
    prog.cost_terms = {"reserved": reserved, "on_demand": od, "spot": spot, "api": pulp.lpSum(api_terms)}
    penalty = pulp.lpSum(_excess_penalty(prog) * v for v in prog.cap_excess.values())
    prog.prob += reserved + od + spot + pulp.lpSum(api_terms) + penalty


def _excess_penalty(prog: Program) -> float:
    """Cost of one GPU beyond a cap in diagnosis mode: more than a whole node of the dearest offer
    over the horizon, ten times over, so the program exceeds caps only where it must."""
    prices = [p for o in prog.offers.values() for t in o.price_per_gpu_hour if (p := o.price(t))]
    nodes = max((o.gpus_per_node for o in prog.offers.values()), default=1)
    return 10.0 * max(prices, default=1.0) * nodes * 24 * prog.plan.horizon_days + 1.0


def define_baseline(prog: Program, baseline: dict[str, tuple[str, float]]) -> None:
    """Stable re-plans (--baseline): keep a workload's last choice b_w unless moving saves more.

    objective += Σ_w τ · C_w · (1 − x[b_w])    τ = policy.change_threshold, C_w = w's cost in the last plan

    So a workload moves only when the plan saves more than τ·C_w by it. A last choice that is no
    longer a candidate (it no longer fits, or its offer is gone) costs nothing to leave. The
    penalty is not a cost: results.py recomputes costs from the solved purchases.
    """
    tau = prog.plan.policy.change_threshold
    terms = []
    for w in prog.plan.workloads:
        if w.name not in baseline:
            continue
        key, cost = baseline[w.name]
        x = prog.choice.get(key)
        if not isinstance(x, pulp.LpVariable) or tau * cost <= 0:
            continue  # gone, or the only config left: nothing to keep
        prog.baseline_penalty[w.name] = (key, tau * cost)
        terms.append(tau * cost * (1 - x))
    if terms:
        prog.prob.setObjective(prog.prob.objective + pulp.lpSum(terms))
