"""PlanResult ⇄ JSON: the `--json` contract (its JSON Schema: docs/result.schema.json, `planopt schema --result`)
plus the detail reports need, and the one reader of a saved result, which validates it against that typed model."""

from __future__ import annotations

import ast
import collections
import dataclasses
import datetime as dt
import functools
import inspect
import itertools
import json
import math
import re
import textwrap
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, WrapValidator, create_model

from optimizer.errors import PlanError, Problem
from optimizer.inputs.demand import PeakDerivation
from optimizer.inputs.schema.plan import FIRST_DATE, LAST_DATE, MAX_HORIZON_DAYS
from optimizer.optimize.solution import Decomposition, SolveInfo, Status, StepWork, StopReason
from optimizer.results.cashflow import pnl_and_cash
from optimizer.results.own import book_view
from optimizer.results.showback import basis as showback_basis
from optimizer.results.showback import target as showback_target
from optimizer.inputs.reference import SCHEMA_DIALECT
from optimizer.results.contracts import NewReservation
from optimizer.results.types import (
    NEGATIVE_COST_TOLERANCE,
    BaselineChange,
    BaselineInfo,
    BookView,
    CashMonthRow,
    HourlySupply,
    OwnResult,
    PlanResult,
    SplitConfig,
    WorkloadResult,
)
from optimizer.vocab import TIERS

FORMAT_VERSION = 1


def _r(x: float, nd: int = 6) -> float:
    """Round for stable output: the same plan gives the same bytes."""
    v = round(float(x), nd)
    return 0.0 if v == 0 else v


def to_dict(result: PlanResult) -> dict[str, Any]:
    return {
        "plan": result.plan,
        "status": result.status,
        "currency": result.currency,
        "horizon_days": result.horizon_days,
        "cost": {
            "total": _r(result.cost_total),
            "per_day": _r(result.cost_per_day),
            "by_tier": {k: _r(v) for k, v in result.cost_by_tier.items()},
            "committed": _r(result.cost_committed),
            "all_in": _r(result.cost_all_in),
            "idle": _r(result.cost_idle),
            "idle_by_tier": {k: _r(v) for k, v in result.cost_idle_by_tier.items()},
            "idle_committed": _r(result.cost_idle_committed),
        },
        "workloads": [_workload(w) for w in result.workloads],
        "purchases": [{
            "offer": p.offer, "accelerator": p.accelerator, "tier": p.tier, "gpus": p.gpus,
            "gpu_hours": _r(p.gpu_hours), "provider": p.provider, "region": p.region,
            "price_per_gpu_hour": _r(p.price_per_gpu_hour), "price_estimated": p.price_estimated,
            "cost": _r(p.cost), "gpus_per_node": p.gpus_per_node, **({"start": p.start} if p.start else {}),
            **({"payment": p.payment} if p.payment else {}),
        } for p in result.purchases],
        "solver": {
            "name": result.solver.name, "seconds": round(result.solver.seconds, 3),
            "gap": None if result.solver.gap is None else _r(result.solver.gap, 9),
            "status": result.solver.status, **_work(result.solver.work),
            **_decomposition(result.solver.decomposition),
        },
        "binding": [asdict(b) for b in result.binding],
        "day_types": result.day_types,
        "policy": result.policy,
        "offers": result.offers,
        "apis": result.apis,
        "hourly": [_hourly(h) for h in result.hourly],
        "candidates": [{**asdict(c), "goodput_output_tokens_per_s": _r(c.goodput_output_tokens_per_s, 3),
                        "gpus_per_replica": _r(c.gpus_per_replica)} for c in result.candidates],
        "dropped": [asdict(d) for d in result.dropped],
        "alternatives": [{**asdict(a), "standalone_cost": _r(a.standalone_cost),
                          "difference": None if a.difference is None else _r(a.difference),
                          "goodput_output_tokens_per_s": _r(a.goodput_output_tokens_per_s, 3)}
                         for a in result.alternatives],
        "pruned": result.pruned,
        "notes": result.notes,
        "warnings": warnings_of(result),
        "file": result.file,
        "format": FORMAT_VERSION,
        **_commitments(result),
    }


def warnings_of(result: PlanResult) -> list[str]:
    """What `solve` warns of on stderr, and `--json` lists under `warnings`: the notes (legal but odd input, the
    plan's lint) and the baseline's, without what --carry did (said as a note, not warned)."""
    told = set(result.carried.notes) if result.carried else set()
    return [n for n in result.notes + (result.baseline.notes if result.baseline else []) if n not in told]


def _own(o: OwnResult) -> dict[str, Any]:
    facility = _rounded(asdict(o.facility))
    facility["tariff"] = [_r(v) for v in o.facility.tariff]
    inputs = []
    for row in o.inputs:
        d = _rounded(asdict(row))
        d["served_gpu_hours_by_hour"] = [_r(v) for v in row.served_gpu_hours_by_hour]
        inputs.append(d)
    return {"bought": [_rounded(asdict(b)) for b in o.bought], "owned": [_rounded(asdict(r)) for r in o.owned],
            "break_even": [_rounded(asdict(b)) for b in o.break_even], "facility": facility,
            "capex": _r(o.capex), "opex": _r(o.opex), "sunk_depreciation": _r(o.sunk_depreciation),
            "inputs": inputs}


def _hourly(h: HourlySupply) -> dict[str, Any]:
    d = asdict(h)
    for k in ("committed_gpus", "period"):  # only with commitments: older results read the same
        if not d[k]:
            del d[k]
    return d


def _commitments(result: PlanResult) -> dict[str, Any]:
    """Contracts signed before the plan, new reservations over their full term, what expires when."""
    out: dict[str, Any] = {
        "start_date": result.start_date,
        "commitments": [_rounded(asdict(c)) for c in result.commitments],
        "new_commitments": [_rounded(asdict(n)) for n in result.new_commitments],
        "end_is_last_day": True,  # every `end` is the last day of service; older files: new_commitments' was the day after
        "expiry": [_rounded(asdict(e)) for e in result.expiry],
    }
    if result.spend_commitments:
        out["spend_commitments"] = [_rounded(asdict(c)) for c in result.spend_commitments]
    if result.new_spend_commitments:
        out["new_spend_commitments"] = [_rounded(asdict(n)) for n in result.new_spend_commitments]
    if result.periods:
        out["periods"] = [_rounded(asdict(p)) for p in result.periods]
    out["cash_flow"] = [_rounded(asdict(r)) for r in result.cash_flow]
    out["cash_by_month"] = [_rounded(asdict(r)) for r in pnl_and_cash(result.cash_flow, result.own)]
    out["commitment_schedule"] = [_rounded(asdict(r)) for r in result.commitment_schedule]
    if result.shared_gpus:
        out["shared_gpus"] = [{**_rounded({k: v for k, v in asdict(g).items() if k not in ("members", "hourly_gpus")}),
                               "members": [_rounded(asdict(m)) for m in g.members], "hourly_gpus": g.hourly_gpus}
                              for g in result.shared_gpus]
    if result.showback:
        out["showback"] = [_rounded(asdict(r)) for r in result.showback]
    if result.moves:
        out["moves"] = [_rounded(asdict(r)) for r in result.moves]
    if result.baseline is not None:
        out["baseline"] = baseline_to_dict(result.baseline)
    if result.own is not None:
        out["own"] = _own(result.own)
        out["book"] = _rounded(asdict(book_view(result)))  # type: ignore[arg-type]
    if result.risk is not None:
        out["scenarios"] = [_rounded(asdict(r)) for r in result.scenarios]
        out["risk"] = _rounded(asdict(result.risk))
    if result.carried is not None:
        c = result.carried
        out["carried"] = {"file": c.file, "plan": c.plan, "carried": [_rounded(asdict(x)) for x in c.carried],
                          "skipped": [_rounded(asdict(x)) for x in c.skipped], "notes": c.notes}
    return out


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (_r(v) if isinstance(v, float) else {kk: _r(vv) if isinstance(vv, float) else vv for kk, vv in v.items()}
                if isinstance(v, dict) else v) for k, v in d.items()}


def _workload(w: WorkloadResult) -> dict[str, Any]:
    return {
        "name": w.name, "pool": w.pool, "model": w.model, "offer": w.offer, "accelerator": w.accelerator,
        "precision": w.precision, "tp": w.tp, "gpus_per_replica": _r(w.gpus_per_replica),
        "goodput_output_tokens_per_s": _r(w.goodput_output_tokens_per_s, 3),
        "goodput_source": w.goodput_source, "weights_gb": _r(w.weights_gb), "kv_gb_per_seq": _r(w.kv_gb_per_seq),
        "kv_concurrency": w.kv_concurrency, "replicas": asdict(w.replicas), "gpus_at_peak": w.gpus_at_peak,
        "cost": _r(w.cost),
        "committed_cost": _r(w.committed_cost), "team": w.team, "cost_center": w.cost_center,
        "tenants": {k: _r(v, 9) for k, v in w.tenants.items()},
        "cost_by_tier": {k: _r(v) for k, v in w.cost_by_tier.items()},
        "gpu_hours_by_tier": {k: _r(v) for k, v in w.gpu_hours_by_tier.items()},
        # beyond the contract
        "gpu_hours_by_day_type": {t: {d: _r(v) for d, v in days.items()} for t, days in w.gpu_hours_by_day_type.items()},
        "kind": w.kind, "provider": w.provider, "mig": w.mig, "bound": w.bound,
        "needed_concurrency": w.needed_concurrency, "total_gb": _r(w.total_gb), "reserve_gb": _r(w.reserve_gb),
        "free_gb": _r(w.free_gb), "peak": {"day_type": w.peak_day_type, "hour": w.peak_hour,
                                          "output_tokens_per_s": _r(w.peak_output_tokens_per_s),
                                          **({"derived_from": derivation_json(w.peak_derivation)}
                                             if w.peak_derivation else {})},
        "api_share": _r(w.api_share), "api_cost": _r(w.api_cost), "gpu_hours": _r(w.gpu_hours),
        "candidates": w.candidates, "key": w.key, "family": w.family, "layout": w.layout, "pp": w.pp, "ep": w.ep,
        "kv_copies": w.kv_copies, "engine": w.engine,
        "validation": None if w.validation is None else _rounded(asdict(w.validation)),
        "ttft_at_load_ms": None if w.ttft_at_load_ms is None else _r(w.ttft_at_load_ms, 3),
        "hourly_gpus": w.hourly_gpus, "hourly_replicas": w.hourly_replicas,
        "hourly_demand": {d: [_r(v, 3) for v in row] for d, row in w.hourly_demand.items()},
        "hourly_api_tokens_per_s": {d: [_r(v, 3) for v in row] for d, row in w.hourly_api_tokens_per_s.items()},
        **({"split": {k: [_r(v, 9) for v in row] for k, row in w.split.items()},
            "split_gpus_at_peak": dict(w.split_gpus_at_peak),
            "split_goodput": {k: [_r(v, 3) for v in row] for k, row in w.split_goodput.items()}} if w.split else {}),
        **({"size_classes": [_rounded(asdict(k)) for k in w.size_classes]} if w.size_classes else {}),
        **({"split_configs": {k: _split_config(x) for k, x in w.split_configs.items()}} if w.split_configs else {}),
        **({"shared": w.shared} if w.shared else {}),
        **({"configs_by_period": [asdict(x) for x in w.configs_by_period]} if w.configs_by_period else {}),
    }


def _split_config(x: SplitConfig) -> dict[str, Any]:
    return {"key": x.key, "offer": x.offer, "accelerator": x.accelerator, "precision": x.precision, "tp": x.tp,
            "gpus_per_replica": _r(x.gpus_per_replica), "replicas": asdict(x.replicas), "gpu_hours": _r(x.gpu_hours),
            "cost": _r(x.cost), "cost_by_tier": {k: _r(v) for k, v in x.cost_by_tier.items()},
            "gpu_hours_by_tier": {k: _r(v) for k, v in x.gpu_hours_by_tier.items()},
            "gpu_hours_by_day_type": {t: {d: _r(v) for d, v in days.items()}
                                      for t, days in x.gpu_hours_by_day_type.items()},
    }


def derivation_json(d: PeakDerivation | None) -> dict[str, Any] | None:
    """The business numbers behind a derived peak, the peak, and the arithmetic as text."""
    if d is None:
        return None
    return {**asdict(d), "output_tokens_per_s": d.peak_output_tokens_per_s, "text": d.text()}


def _work(work: tuple[StepWork, ...]) -> dict[str, Any]:
    """solver.work and solver.stopped_by, step by step (none in a result that recorded no work: it writes back as
    it was read)."""
    if not work:
        return {}
    return {"work": {w.step: {"solves": w.solves, "simplex_iterations": w.simplex_iterations, "mip_nodes": w.mip_nodes}
                     for w in work},
            "stopped_by": {w.step: w.stopped_by for w in work}}


def _decomposition(d: Decomposition | None) -> dict[str, Any]:
    """solver.decomposition: how a scenario plan solved by scenario got its bound (none otherwise)."""
    if d is None:
        return {}
    return {"decomposition": {**asdict(d), "bound": None if d.bound is None else _r(d.bound)}}


def _step_work(s: dict[str, Any]) -> tuple[StepWork, ...]:
    stopped = {step: "safety cap" if why == "time" else why  # written before the work limits: the clock stopped it
               for step, why in (s.get("stopped_by") or {}).items()}
    return tuple(StepWork(step, w["solves"], w["simplex_iterations"], w["mip_nodes"], stopped.get(step, "error"))
                 for step, w in (s.get("work") or {}).items())


def dumps(result: PlanResult, *, stable: bool = False) -> str:
    """JSON text; `stable` zeroes solver.seconds so two solves compare byte for byte."""
    d = to_dict(result)
    if stable:
        d["solver"]["seconds"] = 0.0
    return json.dumps(d, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def baseline_to_dict(info: BaselineInfo) -> dict[str, Any]:
    return {"file": info.file, "change_threshold": info.change_threshold, "kept": info.kept,
            "changes": [{"workload": c.workload, "from": c.from_label, "to": c.to_label, "from_key": c.from_key,
                         "to_key": c.to_key, "cost_before": round(c.cost_before, 6),
                         "cost_after": round(c.cost_after, 6), "saving": round(c.saving, 6), "reason": c.reason}
                        for c in info.changes],
            "new": info.new, "notes": info.notes}


# --- the JSON, typed: what `planopt solve --json` writes, as pydantic reads and publishes it ---------------------

_AS_WRITTEN = ConfigDict(strict=True, extra="forbid", use_attribute_docstrings=True)
"""Numbers are numbers (a count a whole one), text is text, and no key `planopt solve` does not write."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _docs(cls: type) -> dict[str, str]:
    """The docstring under each field of `cls` (the published schema describes the keys with them)."""
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    except (OSError, TypeError):  # installed without its sources: the schema goes without descriptions
        return {}
    return {a.target.id: inspect.cleandoc(b.value.value) for a, b in itertools.pairwise(body)
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)}


def _fields(cls: type, *, only: Iterable[str] | None = None, leave: Iterable[str] = (),
            keys: dict[str, str] | None = None) -> dict[str, Any]:
    """`cls`'s fields as pydantic field definitions, each with the type and the default `cls` states (a key
    added in a later version has a default there, so files written before it read); `keys` names a field's
    key in the JSON when it differs."""
    hints = _hints(cls)
    keys = keys or {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if (only is not None and f.name not in only) or f.name in leave:
            continue
        kw: dict[str, Any] = {"alias": keys[f.name]} if f.name in keys else {}
        if f.name in _docs(cls):
            kw["description"] = _docs(cls)[f.name]
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        out[f.name] = (hints[f.name], Field(**kw))
    return out


def _model(name: str, doc: str, fields: dict[str, Any], config: ConfigDict = _AS_WRITTEN) -> type[BaseModel]:
    return create_model(name, __config__=config, __doc__=doc, **fields)


_COST_KEYS = {f.name: f.name.removeprefix("cost_") for f in dataclasses.fields(PlanResult)
              if f.name.startswith("cost_")}
_PEAK_KEYS = {"peak_day_type": "day_type", "peak_hour": "hour", "peak_output_tokens_per_s": "output_tokens_per_s",
              "peak_derivation": "derived_from"}

_DerivedJson = _model("DerivedFrom", "The business numbers a peak was derived from, the peak, and the arithmetic.", {
    **_fields(PeakDerivation), "output_tokens_per_s": (float | None, None), "text": (str | None, None)})
_PeakJson = _model("Peak", "A workload's busiest hour.", {
    **_fields(WorkloadResult, only=_PEAK_KEYS, keys=_PEAK_KEYS),
    "peak_derivation": (_DerivedJson | None, Field(None, alias="derived_from"))})
_WorkloadJson = _model("Workload", WorkloadResult.__doc__ or "", {
    **_fields(WorkloadResult, leave=_PEAK_KEYS), "peak": (_PeakJson, ...),
    "calibrated": (bool | None, Field(None, deprecated=True, description=(
        "Written before `validation`: false when no published result calibrated the estimate's (generation, "
        "datatype). Read as validation {source: estimated, validated: calibrated, points: null}; never written.")))})
_CostJson = _model("Cost", "What the horizon costs (per_day and all_in are written for readers; derived).", {
    **_fields(PlanResult, only=_COST_KEYS, keys=_COST_KEYS),
    "per_day": (float | None, None), "all_in": (float | None, None)})
_StepWorkJson = _model("StepWork", StepWork.__doc__ or "", _fields(StepWork, only=("solves", "simplex_iterations",
                                                                                 "mip_nodes")))
_DecompositionJson = _model("Decomposition", Decomposition.__doc__ or "", _fields(Decomposition))
_SolverJson = _model("Solver", "The solve: solver, seconds, proven gap and status (the result's, when absent), and "
                     "the work each step of the solve did and what stopped it (absent in results written before).", {
    **_fields(SolveInfo, only=("name", "seconds", "gap")), "status": (Status | None, None),
    "work": (dict[str, _StepWorkJson], Field(default_factory=dict, description=(  # type: ignore[valid-type]
        "Step (relax, round, search, settle, tidy, price; decompose: a scenario plan's solves by scenario) → its "
        "solver calls, simplex iterations and "
        "branch-and-bound nodes."))),
    "stopped_by": (dict[str, StopReason | Literal["time"]], Field(default_factory=dict, description=(
        "Step → what stopped its calls, the one that says least first: error, safety cap (the wall clock: the one "
        "stop that may differ between machines), iterations, nodes, alternatives (pricing stopped at its count of "
        "alternatives tried), solutions (a first plan), gap, optimal, "
        "infeasible. \"time\", in results written before the work limits, reads as safety cap."))),
    "decomposition": (_DecompositionJson | None, Field(None, description=(  # type: ignore[valid-type]
        "Present when a scenario plan was solved by scenario (policy.decompose): the method, its rounds, the "
        "Lagrangian bound the gap is proven against, the scenarios solved alone each round, and the engine.")))})
_CHANGE_KEYS = {"from_label": "from", "to_label": "to"}
_ChangeJson = _model("BaselineChange", BaselineChange.__doc__ or "", _fields(BaselineChange, keys=_CHANGE_KEYS))
_BaselineJson = _model("Baseline", "Choices kept from a baseline result, and those changed.", {
    **_fields(BaselineInfo, leave=("changes",)), "changes": (list[_ChangeJson], ...)})


_READ_BY_REPORTS = {
    "Offer": {"provider": str, "region": str, "accelerator": str, "gpus_per_node": float, "prices": dict[str, float],
              "estimated": dict[str, bool], "available_gpus": dict[str, Any], "spot_interruption": float},
    "Policy": {"occupancy": float, "memory_reserve": float, "spares": float, "rollout_fraction": float,
               "mip_gap": float, "change_threshold": float, "time_limit_s": float, "tiers": list[str]}}
"""The keys of an offer and of the policy the reports read, by type: they are checked where present; the rest of
each (the prices' source and as_of, the plan's other settings) is kept as written."""
_OfferJson, _PolicyJson = (_model(name, f"The parts of {name.lower()} the reports read.",
                                  {k: (tp, None) for k, tp in keys.items()}, ConfigDict(strict=True, extra="allow"))
                           for name, keys in _READ_BY_REPORTS.items())


def _as_written(value: Any, check: Any) -> Any:
    """Checked by its type, kept as the file holds it (the order and the keys no type names)."""
    check(value)
    return value


ResultJson = _model("PlanResultJson", "A solved plan as `planopt solve --json` writes it.", {
    **_fields(PlanResult, leave=(*_COST_KEYS, "solver", "workloads", "baseline", "offers", "policy")),
    "cost": (_CostJson, ...), "solver": (_SolverJson, ...), "workloads": (list[_WorkloadJson], ...),
    "baseline": (_BaselineJson | None, None),
    "offers": (dict[str, Annotated[_OfferJson, WrapValidator(_as_written)]], ...),
    "policy": (Annotated[_PolicyJson, WrapValidator(_as_written)], ...),
    "format": (Annotated[int, Field(ge=1, strict=False)], FORMAT_VERSION),
    "end_is_last_day": (bool, False),
    "warnings": (list[str], Field(default_factory=list, description=(
        "What `solve` warned of on stderr: legal but odd input (a lead time beyond the horizon, servers owned from "
        "after it, …) and a baseline's notes; derived from notes and baseline.notes (absent in older files)."))),
    "cash_by_month": (list[CashMonthRow], Field(default_factory=list)),
    "book": (BookView | None, Field(None, description=(
        "With hardware of your own: the horizon as the books carry it (derived; absent in older files and "
        "without servers of your own, when the book is the all-in).")))})
"""The whole file. Keys added after the first version have their field's default, so older files read; the
reader adds what pydantic cannot say (`_meaning_errors`)."""

_READ = TypeAdapter(ResultJson)

def result_json_schema() -> dict[str, Any]:
    """The JSON Schema of a result file, generated from the typed model the reader validates with."""
    schema = _READ.json_schema(by_alias=True)
    for row in schema["$defs"].values():  # rows are dataclasses: the reader refuses a key they lack as well
        # last, wherever (and whether) this pydantic version put it: the published file is the same bytes on each
        row["additionalProperties"] = row.pop("additionalProperties", False)
    return {"$schema": SCHEMA_DIALECT, "title": f"planopt result file, format {FORMAT_VERSION}",
            "description": "A solved plan as `planopt solve --json` and `-o DIR` write it (DIR/<plan>.json).",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


def result_schema_text() -> str:
    return json.dumps(result_json_schema(), indent=2, ensure_ascii=False) + "\n"


def _result(d: dict[str, Any]) -> PlanResult:
    """The PlanResult a file that validated holds, its values as the file holds them (a whole number stays one,
    so a result reads and writes back byte for byte): each field from its key (cost.total → cost_total) and
    every field the file leaves out at the default its dataclass states."""
    s = d["solver"]
    workloads = []
    for w in d["workloads"]:
        peak = w["peak"]
        derived = peak.get("derived_from")
        workloads.append(_built(WorkloadResult, {
            **{k: v for k, v in w.items() if k != "peak"}, "validation": validation_of_row(w),
            **{f: peak[k] for f, k in _PEAK_KEYS.items() if k in peak},
            "peak_derivation": None if not derived else _built(PeakDerivation, derived)}))
    baseline = d.get("baseline") or None
    if baseline:
        field = {k: f for f, k in _CHANGE_KEYS.items()}
        changes = [_built(BaselineChange, {field.get(k, k): v for k, v in c.items()}) for c in baseline["changes"]]
        baseline = _built(BaselineInfo, {**baseline, "changes": changes})
    result = _built(PlanResult, {
        **{k: v for k, v in d.items() if k in _PLAN_FIELDS},
        **{f: d["cost"][k] for f, k in _COST_KEYS.items() if k in d["cost"]},
        "workloads": workloads, "baseline": baseline,
        "solver": SolveInfo(s["name"], s.get("status") or d["status"], s["seconds"], s["gap"], None, None,
                            work=_step_work(s),
                            decomposition=Decomposition(**s["decomposition"]) if s.get("decomposition") else None)})
    if d.get("end_is_last_day"):
        return result
    return dataclasses.replace(result, new_commitments=[_end_as_last_day(n) for n in result.new_commitments])


def validation_of_row(w: dict[str, Any]) -> dict[str, Any] | None:
    """A workload row's `validation`, as written, or the one its `calibrated` stands for in a result written
    before `validation` (an estimate, validated or not, its group and points unknown; a measured goodput is
    measured). None for the API, a reserved GPU block, or a row that says neither."""
    if "validation" in w:
        return w["validation"]
    if "calibrated" not in w or w.get("kind") == "reserve" or w.get("goodput_source") not in ("estimated", "measured"):
        return None
    measured = w["goodput_source"] == "measured"
    return {"source": w["goodput_source"], "group": None, "engine": None, "points": None, "error_p10": None,
            "error_p90": None, "validated": measured or bool(w["calibrated"]), "band_from": None}


def _built(cls: type, d: dict[str, Any]) -> Any:
    """`cls` from the keys of `d` that are its fields, each row of a list or object of rows built likewise."""
    builders = _builders(cls)
    return cls(**{k: v if (b := builders[k]) is None or v is None else b(v) for k, v in d.items() if k in builders})


@functools.cache
def _builders(cls: type) -> dict[str, Callable[[Any], Any] | None]:
    return {name: _builder(tp) for name, tp in _hints(cls).items()}


def _builder(tp: Any) -> Callable[[Any], Any] | None:
    """How a value of type `tp` is built from its JSON: None when it is kept as parsed (it holds no rows)."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
    if dataclasses.is_dataclass(tp):
        return lambda v: _built(tp, v) if isinstance(v, dict) else v  # type: ignore[arg-type]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    item = _builder(args[-1]) if origin in (list, dict) and args else None
    if item is None:
        return None
    if origin is list:
        return lambda v: [item(x) for x in v]
    return lambda v: {k: item(x) for k, x in v.items()}


_PLAN_FIELDS = frozenset(f.name for f in dataclasses.fields(PlanResult))


def _end_as_last_day(n: NewReservation) -> NewReservation:
    """A new reservation as a file written before `end_is_last_day` holds it: its `end` was the day after its
    term (a date that is not one is left for the calendar check to name)."""
    if n.end and date_error(n.end, "") is None:
        last = (dt.date.fromisoformat(n.end) - dt.timedelta(days=1)).isoformat()
        return dataclasses.replace(n, end=last, end_text=last if n.end_text == n.end else n.end_text)
    if not n.end and n.end_text.startswith("start + ") and n.term_days:
        return dataclasses.replace(n, end_text=f"after {n.term_days:,} days")
    return n


def as_written(result: PlanResult) -> PlanResult:
    """The result with the numbers its JSON keeps (rounded as to_dict rounds them): what the workbook and the report
    render, so `planopt report` on the saved JSON writes what `planopt solve` did. A result already made so is
    returned as is (the round trip gives it back unchanged), so the files written together convert it once."""
    if getattr(result, "_as_written", False):
        return result
    written = from_dict(to_dict(result))
    object.__setattr__(written, "_as_written", True)
    return written


def from_dict(d: dict[str, Any]) -> PlanResult:
    """Rebuild a PlanResult from its JSON as parsed (`report` re-renders the numbers the file keeps), the JSON
    of any format written before included. It checks nothing: `read_result` checks a file before it builds one."""
    return _result(d)


_FIX = "give the file as `planopt solve` wrote it, or solve the plan again"


def _checked(text: str, d: dict[str, Any]) -> PlanResult | list[tuple[str, str]]:
    """The result that `text`, parsed as `d`, holds, or every (key path, what is wrong) in it: what pydantic
    says of its types first, then what types cannot say."""
    try:
        _READ.validate_json(text)
    except ValidationError as exc:
        return [_said(e) for e in exc.errors(include_url=False)]
    result = _result(d)
    return [*_meaning_errors(result), *_consistency_errors(result, d)] or result


MAX_FILE_BYTES = 500_000_000
"""The largest result file read: planopt writes about 25 kB per workload (q4's nine: 212 kB), so a 1,000-workload
plan's result is some 25 MB; the bound is twenty times that, and refuses a file no plan wrote before reading it."""


def read_result(path: Path | str, what: str = "result") -> PlanResult:
    """A result JSON that `planopt solve` wrote, as a PlanResult; PlanError (exit 2) when it is not one, with
    every problem in it by key path.

    The one reader of saved results (`planopt report`, `compare`, `--baseline`, `--carry`, `calibrate --result`):
    it reads every format written before, and refuses a file written by a newer planopt instead of misreading it.
    """
    path = Path(path)
    shown = str(path)
    fix = "give the JSON that `planopt solve PLAN -o DIR` wrote (DIR/<plan>.json)"
    if not path.is_file():
        raise PlanError(Problem(f"{what} file not found" if not path.exists() else f"the {what} is not a file "
                                "(a folder or a device)", fix, file=shown))
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise PlanError(Problem(f"the {what} is {size / 1e6:,.0f} MB, over the {MAX_FILE_BYTES / 1e6:,.0f} MB a result "
                                "may be", fix, file=shown))
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise PlanError(Problem(f"the {what} is not UTF-8 text", fix, file=shown)) from None
    except OSError as exc:
        raise PlanError(Problem(f"cannot read the {what}: {exc.strerror or exc}", fix, file=shown)) from None
    deepest = nesting_depth(text)
    if deepest > MAX_DEPTH:
        raise PlanError(Problem(f"nested {deepest} levels deep (a result is at most {MAX_DEPTH})", fix, file=shown))
    try:
        odd: list[Any] = []  # what planopt never writes: a key given twice, NaN or Infinity (then named by path)
        data = json.loads(text, object_pairs_hook=lambda pairs: _object(pairs, odd),
                          parse_constant=lambda t: odd.append(t) or _NonFinite(t),
                          parse_float=lambda t: _finite(t, odd))
    except json.JSONDecodeError as exc:
        if path.suffix.lower() in (".yaml", ".yml"):  # the plan itself, given where its result goes
            raise PlanError(Problem(f"a plan, not a {what}: the {what} is the JSON `planopt solve` writes",
                                    f"solve it first (planopt solve {path} -o DIR), then give DIR/<plan>.json",
                                    file=shown)) from None
        raise PlanError(Problem(f"not JSON: {exc.msg}", fix, file=shown, line=exc.lineno)) from None
    if not isinstance(data, dict) or "plan" not in data or "workloads" not in data:
        raise PlanError(Problem("not a planopt result JSON (no 'plan' and 'workloads')", fix, file=shown))
    found = list(_unreadable(data, "")) if odd else []
    if found:
        raise PlanError([Problem(message, _FIX, file=shown, path=p) for p, message in found])
    version = data.get("format", FORMAT_VERSION)
    if isinstance(version, float) and version.is_integer():
        version = int(version)  # 1.0 is format 1
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise PlanError(Problem(f"{_shown(version)} is not a result format (a whole number, 1 or more)",
                                f"this planopt writes format {FORMAT_VERSION}: give the file as `planopt solve` "
                                "wrote it, or solve the plan again", file=shown, path="format"))
    if version > FORMAT_VERSION:
        raise PlanError(Problem(f"result format {version} is newer than this planopt reads ({FORMAT_VERSION})",
                                "upgrade planopt, or solve the plan again", file=shown))
    result = _checked(text, data)
    if isinstance(result, list):
        raise PlanError([Problem(message, _FIX, file=shown, path=p) for p, message in result])
    return result


MAX_DEPTH = 200
"""Objects and lists nested deeper than this are refused before parsing: planopt writes 5 levels, and Python's
parser and the checks after it recurse once a level (a file nested 100,000 deep would exhaust the stack)."""

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def nesting_depth(text: str) -> int:
    """How deep the text's objects and lists nest, brackets inside strings aside (before parsing it: Python's
    parser recurses once a level)."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    return max(itertools.accumulate(1 if b in "[{" else -1 for b in brackets), default=0)


class _Object(dict):
    """A JSON object as parsed that holds a key more than once (a file planopt writes holds none)."""

    def __init__(self, pairs: list[tuple[str, Any]]):
        super().__init__(pairs)
        counts = collections.Counter(k for k, _ in pairs)
        self.repeated = [k for k, n in counts.items() if n > 1]


def _object(pairs: list[tuple[str, Any]], odd: list[Any]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    odd.append(pairs)
    return _Object(pairs)


class _NonFinite(str):
    """NaN, Infinity or -Infinity in a result file (or a number too large for a float), kept as its text
    so the reader can name its key: `json.dumps` never writes one (allow_nan=False)."""


def _finite(text: str, odd: list[Any]) -> float | _NonFinite:
    v = float(text)
    if math.isfinite(v):
        return v
    odd.append(text)
    return _NonFinite(text)


def _unreadable(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every key given twice and every NaN or Infinity in parsed JSON, by key path."""
    if isinstance(value, _NonFinite):
        yield path or "the result", f"{value} is not a finite number (a result holds no NaN or Infinity)"
    elif isinstance(value, dict):
        for k in getattr(value, "repeated", ()):
            yield _join(path, k), "is given more than once (each key once)"
        for k, v in value.items():
            yield from _unreadable(v, _join(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _unreadable(v, f"{path}[{i}]")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


# --- pydantic's errors, as a reader of the file is told them ----------------------------------------------------

_IS_NOT = {"float_type": "a number", "int_type": "a number", "string_type": "text", "bool_type": "true or false",
           "list_type": "a list", "dict_type": "an object", "dataclass_type": "an object", "model_type": "an object",
           "dataclass_exact_type": "an object", "model_attributes_type": "an object", "none_required": "null",
           "int_from_float": "a whole number"}
_NEGATIVE = {"goodput_output_tokens_per_s": "a goodput is tokens/s, 0 or more"}
"""Why a value may not be negative, by field; otherwise by its bound: a count's 0 or a cost's −1 cent."""
_NOT_BELOW = {0: "a count of GPUs, nodes or replicas", -NEGATIVE_COST_TOLERANCE: "a cost is GPU-hours at prices, 0 or more"}
_CHOICES = {"status": "a status planopt writes"}


def _said(e: Any) -> tuple[str, str]:
    """(key path, what is wrong) for one of pydantic's errors."""
    path = ""
    for part in e["loc"]:
        path = f"{path}[{part}]" if isinstance(part, int) else _join(path, part)
    kind, value, field = e["type"], e.get("input"), next(
        (p for p in reversed(e["loc"]) if isinstance(p, str)), "")
    if kind == "missing":
        return path, "missing"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        parent = path.rsplit(".", 1)[0] if "." in path else "the result"
        return path, f"is not a key of {parent} (planopt never writes it)"
    if kind == "int_type" and isinstance(value, float):
        return path, f"{_shown(value)} is not a whole number"
    if kind in _IS_NOT:
        return path, f"{_shown(value)} is not {_IS_NOT[kind]}"
    if kind == "greater_than_equal":
        why = _NEGATIVE.get(field) or _NOT_BELOW.get(e["ctx"]["ge"])
        if why:
            return path, f"{_shown(value)} is negative ({why})"
    if kind == "literal_error":
        return path, f"{_shown(value)} is not {_CHOICES.get(field, 'one of')} ({e['ctx']['expected']})"
    return path, f"{_shown(value)}: {e['msg'][:1].lower()}{e['msg'][1:]}"


# --- what types cannot say -----------------------------------------------------------------------------------

def _meaning_errors(result: PlanResult) -> Iterator[tuple[str, str]]:
    """(key path, what) for each value a well-typed file may hold and planopt never writes: a horizon of days,
    day types and tiers the rows name, workloads named once, 24 hours to a day, dates and months on the calendar,
    a share of occupancy, and a goodput for a config served on GPUs."""
    if not 1 <= result.horizon_days <= MAX_HORIZON_DAYS:
        yield "horizon_days", f"{result.horizon_days} is not a horizon (1 to {MAX_HORIZON_DAYS:,} days)"
    if not result.day_types:
        yield "day_types", "is empty (every result has at least one day type)"
    for name, days in result.day_types.items():
        if not 0 <= days <= result.horizon_days:
            yield f"day_types.{name}", f"{_shown(days)} is not a count of days (0 to horizon_days, {result.horizon_days})"
    seen: dict[str, int] = {}
    for i, w in enumerate(result.workloads):
        if w.name in seen:
            yield f"workloads[{i}].name", f"'{w.name}' is workloads[{seen[w.name]}]'s name too (each workload once)"
        seen.setdefault(w.name, i)
        for key in ("hourly_gpus", "hourly_replicas", "hourly_demand", "hourly_api_tokens_per_s"):
            for day_type, row in getattr(w, key).items():
                yield from _hours(result, f"workloads[{i}].{key}.{day_type}", day_type, len(row))
    for i, h in enumerate(result.hourly):
        yield from _hours(result, f"hourly[{i}].day_type", h.day_type, 24)
        if not 0 <= h.hour <= 23:
            yield f"hourly[{i}].hour", f"{_shown(h.hour)} is not an hour of the day (0 to 23)"
    occupancy = result.policy.get("occupancy", 1.0)
    if not 0 < occupancy <= 1:
        yield "policy.occupancy", f"{occupancy} is not a share in (0, 1]"
    for i, p in enumerate(result.purchases):
        if p.tier not in TIERS:
            yield f"purchases[{i}].tier", f"'{p.tier}' is not a tier ({', '.join(TIERS)})"
    if result.own is not None:
        if len(result.own.facility.tariff) not in (0, 24):
            yield "own.facility.tariff", f"{len(result.own.facility.tariff)} values, not 24 (one an hour)"
        for i, row in enumerate(result.own.inputs):
            if len(row.served_gpu_hours_by_hour) != 24:
                yield (f"own.inputs[{i}].served_gpu_hours_by_hour",
                       f"{len(row.served_gpu_hours_by_hour)} values, not 24 (one an hour)")
    yield from _calendar_errors(result)
    rows = [(f"workloads[{i}]", w.offer, w.precision, w.goodput_output_tokens_per_s)
            for i, w in enumerate(result.workloads)]
    rows += [(f"candidates[{i}]", c.offer, c.precision, c.goodput_output_tokens_per_s)
             for i, c in enumerate(result.candidates)]
    for path, offer, precision, goodput in rows:
        if goodput == 0 and offer is not None and precision is not None:
            # the replicas are sized by dividing by it; an API or reserve_gpus workload's 0 is what planopt writes
            yield (f"{path}.goodput_output_tokens_per_s", f"0 is not the goodput of a config served on GPUs "
                   f"({offer}, {precision}): it is more than 0 tokens/s")


CENT = 0.01
"""How far a total may be from the sum of its parts: a cent (each part is written rounded to 6 decimals, so a
sum of a thousand parts is off by less than a thousandth of a cent)."""


def _off(total: float, parts: float) -> bool:
    return abs(total - parts) > CENT + 1e-9 * max(abs(total), abs(parts))


def _money(x: float) -> str:
    return f"{x:,.2f}" if abs(x) >= 0.01 or x == 0 else f"{x:g}"


def _consistency_errors(result: PlanResult, d: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(key path, what) for each number the file derives that disagrees with the parts it is derived from: the
    cost against its tiers (or the risk measure over the scenarios), the workloads' costs with the idle line,
    each workload's cost against its tiers, per_day and all_in, the status against the cost, and the days of the
    day types against the horizon (per scenario, by its weight). Both numbers are named: the file was edited, or
    is not what `planopt solve` wrote."""
    cost = d.get("cost", {})
    tiers = sum(result.cost_by_tier.values())
    if result.status in ("infeasible", "error"):
        if result.cost_total > CENT or result.purchases:
            spent = f"cost.total {_money(result.cost_total)}" if result.cost_total > CENT else \
                f"{len(result.purchases)} purchases"
            yield "status", (f"'{result.status}' with {spent}: a result with no plan has no cost and buys nothing "
                             "(the status or the cost was edited)")
    if result.risk is None:
        if _off(result.cost_total, tiers):
            yield "cost.total", (f"{_money(result.cost_total)} is not the sum of cost.by_tier "
                                 f"({_money(tiers)}): the total is its tiers added up")
    else:
        if _off(result.cost_total, result.risk.value):
            yield "cost.total", (f"{_money(result.cost_total)} is not risk.value ({_money(result.risk.value)}): a "
                                 "plan with scenarios costs its risk measure over them")
        if _off(result.risk.expected, tiers):
            yield "risk.expected", (f"{_money(result.risk.expected)} is not the sum of cost.by_tier "
                                    f"({_money(tiers)}): the tiers hold the expected cost over the scenarios")
        if result.scenarios:
            weighted = sum(s.weight * s.cost_total for s in result.scenarios)
            if _off(result.risk.expected, weighted):
                yield "risk.expected", (f"{_money(result.risk.expected)} is not Σ weight × cost_total over "
                                        f"scenarios ({_money(weighted)})")
    if "idle" in cost:  # written with the idle line: the workloads' costs and it add up to the tiers
        used = sum(w.cost for w in result.workloads) + result.cost_idle
        if _off(used, tiers):
            yield "cost.idle", (f"the workloads' costs and cost.idle add up to {_money(used)}, not the sum of "
                                f"cost.by_tier ({_money(tiers)})")
    if "idle_committed" in cost:
        used = sum(w.committed_cost for w in result.workloads) + result.cost_idle_committed
        if _off(used, result.cost_committed):
            yield "cost.idle_committed", (f"the workloads' committed_cost and cost.idle_committed add up to "
                                          f"{_money(used)}, not cost.committed ({_money(result.cost_committed)})")
    for i, w in enumerate(result.workloads):
        if w.cost_by_tier and _off(w.cost, sum(w.cost_by_tier.values())):
            yield f"workloads[{i}].cost", (f"{_money(w.cost)} is not the sum of workloads[{i}].cost_by_tier "
                                           f"({_money(sum(w.cost_by_tier.values()))})")
    per_day = cost.get("per_day")
    if isinstance(per_day, (int, float)) and 1 <= result.horizon_days and _off(per_day, result.cost_per_day):
        yield "cost.per_day", (f"{_money(per_day)} is not cost.total ÷ horizon_days ({_money(result.cost_total)} ÷ "
                               f"{result.horizon_days} = {_money(result.cost_per_day)})")
    all_in = cost.get("all_in")
    if isinstance(all_in, (int, float)) and _off(all_in, result.cost_all_in):
        yield "cost.all_in", (f"{_money(all_in)} is not cost.total + cost.committed "
                              f"({_money(result.cost_all_in)})")
    if result.showback:
        booked = sum(r.cost + r.committed_cost for r in result.showback)
        want = showback_target(result)
        # each row is written to the micro-dollar: their sum may drift by a micro-dollar a row
        if abs(booked - want) > CENT + 1e-6 * len(result.showback) + 1e-9 * abs(booked):
            what = ("the book view (book.total: all-in + owned depreciation − cost of capital, policy.showback: "
                    "book)" if showback_basis(result) == "book" else "the all-in spend cost.total + cost.committed")
            yield "showback", f"the rows' cost + committed_cost add up to {_money(booked)}, not {what} ({_money(want)})"
    yield from _days_errors(result)


DAYS_TOLERANCE = 1e-6
"""Days of a scenario's day types are its weight × the horizon's days, written to 6 decimals."""


def _days_errors(result: PlanResult) -> Iterator[tuple[str, str]]:
    """The day types' days add up to the horizon; in a plan with scenarios (day type `weekday~high`), each
    scenario's add up to its weight × the horizon."""
    H = result.horizon_days
    if not result.day_types or not 1 <= H <= MAX_HORIZON_DAYS:
        return
    total = sum(result.day_types.values())
    slack = DAYS_TOLERANCE * max(1, len(result.day_types)) * H
    if abs(total - H) > slack:
        yield "day_types", (f"add up to {total:g} days, not horizon_days {H}: each day of the horizon is one "
                            "day type's")
    weights = {s.name: s.weight for s in result.scenarios}
    if not weights:
        return
    days: dict[str, float] = {}
    for name, n in result.day_types.items():
        base, sep, scenario = name.rpartition("~")
        if sep:
            days[scenario] = days.get(scenario, 0.0) + n
    for name, n in days.items():
        if name in weights and abs(n - weights[name] * H) > slack:
            yield "day_types", (f"scenario '{name}' has {n:g} days, not its weight × horizon_days "
                                f"({weights[name]:g} × {H} = {weights[name] * H:g})")


def _hours(result: PlanResult, path: str, day_type: str, hours: int) -> Iterator[tuple[str, str]]:
    if day_type not in result.day_types:
        yield path, f"'{day_type}' is not one of the result's day_types"
    if hours != 24:
        yield path, f"{hours} values, not 24 (one an hour)"


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])|M[1-9]\d*")


def date_error(value: str | None, path: str, *, empty: bool = False) -> str | None:
    """`path: … is not a date (YYYY-MM-DD)` unless `value` is a day on the calendar (or None / "" where allowed)."""
    if value is None or (empty and value == ""):
        return None
    where = f"{path}: " if path else ""
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            pass
        else:
            if FIRST_DATE <= day <= LAST_DATE:
                return None
            return (f"{where}{_shown(value)} is out of range (planopt plans from {FIRST_DATE.isoformat()} to "
                    f"{LAST_DATE.isoformat()})")
    return f"{where}{_shown(value)} is not a date (YYYY-MM-DD, a day on the calendar)"


def _calendar_errors(result: PlanResult) -> Iterator[tuple[str, str]]:
    """Dates and months: the start, every contract's days, quarters, periods and deliveries; cash-flow months."""
    dates: list[tuple[str | None, str, bool]] = [(result.start_date, "start_date", False)]
    for key, rows, names in (("commitments", result.commitments, ("start", "end")),
                             ("new_commitments", result.new_commitments, ("start", "end")),
                             ("expiry", result.expiry, ("first_day", "last_day")),
                             ("periods", result.periods, ("start", "end")),
                             ("own.bought", result.own.bought if result.own else [], ("order_date", "delivery_date")),
                             ("carried.carried", result.carried.carried if result.carried else [], ("start", "end")),
                             ("carried.skipped", result.carried.skipped if result.carried else [], ("start", "end"))):
        for i, row in enumerate(rows):
            dates += [(getattr(row, n), f"{key}[{i}].{n}", key.startswith("carried")) for n in names]
    for value, path, empty in dates:
        wrong = date_error(value, "", empty=empty)
        if wrong:
            yield path, wrong
    for key, months in (("cash_flow", result.cash_flow), ("commitment_schedule", result.commitment_schedule)):
        for i, r in enumerate(months):
            if not _MONTH.fullmatch(r.month):
                yield (f"{key}[{i}].month",
                       f"{_shown(r.month)} is not a month (YYYY-MM, or M1, M2, … without a start_date)")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not dataclasses.is_dataclass(value) else "an object"
    return text if len(text) <= 40 else text[:37] + "..."
