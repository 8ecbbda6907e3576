"""Catalog entries: accelerators, models, precisions, offers and systems to buy (pydantic only)."""

from __future__ import annotations

import datetime as dt
import re
import typing
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from optimizer.vocab import PAYMENT_OPTIONS, Tier

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9.]*(-[a-z0-9.]+)*$")


MAX_GPUS = 1_000_000
"""Sanity bound on any GPU count a plan or catalog states (caps, reservations, commitments)."""
MAX_PRICE = 1_000_000.0
"""Sanity bound on a price per GPU-hour or per million tokens, in any currency."""
MAX_NODE_GPUS = 1024
"""Sanity bound on GPUs per node, machine or scale-up domain (NVL576 racks fit)."""

Generation = Literal[
    "ampere", "hopper", "ada", "blackwell", "rubin", "cdna3", "cdna4", "gaudi3", "tpu", "trainium", "other"
]
ComputeDtype = Literal["bf16", "fp16", "fp8", "int8", "fp4"]


class Strict(BaseModel):
    """Base for every schema model: unknown keys are errors, values are immutable, and a
    yes/no is never a number (pydantic would read `occupancy: true` as 1.0)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _holds_dates(field.annotation) and isinstance(value, (int, float)) \
                and not isinstance(value, bool):
            # pydantic reads a number as seconds since 1970 (start_date: 0 is 1970-01-01)
            raise ValueError(f"{value!r} is a number, not a date — write a date as YYYY-MM-DD (2027-01-04)")
        if field is None or not _numbers_only(field.annotation):
            return value
        if isinstance(value, dict) and not _has_mapping(field.annotation):
            return value  # a nested model's keys ({price: …, estimated: true}): it checks its own fields
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
        items = [x for item in items for x in (item if isinstance(item, list) else [item])]
        for item in items:
            if isinstance(item, bool):
                raise ValueError(f"{str(item).lower()} is a yes/no value, not a number — write a number")
        return value


def _numbers_only(annotation: Any) -> bool:
    """Whether the annotation holds int or float values and never a bool (nested models aside)."""
    kinds: set[type] = set()

    def walk(tp: Any) -> None:
        if tp in (int, float, bool):
            kinds.add(tp)
            return
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return
        for arg in typing.get_args(tp):
            walk(arg)

    walk(annotation)
    return bool(kinds) and bool not in kinds


def _holds_dates(annotation: Any) -> bool:
    """Whether the annotation is a date, or a union with one."""
    return annotation is dt.date or any(_holds_dates(a) for a in typing.get_args(annotation))


def _has_mapping(annotation: Any) -> bool:
    """Whether the annotation, or a member of its union, is a dict type."""
    return typing.get_origin(annotation) is dict or any(_has_mapping(a) for a in typing.get_args(annotation))


def check_id(value: str) -> str:
    if not ID_PATTERN.match(value):
        plain = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()  # 'hïgh' → 'high'
        fixed = re.sub(r"[^a-z0-9.]+", "-", plain.lower()).strip("-")
        raise ValueError(f"'{value}' is not a valid id: ids are lower-case and hyphenated — write '{fixed}'")
    return value


class Sourced(Strict):
    source: str | None = None
    """Where the figures come from (URL or document)."""
    as_of: str | None = None
    """When the figures were checked (YYYY-MM or YYYY-MM-DD)."""
    notes: str | None = None
    """Free text: what the figures mean, caveats, superseded values."""

    @field_validator("as_of", mode="before")
    @classmethod
    def _date_as_text(cls, v: object) -> object:
        """YAML reads an unquoted 2026-09-15 as a date: keep it, as the ISO text it was written as."""
        return v.isoformat() if isinstance(v, dt.date) else v


class MigProfile(Strict):
    """A hardware partition of one GPU (NVIDIA MIG)."""

    name: str
    """Vendor name, e.g. '1g.10gb'."""
    instances_per_gpu: int = Field(ge=1, le=64)
    """How many of these fit on one GPU; a replica on it uses 1/instances_per_gpu of a GPU."""
    memory_gb: float = Field(gt=0)
    """Memory of one slice, GB."""
    compute_fraction: float = Field(gt=0, le=1)
    """Share of the GPU's SMs (compute slices / 7, or / 4 on RTX PRO 6000)."""
    memory_fraction: float | None = Field(default=None, gt=0, le=1)
    """Share of the GPU's memory slices (slices / 8): memory and its bandwidth are split in these
    (default: compute_fraction)."""


ScaleUpTopology = Literal["switch", "mesh", "pcie", "torus"]


MEMORY_BYTES_TOLERANCE = 0.10
"""memory_bytes is the marketed memory_gb in bytes, counted in GB (1e9) or GiB (2^30) as vendors do, within
this share: a driver's total sits a few per cent off either (an 'H100 80GB' reports 81,559 MiB = 85.5e9 B)."""


def check_memory_bytes(value: float, gb: float) -> float:
    """`value` when it is `gb` in bytes (GB or GiB, ± MEMORY_BYTES_TOLERANCE); ValueError naming both, and
    the unit it reads as when it is another (MiB, GB, GiB written where bytes go), otherwise."""
    def near(x: float, want: float) -> bool:
        return abs(x - want) <= MEMORY_BYTES_TOLERANCE * want

    if near(value, gb * 1e9) or near(value, gb * 2 ** 30):
        return value
    for unit, scale in (("MiB", 2 ** 20), ("GiB", 2 ** 30), ("GB", 1e9), ("MB", 1e6)):
        if near(value * scale, gb * 1e9) or near(value * scale, gb * 2 ** 30):
            raise ValueError(f"{value:,.6g} reads as {unit}, not bytes (memory_gb is {gb:g}) — memory_bytes is in "
                             f"bytes: write {value * scale:.0f}")
    raise ValueError(f"{value:,.0f} bytes ({value / 1e9:,.4g} GB) disagrees with memory_gb {gb:g} — memory_bytes "
                     f"is memory_gb in bytes as the driver reports it, within {MEMORY_BYTES_TOLERANCE:.0%} of "
                     f"{gb * 1e9:,.0f} (GB) or {gb * 2 ** 30:,.0f} (GiB); fix whichever of the two is wrong")


class Accelerator(Sourced):
    id: str
    """An id (lower-case, hyphenated) that offers, workloads and measured entries refer to."""
    name: str | None = None
    """A display name ('NVIDIA H100 SXM 80GB')."""
    vendor: str | None = None
    """nvidia, amd, intel, google, aws, …"""
    generation: Generation = "other"
    """Architecture family: decides native precisions and which calibration applies."""
    memory_gb: float = Field(gt=0)
    """Marketed memory per GPU ('80 GB'); used as GB = 1e9 bytes only when memory_bytes is not given."""
    memory_bytes: float | None = Field(default=None, gt=0)
    """Device memory in bytes as the driver reports it before any engine reserve (nvidia-smi or
    amd-smi total, MiB × 2^20): an 'H100 80GB' holds 81,559 MiB = 85.52e9 bytes."""
    bandwidth_tb_s: float | None = Field(default=None, gt=0)
    """Memory bandwidth per GPU, TB/s = 1e12 bytes/s."""
    tflops_dense: dict[ComputeDtype, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    """Dense (not sparse) tensor TFLOPS per GPU by compute datatype."""
    scale_up_gpus: int = Field(default=8, ge=1, le=MAX_NODE_GPUS)
    """GPUs in one NVLink / Infinity Fabric domain (1: no GPU-to-GPU link but PCIe)."""
    scale_up_bandwidth_gb_s: float | None = Field(default=None, gt=0)
    """Per-GPU scale-up bandwidth, GB/s (one direction), through a switch (NVSwitch)."""
    scale_up_topology: ScaleUpTopology | None = None
    """switch (NVSwitch: every GPU at full bandwidth), mesh (AMD Infinity Fabric: one link per peer,
    so TP k uses k−1 links), pcie (no GPU link: tensor parallelism over PCIe up to the machine),
    torus (TPU ICI). Default: switch, with tensor parallelism within scale_up_gpus."""
    scale_up_link_gb_s: float | None = Field(default=None, gt=0)
    """Mesh: GB/s of one link, one direction."""
    pcie_gb_s: float | None = Field(default=None, gt=0)
    """Host PCIe bandwidth per GPU, one direction (Gen4 x16 ≈ 32, Gen5 x16 ≈ 64): tensor
    parallelism over PCIe on cards without a GPU link."""
    scale_out_gb_s: float | None = Field(default=None, gt=0)
    """Inter-node bandwidth per GPU, one direction, in the standard server (8 × 400 Gb/s
    ConnectX-7 on HGX H100 = 50): pipeline and expert parallelism across nodes."""
    cooling: Literal["air", "liquid", "air-or-liquid"] = "air"
    """'liquid' means liquid-cooled racks only."""
    mig_profiles: list[MigProfile] = Field(default_factory=list)
    """MIG slices the GPU can be partitioned into (pools in policy.mig_pools may use them)."""
    status: Literal["shipping", "preliminary", "previous-gen"] = "shipping"
    """shipping, preliminary (figures from announcements) or previous-gen."""
    power_w: float | None = Field(default=None, gt=0)
    """Board power at load, watts."""

    _id = field_validator("id")(check_id)

    @field_validator("memory_bytes")
    @classmethod
    def _bytes_match_gb(cls, v: float | None, info: ValidationInfo) -> float | None:
        gb = info.data.get("memory_gb")
        if v is None or gb is None:
            return v
        return check_memory_bytes(v, gb)

    @property
    def needs_liquid_cooling(self) -> bool:
        return self.cooling == "liquid"

    @property
    def memory_bytes_per_gpu(self) -> float:
        """Device memory in bytes: memory_bytes, else memory_gb × 1e9."""
        return self.memory_bytes if self.memory_bytes is not None else self.memory_gb * 1e9

    @property
    def topology(self) -> str:
        return self.scale_up_topology or "switch"


class Model(Sourced):
    """An LLM's architecture: what weights, KV cache and FLOPs are computed from."""

    id: str
    """An id (lower-case, hyphenated) that workloads refer to."""
    name: str | None = None
    """A display name."""
    params_b: float = Field(gt=0)
    """Total parameters, billions (MoE: all experts, all resident)."""
    active_params_b: float | None = Field(default=None, gt=0)
    """Parameters touched per token, billions (MoE: shared + routed-active experts)."""
    layers: int | None = Field(default=None, ge=1)
    """Transformer layers (decoder blocks)."""
    hidden_size: int | None = Field(default=None, ge=1)
    """Model width (d_model)."""
    attention_heads: int | None = Field(default=None, ge=1)
    """Query heads per layer."""
    kv_heads: int | None = Field(default=None, ge=1)
    """Key/value heads per layer (GQA); equal to attention_heads for MHA."""
    head_dim: int | None = Field(default=None, ge=1)
    """Dimension of one attention head; default hidden_size / attention_heads."""
    attention: Literal["mha", "gqa", "mla"] = "gqa"
    """mha, gqa or mla (DeepSeek's multi-head latent attention: KV is one latent per token)."""
    kv_lora_rank: int | None = Field(default=None, ge=1)
    """MLA: compressed latent size stored per token per layer."""
    qk_rope_head_dim: int | None = Field(default=None, ge=0)
    """MLA: decoupled RoPE key dimension stored beside the latent."""
    sliding_window: int | None = Field(default=None, ge=1)
    """Tokens a sliding-window layer attends to (its KV is capped there)."""
    sliding_window_layers: int = Field(default=0, ge=0)
    """How many of the layers use the sliding window."""
    experts: int | None = Field(default=None, ge=1)
    """MoE: routed experts per MoE layer."""
    active_experts: int | None = Field(default=None, ge=1)
    """MoE: routed experts each token uses."""
    shared_experts: int | None = Field(default=None, ge=0)
    """MoE: experts every token uses."""
    vocab_size: int | None = Field(default=None, ge=1)
    """Vocabulary size (embeddings and output layer stay 16-bit)."""
    max_context: int | None = Field(default=None, ge=1)
    """Longest context the model supports, tokens."""
    kv_gb_per_seq: float | None = Field(default=None, gt=0)
    """Given directly: KV cache of one sequence at the workload's working context, GB."""
    tied_embeddings: bool | None = None
    """The output layer shares the input embedding (one vocab × hidden matrix, not two)."""
    intermediate_size: int | None = Field(default=None, ge=1)
    """Dense FFN width."""
    moe_intermediate_size: int | None = Field(default=None, ge=1)
    """Width of one routed expert."""
    dense_layers: int | None = Field(default=None, ge=0)
    """Leading layers with a dense FFN before the MoE layers (DeepSeek: 3)."""
    moe_layer_interval: int | None = Field(default=None, ge=1)
    """MoE on every k-th layer only (Llama 4 Maverick: 2)."""
    q_lora_rank: int | None = Field(default=None, ge=1)
    """MLA: rank of the query compression."""
    qk_nope_head_dim: int | None = Field(default=None, ge=1)
    """MLA: query/key head dimension without rotary embedding."""
    v_head_dim: int | None = Field(default=None, ge=1)
    """MLA: value head dimension."""
    mtp_params_b: float | None = Field(default=None, ge=0)
    """Multi-token-prediction (draft) module shipped with the checkpoint, billions; resident
    when the engine speculates with it, so counted in the weights."""
    linear_attention_layers: int = Field(default=0, ge=0)
    """Layers with linear (recurrent) attention (Qwen3-Next: Gated DeltaNet): a fixed state per
    sequence instead of a KV cache that grows with the context."""
    linear_state_bytes_per_layer: float | None = Field(default=None, gt=0)
    """Recurrent state of one sequence in one linear-attention layer, bytes (at 16 bits)."""
    indexer_head_dim: int | None = Field(default=None, ge=1)
    """DeepSeek sparse attention (V3.2): the lightning indexer caches one key of this size per
    token and layer (FP8), beside the MLA latent."""
    indexer_heads: int | None = Field(default=None, ge=1)
    """DeepSeek sparse attention: the indexer's query heads (each scores every cached token)."""
    sparse_topk: int | None = Field(default=None, ge=1)
    """DeepSeek sparse attention: each query attends to only this many tokens, those the indexer scores
    highest (V3.2: 2,048); the whole context is still cached, and the indexer reads all of its keys."""
    quantized_scope: Literal["linear", "experts"] = "linear"
    """What a low-bit checkpoint of this model quantizes: every linear layer, or only the routed
    experts (gpt-oss ships MXFP4 experts with 16-bit attention). Embeddings and the output layer
    stay 16-bit either way."""

    _id = field_validator("id")(check_id)

    @field_validator("active_params_b")
    @classmethod
    def _active_within_total(cls, v: float | None, info: ValidationInfo) -> float | None:
        total = info.data.get("params_b")
        if v is not None and total is not None and v > total:
            raise ValueError(f"{v:g} is above params_b {total:g} — a token touches at most every parameter "
                             "(MoE: active_params_b is the shared and routed-active experts); swap them if "
                             "they are the other way round")
        return v

    @field_validator("kv_heads")
    @classmethod
    def _kv_heads_within_heads(cls, v: int | None, info: ValidationInfo) -> int | None:
        heads = info.data.get("attention_heads")
        if v is not None and heads is not None and v > heads:
            raise ValueError(f"{v} is above attention_heads {heads} — grouped-query attention shares each key/value "
                             "head among several query heads (kv_heads ≤ attention_heads; equal for MHA); swap "
                             "them if they are the other way round")
        return v

    @model_validator(mode="after")
    def _kv_is_computable(self) -> "Model":
        if self.kv_gb_per_seq is None:
            missing = [k for k in ("layers", "kv_heads", "head_dim") if getattr(self, k) is None]
            if self.attention == "mla":
                missing = [k for k in ("layers", "kv_lora_rank") if getattr(self, k) is None]
            if missing:
                raise ValueError(
                    f"needs {', '.join(missing)} to compute the KV cache — or give kv_gb_per_seq"
                )
        if self.sliding_window_layers and self.layers and self.sliding_window_layers > self.layers:
            raise ValueError("sliding_window_layers exceeds layers — it counts the layers that use the window")
        if self.sliding_window_layers and self.sliding_window is None:
            raise ValueError("sliding_window_layers needs sliding_window — add sliding_window: <tokens>")
        if self.linear_attention_layers and self.linear_state_bytes_per_layer is None:
            raise ValueError("linear_attention_layers needs linear_state_bytes_per_layer — the state one "
                             "sequence keeps in one such layer, bytes")
        if self.layers and self.linear_attention_layers + self.sliding_window_layers > self.layers:
            raise ValueError("linear_attention_layers and sliding_window_layers together exceed layers")
        return self

    @property
    def active_b(self) -> float:
        return self.active_params_b if self.active_params_b is not None else self.params_b


class Precision(Sourced):
    id: str
    name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    bytes_per_param: float = Field(gt=0)
    """Weight storage including quantization scales."""
    compute_dtype: ComputeDtype
    """Datatype of the matrix multiplies (weight-only formats compute in bf16)."""
    weight_only: bool = False
    """Weights are stored compressed and de-quantized on the fly: runs anywhere bf16 runs."""
    native_on: list[Generation] = Field(default_factory=list)
    """Hardware generations with tensor cores for compute_dtype."""
    weight_only_on: list[Generation] = Field(default_factory=list)
    """Generations without native tensor cores for it where kernels still serve it weight-only:
    stored compressed, de-quantized to bf16 for the matrix multiplies (MXFP4 on Hopper)."""
    kv_bytes_per_elem: float = Field(default=2.0, gt=0)
    """KV-cache element size served with this precision by default."""

    _id = field_validator("id")(check_id)


class TierPrice(Strict):
    """A price with provenance, for tiers that are estimates rather than list prices."""

    price: float = Field(ge=0, le=MAX_PRICE)
    """The price per GPU-hour."""
    estimated: bool = False
    """True when no public list price exists and the price is derived (basis says how)."""
    basis: str | None = None
    """How the estimate was made, e.g. 'on-demand x (1 - 0.33), published 1-year discount'."""


class PaymentPrices(Strict):
    """A reserved tier's prices by payment option, each the effective price per GPU-hour over the term (the
    term's total ÷ its GPU-hours), as providers quote them (AWS: no, partial and all upfront). all_upfront pays
    the whole term on its first day; partial_upfront half then and the rest monthly; no_upfront monthly. The
    plan takes the cheapest option policy.payment allows (ties: the one paying less up front)."""

    no_upfront: float | None = Field(default=None, ge=0, le=MAX_PRICE, examples=[4.73])
    partial_upfront: float | None = Field(default=None, ge=0, le=MAX_PRICE, examples=[4.45])
    all_upfront: float | None = Field(default=None, ge=0, le=MAX_PRICE, examples=[4.30])

    @model_validator(mode="after")
    def _some_option(self) -> "PaymentPrices":
        if not self.options():
            raise ValueError("gives no payment option: write no_upfront, partial_upfront or all_upfront "
                             "(each a price per GPU-hour)")
        return self

    def options(self) -> dict[str, float]:
        """Option → effective price per GPU-hour, for the options given, in PAYMENT_OPTIONS' order."""
        return {o: float(v) for o in PAYMENT_OPTIONS if (v := getattr(self, o)) is not None}

    def cheapest(self) -> tuple[str, float]:
        """(option, price) of the least effective price; ties: the one paying less up front."""
        return min(self.options().items(), key=lambda kv: (kv[1], PAYMENT_OPTIONS.index(kv[0])))


MAX_NODE_PRICE = 100_000_000
"""USD for one server or rack: far above any real system (a GB300 NVL72 rack lists near $4M)."""
MAX_NODE_KW = 2_000
"""kW one purchase unit draws: far above a rack-scale system (~130 kW)."""


class BuyTerms(Strict):
    """Servers (or racks) you buy and run in your facility: the `buy` tier. The program charges the
    horizon's share of owning them from delivery — straight-line depreciation, the cost of the capital
    tied up (on the mean book value) and support — plus energy for the hours they run and colocation;
    the cash outlay (the price, at delivery) is reported apart."""

    system: str | None = Field(default=None, examples=["hgx-b200"])
    """A system from the systems catalog (catalogs/systems.yaml): its price, power, lead time, life,
    residual, support and rack density fill every key not given here."""
    price_per_node: float | None = Field(default=None, gt=0, le=MAX_NODE_PRICE, examples=[420000])
    """USD for one purchase unit (a server; a whole rack for rack-scale systems)."""
    lead_time_days: int | None = Field(default=None, ge=0, le=3660, examples=[60])
    """Days from the order (the horizon's first day) to delivery: bought capacity serves only from then."""
    life_years: float | None = Field(default=None, gt=0, le=30, examples=[5])
    """Depreciation life, straight line."""
    residual_fraction: float | None = Field(default=None, ge=0, lt=1, examples=[0.1])
    """Value left at the end of its life, as a share of the price (0.1, not 10)."""
    cost_of_capital: float = Field(default=0.0, ge=0, le=1, examples=[0.08])
    """Yearly rate on the capital tied up (the mean book value over its life; 0.08, not 8)."""
    support_per_year: float | None = Field(default=None, ge=0, le=MAX_NODE_PRICE, examples=[25000])
    """Support and maintenance per unit per year, USD."""
    node_power_kw: float | None = Field(default=None, gt=0, le=MAX_NODE_KW, examples=[14.3])
    """IT power one unit draws at load, kW (what the facility's power_kw limit counts)."""
    idle_power_kw: float | None = Field(default=None, ge=0, le=MAX_NODE_KW, examples=[4.5])
    """IT power of one unit while it serves nothing, kW; default 30% of node_power_kw."""
    nodes_per_rack: int | None = Field(default=None, ge=1, le=64, examples=[4])
    """Units one rack position holds (facility racks); default 1 for rack-scale systems, else 4."""

    @field_validator("residual_fraction", "cost_of_capital", mode="before")
    @classmethod
    def _share_not_percent(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1:
            raise ValueError(f"{v:g} reads as a percentage; {info.field_name} is a share — write {v / 100:g} "
                             f"for {v:g}%")
        return v

    @model_validator(mode="after")
    def _idle_below_load(self) -> "BuyTerms":
        if self.idle_power_kw is not None and self.node_power_kw is not None \
                and self.idle_power_kw > self.node_power_kw:
            raise ValueError(f"idle_power_kw {self.idle_power_kw:g} is above node_power_kw {self.node_power_kw:g} — "
                             "idle draws less than load; swap them")
        return self


class Offer(Sourced):
    """An accelerator sold by a provider in a region, in nodes of gpus_per_node."""

    id: str
    """An id (lower-case, hyphenated) for this way of buying GPUs."""
    accelerator: str
    """The accelerator id it sells."""
    provider: str
    """Who sells it (policy.providers filters on it)."""
    region: str = "any"
    """Where (workloads' regions filter on it)."""
    gpus_per_node: int = Field(default=8, ge=1, le=MAX_NODE_GPUS)
    """The purchase unit: every tier is bought in whole multiples of it."""
    unit: Literal["gpu", "node", "tray", "rack"] = "node"
    """What one purchase unit is: a single GPU, a server, a compute tray or a whole rack."""
    scale_up_gpus: int | None = Field(default=None, ge=1, le=MAX_NODE_GPUS)
    """The NVLink domain the customer gets (a whole GB200 NVL72 rack: 72; a 4-GPU tray inside
    one: 4). Default: the accelerator's domain, within the largest machine sold."""
    scale_out_gb_s: float | None = Field(default=None, ge=0)
    """Inter-node bandwidth per GPU, one direction, GB/s (0: no fast interconnect, replicas stay
    in one machine). Default: the accelerator's."""
    max_gpus_per_instance: int | None = Field(default=None, ge=1, le=MAX_NODE_GPUS)
    """Largest single machine sold (NVLink-connected), when it exceeds the purchase unit; a
    tensor-parallel replica must fit in one machine. Default: gpus_per_node."""
    price_per_gpu_hour: dict[Tier, Annotated[float, Field(ge=0, le=MAX_PRICE)] | TierPrice | PaymentPrices] = Field(
        default_factory=dict)
    """Price per GPU-hour by tier; a tier that is not listed is not sold (buy: see `buy`). A reserved tier may
    give its payment options instead of one number, `{no_upfront: 4.73, partial_upfront: 4.45, all_upfront:
    4.30}` (PaymentPrices); a single number is its no_upfront price."""
    available_gpus: dict[Tier, Annotated[int, Field(ge=0, le=MAX_GPUS)]] = Field(default_factory=dict)
    """What can really be obtained: reserved caps the reserved GPUs, on-demand and spot
    the GPUs in use at any one hour. A missing tier is unlimited."""
    spot_interruption: float = Field(default=0.0, ge=0, lt=1)
    """Share of spot capacity lost to interruptions; batch counts spot at (1 - this)."""
    buy: BuyTerms | None = None
    """Servers you may buy (the buy tier): their price, lead time, life and power. Such an offer may
    also sell on-demand or spot hours of the same machine (to bridge until delivery), nothing reserved."""

    _id = field_validator("id")(check_id)

    @property
    def max_tp(self) -> int:
        """The largest machine sold: no replica's tensor-parallel group is larger."""
        return max(self.gpus_per_node, self.max_gpus_per_instance or 0, self.scale_up_gpus or 0)

    @model_validator(mode="after")
    def _sells_something(self) -> "Offer":
        if "buy" in self.price_per_gpu_hour:
            raise ValueError("prices the buy tier by the GPU-hour — bought servers are priced per node: "
                             "move it to buy: {price_per_node: …, node_power_kw: …}")
        hourly = [t for t, p in self.price_per_gpu_hour.items() if isinstance(p, PaymentPrices)
                  and not t.startswith("reserved")]
        if hourly:
            raise ValueError(f"gives {hourly[0]} payment options — only a reservation is paid up front: give "
                             f"{hourly[0]} one price per GPU-hour")
        if self.buy is not None:
            bad = [t for t in self.price_per_gpu_hour if t.startswith("reserved")]
            if bad:
                raise ValueError(f"sells {bad[0]} and buy — an offer you buy may also rent the same machine "
                                 "by the hour (on-demand, spot) until yours arrive; put reservations on an offer "
                                 "of their own")
        return self

    def sells(self, tier: str) -> bool:
        return self.buy is not None if tier == "buy" else self.price(tier) is not None

    def price(self, tier: str) -> float | None:
        p = self.price_per_gpu_hour.get(tier)  # type: ignore[call-overload]
        if p is None:
            return None
        if isinstance(p, PaymentPrices):
            return p.cheapest()[1]
        return p.price if isinstance(p, TierPrice) else float(p)

    def payment(self, tier: str) -> str | None:
        """The payment option the tier's price is (PaymentPrices.cheapest); None when the offer gives one price."""
        p = self.price_per_gpu_hour.get(tier)  # type: ignore[call-overload]
        return p.cheapest()[0] if isinstance(p, PaymentPrices) else None

    def estimated(self, tier: str) -> bool:
        p = self.price_per_gpu_hour.get(tier)  # type: ignore[call-overload]
        return isinstance(p, TierPrice) and p.estimated


class SystemPrice(Strict):
    """A purchase price with provenance, for systems without a public list price (like TierPrice,
    but for a whole server or rack, in USD)."""

    price: float = Field(gt=0, le=MAX_NODE_PRICE)
    """USD for one node (or one whole rack)."""
    estimated: bool = False
    """True when no public list or street price exists and the price is derived (basis says how)."""
    basis: str | None = None
    """How the estimate was made, e.g. '8 x GPU street price + host platform'."""


class System(Sourced):
    """A server or rack you can buy (the 'buy' tier: owned hardware), priced per node."""

    id: str
    """An id (lower-case, hyphenated) for this system, e.g. 'hgx-b200' or 'gb200-nvl72'."""
    name: str | None = None
    """A display name ('NVIDIA HGX B200 8-GPU server')."""
    accelerator: str
    """The accelerator id it carries."""
    gpus_per_node: int = Field(default=8, ge=1, le=MAX_NODE_GPUS)
    """GPUs in one purchase unit (8 for an HGX server, 72 for an NVL72 rack)."""
    unit: Literal["node", "rack"] = "node"
    """What one purchase unit is: a server, or a whole rack-scale system."""
    price_per_node: Annotated[float, Field(gt=0, le=MAX_NODE_PRICE)] | SystemPrice
    """USD list/street price of one node (or one whole rack); a SystemPrice when estimated."""
    node_power_kw: float = Field(gt=0, le=MAX_NODE_KW)
    """Power of one node at load, kW, the whole node or rack (GPUs, CPUs, NICs, fans, switches)."""
    idle_power_kw: float | None = Field(default=None, ge=0, le=MAX_NODE_KW)
    """Power of one node powered on but idle, kW (None: not known)."""
    lead_time_days: int | None = Field(default=None, ge=0, le=3650)
    """Typical days from order to delivery (None: not known)."""
    nodes_per_rack: int = Field(default=1, ge=1, le=64)
    """How many of these nodes one rack position holds in a typical data hall (an NVL72 rack: 1)."""
    liquid_cooling: bool = False
    """Needs liquid-cooled racks (no air-cooled variant)."""
    support_per_year: float = Field(default=0.0, ge=0, le=MAX_NODE_PRICE)
    """USD per node per year for the support/maintenance contract."""
    life_years: float = Field(default=5.0, gt=0, le=20)
    """Depreciation life, years."""
    residual_fraction: float = Field(default=0.0, ge=0, lt=1)
    """Share of the price the node is worth at the end of its life."""

    _id = field_validator("id")(check_id)

    @model_validator(mode="after")
    def _consistent(self) -> "System":
        if self.idle_power_kw is not None and self.idle_power_kw > self.node_power_kw:
            raise ValueError("idle_power_kw exceeds node_power_kw — idle is the lower of the two")
        if self.unit == "rack" and self.nodes_per_rack != 1:
            raise ValueError("a rack-scale system fills its rack: nodes_per_rack is 1 when unit is 'rack'")
        return self

    @property
    def price(self) -> float:
        """USD for one node (or rack)."""
        p = self.price_per_node
        return p.price if isinstance(p, SystemPrice) else float(p)

    @property
    def estimated(self) -> bool:
        """Whether the price is an estimate rather than a public list/street price."""
        p = self.price_per_node
        return isinstance(p, SystemPrice) and p.estimated


class CatalogFile(Strict):
    """One catalog YAML file; any of the sections may be present."""

    accelerators: list[Accelerator] = Field(default_factory=list)
    models: list[Model] = Field(default_factory=list)
    precisions: list[Precision] = Field(default_factory=list)
    offers: list[Offer] = Field(default_factory=list)
    systems: list[System] = Field(default_factory=list)
    """Servers and racks to buy (catalogs only; plans do not carry them inline)."""
