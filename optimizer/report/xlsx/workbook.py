"""PlanResult → a live workbook for finance: inputs on Assumptions, costs as formulas stored with values.

Every formula is written with the value planopt computed for it (XlsxWriter `value=`), so readers
without a calculation engine see numbers and Excel still recalculates when an input changes. The
Python beside each formula computes that value the way the formula does, in the same order.
"""

from __future__ import annotations

from pathlib import Path

import xlsxwriter

from optimizer.atomic import atomic_write
from optimizer.report.provenance import Provenance, provenance
from optimizer.report.xlsx.assumptions import write_assumptions
from optimizer.report.xlsx.cashflow import write_cash_flow
from optimizer.report.xlsx.cells import Book
from optimizer.report.xlsx.commitments import write_commitments
from optimizer.report.xlsx.hourly import write_hourly
from optimizer.report.xlsx.lists import write_alternatives, write_dropped
from optimizer.report.xlsx.own import write_own
from optimizer.report.xlsx.purchases import link_own, write_purchases
from optimizer.report.xlsx.refs import Refs
from optimizer.report.xlsx.scenarios import write_scenarios
from optimizer.report.xlsx.showback import write_showback
from optimizer.report.xlsx.spend import SHEET as SPEND_SHEET
from optimizer.report.xlsx.spend import has_spend, write_spend
from optimizer.report.xlsx.summary import write_summary
from optimizer.report.xlsx.supply import write_supply
from optimizer.report.xlsx.workloads import write_workloads
from optimizer.results.jsonio import as_written
from optimizer.results.types import PlanResult

SHEETS = ("Summary", "Assumptions", "Workloads", "Purchases", "Commitments", "Cash flow", "Showback", "Supply",
          "Hourly", "Alternatives", "Dropped")
OWN_SHEET = "Own hardware"
"""After Purchases, only when the plan owns or may buy servers."""


SCENARIO_SHEET = "Scenarios"
"""After Summary, only when the plan has scenarios."""


def sheet_names(result: PlanResult) -> tuple[str, ...]:
    out = SHEETS
    if result.own is not None:
        i = out.index("Purchases") + 1
        out = (*out[:i], OWN_SHEET, *out[i:])
    if result.risk is not None and result.scenarios:
        out = (out[0], SCENARIO_SHEET, *out[1:])
    if has_spend(result):  # after Commitments
        i = out.index("Commitments") + 1
        out = (*out[:i], SPEND_SHEET, *out[i:])
    return out


def write_workbook(result: PlanResult, path: Path) -> None:
    """Write OUTDIR/<plan>.xlsx atomically: a failure leaves no partial file."""
    with atomic_write(Path(path)) as tmp:
        build_workbook(result, tmp)


def build_workbook(result: PlanResult, target: Path, made: Provenance | None = None) -> None:
    # The numbers the JSON keeps (rounded as it rounds them), so `planopt report` on the saved
    # JSON writes the same workbook as `planopt solve` did (with SOURCE_DATE_EPOCH set: the same bytes).
    result = as_written(result)
    made = made or provenance()
    wb = xlsxwriter.Workbook(str(target), {
        "strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False,
        "constant_memory": False})
    try:
        wb.set_properties({"title": f"planopt: {result.plan}"[:250], "subject": "Inference capacity plan",
                           "author": f"planopt {made.version}",
                           "created": made.generated.replace(tzinfo=None),  # UTC; xlsxwriter writes it with a Z
                           "comments": "Written by planopt from a solved plan; inputs on Assumptions."})
        wb.set_calc_mode("auto")
        book = Book(wb, result.currency)
        sheets = {n: book.sheet(n) for n in sheet_names(result)}
        refs = Refs()
        if result.risk is not None and result.scenarios and result.risk.measure != "expected":
            refs.tiers_name = "expected_cost"  # the total is the risk measure; the tiers add up to the expected cost
        write_assumptions(sheets["Assumptions"], result, refs, made)
        write_hourly(sheets["Hourly"], result, refs)
        write_purchases(sheets["Purchases"], result, refs)
        if result.own is not None:  # after Purchases: its totals replace the buy and facility tiers
            write_own(sheets[OWN_SHEET], result, refs)
            link_own(sheets["Purchases"], result, refs)
        if SPEND_SHEET in sheets:  # before Commitments: its signed spend joins committed_spend there
            write_spend(sheets[SPEND_SHEET], result, refs)
        write_commitments(sheets["Commitments"], result, refs)
        refs.all_in_value = sum(refs.tier_cost.values()) + (refs.api_total[1] if refs.api_total else 0.0) \
            + (refs.committed[1] if refs.committed else 0.0)
        write_cash_flow(sheets["Cash flow"], result, refs)
        write_workloads(sheets["Workloads"], result, refs)
        if SCENARIO_SHEET in sheets:  # before Showback: its risk line reads the risk measure
            write_scenarios(sheets[SCENARIO_SHEET], result, refs)
        write_showback(sheets["Showback"], result, refs)
        write_supply(sheets["Supply"], result, refs)
        write_summary(sheets["Summary"], result, refs)
        write_alternatives(sheets["Alternatives"], result)
        write_dropped(sheets["Dropped"], result)
        sheets["Summary"].ws.activate()
    finally:
        wb.close()


# --- Assumptions: every input finance may change ---------------------------------------------


# --- Purchases: what is bought, per offer and tier, and the API ---------------------------------


