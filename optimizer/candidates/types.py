"""What the candidate builder hands the program: configs with their constants, and what was dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from optimizer import units, vocab
from optimizer.physics.replicas import Replicas
from optimizer.physics.validation import Validation

DayHour = tuple[str, int]
T = TypeVar("T")


GoodputSource = Literal["measured", "estimated", "api"]


@dataclass(frozen=True)
class Candidate:
    """One way to serve one workload, with everything the integer program needs as constants."""

    key: str
    workload: str
    pool: str
    kind: Literal["interactive", "batch", "reserve", "api"]
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int
    mig: str | None
    gpu_fraction: float
    """GPUs per replica: the TP degree, or 1/instances_per_gpu on a MIG slice."""
    goodput: float
    goodput_source: GoodputSource
    bound: str | None
    weights_gb: float
    kv_gb_per_seq: float
    kv_concurrency: int
    needed_concurrency: int
    total_gb: float
    reserve_gb: float
    free_gb: float
    batch: float | None
    """Mean sequences in flight at the SLO (fractional when an SLO limits it)."""
    ttft_ms: float | None
    tpot_ms: float | None
    api_output_tokens_per_day: dict[str, float] = field(default_factory=dict, compare=False)
    """Output tokens a day (per day type) the gateway sends to the API above this config's ceiling."""
    api_cost: float = 0.0
    """Horizon cost of those API tokens (input tokens of the same requests included)."""
    ceiling_replicas: int | None = None
    """With overflow: the base replicas the fleet is sized for; demand above spills to the API."""
    gpus: dict[DayHour, int] = field(default_factory=dict, compare=False)
    """GPUs needed at each (day type, hour) with spares and rollout (interactive, reserve)."""
    replicas: dict[DayHour, Replicas] = field(default_factory=dict, compare=False)
    family: str = "tp"
    """Parallelism family: tp, pp, ep or disagg (vocab.PARALLELISM)."""
    layout: str | None = None
    """How the replica spreads over GPUs when it is more than one tensor-parallel group:
    'tp8 × pp2', 'ep16 (dp-attention)', 'disagg: prefill tp2 × 0.25 + decode tp8' (None: tp)."""
    pp: int = 1
    ep: int = 1
    kv_copies: float = 1.0
    """Copies of each sequence's KV the replica keeps (MLA under TP: one per GPU)."""
    calibrated: bool = True
    """False when no published result calibrated the estimate's (generation, datatype)."""
    ttft_at_load_ms: float | None = None
    """TTFT at the SLO's percentile with the replica at the plan's occupancy of its goodput."""
    prefill_groups: tuple[float, int] | None = None
    """Disaggregated: (prefill groups per replica, GPUs per prefill group); replicas share whole groups."""
    engine: str | None = None
    """The serving engine (catalogs/engines.yaml): the allowed one with the most goodput, or the one a measured
    point names (None: measured without one, or a catalog without engines)."""
    validation: Validation | None = None
    """The evidence behind its goodput: its group, the published points behind it and the estimator's error
    band there (physics.validation); None for the API and reserved GPU blocks."""

    class_goodput: tuple[float, ...] = ()
    """With a tokens.mix: the goodput at each request-size class's sizes, in the mix's order (0: the class cannot
    run on it); `goodput` is then over the mix (build._size_mix). Empty: one class, at `goodput`."""
    class_sources: tuple[str, ...] = ()
    """With a tokens.mix: measured or estimated, per class."""

    commit_gpus: int | None = None
    """policy.size_commitments_at: low — the most GPUs reservations and purchases may hold for it: its busiest
    hour's GPUs at the high end of its goodput band, estimate ÷ (1 + error_p10), the fewest the band allows
    (its own need where it is measured or has no band). None: no such bound (batch work, reserved blocks, the API,
    or policy estimate)."""

    share: str | None = None
    """policy.share_pools: how this config shares whole GPUs with other workloads' (mps or time_slicing; None: it
    does not). Its GPUs are then the group's at its offer and pool (optimize.families `share`), not `gpus`, which
    holds what the group would need were it alone in it (a ranking key, physics.sharing)."""
    share_memory: float = 0.0
    """A shared config: the share of each shared GPU's usable memory its replica takes (weights and KV cache)."""
    share_time: dict[DayHour, float] = field(default_factory=dict, compare=False)
    """A shared config: the GPUs' worth of time its demand takes at each (day type, hour), its goodput less the
    slowdown, before the occupancy (physics.sharing.time_share)."""
    share_slowdown: float = 0.0
    """A shared config: the share of goodput sharing costs it (physics.sharing.SLOWDOWN, or policy.share_slowdown)."""

    @property
    def unvalidated(self) -> bool:
        """An estimated goodput no group with enough published points backs (policy.unvalidated)."""
        return self.validation is not None and not self.validation.validated

    @property
    def gpus_per_replica(self) -> float:
        return self.gpu_fraction

    def gpus_for(self, replicas: int) -> int:
        """Whole GPUs that `replicas` replicas occupy (whole_gpus)."""
        return whole_gpus(replicas, self.gpu_fraction, self.prefill_groups)

    @property
    def label(self) -> str:
        if self.kind == "reserve":  # a GPU budget held, not a serving layout
            return vocab.choice_label(self.offer, None, self.tp, None, "reserve", gpus=self.tp)
        label = vocab.config_label(self.offer, self.precision, self.tp, self.mig, api=self.kind == "api",
                                   ceiling=self.ceiling_replicas, layout=self.layout)
        return f"{label} · shared ({vocab.SHARE_MODES[self.share]})" if self.share else label


def evolved(obj: T, **changes: object) -> T:
    """dataclasses.replace for the builder's frozen dataclasses (Candidate, Dropped, configs.Sized: no
    __post_init__, no init=False fields, no slots), by copying the instance's fields instead of calling
    __init__ again: the same object, in a fraction of the time, for the copies the builder makes of every
    config (its hourly GPUs, its engine, its ceilings)."""
    new = object.__new__(type(obj))
    fields = obj.__dataclass_fields__  # type: ignore[attr-defined]
    assert all(k in fields for k in changes), changes
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


def whole_gpus(replicas: int, fraction: float, prefill_groups: tuple[float, int] | None = None) -> int:
    """Whole GPUs `replicas` replicas of `fraction` GPUs each occupy: MIG slices pack onto GPUs; a
    disaggregated replica's decode group is whole and its prefill share is of whole prefill groups
    (13 replicas of a tp4 decode group and 1.875 tp2 prefill groups: 52 + 25 × 2 = 102 GPUs, not
    ceil(13 × 7.75) = 101)."""
    if prefill_groups is None:
        return units.ceil_tol(replicas * fraction)
    groups, per_group = prefill_groups
    return units.ceil_tol(replicas * (fraction - groups * per_group)) + units.ceil_tol(replicas * groups) * per_group


@dataclass(frozen=True)
class Dropped:
    workload: str
    option: str
    """What was considered, e.g. 'h100-sxm · bf16 · tp1' or 'offer aws-h100-sxm-us-east-1'."""
    family: str
    """Why, in one word: fit, native, engine, scale-up, network, filter, tier, slo, goodput, dominated,
    unvalidated."""
    reason: str
    ttft_ms: float | None = None
    """slo: the best TTFT this option reaches (batch 1, at the SLO's percentile), ms."""
    tpot_ms: float | None = None
    """slo: the best TPOT this option reaches (batch 1), ms."""


@dataclass(frozen=True)
class CandidateSet:
    by_workload: dict[str, list[Candidate]]
    dropped: list[Dropped]
    demand: dict[str, dict[DayHour, float]]
    """Output tokens/s per workload at each (day type, hour); empty for batch and reserve."""
    pruned: int
    """Options removed as dominated — configs and whole offers (a subset of `dropped`)."""
    notes: list[str] = field(default_factory=list)
    """Warnings about what was kept: measured points the memory model contradicts (configs._measured_sized).
    `validate` prints them, `solve` carries them as the result's notes."""

    def all(self) -> list[Candidate]:
        return [c for w in sorted(self.by_workload) for c in self.by_workload[w]]

    def offer_ids(self) -> list[str]:
        """Every offer some candidate runs on, sorted."""
        return sorted({c.offer for c in self.all() if c.offer})

    def chosen(self, choice: dict[str, str]) -> dict[str, Candidate]:
        """Workload → its candidate, from workload → candidate key."""
        return {w: next(c for c in self.by_workload[w] if c.key == key) for w, key in choice.items()}
