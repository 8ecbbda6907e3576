"""Where the workbook keeps what other sheets' formulas read, filled sheet by sheet."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Refs:
    """Where the workbook keeps what other sheets' formulas read (filled sheet by sheet)."""

    horizon: str = ""
    horizon_days: int = 0
    start_date: str = ""
    """The named cell holding the plan's first day (a date), when it has one."""
    days: dict[str, str] = field(default_factory=dict)
    policy: dict[str, str] = field(default_factory=dict)
    price: dict[tuple[str, str], str] = field(default_factory=dict)
    peak: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Workload → (cell with the peak its business numbers give, value) on Assumptions."""
    api_price: dict[tuple[str, str], str] = field(default_factory=dict)
    hourly: dict[str, str] = field(default_factory=dict)
    """Column ranges on Hourly by column key."""
    purchases: dict[str, str] = field(default_factory=dict)
    """Column ranges on Purchases by column key."""
    purchase_rows: list[dict] = field(default_factory=list)
    purchase_gh: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    """(offer, tier) → its GPU-hours cell on Purchases (a formula of the days on Assumptions) and value."""
    api_cost: dict[str, tuple[str, float]] = field(default_factory=dict)
    """workload → (cell with its API cost, value)."""
    api_total: tuple[str, float] | None = None
    tier_cost: dict[str, float] = field(default_factory=dict)
    signed: dict[str, str] = field(default_factory=dict)
    """Column ranges of the contracts already signed (Commitments)."""
    new: dict[str, str] = field(default_factory=dict)
    """Column ranges of the new reservations over their full term (Commitments)."""
    workload_cells: dict[str, tuple[tuple[str, float], tuple[str, float]]] = field(default_factory=dict)
    """Workload ("" for what no workload used) → ((new spend cell, value), (committed spend cell, value))."""
    sizing: dict[str, str] = field(default_factory=dict)
    sizing_values: list[tuple[float | None, float]] = field(default_factory=list)
    """Workloads' "GPUs needed at its peak" and "GPUs in the fleet at its peak" column ranges."""
    price_value: dict[str, float] = field(default_factory=dict)
    """Price cell (as formulas read it) → its value."""
    contract_gh: dict[tuple[str, str, float], list[tuple[str, float]]] = field(default_factory=dict)
    """(offer, tier, price) of a signed contract → its GPU-hours in the horizon on Commitments (cell, value),
    one per contract at those terms."""
    contract_price: dict[tuple[str, str, float], str] = field(default_factory=dict)
    """(offer, tier, price) of a signed contract → its price cell on Commitments."""
    cash: dict[str, str] = field(default_factory=dict)
    """Column ranges of the Cash flow sheet's horizon table."""
    cash_values: list[float] = field(default_factory=list)
    cash_total: tuple[str, float] | None = None
    all_in_value: float = 0.0
    committed_rate: dict[str, float] = field(default_factory=dict)
    """Committed spend per committed GPU-hour in the horizon, by offer (Commitments' spend ÷ GPU-hours)."""
    committed: tuple[str, float] | None = None
    """Cell with the committed (sunk) spend in the horizon, and its value."""
    new_total: tuple[str, float] | None = None
    """Cell with what the new reservations commit over their full terms, and its value."""
    own: dict[str, str] = field(default_factory=dict)
    """Own hardware's facility inputs as formulas read them: pue, colo, tariff (24 cells), tariff_day."""
    own_values: dict[str, Any] = field(default_factory=dict)
    """Their values (tariff: a list of 24)."""
    own_buy: tuple[str, float] | None = None
    """Cell with the horizon's ownership share of servers bought (tier buy), and its value."""
    own_facility: tuple[str, float] | None = None
    """Cell with energy, colocation and owned servers' support (tier facility), and its value."""
    own_offer: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per offer of your own, on the Own hardware sheet: ownership and facility (cell, value), days in service
    (cell) and GPUs (units × GPUs per unit, a formula)."""
    buy_rows: list[tuple[int, str, float, float]] = field(default_factory=list)
    """Purchases' buy rows (row, offer, GPU-hours, price): linked to the Own hardware sheet once it is written."""
    spend_committed: tuple[str, float] | None = None
    """Signed spend commitments' spend in the horizon (Spend commitments sheet): part of committed_spend."""
    spend_od_credit: tuple[str, float] | None = None
    """What the on-demand tier is below Purchases' on-demand at list (Spend commitments): the list spend covered,
    less the new commitments' discounted spend that paid for it."""
    spend_net: tuple[str, float] | None = None
    """The Summary's tier savings_plan: new commitments paid − on-demand covered at list (Spend commitments)."""
    spend_rate: dict[str, str] = field(default_factory=dict)
    """A spend commitment's cash-flow offer (results.spend.cash_label) → the cell with its $/hour (Spend
    commitments)."""
    spend_cash: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)
    """(cash-flow offer, tier, kind) of a spend commitment's rows → the cell they split and its value."""
    spend_cash_whole: dict[tuple[str, str, str], float] = field(default_factory=dict)
    """The same key → the rows' amounts added up (each row is its share of the cell)."""
    tiers_name: str = "total_cost"
    """The name of the cell that adds up the tiers: total_cost, or expected_cost when the plan's total is a cvar
    or worst-case measure over scenarios (then the tiers are expected values)."""
    price_factor: dict[tuple[str, str], float] = field(default_factory=dict)
    """(offer, tier) → on-demand or spot price paid ÷ the price on Assumptions (scenarios that move prices)."""
    book_cells: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Own hardware's totals the book view reads (depreciation_owned, cost_of_capital): (cell, value)."""
    scenario: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Scenarios sheet cells (first stage, expected, risk) and their values."""
