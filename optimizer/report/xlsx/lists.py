"""Alternatives and Dropped: the configs not chosen, and the options that could not work."""

from __future__ import annotations

from optimizer.report import labels as L
from optimizer.report.xlsx.cells import Sheet
from optimizer.results.types import PlanResult


def write_alternatives(sh: Sheet, result: PlanResult) -> None:
    ws = sh.ws
    sh.widths([20, 6, 40, 14, 11, 11, 16, 18, 40])
    sh.text(0, 0, "Alternatives: the next best configs per workload", "title")
    sh.intro(1, L.ALTERNATIVES_INTRO, 8, 3)
    head = 3
    sh.header(head, 0, ["Workload", "Rank", "Config", "Goodput (output tok/s)", "Goodput source",
                        "GPUs at the peak", "Standalone cost (ranking)",
                        "Plan cost with it forced, minus the plan's", "How it was priced"])
    ws.set_row(head, 30)
    r = head
    for a in result.alternatives:
        r += 1
        sh.text(r, 0, a.workload)
        sh.num(r, 1, a.rank, num="int")
        sh.text(r, 2, a.label)
        sh.num(r, 3, a.goodput_output_tokens_per_s, num="int")
        sh.text(r, 4, a.goodput_source)
        sh.num(r, 5, a.gpus_at_peak, num="int")
        sh.num(r, 6, a.standalone_cost, num="money0")
        sh.num(r, 7, a.difference, num="money0")
        sh.text(r, 8, L.BASIS.get(a.basis, a.basis), "note")
    if not result.alternatives:
        r += 1
        sh.text(r, 0, "No alternatives: every workload had a single config.", "note")
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(r, head + 1), 8)
    sh.page(r, 8, header_rows=(head, head))


def write_dropped(sh: Sheet, result: PlanResult) -> None:
    ws = sh.ws
    sh.widths([20, 34, 11, 100])
    sh.text(0, 0, "Dropped: options that could not work, and why", "title")
    sh.intro(1, "Filtered before solving: does not fit, not native, beyond the scale-up domain, no allowed "
                  "tier, or dominated by a config that is never worse.", 3, 2)
    head = 3
    sh.header(head, 0, ["Workload", "Option", "Why", "Detail"])
    r = head
    for x in result.dropped:
        r += 1
        sh.text(r, 0, x.workload)
        sh.text(r, 1, x.option)
        sh.text(r, 2, x.family)
        sh.text(r, 3, x.reason, "wrap")
        sh.fit_row(r, x.reason, 100)
    if not result.dropped:
        r += 1
        sh.text(r, 0, "Nothing was dropped.", "note")
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(r, head + 1), 3)
    sh.page(r, 3, header_rows=(head, head))
