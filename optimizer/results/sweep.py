"""A sweep's points as plain data: one solved plan each (what was varied, status, cost, reserved level),
the append-only DIR/sweep.jsonl that makes a sweep resumable, and the tornado ranges read from them.

No solving here (optimizer.sweep runs the points); reports (report/sweep.py) read these.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from optimizer.errors import PlanError, Problem
from optimizer.results.types import PlanResult
from optimizer.vocab import RESERVED_TIERS

JSONL = "sweep.jsonl"
"""The file of solved points in the output folder, one JSON object a line."""

Vary = dict[str, "float | None"]
"""KEY → value for one point, every swept key present (the base value for keys not varied at this
point; None: as the plan states it, where the plan has no single value, e.g. growth)."""


@dataclass(frozen=True)
class SweepPoint:
    vary: Vary
    status: str
    """The solve's status (optimal, feasible, …), or infeasible / error / invalid when no plan came back."""
    cost_total: float | None
    """The plan's new spend over its horizon (PlanResult.cost_total); None without a plan."""
    reserved_gpus: int | None
    """GPUs bought on a reserved tier or as servers (the level held all horizon); None without a plan."""
    plan_hash: str = ""
    """Which plan (and catalogs) the point was solved from: sweep.jsonl lines of another are not read back."""
    seconds: float = 0.0
    message: str = ""
    """Why no plan came back (the first reason), empty otherwise."""
    gap: float | None = None
    """The solve's proven gap (above the plan's mip_gap when the time limit stopped it: a cheaper plan may exist)."""
    read_back: bool = field(default=False, compare=False)
    """True when this run read the point back from sweep.jsonl instead of solving it."""

    @property
    def solved(self) -> bool:
        return self.cost_total is not None

    @property
    def status_text(self) -> str:
        """The status, with the proven gap when the solve stopped short of optimal."""
        return f"{self.status} (gap {self.gap:.1%})" if self.gap and self.status != "optimal" else self.status


def vary_key(vary: Vary) -> str:
    """A point's identity in sweep.jsonl: its varies, key order aside."""
    return json.dumps(vary, sort_keys=True, allow_nan=False)


def reserved_gpus(result: PlanResult) -> int:
    """Σ GPUs of the purchases on a reserved tier or bought: the level the plan holds whatever the hour."""
    return int(sum(p.gpus for p in result.purchases if p.tier in RESERVED_TIERS or p.tier == "buy"))


def point_json(p: SweepPoint) -> dict[str, Any]:
    """The `--json` contract's point: vary, status, cost_total, reserved_gpus."""
    return {"vary": dict(p.vary), "status": p.status,
            "cost_total": None if p.cost_total is None else round(p.cost_total, 2),
            "reserved_gpus": p.reserved_gpus}


def line_json(p: SweepPoint) -> str:
    """One line of sweep.jsonl (with its newline)."""
    data = {"plan_hash": p.plan_hash, **point_json(p), "seconds": round(p.seconds, 3)}
    if p.gap is not None:
        data["gap"] = round(p.gap, 6)
    if p.message:
        data["message"] = p.message
    return json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n"


def append_point(path: Path, p: SweepPoint) -> None:
    """Append one point to sweep.jsonl and fsync it: a point that finished stays finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        whole = end == 0 or os.pread(fd, 1, end - 1) == b"\n"  # a hand-edited last line may lack its newline
        os.write(fd, ("" if whole else "\n").encode() + line_json(p).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


_FIX = "delete that line (or the whole file) and run the sweep again: the points it held are solved again"


def read_points(path: Path) -> list[SweepPoint]:
    """Every point in sweep.jsonl, in file order (none when the file does not exist).

    PlanError with file:line for a line that is not a sweep point (a run cut off mid-line, an edit)."""
    if not path.exists():
        return []
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(Problem(f"cannot read the sweep's points: {getattr(exc, 'strerror', None) or exc}",
                                "make it readable, or delete it to solve every point again", file=shown)) from None
    out = []
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(_point(json.loads(line)))
        except (ValueError, TypeError, KeyError) as exc:
            cut = n == len(lines) and not text.endswith("\n")
            what = "the last line is cut off (a run stopped while writing it)" if cut else \
                f"not a sweep point: {_why(exc)}"
            raise PlanError(Problem(what, _FIX, file=shown, line=n)) from None
    return out


def _why(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc)


def _number(v: Any, what: str, integer: bool = False) -> Any:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{what} is {v!r}, not a number")
    if integer and v != int(v):
        raise ValueError(f"{what} is {v!r}, not a whole number")
    return int(v) if integer else float(v)


def _point(d: Any) -> SweepPoint:
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    vary = d["vary"]
    if not isinstance(vary, dict) or not all(isinstance(k, str) for k in vary):
        raise ValueError("'vary' is not an object of KEY: value")
    status, plan_hash = d["status"], d["plan_hash"]
    if not isinstance(status, str) or not isinstance(plan_hash, str):
        raise ValueError("'status' and 'plan_hash' must be strings")
    return SweepPoint({k: _number(v, f"vary {k!r}") for k, v in vary.items()}, status,
                      _number(d["cost_total"], "cost_total"), _number(d["reserved_gpus"], "reserved_gpus", True),
                      plan_hash, _number(d.get("seconds", 0.0), "seconds") or 0.0, str(d.get("message", "")),
                      _number(d.get("gap"), "gap"), read_back=True)


# --- tornado ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TornadoBar:
    key: str
    low_value: float | None
    """The key's lowest value among the solved points that vary it alone."""
    high_value: float | None
    at_low: float
    """The measure (total cost or reserved GPUs) at the lowest value."""
    at_high: float
    lo: float
    """The measure's least over the key's points (with the base point)."""
    hi: float

    @property
    def width(self) -> float:
        return self.hi - self.lo


def tornado(points: Iterable[SweepPoint], base: Vary, measure: str) -> list[TornadoBar]:
    """Per swept key, the range of `measure` ("cost_total" or "reserved_gpus") over the points where
    only that key is away from the base (and the base point itself): widest first. Keys whose points
    all failed have no bar. In a grid sweep those are the points on the axes through the base."""
    pts = [p for p in points if p.solved]
    base_value = next((getattr(p, measure) for p in pts if p.vary == base), None)
    bars = []
    for key in base:
        own = sorted(((p.vary[key], float(getattr(p, measure))) for p in pts
                      if p.vary.get(key) != base[key] and p.vary[key] is not None
                      and all(p.vary.get(k) == v for k, v in base.items() if k != key)),
                     key=lambda kv: kv[0])
        if not own:
            continue
        values = [m for _v, m in own] + ([float(base_value)] if base_value is not None else [])
        bars.append(TornadoBar(key, own[0][0], own[-1][0], own[0][1], own[-1][1], min(values), max(values)))
    return sorted(bars, key=lambda b: (-b.width, b.key))
