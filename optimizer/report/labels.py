"""Words and groupings shared by the workbook and the HTML report (no I/O, no third-party imports)."""

from __future__ import annotations

from optimizer.results.types import PlanResult, WorkloadResult

TIER_KEYS = ("reserved", "on_demand", "spot", "api")
TIER_LABELS = {"reserved": "Reserved", "on_demand": "On-demand", "spot": "Spot", "api": "API"}
PURCHASE_TIERS = ("reserved-1y", "reserved-3y", "on-demand", "spot")
RESERVED_TIERS = ("reserved-1y", "reserved-3y")
TIER_GROUP = {"reserved-1y": "reserved", "reserved-3y": "reserved", "on-demand": "on_demand", "spot": "spot"}
TIER_COLORS = {"reserved": "#2f5d8a", "on_demand": "#e39b2d", "spot": "#7fae5a", "api": "#9b6fb0"}
DEMAND_COLOR = "#c0392b"
COMMITTED_COLOR = "#5b6770"
"""Contracts signed before the plan (plan `commitments`)."""
POLICY_LABELS = {
    "occupancy": "Target occupancy", "memory_reserve": "Memory reserve", "spares": "Spare replicas",
    "rollout_fraction": "Rollout headroom", "tiers": "Purchase tiers allowed", "spot_pools": "Pools that may use spot",
    "mig_pools": "Pools that may use MIG slices", "providers": "Providers", "share_reserved_across_pools":
    "Reserved capacity shared across pools", "solver": "Solver", "time_limit_s": "Solver time limit (s)",
    "mip_gap": "Target gap", "change_threshold": "Change threshold (with a baseline)"}


def config_label(w: WorkloadResult) -> str:
    """How a chosen config reads: TP degree, MIG slice, a reservation, or the API."""
    if w.offer is None:
        return "API only"
    if w.kind == "reserve":
        return f"{w.gpus_at_peak} GPUs reserved"
    return f"MIG {w.mig}" if w.mig else f"tp{w.tp}"


def choice_label(w: WorkloadResult) -> str:
    if w.offer is None:
        return "served by the API"
    if w.kind == "reserve":
        return f"{w.offer} · {w.gpus_at_peak} GPUs"
    return f"{w.offer} · {w.precision} · {config_label(w)}"


def sizing_note(w: WorkloadResult) -> str:
    """Why a workload's replicas are not the peak-hour arithmetic (empty when they are)."""
    if w.offer is None:
        return "served entirely by the API: no replicas"
    if w.kind == "batch":
        return "batch: scheduled inside its window, not sized at a peak"
    if w.kind == "reserve":
        return "fixed reservation: GPUs held all day"
    return ""


def used_tiers(result: PlanResult) -> list[str]:
    """Purchase tiers priced by any offer in the result, in canonical order."""
    seen = {t for o in result.offers.values() for t in o.get("prices", {})}
    seen |= {p.tier for p in result.purchases}
    return [t for t in PURCHASE_TIERS if t in seen]


def money_text(x: float, currency: str, decimals: int = 0) -> str:
    s = f"{abs(x):,.{decimals}f}"
    sign = "-" if x < 0 and round(abs(x), decimals) else ""
    return f"{sign}${s}" if currency == "USD" else f"{sign}{s} {currency}"


def days_text(n: int) -> str:
    return f"{n:,} day" if n == 1 else f"{n:,} days"
