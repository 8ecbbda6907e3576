"""Valid inequalities of the integer program: rows that cut off fractional node counts without cutting off
any plan (node_rounding, batch_rounding, batch_mir, pooled_rounding; optimize.families states each).

The relaxation takes only the rows its optimum violates (separate_cuts, in rounds) and branch and bound
all of them (add_cuts); pooled_rounding's rows are added at one plan's configs (strategy.POOLED_SOLVERS).
"""

from __future__ import annotations

import math
from typing import Callable

import pulp

from optimizer.candidates.types import Candidate
from optimizer.inputs.schema.plan import Workload
from optimizer.optimize.program import (
    Program,
    api_share,
    batch_goodput,
    batch_volume,
    gpu_cands,
    at_least,
    is_split,
    reserved_nodes,
    value_of,
    workload_id,
)
from optimizer.optimize.solution import OfferPoolHour
from optimizer.processes import collection_paused
from optimizer.units import SECONDS_PER_HOUR


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
        if is_split(prog, w):
            continue
        for o in {c.offer for c in gpu_cands(prog, w)}:
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
    only help), and the rest rounded (mixed-integer rounding, mir_coefficient; b = −a_0 after the
    substitution, f = frac(b) > 0): family `pooled_rounding` (optimize.families), where x[c] (c ≠ r(w))
    carries a_c = (G[r(w)] − G[c]) / m_o: the nodes' worth of GPUs the pool no longer needs (or, negative,
    needs more) when w leaves its reference config. At the reference,
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
    with collection_paused():  # a bulk build, as build_model's: the garbage collector would scan every new row
        return _pooled_rows(prog, reference, f"r{len(prog.pooled_at)}")


def _pooled_rows(prog: Program, reference: dict[str, str], tag: str) -> int:
    """define_pooled_rounding's rows at `reference`, named with `tag`; how many."""
    of_var: dict[pulp.LpVariable, str] = {}
    reference_x: dict[str, pulp.LpVariable] = {}
    reference_configs: list[Candidate] = []
    for w in prog.plan.workloads:
        for c in prog.cands.by_workload[w.name]:
            x = prog.choice[c.key]
            if isinstance(x, pulp.LpVariable):
                of_var[x] = w.name
                if reference.get(w.name) == c.key:
                    reference_x[w.name] = x
                    reference_configs.append(c)
    # the GPUs each pool asks at each hour at the reference configs (at_x) and with the sole configs' too
    at_x: dict[OfferPoolHour, float] = {}
    for c in reference_configs:
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
            r = reference_x.get(w)
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
            r, a_r = reference_x.get(w), at[w]
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
    res = reserved_nodes(prog, o, w.pool)

    def nodes_at(s: str, h: int) -> list:
        out = reserved_nodes(prog, o, w.pool, segment=s) if prog.reserved_later else list(res)
        for table in (prog.on_demand, prog.spot):
            v = table.get((o, w.pool, s, h))
            if v is not None:
                out.append(v)
        return out

    return nodes_at


def _violated(lhs: list, rhs: list[tuple[float, object]]) -> bool:
    """Σ lhs ≥ Σ coef·var fails at the solved values."""
    need = sum(n * value_of(x) for n, x in rhs)
    return sum(value_of(v) for v in lhs) < need - 1e-6 * max(1.0, need)


def define_node_rounding(prog: Program, violated_only: bool = False) -> int:
    """Valid inequalities: whole nodes carry at least each workload's own GPUs, families `node_rounding`,
    `batch_rounding` and `batch_mir` (optimize.families; batch_mir derived in _batch_mir).

    Not new rules: whatever else shares them, the nodes w can draw on (its pool's on-demand and
    spot nodes, and the reserved nodes it may borrow from) hold w's own GPUs in whole nodes;
    a batch day's GPU-hours count less what the API may take, and less the GPUs under contract.
    They cut off the fractional node counts that make up much of the relaxation's gap — but one row
    per workload, offer, segment and hour is most of a large plan's rows and most of its relaxation's
    time, while they rarely move a large plan's bound (benchmarks/SOLVER.md). So the relaxation takes only the rows its optimum violates (`violated_only`, in rounds:
    separate_cuts) and branch and bound all of them (add_cuts, before step 3). Returns the rows added.
    """
    added = prog.cut_rows
    count = 0
    for w in prog.plan.workloads:
        if is_split(prog, w):  # its GPUs are whole in its own rows (family split)
            continue
        by_offer: dict[str, list[Candidate]] = {}
        for c in gpu_cands(prog, w):
            by_offer.setdefault(c.offer, []).append(c)  # type: ignore[arg-type]
        wid = workload_id(prog, w)
        for o in sorted(by_offer):
            m = prog.offers[o].gpus_per_node
            if m == 1:
                continue  # whole GPUs are whole nodes: nothing to round
            cs = by_offer[o]
            if violated_only and not any(value_of(x) > 1e-9 for c in cs for x in prog.choices_of(c.key)):
                continue  # none of its configs here is chosen, even in part: no row is violated
            nodes_at = _nodes_for(prog, w, o)
            for s, dtype in prog.segments.of_offer(o):
                k = prog.segments.committed_at(o, s)  # GPUs under contract need no node
                if w.kind == "batch":
                    if (w.name, o, s, None) not in added:
                        count += _batch_rows(prog, w, cs, o, s, dtype, m, k, nodes_at, violated_only)
                    continue
                xs = [prog.choice_at(c.key, s) for c in cs]  # a moving workload's: its config in the segment's period
                named = prog.names.series("node_rounding", wid, o, s)
                gpus = [c.gpus for c in cs]
                for h in range(24):
                    if (w.name, o, s, h) in added:
                        continue
                    dh = (dtype, h)
                    ns = [math.ceil(max(0, g[dh] - k) / m - 1e-9) for g in gpus]
                    if not any(ns):
                        continue
                    terms = list(zip(ns, xs))
                    nodes = nodes_at(s, h)
                    if violated_only and not _violated(nodes, terms):
                        continue
                    prog.add("node_rounding", at_least(nodes, terms), named(h))
                    added.add((w.name, o, s, h))
                    count += 1
    return count


def _batch_rows(prog: Program, w: Workload, cs: list[Candidate], o: str, s: str, dtype: str, m: int, k: int,
                nodes_at: Callable[[str, int], list], violated_only: bool) -> int:
    """A batch day's batch_rounding and batch_mir rows (define_node_rounding), both in once either is
    violated; how many were added."""
    assert w.batch is not None
    vol = (1 - api_share(w)) * batch_volume(w)
    committed_gpu_hours = k * len(w.batch.hours())
    terms = [(math.ceil(max(0.0, vol * c.gpu_fraction / (SECONDS_PER_HOUR * batch_goodput(prog, c, dtype) * m)
                            - committed_gpu_hours / m) - 1e-9), prog.choice[c.key]) for c in cs]
    lhs = [v for h in w.batch.hours() for v in nodes_at(s, h)]
    mir = _batch_mir(prog, w, cs, s, dtype, m, committed_gpu_hours)
    rows = []
    if any(n for n, _ in terms):
        rows.append(("batch_rounding", lhs, terms))
    if mir is not None:
        rows.append(("batch_mir", lhs + mir[0], mir[1]))
    if violated_only and not any(_violated(left, right) for _f, left, right in rows):
        return 0
    for family, left, right in rows:
        prog.add(family, at_least(left, right),
                 prog.names(family, workload_id(prog, w), o, s))
    prog.cut_rows.add((w.name, o, s, None))
    return len(rows)


def _batch_mir(prog: Program, w: Workload, cs: list[Candidate], s: str, day_type: str, m: int,
               committed_gpu_hours: int) -> tuple[list, list[tuple[float, object]]] | None:
    """Mixed-integer rounding of a batch day with API overflow (the row batch_rounding cannot see):
    its left-hand side's API terms and its right-hand side, or None when nothing rounds.

    With N the nodes w can use at o over its window, a_c = 3600·γ_c·m / (f_c·V) the share of the
    day one node-hour produces and b_c the share the GPUs under contract produce, config c needs
    a_c·N + y_c ≥ 1 − b_c, i.e. N + y_c/a_c ≥ β_c = (1 − b_c)/a_c with N integer and y_c ≥ 0. Its
    MIR inequality, summed over the configs (at most one is chosen, and y_c = 0 unless it is), is family
    `batch_mir` (optimize.families): the integer hull of that one row. Without it the LP sends a fraction of
    a node's work to the API and branching over the window's hours never closes the gap.
    """
    vol = batch_volume(w)
    ys, rhs = [], []
    for c in cs:
        y = prog.batch_api.get((c.key, s))
        if y is None:
            continue
        rate = batch_goodput(prog, c, day_type)
        a = SECONDS_PER_HOUR * rate * m / (c.gpu_fraction * vol)
        beta = (1.0 - committed_gpu_hours * SECONDS_PER_HOUR * rate / (c.gpu_fraction * vol)) / a
        frac = beta - math.floor(beta)
        if beta <= 0 or frac < 1e-6 or frac > 1 - 1e-6:
            continue  # nothing to round: batch_rounding is already the hull
        ys.append(y / (a * frac))
        rhs.append((float(math.ceil(beta)), prog.choice[c.key]))
    return (ys, rhs) if ys else None
