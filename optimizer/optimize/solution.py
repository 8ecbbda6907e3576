"""What a solve decided, as plain values: the only thing the results layer reads from the optimizer.

No PuLP here: `program.Program.solution()` reads the solver's variables into a `Solution` once, and
everything downstream (results, reports, JSON) works from these dictionaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from optimizer.optimize.calendar import Segments

Status = Literal["optimal", "feasible", "infeasible", "error"]
StopReason = Literal["optimal", "gap", "safety cap", "nodes", "iterations", "alternatives", "solutions", "infeasible",
                     "error"]
"""What ended a solver call: a proof (optimal: no gap left; gap: within the gap asked; infeasible), a limit (nodes,
simplex iterations, solutions: the first plan asked for; "safety cap": the wall clock), or an error."""

OfferPoolHour = tuple[str, str, str, int]
"""(offer, pool, segment, hour)."""
DayHour = tuple[str, int]


@dataclass(frozen=True)
class StepWork:
    """One step's solver calls (work.py): how many, the work they did, and what stopped them."""

    step: str
    """relax, round, search, settle, tidy or price (strategy.py's steps)."""
    solves: int
    simplex_iterations: int
    """Simplex iterations of every call (HiGHS: simplex_iteration_count; CBC: its log's total iterations)."""
    mip_nodes: int
    """Branch-and-bound nodes of every call (HiGHS: mip_node_count; CBC: its log's enumerated nodes)."""
    stopped_by: StopReason
    """The stop of its calls that says least about the answer (work.STOPS): "safety cap" when any was cut short by
    the wall clock."""


@dataclass(frozen=True)
class Decomposition:
    """How a scenario plan was solved by scenario (steps/decompose.py): the result's solver.decomposition."""

    method: str
    """progressive hedging"""
    iterations: int
    """Rounds of the scenarios' own programs (each round one solve per scenario)."""
    bound: float | None
    """The Lagrangian bound: Σ weight × each scenario's proven bound, at the best round's prices."""
    subproblems: int
    """Scenarios, each solved alone in every round."""
    engine: str
    """Where the scenarios' solves ran: serial, processes or ray (optimizer.parallel)."""


@dataclass(frozen=True)
class SolveInfo:
    name: str
    status: Status
    seconds: float
    gap: float | None
    """Proven relative gap between the plan found and the best bound (0 when optimal)."""
    objective: float | None
    bound: float | None
    fallback_note: str | None = None
    overhead_s: float = 0.0
    """Seconds spent handing the program to the solver and reading it back (not solving): grows with
    the program's size — about half a minute for a 1,000-workload plan through PuLP."""
    work: tuple[StepWork, ...] = ()
    """The solve's work step by step, in the order the steps first ran (strategy.solve_candidates; empty for a
    single solver call and in results written before it was recorded)."""
    decomposition: Decomposition | None = None
    """Set when the plan was solved by scenario (steps/decompose.py)."""


@dataclass(frozen=True)
class Forced:
    """One alternative config priced in the program: forced, every other workload's choice kept."""

    difference: float | None
    """Objective with it forced − the plan's objective; None when no plan was found (see `how`)."""
    how: Literal["optimal", "bounded", "infeasible", "not priced"]
    """optimal: within the solve's gap; bounded: the best plan found within the node limit (an upper
    bound on the difference); infeasible: no plan with the other choices kept; not priced: no plan found
    within the node or time limit."""


@dataclass(frozen=True)
class Solution:
    """Every value the program decided, keyed like the program's variables (zeros included)."""

    segments: Segments
    """The time cut the program was built on (segments, contract periods, committed GPUs)."""
    chosen: dict[str, str]
    """Workload → the key of its chosen candidate config."""
    gpus: dict[str, dict[DayHour, float]]
    """Chosen candidate key → (segment, hour) → GPUs it uses (replicas × GPUs per replica)."""
    reserved_nodes: dict[tuple[str, str | None, str], float]
    """(offer, pool or None when pools share, tier) → reserved nodes for the whole horizon."""
    on_demand_nodes: dict[OfferPoolHour, float]
    spot_nodes: dict[OfferPoolHour, float]
    lent: dict[OfferPoolHour, float]
    """Reserved (and committed) GPUs lent to a pool at an hour, when pools share reservations."""
    committed_split: dict[tuple[str, str, int | None], float]
    """(offer, pool, contract period or None) → committed GPUs a pool holds when pools do not share."""
    batch_replica_hours: dict[tuple[str, str, int], float]
    """(candidate key, segment, hour) → replica-hours a batch config runs (continuous)."""
    api_volume: dict[tuple[str, str], float]
    """(workload, segment) → batch output tokens a day sent to the API."""
    cap_excess: dict[tuple[str, str, str | None, int | None], float] = field(default_factory=dict)
    """Diagnosis mode only: GPUs beyond each cap (offer, tier, segment, hour)."""
    switching_cost: dict[str, float] = field(default_factory=dict)
    """With a baseline: workload → what leaving its last choice is charged (model.define_baseline)."""
    split: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)
    """Workloads with split: by_size → each config that serves traffic → its share of each request-size class's
    requests (in the tokens.mix's order); `gpus` then holds every such config, `chosen` the one with the most."""
    split_replicas: dict[str, dict[DayHour, tuple[int, int, int]]] = field(default_factory=dict)
    """A split workload's configs that serve traffic → (segment, hour) → (base, spares, rollout) replicas."""
    forced: dict[str, "Forced"] = field(default_factory=dict)
    """Alternative candidate key → the plan priced with that config forced (strategy.price_alternatives)."""
    reserved_later: dict[tuple[str, str | None, str, int], float] = field(default_factory=dict)
    """(offer, pool or None, tier, start day > 0) → reserved nodes serving from that day to the horizon's end."""
    shared: dict[OfferPoolHour, tuple[int, int, int]] = field(default_factory=dict)
    """Groups of workloads sharing GPUs (policy.share_pools): (offer, pool, segment, hour) → the group's (base,
    spares, rollout) GPUs, each holding one replica of every member; `gpus` gives each member its part of them."""
    spend_new: dict[str, float] = field(default_factory=dict)
    """New spend commitment (spend.SpendPlan key) → its $/hour of discounted spend (model.define_savings_plans)."""
    spend_covered: dict[tuple[str, str, str, int], float] = field(default_factory=dict)
    """(commitment key, offer, cell, hour) → discounted spend of that hour it covers at the offer."""
    moves: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Workloads that change config at a contract period's boundary (policy.moves) → their config's key in each
    contract period (segments.calendar.periods' order; the first is `chosen`); `gpus` holds every such config."""

    def gpus_at(self, key: str, dh: DayHour) -> float:
        return self.gpus.get(key, {}).get(dh, 0.0)
