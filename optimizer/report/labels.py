"""Words and groupings shared by the workbook and the HTML report (no I/O, no third-party imports)."""

from __future__ import annotations

from optimizer import vocab
from optimizer.results.types import PlanResult, WorkloadResult

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
    """How a chosen config reads in a Config column: TP degree, MIG slice, a reservation, or the API."""
    if w.offer is None:
        return "API only"
    if w.kind == "reserve":
        return f"{vocab.plural(w.gpus_at_peak, 'GPU')} reserved"
    return w.layout or vocab.parallel_label(w.tp, w.mig)


def choice_label(w: WorkloadResult) -> str:
    return vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout)


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
    return [t for t in vocab.TIERS if t in seen]
