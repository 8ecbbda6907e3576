"""PlanResult ⇄ JSON: the `--json` contract (docs/design.md, "Contracts") plus the detail reports need,
and the one reader of a saved result (it checks the format version)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from optimizer.candidates.types import Dropped
from optimizer.errors import PlanError, Problem
from optimizer.inputs.demand import PeakDerivation
from optimizer.inputs.schema.plan import FIRST_DATE, LAST_DATE, MAX_HORIZON_DAYS
from optimizer.optimize.solution import SolveInfo, Status
from optimizer.results.cashflow import pnl_and_cash
from optimizer.results.contracts import (
    CarriedContract,
    CarryInfo,
    ContractRow,
    ExpiryRow,
    NewReservation,
    PeriodRow,
)
from optimizer.results.types import (
    AlternativeRow,
    BaselineChange,
    BaselineInfo,
    Binding,
    BoughtRow,
    BreakEvenRow,
    CandidateRow,
    CashFlowRow,
    FacilityUse,
    HourlySupply,
    OwnedRow,
    OwnInputRow,
    OwnResult,
    PlanResult,
    Purchase,
    ReplicaCount,
    RiskInfo,
    ScenarioRow,
    ScheduleRow,
    WorkloadResult,
)
from optimizer.vocab import TIERS

FORMAT_VERSION = 1
STATUSES = typing.get_args(Status)
"""What `status` can say: what a solve ends in."""


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
            "cost": _r(p.cost), "gpus_per_node": p.gpus_per_node,
        } for p in result.purchases],
        "solver": {
            "name": result.solver.name, "seconds": round(result.solver.seconds, 3),
            "gap": None if result.solver.gap is None else _r(result.solver.gap, 9),
            "status": result.solver.status,
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
        "file": result.file,
        "format": FORMAT_VERSION,
        **_commitments(result),
    }


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


def _own_from(d: dict[str, Any] | None) -> OwnResult | None:
    if d is None:
        return None
    return OwnResult([BoughtRow(**b) for b in d.get("bought", [])], [OwnedRow(**r) for r in d.get("owned", [])],
                     [BreakEvenRow(**b) for b in d.get("break_even", [])], FacilityUse(**d["facility"]),
                     d.get("capex", 0.0), d.get("opex", 0.0), d.get("sunk_depreciation", 0.0),
                     [OwnInputRow(**x) for x in d.get("inputs", [])])  # absent in files written before they were kept


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
    if result.periods:
        out["periods"] = [_rounded(asdict(p)) for p in result.periods]
    out["cash_flow"] = [_rounded(asdict(r)) for r in result.cash_flow]
    out["cash_by_month"] = [_rounded(asdict(r)) for r in pnl_and_cash(result.cash_flow, result.own)]
    out["commitment_schedule"] = [_rounded(asdict(r)) for r in result.commitment_schedule]
    if result.baseline is not None:
        out["baseline"] = baseline_to_dict(result.baseline)
    if result.own is not None:
        out["own"] = _own(result.own)
    if result.risk is not None:
        out["scenarios"] = [_rounded(asdict(r)) for r in result.scenarios]
        out["risk"] = _rounded(asdict(result.risk))
    if result.carried is not None:
        c = result.carried
        out["carried"] = {"file": c.file, "plan": c.plan, "carried": [_rounded(asdict(x)) for x in c.carried],
                          "skipped": [_rounded(asdict(x)) for x in c.skipped], "notes": c.notes}
    return out


def _new_reservation(n: dict[str, Any], end_is_last_day: bool) -> NewReservation:
    """A new reservation as saved; files written before `end_is_last_day` held the day after its term as `end`."""
    if not end_is_last_day:
        n = dict(n)
        if n.get("end"):
            last = (dt.date.fromisoformat(n["end"]) - dt.timedelta(days=1)).isoformat()
            if n.get("end_text") == n["end"]:
                n["end_text"] = last
            n["end"] = last
        elif str(n.get("end_text", "")).startswith("start + ") and n.get("term_days"):
            n["end_text"] = f"after {n['term_days']:,} days"
    return NewReservation(**n)


def _carried(d: dict[str, Any] | None) -> CarryInfo | None:
    if not d:
        return None
    return CarryInfo(d.get("file", ""), d.get("plan", ""), [CarriedContract(**x) for x in d.get("carried", [])],
                     [CarriedContract(**x) for x in d.get("skipped", [])], list(d.get("notes", [])))


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
        "kv_copies": w.kv_copies, "calibrated": w.calibrated,
        "ttft_at_load_ms": None if w.ttft_at_load_ms is None else _r(w.ttft_at_load_ms, 3),
        "hourly_gpus": w.hourly_gpus, "hourly_replicas": w.hourly_replicas,
        "hourly_demand": {d: [_r(v, 3) for v in row] for d, row in w.hourly_demand.items()},
        "hourly_api_tokens_per_s": {d: [_r(v, 3) for v in row] for d, row in w.hourly_api_tokens_per_s.items()},
    }


def derivation_json(d: PeakDerivation | None) -> dict[str, Any] | None:
    """The business numbers behind a derived peak, the peak, and the arithmetic as text."""
    if d is None:
        return None
    return {**asdict(d), "output_tokens_per_s": d.peak_output_tokens_per_s, "text": d.text()}


def _derivation(d: dict[str, Any] | None) -> PeakDerivation | None:
    if not d:
        return None
    return PeakDerivation(**{k: v for k, v in d.items() if k in PeakDerivation.__dataclass_fields__})


def dumps(result: PlanResult, *, stable: bool = False) -> str:
    """JSON text; `stable` zeroes solver.seconds so two solves compare byte for byte."""
    d = to_dict(result)
    if stable:
        d["solver"]["seconds"] = 0.0
    return json.dumps(d, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def from_dict(d: dict[str, Any]) -> PlanResult:
    """Rebuild a PlanResult from saved JSON (for `planopt report` and `compare`)."""
    s = d["solver"]
    workloads = []
    for w in d["workloads"]:
        workloads.append(WorkloadResult(
            name=w["name"], pool=w["pool"], kind=w.get("kind", "interactive"), model=w.get("model"),
            offer=w.get("offer"), accelerator=w.get("accelerator"), provider=w.get("provider"),
            precision=w.get("precision"), tp=w.get("tp", 0), mig=w.get("mig"),
            gpus_per_replica=w.get("gpus_per_replica", 0.0),
            goodput_output_tokens_per_s=w.get("goodput_output_tokens_per_s", 0.0),
            goodput_source=w.get("goodput_source", ""), bound=w.get("bound"), weights_gb=w.get("weights_gb", 0.0),
            kv_gb_per_seq=w.get("kv_gb_per_seq", 0.0), kv_concurrency=w.get("kv_concurrency", 0),
            needed_concurrency=w.get("needed_concurrency", 0), total_gb=w.get("total_gb", 0.0),
            reserve_gb=w.get("reserve_gb", 0.0), free_gb=w.get("free_gb", 0.0),
            peak_day_type=w.get("peak", {}).get("day_type", ""), peak_hour=w.get("peak", {}).get("hour", 0),
            peak_output_tokens_per_s=w.get("peak", {}).get("output_tokens_per_s", 0.0),
            replicas=ReplicaCount(**w["replicas"]), gpus_at_peak=w.get("gpus_at_peak", 0), cost=w.get("cost", 0.0),
            api_share=w.get("api_share", 0.0), api_cost=w.get("api_cost", 0.0), gpu_hours=w.get("gpu_hours", 0.0),
            candidates=w.get("candidates", 0), hourly_gpus=w.get("hourly_gpus", {}),
            hourly_replicas=w.get("hourly_replicas", {}), hourly_demand=w.get("hourly_demand", {}),
            hourly_api_tokens_per_s=w.get("hourly_api_tokens_per_s", {}), key=w.get("key", ""),
            family=w.get("family", "tp"), layout=w.get("layout"), pp=w.get("pp", 1), ep=w.get("ep", 1),
            kv_copies=w.get("kv_copies", 1.0), calibrated=w.get("calibrated", True),
            ttft_at_load_ms=w.get("ttft_at_load_ms"), committed_cost=w.get("committed_cost", 0.0),
            cost_by_tier=w.get("cost_by_tier", {}), gpu_hours_by_tier=w.get("gpu_hours_by_tier", {}),
            gpu_hours_by_day_type=w.get("gpu_hours_by_day_type", {}), team=w.get("team"),
            cost_center=w.get("cost_center"), tenants=w.get("tenants") or {},
            peak_derivation=_derivation(w.get("peak", {}).get("derived_from"))))
    purchases = [Purchase(p["offer"], p["accelerator"], p.get("provider", ""), p.get("region", ""), p["tier"],
                          p["gpus"], p["gpu_hours"], p.get("price_per_gpu_hour", 0.0), p.get("price_estimated", False),
                          p.get("cost", 0.0), p.get("gpus_per_node", 1)) for p in d["purchases"]]
    return PlanResult(
        plan=d["plan"], file=d.get("file", ""), status=d["status"], currency=d["currency"],
        horizon_days=d["horizon_days"], day_types=d.get("day_types", {"all": d["horizon_days"]}),
        policy=d.get("policy", {}), cost_total=d["cost"]["total"], cost_by_tier=d["cost"]["by_tier"],
        workloads=workloads, purchases=purchases, hourly=[HourlySupply(**h) for h in d.get("hourly", [])],
        candidates=[CandidateRow(**c) for c in d.get("candidates", [])],
        dropped=[Dropped(**x) for x in d.get("dropped", [])], binding=[Binding(**b) for b in d.get("binding", [])],
        solver=SolveInfo(s["name"], s.get("status", d["status"]), s["seconds"], s["gap"], None, None),
        offers=d.get("offers", {}), apis=d.get("apis", {}), pruned=d.get("pruned", 0), notes=d.get("notes", []),
        alternatives=[AlternativeRow(**a) for a in d.get("alternatives", [])],
        start_date=d.get("start_date"), cost_committed=d.get("cost", {}).get("committed", 0.0) or 0.0,
        commitments=[ContractRow(**c) for c in d.get("commitments", [])],
        new_commitments=[_new_reservation(n, bool(d.get("end_is_last_day"))) for n in d.get("new_commitments", [])],
        expiry=[ExpiryRow(**e) for e in d.get("expiry", [])], periods=[PeriodRow(**p) for p in d.get("periods", [])],
        baseline=baseline_from_dict(d.get("baseline")), cost_idle=d["cost"].get("idle", 0.0),
        cost_idle_by_tier=d["cost"].get("idle_by_tier", {}), cost_idle_committed=d["cost"].get("idle_committed", 0.0),
        carried=_carried(d.get("carried")), cash_flow=[CashFlowRow(**r) for r in d.get("cash_flow", [])],
        commitment_schedule=[ScheduleRow(**r) for r in d.get("commitment_schedule", [])],
        own=_own_from(d.get("own")), scenarios=[ScenarioRow(**r) for r in d.get("scenarios", [])],
        risk=RiskInfo(**d["risk"]) if d.get("risk") else None)


def baseline_to_dict(info: BaselineInfo) -> dict[str, Any]:
    return {"file": info.file, "change_threshold": info.change_threshold, "kept": info.kept,
            "changes": [{"workload": c.workload, "from": c.from_label, "to": c.to_label, "from_key": c.from_key,
                         "to_key": c.to_key, "cost_before": round(c.cost_before, 6),
                         "cost_after": round(c.cost_after, 6), "saving": round(c.saving, 6), "reason": c.reason}
                        for c in info.changes],
            "new": info.new, "notes": info.notes}


def baseline_from_dict(d: dict[str, Any] | None) -> BaselineInfo | None:
    if not d:
        return None
    return BaselineInfo(d.get("file", ""), float(d.get("change_threshold", 0.0)), list(d.get("kept", [])),
                        [BaselineChange(c["workload"], c.get("from_key", ""), c.get("to_key", ""), c.get("from", ""),
                                c.get("to", ""), c.get("cost_before", 0.0), c.get("cost_after", 0.0),
                                c.get("saving", 0.0), c.get("reason", "")) for c in d.get("changes", [])],
                        list(d.get("new", [])), list(d.get("notes", [])))


def read_result(path: Path | str, what: str = "result") -> PlanResult:
    """A result JSON that `planopt solve` wrote, as a PlanResult; PlanError (exit 2) when it is not one.

    The one reader of saved results (`planopt report`, `compare`, `--baseline`, `calibrate --result`):
    it refuses a file written by a newer planopt instead of misreading it.
    """
    path = Path(path)
    shown = str(path)
    fix = "give the JSON that `planopt solve PLAN -o DIR` wrote (DIR/<plan>.json)"
    if not path.is_file():
        raise PlanError(Problem(f"{what} file not found" if not path.exists() else f"the {what} is not a file "
                                "(a folder or a device)", fix, file=shown))
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"), parse_constant=_NonFinite, parse_float=_finite)
    except UnicodeDecodeError:
        raise PlanError(Problem(f"the {what} is not UTF-8 text", fix, file=shown)) from None
    except OSError as exc:
        raise PlanError(Problem(f"cannot read the {what}: {exc.strerror or exc}", fix, file=shown)) from None
    except json.JSONDecodeError as exc:
        if path.suffix.lower() in (".yaml", ".yml"):  # the plan itself, given where its result goes
            raise PlanError(Problem(f"a plan, not a {what}: the {what} is the JSON `planopt solve` writes",
                                    f"solve it first (planopt solve {path} -o DIR), then give DIR/<plan>.json",
                                    file=shown)) from None
        raise PlanError(Problem(f"not JSON: {exc.msg}", fix, file=shown, line=exc.lineno)) from None
    if not isinstance(data, dict) or "plan" not in data or "workloads" not in data:
        raise PlanError(Problem("not a planopt result JSON (no 'plan' and 'workloads')", fix, file=shown))
    found = _non_finite(data, "")
    if found is not None:
        raise PlanError(Problem(f"{found[0]}: {found[1]} is not a finite number "
                                "(a result holds no NaN or Infinity)",
                                "give the file as `planopt solve` wrote it, or solve the plan again", file=shown))
    version = data.get("format", FORMAT_VERSION)
    if isinstance(version, float) and version.is_integer():
        version = int(version)  # 1.0 is format 1
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise PlanError(Problem(f"format: {_shown(version)} is not a result format (a whole number, 1 or more)",
                                f"this planopt writes format {FORMAT_VERSION}: give the file as `planopt solve` "
                                "wrote it, or solve the plan again", file=shown))
    if version > FORMAT_VERSION:
        raise PlanError(Problem(f"result format {version} is newer than this planopt reads ({FORMAT_VERSION})",
                                "upgrade planopt, or solve the plan again", file=shown))
    wrong = shape_error(data)
    if wrong is not None:
        raise PlanError(Problem(wrong, "give the file as `planopt solve` wrote it, or solve the plan again",
                                file=shown))
    try:
        result = from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlanError(Problem(f"not a planopt result JSON ({type(exc).__name__}: {exc})", fix, file=shown)) from None
    wrong = type_error(result, PlanResult, "") or _consistency_error(result)
    if wrong is not None:
        raise PlanError(Problem(wrong, "give the file as `planopt solve` wrote it, or solve the plan again",
                                file=shown))
    return result


class _NonFinite(str):
    """NaN, Infinity or -Infinity in a result file (or a number too large for a float), kept as its text
    so the reader can name its key: `json.dumps` never writes one (allow_nan=False)."""


def _finite(text: str) -> float | _NonFinite:
    v = float(text)
    return v if math.isfinite(v) else _NonFinite(text)


def _non_finite(value: Any, path: str) -> tuple[str, _NonFinite] | None:
    """The key path and text of the first NaN or Infinity in parsed JSON, or None."""
    if isinstance(value, _NonFinite):
        return path or "the result", value
    if isinstance(value, dict):
        items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for p, v in items:
        found = _non_finite(v, p)
        if found is not None:
            return found
    return None


_ROWS: dict[str, type] = {
    "hourly": HourlySupply, "candidates": CandidateRow, "dropped": Dropped, "binding": Binding,
    "alternatives": AlternativeRow, "commitments": ContractRow, "new_commitments": NewReservation,
    "expiry": ExpiryRow, "periods": PeriodRow, "cash_flow": CashFlowRow, "commitment_schedule": ScheduleRow,
    "scenarios": ScenarioRow}
"""Lists of a result whose rows are rebuilt field for field (`Row(**row)`)."""
_OWN_ROWS: dict[str, type] = {"bought": BoughtRow, "owned": OwnedRow, "break_even": BreakEvenRow,
                              "inputs": OwnInputRow}
_REQUIRED = {"": ("plan", "status", "currency", "horizon_days", "cost", "workloads", "purchases", "solver"),
             "cost": ("total", "by_tier"), "solver": ("name", "seconds", "gap"),
             "workloads[]": ("name", "pool", "replicas"),
             "purchases[]": ("offer", "accelerator", "tier", "gpus", "gpu_hours")}
"""Keys `from_dict` cannot do without (the rest have defaults, for files written before they were kept)."""


def shape_error(d: dict[str, Any]) -> str | None:
    """What in a parsed result `from_dict` could not rebuild — a key it needs that is missing, a list that is not
    a list, an object that is not an object, a key no row has — as `path: what`, or None.

    Types of the values themselves are checked on the rebuilt result (`type_error`), meanings after that
    (`_consistency_error`)."""
    return (_keys(d, "", _REQUIRED[""])
            or _objects(d, "", ("cost", "solver", "day_types", "policy", "offers", "apis"), nullable=False)
            or _keys(d["cost"], "cost", _REQUIRED["cost"])
            or _objects(d["cost"], "cost", ("by_tier", "idle_by_tier"), nullable=False)
            or _keys(d["solver"], "solver", _REQUIRED["solver"])
            or _list_of(d, "", "workloads", _workload_shape)
            or _list_of(d, "", "purchases", lambda p, path: _keys(p, path, _REQUIRED["purchases[]"]))
            or next((e for k, cls in _ROWS.items() if (e := _list_of(d, "", k, _row(cls)))), None)
            or _list_of(d, "", "notes", None)
            or _own_shape(d.get("own"))
            or _carried_shape(d.get("carried"))
            or _baseline_shape(d.get("baseline"))
            or (_row(RiskInfo)(d["risk"], "risk") if d.get("risk") else None)
            or (None if d.get("end_is_last_day") else  # files before it: each end is read as a date now
                next((e for i, n in enumerate(d.get("new_commitments", []))
                      if n.get("end") and (e := date_error(n["end"], f"new_commitments[{i}].end"))), None)))


def _keys(d: dict[str, Any], path: str, required: tuple[str, ...]) -> str | None:
    missing = next((k for k in required if k not in d), None)
    return None if missing is None else f"{_join(path, missing)}: missing"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _objects(d: dict[str, Any], path: str, keys: tuple[str, ...], *, nullable: bool = True) -> str | None:
    for k in keys:
        if k in d and not isinstance(d[k], dict) and not (nullable and d[k] is None):
            return f"{_join(path, k)}: {_shown(d[k])} is not an object"
    return None


def _list_of(d: dict[str, Any], path: str, key: str, item: Callable[[Any, str], str | None] | None) -> str | None:
    """d[key], when present, is a list; each item an object that `item` finds nothing wrong with."""
    if key not in d:
        return None
    rows, where = d[key], _join(path, key)
    if not isinstance(rows, list):
        return f"{where}: {_shown(rows)} is not a list"
    if item is None:
        return None
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"{where}[{i}]: {_shown(row)} is not an object"
        wrong = item(row, f"{where}[{i}]")
        if wrong:
            return wrong
    return None


def _row(cls: type) -> Callable[[Any, str], str | None]:
    """A row rebuilt as `cls(**row)`: every field without a default present, no key that is not a field."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    required = tuple(n for n, f in fields.items()
                     if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)

    def check(row: Any, path: str) -> str | None:
        if not isinstance(row, dict):
            return f"{path}: {_shown(row)} is not an object"
        unknown = next((k for k in row if k not in fields), None)
        if unknown is not None:
            return f"{_join(path, unknown)}: is not a key of {path} (planopt writes {', '.join(fields)})"
        return _keys(row, path, required)
    return check


def _workload_shape(w: dict[str, Any], path: str) -> str | None:
    wrong = _keys(w, path, _REQUIRED["workloads[]"]) or _row(ReplicaCount)(w["replicas"], f"{path}.replicas") \
        or _objects(w, path, ("peak", "hourly_gpus", "hourly_replicas", "hourly_demand", "hourly_api_tokens_per_s",
                              "cost_by_tier", "gpu_hours_by_tier"), nullable=False) \
        or _objects(w, path, ("tenants",))
    if wrong or "peak" not in w:
        return wrong
    derived = w["peak"].get("derived_from")
    if not derived:
        return None
    if not isinstance(derived, dict):
        return f"{path}.peak.derived_from: {_shown(derived)} is not an object"
    return _keys(derived, f"{path}.peak.derived_from",
                 tuple(f.name for f in dataclasses.fields(PeakDerivation) if f.default is dataclasses.MISSING))


def _own_shape(own: Any) -> str | None:
    if own is None:
        return None
    if not isinstance(own, dict):
        return f"own: {_shown(own)} is not an object"
    return (_keys(own, "own", ("facility",)) or _row(FacilityUse)(own["facility"], "own.facility")
            or next((e for k, cls in _OWN_ROWS.items() if (e := _list_of(own, "own", k, _row(cls)))), None))


def _carried_shape(carried: Any) -> str | None:
    if not carried:
        return None
    if not isinstance(carried, dict):
        return f"carried: {_shown(carried)} is not an object"
    return (_list_of(carried, "carried", "carried", _row(CarriedContract))
            or _list_of(carried, "carried", "skipped", _row(CarriedContract))
            or _list_of(carried, "carried", "notes", None))


def _baseline_shape(baseline: Any) -> str | None:
    if not baseline:
        return None
    if not isinstance(baseline, dict):
        return f"baseline: {_shown(baseline)} is not an object"
    return (_list_of(baseline, "baseline", "changes", lambda c, path: _keys(c, path, ("workload",)))
            or next((e for k in ("kept", "new", "notes") if (e := _list_of(baseline, "baseline", k, None))), None))


_OFFER_SHAPE = {"provider": str, "region": str, "accelerator": str, "gpus_per_node": float,
                "prices": dict[str, float], "estimated": dict[str, bool], "available_gpus": dict[str, Any],
                "spot_interruption": float}
_POLICY_SHAPE = {"occupancy": float, "memory_reserve": float, "spares": float, "rollout_fraction": float,
                 "mip_gap": float, "change_threshold": float, "time_limit_s": float, "tiers": list[str]}
"""The parts of a result's free-form `offers` and `policy` that the reports read, by type."""


def _consistency_error(result: PlanResult) -> str | None:
    """What types cannot say: a status planopt writes, a horizon of days, day types and tiers that the rows name,
    workloads named once, 24 hours to a day, dates and months that are on the calendar, and the shape of the
    offers and policy the reports read."""
    if result.status not in STATUSES:
        return f"status: {_shown(result.status)} is not a status planopt writes ({', '.join(STATUSES)})"
    if not 1 <= result.horizon_days <= MAX_HORIZON_DAYS:
        return f"horizon_days: {result.horizon_days} is not a horizon (1 to {MAX_HORIZON_DAYS:,} days)"
    if not result.day_types:
        return "day_types: is empty (every result has at least one day type)"
    for name, days in result.day_types.items():
        if not 0 <= days <= result.horizon_days:
            return f"day_types.{name}: {_shown(days)} is not a count of days (0 to horizon_days, {result.horizon_days})"
    seen: dict[str, int] = {}
    for i, w in enumerate(result.workloads):
        if w.name in seen:
            return f"workloads[{i}].name: '{w.name}' is workloads[{seen[w.name]}]'s name too (each workload once)"
        seen[w.name] = i
        for key in ("hourly_gpus", "hourly_replicas", "hourly_demand", "hourly_api_tokens_per_s"):
            for day_type, row in getattr(w, key).items():
                where = f"workloads[{i}].{key}.{day_type}"
                if day_type not in result.day_types:
                    return f"{where}: '{day_type}' is not one of the result's day_types"
                if len(row) != 24:
                    return f"{where}: {len(row)} values, not 24 (one an hour)"
    wrong = _calendar_error(result)
    if wrong:
        return wrong
    for k, v in result.policy.items():
        if k in _POLICY_SHAPE:
            wrong = type_error(v, _POLICY_SHAPE[k], f"policy.{k}")
            if wrong:
                return wrong
    occupancy = result.policy.get("occupancy", 1.0)
    if not 0 < occupancy <= 1:
        return f"policy.occupancy: {occupancy} is not a share in (0, 1]"
    for oid, offer in result.offers.items():
        if not isinstance(offer, dict):
            return f"offers.{oid}: {_shown(offer)} is not an object"
        for k, v in offer.items():
            if k in _OFFER_SHAPE:
                wrong = type_error(v, _OFFER_SHAPE[k], f"offers.{oid}.{k}")
                if wrong:
                    return wrong
    for i, h in enumerate(result.hourly):
        if h.day_type not in result.day_types:
            return f"hourly[{i}].day_type: '{h.day_type}' is not one of the result's day_types"
        if not 0 <= h.hour <= 23:
            return f"hourly[{i}].hour: {_shown(h.hour)} is not an hour of the day (0 to 23)"
    if result.own is not None:
        if len(result.own.facility.tariff) not in (0, 24):
            return f"own.facility.tariff: {len(result.own.facility.tariff)} values, not 24 (one an hour)"
        for i, row in enumerate(result.own.inputs):
            if len(row.served_gpu_hours_by_hour) != 24:
                return (f"own.inputs[{i}].served_gpu_hours_by_hour: {len(row.served_gpu_hours_by_hour)} values, "
                        "not 24 (one an hour)")
    for i, p in enumerate(result.purchases):
        if p.tier not in TIERS:
            return f"purchases[{i}].tier: '{p.tier}' is not a tier ({', '.join(TIERS)})"
    return _amount_error(result)


NEGATIVE_COST_TOLERANCE = 0.01
"""A cost above minus one cent reads: a share computed as a difference may round to −0.000001."""


def _amount_error(result: PlanResult) -> str | None:
    """Costs that are sums of GPU-hours at prices (never negative), and the goodput of a config served on GPUs
    (more than 0 tokens/s: the replicas are sized by dividing by it). An API or reserve_gpus workload has no
    goodput: its 0 is what planopt writes."""
    costs = [("cost.total", result.cost_total)]
    costs += [(f"cost.by_tier.{t}", v) for t, v in result.cost_by_tier.items()]
    costs += [(f"workloads[{i}].cost", w.cost) for i, w in enumerate(result.workloads)]
    costs += [(f"purchases[{i}].cost", p.cost) for i, p in enumerate(result.purchases)]
    for path, v in costs:
        if v < -NEGATIVE_COST_TOLERANCE:
            return f"{path}: {_shown(v)} is negative (a cost is GPU-hours at prices, 0 or more)"
    rows = [(f"workloads[{i}]", w.offer, w.precision, w.goodput_output_tokens_per_s)
            for i, w in enumerate(result.workloads)]
    rows += [(f"candidates[{i}]", c.offer, c.precision, c.goodput_output_tokens_per_s)
             for i, c in enumerate(result.candidates)]
    for path, offer, precision, goodput in rows:
        if goodput < 0:
            return f"{path}.goodput_output_tokens_per_s: {_shown(goodput)} is negative (a goodput is tokens/s, 0 or more)"
        if goodput == 0 and offer is not None and precision is not None:
            return (f"{path}.goodput_output_tokens_per_s: 0 is not the goodput of a config served on GPUs ({offer}, "
                    f"{precision}): it is more than 0 tokens/s")
    return None


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])|M[1-9]\d*")


def date_error(value: str | None, path: str, *, empty: bool = False) -> str | None:
    """`path: … is not a date (YYYY-MM-DD)` unless `value` is a day on the calendar (or None / "" where allowed)."""
    if value is None or (empty and value == ""):
        return None
    if isinstance(value, str) and _ISO_DATE.fullmatch(value):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            pass
        else:
            if FIRST_DATE <= day <= LAST_DATE:
                return None
            return (f"{path}: {_shown(value)} is out of range (planopt plans from {FIRST_DATE.isoformat()} to "
                    f"{LAST_DATE.isoformat()})")
    return f"{path}: {_shown(value)} is not a date (YYYY-MM-DD, a day on the calendar)"


def _calendar_error(result: PlanResult) -> str | None:
    """Dates and months: the start, every contract's days, quarters, periods and deliveries; cash-flow months."""
    dates: list[tuple[str | None, str]] = [(result.start_date, "start_date")]
    for i, c in enumerate(result.commitments):
        dates += [(c.start, f"commitments[{i}].start"), (c.end, f"commitments[{i}].end")]
    for i, n in enumerate(result.new_commitments):
        dates += [(n.start, f"new_commitments[{i}].start"), (n.end, f"new_commitments[{i}].end")]
    for i, e in enumerate(result.expiry):
        dates += [(e.first_day, f"expiry[{i}].first_day"), (e.last_day, f"expiry[{i}].last_day")]
    for i, p in enumerate(result.periods):
        dates += [(p.start, f"periods[{i}].start"), (p.end, f"periods[{i}].end")]
    if result.own is not None:
        for i, b in enumerate(result.own.bought):
            dates += [(b.order_date, f"own.bought[{i}].order_date"),
                      (b.delivery_date, f"own.bought[{i}].delivery_date")]
    wrong = next((e for v, path in dates if (e := date_error(v, path))), None)
    if wrong:
        return wrong
    if result.carried is not None:
        for key in ("carried", "skipped"):
            for i, c in enumerate(getattr(result.carried, key)):
                wrong = (date_error(c.start, f"carried.{key}[{i}].start", empty=True)
                         or date_error(c.end, f"carried.{key}[{i}].end", empty=True))
                if wrong:
                    return wrong
    for key, rows in (("cash_flow", result.cash_flow), ("commitment_schedule", result.commitment_schedule)):
        for i, r in enumerate(rows):
            if not _MONTH.fullmatch(r.month):
                return (f"{key}[{i}].month: {_shown(r.month)} is not a month (YYYY-MM, or M1, M2, … without a "
                        "start_date)")
    return None


_JSON_NAMES = {"cost_total": "cost.total", "cost_by_tier": "cost.by_tier", "cost_idle": "cost.idle",
               "cost_idle_by_tier": "cost.idle_by_tier", "cost_idle_committed": "cost.idle_committed",
               "cost_committed": "cost.committed", "peak_day_type": "peak.day_type", "peak_hour": "peak.hour",
               "peak_output_tokens_per_s": "peak.output_tokens_per_s", "peak_derivation": "peak.derived_from"}
"""Fields a saved result keeps under another key: an error names the key in the file."""

_WORDS = {float: "a number", int: "a number", str: "text", bool: "true or false"}
_COUNTS = {"gpus", "nodes", "total", "base", "spares", "rollout", "gpus_at_peak", "demand_gpus", "reserved_gpus",
           "on_demand_gpus", "spot_gpus", "committed_gpus", "kv_concurrency", "needed_concurrency", "hourly_gpus",
           "hourly_replicas", "candidates"}
"""Integer fields that count things: a negative one is refused when read."""


def type_error(value: Any, tp: Any, path: str) -> str | None:
    """The first value in a rebuilt result whose type is not its field's (`path: 'x' is not a number`), or None:
    a hand-edited file is refused when read, not halfway through a report."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return None
    if origin in (typing.Union, types.UnionType):
        errors = [type_error(value, arg, path) for arg in typing.get_args(tp)]
        return None if any(e is None for e in errors) else next(e for e in errors if e is not None)
    if tp is type(None):
        return None if value is None else f"{path or 'the result'}: {_shown(value)} is not null"
    if origin is typing.Literal:
        args = typing.get_args(tp)
        return None if value in args else f"{path}: {_shown(value)} is not one of {', '.join(map(repr, args))}"
    if tp in _WORDS:
        ok = (isinstance(value, bool) if tp is bool else
              isinstance(value, str) if tp is str else
              isinstance(value, (int, float)) and not isinstance(value, bool))  # counts may be shares of days
        if ok and tp is int and value < 0 and re.sub(r"\[\d+\]$", "", path.rsplit(".", 1)[-1]) in _COUNTS:
            return f"{path}: {_shown(value)} is negative (a count of GPUs, nodes or replicas)"
        return None if ok else f"{path}: {_shown(value)} is not {_WORDS[tp]}"
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return f"{path}: {_shown(value)} is not a list"
        args = typing.get_args(tp)
        for i, item in enumerate(value):
            arg = args[0] if origin is list or (len(args) == 2 and args[1] is Ellipsis) else (
                args[i] if i < len(args) else Any)
            wrong = type_error(item, arg, f"{path}[{i}]")
            if wrong:
                return wrong
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return f"{path}: {_shown(value)} is not an object"
        key_tp, val_tp = typing.get_args(tp) or (Any, Any)
        for k, v in value.items():
            wrong = type_error(k, key_tp, f"{path} key") or type_error(v, val_tp, f"{path}.{k}")
            if wrong:
                return wrong
        return None
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, tp):
            return f"{path}: {_shown(value)} is not an object"
        hints = _hints(tp)
        for f in dataclasses.fields(tp):
            name = _JSON_NAMES.get(f.name, f.name)
            wrong = type_error(getattr(value, f.name), hints[f.name], f"{path}.{name}" if path else name)
            if wrong:
                return wrong
        return None
    return None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not dataclasses.is_dataclass(value) else "an object"
    return text if len(text) <= 40 else text[:37] + "..."
