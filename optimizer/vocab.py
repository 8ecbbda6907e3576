"""planopt's vocabulary: purchase tiers and cost keys, precisions and parallelism, day types and the calendar
rule, demand profiles, config labels. Every layer reads these from here; units are in optimizer/units.py,
numbers in words (money, plurals) in optimizer/formatting.py.

No third-party imports and no I/O: the lowest layer of the package.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal, Sequence

from optimizer.formatting import percent

# --- purchase tiers ------------------------------------------------------------------------------

TIERS = ("buy", "reserved-1y", "reserved-3y", "on-demand", "spot")
"""Every purchase tier, in the order reports list them (buy: servers you own, bought in this plan)."""
Tier = Literal["buy", "reserved-1y", "reserved-3y", "on-demand", "spot"]
RENTED_TIERS = ("reserved-1y", "reserved-3y", "on-demand", "spot")
"""Tiers sold by the GPU-hour (an offer's price_per_gpu_hour)."""
RESERVED_TIERS = ("reserved-1y", "reserved-3y")
"""Tiers held at one level for the whole horizon."""
HOURLY_TIERS = ("on-demand", "spot")
"""Tiers bought hour by hour."""
RESERVED_TERM_DAYS = {"reserved-1y": 365, "reserved-3y": 1095}
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
"""How a reservation's term is paid: monthly, half at its start and the rest monthly, or all at its start."""
Payment = Literal["no_upfront", "partial_upfront", "all_upfront"]
UPFRONT_SHARE = {"no_upfront": 0.0, "partial_upfront": 0.5, "all_upfront": 1.0}
"""The share of a reservation's whole-term cost paid on its first day, by payment option."""
TERM_MONTHS = {"reserved-1y": 12, "reserved-3y": 36}
COST_KEYS = ("reserved", "on_demand", "spot", "api")
"""Keys of a plan's cost by tier group (the `--json` contract's cost.by_tier)."""
OWN_COST_KEYS = ("buy", "facility")
"""Cost keys of plans with hardware of their own: the horizon's share of owning what this plan buys
(depreciation, cost of capital, support), and the facility's energy and colocation; cost.by_tier carries
them only when the plan owns or may buy hardware."""
TIER_GROUP = {"buy": "buy", "reserved-1y": "reserved", "reserved-3y": "reserved", "on-demand": "on_demand", "spot": "spot"}
"""Purchase tier → the cost key it adds to."""
COST_LABELS = {"buy": "Bought (depreciation, capital, support)", "facility": "Energy, space, support of owned servers",
               "reserved": "Reserved", "on_demand": "On-demand", "spot": "Spot", "api": "API",
               "savings_plan": "Spend commitments (paid, not used)"}
CHEAPEST_HOURLY_FIRST = ("on-demand", "spot", "reserved-1y", "reserved-3y")
"""The order in which a standalone (one config alone) cost picks an offer's tier."""


def tier_rank(tier: str) -> int:
    return TIERS.index(tier)


# --- precisions and parallelism ------------------------------------------------------------------

PRECISION_IDS = ("bf16", "fp16", "fp8", "int8", "int4-awq", "fp4", "mxfp4", "w8a16")
"""The built-in weight formats (catalogs/precisions.yaml describes each)."""
PRECISION_ALIASES = {"nvfp4": "fp4", "awq": "int4-awq", "int4": "int4-awq", "w4a16": "int4-awq", "gptq": "int4-awq",
                     "int8-weight-only": "w8a16", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
                     "fp8-e4m3": "fp8", "w8a8-fp8": "fp8", "w8a8": "int8", "w8a8-int8": "int8"}
PARALLELISM = ("tp", "pp", "ep", "disagg")

SHARE_MODES = {"mps": "MPS", "time_slicing": "time-slicing"}
"""How workloads share a whole GPU (policy.share_mode), as reports name it."""
"""Candidate families: tensor parallel in a scale-up domain (or over PCIe); pipeline stages across
nodes; experts spread over GPUs with data-parallel attention (MoE); disaggregated prefill/decode."""


# --- day types and the calendar rule -------------------------------------------------------------

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
BUILTIN_DAY_TYPES: dict[str, tuple[str, ...]] = {"weekday": WEEKDAYS[:5], "weekend": WEEKDAYS[5:], "all": WEEKDAYS}
"""Day types whose days of the week need not be stated."""
DAY_TYPE_WORDS = {"weekday": "weekdays", "weekend": "weekends", "all": "every day"}


def weekday_id(day: dt.date) -> str:
    return WEEKDAYS[day.weekday()]


def day_type_of(day: dt.date, weekdays_by_type: dict[str, Sequence[str]]) -> str | None:
    """The day type a calendar date belongs to: the first (in plan order) whose days of the week
    include it; None when no day type covers that day of the week. The one rule for every use
    (contract periods, usage logs, forecasts)."""
    wd = weekday_id(day)
    for name, days in weekdays_by_type.items():
        if wd in days:
            return name
    return None


def day_type_words(day_type: str) -> str:
    return DAY_TYPE_WORDS.get(day_type, f"{day_type} days")


# --- demand profiles -----------------------------------------------------------------------------


def profile_for(profile: Sequence[float] | dict[str, Sequence[float]] | None, day_type: str) -> list[float]:
    """A workload's 24 fractions of its peak for one day type: one list for every type, one per
    type, or flat at 1 when the plan gives none."""
    if profile is None:
        return [1.0] * 24
    if isinstance(profile, dict):
        return list(profile[day_type])
    return list(profile)


# --- config labels (built from a config's parts, never parsed back) ------------------------------


def parallel_label(tp: int, mig: str | None = None) -> str:
    """'tp4' or 'MIG 1g.10gb'."""
    return f"MIG {mig}" if mig else f"tp{tp}"


def option_label(accelerator: str, precision: str | None = None, tp: int | None = None,
                 mig: str | None = None, layout: str | None = None) -> str:
    """What the candidate builder considered, before an offer: 'h100-sxm · fp8 · tp2'."""
    parts = [accelerator]
    if precision:
        parts.append(precision)
    if layout:
        parts.append(layout)
    elif tp is not None or mig:
        parts.append(parallel_label(tp or 1, mig))
    return " · ".join(parts)


GENERIC_ENGINE = "generic"
"""The engine id of the estimator's own calibration (catalogs/engines.yaml): no engine a team runs, so labels
leave it out."""


def shown_engine(engine: str | None) -> str | None:
    """The engine a label names: None for none and for the generic calibration."""
    return None if engine in (None, GENERIC_ENGINE) else engine


def config_label(offer: str | None, precision: str | None, tp: int, mig: str | None = None, *,
                 api: bool = False, ceiling: int | None = None, layout: str | None = None) -> str:
    """A config: 'aws-h100 · fp8 · tp2' (or its layout: 'tp8 × pp2', 'ep16 (dp-attention)'), with
    its overflow ceiling when it has one; 'API' for the API-only config."""
    if api or offer is None:
        return "API"
    parts = [offer, precision or "", layout or parallel_label(tp, mig)]
    if ceiling is not None:
        parts.append(f"ceiling {ceiling} replicas")
    return " · ".join(p for p in parts if p)


def choice_label(offer: str | None, precision: str | None, tp: int, mig: str | None, kind: str, *,
                 gpus: int | None = None, api_share: float = 0.0, layout: str | None = None,
                 engine: str | None = None, shared: str | None = None) -> str:
    """A workload's chosen config as reports state it: the API, a reservation, or offer · precision ·
    parallelism [· engine] [· shared (MPS)], with the share of its tokens sent to the API."""
    if offer is None:
        return "served by the API"
    if kind == "reserve":
        return f"{offer} · {gpus} GPUs held" if gpus else f"{offer} · reserve"
    label = f"{offer} · {precision} · {layout or parallel_label(tp, mig)}" + (f" · {engine}" if engine else "")
    if shared:
        label += f" · shared ({SHARE_MODES.get(shared, shared)})"
    if api_share > 0:
        label += f" + API {percent(api_share)} of its tokens"
    return label
