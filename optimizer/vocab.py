"""planopt's one vocabulary: units and rounding, tiers, day types and the calendar rule, config labels,
money and plurals, demand profiles, batch replica-hours. Every layer reads these from here.

No third-party imports and no I/O: the lowest layer of the package.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Iterable, Literal, Sequence

# --- units and rounding -------------------------------------------------------------------------

GB = 1e9
"""Bytes in a GB as planopt reports it: GB in inputs and outputs is always 1e9 bytes."""
GIB = 2**30
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24
HOURS = range(24)
TOL = 1e-9
"""A quotient within TOL of an integer is that integer: floating-point error never adds a replica or a node."""


def ceil_tol(x: float, tol: float = TOL) -> int:
    """ceil(x), except that x within `tol` of an integer is that integer (forgives float noise)."""
    c = math.ceil(x)
    return c - 1 if c - x >= 1 - tol else c


def floor_tol(x: float, tol: float = TOL) -> int:
    """floor(x), except that x within `tol` of an integer is that integer (forgives float noise)."""
    f = math.floor(x)
    return f + 1 if x - f >= 1 - tol else f


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
               "reserved": "Reserved", "on_demand": "On-demand", "spot": "Spot", "api": "API"}
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


# --- batch work ----------------------------------------------------------------------------------


def batch_replica_hours(output_tokens: float, goodput_output_tokens_per_s: float) -> int:
    """Whole replica-hours that produce `output_tokens` at a replica's goodput (the most a batch
    day can need of one config at one hour)."""
    return ceil_tol(output_tokens / (SECONDS_PER_HOUR * goodput_output_tokens_per_s))


def batch_gpu_hours(output_tokens: float, goodput_output_tokens_per_s: float, gpus_per_replica: float) -> float:
    """GPU-hours (continuous) that produce `output_tokens`: replica-hours may be partial."""
    return output_tokens / (SECONDS_PER_HOUR * goodput_output_tokens_per_s) * gpus_per_replica


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
                 gpus: int | None = None, api_share: float = 0.0, layout: str | None = None) -> str:
    """A workload's chosen config as reports state it: the API, a reservation, or offer · precision ·
    parallelism, with the share of its tokens sent to the API."""
    if offer is None:
        return "served by the API"
    if kind == "reserve":
        return f"{offer} · {gpus} GPUs held" if gpus else f"{offer} · reserve"
    label = f"{offer} · {precision} · {layout or parallel_label(tp, mig)}"
    if api_share > 0:
        label += f" + API {percent(api_share)} of its tokens"
    return label


# --- words and money -----------------------------------------------------------------------------


def duration_ms(ms: float) -> str:
    """A latency as people say it: '850 ms', '7.7 s'."""
    if ms < 10:
        return f"{ms:.2g} ms"  # a target written in seconds (1.5) must not read as "2 ms"
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


def plural(n: float, one: str, many: str | None = None) -> str:
    """'1 workload', '3 workloads', '1,024 GPUs'."""
    word = one if n == 1 else (many or one + "s")
    number = f"{n:,}" if isinstance(n, int) else f"{n:,g}"
    return f"{number} {word}"


def money(x: float, currency: str = "USD", decimals: int = 0) -> str:
    """'$1,234', '-$5', '1,234 EUR'; no minus sign on an amount that rounds to zero."""
    s = f"{abs(x):,.{decimals}f}"
    sign = "-" if x < 0 and round(abs(x), decimals) else ""
    return f"{sign}${s}" if currency == "USD" else f"{sign}{s} {currency}"


def percent(x: float) -> str:
    """'25%', '2.5%', '0.1%': one decimal below 10% so a small share does not read as 0%."""
    return f"{x:.0%}" if x == 0 or abs(x) >= 0.1 else f"{x:.1%}"


def days_text(n: int) -> str:
    return plural(n, "day")


def join_words(items: Iterable[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]
