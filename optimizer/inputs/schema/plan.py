"""The plan file, version 1 (every key, its default and limits: docs/plan-reference.md, generated from here)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from optimizer.errors import did_you_mean
from optimizer.inputs.demand import PeakDerivation, derive_peak
from optimizer.inputs.schema.catalog import (
    MAX_GPUS,
    MAX_PRICE,
    Accelerator,
    Model,
    Offer,
    Strict,
    check_id,
)
from optimizer.vocab import (
    BUILTIN_DAY_TYPES,
    PARALLELISM,
    PAYMENT_OPTIONS,
    PRECISION_ALIASES,
    PRECISION_IDS,
    TIERS,
    WEEKDAYS,
    Payment,
    Tier,
    day_type_of,
)

# Sanity bounds: far beyond any real fleet, low enough that a unit slip (tokens per day written as
# tokens per second, a price in cents) is an input error rather than a solver failure.
MAX_HORIZON_DAYS = 3660
"""Ten years."""
MAX_TOKENS_PER_S = 1e9
"""Output tokens per second of one workload (a billion)."""
MAX_TOKENS_PER_REQUEST = 100_000_000
MAX_USERS = 10_000_000_000
"""More people than there are."""
MAX_REQUESTS_PER_USER_PER_DAY = 1_000_000
MIN_TOKENS_PER_S = 0.001
"""The smallest peak planned (86 output tokens a day at a flat peak): below it a unit slip is likelier than a
workload, and the replicas of a demand this small round to none."""
MIN_BATCH_TOKENS_PER_DAY = 1000.0
"""The smallest batch job: below it the job's rows, written per token of its day, lose their precision (a
job of 1e-12 tokens a day solved to $0 with its GPUs unpaid)."""
MAX_PRICE_MULTIPLIER = 100
"""The largest price multiplier a scenario (or a sweep) states: × 1e12 is a unit slip."""
MAX_GOODPUT_MULTIPLIER = 10
"""The largest goodput multiplier a scenario (or a sweep) states."""
MAX_SLO_MS = 3_600_000
"""An hour: a TTFT or TPOT target beyond it is a unit slip."""
MAX_LAYOUT_GPUS = 1024
"""The largest TP, PP or EP degree a measured point may state (a rack-scale domain is 72 or 576)."""
FIRST_DATE, LAST_DATE = dt.date(1970, 1, 1), dt.date(2199, 12, 31)
"""Dates planopt plans within (contract terms and calendars computed past 9999 fail)."""


def check_date(day: dt.date) -> dt.date:
    """A plan's date within FIRST_DATE–LAST_DATE."""
    if not FIRST_DATE <= day <= LAST_DATE:
        raise ValueError(f"{day.isoformat()} is out of range — give a date from {FIRST_DATE.isoformat()} to "
                         f"{LAST_DATE.isoformat()}")
    return day


PlanDate = Annotated[dt.date, AfterValidator(check_date)]


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


EXTENSION_PREFIX = "x-"
"""Keys starting with it are accepted and ignored: a home for YAML anchors, as in compose files."""


class Extensible(Strict):
    """A mapping that also takes `x-…` keys (top level and workloads), which planopt ignores."""

    model_config = ConfigDict(json_schema_extra={"patternProperties": {"^x-": {}}})

    @model_validator(mode="before")
    @classmethod
    def _drop_extensions(cls, data: object) -> object:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(EXTENSION_PREFIX))}
        return data


class DayType(Strict):
    """A day type other than weekday/weekend/all: how many days, and which days of the week."""

    days: int = Field(ge=0, le=MAX_HORIZON_DAYS, examples=[13])
    """How many days of the horizon are of this type."""
    days_of_week: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = Field(min_length=1, examples=[["fri"]])
    """Which days of the week it covers (for the monthly calendar)."""
    month: str | None = Field(default=None, examples=["2027-01"])
    """Only days of this calendar month (YYYY-MM): demand that changes month by month (peak_by_month
    writes such day types)."""

    @field_validator("month")
    @classmethod
    def _month(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", v):
            raise ValueError(f"'{v}' is not YYYY-MM — write months like 2027-01")
        return v


MAX_FACILITY_KW = 10_000_000
"""Ten gigawatts: beyond any site."""
MAX_USD_PER_KWH = 2
"""Over ten times a data centre's tariff anywhere (an hour's scarcity spike averages out in the typical
day the tariff describes): a larger number is a price in cents."""


class Facility(Strict):
    """Your own data centre (or colocation cage): where owned and bought servers run, and its limits."""

    liquid_cooling: bool = False
    """Whether the facility has liquid-cooled racks (GB200/GB300 NVL72, MI355X, Rubin need them)."""
    power_kw: float | None = Field(default=None, gt=0, le=MAX_FACILITY_KW, examples=[400])
    """IT power available to servers, kW (owned and bought, at load); default unlimited."""
    racks: int | None = Field(default=None, ge=0, le=100_000, examples=[6])
    """Rack positions available to servers (owned and bought); default unlimited."""
    pue: float = Field(default=1.3, ge=1, le=3, examples=[1.3])
    """Power usage effectiveness: the facility's power ÷ the IT power (cooling, losses); at least 1."""
    usd_per_kwh: float | list[Annotated[float, Field(ge=0, le=MAX_USD_PER_KWH)]] | None = Field(
        default=None, examples=[0.08])
    """Energy price, USD per kWh (0.08, not 8 cents): one number, or 24 (hour 0–23, the plan's
    timezone). Needed when the plan owns or may buy servers."""
    colo_usd_per_kw_month: float = Field(default=0.0, ge=0, le=10_000, examples=[150])
    """Colocation (space and power provisioning) per kW of servers' load power per month."""

    @field_validator("usd_per_kwh", mode="before")
    @classmethod
    def _tariff(cls, v: Any) -> Any:
        if isinstance(v, list) and len(v) != 24:
            raise ValueError(f"has {len(v)} prices — give one number, or exactly 24 (hour 0–23)")
        for hour, x in enumerate(v if isinstance(v, list) else [v]):
            if isinstance(x, (int, float)) and not isinstance(x, bool) and not 0 <= x <= MAX_USD_PER_KWH:
                at = f"hour {hour}: " if isinstance(v, list) else ""
                raise ValueError(f"{at}{x:g} USD per kWh is outside 0–{MAX_USD_PER_KWH:g} — give dollars per kWh "
                                 "(0.08, not 8 cents)")
        return v

    @field_validator("pue", mode="before")
    @classmethod
    def _pue(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 1:
            raise ValueError(f"a PUE of {v:g} is below 1: a facility draws its servers' power and more — give "
                             "its total power ÷ its servers' power (1.1–1.5 is usual; 1 when you pay for IT power only)")
        return v

    def tariff(self, hour: int) -> float:
        """USD per kWh at an hour (0 when no price is given)."""
        v = self.usd_per_kwh
        if v is None:
            return 0.0
        return float(v[hour]) if isinstance(v, list) else float(v)


RACK_SCALE_GPUS = 32
"""A purchase unit of this many GPUs or more is a rack (NVL72): one per rack position."""
SERVERS_PER_RACK = 4
"""Default 8-GPU servers per rack position (air-cooled HGX at 10–14 kW in a 40–60 kW rack)."""


def per_rack(gpus_per_node: int, stated: int | None) -> int:
    """Servers one rack position holds: as stated, else one rack-scale system or SERVERS_PER_RACK servers."""
    if stated is not None:
        return stated
    return 1 if gpus_per_node >= RACK_SCALE_GPUS else SERVERS_PER_RACK


class Owned(Strict):
    """Servers you already own: used before anything is rented. Their capital cost is sunk (reported,
    not optimized); energy for the hours they run, colocation and support are this horizon's costs."""

    accelerator: str = Field(examples=["h100-sxm"])
    """The accelerator id."""
    nodes: int = Field(ge=1, le=100_000, examples=[16])
    """Servers (or racks, for rack-scale systems)."""
    gpus_per_node: int = Field(default=8, ge=1, le=576, examples=[8])
    """GPUs in one server (72 for an NVL72 rack)."""
    since: PlanDate | None = Field(default=None, examples=["2024-06-01"])
    """When they entered service; a date inside the horizon means they serve only from then."""
    book_value_per_node: float = Field(default=0.0, ge=0, le=100_000_000, examples=[120000])
    """Remaining book value of one server (sunk: reported)."""
    remaining_life_years: float | None = Field(default=None, gt=0, le=30, examples=[2.5])
    """Years of depreciation left: with it, the horizon's share of the book value is reported as sunk cost."""
    node_power_kw: float = Field(gt=0, le=2_000, examples=[10.2])
    """IT power of one server at load, kW."""
    idle_power_kw: float | None = Field(default=None, ge=0, le=2_000, examples=[3.0])
    """IT power of one server while it serves nothing, kW; default 30% of node_power_kw."""
    nodes_per_rack: int | None = Field(default=None, ge=1, le=64, examples=[4])
    """Servers one rack position holds; default 1 for rack-scale systems (32 GPUs or more), else 4."""
    support_per_year: float = Field(default=0.0, ge=0, le=100_000_000, examples=[12000])
    """Support and maintenance per server per year, USD."""
    offer: str | None = Field(default=None, examples=["owned-h100"])
    """The id these servers appear under in reports (an offer id; default owned-<accelerator>)."""
    scale_up_gpus: int | None = Field(default=None, ge=1, le=576, examples=[8])
    """The NVLink domain (default: the accelerator's, within one server)."""
    scale_out_gb_s: float | None = Field(default=None, ge=0, examples=[50])
    """Inter-node bandwidth per GPU, GB/s one direction (default: the accelerator's)."""

    @field_validator("offer")
    @classmethod
    def _offer_id(cls, v: str | None) -> str | None:
        return v if v is None else check_id(v)

    @model_validator(mode="after")
    def _idle_below_load(self) -> "Owned":
        if self.idle_power_kw is not None and self.idle_power_kw > self.node_power_kw:
            raise ValueError(f"idle_power_kw {self.idle_power_kw:g} is above node_power_kw {self.node_power_kw:g} — "
                             "idle draws less than load; swap them")
        return self

    @property
    def offer_id(self) -> str:
        return self.offer or f"owned-{self.accelerator}"


class Risk(Strict):
    measure: Literal["expected", "cvar", "worst"] = "expected"
    """What cost.total is over the scenarios: their expected cost, the mean of the worst (1 − level) share
    (cvar), or the worst."""
    level: float = Field(default=0.9, ge=0.5, lt=1, examples=[0.9])
    """cvar: the share of outcomes it looks past (0.9: the mean of the worst 10%)."""


class WorkShares(Strict):
    """Each step's share of the work limit: the most its solver calls may spend over the whole solve, in nodes and
    in simplex iterations (each call takes what its solver bounds: nodes for an integer program, iterations for a
    relaxation)."""

    relax: float = Field(default=0.5, gt=0, le=1)
    """Step 1, the relaxation and its rounds of valid inequalities (iterations): far more than they take."""
    round: float = Field(default=0.25, gt=0, le=1)
    """Step 2, a plan from the relaxation (nodes): its solves end on their own proofs long before."""
    search: float = Field(default=1.0, gt=0, le=1)
    """Step 3, the branch and bound over the whole program (nodes): what the work limit is mostly for."""
    settle: float = Field(default=0.25, gt=0, le=1)
    """Configs alone at their offer made exact, and their hours (nodes and iterations)."""
    price: float = Field(default=0.5, gt=0, le=1)
    """Pricing the alternatives (iterations; each alternative also stops at 200 nodes, and at most 1,000 alternatives
    are tried, breadth first: every workload's nearest one before any workload's next): past it the rest are "not
    priced"."""


class WorkLimit(Strict):
    """What stops the solve: work, counted the same on every machine — branch-and-bound nodes and simplex
    iterations — so the same plan gives the same decision on an idle and on a busy computer. The steps of the
    solve share it out (shares); the time limit is only a safety cap."""

    nodes: int = Field(default=20_000, ge=1, le=1_000_000_000, examples=[20000])
    """Branch-and-bound nodes (HiGHS mip_max_nodes, CBC maxNodes): a search still short of the gap stops here, and
    its commitments are then marked provisional."""
    lp_iterations: int = Field(default=20_000_000, ge=1, le=10**12, examples=[20000000])
    """Simplex iterations of the relaxations and of pricing the alternatives."""
    shares: WorkShares = Field(default_factory=WorkShares)
    """Each step's share of both (the shares need not add up to 1: the steps run one after another)."""


class Policy(Strict):
    occupancy: float = Field(default=0.6, ge=0.01, le=1)
    """Target share of goodput used at the peak; the rest is burst headroom (at least 1%:
    below that the fleet is sized for over 100× the demand)."""
    memory_reserve: float = Field(default=0.10, ge=0, lt=1)
    """Share of GPU memory kept for activations, engine buffers and fragmentation."""
    spares: int = Field(default=1, ge=0, le=1000)
    """Replicas kept for a lost replica (N+spares)."""
    rollout_fraction: float = Field(default=0.25, ge=0, le=10)
    """Extra replicas during a rollout, as a share of base + spares."""
    tiers: list[Tier] = Field(default_factory=lambda: list(TIERS))
    """Purchase tiers the plan may use."""
    spot_pools: list[str] = Field(default_factory=lambda: ["batch", "experiments"])
    """Pools that may run on spot capacity."""
    mig_pools: list[str] = Field(default_factory=lambda: ["small"], examples=[["small"]])
    """Pools whose workloads may run on MIG slices of a GPU."""
    share_pools: list[str] = Field(default_factory=list, examples=[["small"]])
    """Pools whose interactive workloads may share whole GPUs with each other by MPS or time-slicing
    (policy.share_mode): at each offer, the shared GPUs of a pool each hold one replica of every workload that
    shares there; their memory adds up, and each workload takes the GPUs' time its load needs at its goodput less
    the mode's slowdown (physics.sharing). Default: none."""
    share_mode: Literal["mps", "time_slicing"] = Field(default="mps", examples=["time_slicing"])
    """How workloads share a GPU in policy.share_pools: mps — NVIDIA's Multi-Process Service, kernels of the
    processes run at once; time_slicing — the GPU runs one process at a time in turns. Sets the slowdown
    (physics.sharing.SLOWDOWN) unless share_slowdown states a measured one."""
    share_slowdown: float | None = Field(default=None, ge=0, lt=1, examples=[0.1])
    """Share of its goodput a workload loses when it shares a GPU (interference): measured on your engine and
    GPUs; default: the share_mode's estimate (physics.sharing.SLOWDOWN)."""
    providers: list[str] | None = None
    """Only offers from these providers (the accounts you have); default: every offer. Servers you own
    (`owned`) are always in: their cost is paid either way."""
    engines: list[str] | None = Field(default=None, min_length=1, examples=[["vllm", "sglang"]])
    """Serving engines the team runs (catalogs/engines.yaml ids), in order of preference; default: every engine
    the catalog knows. A config is a candidate only where one of them runs its accelerator's generation,
    precision and parallelism; the estimate uses the one that gives the most goodput (ties: the first listed)."""
    share_reserved_across_pools: bool = True
    """Whether pools borrow each other's reserved and committed GPUs hour by hour."""
    payment: list[Payment] = Field(default_factory=lambda: list(PAYMENT_OPTIONS), min_length=1,
                                   examples=[["no_upfront", "partial_upfront"]])
    """The payment options a new reservation may take, where an offer prices several (price_per_gpu_hour:
    {reserved-1y: {no_upfront: …, partial_upfront: …, all_upfront: …}}): the cheapest effective price among
    them is taken (ties: less up front). No cost of capital is charged on an upfront payment (the plan states
    none for rented capacity): restrict this list to keep cash from being paid ahead. An offer none of whose
    options is allowed does not sell that tier."""
    reservation_starts: Literal["plan_start", "expiries", "monthly"] = Field(default="expiries",
                                                                          examples=["monthly"])
    """The days a new reservation may start on: plan_start — the horizon's first day only; expiries — also the
    day after each signed commitment (`commitments`) ends inside the horizon, so the plan may renew it at
    expiry; monthly — also the first day of each calendar month. A reservation starting later serves from
    that day to the horizon's end and costs the horizon those days; its full term is still signed
    (new_commitments). Days after the first need a start_date."""
    moves: Literal["same_hardware", "any", "never"] = Field(default="same_hardware", examples=["never"])
    """Whether a workload may change config at a contract period's boundary (a delivery of servers bought, a signed
    contract's start or expiry, a day a new reservation may start on: reservation_starts): same_hardware — to
    another offer of the same accelerator, precision, parallelism, engine and API ceiling (rent until the servers
    bought are delivered, then run on them; move onto a renewal, off an expiring contract); any — also to another
    config; never — one config for the whole horizon. Interactive workloads with split: none only, in plans
    without scenarios (others keep one config)."""
    move_cost: float = Field(default=0.0, ge=0, le=10_000, examples=[2])
    """GPU-hours of overlap each replica moved costs (the old and the new replica run side by side while traffic
    drains), priced at the destination offer's on-demand price per GPU-hour; in the objective only, like a
    baseline's switching cost (the result's costs are its purchases')."""
    solver: Literal["highs", "cbc"] = "highs"
    """The MILP solver: highs (default) or cbc."""
    time_limit_s: float = Field(default=600, gt=0)
    """A safety cap in seconds on the solve, far above what its work limit takes: the solve stops on work
    (work_limit), and only a solve this slow is cut short by the clock — then the result says so
    (solver.stopped_by "safety cap"), may differ between machines, and its commitments are marked provisional
    unless proven. The cap ends only the search for better plans and proofs: the steps that find a first plan
    (the relaxation, the rounding step) are cut only once they have one, so a plan that has one always gets
    it, however busy the machine. Candidates and a scenario plan's side solves (up to half as long again)
    come on top."""
    work_limit: WorkLimit = Field(default_factory=WorkLimit)
    """What stops the solve: branch-and-bound nodes and simplex iterations, shared out by step (the same on every
    machine); the best plan found within it is returned with its proven gap."""
    mip_gap: float = Field(default=0.001, ge=0, lt=1)
    """Stop when the plan is proven within this share of the cheapest possible."""
    change_threshold: float = Field(default=0.02, ge=0)
    """With --baseline: keep a workload's last choice unless changing it saves more than this."""
    decompose: Literal["auto", "scenarios", "never"] = Field(default="never", examples=["scenarios"])
    """A plan with scenarios, solved for the expected cost: never (the default) — the two-stage program whole;
    scenarios — by scenario (progressive hedging: each scenario's own program in parallel for a bound, the best
    first stage found held for the plan); auto — by scenario from 10 scenarios on (the two-stage program grows
    with each, a scenario's own program does not). Opt-in: by scenario, the bound starts at each scenario's own
    cost and its rounds of prices close the gap slowly on large plans (benchmarks/SOLVER.md)."""
    risk: Risk = Field(default_factory=Risk)
    """With scenarios: what the plan minimizes over them — expected cost (default), cvar at a level, or the
    worst case."""
    estimate_error: Literal["none", "headroom", "scenarios"] = Field(default="none", examples=["headroom"])
    """How a plan on estimated goodput carries the estimator's held-out error (catalog estimator.held_out):
    none — estimates as they are; headroom — every estimated goodput at the P10 of what held-out models
    delivered per unit of estimate; scenarios — three goodput scenarios at its P10, P50 and P90 (weights
    0.3, 0.4, 0.3), crossed with the plan's scenarios. Measured goodput is never scaled. Where the estimate's
    group (generation/dtype/engine/model class) has its own held-out band (catalog estimator.validation),
    headroom uses that band's low end instead of the global P10."""
    unvalidated: Literal["allow", "warn", "exclude"] = Field(default="warn", examples=["exclude"])
    """What to do with a config whose goodput is an estimate no published result validates (its group —
    generation/dtype/engine/model class — has fewer points than estimator.validation.min_points): allow —
    it competes like any other; warn — it competes, and the result warns of every chosen config that rests
    on one (`validate` warns of the workloads that have such configs); exclude — it is not a candidate
    (measured configs always are)."""
    split: Literal["none", "by_size", "any"] = Field(default="none", examples=["by_size"])
    """The default of every workload's split: none — one config serves the whole workload (its goodput over a
    tokens.mix is the harmonic mean of its classes', weighted by their output tokens); by_size — each request-size
    class's traffic may be divided among the workload's configs in shares fixed over the horizon (a router's
    weights), each config sized on the sum of the loads sent to it (Griggs et al. 2024, Mélange); any — the whole
    traffic divided among configs in one share each, whatever the request's size (a router blind to sizes: across
    providers or regions, when caps bind), each config sized on its share of every hour at its goodput over the
    mix."""
    size_commitments_at: Literal["estimate", "low"] = Field(default="estimate", examples=["low"])
    """How many GPUs reservations and purchases are sized for: estimate — the estimate's need; low — the
    fewest GPUs the estimate's error band allows (goodput at the band's high end: estimate ÷ (1 + error_p10)),
    so a commitment is not over-bought if the estimate proves pessimistic; the rest of the need runs on
    hourly tiers. Measured configs and estimates without a band are sized as they are."""
    idle: Literal["separate", "spread"] = Field(default="separate", examples=["spread"])
    """How the showback books spend no workload used (reserved and signed GPUs idle at that hour, the rest of whole
    on-demand nodes, servers' idle energy and space): separate — rows of their own ("not used by any workload");
    spread — shared among the rows that used the same tier that month, by their cost there (the whole month's
    rows when none did), so each team carries its part of the idle and shared cost."""
    showback: Literal["all_in", "book"] = Field(default="all_in", examples=["book"])
    """What the showback rows add up to: all_in — the cash all-in spend (cost.all_in); book — the book view
    (result `book`: all-in + owned servers' depreciation − bought servers' cost of capital), so the teams that
    ran on servers owned before the plan carry their depreciation (by the GPU-hours they ran on them) and no
    team carries the cost of capital. Without servers of your own the two are the same."""

    @field_validator("spot_pools", "mig_pools", "share_pools")
    @classmethod
    def _pool_ids(cls, pools: list[str]) -> list[str]:
        for p in pools:
            check_id(p)
        return pools

    @field_validator("tiers")
    @classmethod
    def _tiers_unique(cls, tiers: list[str]) -> list[str]:
        if len(set(tiers)) != len(tiers):
            raise ValueError("lists a tier twice — list each tier once")
        if not tiers:
            raise ValueError("allows no tier; list at least one of " + ", ".join(TIERS))
        return tiers


SHARE_TOLERANCE = 1e-6
"""How far a request-size mix's shares may add up from 1."""


class SizeClass(Strict):
    """One class of requests of a mix: its share of the requests and its mean sizes."""

    share: float = Field(gt=0, le=1, examples=[0.8])
    """Share of the workload's requests (not of its tokens) in this class."""
    input: float = Field(gt=0, le=MAX_TOKENS_PER_REQUEST, examples=[500])
    """Mean input (prompt) tokens per request of the class."""
    output: float = Field(gt=0, le=MAX_TOKENS_PER_REQUEST, examples=[200])
    """Mean output (completion) tokens per request of the class."""


class Tokens(Strict):
    """Mean tokens per request: input and output, or a mix of request-size classes (then input and output are
    the mix's means over requests, Σ share·input and Σ share·output, and may be left out)."""

    input: float | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_REQUEST)
    """Mean input (prompt) tokens per request."""
    output: float | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_REQUEST)
    """Mean output (completion) tokens per request."""
    mix: list[SizeClass] | None = Field(default=None, min_length=1, examples=[[
        {"share": 0.8, "input": 500, "output": 200}, {"share": 0.2, "input": 4000, "output": 800}]])
    """Request-size classes (shares of requests, adding up to 1): each class is sized at its own mean input and
    output tokens, and with split: by_size its traffic may go to configs of its own."""

    @model_validator(mode="after")
    def _mix_or_means(self) -> "Tokens":
        if self.mix is None:
            missing = [k for k in ("input", "output") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"gives no {' and no '.join(missing)} — give input: … and output: … (mean tokens "
                                 "per request), or a mix: [{share, input, output}, …]")
            return self
        total = sum(c.share for c in self.mix)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            raise ValueError(f"mix shares add up to {total:.9g}, not 1 — give each class's share of the requests "
                             "(0.7 for 70%) so that they add up to 1")
        for k in ("input", "output"):
            mean = sum(c.share * getattr(c, k) for c in self.mix)
            given = getattr(self, k)
            if given is not None and abs(given - mean) > 1e-6 * max(1.0, mean):
                raise ValueError(f"gives {k} {given:g} beside a mix whose mean {k} is {mean:.6g} — leave {k} out "
                                 "(a mix's means follow from its classes)")
            object.__setattr__(self, k, mean)
        return self

    def classes(self) -> list[SizeClass]:
        """The request-size classes: the mix, or one class at the means."""
        if self.mix is not None:
            return list(self.mix)
        assert self.input is not None and self.output is not None
        return [SizeClass(share=1.0, input=self.input, output=self.output)]

    def output_shares(self) -> list[float]:
        """Each class's share of the output tokens (demand is stated in output tokens/s): share_b · output_b ÷
        Σ share · output, from shares of requests."""
        cs = self.classes()
        total = sum(c.share * c.output for c in cs)
        return [c.share * c.output / total for c in cs]


class Slo(Strict):
    ttft_ms: float | None = Field(default=None, gt=0, le=MAX_SLO_MS)
    """Time to first token, ms, at the percentile: queueing and prefill at the replica's load included."""
    tpot_ms: float | None = Field(default=None, gt=0, le=MAX_SLO_MS)
    """Time per output token after the first, ms, at the percentile."""
    percentile: float = Field(default=99.0, ge=50, lt=100)
    """The percentile both targets hold at (99: p99, as load tests and MLPerf report)."""


class Speculative(Strict):
    """Speculative decoding: k tokens drafted per step, verified together by the model
    (docs/speculative-and-prefix-caching.md)."""

    method: Literal["mtp", "draft"] = Field(examples=["mtp"])
    """mtp: the model's own multi-token-prediction layers draft (DeepSeek-V3/R1); draft: a separate draft model."""
    draft_tokens: int = Field(ge=1, le=16, examples=[3])
    """Tokens drafted per step (k): each step verifies k + 1 per sequence."""
    acceptance: float = Field(ge=0, lt=1, examples=[0.7])
    """Chance a drafted token is accepted, given the ones before it were (a): a step emits
    (1 − a^(k+1)) / (1 − a) tokens per sequence on average."""
    draft_model: str | None = Field(default=None, examples=["llama-3.2-1b"])
    """The draft model's id (method draft only): its weights and KV share the replica's memory."""

    @model_validator(mode="after")
    def _draft_model(self) -> "Speculative":
        if self.method == "draft" and self.draft_model is None:
            raise ValueError("method draft needs draft_model: <model id> — or use method: mtp")
        if self.method == "mtp" and self.draft_model is not None:
            raise ValueError("draft_model is for method draft; MTP drafts with the model's own layers — remove it")
        return self


class PrefixCache(Strict):
    """Prefix caching: a share of each prompt's tokens is found in the cache and not prefilled again."""

    hit_rate: float = Field(ge=0, lt=1, examples=[0.5])
    """Share of input tokens served from the cache (e.g. a long shared system prompt, an agent's history)."""


Profile = list[float]


BUSINESS_KEYS = ("users", "active_share", "requests_per_active_user_per_day", "peak_hour_share", "peak_to_mean",
                 "monthly_growth")
"""Demand keys that size the peak from business numbers instead of stating it."""


class Demand(Strict):
    """Interactive traffic: the output tokens per second at the bad day's busiest hour, and the shape of
    its days. State the peak, or, before any usage exists, give the business numbers planopt derives it
    from: peak = users × active_share × requests_per_active_user_per_day × tokens.output ×
    peak_hour_share ÷ 3,600 s (or ÷ 86,400 s × peak_to_mean), × (1 + monthly_growth)^(horizon_days ÷ 30)
    with growth. `planopt explain` and the workbook show the arithmetic."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"required": ["peak_output_tokens_per_s"]},
        {"required": ["users", "active_share", "requests_per_active_user_per_day"]}]})

    peak_output_tokens_per_s: float | None = Field(default=None, ge=MIN_TOKENS_PER_S, le=MAX_TOKENS_PER_S,
                                                   examples=[3000])
    """Output tokens per second at the bad day's busiest hour (or give the business numbers below)."""
    users: int | None = Field(default=None, ge=1, le=MAX_USERS, examples=[200000])
    """Business numbers: users of the product at the start of the horizon."""
    active_share: float | None = Field(default=None, gt=0, le=1, examples=[0.3])
    """Business numbers: share of the users active on a peak day (0.3, not 30)."""
    requests_per_active_user_per_day: float | None = Field(default=None, gt=0, le=MAX_REQUESTS_PER_USER_PER_DAY,
                                                           examples=[12])
    """Business numbers: requests one active user makes on a peak day (tokens per request are the
    workload's tokens)."""
    peak_hour_share: float | None = Field(default=None, gt=0, le=1, examples=[0.11])
    """Business numbers: share of the peak day's requests that arrive in its busiest hour (at least
    1/24 ≈ 0.042, a flat day); or give peak_to_mean."""
    peak_to_mean: float | None = Field(default=None, ge=1, le=24, examples=[2.6])
    """Business numbers: the busiest hour's requests ÷ the day's mean hour (= 24 × peak_hour_share);
    or give peak_hour_share."""
    monthly_growth: float | None = Field(default=None, ge=0, le=1, examples=[0.05])
    """Business numbers: growth of the users a month, compounded (0.05, not 5). planopt buys one fleet
    for the horizon, so it sizes for the horizon's end: × (1 + monthly_growth)^(horizon_days ÷ 30)."""
    profile: Profile | dict[str, Profile] | None = None
    """24 fractions of the peak per hour, the busiest hour 1.0 (not shares of the day); one list for every day
    type, or one per day type."""
    peak_by_month: dict[str, Annotated[float, Field(ge=MIN_TOKENS_PER_S, le=MAX_TOKENS_PER_S)]] | None = Field(
        default=None, examples=[{"2027-01": 8200, "2027-02": 8900, "2027-03": 9600}])
    """Demand that changes inside the horizon: the busiest hour's output tokens/s in each calendar month
    (YYYY-MM; `planopt forecast` writes them). Months not listed keep the peak above. Each month is then
    planned apart — reserved capacity stays one level, on-demand, spot and the API follow the month."""

    @field_validator("peak_by_month")
    @classmethod
    def _months(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        for k in v or {}:
            if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", str(k)):
                raise ValueError(f"month '{k}' is not YYYY-MM — write months like 2027-01")
        if v is not None and not v:
            raise ValueError("is empty; list peaks by month (2027-01: …) or leave it out")
        return v

    @model_validator(mode="after")
    def _one_way(self) -> "Demand":
        given = [k for k in BUSINESS_KEYS if getattr(self, k) is not None]
        if self.peak_output_tokens_per_s is not None:
            if given == ["monthly_growth"]:
                raise ValueError("monthly_growth grows users, and this demand states its peak — remove "
                                 "monthly_growth and state the peak at the horizon's end, or give users, "
                                 "active_share, … instead of the peak")
            if given:
                raise ValueError(f"gives peak_output_tokens_per_s and business numbers ({', '.join(given)}) — "
                                 "keep one way: the stated peak, or the numbers planopt derives it from")
            return self
        if not given:
            raise ValueError("gives no size — add peak_output_tokens_per_s: …, or the business numbers users, "
                             "active_share, requests_per_active_user_per_day and peak_hour_share (or peak_to_mean)")
        missing = [k for k in ("users", "active_share", "requests_per_active_user_per_day") if getattr(self, k) is None]
        if missing:
            raise ValueError(f"business numbers without {' and '.join(missing)} — add "
                             f"{', '.join(k + ': …' for k in missing)} (or state peak_output_tokens_per_s instead)")
        if self.peak_hour_share is not None and self.peak_to_mean is not None:
            raise ValueError("gives both peak_hour_share and peak_to_mean — keep one "
                             "(peak_to_mean = 24 × peak_hour_share)")
        if self.peak_hour_share is None and self.peak_to_mean is None:
            raise ValueError("business numbers without the day's shape — add peak_hour_share: … (share of the "
                             "day's requests in its busiest hour) or peak_to_mean: … (busiest hour ÷ mean hour)")
        return self

    @field_validator("peak_hour_share")
    @classmethod
    def _at_least_flat(cls, share: float | None) -> float | None:
        if share is not None and share * 24 < 1:
            raise ValueError(f"{share:g} is below 1/24 ≈ 0.042, an average hour's share — give the busiest hour's "
                             "share of the day's requests (it carries at least an average hour's)")
        return share

    def derivation(self, output_tokens: float, horizon_days: int) -> PeakDerivation | None:
        """How the peak follows from the business numbers, with the workload's tokens.output and the horizon;
        None when the plan states the peak (inputs.derived.peak_derivation is the call with a plan)."""
        if self.users is None or self.active_share is None or self.requests_per_active_user_per_day is None:
            return None
        return derive_peak(self.users, self.active_share, self.requests_per_active_user_per_day, output_tokens,
                           self.peak_hour_share, self.peak_to_mean, self.monthly_growth, horizon_days)

    def fill_derived_peak(self, output_tokens: float, horizon_days: int) -> None:
        """Write the peak the business numbers give into peak_output_tokens_per_s, so that every stage reads
        one peak whichever way the plan gives it. Only while the demand is made (Plan validation, or a study
        that changes the numbers on its copy): the model is treated as frozen afterwards."""
        d = self.derivation(output_tokens, horizon_days)
        assert d is not None
        object.__setattr__(self, "peak_output_tokens_per_s", d.peak_output_tokens_per_s)

    @field_validator("profile")
    @classmethod
    def _profile_shape(cls, profile: Profile | dict[str, Profile] | None):
        lists = [profile] if isinstance(profile, list) else list((profile or {}).values())
        for values in lists:
            if len(values) != 24:
                raise ValueError(f"has {len(values)} values; give exactly 24, one per hour 0–23")
            bad = [v for v in values if not 0 <= v <= 1]
            if bad:
                raise ValueError(f"value {bad[0]} is outside [0, 1]; profiles are fractions of the peak")
        top = max((max(values) for values in lists), default=None)
        if top == 0:
            raise ValueError("is 0 at every hour: no traffic at all — give each hour's fraction of the peak "
                             "(the busiest hour 1.0), or remove the workload")
        if top is not None and top < 1 - PEAK_HOUR_TOLERANCE and all(abs(sum(v) - 1) <= 0.05 for v in lists):
            where = "its busiest hour" if len(lists) == 1 else "the busiest hour of any day type"
            raise ValueError(f"adds up to 1 and never reaches the peak: {where} is {top:g}, not 1 — these are "
                             "shares of the day, which would size the fleet "
                             f"{1 / top:.3g}× too small. A profile gives each hour's traffic as a fraction of the "
                             f"peak, the busiest hour 1.0: divide every value by {top:g}")
        return profile


PEAK_HOUR_TOLERANCE = 0.005
"""A profile's busiest hour may fall this short of 1.0 (values rounded to two decimals) and still be read as the
peak hour; below it the profile is refused (shares of the day, not fractions of the peak)."""


class Measured(Strict):
    """A load-test result at this workload's SLO: wins over the estimate, and is kept where the memory model
    says the KV cache beside its weights cannot hold the sequences it needs (`validate` and `solve` warn)."""

    accelerator: str
    """The accelerator id the load test ran on."""
    precision: str
    """The precision it ran at."""
    tp: int = Field(default=1, ge=1)
    """Tensor-parallel degree (of attention, with ep)."""
    pp: int = Field(default=1, ge=1)
    """Pipeline stages."""
    ep: int = Field(default=1, ge=1)
    """Expert-parallel GPUs with data-parallel attention (the ep family); 1 otherwise."""
    mig: str | None = Field(default=None, examples=["3g.40gb"])
    """MIG profile name when measured on a slice."""
    goodput_output_tokens_per_s: float = Field(ge=0.01, le=MAX_TOKENS_PER_S)
    """Output tokens per second one replica sustains within the workload's SLO."""
    tpot_ms: float | None = Field(default=None, gt=0, le=MAX_SLO_MS, examples=[85])
    """The TPOT the load test achieved at that goodput: the memory check counts the sequences in flight
    (goodput × TPOT, Little's law) at it rather than at the target TPOT."""
    ttft_ms: float | None = Field(default=None, gt=0, le=MAX_SLO_MS, examples=[640])
    """The TTFT the load test achieved at that goodput (reported beside the config)."""
    source: str | None = Field(default=None, examples=["vllm bench serve, bench/chat-h100-fp8.json, 2026-11-20"])
    """Where the number comes from (load-test file, date)."""
    engine: str | None = Field(default=None, examples=["vllm"])
    """The serving engine the load test ran (catalogs/engines.yaml id): carried onto the config it measures."""
    input: float | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_REQUEST, examples=[500])
    """The mean input tokens the load test ran at: the point applies to the workload's request-size class of these
    sizes (tokens.mix); without input and output it applies to every class."""
    output: float | None = Field(default=None, gt=0, le=MAX_TOKENS_PER_REQUEST, examples=[200])
    """The mean output tokens the load test ran at (with input)."""

    @model_validator(mode="after")
    def _sizes_together(self) -> "Measured":
        if (self.input is None) != (self.output is None):
            raise ValueError("gives one of input and output — give both (the size class the load test ran at) or "
                             "neither (a point for every class)")
        return self

    def applies_to(self, input_tokens: float, output_tokens: float) -> bool:
        """Whether the point holds at a class of these mean sizes: it names none, or the same (to a token)."""
        return self.input is None or (round(self.input) == round(input_tokens)
                                      and round(self.output or 0) == round(output_tokens))

    @field_validator("tp", "pp", "ep")
    @classmethod
    def _layout(cls, n: int, info: ValidationInfo) -> int:
        """The degrees planopt lays replicas out in (TP and PP powers of two; EP also a whole rack-scale domain,
        ep72): a point at another would never be used."""
        if not (_is_power_of_two(n) or info.field_name == "ep") or n > MAX_LAYOUT_GPUS:
            raise ValueError(f"{n} is not a degree planopt plans (powers of two up to {MAX_LAYOUT_GPUS}) — give the "
                             "degree the load test ran at: 1, 2, 4, 8, …")
        return n

    @property
    def layout_key(self) -> tuple:
        return (self.accelerator, PRECISION_ALIASES.get(self.precision, self.precision), self.tp, self.pp, self.ep,
                self.mig, self.engine, self.input, self.output)


class Api(Strict):
    usd_per_m_input: float = Field(ge=0, le=MAX_PRICE)
    """The API's price per million input tokens."""
    usd_per_m_output: float = Field(ge=0, le=MAX_PRICE)
    """The API's price per million output tokens."""
    max_share: float = Field(default=0.0, ge=0, le=1)
    """Share of the workload's tokens the gateway may send to the API; 1 allows all (build vs buy)."""


class Batch(Strict):
    output_tokens_per_day: float = Field(ge=MIN_BATCH_TOKENS_PER_DAY, le=MAX_TOKENS_PER_S * 86400)
    """Output tokens the job must produce each day within its window."""
    window_hours: tuple[int, int] = (0, 0)
    """[start, end): hours the job may run; wraps past midnight; equal ends mean all day."""

    @field_validator("window_hours")
    @classmethod
    def _hours(cls, w: tuple[int, int]) -> tuple[int, int]:
        for h in w:
            if not 0 <= h <= 23:
                raise ValueError(f"hour {h} is outside 0–23 — hours run 0–23; midnight is 0")
        return w

    def hours(self) -> list[int]:
        start, end = self.window_hours
        if start == end:
            return list(range(24))
        if start < end:
            return list(range(start, end))
        return list(range(start, 24)) + list(range(0, end))


class ReserveGpus(Strict):
    count: int = Field(ge=1, le=MAX_GPUS)
    """GPUs held for the whole horizon."""
    accelerators: list[str] | None = None
    """Accelerator ids that qualify; default any."""


class Workload(Extensible):
    name: str = Field(min_length=1)
    """An id (lower-case, hyphenated): it names the workload in every report and result."""
    model: str | None = None
    """The model id (from the catalogs or the plan's models)."""
    pool: str = "interactive"
    """The pool it runs in: workloads of a pool share nodes; policy.spot_pools and mig_pools name pools."""
    team: str | None = Field(default=None, max_length=100, examples=["search"])
    """Who it is charged to in the showback (free text); workloads without one are "unassigned"."""
    cost_center: str | None = Field(default=None, max_length=100, examples=["CC-4100"])
    """The cost centre its spend books to in the showback (free text)."""
    tenants: dict[str, Annotated[float, Field(ge=0, le=1)]] | None = Field(
        default=None, examples=[{"search": 0.7, "ads": 0.3}])
    """Shares of its output tokens by team, when one workload serves several (`calibrate` writes them from
    a usage log's tenant column): the showback splits its spend by them. Shares add up to 1."""

    @field_validator("tenants")
    @classmethod
    def _tenant_shares(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is not None:
            if not v:
                raise ValueError("is empty; list each team's share of the output tokens, or leave tenants out")
            total = sum(v.values())
            if abs(total - 1.0) > 0.01:
                raise ValueError(f"shares add up to {total:.3g}, not 1 — give each team's share of the workload's "
                                 "output tokens (0.7 for 70%)")
        return v
    precisions: list[str] = Field(default_factory=lambda: ["bf16"])
    """Precisions the evaluation suite accepted for this model."""
    tp: list[int] | None = None
    """Tensor-parallel degrees to consider; default: powers of two within the scale-up domain."""
    parallelism: list[Literal["tp", "pp", "ep", "disagg"]] = Field(default_factory=lambda: list(PARALLELISM),
                                                                   examples=[["tp", "ep"]])
    """Candidate families: tp (in a scale-up domain, or over PCIe), pp (pipeline stages across
    nodes), ep (MoE experts over GPUs, attention data-parallel), disagg (prefill and decode groups)."""
    accelerators: list[str] | None = None
    """Only these accelerator ids (where your engine build is qualified); default every one."""
    engine: str | None = Field(default=None, examples=["sglang"])
    """The serving engine it runs on (catalogs/engines.yaml id); default: the best of policy.engines per config."""
    regions: list[str] | None = Field(default=None, examples=[["us-east-1", "us-east-2"]])
    """Only offers in these regions; default every region."""
    offers: list[str] | None = Field(default=None, examples=[["coreweave-h100-sxm"]])
    """Only these offer ids; default every offer."""
    tokens: Tokens | None = None
    """Mean tokens per request."""
    context_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS_PER_REQUEST, examples=[16384])
    """Working context for KV sizing; default input + output tokens."""
    kv_precision: Literal["bf16", "fp16", "fp8", "int8"] | None = Field(default=None, examples=["fp8"])
    """KV-cache datatype; default the precision's usual pairing."""
    slo: Slo = Field(default_factory=Slo)
    """Latency targets, at a percentile."""
    speculative: Speculative | None = None
    """Speculative decoding the serving engine runs (default none)."""
    prefix_cache: PrefixCache | None = None
    """The prefix cache's hit rate (default none: every input token is prefilled)."""
    demand: Demand | None = None
    """Interactive traffic: the peak (stated, or from business numbers) and its hourly profile (exactly one
    of demand, batch, reserve_gpus)."""
    measured: list[Measured] = Field(default_factory=list)
    """Load-test goodput per (accelerator, precision, layout): wins over the estimate."""
    api: Api | None = None
    """An API to send overflow (or all batch tokens) to."""
    batch: Batch | None = None
    """A daily batch job: tokens per day within a window of hours."""
    reserve_gpus: ReserveGpus | None = None
    """A fixed block of GPUs held for the horizon (research, experiments)."""
    split: Literal["none", "by_size", "any"] | None = Field(default=None, examples=["by_size"])
    """Whether its traffic may be divided among several configs (default policy.split): none, by_size or any."""

    _ids = field_validator("name", "pool")(check_id)

    @field_validator("accelerators", "regions", "offers")
    @classmethod
    def _filter(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v:
            raise ValueError("is empty, which would allow nothing — list the ids to keep, or leave it out for every one")
        return v

    @field_validator("measured")
    @classmethod
    def _measured_once(cls, ms: list[Measured]) -> list[Measured]:
        seen: dict[tuple, int] = {}
        for i, m in enumerate(ms):
            j = seen.setdefault(m.layout_key, i)
            if j != i:
                raise ValueError(f"[{i}] measures the same config as [{j}] ({m.accelerator}, {m.precision}, tp {m.tp}"
                                 f"{f', pp {m.pp}' if m.pp > 1 else ''}{f', ep {m.ep}' if m.ep > 1 else ''}"
                                 f"{f', {m.mig}' if m.mig else ''}{f', {m.engine}' if m.engine else ''}) — keep one: "
                                 "the newer load test, or their "
                                 "mean at the same SLO")
        return ms

    @field_validator("tp")
    @classmethod
    def _tp_powers(cls, tp: list[int] | None) -> list[int] | None:
        if tp is not None:
            if not tp:
                raise ValueError("is empty; omit it for the default or list degrees like [1, 2, 4, 8]")
            for t in tp:
                if not _is_power_of_two(t):
                    raise ValueError(f"{t} is not a power of two; use 1, 2, 4, 8, …")
        return tp

    @field_validator("precisions")
    @classmethod
    def _precisions(cls, ps: list[str]) -> list[str]:
        if not ps:
            raise ValueError("is empty; list the precisions your evaluation accepted, e.g. [bf16, fp8]")
        out = []
        for p in ps:
            p = PRECISION_ALIASES.get(p, p)
            if p not in PRECISION_IDS:
                guess = did_you_mean(p, list(PRECISION_IDS) + list(PRECISION_ALIASES))
                known = f"known: {', '.join(PRECISION_IDS)}"
                raise ValueError(f"unknown precision '{p}' — " + (f"did you mean '{guess}'? ({known})" if guess else known))
            if p not in out:
                out.append(p)
        return out

    @model_validator(mode="after")
    def _kind(self) -> "Workload":
        kinds = [k for k in ("demand", "batch", "reserve_gpus") if getattr(self, k) is not None]
        if len(kinds) != 1:
            got = " and ".join(kinds) if kinds else "none of them"
            fix = "keep the one that describes it" if kinds else "add demand: …, batch: … or reserve_gpus: …"
            raise ValueError(
                f"a workload has exactly one of demand (interactive), batch or reserve_gpus; got {got} — {fix}")
        if self.reserve_gpus is None:
            if self.model is None:
                raise ValueError("needs a model — add model: <id>, or use reserve_gpus: for a fixed reservation")
            if self.tokens is None:
                why = ("; the business numbers multiply requests by tokens.output" if self.demand is not None
                       and self.demand.users is not None else "")
                raise ValueError(f"needs tokens (mean per request{why}) — add tokens: {{input: …, output: …}}")
        return self

    @property
    def kind(self) -> Literal["interactive", "batch", "reserve"]:
        if self.batch is not None:
            return "batch"
        if self.reserve_gpus is not None:
            return "reserve"
        return "interactive"

    def split_mode(self, policy: Policy) -> Literal["none", "by_size", "any"]:
        """Its split: its own key, else the policy's."""
        return self.split if self.split is not None else policy.split

    @property
    def context(self) -> int:
        if self.context_tokens is not None:
            return self.context_tokens
        assert self.tokens is not None
        return int(round(self.tokens.input + self.tokens.output))


class Commitment(Strict):
    """Reserved capacity signed before this plan: used first, its cost sunk (reported apart)."""

    offer: str = Field(examples=["coreweave-h100-sxm"])
    """The offer id the contract is on."""
    tier: Literal["reserved-1y", "reserved-3y"]
    """reserved-1y or reserved-3y."""
    gpus: int = Field(ge=1, le=MAX_GPUS, examples=[64])
    """GPUs under contract."""
    start: PlanDate = Field(examples=["2026-10-01"])
    """First day of service."""
    end: PlanDate = Field(examples=["2027-09-30"])
    """Last day of service (inclusive)."""
    price_per_gpu_hour: float | None = Field(default=None, ge=0, examples=[4.2])
    """The contract's price; default the offer's price for the tier."""

    @model_validator(mode="after")
    def _order(self) -> "Commitment":
        if self.end < self.start:
            raise ValueError("end is before start — swap start and end")
        return self


SPEND_TERMS = {"1y": 365, "3y": 1095}
"""A savings plan's term in days (AWS Savings Plans and GCP committed-use discounts are sold for 1 or 3 years)."""


class SavingsPlan(Strict):
    """A spend commitment a provider sells (AWS Compute or EC2 Instance Savings Plans, GCP spend-based committed-use
    discounts): the plan may sign U $/hour of discounted spend for the term, paid every hour whether used or not;
    each hour it covers the on-demand use of the provider's offers up to U at the discount, the rest is billed at
    the on-demand price. The program chooses U (new_spend_commitments)."""

    provider: str = Field(examples=["aws"])
    """The provider (offers' `provider`) whose on-demand use it covers."""
    term: Literal["1y", "3y"] = Field(examples=["1y"])
    """1y or 3y."""
    discount: float = Field(gt=0, lt=1, examples=[0.28])
    """Share off the on-demand price of the use it covers: a covered GPU-hour of on-demand price P costs (1 −
    discount) · P of the commitment. AWS quotes it as the Savings Plan rate below On-Demand
    (https://aws.amazon.com/savingsplans/compute-pricing/); GCP as the spend-based CUD discount
    (https://cloud.google.com/docs/cuds-spend-based)."""
    offers: list[str] | None = Field(default=None, examples=[["aws-h100-sxm-us-east-1"]])
    """Only these offers of the provider (an EC2 Instance Savings Plan covers one instance family in one region);
    default every offer of the provider (a Compute Savings Plan)."""
    source: str = Field(default="", examples=["https://aws.amazon.com/savingsplans/compute-pricing/"])
    """Where the discount comes from (a price page, the account team's quote)."""
    as_of: str | None = Field(default=None, examples=["2026-11-09"])
    """When the discount was read."""


class SpendCommitment(Strict):
    """A spend commitment signed before this plan (an AWS Savings Plan, a GCP spend-based CUD): its U $/hour is
    paid every hour of its term (sunk, reported apart) and covers the provider's on-demand use at the discount
    while it runs."""

    provider: str = Field(examples=["aws"])
    """The provider whose on-demand use it covers."""
    usd_per_hour: float = Field(ge=0, le=1e7, examples=[40.0])
    """The commitment: discounted spend per hour, in the plan's currency (AWS states Savings Plans in $/hour)."""
    term: Literal["1y", "3y"] = Field(examples=["1y"])
    """1y or 3y."""
    discount: float = Field(gt=0, lt=1, examples=[0.28])
    """Share off the on-demand price of the use it covers."""
    start: PlanDate = Field(examples=["2026-07-01"])
    """First day it runs."""
    end: PlanDate = Field(examples=["2027-06-30"])
    """Last day it runs (inclusive)."""
    offers: list[str] | None = Field(default=None, examples=[["aws-h100-sxm-us-east-1"]])
    """Only these offers of the provider; default every one."""

    @model_validator(mode="after")
    def _order(self) -> "SpendCommitment":
        if self.end < self.start:
            raise ValueError("end is before start — swap start and end")
        return self


class Scenario(Strict):
    """One way the horizon may turn out, with its probability. Reservations and purchases are decided once
    for all scenarios; on-demand, spot and the API follow each (the two-stage program)."""

    name: str = Field(min_length=1, examples=["high"])
    """An id (lower-case, hyphenated)."""
    weight: float = Field(gt=0, le=1, examples=[0.25])
    """Its probability; the plan's weights add up to 1."""
    demand: dict[str, Annotated[float, Field(ge=0, le=100)]] = Field(default_factory=dict,
                                                                     examples=[{"all": 1.2, "chat": 1.5}])
    """Demand multipliers of interactive peaks: `all`, a pool or a workload (the most specific wins); default 1.
    Batch volumes and reserved blocks stay as stated."""
    prices: dict[str, Annotated[float, Field(gt=0, le=MAX_PRICE_MULTIPLIER)]] = Field(default_factory=dict,
                                                                     examples=[{"on-demand": 1.3, "spot": 1.5}])
    """Price multipliers by tier (on-demand, spot) or provider, for capacity bought by the hour."""
    goodput: float = Field(default=1.0, gt=0, le=MAX_GOODPUT_MULTIPLIER, examples=[0.9])
    """Goodput multiplier for estimated (not measured) goodput: the estimator's error as a scenario."""

    _id = field_validator("name")(check_id)


class Plan(Extensible):
    plan: str = Field(min_length=1)
    """The plan's name, shown in every report."""
    currency: str = "USD"
    """Currency of every price (reports format USD with $). planopt converts no currency: the built-in offers
    and systems are priced in USD, so a plan in another currency prices its own offers."""
    horizon_days: int = Field(ge=1, le=MAX_HORIZON_DAYS)
    """Days the plan buys for (a quarter: 90–92)."""
    start_date: PlanDate | None = None
    """First day of the horizon; needed with commitments and for calendar months."""
    timezone: str = "UTC"
    """Timezone of the hourly profiles (IANA name)."""
    commitments: list[Commitment] = Field(default_factory=list)
    """Reserved capacity already signed: used first, its cost sunk and reported apart."""
    savings_plans: list[SavingsPlan] = Field(default_factory=list)
    """Spend commitments the plan may sign (AWS Savings Plans, GCP spend-based committed-use discounts): U $/hour of
    discounted spend covering a provider's on-demand use at a discount; the program chooses U (0: none)."""
    spend_commitments: list[SpendCommitment] = Field(default_factory=list)
    """Spend commitments already signed: their U $/hour covers the provider's on-demand use at the discount while
    they run; their cost is sunk and reported apart."""
    catalogs: list[str] = Field(default_factory=lambda: ["builtin"])
    """Catalogs to load: builtin (planopt's) and/or YAML files beside the plan; same ids override."""
    day_types: dict[str, int | DayType] | None = None
    """Day types and their days: weekday/weekend/all, or your own with days_of_week."""
    facility: Facility = Field(default_factory=Facility)
    """Your own data centre: cooling, power and racks available, PUE, energy and colocation prices."""
    owned: list[Owned] = Field(default_factory=list)
    """Servers you already own: used first; capital sunk, running costs counted."""
    scenarios: list[Scenario] = Field(default_factory=list)
    """Ways the horizon may turn out (demand, prices, goodput), with weights: reservations and purchases
    are sized once for all of them, hourly capacity per scenario (policy.risk says how they are weighed)."""
    policy: Policy = Field(default_factory=Policy)
    """How to size and what may be bought."""
    models: list[Model] = Field(default_factory=list)
    """Models beyond the catalogs (or overriding one by id)."""
    accelerators: list[Accelerator] = Field(default_factory=list)
    """Accelerators beyond the catalogs."""
    offers: list[Offer] = Field(default_factory=list)
    """Offers beyond the catalogs, or the catalog's offer with your negotiated prices and caps (same id: what
    you write replaces the catalog's; for the same accelerator and machine size, its region, machine, spot
    interruption, caps and buy terms stay where you leave them out; the tiers you price are the only ones sold)."""
    workloads: list[Workload] = Field(min_length=1)
    """What must be served: interactive traffic, batch jobs and fixed reservations."""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone '{name}' — use an IANA name like UTC, Europe/Berlin or "
                             "America/New_York") from None
        return name

    @field_validator("day_types")
    @classmethod
    def _day_types(cls, dts: dict[str, int | DayType] | None):
        if dts is not None:
            if not dts:
                raise ValueError("is empty; omit it for one day type of horizon_days days")
            for name, v in dts.items():
                check_id(name)
                if isinstance(v, int) and not 0 <= v <= MAX_HORIZON_DAYS:
                    raise ValueError(f"{name}: {v} days is out of range — give a number of days, "
                                     f"0 to {MAX_HORIZON_DAYS}")
                if isinstance(v, int) and name not in BUILTIN_DAY_TYPES:
                    raise ValueError(
                        f"{name}: only weekday, weekend and all have built-in calendars — "
                        f"write {name}: {{days: {v}, days_of_week: [...]}} with the days it covers "
                        f"({', '.join(WEEKDAYS)})")
        return dts

    @model_validator(mode="after")
    def _derive_peaks(self) -> "Plan":
        for w in self.workloads:
            if w.demand is not None and w.demand.users is not None and w.tokens is not None:
                w.demand.fill_derived_peak(w.tokens.output, self.horizon_days)
        return self

    def split_workloads(self) -> set[str]:
        """Interactive workloads whose traffic may be divided among configs (split not none): their configs are
        never priced alone at their offer, since several may serve at once."""
        return {w.name for w in self.workloads if w.kind == "interactive" and w.split_mode(self.policy) != "none"}

    def day_type_days(self) -> dict[str, int]:
        if not self.day_types:
            return {"all": self.horizon_days}
        return {k: (v if isinstance(v, int) else v.days) for k, v in self.day_types.items()}

    def day_type_of(self, day: dt.date) -> str | None:
        """The day type a calendar date belongs to: the first (in plan order) whose days of the week — and
        month, for a day type of one month — include it (vocab.day_type_of, with months)."""
        months = {k: v.month for k, v in (self.day_types or {}).items() if isinstance(v, DayType) and v.month}
        if not months:
            return day_type_of(day, self.day_type_weekdays())
        month = day.strftime("%Y-%m")
        weekdays = {k: v for k, v in self.day_type_weekdays().items() if months.get(k, month) == month}
        return day_type_of(day, weekdays)

    def calendar_types(self, day: dt.date) -> list[str]:
        """Every day type a calendar date stands for: its day type (the program's copy of a plan with
        scenarios, inputs.derived.ProgramPlan, gives that day type in each scenario)."""
        d = self.day_type_of(day)
        return [] if d is None else [d]

    def day_type_weekdays(self) -> dict[str, tuple[str, ...]]:
        if not self.day_types:
            return {"all": WEEKDAYS}
        return {k: (BUILTIN_DAY_TYPES[k] if isinstance(v, int) else tuple(v.days_of_week))
                for k, v in self.day_types.items()}
