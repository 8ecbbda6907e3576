"""Buy, rent or commit: plans/owned-cluster.yaml solved, its decision and break-even table as Markdown.

    python benchmarks/owned_cluster.py                 # benchmarks/RESULTS.md, "Owned hardware"
    python benchmarks/owned_cluster.py --plan other.yaml

Prints the buy decision and the facility's limits, the spend split into ownership, energy and space,
and rented tiers against the cash outlay, and for every server the plan may buy the utilization at
which owning beats renting the same accelerator at the plan's prices (reserved: owning wins below the
utilization where its serving energy eats the difference; on demand: above the one where it pays for
its fixed cost). The plan is solved once more per facility limit to price one more MW and rack.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from optimizer import formatting
from optimizer import vocab  # noqa: E402
from optimizer.pipeline import solve_plan  # noqa: E402
from optimizer.report.console import break_even_text  # noqa: E402
from optimizer.report.labels import decision_lines  # noqa: E402
from optimizer.results.own import book_view  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", default=str(ROOT / "plans" / "owned-cluster.yaml"))
    args = ap.parse_args(argv)
    started = time.perf_counter()
    r = solve_plan(args.plan)
    seconds = time.perf_counter() - started
    own = r.own
    if own is None:
        print(f"{args.plan} owns no servers and may buy none")
        return 1

    def money(v: float, nd: int = 0) -> str:
        return formatting.money(v, r.currency) if nd == 0 else f"${v:,.{nd}f}"

    print(f"{r.plan}: {r.horizon_days} days from {r.start_date}, solved (with the facility re-solves) in "
          f"{seconds:.1f} s, gap {r.solver.gap or 0:.2%}\n")
    print("| | |\n|---|---|")
    for head, text in decision_lines(r, money):
        print(f"| {head} | {text} |")
    print()
    print("| spend | horizon |\n|---|---:|")
    for k, v in r.cost_by_tier.items():
        if v:
            print(f"| {vocab.COST_LABELS[k]} | {money(v)} |")
    print(f"| **all-in** | **{money(r.cost_all_in)}** |")
    print(f"| cash at delivery for servers bought (capex) | {money(own.capex)} |")
    book = book_view(r)
    if book is not None:
        print(f"| book view (P&L): depreciation owned {money(book.depreciation_owned)} + bought "
              f"{money(book.depreciation_bought)} + opex {money(book.opex)}; cost of capital "
              f"{money(book.cost_of_capital)} apart | {money(book.total)} |")
    print()
    print("| buy offer | owning per GPU-hour (fixed + serving energy) | against | price per GPU-hour "
          "| owning wins at utilization |\n|---|---:|---|---:|---|")
    for b in own.break_even:
        print(f"| {b.offer} | ${b.fixed_per_gpu_hour:.2f} + ${b.serving_energy_per_gpu_hour:.2f} | {b.against} "
              f"{b.tier} | ${b.price_per_gpu_hour:.2f} | {break_even_text(b)} |")
    f = own.facility
    print()
    print(f"facility: {f.power_kw_used:,.1f} of {f.power_kw or float('inf'):,.0f} kW, {f.racks_used} of "
          f"{f.racks if f.racks is not None else '∞'} racks; binding: {', '.join(f.binding) or 'none'}; "
          + ", ".join(f"{k}: {money(v)}" for k, v in f.marginal.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
