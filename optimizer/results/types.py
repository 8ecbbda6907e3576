"""A solved plan as plain, frozen data: what every view (console, JSON, Excel, HTML) reads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from pydantic import Field

from optimizer.candidates.types import Dropped
from optimizer.inputs.demand import PeakDerivation
from optimizer.optimize.solution import SolveInfo, Status
from optimizer.physics.validation import Validation
from optimizer.results.contracts import (
    CarryInfo,
    ContractRow,
    Count,
    ExpiryRow,
    NewReservation,
    NewSpendCommitment,
    PeriodRow,
    SpendContract,
)

NEGATIVE_COST_TOLERANCE = 0.01
"""A cost above minus one cent reads back: a share computed as a difference may round to −0.000001."""

Cost = Annotated[float, Field(ge=-NEGATIVE_COST_TOLERANCE)]
"""A sum of GPU-hours at prices: 0 or more (a result file holding less is refused when read)."""
Goodput = Annotated[float, Field(ge=0)]
"""Output tokens/s a replica serves within the SLO: 0 or more."""


UNASSIGNED = "unassigned"
"""The showback's team of a workload the plan gives none."""


def team_centres(workloads: list[WorkloadResult]) -> dict[str, str | None]:
    """Team → the cost centre its own workloads book to (the first, in workload order, that names one)."""
    out: dict[str, str | None] = {}
    for w in workloads:
        if w.team and w.cost_center and out.get(w.team) is None:
            out[w.team] = w.cost_center
    return out


def owners(w: WorkloadResult, centres: dict[str, str | None]) -> list[tuple[str, str | None, float]]:
    """(team, cost centre, share) a workload's spend is booked to: its tenants, each at its own team's cost
    centre when that team has one (else the workload's), or its team at its cost centre."""
    if w.tenants:
        return [(t, centres.get(t) or w.cost_center, s) for t, s in sorted(w.tenants.items())]
    return [(w.team or UNASSIGNED, w.cost_center, 1.0)]


@dataclass(frozen=True)
class ReplicaCount:
    base: Count
    spares: Count
    rollout: Count
    total: Count


@dataclass(frozen=True)
class SizeClassRow:
    """One request-size class of a workload's tokens.mix."""

    share: float
    """Its share of the workload's requests."""
    input: float
    """Mean input tokens per request."""
    output: float
    """Mean output tokens per request."""


@dataclass(frozen=True)
class SharedMember:
    """One workload of a group sharing GPUs: what it takes of each GPU."""

    workload: str
    memory_share: float
    """Share of each shared GPU's usable memory (its memory less policy.memory_reserve) its replica takes."""
    time_share: float
    """Share of the group's GPU time its demand takes at the group's busiest hour, its goodput less the slowdown."""
    goodput_output_tokens_per_s: Goodput
    """Its goodput on a GPU of its own; shared, it gets (1 − slowdown) of it for the time it takes."""
    gpu_hours: float
    """The group's GPU-hours charged to it (in proportion to the time it takes, hour by hour)."""


@dataclass(frozen=True)
class SharedGroup:
    """Workloads sharing whole GPUs by MPS or time-slicing (policy.share_pools) at one offer and pool: each GPU of
    the group holds one replica of every member; their memory adds up, their time is shared out."""

    offer: str
    pool: str
    mode: str
    """mps or time_slicing (policy.share_mode)."""
    slowdown: float
    """Share of goodput each member loses to sharing (physics.sharing.SLOWDOWN, or policy.share_slowdown)."""
    gpus_at_peak: int
    """The group's GPUs (base + spares + rollout) at its busiest hour."""
    peak_day_type: str
    peak_hour: int
    memory_share: float
    """Share of each GPU's usable memory the members take together (at most 1)."""
    time_share: float
    """Share of the group's GPU time its members take at the busiest hour (at most the occupancy)."""
    members: list[SharedMember] = field(default_factory=list)
    hourly_gpus: dict[str, list[int]] = field(default_factory=dict)
    """Day type → the group's GPUs at each hour (its busiest segment of that day type)."""


@dataclass(frozen=True)
class PeriodConfig:
    """A moving workload's config in one contract period (policy.moves)."""

    period: str
    """The period's label, as PlanResult.periods and the hourly rows name it."""
    start: str | None
    """Its first day (ISO date; None without a start_date)."""
    config: str
    """The config's label (offer · accelerator · precision · layout)."""
    key: str
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int


@dataclass(frozen=True)
class MoveRow:
    """A workload moved at a contract period's boundary (policy.moves)."""

    workload: str
    date: str | None
    """The first day it runs on the new config (ISO date; None without a start_date)."""
    period: str
    """The period that starts there (its label)."""
    from_config: str
    to_config: str
    from_offer: str | None
    to_offer: str | None
    saving: float
    """What the move saves, priced at list prices: the GPU-hours it runs on the new config until its next move (or
    the horizon's end), priced at the old config's offer's on-demand price per GPU-hour (what staying there by the
    hour would cost), less what the plan pays for them at the new offer (its purchases' price per GPU-hour there,
    the cheapest tier it bought); 0 where the old offer sells no on-demand hour. Not a re-solve: an estimate of
    the move's worth, not the plan's cost with the workload held."""


@dataclass(frozen=True)
class SplitConfig:
    """One config of a workload whose traffic is split among several: where it runs and what it used."""

    key: str
    """The config's id in the program."""
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int
    gpus_per_replica: float
    replicas: ReplicaCount
    """Its replicas at the workload's busiest hour."""
    gpu_hours: float
    """GPU-hours of work over the horizon."""
    cost: Cost
    """Its GPU-hours at the rate of the tier each used (the workload's cost is the sum over its configs)."""
    cost_by_tier: dict[str, float] = field(default_factory=dict)
    gpu_hours_by_tier: dict[str, float] = field(default_factory=dict)
    gpu_hours_by_day_type: dict[str, dict[str, float]] = field(default_factory=dict)
    """The same GPU-hours by tier and day type (the workbook scales each by its days)."""


@dataclass(frozen=True)
class WorkloadResult:
    name: str
    pool: str
    kind: str
    model: str | None
    offer: str | None
    accelerator: str | None
    provider: str | None
    precision: str | None
    tp: int
    mig: str | None
    gpus_per_replica: float
    goodput_output_tokens_per_s: Goodput
    goodput_source: str
    bound: str | None
    weights_gb: float
    kv_gb_per_seq: float
    kv_concurrency: Count
    needed_concurrency: Count
    total_gb: float
    reserve_gb: float
    free_gb: float
    peak_day_type: str
    peak_hour: int
    peak_output_tokens_per_s: float
    replicas: ReplicaCount
    gpus_at_peak: Count
    cost: Cost
    api_share: float
    """Share of the workload's tokens sent to the API over the horizon."""
    api_cost: float
    gpu_hours: float
    candidates: Count
    hourly_gpus: dict[str, list[Count]] = field(default_factory=dict)
    """GPUs in use per day type, 24 values."""
    hourly_replicas: dict[str, list[Count]] = field(default_factory=dict)
    hourly_demand: dict[str, list[float]] = field(default_factory=dict)
    hourly_api_tokens_per_s: dict[str, list[float]] = field(default_factory=dict)
    key: str = ""
    family: str = "tp"
    """Parallelism family of the chosen config: tp, pp, ep or disagg."""
    layout: str | None = None
    """The replica's layout when it is more than one tensor-parallel group ('tp8 × pp2', 'ep16 (dp-attention)')."""
    pp: int = 1
    ep: int = 1
    kv_copies: float = 1.0
    """Copies of each sequence's KV the replica keeps (kv_gb_per_seq counts them all)."""
    validation: Validation | None = None
    """The evidence behind its goodput: measured, or estimated in a group (generation/dtype/engine/class) with
    the published points behind it and the estimator's held-out error band; None for the API and reserved GPU
    blocks. Results written before it read their `calibrated` as an estimate, validated or not, points null."""
    ttft_at_load_ms: float | None = None
    """Estimated TTFT at the SLO's percentile with a replica at the planned occupancy."""
    cost_by_tier: dict[str, float] = field(default_factory=dict)
    """What `cost` is made of: reserved, on_demand, spot (the GPU-hours it used on each, hour by
    hour, at that tier's rate) and api."""
    gpu_hours_by_tier: dict[str, float] = field(default_factory=dict)
    """GPU-hours it used on reserved, on-demand, spot and committed capacity."""
    gpu_hours_by_day_type: dict[str, dict[str, float]] = field(default_factory=dict)
    """The same GPU-hours by tier and the day type they were used on (the workbook scales each by its days)."""
    committed_cost: float = 0.0
    """Its share of contracts signed before this plan: the committed GPU-hours it used at their
    rate (sunk spend; not in `cost`)."""
    team: str | None = None
    cost_center: str | None = None
    """Showback keys from the plan."""
    tenants: dict[str, float] = field(default_factory=dict)
    """Shares of its output tokens by team (the showback splits its spend by them)."""
    peak_derivation: PeakDerivation | None = None
    """The business numbers the plan's peak was derived from (demand: {users: …}); None when stated."""
    engine: str | None = None
    """The serving engine the config runs on (catalogs/engines.yaml); None: measured without one, or a result
    written before engines were planned."""
    split: dict[str, list[float]] = field(default_factory=dict)
    """split: by_size — each config that serves part of the traffic (its label) → its share of each request-size
    class's requests, in the tokens.mix's order; the row's own config is the one with the most. Empty: one config."""
    split_gpus_at_peak: dict[str, Count] = field(default_factory=dict)
    """split: by_size — each of those configs' GPUs at the workload's busiest hour."""
    split_goodput: dict[str, list[float]] = field(default_factory=dict)
    """split: by_size — each of those configs' goodput (output tokens/s a replica) at each class's sizes."""
    size_classes: list[SizeClassRow] = field(default_factory=list)
    """split: by_size — the tokens.mix's request-size classes (share of requests, mean input and output tokens),
    in the order `split` lists each config's shares. Empty: one config (or a result written before)."""
    split_configs: dict[str, SplitConfig] = field(default_factory=dict)
    """split: by_size — each config that serves part of the traffic (its label, as in `split`): where it runs,
    the GPU-hours it used by tier and its cost; they add up to the workload's."""
    shared: str | None = None
    """policy.share_pools: how it shares its GPUs with other workloads (mps or time_slicing; the result's
    shared_gpus lists the group); None: GPUs (or MIG slices) of its own."""
    configs_by_period: list[PeriodConfig] = field(default_factory=list)
    """A workload that moves (policy.moves): its config in each contract period, in order; the row's own config
    (offer, accelerator, …) is the first period's. Empty: one config for the horizon."""


@dataclass(frozen=True)
class Purchase:
    offer: str
    accelerator: str
    provider: str
    region: str
    tier: str
    gpus: Count
    """Reserved: the level held all horizon. On-demand and spot: the most in use at one hour."""
    gpu_hours: float
    price_per_gpu_hour: float
    price_estimated: bool
    cost: Cost
    gpus_per_node: int
    start: str | None = None
    """A reservation's first day of service when it starts after the horizon's first day (policy.reservation_starts:
    a renewal at a signed contract's expiry, or a month's first day), ISO date; None: from the horizon's start.
    It holds `gpus` from then to the horizon's end."""
    payment: str | None = None
    """A reservation's payment option (no_upfront, partial_upfront, all_upfront) when its offer prices several;
    its price is that option's effective price per GPU-hour."""


@dataclass(frozen=True)
class HourlySupply:
    offer: str
    pool: str
    day_type: str
    hour: int
    demand_gpus: Count
    reserved_gpus: Count
    on_demand_gpus: Count
    spot_gpus: Count
    committed_gpus: Count = 0
    """GPUs of contracts signed before this plan in use (plan `commitments`); not in reserved_gpus."""
    period: str = ""
    """The contract period (PlanResult.periods) this row covers; empty: the whole horizon."""


@dataclass(frozen=True)
class Binding:
    """A limit the plan runs against: adding capacity there, or raising it, could make the plan cheaper."""

    family: str
    """The kind of limit: cap_reserved, cap_on_demand, cap_spot (an offer's available GPUs), overflow_share
    (a workload's share of tokens sent to its API) or goodput (what bounds a config's tokens/s)."""
    what: str
    """What it binds on: an offer and tier, or a workload."""
    detail: str
    """The numbers, in words: '96 of 96 GPUs in use at 14:00 (weekday); no node left to add'."""


@dataclass(frozen=True)
class CandidateRow:
    """One config the program could choose for a workload, as `planopt explain` and the workbook list them."""

    workload: str
    key: str
    """The config's id in the program (WorkloadResult.key of the chosen one)."""
    label: str
    """The config in words: 'aws-h100 · fp8 · tp2', or 'API' (vocab.config_label)."""
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int
    mig: str | None
    gpus_per_replica: float
    goodput_output_tokens_per_s: Goodput
    goodput_source: str
    bound: str | None
    kv_concurrency: Count
    gpus_at_peak: Count
    """GPUs it needs at its busiest hour (with spares and rollout)."""
    chosen: bool
    """True for the one the plan runs."""
    family: str = "tp"
    layout: str | None = None
    calibrated: bool = True


@dataclass(frozen=True)
class AlternativeRow:
    """A config the optimizer did not choose, priced in the solved program (rank 0: the chosen one).

    `difference` is the plan's cost with this config forced and every other workload's choice kept,
    minus the plan's cost (`basis` says how it was found: "optimal" within the solve's gap, "bounded"
    by the best plan found within the node limit — both are never below −gap × the plan's cost, and
    both are upper bounds on re-optimizing everything, which `planopt explain` does); None with basis
    "infeasible" or "not priced". `standalone_cost` prices the config's GPU-hours at its offer's
    cheapest allowed hourly tier: the ranking key, not a cost of the plan.
    """

    workload: str
    rank: int
    key: str
    label: str
    goodput_output_tokens_per_s: float
    goodput_source: str
    gpus_at_peak: int
    standalone_cost: float
    difference: float | None
    basis: str = "standalone"
    """chosen, optimal, bounded, infeasible, not priced; "standalone" in results written before
    alternatives were priced (then difference compares standalone costs)."""


@dataclass(frozen=True)
class BaselineChange:
    """A workload whose choice differs from the baseline's."""

    workload: str
    from_key: str
    to_key: str
    from_label: str
    to_label: str
    cost_before: float
    """The workload's cost in the baseline result."""
    cost_after: float
    saving: float
    """cost_before − cost_after (the horizons are assumed equal; see BaselineInfo.notes)."""
    reason: str


@dataclass(frozen=True)
class BaselineInfo:
    """What `--baseline` kept from the last result, and what it changed."""

    file: str
    """The baseline result, as given."""
    change_threshold: float
    """The plan's policy.change_threshold: a choice changes only when that saves more than this share."""
    kept: list[str]
    """Workloads that kept their last choice."""
    changes: list[BaselineChange]
    new: list[str] = field(default_factory=list)
    """Workloads the baseline does not have."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CashFlowRow:
    """Spend in one month of the horizon on one offer and tier (or one workload's API)."""

    month: str
    """YYYY-MM; "M1", "M2", … (30-day months from the first day) when the plan has no start_date."""
    provider: str
    offer: str
    """Offer id; for the API, the workload that sends tokens to it."""
    tier: str
    """reserved-1y, reserved-3y, on-demand, spot, api."""
    kind: str
    """new (bought by this plan), committed (contracts signed before it) or api."""
    gpu_hours: float
    price_per_gpu_hour: float
    amount: float


@dataclass(frozen=True)
class ShowbackRow:
    """One team's (or, in a plan without teams, one workload's) spend in one month and tier (results.showback):
    the rows add up to cost.all_in, or with policy.showback: book to the book view's total (book.total)."""

    team: str
    """The team charged: a workload's team, or a tenant's; "unassigned" for a workload without one; "not used by
    any workload" for what no workload used (policy.idle: separate); "scenario weighting" for what a plan's
    risk measure adds to its tiers' sum."""
    cost_center: str | None
    """The cost centre booked: a tenant that names a team, that team's; otherwise the workload's (None: none)."""
    month: str
    tier: str
    """A cost tier (cost.by_tier's keys: reserved, on_demand, spot, api, buy, facility), committed (signed
    contracts), risk, or — policy.showback: book — depreciation_owned (owned servers' depreciation) and
    cost_of_capital (negative: bought servers' cost of capital, in the all-in but not in the book)."""
    cost: float
    """New spend (this plan's)."""
    committed_cost: float
    """Spend on contracts signed before this plan."""
    idle_share: float
    """The part of cost + committed_cost that no workload used at that hour (the whole row for the idle
    rows; with policy.idle: spread, what the row carries of it)."""
    workload: str | None = None
    """The workload, in a plan that names no team (rows per workload); None when the rows are per team."""


@dataclass(frozen=True)
class CashMonthRow:
    """One month of the horizon in the profit and loss and in cash: they differ only for servers bought,
    whose price is paid at delivery while the P&L carries the horizon's share of owning them."""

    month: str
    rented: float
    """Rented tiers, signed contracts and API that month (the same in P&L and cash)."""
    facility: float
    """Energy, space and owned servers' support that month (the same in P&L and cash)."""
    ownership: float
    """Bought servers' depreciation, cost of capital and support that month (P&L only)."""
    support: float
    """Bought servers' support that month (the part of `ownership` paid in cash as it runs)."""
    capex: float
    """Bought servers' price, in the month of their delivery (cash only)."""
    pnl: float
    """rented + facility + ownership: the month's part of cost.all_in."""
    cash: float
    """rented + facility + support + capex: what leaves the bank that month."""


@dataclass(frozen=True)
class ScheduleRow:
    """What one commitment costs in one calendar month (days of service in it × GPUs × 24 × price; a spend
    commitment's: days × 24 × its $/hour)."""

    month: str
    offer: str
    provider: str
    tier: str
    kind: str
    """signed (before this plan) or new (this plan's reservations)."""
    gpus: Count
    """GPUs under contract; 0 for a spend commitment (tier savings_plan: usd_per_hour)."""
    days: int
    price_per_gpu_hour: float
    amount: float
    """Cash paid in the month: its days' share of the term, or — for a reservation paid up front — its
    upfront amount in its first month and only the rest after."""
    upfront: float = 0.0
    """The part of `amount` paid up front (all or half the term, on the reservation's first day)."""
    usd_per_hour: float | None = None
    """A spend commitment's $/hour (tier savings_plan; its gpus and price_per_gpu_hour are 0); None for a
    reservation."""


@dataclass(frozen=True)
class BoughtRow:
    """Servers the plan buys at one offer: the decision, its cash and its share of the horizon."""

    offer: str
    accelerator: str
    nodes: Count
    gpus: Count
    gpus_per_node: int
    order_date: str | None
    delivery_date: str | None
    """First day they serve (the order date + the lead time); None without a start_date."""
    delivery_day: int
    """Days after the horizon's start they serve from."""
    capex: float
    """Cash outlay: price × units, at delivery."""
    ownership_in_horizon: float
    """Depreciation + cost of capital + support from delivery to the horizon's end (cost.by_tier.buy)."""
    depreciation_in_horizon: float
    capital_in_horizon: float
    support_in_horizon: float
    running_in_horizon: float
    """Idle and serving energy and colocation from delivery to the horizon's end (part of cost.by_tier.facility)."""
    utilization: float
    """GPU-hours served ÷ GPU-hours held from delivery."""
    payback_months: float | None
    """Months of savings against the cheapest rented alternative that repay the price (None: they never do)."""
    alternative: str | None
    """What the savings are measured against: offer and tier."""
    decision: str
    provisional: bool = False
    """True when the search stopped short of policy.mip_gap: a cheaper plan may not buy these servers, so they
    are not to be ordered before the plan is solved again with more time (false in files written before)."""
    npv_per_unit: float | None = None
    """Net present value of one unit against renting `alternative`, over its life: the monthly saving at this
    horizon's use and prices, discounted at the cost of capital, plus the residual value, minus the price
    (results.own.npv_per_unit; None without an alternative, or in files written before)."""


@dataclass(frozen=True)
class OwnedRow:
    """Servers the plan owns already: sunk capital, this horizon's running costs and use."""

    offer: str
    accelerator: str
    nodes: Count
    gpus: Count
    in_service_day: int
    book_value: float
    """Remaining book value of all of them (sunk: reported, not optimized)."""
    depreciation_in_horizon: float
    """The horizon's share of the book value (with remaining_life_years; sunk, not in cost_total)."""
    running_in_horizon: float
    """Energy, colocation and support for the horizon (in cost.by_tier.facility)."""
    gpu_hours_used: float
    utilization: float


@dataclass(frozen=True)
class BreakEvenRow:
    """Owning one buy offer's servers against renting the same accelerator at the plan's prices."""

    offer: str
    accelerator: str
    fixed_per_gpu_hour: float
    """Ownership, idle energy and colocation per GPU-hour owned."""
    serving_energy_per_gpu_hour: float
    against: str
    """The rented offer and tier compared with."""
    tier: str
    price_per_gpu_hour: float
    wins_from: float | None
    """Utilization from which owning is cheaper (None: never)."""
    wins_to: float | None
    """Utilization up to which owning is cheaper (None: never)."""


@dataclass(frozen=True)
class FacilityUse:
    """The facility's limits and what owned and bought servers take of them."""

    power_kw: float | None
    power_kw_used: float
    racks: int | None
    racks_used: int
    liquid_cooling: bool
    pue: float
    binding: list[str] = field(default_factory=list)
    """Limits with less than one more server's worth left: power_kw, racks."""
    marginal: dict[str, float] = field(default_factory=dict)
    """What one more MW (power_kw_plus_1000) or rack (racks_plus_1) would save, re-solved (binding limits only)."""
    tariff: list[float] = field(default_factory=list)
    """Energy price, USD per kWh, by hour 0–23 (empty in results written before it was kept)."""
    colo_usd_per_kw_month: float = 0.0


@dataclass(frozen=True)
class OwnInputRow:
    """One offer of your own hardware (bought or owned) with every input its costs are computed from
    (candidates.ownership), so a workbook can recompute them: per unit (server or rack) unless stated."""

    offer: str
    kind: str
    """buy (bought in this plan) or owned (already)."""
    nodes: Count
    """Units bought (0 when the plan buys none) or owned."""
    gpus_per_node: int
    price_per_node: float
    life_years: float
    residual_fraction: float
    cost_of_capital: float
    support_per_year: float
    load_kw: float
    idle_kw: float
    service_days: float
    """Plan days the units serve (bought: from delivery; owned: from `since`) to the horizon's end."""
    served_gpu_hours_by_hour: list[float] = field(default_factory=lambda: [0.0] * 24)
    """GPU-hours of these units that serve at each hour of day (0–23) over the horizon."""


@dataclass(frozen=True)
class OwnResult:
    """Hardware of your own: what is bought, what is owned, break-even, the facility, and the cash."""

    bought: list[BoughtRow]
    owned: list[OwnedRow]
    break_even: list[BreakEvenRow]
    facility: FacilityUse
    capex: float
    """Cash outlay for everything bought (at delivery); cost_total carries the horizon's share instead."""
    opex: float
    """The horizon's new spend paid as it runs: rented tiers, API, energy, space and support (bought
    servers' support too); capex + opex + cost.committed is the horizon's cash out."""
    sunk_depreciation: float
    """Owned servers' depreciation for the horizon (sunk, reported)."""
    inputs: list[OwnInputRow] = field(default_factory=list)
    """Every own offer's inputs (empty in results written before they were kept)."""


@dataclass(frozen=True)
class BookView:
    """The horizon as the accounts book it, beside the cash all-in (docs/finance.md, "Book view"): depreciation
    of servers owned and bought plus opex; the cost of capital is shown apart, not an expense.
    total = all_in + depreciation_owned − cost_of_capital."""

    depreciation_owned: float
    """Servers owned before the plan: the horizon's straight-line share of their book value over the remaining life."""
    depreciation_bought: float
    """Servers bought: price × (1 − residual) ÷ life, for the days from delivery."""
    opex: float
    """Everything else the all-in counts: rented tiers, signed contracts, API, energy, space and support."""
    cost_of_capital: float
    """Bought servers' cost of capital in the horizon: part of the all-in (an economic cost), not of the book."""
    all_in: float
    """cost.all_in, for the bridge."""
    total: float
    """depreciation_owned + depreciation_bought + opex."""


@dataclass(frozen=True)
class ScenarioRow:
    """One scenario of a two-stage plan: the plan's cost had it come true."""

    name: str
    weight: float
    cost_total: float
    """First stage (reservations, servers bought, their fixed costs) + this scenario's hourly capacity,
    API and serving energy."""
    cost_hourly: float
    """Its second stage alone."""
    shortfall_gpu_hours: float
    """GPU-hours it needs beyond capacity held (reserved, committed, owned, bought): served on demand or
    spot, where a provider may run short."""


@dataclass(frozen=True)
class RiskInfo:
    """How a plan with scenarios weighs them, and what the two-stage decision is worth."""

    measure: str
    level: float | None
    value: float
    """The risk measure over the scenarios' costs (= cost_total)."""
    expected: float
    """Σ weight × cost: the expected cost, whatever the measure."""
    p90: float
    """The scenarios' cost at the 90th percentile (by weight)."""
    mean_plan_cost: float | None = None
    """The plan decided for the mean scenario (its reservations and configs), evaluated over every scenario
    by the same measure; None when not computed."""
    vss: float | None = None
    """Value of the stochastic solution: mean_plan_cost − value (≥ 0 up to the solver's gap)."""
    vss_range: list[float] | None = None
    """[least, most] the value of the stochastic solution can be when a solve behind it stopped short of its
    gap: the mean plan's cost over the scenarios lies between its solve's bound and mean_plan_cost, this
    plan's optimum between its bound and value. None when both were proven."""
    regret: dict[str, float] = field(default_factory=dict)
    """Per scenario: this plan's cost there − the best plan had that scenario been known (the best plan its
    own solve found)."""
    regret_upto: dict[str, float] = field(default_factory=dict)
    """Per scenario: the most its regret can be — this plan's cost there − the best bound of that scenario's
    own solve, when the time stopped that solve short of the gap (the best plan there may be cheaper than the
    one found); otherwise the regret itself."""
    mean_plan_returned: bool = False
    """True: the plan returned is the mean scenario's plan run through the scenarios — the time limit left the
    two-stage solve with a dearer plan of its own (so vss is 0, and vss_range says what a longer solve may find)."""
    basis: str = ""
    """How mean_plan_cost, vss and regret were found: optimal (each solve within the gap), or estimates
    when the time they share (half the time limit) stopped a solve short."""


@dataclass(frozen=True)
class PlanResult:
    plan: str
    file: str
    status: Status
    currency: str
    horizon_days: int
    day_types: dict[str, float]
    """Days of the horizon each day type stands for: whole days, or a scenario's weighted share of them in a plan
    with scenarios (day type `all-2027-01~surge`, 6.2 days)."""
    policy: dict[str, Any]
    cost_total: Cost
    cost_by_tier: dict[str, Cost]
    workloads: list[WorkloadResult]
    purchases: list[Purchase]
    hourly: list[HourlySupply]
    candidates: list[CandidateRow]
    dropped: list[Dropped]
    """Options that cannot work, with the reason (dominated ones are only counted, in `pruned`)."""
    binding: list[Binding]
    solver: SolveInfo
    offers: dict[str, dict[str, Any]]
    """Every offer the plan used: provider, region, accelerator, gpus_per_node, prices and
    estimated flags per tier, available_gpus (caps per tier), spot_interruption, and the prices'
    source and as_of (None when not stated; absent in results written before they were kept)."""
    apis: dict[str, dict[str, float]]
    """Per workload that has an API: usd_per_m_input, usd_per_m_output, max_share, and the mean
    input_tokens_per_request / output_tokens_per_request that price an output token."""
    pruned: int = 0
    notes: list[str] = field(default_factory=list)
    alternatives: list[AlternativeRow] = field(default_factory=list)
    start_date: str | None = None
    cost_committed: float = 0.0
    """Contracts signed before this plan: their cost for the days they overlap the horizon (sunk;
    not in cost_total, which is new spend)."""
    commitments: list[ContractRow] = field(default_factory=list)
    new_commitments: list[NewReservation] = field(default_factory=list)
    """Every new reservation over its whole term (cost_total counts the horizon's share)."""
    expiry: list[ExpiryRow] = field(default_factory=list)
    periods: list[PeriodRow] = field(default_factory=list)
    """Contract periods, when a contract starts or ends inside the horizon (hourly rows name them)."""
    baseline: BaselineInfo | None = None
    cost_idle: float = 0.0
    """New spend on capacity bought but used by no workload at that hour (reserved GPUs at night,
    the unused GPUs of whole on-demand and spot nodes): Σ workloads' cost + cost_idle = cost_total."""
    cost_idle_by_tier: dict[str, float] = field(default_factory=dict)
    cost_idle_committed: float = 0.0
    """Committed spend no workload used: Σ workloads' committed_cost + this = cost_committed."""
    cash_flow: list[CashFlowRow] = field(default_factory=list)
    """The horizon's all-in spend by month × offer × tier (results.cashflow); Σ amount = cost_all_in."""
    commitment_schedule: list[ScheduleRow] = field(default_factory=list)
    """Every commitment, signed and new, month by month for up to 36 months from the horizon's first."""
    carried: CarryInfo | None = None
    """Contracts carried from the last result (`--carry`) into `commitments`, and those skipped."""
    own: OwnResult | None = None
    """Servers owned and bought (None when the plan has none and may buy none)."""
    scenarios: list[ScenarioRow] = field(default_factory=list)
    """Plans with scenarios: each one's cost (cost_total is the risk measure over them)."""
    risk: RiskInfo | None = None
    shared_gpus: list[SharedGroup] = field(default_factory=list)
    """policy.share_pools: the groups of workloads sharing whole GPUs, by offer and pool (empty: none shares)."""
    showback: list[ShowbackRow] = field(default_factory=list)
    """The all-in spend by team, cost centre, month and tier (results.showback); Σ cost + committed_cost =
    cost_all_in (policy.showback: book — the book view's total). Empty in results written before it was kept."""
    new_spend_commitments: list[NewSpendCommitment] = field(default_factory=list)
    """Every new spend commitment (savings_plans) over its whole term, priced like a recommendation (cost_total
    counts its horizon share in cost.by_tier.savings_plan, net of the on-demand list spend it covers)."""
    spend_commitments: list[SpendContract] = field(default_factory=list)
    """Spend commitments signed before this plan that run in the horizon (their spend there is in cost_committed)."""
    moves: list[MoveRow] = field(default_factory=list)
    """Each workload's change of config at a contract period's boundary (policy.moves), by date; empty: none."""

    def period_days(self, h: HourlySupply) -> float:
        """Days an hourly row stands for: its day type's days, or their share in its period."""
        if h.period:
            for p in self.periods:
                if p.label == h.period:
                    return p.day_types.get(h.day_type, 0.0)
        return float(self.day_types.get(h.day_type, 0))

    @property
    def cost_per_day(self) -> float:
        return self.cost_total / self.horizon_days

    @property
    def cost_all_in(self) -> float:
        """What the horizon costs, everything counted: new spend + committed spend for its days."""
        return self.cost_total + self.cost_committed

    def showback_by_team(self) -> list[dict[str, Any]]:
        """Spend by (team, cost centre): new, committed and all-in, with what no workload used last.
        A workload with tenant shares is split among those teams, each booked to its own team's cost centre
        when that team has one; one without a team is "unassigned"; a plan that names no team has a row per
        workload. The rows add up to the all-in spend; a result with showback rows sums them (what no workload
        used is then spread among the teams when policy.idle says spread; with policy.showback: book, "book" holds
        each row's owned depreciation less cost of capital and "all_in" is its part of the book view)."""
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        per_team = any(w.team or w.tenants for w in self.workloads)
        centres = team_centres(self.workloads)
        for w in self.workloads:
            for team, cc, share in owners(w, centres):
                key = (team, cc or "–", "" if per_team else w.name)
                row = rows.setdefault(key, {"team": key[0], "cost_center": key[1], "workloads": [], "new": 0.0,
                                            "committed": 0.0})
                row["workloads"].append(w.name if share == 1.0 else f"{w.name} ({share:.0%})")
                row["new"] += share * w.cost
                row["committed"] += share * w.committed_cost
        out = [rows[k] for k in sorted(rows, key=lambda k: (k[0] == UNASSIGNED, k[0], k[1], k[2]))]
        if self.showback:  # the result's rows: idle spread when policy.idle says so
            for r in out:
                r["new"] = r["committed"] = 0.0
            at = {(r["team"], r["cost_center"], r["workloads"][0] if not per_team and r["workloads"] else ""): r
                  for r in out}
            extra: dict[tuple[str, str], dict[str, Any]] = {}
            for x in self.showback:
                key = (x.team, x.cost_center or "–", x.workload or "")
                r = at.get(key) or extra.setdefault(key[:2], {"team": x.team, "cost_center": key[1], "workloads": [],
                                                              "new": 0.0, "committed": 0.0})
                # policy.showback: book — depreciation owned and cost of capital are the book's, not new spend
                part = "book" if x.tier in ("depreciation_owned", "cost_of_capital") else "new"
                r[part] = r.get(part, 0.0) + x.cost
                r["committed"] += x.committed_cost
            out += [extra[k] for k in sorted(extra, key=lambda k: (k[0] == "not used by any workload", k))]
            out = [r for r in out if r["workloads"] or abs(r["new"]) + abs(r["committed"]) + abs(r.get("book", 0.0))
                   > 0.005]
            for r in out:
                r["book"] = r.get("book", 0.0)
                r["all_in"] = r["new"] + r["committed"] + r["book"]
            return out
        if self.cost_idle > 0.005 or self.cost_idle_committed > 0.005:
            out.append({"team": "not used by any workload", "cost_center": "–", "workloads": [],
                        "new": self.cost_idle, "committed": self.cost_idle_committed})
        for r in out:
            r["all_in"] = r["new"] + r["committed"]
        return out

    def workload(self, name: str) -> WorkloadResult:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)

    # pandas views for notebooks -------------------------------------------------------------
    def workloads_df(self):
        import pandas as pd

        rows = []
        for w in self.workloads:
            d = asdict(w)
            for k in ("hourly_gpus", "hourly_replicas", "hourly_demand", "hourly_api_tokens_per_s"):
                d.pop(k)
            reps = d.pop("replicas")
            d.update({f"replicas_{k}": v for k, v in reps.items()})
            rows.append(d)
        return pd.DataFrame(rows)

    def purchases_df(self):
        import pandas as pd

        return pd.DataFrame([asdict(p) for p in self.purchases])

    def hourly_df(self):
        import pandas as pd

        return pd.DataFrame([asdict(h) for h in self.hourly])

    def candidates_df(self):
        import pandas as pd

        return pd.DataFrame([asdict(c) for c in self.candidates])

    def alternatives_df(self):
        import pandas as pd

        return pd.DataFrame([asdict(a) for a in self.alternatives])

    def dropped_df(self):
        import pandas as pd

        return pd.DataFrame([asdict(d) for d in self.dropped])
