"""SolvePolicy: a solve's budgets and switches — the work limit, the safety cap, the gap, the solver and its
threads — and every tuning number of how a plan is solved (strategy.py), in one place, each with why.

The steps (relax, round_plan, search, settle, break_ties, price_alternatives) read the SolvePolicy their Run
carries: `strategy.POLICY`'s tuning with the plan's policy and the command line's options laid over it
(steps/run.py's solve_policy). A test or a study that wants another policy replaces strategy.POLICY
(dataclasses.replace) rather than editing a module constant. The measurements behind the values are in
benchmarks/SOLVER.md and the commit messages, not here.

Every step stops on work — branch-and-bound nodes and simplex iterations, counts the solver reports the same on
every machine — never on the clock alone: the wall clock (`safety_cap_s`) only cuts short a solve that runs far
past what its work should take, and the result then says so (solver.stopped_by "safety cap").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from optimizer.inputs.schema.plan import WorkLimit as StatedWorkLimit
from optimizer.inputs.schema.plan import WorkShares

NO_RESTART: dict[str, Any] = {"mip_allow_restart": False}
"""HiGHS without restarts: on a program with only its choices whole, each restart presolves and solves the root LP
again while its cut rounds lift the bound little; branching is what proves it."""
BOUND_ONLY: dict[str, Any] = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                              "mip_heuristic_run_root_reduced_cost": False,
                              "mip_heuristic_run_feasibility_jump": False, **NO_RESTART}
"""HiGHS's primal heuristics (and restarts) off, for a program solved for its bound from a plan in hand: the
heuristics' sub-MIPs would only look for the plan it was given (mip_heuristic_effort 0 alone leaves them on)."""


STEP_SHARES: Mapping[str, float] = MappingProxyType(WorkShares().model_dump())
"""Each step's share of the work limit (the plan's policy.work_limit.shares, where their defaults say why): the
most its solver calls may spend, in nodes and in simplex iterations, over the whole solve; a step without one (tidy)
has the whole."""


@dataclass(frozen=True)
class WorkLimit:
    """The solve's work budget (plan `policy.work_limit`): nodes and simplex iterations, shared out by step."""

    nodes: int = StatedWorkLimit().nodes
    """Branch-and-bound nodes, the measure of every integer program's solve (HiGHS mip_max_nodes, CBC maxNodes)."""
    lp_iterations: int = StatedWorkLimit().lp_iterations
    """Simplex iterations, the measure of every relaxation's solve (HiGHS simplex_iteration_limit, CBC
    maxIterations) and of pricing alternatives; HiGHS does not bound an integer program's LP iterations by it."""
    shares: Mapping[str, float] = field(default_factory=lambda: dict(STEP_SHARES))
    """Step (relax, round, search, settle, price) → the share of both budgets its calls may spend (STEP_SHARES)."""

    def scaled(self, factor: float) -> "WorkLimit":
        """Both budgets times `factor` (the command line's --work-limit), each at least 1."""
        return WorkLimit(max(1, round(self.nodes * factor)), max(1, round(self.lp_iterations * factor)),
                         dict(self.shares))

    def step(self, name: str) -> tuple[int, int]:
        """(nodes, simplex iterations) step `name` may spend in all; a step without a share gets the whole."""
        share = self.shares.get(name, 1.0)
        return max(1, int(share * self.nodes)), max(1, int(share * self.lp_iterations))


@dataclass(frozen=True)
class SolvePolicy:
    """A solve's budgets and switches, and how strategy.py spends them; the defaults are planopt's."""

    # --- budgets and switches: the plan's policy and the command line (steps/run.py solve_policy) -------------
    solver: str = "highs"
    """The solver asked for (solver.solve falls back to CBC when HiGHS is missing)."""
    mip_gap: float = 0.001
    """A plan proven within this share of the bound ends the solve."""
    work: WorkLimit = field(default_factory=WorkLimit)
    """The work limit: what stops every step (WorkLimit)."""
    safety_cap_s: float = 600.0
    """Wall-clock seconds after which every solver call still running is cut short (plan policy.time_limit_s,
    --time-limit): a safety cap far above what the work limit takes, not the stopping rule."""
    threads: int = 1
    """Solver threads: with one, HiGHS and CBC walk the same tree in the same order on every machine (with more,
    HiGHS's parallel parts race)."""

    # --- step 1: relax --------------------------------------------------------------------------------------
    cut_rounds: int = 5
    """Rounds of adding the valid inequalities the relaxation violates and solving it again: a few bring its bound
    close to the bound with every row."""
    cut_round_gain: float = 1e-4
    """A round that lifts the bound by less than this share ends them (alternative optima of the relaxation can
    violate other rows without a higher bound)."""
    warm_lp_iterations: int = 50_000
    """A relaxation that took this many simplex iterations starts each cut round from the last round's basis; a
    smaller one has little to gain and is solved from scratch, where from a basis it could end at another optimal
    vertex, separate other rows and leave step 3 another (equally exact, but slower or faster) program. A count,
    not seconds, so the choice is the same on every machine."""

    round_first_min_columns: int = 100_000
    """On a program of at least this many variables, step 2 rounds the first relaxation before any cut round, and
    the cut rounds (and step 2 again) run only when that plan is not proven: there one relaxation costs far more
    than a rounding, and the first relaxation's configs, held, are usually proven already."""

    # --- step 2: round --------------------------------------------------------------------------------------
    decided: float = 0.99
    """A relaxation that gives a workload's config less than this share is unsure of it; the configs it gives at
    least this share are held in step 2's last fallback."""
    first_plan_share: float = 0.5
    """At most this share of step 2's work left for each of the fallback's two solves (a first plan, then its
    configs held), so the second always has some."""
    choice_min_rows: int = 5_000
    """Step 2 chooses configs whole (with far_from_bound) only on programs at least this large: on smaller ones
    the choice program and each round cost about what searching the whole program does."""
    far_from_bound: float = 0.1
    """Step 2 chooses configs whole when the relaxation's configs, held, give a plan more than this share above
    the bound: such a plan starts a long search far from the optimum."""
    choice_share: float = 0.7
    """At most this share of step 2's work left for the program with only its choices whole: its bound is the
    plan's, so it gets most of it, and the held configs' whole-node solve after it still fits."""
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
    settle_rounds: int = 5
    """At most this many re-solves after a plan chose sole-tenant configs whose cost was only a bound."""
    settle_own_share: float = 0.5
    """Each chosen sole-tenant config's own solve may spend this share of the settle step's nodes left, so the
    ones after it and the chosen offers' hours still have some."""

    # --- after the plan: tie-break -------------------------------------------------------------------------------
    tie_break_node_limit: int = 200
    """Branch-and-bound nodes of the tie-break pass: a node limit, unlike a time limit, gives the same schedule on
    every machine."""
    tie_break_max_columns: int = 150_000
    """A program of more variables is not tidied: handing it to the solver again costs more than tidiness is worth
    (the generated 1,000-workload plan, about 392k; the 100-workload one is well below). A count of the program, not
    its measured hand-over, so the choice is the same on every machine."""
    tie_break_gap: float = 0.01
    """How close to the tidiest schedule the pass must prove it is (tidiness, not cost: the cost is a row)."""

    # --- a scenario plan solved by scenario: steps/decompose.py ----------------------------------------------
    decompose: str = "never"
    """The plan's policy.decompose: never (the default: the two-stage program whole), scenarios (always, for the
    expected cost), auto (by scenario from decompose_min_scenarios scenarios on)."""
    decompose_min_scenarios: int = 10
    """auto solves a plan by scenario from this many scenarios on: the two-stage program grows with them (each a
    copy of every day type's hours) and its search with it, where each scenario's own program stays the size of
    one; below it the two-stage program's own search proves the gap sooner than rounds of one solve per scenario."""
    decompose_iterations: int = 6
    """Rounds of progressive hedging at most (each one solve per scenario, in parallel): a count, so the same
    plan stops at the same round on every machine."""
    decompose_gap_share: float = 0.25
    """Each scenario's own solve is proven to this share of the plan's gap: the bound is the weighted sum of
    theirs, so each must be tighter than the target the plan is proven to."""
    decompose_step: float = 1.0
    """Polyak's θ: a round's prices move by θ · (best plan − bound) / ‖x − x̄‖² along the scenarios'
    disagreement, halved after a round that did not lift the bound."""
    decompose_engine: str = "processes"
    """Where the scenarios' solves run without --parallel: serial, processes or ray (optimizer.parallel)."""
    decompose_workers: int = 0
    """Processes for the scenarios' solves (0: one per core; never more than scenarios). The answer does not
    depend on it: results are gathered in the scenarios' order."""

    # --- price the alternatives -----------------------------------------------------------------------------
    node_limit: int = 200
    """Branch-and-bound nodes per priced alternative: deterministic, and enough for the small programs left once
    every choice is fixed (most prove their gap at the root). Pricing stops, leaving the rest "not priced", once its
    calls have spent the price step's share of the simplex iterations (WorkLimit). explain's forced re-solves
    (forcing.py) start from such a plan, then search within the search step's share of the nodes, each."""
    price_max_alternatives: int = 1_000
    """At most this many alternatives are tried in one solve, breadth first (every workload's nearest alternative,
    then every workload's next, …); past it each workload's next one reads "not priced" (solver.stopped_by price:
    alternatives; --work-limit scales it). A count, so the same alternatives are priced on every machine, and sized
    so a plan of a thousand workloads prices each one's nearest alternative well within the safety cap on a busy
    machine (piece by piece, below)."""
    price_apart_min_columns: int = 20_000
    """A program of at least this many variables prices its alternatives in the program of only the configs the
    re-solves can use (strategy._pricing_program), and each alternative re-solves only the pieces of it that its
    configs are in (optimize.pieces: in practice its two configs' offers): the same prices, each re-solve handed a
    sliver of the program. Below it (most shipped plans) the solved program itself is re-solved whole."""


DEFAULT_POLICY = SolvePolicy()
"""planopt's policy: what a step called on its own reads (a solve hands its steps strategy.POLICY)."""
