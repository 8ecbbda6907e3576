"""NEXT.yaml as text: the input plan round-tripped (comments, order and style kept, as `calibrate` does),
re-dated for the forecast months, with each forecast workload's peak, monthly peaks and hourly profile,
and demand scenarios from the forecast's quantiles."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from optimizer.calibrate.rewrite import (
    _eol,
    _flow,
    _fmt,
    _num,
    _pop_tail,
    _profile_map,
    _push_tail,
    _tidy,
    _yaml,
    out_dir_catalogs,
)
from optimizer.calibrate.types import sig
from optimizer.inputs.schema.plan import BUSINESS_KEYS

if TYPE_CHECKING:
    from optimizer.inputs.loading import LoadedPlan


def write_plan(loaded: "LoadedPlan", fc: Any, out_path: Path) -> str:
    """The plan's text with the forecast (a calibrate.forecast.Forecast) put in."""
    text = loaded.doc.path.read_bytes().decode("utf-8-sig")
    y = _yaml(text)
    tree = y.load(text)
    plan = loaded.plan
    first, last = fc.months[0][0], fc.months[-1][0]
    span = first if first == last else f"{first} to {last}"
    tree["horizon_days"] = fc.horizon_days
    _eol(tree, "horizon_days", f"forecast: {span}", keep_user=False)
    if "start_date" in tree:
        tree["start_date"] = fc.start
    else:
        tree.insert(list(tree).index("horizon_days") + 1, "start_date", fc.start)
    if fc.day_types is not None and isinstance(tree.get("day_types"), dict):
        node = tree["day_types"]
        for k, days in fc.day_types.items():
            if isinstance(node.get(k), dict):
                node[k]["days"] = days
            elif k in node:
                node[k] = days
        _eol(tree, "day_types", f"counted on the calendar of {span}")
    by_name = {w.name: w for w in fc.workloads}
    period = f"{fc.period[0]} to {fc.period[1]}" if fc.period else ""
    for i, w in enumerate(plan.workloads):
        if w.name in by_name:
            node = tree["workloads"][i]
            tail = _pop_tail(node)
            _demand(node["demand"], w, by_name[w.name], list(plan.day_type_days()), period)
            _push_tail(node, tail)
    if fc.scenarios:
        if plan.scenarios:
            fc.notes.append(f"the plan's {len(plan.scenarios)} scenarios are replaced by the forecast's "
                            f"{len(fc.scenarios)} (--scenarios 0 keeps them)")
        seq = CommentedSeq()
        for s in fc.scenarios:
            entry = CommentedMap([("name", s.name), ("weight", _num(s.weight)),
                                  ("demand", _flow_map({k: _num(v) for k, v in s.demand.items()}))])
            entry.fa.set_flow_style()
            seq.append(entry)
        if "scenarios" in tree:
            tree["scenarios"] = seq
        else:
            keys = list(tree)
            at = next((keys.index(k) for k in ("policy", "models", "accelerators", "offers", "workloads")
                       if k in keys), len(keys))
            tree.insert(at, "scenarios", seq)
        _eol(tree, "scenarios", "forecast: each workload's busiest month at a quantile ÷ its P50, weighted by "
                                "the probability the quantile stands for")
    if "catalogs" in tree and isinstance(tree["catalogs"], list):
        new = out_dir_catalogs([str(c) for c in tree["catalogs"]], loaded.doc.path.parent, out_path.parent)
        for j, (a, b) in enumerate(zip(list(tree["catalogs"]), new)):
            if str(a) != b:
                tree["catalogs"][j] = b
    buf = io.StringIO()
    y.dump(tree, buf)
    return _tidy(buf.getvalue())


def _demand(demand: CommentedMap, w, wf: Any, types: list[str], period: str) -> None:
    if demand.fa.flow_style():
        demand.fa.set_block_style()  # monthly peaks with their bands and a profile per day type
    business = [k for k in BUSINESS_KEYS if k in demand]
    at = list(demand).index(business[0]) if business else None
    for k in business:
        del demand[k]
    peak = _num(sig(wf.peak))
    if at is not None:
        demand.insert(at, "peak_output_tokens_per_s", peak)
    else:
        demand["peak_output_tokens_per_s"] = peak
    top = max(wf.months, key=lambda m: m.p50)
    _eol(demand, "peak_output_tokens_per_s",
         f"forecast: P50 of the busiest hour of {top.month} (P10 {_fmt(sig(top.p10))}, P90 {_fmt(sig(top.p90))}); "
         f"usage {period}" + (f"; replaces the business numbers (peak {_fmt(w.demand.peak_output_tokens_per_s)})"
                              if business else ""))
    months = CommentedMap()
    for m in wf.months:
        months[m.month] = _num(sig(m.p50))
    for m in wf.months:
        _eol(months, m.month, f"P10 {_fmt(sig(m.p10))}, P90 {_fmt(sig(m.p90))}")
    if "peak_by_month" in demand:
        demand["peak_by_month"] = months
    else:
        demand.insert(list(demand).index("peak_output_tokens_per_s") + 1, "peak_by_month", months)
    single = len(types) == 1 and not isinstance(w.demand.profile, dict)
    value: Any = _flow(wf.profile[types[0]]) if single else _profile_map(demand.get("profile"), wf.profile)
    demand["profile"] = value
    _eol(demand, "profile", "forecast: the fitted daily and weekly shape, ÷ the busiest hour")


def _flow_map(d: dict) -> CommentedMap:
    out = CommentedMap(d)
    out.fa.set_flow_style()
    return out
