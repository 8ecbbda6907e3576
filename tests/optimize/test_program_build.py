"""The program's sums and rows built from term lists (optimize.program: weighted_sum, plain_sum, at_least, row,
affine) are the expressions PuLP's own arithmetic makes — the same terms in the same order, the same coefficients
and constants bit for bit — and the built program's supply rows and pool demand are the ones PuLP's arithmetic
makes from the same parts. The build takes these shortcuts for speed (benchmarks/SOLVER.md, "The program build:
where the CPU goes"); a solver handed a row whose terms or last bits differ may take another path."""

from __future__ import annotations

import random

import pulp
import pytest

from optimizer.candidates.build import build_candidates
from optimizer.optimize.model import build_model
from optimizer.optimize.program import (
    affine,
    at_least,
    gpu_cands,
    plain_sum,
    reserved_nodes,
    row,
    weighted_sum,
)
from optimizer.optimize.strategy import _segments
from optimizer.pipeline import as_solved

from tests.helpers.paths import ROOT


def exact(e) -> tuple:
    """An expression or row as data: (name, coefficient bits) in order, the constant's bits, the sense."""
    items = [(v.name, float(a).hex()) for v, a in e.items()]
    return items, float(e.constant).hex(), getattr(e, "sense", None)


def _parts(rng: random.Random, xs: list[pulp.LpVariable]) -> list:
    """Random summands: variables (some twice), expressions, numbers (0, ints, floats, -0.0)."""
    out = []
    for _ in range(rng.randint(0, 8)):
        kind = rng.random()
        if kind < 0.5:
            out.append(rng.choice(xs))
        elif kind < 0.7:
            out.append(rng.uniform(-3, 3) * rng.choice(xs) + rng.choice([0, 0.0, 1, rng.uniform(-2, 2)]))
        else:
            out.append(rng.choice([0, 1, 2, 0.0, -0.0, rng.uniform(-5, 5)]))
    return out


def _pairs(rng: random.Random, xs: list[pulp.LpVariable]) -> list:
    """Random (coefficient, summand) pairs: coefficients 0, ints, floats of either sign; summands as _parts."""
    coefs = [0, 1, 3, -2, 0.0, 0.1, 1 / 3, -0.7]
    out = []
    for _ in range(rng.randint(0, 8)):
        a = rng.choice(coefs + [rng.uniform(-4, 4)])
        x = rng.choice(xs + xs + [1, 0, 2.5, 0.3 * rng.choice(xs) + 1])
        out.append((a, x))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_sums_and_rows_are_the_ones_pulp_makes(seed):
    rng = random.Random(seed)
    prob = pulp.LpProblem("sums", pulp.LpMinimize)
    xs = [prob.add_variable(f"x{i}") for i in range(rng.randint(1, 5))]
    items, pairs = _parts(rng, xs), _pairs(rng, xs)
    assert exact(plain_sum(items)) == exact(pulp.lpSum(items))
    assert exact(weighted_sum(pairs)) == exact(pulp.lpSum(a * x for a, x in pairs))
    lhs, rhs = [rng.choice(xs) for _ in range(rng.randint(0, 4))], pairs
    assert exact(at_least(lhs, rhs)) == exact(pulp.lpSum(lhs) >= pulp.lpSum(a * x for a, x in rhs))
    left, right = pulp.lpSum(items), pulp.lpSum(a * x for a, x in pairs)
    for sense, made in ((pulp.LpConstraintGE, left >= right), (pulp.LpConstraintLE, left <= right),
                        (pulp.LpConstraintEQ, left == right)):
        assert exact(row(left, sense, right)) == exact(made)
    number = rng.choice([0, 1, 2.5])
    assert exact(row(left, pulp.LpConstraintGE, number)) == exact(left >= number)
    terms = [(rng.choice(xs), rng.choice([1, -1, 0.5, 2])) for _ in range(rng.randint(0, 6))]
    assert exact(affine(terms, 1.5)) == exact(pulp.lpSum(a * v for v, a in terms) + 1.5)


def test_q4s_supply_rows_and_pool_demand_are_the_ones_pulp_arithmetic_makes():
    """plans/q4.yaml's program: each pool's demand is the term-by-term sum of its configs' GPUs, and each supply
    row is `lpSum(supply) >= demand` as PuLP makes it from the same variables (model.define_supply)."""
    loaded = as_solved(ROOT / "plans" / "q4.yaml")
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands), cuts=False)
    demand: dict = {}
    for w in prog.plan.workloads:
        for c in gpu_cands(prog, w):
            for (d, h), (coef, var) in prog.gpu_demand.get(c.key, {}).items():
                e = demand.setdefault((c.offer, c.pool, d, h), pulp.LpAffineExpression())
                if var is None:
                    e.constant += coef
                else:
                    e[var] = e.get(var, 0.0) + coef
    assert not prog.share_used  # (a group sharing GPUs adds its own to its pool's demand)
    assert list(demand) == list(prog.pool_demand)
    for k, e in demand.items():
        assert exact(prog.pool_demand[k]) == exact(e)
    checked = 0
    for (o, p, s, h), e in prog.pool_demand.items():
        offer = prog.offers[o]
        m = offer.gpus_per_node
        supply = []
        lent = prog.lent.get((o, p, s, h))
        if lent is not None:
            supply.append(lent)
        else:
            res = reserved_nodes(prog, o, p, prog.tiers(o, p), s)
            k = prog.segments.committed_at(o, s)
            if res or k:
                v = prog.committed_split.get((o, p, prog.segments.period_of(s)))
                supply.append(m * pulp.lpSum(res) + (0 if not k else k if v is None else v))
        if (o, p, s, h) in prog.on_demand:
            supply.append(m * prog.on_demand[(o, p, s, h)])
        if (o, p, s, h) in prog.spot:
            supply.append((1.0 - offer.spot_interruption) * m * prog.spot[(o, p, s, h)])
        made = prog.prob.get_constraint_by_name(prog.names("supply", o, p, s, h))
        assert exact(made) == exact(pulp.lpSum(supply) - e >= 0)
        checked += 1
    assert checked == len(prog.pool_demand) > 100


def test_a_row_added_keeps_its_name_as_pulps_setter_would_make_it():
    """Program.add sets a row's name directly when PuLP's setter would leave it as is (program._PULP_RENAMES):
    the characters that setter rewrites are those, and the row is found by that name; others go through PuLP."""
    from optimizer.optimize.program import _PULP_RENAMES

    assert {chr(c) for c in pulp.LpAffineExpression.trans} == set("-+[] ")
    assert all(_PULP_RENAMES.search(ch) for ch in "-+[] ")
    loaded = as_solved(ROOT / "plans" / "q4.yaml")
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands), cuts=False)
    x = next(v for v in prog.choice.values() if isinstance(v, pulp.LpVariable))
    for name, kept in (("plain_row.1", "plain_row.1"), ("odd-row [1]", "odd_row__1_")):
        prog.add("test", pulp.LpConstraint(pulp.LpAffineExpression([(x, 1)]), pulp.LpConstraintLE, rhs=1), name)
        row_ = prog.prob.get_constraint_by_name(kept)
        assert row_ is not None and row_.name == kept


@pytest.mark.parametrize("name", ["n_w3_c1_weekday_7", "x_w0_c12", "odd-name [x]>y/z", "a b"])
def test_a_variable_made_by_the_program_has_the_name_pulp_would_give_it(name):
    """Program.variable sets a plain name directly (program._PULP_VARIABLE_RENAMES), else lets PuLP rewrite it."""
    from optimizer.optimize.program import _PULP_VARIABLE_RENAMES

    assert all(_PULP_VARIABLE_RENAMES.search(ch) for ch in pulp.LpElement.illegal_chars)
    loaded = as_solved(ROOT / "plans" / "seed-fleet.yaml")
    cands = build_candidates(loaded)
    prog = build_model(loaded, cands, _segments(loaded, cands), cuts=False)
    made = prog.variable(name, lowBound=0, upBound=3, cat=pulp.LpInteger)
    pulps = prog.prob.add_variable(name, lowBound=0, upBound=3, cat=pulp.LpInteger)
    assert (made.name, made.lowBound, made.upBound, made.cat) == (pulps.name, pulps.lowBound, pulps.upBound, pulps.cat)


def test_a_series_of_names_is_the_namers_own():
    from optimizer.optimize.program import Namer

    one, other = Namer(), Namer()
    named = one.series("node_rounding", "w3", "aws-h100+8x", "weekday@p2")
    assert [named(h) for h in (0, 7, 23)] == [other("node_rounding", "w3", "aws-h100+8x", "weekday@p2", h)
                                            for h in (0, 7, 23)]
    one("n", "a_b")
    with pytest.raises(ValueError, match="name collision"):
        one.series("n", "a")("b")


def test_at_least_takes_a_generator_with_a_variable_twice():
    """A left side given as a generator, with a variable in it twice (the branch that reads it again): the row PuLP's
    own arithmetic makes."""
    prob = pulp.LpProblem("rows")
    x, y = prob.add_variable("x"), prob.add_variable("y")
    made = at_least((v for v in (x, y, x)), [(2.0, y)])
    want = pulp.lpSum([x, y, x]) >= pulp.lpSum([2.0 * y])
    assert list(made.items()) == list(want.items()) and made.constant == want.constant
