"""A workload's request-size mix (tokens.mix) from a usage log: as many size classes as the cost tells apart.

1. The finest classes: quantiles of the log's prompt tokens × its completion tokens (GRID per axis, weighted
   by requests, read off the scan's histogram: usage.SIZE_BINS_PER_OCTAVE), each cell of that grid one class
   at its requests' mean sizes. A log whose sizes are one tight cluster has one cell: one class.
2. Each class weighed on the workload's configs, as `planopt` builds them for the plan (candidates, API
   excluded): the cost of a request of class b on config c is k_c(b) = price_c × GPUs per replica_c ×
   output_b ÷ goodput_c(b), price_c the GPU-hour of the cheapest hourly tier the plan allows the offer
   (prices.cheapest_hourly_tier; GPUs alone when some config has no hourly price), goodput_c(b) the config's
   goodput at b's sizes (0: c cannot serve b). Over classes B with shares s_b of the requests:
     - the split cost  S(B) = Σ_b s_b · min_c k_c(b)   (each class on its cheapest config: split: by_size
       without whole replicas, Mélange's fluid bound);
     - the single cost N(B) = min_c Σ_b s_b · k_c(b)   (one config serving every class: split none or any).
3. Neighbouring classes (grid cells next to each other, diagonals included) are merged, one pair at a time,
   the pair that changes the cost least first, into one class at their requests' mean sizes — while the cost
   of the merged classes stays within NEGLIGIBLE of the finest classes' cost: |N(B') − N(B₀)| ≤ 0.5 % of
   N(B₀) and, for split: by_size, |S(B') − S(B₀)| ≤ 0.5 % of S(B₀). A class no config serves cannot be merged
   away into one some config does (∞ ≠ finite).

Deterministic: the histogram's cells are exact sums, the grid's cuts are bins, ties go to the first pair in
the classes' order (input, then output tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from optimizer.calibrate.types import sig
from optimizer.errors import PlanError

GRID = 4
"""Quantiles per axis of the finest classes: at most GRID × GRID classes (quartiles of input × output)."""
NEGLIGIBLE = 0.005
"""How far merging may move the workload's estimated cost (split and single, see the module's text) from the
finest classes' cost: 0.5 %."""

Cell = tuple[int, int, int, float, float]
"""(prompt bin, completion bin, requests, prompt tokens, completion tokens): one cell of usage's histogram."""
Goodputs = Callable[[Sequence[tuple[float, float]]], dict[str, tuple[float, list[float]]]]
"""(input, output) sizes → config → (its cost weight, price × GPUs per replica; its goodput at each size)."""


@dataclass(frozen=True)
class Group:
    """Requests of some grid cells: their count and token sums, and the cells' grid positions."""

    requests: int
    prompt: float
    completion: float
    at: frozenset[tuple[int, int]]

    @property
    def input(self) -> float:
        return self.prompt / self.requests

    @property
    def output(self) -> float:
        return self.completion / self.requests

    @property
    def size(self) -> tuple[float, float]:
        return (self.input, self.output)

    def __add__(self, other: "Group") -> "Group":
        return Group(self.requests + other.requests, self.prompt + other.prompt, self.completion + other.completion,
                     self.at | other.at)


@dataclass(frozen=True)
class MixChoice:
    classes: tuple[tuple[float, float, float], ...]
    """(share of requests, mean input, mean output) per class, rounded as the plan gets them (shares add up to
    1), by input then output tokens."""
    finest: int
    """Classes before merging (the grid's non-empty cells)."""
    change: float
    """The largest relative change of the estimated cost (split and single) the merges made."""
    weighed: bool
    """False: no config served the classes, nothing to weigh them by (one class, at the means)."""


def _cuts(weights: dict[int, int]) -> list[int]:
    """The bins at which the requests' cumulative share first reaches 1/GRID, 2/GRID, …: the quantiles' cuts."""
    total = sum(weights.values())
    cuts, run, k = [], 0, 1
    for b in sorted(weights):
        run += weights[b]
        while k < GRID and run * GRID >= k * total:
            cuts.append(b)
            k += 1
    return sorted(set(cuts))


def finest(cells: Sequence[Cell]) -> list[Group]:
    """The quantile grid's classes: a cell of the histogram goes to the grid row of its prompt bin and the
    column of its completion bin; empty grid cells are no class."""
    pw: dict[int, int] = {}
    cw: dict[int, int] = {}
    for pb, cb, n, _p, _c in cells:
        pw[pb] = pw.get(pb, 0) + n
        cw[cb] = cw.get(cb, 0) + n
    pcuts, ccuts = _cuts(pw), _cuts(cw)
    groups: dict[tuple[int, int], Group] = {}
    for pb, cb, n, p, c in cells:
        if n <= 0:
            continue
        at = (sum(1 for x in pcuts if pb > x), sum(1 for x in ccuts if cb > x))
        g = Group(n, p, c, frozenset([at]))
        groups[at] = groups[at] + g if at in groups else g
    return [groups[k] for k in sorted(groups)]


def _sized(groups: list[Group]) -> list[Group]:
    """Each class of no prompt or no completion tokens (a plan's class has both) merged into its nearest on the
    grid, the first in order on a tie."""
    while len(groups) > 1:
        empty = next((k for k, g in enumerate(groups) if g.prompt <= 0 or g.completion <= 0), None)
        if empty is None:
            break
        g = groups.pop(empty)
        k = min(range(len(groups)), key=lambda k: (min(max(abs(i - a), abs(j - b)) for i, j in g.at
                                                       for a, b in groups[k].at), k))
        groups[k] = groups[k] + g
        groups.sort(key=lambda x: x.size)
    return groups


def _near(a: Group, b: Group) -> bool:
    return any(max(abs(i - k), abs(j - m)) <= 1 for i, j in a.at for k, m in b.at)


def _costs(groups: Sequence[Group], table: dict[tuple[float, float], dict[str, float]],
           weights: dict[str, float]) -> tuple[float, float]:
    """(split cost S, single cost N) per request of the classes (∞ where no config serves)."""
    total = sum(g.requests for g in groups)
    per: dict[str, float] = {c: 0.0 for c in weights}
    split = 0.0
    for g in groups:
        s = g.requests / total
        good = table[g.size]
        best = math.inf
        for c, wgt in weights.items():
            gp = good.get(c, 0.0)
            k = wgt * g.output / gp if gp > 0 else math.inf
            best = min(best, k)
            per[c] += s * k
        split += s * best
    return split, min(per.values(), default=math.inf)


def _change(new: float, old: float) -> float:
    if math.isinf(old) or math.isinf(new):
        return 0.0 if math.isinf(old) and math.isinf(new) else math.inf
    return abs(new - old) / old if old > 0 else (0.0 if new == old else math.inf)


def choose(cells: Sequence[Cell], goodputs: Goodputs | None, by_size: bool) -> MixChoice:
    """The workload's size classes from its histogram: the finest grid merged while the cost moves by no more
    than NEGLIGIBLE (the module's text). `goodputs` None (no config to weigh by): one class."""
    groups = _sized(sorted(finest(cells), key=lambda g: g.size))
    start = len(groups)
    table: dict[tuple[float, float], dict[str, float]] = {}
    weights: dict[str, float] = {}
    weighed = False

    def weigh(sizes: list[tuple[float, float]]) -> None:
        todo = sorted({s for s in sizes if s not in table})
        if not todo:
            return
        assert goodputs is not None
        got = goodputs(todo)
        for s in todo:
            table[s] = {}
        for c, (wgt, gps) in sorted(got.items()):
            weights.setdefault(c, wgt)
            for s, g in zip(todo, gps):
                table[s][c] = g

    if len(groups) > 1 and goodputs is not None:
        weigh([g.size for g in groups])
        base = _costs(groups, table, weights) if weights else (math.inf, math.inf)
        if weights and not (math.isinf(base[0]) and math.isinf(base[1])):
            weighed = True
    if len(groups) == 1:
        return MixChoice(_rounded(groups), start, 0.0, True)
    if not weighed:  # nothing to tell the classes apart by: the means, as one class
        whole = groups[0]
        for g in groups[1:]:
            whole = whole + g
        return MixChoice(_rounded([whole]), start, 0.0, weighed)
    worst = 0.0
    while len(groups) > 1:
        pairs = [(i, j) for i in range(len(groups)) for j in range(i + 1, len(groups)) if _near(groups[i], groups[j])]
        if not pairs:  # cells apart on the grid (empty cells between): any two may merge
            pairs = [(i, j) for i in range(len(groups)) for j in range(i + 1, len(groups))]
        merged = {(i, j): groups[i] + groups[j] for i, j in pairs}
        weigh([m.size for m in merged.values()])
        best: tuple[float, tuple[int, int]] | None = None
        for (i, j), m in merged.items():
            trial = [g for k, g in enumerate(groups) if k not in (i, j)] + [m]
            split, single = _costs(trial, table, weights)
            moved = max(_change(single, base[1]), _change(split, base[0]) if by_size else 0.0)
            if best is None or moved < best[0]:
                best = (moved, (i, j))
        assert best is not None
        if best[0] > NEGLIGIBLE:
            break
        i, j = best[1]
        worst = max(worst, best[0])
        groups = sorted([g for k, g in enumerate(groups) if k not in (i, j)] + [merged[(i, j)]], key=lambda g: g.size)
    return MixChoice(_rounded(groups), start, worst, weighed)


def _rounded(groups: Sequence[Group]) -> tuple[tuple[float, float, float], ...]:
    """(share, input, output) per class to 4 significant digits, by input then output; the largest class's
    share takes the rounding, so the shares add up to 1."""
    total = sum(g.requests for g in groups)
    rows = sorted(((g.requests / total, float(sig(g.input)), float(sig(g.output))) for g in groups),
                  key=lambda r: (r[1], r[2], -r[0]))
    if len(rows) == 1:
        return ((1.0, rows[0][1], rows[0][2]),)
    shares = [float(sig(s)) for s, _i, _o in rows]
    top = max(range(len(rows)), key=lambda k: (rows[k][0], -k))
    shares[top] = round(1.0 - sum(s for k, s in enumerate(shares) if k != top), 9)
    return tuple((s, i, o) for s, (_s, i, o) in zip(shares, rows))


def config_goodputs(loaded, workload: str) -> tuple[Goodputs, list[str]]:
    """The workload's configs as the plan builds them, at any sizes: sizes → config → (its weight, goodput at
    each size), and the weights' unit (a list filled on the first call): "$" — price per GPU-hour of the
    cheapest hourly tier the plan allows × GPUs per replica — or "GPUs" — GPUs per replica, when some config
    of the first call has no hourly price (an offer only bought). Built with the sizes as a tokens.mix under
    split: by_size, so a config that serves only some of them is kept (goodput 0 at the others)."""
    import dataclasses

    from optimizer.candidates.build import build_candidates
    from optimizer.inputs import prices
    from optimizer.inputs.schema.plan import SizeClass, Tokens

    plan = loaded.plan
    w = next(x for x in plan.workloads if x.name == workload)
    offers = loaded.catalog.offers
    unit: list[str] = []

    def price(offer_id: str) -> float:
        offer = offers.get(offer_id)
        tier = prices.cheapest_hourly_tier(plan, offer, w.pool) if offer is not None else None
        return prices.gpu_hour(offer, tier) if offer is not None and tier is not None else 0.0

    def goodputs(sizes: Sequence[tuple[float, float]]) -> dict[str, tuple[float, list[float]]]:
        tokens = Tokens(mix=[SizeClass(share=1.0 / len(sizes), input=i, output=o) for i, o in sizes])
        one = w.model_copy(update={"tokens": tokens, "split": "by_size"})
        try:
            built = build_candidates(dataclasses.replace(loaded, plan=plan.model_copy(update={"workloads": [one]})),
                                     strict=False)
        except PlanError:  # the plan's own settings leave it nothing: nothing to weigh by
            return {}
        cands = [c for c in built.by_workload.get(w.name, []) if c.kind != "api" and c.offer is not None]
        if not unit:
            unit.append("$" if all(price(c.offer) > 0 for c in cands) else "GPUs")  # type: ignore[arg-type]
        out: dict[str, tuple[float, list[float]]] = {}
        for c in cands:
            weight = c.gpu_fraction * (price(c.offer) if unit[0] == "$" else 1.0)  # type: ignore[arg-type]
            if weight > 0:
                out[c.key] = (weight, list(c.class_goodput) if c.class_goodput else [c.goodput])
        return out

    return goodputs, unit
