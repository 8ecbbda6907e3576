"""SolvePolicy: every tuning number of how a plan is solved (strategy.py), in one place, each with why.

The steps (strategy.relax, round_plan, search, settle, price) read `strategy.POLICY`; a test or a study that
wants another policy replaces it (dataclasses.replace) rather than editing a module constant. The measurements
behind the values are in benchmarks/SOLVER.md and the commit messages, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_RESTART: dict[str, Any] = {"mip_allow_restart": False}
"""HiGHS without restarts: on a program with only its choices whole, each restart presolves and solves the root LP
again while its cut rounds lift the bound little; branching is what proves it."""
BOUND_ONLY: dict[str, Any] = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                              "mip_heuristic_run_root_reduced_cost": False,
                              "mip_heuristic_run_feasibility_jump": False, **NO_RESTART}
"""HiGHS's primal heuristics (and restarts) off, for a program solved for its bound from a plan in hand: the
heuristics' sub-MIPs would only look for the plan it was given (mip_heuristic_effort 0 alone leaves them on)."""


@dataclass(frozen=True)
class SolvePolicy:
    """How strategy.py spends a solve's time limit; the defaults are planopt's."""

    # --- step 1: relax --------------------------------------------------------------------------------------
    cut_rounds: int = 5
    """Rounds of adding the valid inequalities the relaxation violates and solving it again: a few bring its bound
    close to the bound with every row."""
    cut_round_gain: float = 1e-4
    """A round that lifts the bound by less than this share ends them (alternative optima of the relaxation can
    violate other rows without a higher bound)."""
    warm_lp_s: float = 1.0
    """A relaxation this slow starts each cut round from the last round's basis; a quicker one has little to gain
    and is solved from scratch, where from a basis it could end at another optimal vertex, separate other rows
    and leave step 3 another (equally exact, but slower or faster) program."""

    # --- step 2: round --------------------------------------------------------------------------------------
    decided: float = 0.99
    """A relaxation that gives a workload's config less than this share is unsure of it; the configs it gives at
    least this share are held in step 2's last fallback."""
    first_plan_share: float = 0.5
    """At most this share of the time left for each of the fallback's two solves (a first plan, then its configs
    held), so the second always has time."""
    choice_min_rows: int = 5_000
    """Step 2 chooses configs whole (with far_from_bound) only on programs at least this large: on smaller ones
    the choice program and each round cost about what searching the whole program does."""
    far_from_bound: float = 0.1
    """Step 2 chooses configs whole when the relaxation's configs, held, give a plan more than this share above
    the bound: such a plan starts a long search far from the optimum."""
    choice_share: float = 0.7
    """At most this share of the time left for the program with only its choices whole: its bound is the plan's,
    so it gets most of the time, and the held configs' whole-node solve after it still fits."""
    choice_gap: float = 0.1
    """That program is solved to this share of the plan's gap target: the plan costs more than its objective by
    the hours' rounding, not by its own gap, so its bound must be tighter than the target."""
    pooled_rounds: int = 3
    """At most this many rounds of rounding the pools' GPUs to whole nodes at a plan's configs (an integer
    L-shaped loop over config sets): each round is a whole solve of the choice program."""
    pooled_gap: float = 0.1
    """The rounding rounds solve their program to this share of the gap target: without restarts HiGHS proves it
    by its tree, which closes all at once, so a tighter target costs little and proves the plan."""
    pooled_solvers: tuple[str, ...] = ("highs",)
    """Solvers given the pooled-rounding rows where a re-solve holds a plan's configs. Not CBC: given the rows it
    returned a plan above a small program's optimum as optimal (tests/optimize/test_pooled_rounding.py)."""
    no_restart: dict[str, Any] = field(default_factory=lambda: dict(NO_RESTART))
    """HiGHS options for the choice program (NO_RESTART)."""
    bound_only: dict[str, Any] = field(default_factory=lambda: dict(BOUND_ONLY))
    """HiGHS options for a program solved for its bound from a plan in hand (BOUND_ONLY)."""

    # --- step 3: search -------------------------------------------------------------------------------------
    warm_start_gap: float = 0.5
    """Step 2's plan starts the search only when it is within this share of the bound: from a plan far above it
    HiGHS searches in worse places than from its own first plans."""
    full_cuts_rows: float = 1.0
    """The search takes every valid inequality when they add at most this many times the program's rows; past
    that, building them and the larger relaxation cost more than the bound they add, so only those separated so
    far go in (still a valid program)."""

    # --- configs alone at their offer: settle ---------------------------------------------------------------
    sole_tenant_lp_s: float = 5.0
    """Time limit of one sole-tenant config's relaxation (it takes milliseconds; one not solved stays in the
    program as an ordinary config)."""
    settle_rounds: int = 5
    """At most this many re-solves after a plan chose sole-tenant configs whose cost was only a bound."""
    settle_min_s: float = 5.0
    """Seconds the program gets at least when it must still find a plan with the time limit run out (no plan in
    hand), and each chosen offer's own solve in explain's forced re-solves: a plan late beats none."""
    settle_share: float = 0.1
    """Of the time limit, the share the search leaves for settling sole-tenant configs, so that the limit bounds
    the whole solve; kept whether or not one is then chosen, and small, since a plan that chooses none searches
    that much less."""
    settle_own_min_s: float = 1.0
    """Seconds a chosen sole-tenant config's own offer gets at least; one that ends with a plan short of optimal
    is priced at that plan (an upper bound)."""
    hours_min_s: float = 1.0
    """Solver seconds the chosen sole-tenant offers' hours get at least: every choice is held and the solve starts
    from a plan, so the time is for improving and proving the hours."""
    hours_build_factor: float = 1.5
    """The program with every offer and inequality is expected to take this many times as long to build as the
    one with sole-tenant configs priced apart (settle_budget reserves that much)."""

    # --- after the plan: tie-break -------------------------------------------------------------------------------
    tie_break_node_limit: int = 200
    """Branch-and-bound nodes of the tie-break pass: a node limit, unlike a time limit, gives the same schedule on
    every machine."""
    tie_break_share: float = 0.1
    """The tie-break pass takes at most this share of the solve's time (at least tie_break_min_s): tidiness is worth little
    next to cost."""
    tie_break_min_s: float = 3.0
    """The tie-break pass's time limit is a safety net for its node limit; shorter, a busy machine cuts the pass by
    time and leaves another schedule than an idle one."""
    tie_break_solver_share: float = 0.7
    """Of the tie-break budget, at most this share for building and solving; the rest hands the problem to the solver
    and reads it back."""
    tie_break_gap: float = 0.01
    """How close to the tidiest schedule the pass must prove it is (tidiness, not cost: the cost is a row)."""

    # --- price the alternatives -----------------------------------------------------------------------------
    node_limit: int = 200
    """Branch-and-bound nodes per priced alternative: deterministic, and enough for the small programs left once
    every choice is fixed (most prove their gap at the root)."""
    seconds_per_alternative: float = 10.0
    """A safety net on each alternative's node-limited solve, for very large plans."""
    pricing_budget_s: float = 60.0
    """At most this long pricing alternatives (and half the plan's time limit, at least 5 s); past it the rest
    are "not priced": on very large plans which ones depends on the machine's speed."""


DEFAULT_POLICY = SolvePolicy()
"""planopt's policy: what a step called on its own reads (a solve hands its steps strategy.POLICY)."""
