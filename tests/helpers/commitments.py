"""A quarter on H100s with contracts signed before the plan (tests/optimize/test_commitments.py's
conventions): 2026-10-01 + 92 days, 66 weekdays and 26 weekend days, goodput 100 tok/s per GPU."""

from __future__ import annotations

from tests.helpers.small_plans import interactive, offer
from tests.helpers.small_plans import plan as small_plan


OD, R1Y = 6.88, 4.60
H100 = "cloud-a-h100"


def quarter(workloads: list[dict], *, m: int = 8, commitments: list[dict] = (), **policy) -> dict:
    data = small_plan(workloads, [offer(H100, "h100-sxm", m=m, on_demand=OD, reserved_1y=R1Y)], **policy)
    data["accelerators"] = [{"id": "h100-sxm", "memory_gb": 80}]
    data.update(horizon_days=92, start_date="2026-10-01", day_types={"weekday": 66, "weekend": 26},
                commitments=list(commitments))
    return data


def chat(gpus: float, profile: list[float] | None = None, **extra) -> dict:
    return interactive("chat", 100 * gpus, profile, accs=("h100-sxm",), **extra)


def contract(gpus: int, start: str, end: str, **extra) -> dict:
    return {"offer": H100, "tier": "reserved-1y", "gpus": gpus, "start": start, "end": end, **extra}


PEAKY = [1.0] * 16 + [0.75] * 8
