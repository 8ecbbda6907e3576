"""What a chosen config's goodput rests on: the one test every view of the decision reads (console, HTML, workbook,
policy.unvalidated's warnings)."""

from __future__ import annotations

from optimizer.candidates.types import CandidateSet
from optimizer.physics.validation import Validation
from optimizer.results.types import WorkloadResult

FIX = "measure it (a `measured` entry, or `planopt calibrate --bench`), or set policy.unvalidated: allow or exclude"


def rests_on_unvalidated(w: WorkloadResult) -> bool:
    """True when the workload's goodput is an estimate no group with enough published points backs."""
    v = w.validation
    return v is not None and v.source == "estimated" and not v.validated


def band_text(v: Validation) -> str:
    """'error −12% to +9% (hopper/fp8/*/dense)', or 'no error band' when no group has enough points."""
    if v.error_p10 is None or v.error_p90 is None:
        return "no error band"
    where = "" if v.band_from in (None, v.group) else f" (from {v.band_from})"
    return f"held-out error {v.error_p10:+.0%} to {v.error_p90:+.0%}{where}"


def reason(w: WorkloadResult) -> str:
    """Why the goodput is unvalidated, in one short phrase ('' when it is not)."""
    if not rests_on_unvalidated(w):
        return ""
    v = w.validation
    assert v is not None
    if v.points is None:  # a result written before validation: only `calibrated: false` is known
        return "unvalidated estimate: no published result calibrated its accelerator and precision"
    n = f"{v.points} published point" + ("" if v.points == 1 else "s")
    return f"unvalidated estimate: {n} behind {v.group}; {band_text(v)}"


def unvalidated_notes(rows: list[WorkloadResult], labels: dict[str, str]) -> list[str]:
    """policy.unvalidated: warn — one warning per chosen config that rests on an unvalidated estimate: the workload,
    the config (`labels`: workload → its label), its group and the points behind it."""
    out = []
    for w in rows:
        if rests_on_unvalidated(w):
            out.append(f"workload '{w.name}': {labels.get(w.name, w.key)} rests on an {reason(w)} "
                       f"(policy.unvalidated: warn) — {FIX}")
    return out


def candidate_notes(cands: CandidateSet) -> list[str]:
    """What `validate` warns of under policy.unvalidated: warn, before anything is chosen: each workload some of whose
    configs rest on an unvalidated estimate, with their groups and the points behind each."""
    out = []
    for name in sorted(cands.by_workload):
        configs = [c for c in cands.by_workload[name] if c.validation is not None]
        weak = [c for c in configs if c.unvalidated]
        if not weak:
            continue
        groups = {c.validation.group: c.validation.points for c in weak if c.validation is not None}
        shown = ", ".join(f"{g} ({n} points)" for g, n in sorted(groups.items())[:3])
        more = f" and {len(groups) - 3} more groups" if len(groups) > 3 else ""
        out.append(f"workload '{name}': {len(weak)} of {len(configs)} configs rest on an unvalidated estimate "
                   f"({shown}{more}); the result names any chosen (policy.unvalidated: warn) — "
                   "measure one, or set policy.unvalidated: allow or exclude")
    return out
