"""Stable re-plans: `planopt solve PLAN --baseline LAST.json` keeps last quarter's choices unless moving saves.

The integer program charges τ · C_w for leaving workload w's last choice (model.define_baseline;
τ = policy.change_threshold, C_w = w's cost in the last result). The reported costs never include
that charge. Every workload whose choice differs is listed with its saving and the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.errors import PlanError, Problem

if TYPE_CHECKING:
    from optimizer.pipeline import SolveOptions
    from optimizer.candidates.types import CandidateSet
    from optimizer.inputs.loading import LoadedPlan
    from optimizer.results.extract import PlanResult


@dataclass(frozen=True)
class BaselineChoice:
    """One workload's choice in the last result."""

    workload: str
    key: str
    label: str
    cost: float
    offer: str | None
    accelerator: str | None
    precision: str | None
    tp: int
    mig: str | None


@dataclass(frozen=True)
class Baseline:
    file: str
    plan: str
    currency: str
    horizon_days: int
    choices: dict[str, BaselineChoice]


@dataclass(frozen=True)
class Change:
    """A workload whose choice differs from the baseline's."""

    workload: str
    from_key: str
    to_key: str
    from_label: str
    to_label: str
    cost_before: float
    """The workload's cost in the baseline result."""
    cost_after: float
    saving: float
    """cost_before − cost_after (the horizons are assumed equal; see BaselineInfo.notes)."""
    reason: str


@dataclass(frozen=True)
class BaselineInfo:
    file: str
    change_threshold: float
    kept: list[str]
    """Workloads that kept their last choice."""
    changes: list[Change]
    new: list[str] = field(default_factory=list)
    """Workloads the baseline does not have."""
    notes: list[str] = field(default_factory=list)


def choice_label(offer: str | None, precision: str | None, tp: int, mig: str | None, kind: str) -> str:
    if offer is None:
        return "API"
    if kind == "reserve":
        return f"{offer} · reserve"
    return f"{offer} · {precision} · " + (f"MIG {mig}" if mig else f"tp{tp}")


def load_baseline(path: Path | str) -> Baseline:
    """The workloads' choices and costs from a result JSON written by `planopt solve`."""
    path = Path(path)
    fix = "give the JSON `planopt solve PLAN -o DIR` wrote (DIR/<plan>.json)"
    if not path.is_file():
        raise PlanError(Problem("baseline file not found", fix, file=str(path)))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise PlanError(Problem("the baseline is not UTF-8 text", fix, file=str(path))) from None
    except json.JSONDecodeError as exc:
        raise PlanError(Problem(f"not JSON: {exc.msg}", fix, file=str(path), line=exc.lineno)) from None
    try:
        choices = {}
        for w in data["workloads"]:
            kind = w.get("kind", "interactive")
            label = choice_label(w.get("offer"), w.get("precision"), w.get("tp", 0), w.get("mig"), kind)
            choices[w["name"]] = BaselineChoice(w["name"], str(w.get("key") or ""), label, float(w.get("cost", 0.0)),
                                                w.get("offer"), w.get("accelerator"), w.get("precision"),
                                                int(w.get("tp") or 0), w.get("mig"))
        return Baseline(str(path), str(data.get("plan", "")), str(data.get("currency", "")),
                        int(data.get("horizon_days") or 0), choices)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlanError(Problem(f"not a planopt result ({type(exc).__name__}: {exc})", fix, file=str(path))) from None


def penalties(baseline: Baseline, cands: "CandidateSet") -> dict[str, tuple[str, float]]:
    """Workload → (last key, its last cost) for every workload whose last config is still a candidate."""
    out = {}
    for name, cs in cands.by_workload.items():
        b = baseline.choices.get(name)
        if b is not None and b.key and any(c.key == b.key for c in cs):
            out[name] = (b.key, b.cost)
    return out


def solve_with_baseline(loaded: "LoadedPlan", cands: "CandidateSet", options: "SolveOptions",
                        baseline: Baseline) -> "PlanResult":
    """Solve with the switching costs; keep the baseline's choices outright unless that is dearer.

    A solve stopped within mip_gap may return a plan up to that gap above the best: it could move a
    workload for less than its threshold. So when the solve is not exact, the plan with every last
    choice kept (a fast solve: the choices are fixed) is solved too, and the moves are taken only
    if, even charged their switching costs, they beat it.
    """
    from optimizer.pipeline import solve_candidates
    from optimizer.errors import InfeasiblePlan, SolverError
    from optimizer.results.extract import extract

    pen = penalties(baseline, cands)
    prog, info = solve_candidates(loaded, cands, options, baseline=pen)
    result = extract(prog, info, loaded.catalog.offers, loaded.file)
    gap = loaded.plan.policy.mip_gap if options.mip_gap is None else options.mip_gap
    moved = [w for w, (key, _c) in pen.items() if result.workload(w).key != key]
    notes = []
    if moved and (gap > 0 or info.status != "optimal"):
        try:
            kprog, kinfo = solve_candidates(loaded, cands, options, fix={w: k for w, (k, _c) in pen.items()})
        except (InfeasiblePlan, SolverError):
            kprog = None
        if kprog is not None:
            kept = extract(kprog, kinfo, loaded.catalog.offers, loaded.file)
            charged = result.cost_total + sum(prog.baseline_penalty.get(w, ("", 0.0))[1] for w in moved)
            if charged >= kept.cost_total - 1e-6:
                notes.append(f"the solve (within its {gap:.2%} gap) moved {', '.join(moved)} for less than the "
                             "threshold; every last choice is kept instead (the status is that plan's)")
                result = kept
    info = describe(baseline, result, cands, loaded.plan.policy.change_threshold)
    return replace(result, baseline=replace(info, notes=notes + info.notes))


def describe(baseline: Baseline, result: "PlanResult", cands: "CandidateSet", threshold: float) -> BaselineInfo:
    """Every workload's choice against the baseline: kept, changed (with saving and why) or new."""
    kept, changes, new = [], [], []
    cur = result.currency
    for w in result.workloads:
        b = baseline.choices.get(w.name)
        if b is None:
            new.append(w.name)
            continue
        if w.key == b.key:
            kept.append(w.name)
            continue
        to_label = choice_label(w.offer, w.precision, w.tp, w.mig, w.kind)
        saving = b.cost - w.cost
        gone = not any(c.key == b.key for c in cands.by_workload.get(w.name, []))
        if gone:
            reason = "the last choice is no longer possible: " + _why_gone(b, cands)
        elif saving <= 0:
            reason = (f"costs {_money(-saving, cur)} more on its own, but moving it lets the plan as a whole "
                      f"save more than the workloads' thresholds")
        elif b.cost > 0:
            reason = (f"saves {_money(saving, cur)} ({saving / b.cost:.1%} of its cost; "
                      f"the threshold is {threshold:.1%})")
        else:
            reason = f"saves {_money(saving, cur)}; it cost nothing in the baseline, so it was free to move"
        changes.append(Change(w.name, b.key, w.key, b.label, to_label, b.cost, w.cost, saving, reason))
    notes = []
    if baseline.horizon_days and baseline.horizon_days != result.horizon_days:
        notes.append(f"the baseline covers {baseline.horizon_days} days, this plan {result.horizon_days}: "
                     "savings compare the two horizons' costs as they are")
    if baseline.currency and baseline.currency != result.currency:
        notes.append(f"the baseline is in {baseline.currency}, this plan in {result.currency}")
    return BaselineInfo(baseline.file, threshold, kept, changes, new, notes)


def _why_gone(b: BaselineChoice, cands: "CandidateSet") -> str:
    if b.offer is None:
        return "the API is no longer allowed for it"
    drops = [d for d in cands.dropped if d.workload == b.workload]
    for d in drops:
        if d.option == f"offer {b.offer}":
            return f"offer {b.offer} was dropped ({d.family}: {d.reason})"
    if not any(c.offer == b.offer for c in cands.by_workload.get(b.workload, [])):
        return f"offer {b.offer} is not available to it any more (not in the catalogs, or filtered out)"
    conf = f"MIG {b.mig}" if b.mig else f"tp{b.tp}"
    for d in drops:
        if b.precision and f"{b.precision} · {conf}" in d.option and (b.accelerator or "") in d.option:
            return f"{d.option} was dropped ({d.family}: {d.reason})"
    return f"{b.label} is no longer a candidate (its sizing changed)"


def _money(x: float, currency: str) -> str:
    s = f"{abs(x):,.0f}"
    sign = "-" if x < 0 and round(abs(x)) else ""
    return f"{sign}${s}" if currency == "USD" else f"{sign}{s} {currency}"


def to_dict(info: BaselineInfo) -> dict[str, Any]:
    return {"file": info.file, "change_threshold": info.change_threshold, "kept": info.kept,
            "changes": [{"workload": c.workload, "from": c.from_label, "to": c.to_label, "from_key": c.from_key,
                         "to_key": c.to_key, "cost_before": round(c.cost_before, 6),
                         "cost_after": round(c.cost_after, 6), "saving": round(c.saving, 6), "reason": c.reason}
                        for c in info.changes],
            "new": info.new, "notes": info.notes}


def from_dict(d: dict[str, Any] | None) -> BaselineInfo | None:
    if not d:
        return None
    return BaselineInfo(d.get("file", ""), float(d.get("change_threshold", 0.0)), list(d.get("kept", [])),
                        [Change(c["workload"], c.get("from_key", ""), c.get("to_key", ""), c.get("from", ""),
                                c.get("to", ""), c.get("cost_before", 0.0), c.get("cost_after", 0.0),
                                c.get("saving", 0.0), c.get("reason", "")) for c in d.get("changes", [])],
                        list(d.get("new", [])), list(d.get("notes", [])))
