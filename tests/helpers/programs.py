"""Small integer programs built directly in PuLP, for the solver-layer tests."""

from __future__ import annotations

import random

import pulp


def covering_program(seed: int, n: int = 12, m: int = 8) -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    """A covering program: m rows Σ a·x ≥ b over n bounded integer variables, positive costs."""
    rng = random.Random(seed)
    prob = pulp.LpProblem(f"p{seed}", pulp.LpMinimize)
    xs = [prob.add_variable(f"x{j}", lowBound=0, upBound=rng.randint(3, 9), cat=pulp.LpInteger) for j in range(n)]
    prob += pulp.lpSum(rng.uniform(1, 10) * x for x in xs)
    for i in range(m):
        picked = rng.sample(xs, rng.randint(2, 5))
        prob += pulp.lpSum(rng.uniform(0.5, 3) * x for x in picked) >= rng.uniform(1, 8), f"cover{i}"
    return prob, xs
