"""The integer program's data: the PuLP problem with its variables by family (Program), the names its
rows and variables take (Namer), and the few reads of the candidates every part of the program shares.

The program's sets, variables and constraint families are stated once, in optimize.families (docs/model.md
is generated from it); optimize.model builds the rows, optimize.cuts the valid inequalities and
optimize.tiebreak the tie-break program among plans of equal cost.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import pulp

from optimizer.candidates import ownership
from optimizer.candidates.build import allowed_tiers
from optimizer.candidates.overflow import keys_of
from optimizer.candidates.types import Candidate, CandidateSet, DayHour
from optimizer.inputs.scenarios import goodput_factor
from optimizer.inputs.schema.catalog import Offer
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.optimize import costs
from optimizer.optimize.calendar import Segments
from optimizer.optimize.solution import OfferPoolHour, Solution


class Namer:
    """Deterministic, PuLP-safe, collision-checked names (PuLP rewrites '-', '+', ' ' and more to '_').

    Workloads appear by index and pools, offers and day types are ids (lower-case, hyphenated), so
    two different keys never map to one name; a collision is a bug, reported as one."""

    _unsafe = re.compile(r"[^A-Za-z0-9_.]")

    def __init__(self) -> None:
        self._seen: dict[str, tuple] = {}
        self._safe: dict[str, str] = {}
        """A part's text → its safe form: a large program names hundreds of thousands of variables and rows
        from a few thousand distinct parts, and the regular expression would run on each of them every time."""

    def _joined(self, family: str, parts: tuple) -> str:
        """family_part_part…, each part made safe once (_safe)."""
        safe = self._safe
        out = [family]
        for p in parts:
            text = str(p)
            s = safe.get(text)
            if s is None:
                s = safe[text] = self._unsafe.sub("_", text)
            out.append(s)
        return "_".join(out)

    def __call__(self, family: str, *parts: object) -> str:
        name = self._joined(family, parts)
        key = (family,) + parts
        prev = self._seen.setdefault(name, key)
        if prev != key:
            raise ValueError(f"name collision in the program: {prev} and {key} both map to {name}")
        return name

    def series(self, family: str, *parts: object) -> Callable[[object], str]:
        """`last` → self(family, *parts, last), the same name and check, with the common parts made safe once (a
        family's rows and variables come hour by hour: a large program names hundreds of thousands of them)."""
        prefix = self._joined(family, parts) + "_"
        safe, seen = self._safe, self._seen

        def name(last: object) -> str:
            text = str(last)
            s = safe.get(text)
            if s is None:
                s = safe[text] = self._unsafe.sub("_", text)
            full = prefix + s
            key = (family, *parts, last)
            prev = seen.setdefault(full, key)
            if prev != key:
                raise ValueError(f"name collision in the program: {prev} and {key} both map to {full}")
            return full

        return name


_PULP_RENAMES = re.compile(r"[-+\[\] ]")
"""The characters PuLP rewrites in a row's name (LpAffineExpression.trans)."""
_PULP_VARIABLE_RENAMES = re.compile(r"[-+\[\] >/]")
"""The characters PuLP rewrites in a variable's name (LpElement.illegal_chars)."""

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
    """R[o,p,k]: (offer, pool or None when shared, tier), reservations from the horizon's first day."""
    reserved_later: dict[tuple[str, str | None, str, int], pulp.LpVariable] = field(default_factory=dict)
    """R[o,p,k,t]: reservations starting on day t > 0 (Segments.starts), serving from t to the horizon's end."""
    lent: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    on_demand: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    spot: dict[OfferPoolHour, pulp.LpVariable] = field(default_factory=dict)
    cap_excess: dict[tuple[str, str, str | None, int | None], pulp.LpVariable] = field(default_factory=dict)
    """e[o,k,s,h] (diagnosis mode)."""
    racks: dict[str, pulp.LpVariable] = field(default_factory=dict)
    """Q[o]."""
    split_share: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    """z[c,b]: (candidate key, size class) → the share of class b's requests config c serves (split: by_size)."""
    split_replicas: dict[tuple[str, str, str, int], pulp.LpVariable] = field(default_factory=dict)
    """(candidate key, part: base, rollout or gpus, segment, hour) → whole replicas or GPUs of a split config."""
    own: dict[str, ownership.OwnTerms] = field(default_factory=dict)
    """Offers of your own hardware (bought or owned) → their cost terms."""
    share_gpus: dict[tuple[str, str, str, str, int], pulp.LpVariable] = field(default_factory=dict)
    """(offer, pool, part: base or rollout, segment, hour) → whole GPUs of the group sharing them (family share)."""
    share_used: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    """u[o,p]: 1 when some workload shares GPUs at offer o in pool p (the group keeps its spares)."""
    spend_new: dict[str, pulp.LpVariable] = field(default_factory=dict)
    """U[j]: a new spend commitment's $/hour (spend.SpendPlan key) (define_savings_plans)."""
    spend_covered: dict[tuple[str, str, str, int], pulp.LpVariable] = field(default_factory=dict)
    """c[j,o,s,h]: (commitment key, offer, cell, hour) → discounted spend an hour of commitment j covers at offer o."""
    spend_plans: list = field(default_factory=list)
    """The spend commitments in the program (spend.SpendPlan)."""
    movers: dict[str, list[Candidate]] = field(default_factory=dict)
    """Workloads that may change config at a contract period's boundary → the configs they move among (moves.movers)."""
    moves: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    """x[c,π]: (candidate key, contract period after the first) → binary; x[c] is the first period's."""
    move_overlap: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    """(candidate key, period) → 1 when the workload moves onto c at the period's first day (policy.move_cost)."""

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
    """Candidate key → its short id in the program's names (config_id)."""
    has_cuts: bool = False
    """Every valid inequality is in (add_cuts)."""
    cut_rows: set[tuple[str, str, str, int | None]] = field(default_factory=set)
    """(workload, offer, segment, hour) of the valid inequalities in the program (hour None: a batch day's)."""
    pooled_at: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    """The configs (workload, key) define_pooled_rounding has added rows at, in order."""
    sole_tenant: dict[str, float] = field(default_factory=dict)
    """Configs at an offer no other workload can use → what that offer costs serving them alone, solved
    apart (define_sole_tenant): in the program each is its x[c] at that cost, with no capacity of its own."""
    # what every row of a family asks again, worked out once per program (tiers, hourly_rate, reserved_by_offer)
    _tiers: dict[tuple[str, str], list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _hourly_rates: dict[tuple[str, str, str], float] = field(default_factory=dict, init=False, repr=False,
                                                             compare=False)
    _reserved_index: tuple = field(default=(), init=False, repr=False, compare=False)

    def tiers(self, offer: str, pool: str) -> list[str]:
        """candidates.build.allowed_tiers of an offer and pool, worked out once (every supply row asks)."""
        t = self._tiers.get((offer, pool))
        if t is None:
            t = self._tiers[(offer, pool)] = allowed_tiers(self.plan, self.offers[offer], pool)
        return t

    def hourly_rate(self, offer: str, tier: str, segment: str) -> float:
        """costs.hourly_per_node of an offer, hourly tier and segment, worked out once (every hourly node asks)."""
        rate = self._hourly_rates.get((offer, tier, segment))
        if rate is None:
            rate = self._hourly_rates[(offer, tier, segment)] = costs.hourly_per_node(
                self.plan, self.segments, self.offers[offer], tier, segment)
        return rate

    def choice_at_period(self, key: str, period: int | None):
        """The choice of config `key` in a contract period: x[c,π] for a config that may move, else x[c]."""
        if period:
            v = self.moves.get((key, period))
            if v is not None:
                return v
        return self.choice[key]

    def choice_at(self, key: str, segment: str):
        """The choice of config `key` in a segment: its period's (choice_at_period)."""
        return self.choice_at_period(key, self.segments.period_of(segment)) if self.moves else self.choice[key]

    def choices_of(self, key: str) -> list:
        """x[c] and every x[c,π] of config `key`."""
        return [self.choice[key]] + [v for (k, _pi), v in self.moves.items() if k == key]

    def candidate(self, key: str) -> Candidate:
        return next(c for c in self.cands.all() if c.key == key)

    def variable(self, name: str, lowBound: float | None = None, upBound: float | None = None,
                 cat: str = pulp.LpContinuous) -> pulp.LpVariable:
        """prob.add_variable(name, lowBound, upBound, cat). PuLP's name setter checks a name by regular expression
        and rewrites "-+[] ->/" to "_" by str.translate, most of what making a variable costs; a name without them
        is kept as is, so it is set as it would be, directly (PuLP is pinned: pyproject.toml)."""
        if _PULP_VARIABLE_RENAMES.search(name) is not None:
            return self.prob.add_variable(name, lowBound, upBound, cat)
        v = self.prob.add_variable(None, lowBound, upBound, cat)  # type: ignore[arg-type]
        v._LpElement__name = name  # type: ignore[attr-defined]
        return v

    def add(self, family: str, constraint: pulp.LpConstraint, name: str) -> None:
        if isinstance(constraint, pulp.LpConstraint) and _PULP_RENAMES.search(name) is None:
            # what `prob += constraint, name` does with a row. PuLP's name setter rewrites "-+[] " to "_" by
            # str.translate, which costs more than the rest of a small row; a name without them is kept as is,
            # so it is set as it would be, directly (PuLP is pinned: pyproject.toml)
            constraint._LpConstraint__name = name  # type: ignore[attr-defined]
            self.prob.addConstraint(constraint)
        else:
            self.prob += constraint, name
        self.constraint_families.setdefault(family, []).append(name)

    def fix_choice(self, workload: str, key: str) -> None:
        """Force a workload onto one config (explain's alternatives, a baseline kept); a split workload's
        configs joined in one key (a baseline kept): each of them used, and no other."""
        keys = keys_of(key)
        if len(keys) > 1:
            for i, c in enumerate(self.cands.by_workload[workload]):
                x = self.choice[c.key]
                if isinstance(x, pulp.LpVariable):
                    self.add("fixed_choice", x == (1 if c.key in keys else 0),
                             f"fixed_choice_w{self.workload_index[workload]}_{i}")
                if c.key in keys:
                    self.add("fixed_choice", self.serves(c.key) >= SERVES,
                             f"fixed_choice_w{self.workload_index[workload]}_{i}_serves")
            return
        x = self.choice[key]
        if isinstance(x, pulp.LpVariable):
            self.add("fixed_choice", x == 1, f"fixed_choice_w{self.workload_index[workload]}")

    def serves(self, key: str):
        """A split workload's config: the sum of its shares of the size classes (0: it serves nothing)."""
        return pulp.lpSum(z for (k, _b), z in self.split_share.items() if k == key)

    @contextmanager
    def choices_fixed(self, keys: dict[str, str | frozenset[str]], held: Iterable[str] = ()) -> Iterator[None]:
        """Fix every workload in `keys` to that config — or, given a set of configs, to one of them, the
        program choosing — by bounds, so nothing is added; then undo. For a workload that may move
        (policy.moves) that is its first contract period's config, unless it is in `held`: then every
        period's (explain's alternatives: a config forced is that config for the horizon)."""
        saved = []
        held = set(held)
        for w, key in keys.items():
            if w in self.split_workloads:  # a split workload's configs are each used or not: none is held alone
                continue
            allowed = {key} if isinstance(key, str) else key
            for c in self.cands.by_workload[w]:
                xs = self.choices_of(c.key) if w in held else [self.choice[c.key]]
                for x in xs:
                    if not isinstance(x, pulp.LpVariable):
                        continue
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
            if w.name in self.split_workloads:
                continue
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
        first = [v for v in (*self.choice.values(), *self.moves.values(), *self.reserved.values(),
                             *self.reserved_later.values(), *self.committed_split.values(), *self.spend_new.values(),
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
        return [v for table in (self.choice, self.moves, self.committed_split, self.reserved, self.reserved_later,
                                self.on_demand, self.spot, self.racks, self.split_replicas, self.share_gpus)
                for v in table.values() if isinstance(v, pulp.LpVariable)]

    @functools.cached_property
    def split_workloads(self) -> frozenset[str]:
        """Workloads whose traffic may be divided among their configs (split: by_size, more than one config)."""
        return frozenset(w.name for w in self.plan.workloads if is_split(self, w))

    def values(self) -> dict[str, float | None]:
        """The solved value of every variable, by name (a warm start, or a plan to go back to)."""
        return {v.name: v.varValue for v in self.prob.variables()}

    def restore(self, values: dict[str, float | None]) -> None:
        for v in self.prob.variables():
            v.varValue = values.get(v.name)

    def solution(self) -> Solution:
        """Read every decided value out of the solver's variables (the only place that does)."""
        chosen = {}
        split: dict[str, dict[str, tuple[float, ...]]] = {}
        for w in self.plan.workloads:
            cs = self.cands.by_workload[w.name]
            if w.name in self.split_workloads:
                weights = split_classes(self, w)
                shares = {c.key: tuple(value_of(self.split_share.get((c.key, b), 0.0)) for b in range(len(weights)))
                          for c in cs}
                split[w.name] = {k: v for k, v in shares.items() if sum(v) > 1e-9}
                chosen[w.name] = max(cs, key=lambda c: (round(sum(a * z for a, z in zip(weights, shares[c.key])), 9),
                                                        c.key == cs[0].key)).key
                continue
            chosen[w.name] = max(cs, key=lambda c: (value_of(self.choice[c.key]), c.key == cs[0].key)).key
        moved = self._moved(chosen)
        keys = list(chosen.values()) + [k for used in split.values() for k in used if k not in chosen.values()]
        keys += [k for ks in moved.values() for k in dict.fromkeys(ks) if k not in keys]
        gpus = {key: {dh: coef * (var.varValue or 0.0) if var is not None else coef
                      for dh, (coef, var) in self.gpu_demand.get(key, {}).items()}
                for key in keys}
        shared = self._shared_gpus(set(chosen.values()))
        for key, per in shared[1].items():
            gpus[key] = per
        return Solution(
            segments=self.segments, chosen=chosen, gpus=gpus,
            reserved_nodes={k: value_of(v) for k, v in self.reserved.items()},
            reserved_later={k: value_of(v) for k, v in self.reserved_later.items()},
            on_demand_nodes={k: value_of(v) for k, v in self.on_demand.items()},
            spot_nodes={k: value_of(v) for k, v in self.spot.items()},
            lent={k: value_of(v) for k, v in self.lent.items()},
            committed_split={k: value_of(v) for k, v in self.committed_split.items()},
            batch_replica_hours={k: value_of(v) for k, v in self.batch_replicas.items()},
            api_volume={k: value_of(v) for k, v in self.api_volume.items()},
            cap_excess={k: value_of(v) for k, v in self.cap_excess.items()},
            switching_cost={w: cost for w, (_key, cost) in self.baseline_penalty.items()}, split=split,
            split_replicas=self._split_replicas(split), shared=shared[0], moves=moved,
            spend_new={k: value_of(v) for k, v in self.spend_new.items()},
            spend_covered={k: value_of(v) for k, v in self.spend_covered.items()})

    def _shared_gpus(self, chosen: set[str]) -> tuple[dict, dict[str, dict[DayHour, float]]]:
        """The groups sharing GPUs, (offer, pool, segment, hour) → (base, spares, rollout) GPUs, and each chosen
        shared config's part of them, (segment, hour) → GPUs: the group's GPUs in proportion to the time each
        member takes (equal parts at an hour none takes any)."""
        groups: dict = {}
        parts: dict[str, dict[DayHour, float]] = {}
        spares = self.plan.policy.spares
        members = {op: [c for c in cs if c.key in chosen] for op, cs in share_groups(self).items()}
        for (o, p, part, s, h), v in self.share_gpus.items():
            if part != "base" or not members.get((o, p)):
                continue
            ro = self.share_gpus.get((o, p, "rollout", s, h))
            g = (round(value_of(v)), spares, round(value_of(ro)) if ro is not None else 0)
            groups[(o, p, s, h)] = g
            d = dict(self.segments.of_offer(o))[s]
            times = [c.share_time.get((d, h), 0.0) for c in members[(o, p)]]
            whole = sum(times)
            for c, t in zip(members[(o, p)], times):
                parts.setdefault(c.key, {})[(s, h)] = sum(g) * (t / whole if whole > 0 else 1 / len(times))
        return groups, parts

    def _moved(self, chosen: dict[str, str]) -> dict[str, tuple[str, ...]]:
        """Each workload that may move and does → its config's key in each contract period (the first: chosen)."""
        out = {}
        n = len(self.segments.calendar.periods) if self.movers and self.segments.calendar else 0
        for w, cs in self.movers.items():
            moving = {c.key for c in cs}
            if chosen[w] not in moving:
                continue
            keys = [chosen[w]] + [max(cs, key=lambda c: (value_of(self.moves[(c.key, pi)]), c.key == chosen[w])).key
                                  for pi in range(1, n)]
            if len(set(keys)) > 1:
                out[w] = tuple(keys)
        return out

    def _split_replicas(self, split: dict[str, dict[str, tuple[float, ...]]]
                        ) -> dict[str, dict[DayHour, tuple[int, int, int]]]:
        spares = self.plan.policy.spares
        out: dict[str, dict[DayHour, tuple[int, int, int]]] = {}
        for used in split.values():
            for key in used:
                per = out.setdefault(key, {})
                for (k, part, s, h), v in self.split_replicas.items():
                    if k == key and part == "base":
                        ro = self.split_replicas.get((key, "rollout", s, h))
                        per[(s, h)] = (round(value_of(v)), spares, round(value_of(ro)) if ro is not None else 0)
        return out


REDUCED_COST_TOL = 1e-7
"""Reduced costs this small are the solver's tolerance, not a price (reduced_costs)."""


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


# PuLP's sums and rows, built from lists of (variable, coefficient) terms. PuLP makes a whole expression of every
# product `a * x`, copies the left side of every `lhs >= rhs`, and hashes each variable in Python at each step; a
# large program's sums have millions of terms and its valid inequalities are hundreds of thousands of rows. These
# give the same expressions — terms in the same order, the same coefficients and constants, bit for bit.

def weighted_sum(pairs: Iterable[tuple[object, object]]) -> pulp.LpAffineExpression:
    """pulp.lpSum(a * x for a, x in pairs): `x` a variable, an expression or a number."""
    return affine(*_weighted_terms(pairs))


def plain_sum(items: Iterable[object]) -> pulp.LpAffineExpression:
    """pulp.lpSum(items): each item a variable, an expression or a number."""
    return affine(*_plain_terms(items))


def at_least(lhs: Iterable[object], rhs: Iterable[tuple[object, object]]) -> pulp.LpConstraint:
    """pulp.lpSum(lhs) >= pulp.lpSum(a * x for a, x in rhs), the row PuLP makes: lhs's terms, then rhs's negated."""
    lhs = lhs if isinstance(lhs, list) else list(lhs)  # read twice where a variable is in it more than once
    left, left_constant = _plain_terms(lhs)
    right, right_constant = _weighted_terms(rhs)
    left += [(v, a * -1) for v, a in right]
    e = pulp.LpAffineExpression(constant=left_constant + right_constant * -1)
    dict.update(e, left)
    if len(e) != len(left):  # a variable more than once: summed on each side first, as PuLP does
        left = _plain_terms(lhs)[0]
        return row(affine(left, left_constant), pulp.LpConstraintGE, affine(right, right_constant))
    return pulp.LpConstraint(e, pulp.LpConstraintGE)


def row(lhs: pulp.LpAffineExpression, sense: int, rhs: pulp.LpAffineExpression | float) -> pulp.LpConstraint:
    """`lhs >= rhs` (sense GE; LE: `<=`, EQ: `==`), the row PuLP makes — lhs's terms, then rhs's negated, the
    constants likewise — without `lhs - rhs`'s copy of lhs and term-by-term update."""
    if isinstance(rhs, (int, float)):
        return pulp.LpConstraint(lhs, sense, rhs=rhs)
    terms = list(lhs.items())
    terms += [(v, a * -1) for v, a in rhs.items()]
    return pulp.LpConstraint(affine(terms, lhs.constant + rhs.constant * -1), sense)


def affine(terms: list, constant: float = 0.0) -> pulp.LpAffineExpression:
    """The expression PuLP's sum of these (variable, coefficient) terms holds: a variable's first term fixes its
    place, its coefficients add up in order."""
    e = _expression(terms, constant)
    if e is None:
        e = pulp.LpAffineExpression(constant=constant)
        for v, a in terms:
            if v in e:
                e[v] += a
            else:
                e[v] = a
    return e


def _expression(terms: list, constant: float) -> pulp.LpAffineExpression | None:
    """The expression of these terms when no variable is in them twice (else None), filled by one C loop."""
    e = pulp.LpAffineExpression(constant=constant)
    dict.update(e, terms)
    return e if len(e) == len(terms) else None


def _weighted_terms(pairs: Iterable[tuple[object, object]]) -> tuple[list, float]:
    """The terms and constant of pulp.lpSum(a * x for a, x in pairs), before like terms are added up."""
    terms: list = []
    constant = 0.0
    for a, x in pairs:
        if type(x) is pulp.LpVariable and type(a) in (int, float) and math.isfinite(a):  # type: ignore[arg-type]
            if a != 0:  # PuLP drops a term times zero; its constant 0 · a adds nothing to a sum that starts at +0.0
                terms.append((x, a))
            continue
        constant = _add_to(terms, a * x, constant)  # type: ignore[operator]
    return terms, constant


_VARIABLES_ONLY = frozenset({pulp.LpVariable})


def _plain_terms(items: Iterable[object]) -> tuple[list, float]:
    """The terms and constant of pulp.lpSum(items), before like terms are added up."""
    items = list(items)
    if set(map(type, items)) <= _VARIABLES_ONLY:  # the usual case: C loops
        return list(zip(items, itertools.repeat(1))), 0.0
    terms: list = []
    constant = 0.0
    for x in items:
        if type(x) is pulp.LpVariable:
            terms.append((x, 1))
        else:
            constant = _add_to(terms, x, constant)
    return terms, constant


def _add_to(terms: list, x: object, constant: float) -> float:
    """LpAffineExpression.addInPlace(x) on a sum held as a list of terms and a constant: the constant after."""
    if isinstance(x, pulp.LpElement):
        terms.append((x, 1))
    elif isinstance(x, pulp.LpAffineExpression):
        terms.extend(x.items())
        constant += x.constant
    elif isinstance(x, int) and x == 0:
        pass
    elif isinstance(x, (int, float)) and math.isfinite(x):
        constant += x
    else:  # what PuLP does with anything else (a constraint, a list, NaN): let it say so
        e = pulp.LpAffineExpression(constant=constant)
        e.addInPlace(x)
        terms.extend(e.items())
        constant = e.constant
    return constant


def value_of(v) -> float:
    """A variable's or expression's solved value (0 when the solver left it unset); a constant as is."""
    if isinstance(v, (int, float)):
        return float(v)
    x = v.value()
    return float(x) if x is not None else 0.0


# ---------------------------------------------------------------------------------------------
# reads every part of the program shares

def workloads_of(prog: Program, kind: str) -> list[Workload]:
    return [w for w in prog.plan.workloads if w.kind == kind]


def gpu_cands(prog: Program, w: Workload) -> list[Candidate]:
    """w's configs that draw on an offer's capacity in the program on their own (not the API, not a sole-tenant one,
    not one sharing GPUs: share_groups)."""
    return [c for c in prog.cands.by_workload[w.name]
            if c.kind != "api" and c.key not in prog.sole_tenant and c.share is None]


def share_groups(prog: Program) -> dict[tuple[str, str], list[Candidate]]:
    """(offer, pool) → the configs that may share its GPUs there (policy.share_pools), in the plan's order."""
    out: dict[tuple[str, str], list[Candidate]] = {}
    for w in prog.plan.workloads:
        for c in prog.cands.by_workload[w.name]:
            if c.share is not None and c.key not in prog.sole_tenant:
                out.setdefault((c.offer, c.pool), []).append(c)  # type: ignore[arg-type]
    return out


SERVES = 1e-4
"""The least share of the size classes (summed) a split workload's config serves to count as kept (a baseline
kept, fixed_choice; baseline_split): a config used at no traffic is not one the workload runs."""


def is_split(prog: Program, w: Workload) -> bool:
    """w's traffic may be divided among its configs (split: by_size) and it has several to divide it among, or
    an API to send a share to (model._split_api)."""
    return (w.kind == "interactive" and w.split_mode(prog.plan.policy) != "none"
            and (len(prog.cands.by_workload[w.name]) > 1 or (w.api is not None and w.api.max_share > 0)))


def split_classes(prog: Program, w: Workload) -> list[float]:
    """The classes a split workload's traffic is divided by, as shares of its output tokens: with split: by_size
    its tokens.mix's classes; with split: any one class, the whole demand (a router blind to request sizes)."""
    if w.split_mode(prog.plan.policy) == "any" or w.tokens is None:
        return [1.0]
    return w.tokens.output_shares()


def split_goodput(prog: Program, w: Workload, c: Candidate) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """A config's goodput and its source at each of split_classes: with split: any its goodput over the whole
    mix (the harmonic mean of its classes', weighted by their output tokens)."""
    if w.split_mode(prog.plan.policy) == "any":
        return (c.goodput,), (c.goodput_source,)
    return c.class_goodput or (c.goodput,), c.class_sources or (c.goodput_source,)


def workload_id(prog: Program, w: Workload | str) -> str:
    name = w if isinstance(w, str) else w.name
    return f"w{prog.workload_index[name]}"


def config_id(prog: Program, c: Candidate) -> str:
    """Short, safe id of a candidate: workload index + its position among that workload's candidates."""
    if not prog.candidate_ids:
        prog.candidate_ids.update((cand.key, f"{workload_id(prog, w)}_c{i}") for w, cs in prog.cands.by_workload.items()
                                  for i, cand in enumerate(cs))
    return prog.candidate_ids[c.key]


def batch_volume(w: Workload) -> float:
    assert w.batch is not None
    return w.batch.output_tokens_per_day


def batch_goodput(prog: Program, c: Candidate, day_type: str) -> float:
    """A batch config's goodput on a day type (inputs.scenarios.goodput_factor; interactive configs carry it
    in their hourly GPUs)."""
    return c.goodput * goodput_factor(prog.plan, c.goodput_source, day_type)


def api_share(w: Workload) -> float:
    return w.api.max_share if w.api is not None else 0.0


def reserved_nodes(prog: Program, o: str, p: str, tiers: list[str] | None = None,
                   segment: str | None = None) -> list[pulp.LpVariable]:
    """R[o,·,k] pool p may draw on: the shared level, or its own (tiers: those its pool may buy); with a
    `segment`, also the reservations started by its first day (R[o,·,k,t], t ≤ the segment's first day)."""
    now, later = reserved_by_offer(prog)
    out = [v for pp, k, v in now.get(o, ()) if (pp is None or pp == p) and (tiers is None or k in tiers)]
    if segment is not None and prog.reserved_later:
        day = prog.segments.first_day(segment)
        out += [v for pp, k, t, v in later.get(o, ())
                if t <= day and (pp is None or pp == p) and (tiers is None or k in tiers)]
    return out


def reserved_by_offer(prog: Program) -> tuple[dict[str, list], dict[str, list]]:
    """prog.reserved and prog.reserved_later by offer, each in the tables' order: reserved_nodes is asked once per
    supply row and valid inequality, and scanning both tables each time made a large program's build quadratic.
    Rebuilt when either table has changed size (they only grow, while the program is built)."""
    stamp = (id(prog.reserved), len(prog.reserved), id(prog.reserved_later), len(prog.reserved_later))
    cached = prog._reserved_index
    if cached and cached[0] == stamp:
        return cached[1], cached[2]
    now: dict[str, list] = {}
    for (o, pp, k), v in prog.reserved.items():
        now.setdefault(o, []).append((pp, k, v))
    later: dict[str, list] = {}
    for (o, pp, k, t), v in prog.reserved_later.items():
        later.setdefault(o, []).append((pp, k, t, v))
    prog._reserved_index = (stamp, now, later)
    return now, later
