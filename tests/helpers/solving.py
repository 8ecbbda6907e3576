"""Solving in the tests: what a test asserts (a status, an optimum, a proven gap) is decided by the solver,
never by the clock, so the suite gives the same verdict on an idle machine and a busy one."""

from __future__ import annotations

NO_TIME_LIMIT = 1e9
"""A time limit no solve in the suite reaches (HiGHS and CBC both take it; CBC refuses infinity). The solve stops on
work (policy.work_limit), so a test plan's time_limit_s is only its safety cap: the random plans of the brute-force,
split and scenario suites carry 600 s, which a busy machine does not reach (30 s had: a split plan's CBC solve
stopped 'feasible' at it beside other sessions' tests)."""


def random_cover(columns: int, rows: int, seed: int = 1):
    """`columns` whole amounts of 0 to 10 covering `rows` random rows at least cost: a program whose search takes
    nodes for either solver (dozens at 60 × 40)."""
    import random

    import pulp

    rng = random.Random(seed)
    prob = pulp.LpProblem("cover", pulp.LpMinimize)
    xs = [prob.add_variable(f"x{i}", 0, 10, cat="Integer") for i in range(columns)]
    prob += pulp.lpSum(rng.randint(5, 20) * x for x in xs)
    for _ in range(rows):
        prob += pulp.lpSum(rng.randint(0, 9) * x for x in xs) >= rng.randint(50, 200)
    return prob


def seeds_by_solver(seeds, solvers) -> list[tuple[int, str]]:
    """(seed, solver) cases of a random brute-force suite: HiGHS (the default solver) on every seed, CBC on every
    other one — half the plans, from the same generator (on the single-config suite the even seeds still switch
    on every feature it has). CBC, a process per solve, took most of these suites' time."""
    seeds = list(seeds)
    return [(s, solver) for solver in solvers for s in (seeds if solver != "cbc" else seeds[::2])]
