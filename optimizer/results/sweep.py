"""A sweep's points as plain data: one solved plan each (what was varied, status, cost, reserved level),
the append-only DIR/sweep.jsonl that makes a sweep resumable, and the tornado ranges read from them.

No solving here (optimizer.studies.sweep runs the points); reports (report/sweep.py) read these.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from optimizer.atomic import write_text_atomic
from optimizer.errors import PlanError, Problem
from optimizer.results.jsonio import MAX_FILE_BYTES, nesting_depth
from optimizer.results.types import PlanResult
from optimizer.vocab import RENTED_TIERS, RESERVED_TIERS

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
    spend: dict[str, float] | None = None
    """A solved plan's spend on each rented tier at this point's prices (on-demand, spot, reserved-1y, …):
    how its cost moves when a price moves, everything else held (cost_at)."""
    interpolated: bool = False
    """Not solved: proven within the gap from the points solved on either side of it along a price
    (prove_between); its plan is one of theirs, its message says which."""
    solver: str | None = None
    """The solver it was solved with (None: read back from a sweep.jsonl written before points recorded it)."""
    time_limit_s: float | None = None
    """The time limit it was solved under: a point the limit stopped short is solved again under a longer one."""
    cost_committed: float | None = None
    """Contracts signed before the plan, for the days they overlap its horizon (PlanResult.cost_committed): the
    same at every point, since a sweep moves no signed contract's price. None without a plan, or read back
    from a sweep.jsonl written before points recorded it."""
    new_commitments: list[dict[str, Any]] | None = None
    """What the plan at this point would sign (commitment_rows): offer, tier, GPUs, start, end, price and the
    full term's cost. None without a plan or read back from an older sweep.jsonl."""
    new_spend_commitments: list[dict[str, Any]] | None = None
    """The new spend commitments (savings plans) the plan at this point would sign (spend_rows): provider, term,
    discount, $/hour, start, end and the full term's cost. None without a plan or read back from a sweep.jsonl
    written before points recorded them."""

    @property
    def solved(self) -> bool:
        return self.cost_total is not None

    @property
    def cost_new(self) -> float | None:
        """New spend over the horizon: what the plan buys (cost_total)."""
        return self.cost_total

    @property
    def cost_all_in(self) -> float | None:
        """What the horizon costs, everything counted: new spend + committed spend (PlanResult.cost_all_in).
        None without a plan or without the committed part."""
        if self.cost_total is None or self.cost_committed is None:
            return None
        return self.cost_total + self.cost_committed

    @property
    def full_term(self) -> float | None:
        """The new commitments' full terms: what signing them commits to, beyond the horizon too."""
        if self.new_commitments is None:
            return None
        return (sum(float(n["total_committed"]) for n in self.new_commitments)
                + sum(float(n["total_committed"]) for n in self.new_spend_commitments or []))

    @property
    def status_text(self) -> str:
        """The status, with the proven gap when the solve stopped short of optimal."""
        if self.interpolated:
            return f"{self.status} (between solved points)"
        return f"{self.status} (gap {self.gap:.1%})" if self.gap and self.status != "optimal" else self.status

    @property
    def bound(self) -> float | None:
        """The proven lower bound on the cost at this point (the cost less its gap); None without a plan."""
        if self.cost_total is None or self.gap is None:
            return None
        return self.cost_total - self.gap * abs(self.cost_total)


def vary_key(vary: Vary) -> str:
    """A point's identity in sweep.jsonl: its varies, key order aside."""
    return json.dumps(vary, sort_keys=True, allow_nan=False)


def reserved_gpus(result: PlanResult) -> int:
    """Σ GPUs of the purchases on a reserved tier or bought: the level the plan holds whatever the hour."""
    return int(sum(p.gpus for p in result.purchases if p.tier in RESERVED_TIERS or p.tier == "buy"))


COMMITMENT_KEYS = ("offer", "tier", "gpus", "start", "end", "price_per_gpu_hour", "total_committed")
"""What a sweep point says of each new commitment its plan would sign."""


def commitment_rows(result: PlanResult) -> list[dict[str, Any]]:
    """The new commitments to sign at a point: one dict of COMMITMENT_KEYS each, in the result's order."""
    out = []
    for n in result.new_commitments:
        row = {k: getattr(n, k, None) for k in COMMITMENT_KEYS}
        row["gpus"] = int(row["gpus"] or 0)
        row["price_per_gpu_hour"] = round(float(row["price_per_gpu_hour"] or 0.0), 6)
        row["total_committed"] = round(float(row["total_committed"] or 0.0), 2)
        out.append(row)
    return out


SPEND_KEYS = ("provider", "term", "discount", "usd_per_hour", "start", "end", "total_committed")
"""What a sweep point says of each new spend commitment (savings plan) its plan would sign."""


def spend_rows(result: PlanResult) -> list[dict[str, Any]]:
    """The new spend commitments to sign at a point: one dict of SPEND_KEYS each, in the result's order."""
    out = []
    for n in result.new_spend_commitments:
        row = {k: getattr(n, k, None) for k in SPEND_KEYS}
        row["usd_per_hour"] = round(float(row["usd_per_hour"] or 0.0), 6)
        row["total_committed"] = round(float(row["total_committed"] or 0.0), 2)
        out.append(row)
    return out


def tier_spend(result: PlanResult) -> dict[str, float]:
    """What the plan spends on each rented tier (its purchases) and on the API, at the prices it was solved at,
    and — with servers of its own — on buying them (`buy`) and running them (`facility`): together cost_total."""
    out = dict.fromkeys(RENTED_TIERS, 0.0)
    for p in result.purchases:
        if p.tier in out:
            out[p.tier] += p.cost
    out["api"] = result.cost_by_tier.get("api", 0.0)
    if result.own is not None:
        for key in ("buy", "facility"):
            out[key] = result.cost_by_tier.get(key, 0.0)
    return out


# --- points proven between solved ones --------------------------------------------------------------
#
# A price multiplier t enters the program's objective only, linearly: every plan z costs a_z + b_z·t and the
# least cost over the plans, min_z (a_z + b_z·t), is concave in t (its feasible plans do not depend on t).
# So between two points solved at t1 < t2 with proven bounds L1, L2, the least cost at t is at least the
# chord (1−λ)·L1 + λ·L2 (λ = (t−t1)/(t2−t1)), and either solved plan, its cost moved to t's prices, is a plan
# at t. When the cheaper of the two is within the gap of the chord, t needs no solve. This holds for the
# expected cost only: a risk measure (cvar, worst) is not linear in the prices.


def cost_at(p: SweepPoint, vary: Vary) -> float | None:
    """The cost of the plan solved at p with the prices of `vary` (the same point but for price.* values);
    None when p has no plan or no spend by tier (a point solved before sweeps recorded it)."""
    if p.cost_total is None or p.spend is None:
        return None
    cost = p.cost_total
    for key, value in vary.items():
        if not key.startswith("price."):
            if value != p.vary.get(key):
                return None
            continue
        old = p.vary.get(key)
        if value is None or old is None or old <= 0:
            return None
        cost += p.spend.get(key.partition(".")[2], 0.0) * (value / old - 1.0)
    return cost


def prove_between(lo: SweepPoint, hi: SweepPoint, vary: Vary, key: str, gap: float,
                  plan_hash: str) -> SweepPoint | None:
    """The point `vary` proven from the points solved at either side of it along the price `key` (lo below,
    hi above, every other value equal): the cheaper of their plans at its prices, when within `gap` of the
    chord of their bounds; None otherwise."""
    t, t1, t2 = vary[key], lo.vary[key], hi.vary[key]
    if t is None or t1 is None or t2 is None or not t1 < t < t2 or lo.bound is None or hi.bound is None:
        return None
    lam = (t - t1) / (t2 - t1)
    bound = (1.0 - lam) * lo.bound + lam * hi.bound
    best: tuple[float, SweepPoint] | None = None
    for z in (lo, hi):
        c = cost_at(z, vary)
        if c is not None and (best is None or c < best[0] - 1e-9):
            best = (c, z)
    if best is None:
        return None
    cost, z = best
    proven = max(0.0, (cost - bound) / abs(cost)) if cost else (0.0 if bound >= -1e-9 else math.inf)
    if proven > gap + 1e-12:
        return None
    message = (f"not solved: the plan solved at {key}={z.vary[key]:g} costs {cost:,.2f} here, within {proven:.3%} "
               f"of the least cost the points solved at {t1:g} and {t2:g} prove ({key} moves the cost linearly, "
               "so the least cost is concave in it)")
    return SweepPoint(dict(vary), "optimal", cost, z.reserved_gpus, plan_hash, 0.0, message, proven,
                      interpolated=True, cost_committed=z.cost_committed,
                      new_commitments=_repriced(z.new_commitments, z.vary, vary),
                      new_spend_commitments=z.new_spend_commitments)


def _repriced(rows: list[dict[str, Any]] | None, old: Vary, new: Vary) -> list[dict[str, Any]] | None:
    """A plan's new commitments at another point's prices: each one's price and full term moved by the ratio
    of its tier's multipliers (price.<tier>) between the two points."""
    if rows is None:
        return None
    out = []
    for r in rows:
        key = f"price.{r['tier']}"
        a, b = old.get(key), new.get(key)
        f = b / a if key in new and a and b is not None else 1.0
        out.append({**r, "price_per_gpu_hour": round(r["price_per_gpu_hour"] * f, 6),
                    "total_committed": round(r["total_committed"] * f, 2)})
    return out


def _cents(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def point_json(p: SweepPoint) -> dict[str, Any]:
    """The `--json` contract's point: vary, status, cost_all_in (new + committed: what the horizon costs),
    cost_new and cost_committed, cost_total (= cost_new, the name older readers know), reserved_gpus,
    new_commitments and new_spend_commitments (what to sign there: reservations, savings plans; each with its full
    term) and full_term (their sum); and
    `interpolated: true` for a point proven from its neighbours instead of solved."""
    data: dict[str, Any] = {"vary": dict(p.vary), "status": p.status,
                            "cost_all_in": _cents(p.cost_all_in), "cost_new": _cents(p.cost_new),
                            "cost_committed": _cents(p.cost_committed), "cost_total": _cents(p.cost_total),
                            "reserved_gpus": p.reserved_gpus,
                            "new_commitments": None if p.new_commitments is None else [dict(r) for r in p.new_commitments],
                            "new_spend_commitments": None if p.new_spend_commitments is None
                            else [dict(r) for r in p.new_spend_commitments],
                            "full_term": _cents(p.full_term)}
    if p.interpolated:
        data["interpolated"] = True
    return data


def line_json(p: SweepPoint) -> str:
    """One line of sweep.jsonl (with its newline)."""
    data = {"plan_hash": p.plan_hash, **point_json(p), "seconds": round(p.seconds, 3)}
    if p.gap is not None:  # rounded up: a bound read back (SweepPoint.bound) is never above the one proven
        data["gap"] = max(0.0, math.ceil(p.gap * 1e6 - 1e-9) / 1e6)
    if p.message:
        data["message"] = p.message
    if p.spend is not None:
        data["spend"] = {k: round(v, 6) for k, v in sorted(p.spend.items())}
    if p.solver is not None:
        data["solver"] = p.solver
    if p.time_limit_s is not None:
        data["time_limit_s"] = p.time_limit_s
    return json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n"


FINAL = ("optimal", "infeasible", "invalid")
"""Statuses no longer solve changes: proven within the gap, or no plan whatever the time."""


def reusable(p: SweepPoint, *, every_point: bool, solver: str, time_limit_s: float, gap: float,
             spend: bool = True) -> bool:
    """Whether a point read back from sweep.jsonl stands for this run: a point proven (within this run's gap) or
    with no plan at all stands; one the time limit stopped short (feasible, or an error with no plan in time)
    is solved again when this run gives it more time or another solver; with `every_point`, a point proven
    from its neighbours is solved. `spend`: the plan may sign spend commitments (savings_plans), so a point
    written before points carried them is solved again; a plan without any has none to carry."""
    if p.solved and (p.cost_committed is None or p.new_commitments is None
                     or (spend and p.new_spend_commitments is None)):
        return False  # written before points carried all-in and what to sign: solved again to carry them
    if p.interpolated:
        return not every_point and (p.gap is None or p.gap <= gap + 1e-9)
    if p.status in FINAL:
        return p.status != "optimal" or p.gap is None or p.gap <= gap + 1e-9
    return p.solver == solver and p.time_limit_s is not None and p.time_limit_s >= time_limit_s


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


@dataclass(frozen=True)
class SweepFile:
    """What sweep.jsonl holds."""

    points: list[SweepPoint]
    """Every point, in file order."""
    cut_line: int | None = None
    """The line number of a last line cut off mid-write (no newline, not JSON: what a run stopped while
    writing it leaves), left out of `points`; None when there is none. drop_cut_line removes it from the file."""


def read_points(path: Path) -> list[SweepPoint]:
    """Every point in sweep.jsonl, in file order (read_sweep: and whether a cut-off last line was left out)."""
    return read_sweep(path).points


def read_sweep(path: Path) -> SweepFile:
    """Every point in sweep.jsonl, in file order (none when the file does not exist). A last line cut off
    mid-write is left out and its line number returned: the point it held is solved again.

    PlanError with file:line for any other line that is not a sweep point (an edit, a line cut off and then
    appended to)."""
    if not path.exists():
        return SweepFile([])
    shown = str(path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PlanError(Problem(f"the sweep's points are {path.stat().st_size / 1e6:,.0f} MB, over the "
                                f"{MAX_FILE_BYTES / 1e6:,.0f} MB a sweep.jsonl may be",
                                "delete it to solve every point again", file=shown))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(Problem(f"cannot read the sweep's points: {getattr(exc, 'strerror', None) or exc}",
                                "make it readable, or delete it to solve every point again", file=shown)) from None
    kept = _without_cut_line(text)
    cut_line = None if kept is None else text.count("\n") + 1
    out = []
    problems: list[Problem] = []  # every bad line at once
    proven: dict[tuple, tuple[int, SweepPoint]] = {}  # (plan, point) → the first line proving its cost
    for n, line in enumerate((text if kept is None else kept).splitlines(), 1):
        if not line.strip():
            continue
        try:
            p = _point(_parsed(line))
            _status_agrees(p)
        except (ValueError, TypeError, KeyError) as exc:
            problems.append(Problem(f"not a sweep point: {_why(exc)}", _FIX, file=shown, line=n))
            continue
        out.append(p)
        if p.status == "optimal" and p.cost_total is not None:
            key = (p.plan_hash, tuple(sorted(p.vary.items())))
            if key in proven and not _agree(proven[key][1], p):
                first, q = proven[key]
                problems.append(Problem(
                    f"{vary_key(p.vary)} is proven twice at different costs ({q.cost_total:,.2f} on line {first}, "
                    f"{p.cost_total:,.2f} here): two sweeps of one plan wrote to this folder, or a line was edited",
                    "delete the line that is wrong (or the whole file to solve every point again)",
                    file=shown, line=n))
            proven.setdefault(key, (n, p))
    if problems:
        raise PlanError(problems)
    return SweepFile(out, cut_line)


MAX_LINE_DEPTH = 20
"""A sweep point nests 3 levels (the line, vary or spend); a line nested deeper is refused before it is parsed
(Python's parser recurses once a level)."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _v in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {twice!r} is given more than once (each key once)")
    return d


def _parsed(line: str) -> Any:
    """One line as JSON: refused when nested deeper than a point is or holding a key twice."""
    deepest = nesting_depth(line)
    if deepest > MAX_LINE_DEPTH:
        raise ValueError(f"nested {deepest} levels deep (a point is at most {MAX_LINE_DEPTH})")
    return json.loads(line, object_pairs_hook=_no_repeats)


def _status_agrees(p: SweepPoint) -> None:
    """A point with a plan (optimal, feasible) has its cost; one without (infeasible, error, invalid) has none."""
    if p.status in ("optimal", "feasible") and p.cost_total is None:
        raise ValueError(f"'status' is {p.status!r} but 'cost_total' is null: a solved point has its cost")
    if p.status not in ("optimal", "feasible") and p.cost_total is not None:
        raise ValueError(f"'status' is {p.status!r} but 'cost_total' is {p.cost_total:g}: a point with no plan "
                         "has no cost")
    if p.status not in ("optimal", "feasible") and p.reserved_gpus is not None:
        raise ValueError(f"'status' is {p.status!r} but 'reserved_gpus' is {p.reserved_gpus}: a point with no "
                         "plan reserves nothing")


def _without_cut_line(text: str) -> str | None:
    """The text without its last line when that line is cut off mid-write (no newline after it, and not JSON);
    None when it is not."""
    if text.endswith("\n"):
        return None
    head, sep, tail = text.rpartition("\n")
    if not tail.strip():
        return None
    if nesting_depth(tail) > MAX_LINE_DEPTH:
        return None  # whole enough to be refused for its depth, not dropped as cut off
    try:
        json.loads(tail)
    except ValueError:
        return head + sep
    return None


def drop_cut_line(path: Path) -> bool:
    """Rewrite sweep.jsonl (atomically) without a last line cut off mid-write, so points append after whole
    lines; False (nothing written) when its last line is whole."""
    kept = _without_cut_line(path.read_text(encoding="utf-8"))
    if kept is None:
        return False
    write_text_atomic(path, kept)
    return True


def _agree(a: SweepPoint, b: SweepPoint) -> bool:
    """Two proven costs of one point agree within the gaps they were proven to."""
    assert a.cost_total is not None and b.cost_total is not None
    slack = (max(a.gap or 0.0, b.gap or 0.0) + 1e-6) * max(abs(a.cost_total), abs(b.cost_total), 1.0)
    return abs(a.cost_total - b.cost_total) <= slack


def _why(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc)


POINT_STATUSES = ("optimal", "feasible", "infeasible", "error", "invalid")
"""What a sweep writes as a point's status."""


def _number(v: Any, what: str, integer: bool = False, least: float | None = None) -> Any:
    """`v` as a number (None stays None); ValueError unless it is one, whole where `integer`, at least `least`."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{what} is {v!r}, not a number")
    if integer and v != int(v):
        raise ValueError(f"{what} is {v!r}, not a whole number")
    if least is not None and v < least:
        raise ValueError(f"{what} is {v!r}, below {least:g} (a sweep never writes it)")
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
    if status not in POINT_STATUSES:
        raise ValueError(f"'status' is {status!r}, not one of {', '.join(POINT_STATUSES)}")
    spend = d.get("spend")
    if spend is not None and not (isinstance(spend, dict) and all(isinstance(k, str) for k in spend)):
        raise ValueError("'spend' is not an object of TIER: cost")
    interpolated = d.get("interpolated", False)
    if not isinstance(interpolated, bool):
        raise ValueError(f"'interpolated' is {interpolated!r}, not true or false")
    solver, limit = d.get("solver"), d.get("time_limit_s")
    if solver is not None and not isinstance(solver, str):
        raise ValueError(f"'solver' is {solver!r}, not a solver's name")
    limit_s = _number(limit, "time_limit_s")
    if limit_s is not None and limit_s <= 0:
        raise ValueError(f"time_limit_s is {limit!r}, not a time limit (seconds above 0)")
    committed = _number(d.get("cost_committed"), "cost_committed", least=0)
    rows = d.get("new_commitments")
    if rows is not None:
        if not isinstance(rows, list) or not all(isinstance(r, dict) and set(COMMITMENT_KEYS) <= set(r) for r in rows):
            raise ValueError(f"'new_commitments' is not a list of {{{', '.join(COMMITMENT_KEYS)}}}")
        rows = [{**r, "gpus": _number(r["gpus"], "new_commitments gpus", True, least=0),
                 "price_per_gpu_hour": _number(r["price_per_gpu_hour"], "new_commitments price_per_gpu_hour", least=0),
                 "total_committed": _number(r["total_committed"], "new_commitments total_committed", least=0)}
                for r in rows]
    spends = d.get("new_spend_commitments")
    if spends is not None:
        if not isinstance(spends, list) or not all(isinstance(r, dict) and set(SPEND_KEYS) <= set(r) for r in spends):
            raise ValueError(f"'new_spend_commitments' is not a list of {{{', '.join(SPEND_KEYS)}}}")
        spends = [{**r, "usd_per_hour": _number(r["usd_per_hour"], "new_spend_commitments usd_per_hour", least=0),
                   "discount": _number(r["discount"], "new_spend_commitments discount", least=0),
                   "total_committed": _number(r["total_committed"], "new_spend_commitments total_committed",
                                              least=0)}
                  for r in spends]
    return SweepPoint({k: _number(v, f"vary {k!r}") for k, v in vary.items()}, status,
                      _number(d["cost_total"], "cost_total", least=0),
                      _number(d["reserved_gpus"], "reserved_gpus", True, least=0),
                      plan_hash, _number(d.get("seconds", 0.0), "seconds", least=0) or 0.0, str(d.get("message", "")),
                      _number(d.get("gap"), "gap", least=0), read_back=True,
                      spend=None if spend is None else {k: _number(v, f"spend {k!r}", least=0) for k, v in spend.items()},
                      interpolated=interpolated, solver=solver, time_limit_s=limit_s,
                      cost_committed=committed, new_commitments=rows, new_spend_commitments=spends)


# --- tornado ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TornadoBar:
    key: str
    low_value: float | None
    """The key's lowest value among the solved points that vary it alone and the plan's own point: ×1 (the plan)
    when every value swept is above the plan's."""
    high_value: float | None
    """Its highest value, the same way: the plan's own when every value swept is below it."""
    at_low: float
    """The measure (all-in or new cost, or reserved GPUs) at the lowest value."""
    at_high: float
    lo: float
    """The measure's least over the key's points (with the base point)."""
    hi: float

    @property
    def width(self) -> float:
        return self.hi - self.lo


def tornado(points: Iterable[SweepPoint], base: Vary, measure: str) -> list[TornadoBar]:
    """Per swept key, the range of `measure` ("cost_all_in", "cost_total" or "reserved_gpus") over the points
    where only that key is away from the base (and the base point itself): widest first. Its lowest and highest
    values are read over those points and the base point, so a key swept only above the plan's value (×1 to
    ×1.2) runs from the plan's ×1 to ×1.2. Keys whose points all failed have no bar. In a grid sweep those are
    the points on the axes through the base."""
    pts = [p for p in points if p.solved and getattr(p, measure) is not None]
    base_value = next((getattr(p, measure) for p in pts if p.vary == base), None)
    bars = []
    for key in base:
        own = [(p.vary[key], float(getattr(p, measure))) for p in pts
               if p.vary.get(key) != base[key] and p.vary[key] is not None
               and all(p.vary.get(k) == v for k, v in base.items() if k != key)]
        if not own:
            continue
        values = [m for _v, m in own] + ([float(base_value)] if base_value is not None else [])
        if base_value is not None and base[key] is not None:
            own.append((base[key], float(base_value)))
        own.sort(key=lambda kv: kv[0])
        bars.append(TornadoBar(key, own[0][0], own[-1][0], own[0][1], own[-1][1], min(values), max(values)))
    return sorted(bars, key=lambda b: (-b.width, b.key))
