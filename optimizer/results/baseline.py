"""Stable re-plans: `planopt solve PLAN --baseline LAST.json` keeps last quarter's choices unless moving saves.

The integer program charges τ · C_w for leaving workload w's last choice (model.define_baseline;
τ = policy.change_threshold, C_w = w's cost in the last result). The reported costs never include
that charge. Every workload whose choice differs is listed with its saving and the reason.

A baseline from another plan (another `plan:` name) is warned about, naming both plans, and not refused: choices are
matched by workload name, so a plan renamed keeps them, and one with no workload in common keeps none (said too).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from optimizer import formatting, vocab
from optimizer.candidates.overflow import ceiling_of, keys_of, same_hardware, split_key, without_ceiling
from optimizer.candidates.types import CandidateSet
from optimizer.optimize.calendar import key_at, schedule_key, schedule_of
from optimizer.results.jsonio import read_result
from optimizer.results.types import (
    BaselineChange,
    BaselineInfo,
    PlanResult,
    WorkloadResult,
)


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


def load_baseline(path: Path | str) -> Baseline:
    """The workloads' choices and costs from a result JSON written by `planopt solve`."""
    result = read_result(path, what="baseline")
    choices = {w.name: BaselineChoice(w.name, configs_key(w), _label(w), w.cost, w.offer, w.accelerator, w.precision,
                                      w.tp, w.mig) for w in result.workloads}
    return Baseline(str(path), result.plan, result.currency, result.horizon_days, choices)


def configs_key(w: WorkloadResult) -> str:
    """The key of what a workload runs: its config's, or, split among several, all of theirs joined, or, moving
    (policy.moves), each contract period's with the day it starts (optimize.calendar.schedule_key)."""
    if len(w.split_configs) > 1:
        return split_key(x.key for x in w.split_configs.values())
    if w.configs_by_period:
        return schedule_key((x.start, x.key) for x in w.configs_by_period)
    return w.key


def _label(w: WorkloadResult) -> str:
    if len(w.split) > 1:
        return " + ".join(w.split)
    first = vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout)
    later = [f"from {x.start or x.period} {x.config}" for x in w.configs_by_period[1:]
             if x.key != w.configs_by_period[0].key]
    return "; ".join([first, *later])


def _keys(key: str) -> list[str]:
    """Every config a (split or schedule) key names."""
    return [k for _day, entry in schedule_of(key) for k in keys_of(entry)]


def kept(now: str, last: str, start: dt.date | None) -> bool:
    """Whether a workload runs the hardware it ran last (same_hardware: its API ceilings follow the demand) on
    every day either key moves on, from the horizon's first day `start` (a moving workload's keys are schedules:
    optimize.calendar.schedule_key) — the rule the program's switching cost follows (family baseline_moves)."""
    days = {start} | {dt.date.fromisoformat(d) for k in (now, last) for d, _k in schedule_of(k)[1:] if d}
    return all(same_hardware(key_at(now, d), key_at(last, d)) for d in days if start is None or d is None or d >= start)


def penalties(baseline: Baseline, cands: CandidateSet) -> dict[str, tuple[str, float]]:
    """Workload → (last key, its last cost) for every workload whose last config is still a candidate — its
    hardware (offer, precision, parallelism) at any API overflow ceiling: the ceilings follow the demand, so a
    peak that moves renames the config (cap5 → cap6) without changing what runs. The key is the last one, or
    that hardware at the nearest ceiling now (model.define_baseline keeps the hardware, whatever the ceiling). A
    workload that moved keeps its schedule of configs, each period's still a candidate (a period's config gone costs
    nothing to leave)."""
    out = {}
    for name, cs in cands.by_workload.items():
        b = baseline.choices.get(name)
        if b is None or not b.key:
            continue
        if len(schedule_of(b.key)) > 1:  # it moved: each period's config still a candidate (one gone: dropped)
            entries = [(day, k) for day, last in schedule_of(b.key) if (k := _candidate_key(cs, last)) is not None]
            if entries:
                out[name] = (schedule_key(entries), b.cost)
            continue
        keys = [k for k in (_candidate_key(cs, last) for last in keys_of(b.key)) if k is not None]
        if keys:  # a split workload's configs: those still candidates (a config gone costs nothing to leave)
            out[name] = (split_key(keys) if len(keys) > 1 else keys[0], b.cost)
    return out


def _candidate_key(cs, key: str) -> str | None:
    """The candidate that runs a last config's hardware: the same key, or the nearest API ceiling; None: gone."""
    same = [c.key for c in cs if without_ceiling(c.key) == without_ceiling(key)]
    if key in same:
        return key
    return min(same, key=lambda k: (abs(ceiling_of(k) - ceiling_of(key)), k)) if same else None


def describe(baseline: Baseline, result: PlanResult, cands: CandidateSet, threshold: float) -> BaselineInfo:
    """Every workload's choice against the baseline: kept, changed (with saving and why) or new."""
    held, changes, new = [], [], []
    cur = result.currency
    start = dt.date.fromisoformat(result.start_date) if result.start_date else None
    for w in result.workloads:
        b = baseline.choices.get(w.name)
        if b is None:
            new.append(w.name)
            continue
        now = configs_key(w)
        if kept(now, b.key, start):  # the same hardware (its API ceiling follows demand), or split: the same configs
            held.append(w.name)
            continue
        to_label = _label(w)
        saving = b.cost - w.cost
        gone = not all(any(without_ceiling(c.key) == without_ceiling(k) for c in cands.by_workload.get(w.name, []))
                       for k in _keys(b.key))
        if gone:
            reason = "the last choice is no longer possible: " + _why_gone(b, cands)
        elif saving <= 0:
            reason = (f"costs {formatting.money(-saving, cur)} more on its own, but moving it lets the plan as a whole "
                      f"save more than the workloads' thresholds")
        elif b.cost > 0:
            reason = (f"saves {formatting.money(saving, cur)} ({saving / b.cost:.1%} of its cost; "
                      f"the threshold is {threshold:.1%})")
        else:
            reason = f"saves {formatting.money(saving, cur)}; it cost nothing in the baseline, so it was free to move"
        changes.append(BaselineChange(w.name, b.key, now, b.label, to_label, b.cost, w.cost, saving, reason))
    notes = []
    if baseline.choices and result.workloads and not held and not changes:
        notes.append(f"the baseline {baseline.file} (plan '{baseline.plan}') has no workload in common with this "
                     "plan: none of its choices can be kept, every workload is chosen afresh — give the result of "
                     "this plan's last solve")
    if baseline.plan and baseline.plan != result.plan and (held or changes):
        # warned, not refused: a plan renamed keeps its workloads; with no workload in common the note above says so
        notes.append(f"the baseline {baseline.file} is the result of plan '{baseline.plan}', not of this plan "
                     f"'{result.plan}': choices are kept by workload name ({len(held) + len(changes)} of "
                     f"{len(result.workloads)} workloads match) — give this plan's last result if that is not meant")
    if baseline.horizon_days and baseline.horizon_days != result.horizon_days:
        notes.append(f"the baseline covers {formatting.plural(baseline.horizon_days, 'day')}, this plan "
                     f"{result.horizon_days}: savings compare the two horizons' costs as they are")
    if baseline.currency and baseline.currency != result.currency:
        notes.append(f"the baseline is in {baseline.currency}, this plan in {result.currency}")
    return BaselineInfo(baseline.file, threshold, held, changes, new, notes)


def _why_gone(b: BaselineChoice, cands: CandidateSet) -> str:
    if b.offer is None:
        return "the API is no longer allowed for it"
    drops = [d for d in cands.dropped if d.workload == b.workload]
    for d in drops:
        if d.option == f"offer {b.offer}":
            return f"offer {b.offer} was dropped ({d.family}: {d.reason})"
    if not any(c.offer == b.offer for c in cands.by_workload.get(b.workload, [])):
        return f"offer {b.offer} is not available to it any more (not in the catalogs, or filtered out)"
    options = {vocab.option_label(b.accelerator or "", b.precision, b.tp, b.mig),
               vocab.option_label(b.accelerator or "", b.precision),
               vocab.config_label(b.offer, b.precision, b.tp, b.mig)}
    for d in drops:
        if d.option in options:
            return f"{d.option} was dropped ({d.family}: {d.reason})"
    return f"{b.label} is no longer a candidate (its sizing changed)"
