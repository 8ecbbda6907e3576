"""The chargeback export: the showback's all-in spend by cost centre × month × tier, as CSV for finance."""

from __future__ import annotations

import csv
import io

from optimizer.results.types import PlanResult

COLUMNS = ("cost_center", "month", "tier", "new", "committed", "amount", "idle_share")
"""amount = new + committed; idle_share: the part of amount no workload used (policy.idle)."""


def chargeback_rows(result: PlanResult) -> list[dict[str, object]]:
    """One row per cost centre, month and tier of result.showback (a row without a cost centre: empty);
    Σ amount = the all-in spend."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for r in result.showback:
        v = out.setdefault((r.cost_center or "", r.month, r.tier), [0.0, 0.0, 0.0])
        v[0] += r.cost
        v[1] += r.committed_cost
        v[2] += r.idle_share
    months = {m: i for i, m in enumerate(dict.fromkeys(r.month for r in result.showback))}
    keys = sorted(out, key=lambda k: (k[0] == "", k[0], months[k[1]], k[2]))
    return [{"cost_center": k[0], "month": k[1], "tier": k[2], "new": round(out[k][0], 2),
             "committed": round(out[k][1], 2), "amount": round(out[k][0] + out[k][1], 2),
             "idle_share": round(out[k][2], 2)} for k in keys]


def chargeback_csv(result: PlanResult) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(chargeback_rows(result))
    return buf.getvalue()
