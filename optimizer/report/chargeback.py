"""The chargeback: the showback's spend by cost centre × month × tier — as CSV for finance (`planopt report
--chargeback`), and as the table the HTML report and the workbook's Showback sheet show."""

from __future__ import annotations

import csv
import io
from typing import Any

from optimizer.results.types import PlanResult

COLUMNS = ("cost_center", "month", "tier", "new", "committed", "amount", "idle_share")
"""amount = new + committed; idle_share: the part of amount no workload used (policy.idle)."""


def centre_rows(result: PlanResult) -> list[dict[str, Any]]:
    """One row per cost centre, month and tier of result.showback, unrounded (a row without a cost centre:
    empty; those last); Σ amount = what the showback adds up to (the all-in, or policy.showback: book, the book)."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for r in result.showback:
        v = out.setdefault((r.cost_center or "", r.month, r.tier), [0.0, 0.0, 0.0])
        v[0] += r.cost
        v[1] += r.committed_cost
        v[2] += r.idle_share
    months = {m: i for i, m in enumerate(dict.fromkeys(r.month for r in result.showback))}
    keys = sorted(out, key=lambda k: (k[0] == "", k[0], months[k[1]], k[2]))
    return [{"cost_center": k[0], "month": k[1], "tier": k[2], "new": out[k][0], "committed": out[k][1],
             "amount": out[k][0] + out[k][1], "idle_share": out[k][2]} for k in keys]


def chargeback_rows(result: PlanResult) -> list[dict[str, object]]:
    """centre_rows to the cent, as the CSV writes them."""
    return [{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()} for r in centre_rows(result)]


def centre_months(result: PlanResult) -> dict[str, Any]:
    """The cost centre × month table: months, and per cost centre its amount each month, its total, of which
    committed and of which idle, and its tiers (each with its amount each month and total); totals per month."""
    rows = centre_rows(result)
    months = list(dict.fromkeys(r.month for r in result.showback))
    centres: dict[str, dict[str, Any]] = {}
    for r in rows:
        c = centres.setdefault(r["cost_center"], {"cost_center": r["cost_center"], "months": dict.fromkeys(months, 0.0),
                                                  "total": 0.0, "committed": 0.0, "idle_share": 0.0, "tiers": {}})
        c["months"][r["month"]] += r["amount"]
        c["total"] += r["amount"]
        c["committed"] += r["committed"]
        c["idle_share"] += r["idle_share"]
        t = c["tiers"].setdefault(r["tier"], {"tier": r["tier"], "months": dict.fromkeys(months, 0.0), "total": 0.0})
        t["months"][r["month"]] += r["amount"]
        t["total"] += r["amount"]
    totals = {m: sum(c["months"][m] for c in centres.values()) for m in months}
    return {"months": months, "centres": list(centres.values()), "totals": totals,
            "total": sum(c["total"] for c in centres.values())}


def chargeback_csv(result: PlanResult) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(chargeback_rows(result))
    return buf.getvalue()
