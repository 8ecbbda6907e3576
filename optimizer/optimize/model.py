"""The integer program, read like the math: its variables in one place, then one define_* per
constraint family, each stating its inequality.

Sets: workloads w (pool p(w)), candidate configs c ∈ C(w) on offer o(c), segments s (a day type,
or a day type within a contract period; n_s days), hours h, purchase tiers k. m_o = GPUs per node
of offer o. Every sizing number is a constant computed before this module runs.

Variables (define_variables):
    x[c] ∈ {0,1}          config c serves its workload (a constant 1 when it is the only one)
    n[c,s,h] ≥ 0          replica-hours of batch config c (continuous: a replica may run part of an hour)
    y[c,s] ∈ [0, share]   share of batch config c's daily tokens it sends to the API
    a[o,p,π] ∈ ℤ≥0        committed GPUs pool p holds at offer o in contract period π (pools not sharing)
    R[o,(p),k] ∈ ℤ≥0      reserved nodes for the whole horizon (per pool when pools do not share);
                          k = buy: servers bought, serving from their delivery (one level, all pools)
    L[o,p,s,h] ≥ 0        reserved and committed GPUs lent to pool p (pools sharing); at servers of your
                          own (owned, bought), the GPUs of them pool p runs (every pool shares them)
    Q[o] ∈ ℤ≥0            rack positions bought servers at o take (facility.racks)
    D[o,p,s,h] ∈ ℤ≥0      on-demand nodes
    S[o,p,s,h] ∈ ℤ≥0      spot nodes
    e[o,k,s,h] ≥ 0        diagnosis only: GPUs beyond a cap (penalised)
"""

from __future__ import annotations

import math
import re
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.build import allowed_tiers
from optimizer.candidates.overflow import api_price_per_output_token, without_ceiling
from optimizer.candidates.types import Candidate, CandidateSet, DayHour
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.scenarios import ScenarioDays, goodput_factor, scenario_days
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.optimize.calendar import Segments
from optimizer.optimize.solution import OfferPoolHour, Solution
from optimizer.physics.batch import batch_replica_hours
from optimizer.processes import collection_paused
from optimizer.units import SECONDS_PER_HOUR, ceil_tol
from optimizer.vocab import HOURLY_TIERS, RESERVED_TIERS


class Namer:
    """Deterministic, PuLP-safe, collision-checked names (PuLP rewrites '-', '+', ' ' and more to '_').

    Workloads appear by index and pools, offers and day types are ids (lower-case, hyphenated), so
    two different keys never map to one name; a collision is a bug, reported as one."""

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


Term = tuple[float, "pulp.LpVariable | None"]
"""A config's GPUs at an hour: coefficient × variable, or the coefficient alone (a sole config)."""


@dataclass
class Program:
    """The built PuLP problem and its variables, by family."""

    prob: pulp.LpProblem
    plan: Plan
    cands: CandidateSet
    offers: dict[str, Offer]
    segments: Segments
    workload_index: dict[str, int]
    names: Namer = field(default_factory=Namer)
    elastic: bool = False
    """Diagnosis mode: caps may be exceeded at a large penalty, so the excess shows what cannot be met."""

    # variables
    choice: dict[str, pulp.LpVariable | int] = field(default_factory=dict)
    """x[c]: candidate key → binary (or 1 when the workload has one candidate)."""
    batch_replicas: dict[tuple[str, str, int], pulp.LpVariable] = field(default_factory=dict)
    """n[c,s,h]."""
    batch_api: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    """y[c,s]."""
    committed_split: dict[tuple[str, str, int | None], pulp.LpVariable] = field(default_factory=dict)
    """a[o,p,π]."""
    reserved: dict[tuple[str, str | None, str], pulp.LpVariable] = field(default_factory=dict)
    """R[o,p,k]: (offer, pool or None when shared, tier)."""
    lent: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    on_demand: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    spot: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    cap_excess: dict[tuple[str, str, str | None, int | None], pulp.LpVariable] = field(default_factory=dict)
    """e[o,k,s,h] (diagnosis mode)."""
    racks: dict[str, pulp.LpVariable] = field(default_factory=dict)
    """Q[o]."""
    own: dict[str, ownership.OwnTerms] = field(default_factory=dict)
    """Offers of your own hardware (bought or owned) → their cost terms."""

    # expressions over the variables
    gpu_demand: dict[str, dict[DayHour, Term]] = field(default_factory=dict)
    """Candidate key → (segment, hour) → its GPUs as coefficient × variable (x[c] or n[c,s,h])."""
    pool_demand: dict[OfferPoolHour, pulp.LpAffineExpression] = field(default_factory=dict)
    """Σ GPUs the configs of a pool use at an offer and hour."""
    api_volume: dict[tuple[str, str], pulp.LpAffineExpression] = field(default_factory=dict)
    """(workload, segment) → Σ_c y[c,s]: batch output tokens a day sent to the API."""
    pool_offer_pairs: list[tuple[str, str]] = field(default_factory=list)
    cost_terms: dict[str, pulp.LpAffineExpression] = field(default_factory=dict)
    constraint_families: dict[str, list[str]] = field(default_factory=dict)
    baseline_penalty: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Workload → (last plan's candidate key, switching cost) from --baseline (define_baseline)."""
    candidate_ids: dict[str, str] = field(default_factory=dict)
    """Candidate key → its short id in the program's names (_cid)."""
    has_cuts: bool = False
    """Every valid inequality is in (add_cuts)."""
    cut_rows: set[tuple[str, str, str, int | None]] = field(default_factory=set)
    """(workload, offer, segment, hour) of the valid inequalities in the program (hour None: a batch day's)."""
    pooled_at: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    """The configs (workload, key) define_pooled_rounding has added rows at, in order."""
    private: dict[str, float] = field(default_factory=dict)
    """Configs at an offer no other workload can use → what that offer costs serving them alone, solved
    apart (define_private): in the program each is its x[c] at that cost, with no capacity of its own."""

    def add(self, family: str, constraint: pulp.LpConstraint, name: str) -> None:
        self.prob += constraint, name
        self.constraint_families.setdefault(family, []).append(name)

    def fix_choice(self, workload: str, key: str) -> None:
        """Force a workload onto one config (explain's alternatives, a baseline kept)."""
        x = self.choice[key]
        if isinstance(x, pulp.LpVariable):
            self.add("fixed_choice", x == 1, f"fixed_choice_w{self.workload_index[workload]}")

    @contextmanager
    def choices_fixed(self, keys: dict[str, str | frozenset[str]]) -> Iterator[None]:
        """Fix every workload in `keys` to that config — or, given a set of configs, to one of them, the
        program choosing — by bounds, so nothing is added; then undo."""
        saved = []
        for w, key in keys.items():
            allowed = {key} if isinstance(key, str) else key
            for c in self.cands.by_workload[w]:
                x = self.choice[c.key]
                if isinstance(x, pulp.LpVariable):
                    saved.append((x, x.lowBound, x.upBound))
                    if c.key not in allowed:
                        x.lowBound = x.upBound = 0
                    elif len(allowed) == 1:
                        x.lowBound = x.upBound = 1
                    else:
                        x.lowBound, x.upBound = 0, 1
        try:
            yield
        finally:
            for x, lo, hi in saved:
                x.lowBound, x.upBound = lo, hi

    def largest_choices(self) -> dict[str, tuple[float, str]]:
        """Each workload with configs to choose from: its largest x in the current values and whose it is
        (ties: the first key) — the relaxation's most-chosen config, or an integer plan's config."""
        out: dict[str, tuple[float, str]] = {}
        for w in self.plan.workloads:
            xs = [(round(x.varValue or 0.0, 9), c.key) for c in self.cands.by_workload[w.name]
                  if isinstance(x := self.choice[c.key], pulp.LpVariable)]
            if xs:
                out[w.name] = max(xs, key=lambda vk: (vk[0], [-ord(ch) for ch in vk[1]]))
        return out

    def choices_fixed_to_relaxation(self) -> AbstractContextManager[None]:
        """Fix every choice to the config the solved relaxation chose most (ties: the first key), then undo."""
        return self.choices_fixed({w: key for w, (_value, key) in self.largest_choices().items()})

    @contextmanager
    def first_stage_fixed(self) -> Iterator[None]:
        """Hold every decision made once for the horizon at its solved value (configs, reserved and bought
        levels, committed split, rack positions) by bounds, then undo: what is left is hour by hour."""
        first = [v for v in (*self.choice.values(), *self.reserved.values(), *self.committed_split.values(),
                             *self.racks.values()) if isinstance(v, pulp.LpVariable)]
        saved = [(v, v.lowBound, v.upBound) for v in first]
        for v in first:
            x = v.varValue or 0.0
            v.lowBound = v.upBound = round(x) if v.cat == pulp.LpInteger else x
        try:
            yield
        finally:
            for v, lo, hi in saved:
                v.lowBound, v.upBound = lo, hi

    @contextmanager
    def hours_relaxed(self) -> Iterator[None]:
        """Take the hour-by-hour node counts (on-demand D, spot S) as continuous, then undo: a relaxation of
        the program in which only the decisions made once for the horizon are whole — configs, reserved and
        bought levels, committed splits, rack positions."""
        relaxed = [v for table in (self.on_demand, self.spot) for v in table.values()
                   if isinstance(v, pulp.LpVariable) and v.cat == pulp.LpInteger]
        for v in relaxed:
            v.cat = pulp.LpContinuous
        try:
            yield
        finally:
            for v in relaxed:
                v.cat = pulp.LpInteger

    def integer_variables(self) -> list[pulp.LpVariable]:
        """Every whole-number decision: configs, committed splits, reserved and bought nodes, on-demand and
        spot nodes, racks (read from the program's own tables: PuLP's variables() walks every row)."""
        return [v for table in (self.choice, self.committed_split, self.reserved, self.on_demand, self.spot,
                                self.racks) for v in table.values() if isinstance(v, pulp.LpVariable)]

    def values(self) -> dict[str, float | None]:
        """The solved value of every variable, by name (a warm start, or a plan to go back to)."""
        return {v.name: v.varValue for v in self.prob.variables()}

    def restore(self, values: dict[str, float | None]) -> None:
        for v in self.prob.variables():
            v.varValue = values.get(v.name)

    def solution(self) -> Solution:
        """Read every decided value out of the solver's variables (the only place that does)."""
        chosen = {}
        for w in self.plan.workloads:
            cs = self.cands.by_workload[w.name]
            chosen[w.name] = max(cs, key=lambda c: (_value(self.choice[c.key]), c.key == cs[0].key)).key
        gpus = {key: {dh: coef * (var.varValue or 0.0) if var is not None else coef
                      for dh, (coef, var) in self.gpu_demand.get(key, {}).items()}
                for key in chosen.values()}
        return Solution(
            segments=self.segments, chosen=chosen, gpus=gpus,
            reserved_nodes={k: _value(v) for k, v in self.reserved.items()},
            on_demand_nodes={k: _value(v) for k, v in self.on_demand.items()},
            spot_nodes={k: _value(v) for k, v in self.spot.items()},
            lent={k: _value(v) for k, v in self.lent.items()},
            committed_split={k: _value(v) for k, v in self.committed_split.items()},
            batch_replica_hours={k: _value(v) for k, v in self.batch_replicas.items()},
            api_volume={k: _value(v) for k, v in self.api_volume.items()},
            cap_excess={k: _value(v) for k, v in self.cap_excess.items()},
            switching_cost={w: cost for w, (_key, cost) in self.baseline_penalty.items()})


REDUCED_COST_TOL = 1e-7
"""Reduced costs this small are the solver's tolerance, not a price (model.reduced_costs)."""


def reduced_costs(variables: Iterable[pulp.LpVariable]) -> dict[pulp.LpVariable, float]:
    """The solved relaxation's reduced cost of each of these integer variables that has a nonzero one
    (the solver leaves it in `dj`): what a unit of it away from the bound it sits at adds, at least, to
    the cost of any plan (bounds_within)."""
    return {v: v.dj for v in variables
            if v.cat == pulp.LpInteger and v.dj is not None and abs(v.dj) > REDUCED_COST_TOL}


@contextmanager
def bounds_within(prob: pulp.LpProblem, reduced: dict[pulp.LpVariable, float], room: float) -> Iterator[int]:
    """Tighten each integer variable's bounds to what a plan costing at most z + `room` allows, then undo
    (yields how many were tightened). A relaxation with optimum z and reduced costs d (its rows and
    bounds those of the program, or fewer: the program's valid inequalities added since only shrink it)
    gives every plan

        cost ≥ z + d_j · (x_j − l_j)  for d_j > 0 (x_j sits at its lower bound l_j),
        cost ≥ z + d_j · (x_j − u_j)  for d_j < 0 (at its upper bound u_j),

    so a plan within z + room has x_j ≤ l_j + ⌊room / d_j⌋, or x_j ≥ u_j − ⌊room / −d_j⌋. With an
    incumbent's cost as z + room, no plan that costs as little is cut off, and the solver's bound within
    these bounds is still a bound on every plan. The room is widened by a millionth against the solver's
    tolerances. Why: HiGHS's reduced-cost fixing keeps up to 1,024 lurking bounds per integer variable
    and walks them at every root cut round; on node counts of thousands (a batch day done in one hour on
    the slowest accelerator) that walk, not the search, was most of its time."""
    if prob.sense != pulp.LpMinimize or room < 0:
        yield 0
        return
    room = room * (1 + 1e-6) + 1e-6
    saved = []
    for v, d in reduced.items():
        lo, hi = v.lowBound, v.upBound
        if d > 0 and lo is not None:
            new = lo + math.floor(room / d + 1e-9)
            if hi is None or new < hi:
                saved.append((v, lo, hi))
                v.upBound = new
        elif d < 0 and hi is not None:
            new = hi - math.floor(room / -d + 1e-9)
            if lo is None or new > lo:
                saved.append((v, lo, hi))
                v.lowBound = new
    try:
        yield len(saved)
    finally:
        for v, lo, hi in saved:
            v.lowBound, v.upBound = lo, hi


def _value(v) -> float:
    """A variable's or expression's solved value (0 when the solver left it unset); a constant as is."""
    if isinstance(v, (int, float)):
        return float(v)
    x = v.value()
    return float(x) if x is not None else 0.0


def build_model(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, *, elastic: bool = False,
                cuts: bool = True, baseline: dict[str, tuple[str, float]] | None = None,
                private: dict[str, float] | None = None) -> Program:
    """min horizon cost  s.t. choice, committed split, batch volume, supply, sharing, caps [, cuts].

    `cuts` adds the valid inequalities (define_node_rounding) now; without, separate_cuts() adds
    those a solved relaxation violates and add_cuts() the rest (all of them make the relaxation much
    slower to solve). `baseline` maps a workload to its last plan's candidate key and the cost of
    moving it (define_baseline); `private` the configs taken at a cost solved apart (define_private).
    """
    with collection_paused():
        return _built(loaded, cands, segments, elastic=elastic, cuts=cuts, baseline=baseline, private=private)


def _built(loaded: LoadedPlan, cands: CandidateSet, segments: Segments, *, elastic: bool, cuts: bool,
           baseline: dict[str, tuple[str, float]] | None, private: dict[str, float] | None) -> Program:
    plan = loaded.plan
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    prog = Program(pulp.LpProblem("planopt", pulp.LpMinimize), plan, cands, offers, segments,
                   {w.name: i for i, w in enumerate(plan.workloads)}, elastic=elastic,
                   own=ownership.terms(plan, loaded.catalog.offers), private=dict(private or {}))
    define_variables(prog)
    define_choice(prog)
    define_committed_split(prog)
    define_batch_volume(prog)
    define_supply(prog)
    define_reserved_sharing(prog)
    define_caps(prog)
    define_facility(prog)
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
    """w's configs that draw on an offer's capacity in the program (not the API, not a private one)."""
    return [c for c in prog.cands.by_workload[w.name] if c.kind != "api" and c.key not in prog.private]


def _wid(prog: Program, w: Workload | str) -> str:
    name = w if isinstance(w, str) else w.name
    return f"w{prog.workload_index[name]}"


def _cid(prog: Program, c: Candidate) -> str:
    """Short, safe id of a candidate: workload index + its position among that workload's candidates."""
    if not prog.candidate_ids:
        prog.candidate_ids.update((cand.key, f"{_wid(prog, w)}_c{i}") for w, cs in prog.cands.by_workload.items()
                                  for i, cand in enumerate(cs))
    return prog.candidate_ids[c.key]


def _committed_supply(prog: Program, o: str, p: str, seg: str):
    """Committed GPUs pool p may use at offer o in a segment when it borrows none from other pools."""
    k = prog.segments.committed_at(o, seg)
    if not k:
        return 0
    v = prog.committed_split.get((o, p, prog.segments.period_of(seg)))
    return k if v is None else v


def _batch_volume(w: Workload) -> float:
    assert w.batch is not None
    return w.batch.output_tokens_per_day


def _batch_goodput(prog: Program, c: Candidate, day_type: str) -> float:
    """A batch config's goodput on a day type (inputs.scenarios.goodput_factor; interactive configs carry it
    in their hourly GPUs)."""
    return c.goodput * goodput_factor(prog.plan, c.goodput_source, day_type)


def _api_share(w: Workload) -> float:
    return w.api.max_share if w.api is not None else 0.0


def _service_days(prog: Program, o: str) -> float:
    """Plan days bought servers at o serve in the horizon (from their delivery on)."""
    days = prog.segments.days()
    return sum(days[s] for s, _d in prog.segments.of_offer(o) if prog.segments.delivered(o, s))


def _reserved_nodes(prog: Program, o: str, p: str, tiers: list[str] | None = None) -> list[pulp.LpVariable]:
    """R[o,·,k] pool p may draw on: the shared level, or its own (tiers: those its pool may buy)."""
    return [v for (oo, pp, k), v in prog.reserved.items()
            if oo == o and (pp is None or pp == p) and (tiers is None or k in tiers)]


# ---------------------------------------------------------------------------------------------
# variables

def define_variables(prog: Program) -> None:
    """Every variable of the program (see the module docstring), with its bounds."""
    names, plan = prog.names, prog.plan
    # x[c]: one binary per config of a workload that has more than one
    for w in plan.workloads:
        cs = prog.cands.by_workload[w.name]
        if len(cs) == 1:
            prog.choice[cs[0].key] = 1
            continue
        for c in cs:
            prog.choice[c.key] = prog.prob.add_variable(names("x", _cid(prog, c)), cat=pulp.LpBinary)

    # a[o,p,π]: committed GPUs split among pools that do not share reservations
    if plan.policy.share_reserved_across_pools is False and prog.segments.calendar is not None:
        cal = prog.segments.calendar
        held = {o for o, _s in prog.segments.committed}
        pools: dict[str, set[str]] = {}
        for c in prog.cands.all():
            if c.offer in held and c.offer not in prog.own:  # owned servers are shared (L)
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
        for c in _gpu_cands(prog, w):
            x = prog.choice[c.key]
            var = x if isinstance(x, pulp.LpVariable) else None
            if c.offer in prog.segments.offer_segments:  # per contract period: the same GPUs in each
                prog.gpu_demand[c.key] = {(s, h): (c.gpus[(d, h)], var) for s, d in prog.segments.of_offer(c.offer)
                                          for h in range(24) if c.gpus[(d, h)]}
            else:
                prog.gpu_demand[c.key] = {dh: (g, var) for dh, g in c.gpus.items() if g}

    # n[c,s,h] and y[c,s]: batch replica-hours inside the window, and tokens sent to the API
    for w in _workloads(prog, "batch"):
        assert w.batch is not None
        vol, share, window = _batch_volume(w), _api_share(w), set(w.batch.hours())
        for c in _gpu_cands(prog, w):
            cid = _cid(prog, c)
            # No n ≤ nmax·x row: replica-hours of a config that is not chosen count toward no volume
            # and only cost GPUs, so the program leaves them at zero anyway.
            gd = prog.gpu_demand.setdefault(c.key, {})
            for s, d in prog.segments.of_offer(c.offer):
                nmax = batch_replica_hours(vol, _batch_goodput(prog, c, d))
                for h in range(24):
                    if h in window:
                        n = prog.prob.add_variable(names("n", cid, s, h), lowBound=0, upBound=nmax)
                        prog.batch_replicas[(c.key, s, h)] = n
                        gd[(s, h)] = (c.gpu_fraction, n)
                if share > 0:  # as a share of the day's volume: rows of order 1, whatever the tokens
                    prog.batch_api[(c.key, s)] = prog.prob.add_variable(
                        names("api_volume", cid, s), lowBound=0, upBound=share)

    prog.pool_demand = _pool_demand(prog)
    prog.pool_offer_pairs = sorted({(c.offer, c.pool) for c in prog.cands.all()  # type: ignore[misc]
                                    if c.offer and c.key not in prog.private})

    # R[o,(p),k]: reserved nodes, one level for the horizon (a cap bounds them)
    shared = plan.policy.share_reserved_across_pools
    for o, p in prog.pool_offer_pairs:
        offer = prog.offers[o]
        for k in allowed_tiers(plan, offer, p):
            key = (o, None if shared or k == "buy" else p, k)
            if k not in RESERVED_TIERS + ("buy",) or key in prog.reserved:
                continue
            if k == "buy" and not _service_days(prog, o):
                continue  # delivered after the horizon: nothing it could serve
            cap = None if prog.elastic else offer.available_gpus.get(k)  # type: ignore[call-overload]
            prog.reserved[key] = prog.prob.add_variable(
                names("reserved", o, p if key[1] is not None else "all", k), lowBound=0,
                upBound=cap // offer.gpus_per_node if cap is not None else None, cat=pulp.LpInteger)

    # L, D, S per (offer, pool, segment, hour) with demand; bounded by the most the pool could ask
    ub = _demand_upper_bound(prog)
    pools_of_offer: dict[str, list[str]] = {}
    for o, p in prog.pool_offer_pairs:
        pools_of_offer.setdefault(o, []).append(p)
    for o, p, s, h in sorted(prog.pool_demand):
        offer = prog.offers[o]
        m = offer.gpus_per_node
        tiers = allowed_tiers(plan, offer, p)
        bound = ub.get((o, p, s, h), 0)
        held = _reserved_nodes(prog, o, p, tiers) or prog.segments.committed_at(o, s)
        if held and (shared and len(pools_of_offer[o]) > 1 or o in prog.own):
            prog.lent[(o, p, s, h)] = prog.prob.add_variable(names("lent", o, p, s, h), lowBound=0, upBound=bound)
        if "on-demand" in tiers:
            nmax = math.ceil(bound / m)
            cap = None if prog.elastic else offer.available_gpus.get("on-demand")
            if cap is not None:
                nmax = min(nmax, cap // m)
            prog.on_demand[(o, p, s, h)] = prog.prob.add_variable(
                names("od", o, p, s, h), lowBound=0, upBound=nmax, cat=pulp.LpInteger)
        if "spot" in tiers:
            keep = 1.0 - offer.spot_interruption
            nmax = ceil_tol(bound / (m * keep))
            cap = None if prog.elastic else offer.available_gpus.get("spot")
            if cap is not None:
                nmax = min(nmax, cap // m)
            prog.spot[(o, p, s, h)] = prog.prob.add_variable(
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
        # GPUs held (owned servers, signed contracts) are caps too: what the program may not exceed
        for o, _p, s, h in sorted(prog.pool_demand):
            tier = _held_tier(prog, o, s)
            if tier is not None and (o, tier, s, h) not in prog.cap_excess:
                prog.cap_excess[(o, tier, s, h)] = prog.prob.add_variable(names("excess", o, tier, s, h), lowBound=0)

    # Q[o]: rack positions of servers bought at o, when the facility counts racks and a rack holds several
    if plan.facility.racks is not None:
        for (o, _p, k), _v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0]):
            if k == "buy" and prog.own[o].nodes_per_rack > 1:
                prog.racks[o] = prog.prob.add_variable(names("racks", o), lowBound=0, cat=pulp.LpInteger)


def _pool_demand(prog: Program) -> dict[OfferPoolHour, pulp.LpAffineExpression]:
    """GPU demand grouped by (offer, pool, segment, hour), built term by term (fast)."""
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
    """Most GPUs the pool could ask of the offer at an hour (for variable bounds): per workload, its
    largest config at the offer and hour, summed over the pool's workloads."""
    ub: dict[OfferPoolHour, int] = {}
    for w in prog.plan.workloads:
        hours = w.batch.hours() if w.kind == "batch" and w.batch is not None else []
        # the largest GPUs any config asks at (offer, day type), hour by hour
        most: dict[tuple[str, str], list[int]] = {}
        for c in _gpu_cands(prog, w):
            for dtype in dict.fromkeys(d for _s, d in prog.segments.of_offer(c.offer)):
                if c.gpus:
                    row = [c.gpus[(dtype, h)] for h in range(24)]
                elif c.kind == "batch":
                    g = ceil_tol(batch_replica_hours(_batch_volume(w), _batch_goodput(prog, c, dtype)) * c.gpu_fraction)
                    row = [g if h in hours else -1 for h in range(24)]  # -1: outside the window, no demand
                else:
                    continue
                key = (c.offer, dtype)  # type: ignore[assignment]
                held = most.get(key)
                most[key] = row if held is None else list(map(max, held, row))
        for (o, dtype), row in most.items():
            for s, d in prog.segments.of_offer(o):
                if d != dtype:
                    continue
                for h, g in enumerate(row):
                    if g >= 0:
                        k = (o, w.pool, s, h)
                        ub[k] = ub.get(k, 0) + g
    return ub


# ---------------------------------------------------------------------------------------------
# constraint families

def define_choice(prog: Program) -> None:
    """choice[w]:  Σ_{c∈C(w)} x[c] = 1 — one config per workload."""
    for w in prog.plan.workloads:
        xs = [x for c in prog.cands.by_workload[w.name] if isinstance(x := prog.choice[c.key], pulp.LpVariable)]
        if xs:
            prog.add("choice", pulp.lpSum(xs) == 1, prog.names("choice", _wid(prog, w)))


def define_committed_split(prog: Program) -> None:
    """committed_split[o,π]:  Σ_p a[o,p,π] ≤ K[o,π] — pools that do not share reservations split the
    GPUs already under contract (K, plan `commitments`, whole GPUs) per contract period π.

    Contracts signed before the plan are used first and their cost is sunk (not in the objective).
    When pools share reservations, K joins the reserved GPUs of the sharing row instead.
    """
    by_level: dict[tuple[str, int | None], list[pulp.LpVariable]] = {}
    for (o, _p, pi), v in prog.committed_split.items():
        by_level.setdefault((o, pi), []).append(v)
    for (o, pi), vs in by_level.items():
        k = vs[0].upBound
        tag = "all" if pi is None else f"p{pi + 1}"
        prog.add("committed_split", pulp.lpSum(vs) <= k, prog.names("committed_split", o, tag))


def define_batch_volume(prog: Program) -> None:
    """Batch workloads, per config c and segment s (rows divided by the day's volume V, so every
    coefficient is of order 1; y is the share of V sent to the API):

        batch_volume:  Σ_{h∈window} 3600·γ_c·n[c,s,h] / V + y[c,s] ≥ x[c]
        batch_api:     y[c,s] ≤ max_share · x[c]

    (γ_c: the config's goodput, × the segment's scenario goodput multiplier when estimated) and the GPUs a batch config uses are f_c · n[c,s,h] inside the window, 0 outside. Spot counts
    at (1 − interruption) in the supply rows. With max_share 1 the API-only config sends all of V
    to the API at a constant cost (in the objective).
    """
    for w in _workloads(prog, "batch"):
        vol, cands = _batch_volume(w), _gpu_cands(prog, w)
        for s in dict.fromkeys(s for c in cands for s, _d in prog.segments.of_offer(c.offer)):
            sent = []
            for c in cands:
                day = dict(prog.segments.of_offer(c.offer)).get(s)
                if day is None:
                    continue
                x, cid = prog.choice[c.key], _cid(prog, c)
                rate = _batch_goodput(prog, c, day)
                per_hour = SECONDS_PER_HOUR * rate / vol
                produced: dict = {n: per_hour for h in range(24)
                                  if (n := prog.batch_replicas.get((c.key, s, h))) is not None}
                y = prog.batch_api.get((c.key, s))
                if y is not None:
                    if isinstance(x, pulp.LpVariable):
                        prog.add("batch_api", y <= _api_share(w) * x, prog.names("batch_api", cid, s))
                    produced[y] = 1
                    sent.append(vol * y)
                prog.add("batch_volume", pulp.LpAffineExpression(produced) >= x, prog.names("batch_volume", cid, s))
            if sent:
                prog.api_volume[(w.name, s)] = pulp.lpSum(sent)


def _held_tier(prog: Program, o: str, s: str) -> str | None:
    """"owned" or "signed" when GPUs held at the offer during the segment bound what it supplies."""
    if not prog.segments.committed_at(o, s):
        return None
    own = prog.own.get(o)
    return "owned" if own is not None and own.kind == "owned" else "signed"


def _held_excess(prog: Program, o: str, s: str, h: int):
    """Diagnosis only: the GPUs beyond those held at the offer in that hour (0 outside diagnosis)."""
    tier = _held_tier(prog, o, s)
    return prog.cap_excess.get((o, tier, s, h), 0) if tier is not None else 0


def define_supply(prog: Program) -> None:
    """supply[o,p,s,h]:  L[o,p,s,h] + m_o·D[o,p,s,h] + (1−ι_o)·m_o·S[o,p,s,h] ≥ Σ_{c at o, in p} gpus[c,s,h]

    When the pool does not borrow (pools do not share, or it is the offer's only pool), L is its own
    reserved and committed GPUs: m_o·Σ_k R[o,p,k] + its committed GPUs.
    """
    plan = prog.plan
    for o, p, s, h in sorted(prog.pool_demand):
        offer = prog.offers[o]
        m = offer.gpus_per_node
        tiers = allowed_tiers(plan, offer, p)
        supply = []
        lent = prog.lent.get((o, p, s, h))
        if lent is not None:
            supply.append(lent)
        else:
            res_nodes = _reserved_nodes(prog, o, p, tiers)
            if res_nodes or prog.segments.committed_at(o, s):
                supply.append(m * pulp.lpSum(res_nodes) + _committed_supply(prog, o, p, s)
                              + _held_excess(prog, o, s, h))
        if (o, p, s, h) in prog.on_demand:
            supply.append(m * prog.on_demand[(o, p, s, h)])
        if (o, p, s, h) in prog.spot:
            supply.append((1.0 - offer.spot_interruption) * m * prog.spot[(o, p, s, h)])
        prog.add("supply", _at_least(pulp.lpSum(supply), prog.pool_demand[(o, p, s, h)]),
                 prog.names("supply", o, p, s, h))


def _at_least(lhs: pulp.LpAffineExpression, rhs: pulp.LpAffineExpression) -> pulp.LpConstraint:
    """lhs ≥ rhs, the row PuLP's `lhs >= rhs` makes (lhs's terms, then rhs's negated, in that order), built
    without copying rhs term by term: the supply rows' demand sums hold every config of a pool."""
    terms = dict(lhs.items())
    for v, coef in rhs.items():
        terms[v] = terms.get(v, 0) - coef
    return pulp.LpConstraint(pulp.LpAffineExpression(terms, constant=lhs.constant - rhs.constant),
                             pulp.LpConstraintGE)


def define_reserved_sharing(prog: Program) -> None:
    """reserved_sharing[o,s,h]:  Σ_p L[o,p,s,h] ≤ m_o · Σ_k R[o,k] + K[o,s] — pools share the offer's
    reserved nodes and committed GPUs hour by hour (policy.share_reserved_across_pools). At servers of
    your own, K is the GPUs owned and R[o,buy] counts only from the servers' delivery (segments after it).
    In diagnosis, + e[o,s,h]: the GPUs beyond those held (where no pool borrows, in the supply row)."""
    by_offer_hour: dict[tuple[str, str, int], list] = {}
    for (o, p, s, h), v in prog.lent.items():
        by_offer_hour.setdefault((o, s, h), []).append(v)
    for (o, s, h), lent in sorted(by_offer_hour.items()):
        m = prog.offers[o].gpus_per_node
        res = [v for (oo, _, k), v in prog.reserved.items() if oo == o and (k != "buy" or prog.segments.delivered(o, s))]
        prog.add("reserved_sharing", pulp.lpSum(lent) <= m * pulp.lpSum(res) + prog.segments.committed_at(o, s)
                 + _held_excess(prog, o, s, h),
                 prog.names("reserved_sharing", o, s, h))


def define_caps(prog: Program) -> None:
    """cap_reserved[o,k]:     m_o · Σ_p R[o,p,k] ≤ available_gpus[o,k] (+ e in diagnosis);
    cap_on_demand[o,s,h]:   m_o · Σ_p D[o,p,s,h] ≤ available_gpus[o,on-demand] (GPUs in use at once);
    cap_spot[o,s,h]:        m_o · Σ_p S[o,p,s,h] ≤ available_gpus[o,spot].
    A cap on a single variable is its upper bound instead (outside diagnosis)."""
    for o, offer in prog.offers.items():
        m = offer.gpus_per_node
        for k in RESERVED_TIERS:
            cap = offer.available_gpus.get(k)  # type: ignore[call-overload]
            vs = [v for (oo, _p, kk), v in prog.reserved.items() if oo == o and kk == k]
            if cap is not None and (len(vs) > 1 or prog.elastic and vs):
                prog.add("cap_reserved", m * pulp.lpSum(vs) <= cap + prog.cap_excess.get((o, k, None, None), 0),
                         prog.names("cap_reserved", o, k))
        for tier, table in zip(HOURLY_TIERS, (prog.on_demand, prog.spot)):
            cap = offer.available_gpus.get(tier)  # type: ignore[call-overload]
            if cap is None:
                continue
            by_hour: dict[tuple[str, int], list] = {}
            for (oo, _p, s, h), v in table.items():
                if oo == o:
                    by_hour.setdefault((s, h), []).append(v)
            for (s, h), vs in sorted(by_hour.items()):
                if len(vs) > 1 or prog.elastic:
                    family = f"cap_{tier.replace('-', '_')}"
                    prog.add(family, m * pulp.lpSum(vs) <= cap + prog.cap_excess.get((o, tier, s, h), 0),
                             prog.names(family, o, s, h))


def define_facility(prog: Program) -> None:
    """The facility's limits on servers of your own (owned ones are constants, bought ones R[o,buy]):

        facility_power:  Σ_o kW_o · R[o,buy] ≤ power_kw − Σ owned kW          (IT power at load)
        facility_racks:  Σ_o Q[o] ≤ racks − Σ owned rack positions,  Q[o] ≥ R[o,buy] ÷ per_rack_o
                         (a rack position holds servers of one system; a rack-scale system is one)

    Bought servers count from the horizon's start: the limit holds at its end, when they all stand.
    Owned servers already beyond a limit leave nothing to buy under it (not an infeasible plan).
    In diagnosis, + e[facility, limit] on the right of each.
    """
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


def add_cuts(prog: Program) -> None:
    """Add every valid inequality not yet in (once): the full program has them all."""
    if not prog.has_cuts:
        define_node_rounding(prog)
        prog.has_cuts = True


def cut_rows_left(prog: Program) -> int:
    """At most how many rows add_cuts would still add: one per workload, offer sold in nodes of several
    GPUs, segment and hour (two per batch day), less those separated already."""
    if prog.has_cuts:
        return 0
    count = 0
    for w in prog.plan.workloads:
        for o in {c.offer for c in _gpu_cands(prog, w)}:
            if prog.offers[o].gpus_per_node > 1:  # type: ignore[index]
                count += len(prog.segments.of_offer(o)) * (2 if w.kind == "batch" else 24)
    return max(0, count - len(prog.cut_rows))


def separate_cuts(prog: Program) -> int:
    """Add the valid inequalities the solved relaxation violates; how many were added (0: its
    optimum meets every one, so its bound is the bound with all of them)."""
    return 0 if prog.has_cuts else define_node_rounding(prog, violated_only=True)


def define_pooled_rounding(prog: Program, reference: dict[str, str]) -> int:
    """Valid inequalities: a pool's GPUs — and an offer's, where its pools share reserved nodes — fill whole
    nodes together, rounded at one set of configs (`reference`: workload → config key, a plan's).

    Each row adds up rows of the program, Σ_j a_j·v_j + a_0 ≥ 0 (÷ m_o): the supply row of pool p at
    (o,s,h); or, where pools borrow, the supply rows of the pools with GPUs there at the reference and the
    sharing row (the lent GPUs cancel). Each workload's configs are written through its reference config
    r(w) (x[r] = 1 − Σ_{c≠r} x[c]), continuous terms with a negative coefficient are dropped (they can
    only help), and the rest rounded (mixed-integer rounding; b = −a_0 after the substitution,
    f = frac(b) > 0):

        pooled_rounding[o,(p),s,h]:  Σ_{j whole} (⌊a_j⌋ + min(1, frac(a_j)/f))·v_j
                                     + Σ_{j continuous, a_j > 0} (a_j/f)·v_j  ≥  ⌈b⌉

    where x[c] (c ≠ r(w)) carries a_c = (G[r(w)] − G[c]) / m_o: the nodes' worth of GPUs the pool no
    longer needs (or, negative, needs more) when w leaves its reference config. At the reference,
    the GPUs of several workloads round up to whole nodes together (node_rounding rounds each
    workload's own): on plans/q1-forecast.yaml, with the plan's configs held, the relaxation rises from
    $410,155 to $434,044 of the plan's $434,446. Away from the reference the rows loosen by the a_c of
    each workload that left it (so they do not lift the bound of a search over every config: benchmarks/SOLVER.md,
    "What did not help"); they serve re-solves that hold one plan's configs (strategy.POOLED_SOLVERS).
    Returns the rows added (none when this reference's rows are in already).
    """
    ref = tuple(sorted(reference.items()))
    if ref in prog.pooled_at:
        return 0
    prog.pooled_at.append(ref)
    with collection_paused():  # a bulk build, as build_model's: 1,000 workloads 0.3 s, 3.7 s with it running
        return _pooled_rows(prog, reference, f"r{len(prog.pooled_at)}")


def _pooled_rows(prog: Program, reference: dict[str, str], tag: str) -> int:
    """define_pooled_rounding's rows at `reference`, named with `tag`; how many."""
    of_var: dict[pulp.LpVariable, str] = {}
    held: dict[str, pulp.LpVariable] = {}
    held_configs: list[Candidate] = []
    for w in prog.plan.workloads:
        for c in prog.cands.by_workload[w.name]:
            x = prog.choice[c.key]
            if isinstance(x, pulp.LpVariable):
                of_var[x] = w.name
                if reference.get(w.name) == c.key:
                    held[w.name] = x
                    held_configs.append(c)
    # the GPUs each pool asks at each hour at the reference configs (at_x) and with the sole configs' too
    at_x: dict[OfferPoolHour, float] = {}
    for c in held_configs:
        x = prog.choice[c.key]
        for (s, h), (g, var) in prog.gpu_demand.get(c.key, {}).items():
            if var is x:
                key = (c.offer, c.pool, s, h)  # type: ignore[assignment]
                at_x[key] = at_x.get(key, 0.0) + g  # type: ignore[index]

    groups: dict[tuple[str, str | None, str, int], tuple[list[str], list[str]]] = {}  # → (rows, pools)
    for key in sorted(prog.pool_demand):
        o, p, s, h = key
        if prog.offers[o].gpus_per_node == 1 or prog.pool_demand[key].constant + at_x.get(key, 0.0) <= 1e-9:
            continue  # whole GPUs are whole nodes; a pool idle at the reference rounds nothing
        groups[(o, p, s, h)] = ([prog.names("supply", o, p, s, h)], [p])
        if key in prog.lent:
            rows, pools = groups.setdefault((o, None, s, h), ([prog.names("reserved_sharing", o, s, h)], []))
            rows.append(prog.names("supply", o, p, s, h))
            pools.append(p)
    count = 0
    for (o, p, s, h), (rows, pools) in groups.items():
        m = prog.offers[o].gpus_per_node
        summed = [(1.0 if row.sense == pulp.LpConstraintGE else -1.0, row)
                  for row in map(prog.prob.get_constraint_by_name, rows)]
        # b before the terms are summed (the rows' constants, the reference configs' GPUs): most rows round nothing
        early = (sum(at_x.get((o, q, s, h), 0.0) for q in pools) - sum(sg * row.constant for sg, row in summed)) / m
        if early < -1e-7 or not POOLED_MIN_FRACTION - 1e-7 <= early - math.floor(early) <= 1 - 1e-7:
            continue
        terms: dict[pulp.LpVariable, float] = {}
        constant = 0.0
        for sign, row in summed:
            k = sign / m
            for v, a in row.items():
                terms[v] = terms.get(v, 0.0) + k * a
            constant += k * row.constant
        by_workload: dict[str, list[tuple[pulp.LpVariable, float]]] = {}
        for v in [v for v in terms if v in of_var]:
            by_workload.setdefault(of_var[v], []).append((v, terms.pop(v)))
        # x[c] (c ≠ r(w)) carries a_c − a_r; the configs of w outside these rows all carry −a_r, rounded alike
        # to F0 = F(−a_r), and Σ_{c≠r} x[c] = 1 − x[r] (the choice row) writes them as F0·(1 − x[r]): x[r]
        # takes −F0, each other config in the rows F(a_c − a_r) − F0, and the right-hand side ⌈b⌉ − F0
        at: dict[str, float] = {}  # workload → a_r
        for w, xs in by_workload.items():
            r = held.get(w)
            at[w] = next((a for v, a in xs if v is r), 0.0)  # 0 when w's reference is not in these rows
            constant += at[w]
        b = -constant
        f = b - math.floor(b)
        if b <= 0 or f < POOLED_MIN_FRACTION or f > 1 - 1e-9:
            continue  # nothing to round
        rhs = float(math.ceil(b - 1e-9))
        row_terms: dict = {}

        def put(v: pulp.LpVariable, coef: float) -> None:
            if abs(coef) > 1e-12:
                row_terms[v] = row_terms.get(v, 0.0) + coef

        for w, xs in by_workload.items():
            r, a_r = held.get(w), at[w]
            f0 = mir_coefficient(-a_r, f, True) if a_r else 0.0
            if f0:
                put(r, -f0)  # type: ignore[arg-type]
                rhs -= f0
            for x, a in xs:
                if x is not r:
                    put(x, mir_coefficient(a - a_r, f, True) - f0)
        for v, a in terms.items():
            if v.cat == pulp.LpInteger and abs(a) > 1e-12:
                put(v, mir_coefficient(a, f, True))
            elif v.cat != pulp.LpInteger and a > 1e-12:
                put(v, mir_coefficient(a, f, False))
        prog.add("pooled_rounding", pulp.LpAffineExpression(row_terms) >= rhs,
                 prog.names("pooled_rounding", o, p or "all", s, h, tag))
        count += 1
    return count


def mir_coefficient(a: float, f: float, whole: bool) -> float:
    """Mixed-integer rounding of a term a·v of a row Σ a_j·v_j ≥ b (v ≥ 0; f = frac(b) > 0): a whole v keeps
    ⌊a⌋ + min(1, frac(a)/f), a continuous one (a > 0) a/f, and the row's right-hand side becomes ⌈b⌉."""
    if not whole:
        return a / f
    floor = math.floor(a + 1e-12)
    return floor + min(1.0, max(0.0, a - floor) / f)


POOLED_MIN_FRACTION = 0.01
"""define_pooled_rounding rounds only a need at least this far above whole nodes (its continuous terms are
divided by it)."""


def _nodes_for(prog: Program, w: Workload, o: str) -> Callable[[str, int], list]:
    """The nodes w can draw on at offer o in segment s at hour h: the reserved nodes it may borrow
    from, and its pool's on-demand and spot nodes."""
    res = _reserved_nodes(prog, o, w.pool)

    def nodes_at(s: str, h: int) -> list:
        out = list(res)
        for table in (prog.on_demand, prog.spot):
            v = table.get((o, w.pool, s, h))
            if v is not None:
                out.append(v)
        return out

    return nodes_at


def _violated(lhs: list, rhs: list[tuple[float, object]]) -> bool:
    """Σ lhs ≥ Σ coef·var fails at the solved values."""
    need = sum(n * _value(x) for n, x in rhs)
    return sum(_value(v) for v in lhs) < need - 1e-6 * max(1.0, need)


def define_node_rounding(prog: Program, violated_only: bool = False) -> int:
    """Valid inequalities: whole nodes carry at least each workload's own GPUs.

    node_rounding[w,o,s,h]:  Σ R[o,·] + D[o,p,s,h] + S[o,p,s,h] ≥ Σ_{c∈C(w) at o} ceil((G[c,s,h] − K[o,s]) / m_o) · x[c]
    batch_rounding[w,o,s]:   Σ_{h∈window} (Σ R[o,·] + D + S) ≥ Σ_{c at o} ceil(GPUh_min[c] / m_o − K·|window| / m_o) · x[c]
    batch_mir[w,o,s]:        the same nodes + Σ_c y[c,s] / (a_c·frac β_c) ≥ Σ_c ceil(β_c) · x[c]   (see _batch_mir)

    Not new rules: whatever else shares them, the nodes w can draw on (its pool's on-demand and
    spot nodes, and the reserved nodes it may borrow from) hold w's own GPUs in whole nodes;
    GPUh_min is a batch day's GPU-hours less what the API may take, K the GPUs under contract.
    They cut off the fractional node counts that make up much of the relaxation's gap — but one row
    per workload, offer, segment and hour is most of a large plan's rows and most of its relaxation's
    time (3.2 s without them, 30.6 s with, on the generated 100-workload plan, whose bound they do not
    move). So the relaxation takes only the rows its optimum violates (`violated_only`, in rounds:
    separate_cuts) and branch and bound all of them (add_cuts, before step 3). Returns the rows added.
    """
    added = prog.cut_rows
    count = 0
    for w in prog.plan.workloads:
        by_offer: dict[str, list[Candidate]] = {}
        for c in _gpu_cands(prog, w):
            by_offer.setdefault(c.offer, []).append(c)  # type: ignore[arg-type]
        for o in sorted(by_offer):
            m = prog.offers[o].gpus_per_node
            if m == 1:
                continue  # whole GPUs are whole nodes: nothing to round
            cs = by_offer[o]
            if violated_only and not any(_value(prog.choice[c.key]) > 1e-9 for c in cs):
                continue  # none of its configs here is chosen, even in part: no row is violated
            nodes_at = _nodes_for(prog, w, o)
            for s, dtype in prog.segments.of_offer(o):
                k = prog.segments.committed_at(o, s)  # GPUs under contract need no node
                if w.kind == "batch":
                    if (w.name, o, s, None) not in added:
                        count += _batch_rows(prog, w, cs, o, s, dtype, m, k, nodes_at, violated_only)
                    continue
                for h in range(24):
                    if (w.name, o, s, h) in added:
                        continue
                    terms = [(math.ceil(max(0, c.gpus[(dtype, h)] - k) / m - 1e-9), prog.choice[c.key]) for c in cs]
                    if not any(n for n, _ in terms):
                        continue
                    nodes = nodes_at(s, h)
                    if violated_only and not _violated(nodes, terms):
                        continue
                    prog.add("node_rounding", pulp.lpSum(nodes) >= pulp.lpSum(n * x for n, x in terms),
                             prog.names("node_rounding", _wid(prog, w), o, s, h))
                    added.add((w.name, o, s, h))
                    count += 1
    return count


def _batch_rows(prog: Program, w: Workload, cs: list[Candidate], o: str, s: str, dtype: str, m: int, k: int,
                nodes_at: Callable[[str, int], list], violated_only: bool) -> int:
    """A batch day's batch_rounding and batch_mir rows (define_node_rounding), both in once either is
    violated; how many were added."""
    assert w.batch is not None
    vol = (1 - _api_share(w)) * _batch_volume(w)
    held = k * len(w.batch.hours())
    terms = [(math.ceil(max(0.0, vol * c.gpu_fraction / (SECONDS_PER_HOUR * _batch_goodput(prog, c, dtype) * m)
                            - held / m) - 1e-9), prog.choice[c.key]) for c in cs]
    lhs = [v for h in w.batch.hours() for v in nodes_at(s, h)]
    mir = _batch_mir(prog, w, cs, s, dtype, m, held)
    rows = []
    if any(n for n, _ in terms):
        rows.append(("batch_rounding", lhs, terms))
    if mir is not None:
        rows.append(("batch_mir", lhs + mir[0], mir[1]))
    if violated_only and not any(_violated(left, right) for _f, left, right in rows):
        return 0
    for family, left, right in rows:
        prog.add(family, pulp.lpSum(left) >= pulp.lpSum(n * x for n, x in right),
                 prog.names(family, _wid(prog, w), o, s))
    prog.cut_rows.add((w.name, o, s, None))
    return len(rows)


def _batch_mir(prog: Program, w: Workload, cs: list[Candidate], s: str, day_type: str, m: int, held: int
               ) -> tuple[list, list[tuple[float, object]]] | None:
    """Mixed-integer rounding of a batch day with API overflow (the row batch_rounding cannot see):
    its left-hand side's API terms and its right-hand side, or None when nothing rounds.

    With N the nodes w can use at o over its window, a_c = 3600·γ_c·m / (f_c·V) the share of the
    day one node-hour produces and b_c the share the GPUs under contract produce, config c needs
    a_c·N + y_c ≥ 1 − b_c, i.e. N + y_c/a_c ≥ β_c = (1 − b_c)/a_c with N integer and y_c ≥ 0. Its
    MIR inequality, summed over the configs (at most one is chosen, and y_c = 0 unless it is):

        batch_mir[w,o,s]:  N + Σ_c y_c / (a_c·frac(β_c)) ≥ Σ_c ceil(β_c) · x[c]

    is the integer hull of that one row: without it the LP sends a fraction of a node's work to the
    API and branching over the window's hours never closes the gap.
    """
    vol = _batch_volume(w)
    ys, rhs = [], []
    for c in cs:
        y = prog.batch_api.get((c.key, s))
        if y is None:
            continue
        rate = _batch_goodput(prog, c, day_type)
        a = SECONDS_PER_HOUR * rate * m / (c.gpu_fraction * vol)
        beta = (1.0 - held * SECONDS_PER_HOUR * rate / (c.gpu_fraction * vol)) / a
        frac = beta - math.floor(beta)
        if beta <= 0 or frac < 1e-6 or frac > 1 - 1e-6:
            continue  # nothing to round: batch_rounding is already the hull
        ys.append(y / (a * frac))
        rhs.append((float(math.ceil(beta)), prog.choice[c.key]))
    return (ys, rhs) if ys else None


def define_objective(prog: Program) -> None:
    """min  Σ m·R·price_k·24·H  +  Σ_s n_s Σ_h m·(D·price_od + S·price_spot)  +  API tokens × price
           (+ Σ penalty·e in diagnosis).

    s runs over segments (day types, or day types within a contract period), n_s their days.
    Contracts already signed are sunk: not here.
    """
    plan = prog.plan
    days = prog.segments.days()
    H = plan.horizon_days
    reserved = pulp.lpSum(prog.offers[o].gpus_per_node * v * prog.offers[o].price(k) * 24 * H  # type: ignore[operator]
                          for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0] + str(kv[0][1]) + kv[0][2])
                          if k != "buy")
    od = pulp.lpSum(days[s] * prog.offers[o].gpus_per_node * _hourly_price(prog, s, o, "on-demand") * v
                    for (o, _p, s, _h), v in prog.on_demand.items())
    spot = pulp.lpSum(days[s] * prog.offers[o].gpus_per_node * _hourly_price(prog, s, o, "spot") * v
                      for (o, _p, s, _h), v in prog.spot.items())
    api_terms = [c.api_cost * prog.choice[c.key] for c in prog.cands.all() if c.api_cost and c.key not in prog.private]
    by_name = {w.name: w for w in plan.workloads}
    for (wn, s), y in prog.api_volume.items():
        api_terms.append(days[s] * api_price_per_output_token(by_name[wn]) * y)
    bought, fixed, serving = _own_costs(prog)
    facility = fixed + serving
    private = define_private(prog)
    prog.cost_terms = {"reserved": reserved, "on_demand": od, "spot": spot, "api": pulp.lpSum(api_terms),
                       "buy": bought, "facility": facility, "private": private}
    penalty = pulp.lpSum(_excess_penalty(prog) * v for v in prog.cap_excess.values())
    sd = scenario_days(plan)
    if sd is not None and plan.policy.risk.measure != "expected":
        prog.prob += define_risk(prog, sd, reserved + bought + fixed) + penalty
        return
    prog.prob += reserved + od + spot + pulp.lpSum(api_terms) + bought + facility + private + penalty


def define_private(prog: Program) -> pulp.LpAffineExpression:
    """A config c alone at its offer o (no other workload has a config there) takes nothing any other
    workload could use, so what o costs when c is chosen — its reserved, on-demand and spot nodes, the
    API share, hour by hour — is o's cheapest way to serve c alone, K_c, solved apart (strategy). In the
    program:

        private[c]:  objective += Σ_{c private} K_c · x[c]        x[c] ≤ 0 when no plan at o serves c

    and o has no variables or rows. Exact: the program with o's capacity in it would choose, for x[c] = 1,
    that same cheapest capacity, since nothing else draws on it. K_c may first be a lower bound (the
    relaxation of o alone; the program is then a relaxation of the plan), made exact for the configs a
    solution chooses before that solution is taken (strategy._settle_private); a solution that chooses c
    gets o's hours from the program without private configs (strategy._with_private_capacity).
    Why: an offer only one workload can use still brings its hourly nodes, caps and rows into the
    program; on plans/q4.yaml 16 of nightly-summaries' configs are alone at their offers and their rows
    made the solver's root work several times longer (benchmarks/SOLVER.md, "How the solve works").
    """
    terms = []
    for key, cost in prog.private.items():
        x = prog.choice[key]
        if math.isinf(cost):  # a row, not a bound: forcing c (explain) is then infeasible, as it is
            prog.add("private", x <= 0, prog.names("private", prog.candidate_ids[key]))
            continue
        terms.append(cost * x)
    return pulp.lpSum(terms)



def _hourly_price(prog: Program, s: str, o: str, tier: str) -> float:
    """The offer's price for the tier in segment s: a scenario's price multiplier applied (inputs.scenarios)."""
    offer = prog.offers[o]
    price = offer.price(tier) or 0.0
    sd = scenario_days(prog.plan)
    if sd is None:
        return price
    return price * sd.price(prog.segments.segments[s][0], tier, offer.provider)


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
                terms.setdefault(k[0], []).append(days[s] / k[1] * prog.offers[o].gpus_per_node
                                                  * _hourly_price(prog, s, o, tier) * v)
    by_name = {w.name: w for w in prog.plan.workloads}
    for (wn, s), y in prog.api_volume.items():
        k = scn(s)
        if k:
            terms.setdefault(k[0], []).append(days[s] / k[1] * api_price_per_output_token(by_name[wn]) * y)
    for c in prog.cands.all():
        if not c.api_cost or not c.api_output_tokens_per_day:
            continue
        price = api_price_per_output_token(by_name[c.workload])
        for d, tokens in c.api_output_tokens_per_day.items():
            sc = sd.scenario.get(d)
            if sc is not None and tokens:
                terms.setdefault(sc.name, []).append(days[d] / sc.weight * tokens * price * prog.choice[c.key])
    for (o, _p, s, h), v in prog.lent.items():
        t = prog.own.get(o)
        k = scn(s)
        if t is not None and k and t.serving_energy(h):
            terms.setdefault(k[0], []).append(days[s] / k[1] * t.serving_energy(h) * v)
    names = dict.fromkeys(sc.name for sc in sd.scenario.values())
    return {n: pulp.lpSum(terms.get(n, [])) for n in names}


def define_risk(prog: Program, sd: ScenarioDays, first_stage: pulp.LpAffineExpression) -> pulp.LpAffineExpression:
    """The objective over scenarios ξ (weight π_ξ, second-stage cost Q_ξ, first stage F) by policy.risk:

        worst:      min F + t                                   risk_worst[ξ]:  t ≥ Q_ξ
        cvar at α:  min F + η + Σ_ξ π_ξ·u_ξ / (1 − α)           risk_cvar[ξ]:   u_ξ ≥ Q_ξ − η,  u_ξ ≥ 0

    (expected, the default, is F + Σ_ξ π_ξ·Q_ξ: the days of each scenario's day types carry π_ξ.)
    """
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
    """The horizon's cost of servers of your own (candidates.ownership states each term):

        buy:       Σ_o R[o,buy] · ownership_o/365 · days_o
        facility:  Σ_o R[o,buy] · (idle energy + colocation)_o a day · days_o
                   + Σ_{o,p,s,h} n_s · serving_energy_o(h) · L[o,p,s,h]
                   + the owned servers' idle energy, colocation and support (constants)

    days_o: the plan days from delivery to the horizon's end. Returned as (buy, the facility's fixed
    costs, serving energy).
    """
    days = prog.segments.days()
    buy, fac, serving = [], [], []
    const = 0.0
    for (o, _p, k), v in sorted(prog.reserved.items(), key=lambda kv: kv[0][0]):
        if k != "buy":
            continue
        t, n = prog.own[o], _service_days(prog, o)
        buy.append(t.ownership_per_year / ownership.DAYS_PER_YEAR * n * v)
        fac.append((t.idle_energy_per_day() + t.colo_per_day()) * n * v)
    for o, t in prog.own.items():
        if t.kind != "owned":
            continue
        n = sum(days[s] for s, _d in prog.segments.of_offer(o) if prog.segments.committed_at(o, s))
        const += t.owned_nodes * (t.idle_energy_per_day() + t.colo_per_day()
                                  + t.support_per_year / ownership.DAYS_PER_YEAR) * n
    for (o, _p, s, h), v in sorted(prog.lent.items()):
        t = prog.own.get(o)
        if t is not None and t.serving_energy(h):
            serving.append(days[s] * t.serving_energy(h) * v)
    return pulp.lpSum(buy), pulp.lpSum(fac) + const, pulp.lpSum(serving)


def _excess_penalty(prog: Program) -> float:
    """Cost of one GPU beyond a cap in diagnosis mode: more than a whole node of the dearest offer
    over the horizon, ten times over, so the program exceeds caps only where it must."""
    prices = [p for o in prog.offers.values() for t in o.price_per_gpu_hour if (p := o.price(t))]
    nodes = max((o.gpus_per_node for o in prog.offers.values()), default=1)
    return 10.0 * max(prices, default=1.0) * nodes * 24 * prog.plan.horizon_days + 1.0


def define_baseline(prog: Program, baseline: dict[str, tuple[str, float]]) -> None:
    """Stable re-plans (--baseline): keep a workload's last choice b_w unless moving saves more.

    objective += Σ_w τ · C_w · (1 − Σ_{k ∈ H(b_w)} x[k])    τ = policy.change_threshold, C_w = w's cost in the
                                                          last plan, H(b): b's hardware at every API ceiling

    So a workload moves only when the plan saves more than τ·C_w by it; its API overflow ceiling may move
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
        xs = [x for c in prog.cands.by_workload[w.name] if without_ceiling(c.key) == without_ceiling(key)
              and isinstance(x := prog.choice.get(c.key), pulp.LpVariable)]
        if not xs or tau * cost <= 0:
            continue  # gone, or the only config left: nothing to keep
        prog.baseline_penalty[w.name] = (key, tau * cost)
        terms.append(tau * cost * (1 - pulp.lpSum(xs)))
    if terms:
        prog.prob.setObjective(prog.prob.objective + pulp.lpSum(terms))


def define_tidy(prog: Program, cost_cap: float) -> tuple[pulp.LpProblem, dict[str, float]]:
    """The tidy schedule: among plans that cost no more than `cost_cap` (the solved plan's cost), with every
    decision made once held (Program.first_stage_fixed) and the API's share of each batch day held (the
    caller's bounds), the one a person expects. A problem of its own over the program's rows and
    variables, so the program itself gains nothing:

        tidy_cost:       objective ≤ cost_cap
        tidy_spread[c,s,h]:  P[c,s] ≥ f_c · n[c,s,h]        (batch config c, h in its window)

        min  Σ_s n_s · ( 10 · Σ_{o, p fixed, h} m_o·(D[o,p,s,h] + S[o,p,s,h])  +  Σ_c P[c,s] )

    First, GPUs paid by the hour go to work that can move: a pool with no batch workload (p fixed) is
    served by the reserved and signed GPUs it shares before the batch pools are; then each batch
    config's busiest hour is as low as the capacity allows, so its work spreads over its window instead
    of packing into a few hours. Returns the problem and the peak variables' values at the solved plan
    (with the solved values, a warm start)."""
    days = prog.segments.days()
    tidy = pulp.LpProblem("planopt_tidy", pulp.LpMinimize)
    for row in prog.prob.constraints():
        tidy.addConstraint(row, row.name)
    tidy += prog.prob.objective <= cost_cap, "tidy_cost"
    movable = {w.pool for w in prog.plan.workloads if w.kind == "batch"}
    terms = []
    for table in (prog.on_demand, prog.spot):
        for (o, p, s, _h), v in sorted(table.items()):
            if p not in movable:
                terms.append(10.0 * days[s] * prog.offers[o].gpus_per_node * v)
    by_config: dict[tuple[str, str], list[tuple[int, pulp.LpVariable]]] = {}
    for (key, s, h), n in sorted(prog.batch_replicas.items()):
        if _value(prog.choice[key]) > 0.5:
            by_config.setdefault((key, s), []).append((h, n))
    cands = {c.key: c for c in prog.cands.all()}
    start = {}
    for (key, s), ns in by_config.items():
        c = cands[key]
        peak = tidy.add_variable(prog.names("tidy_peak", _cid(prog, c), s), lowBound=0)
        for h, n in ns:
            tidy += peak >= c.gpu_fraction * n, prog.names("tidy_spread", _cid(prog, c), s, h)
        start[peak.name] = max(c.gpu_fraction * (n.varValue or 0.0) for _h, n in ns)
        terms.append(days[s] * peak)
    tidy += pulp.lpSum(terms)
    return tidy, start
