"""A sweep as a console table and as one self-contained HTML page: the points' table (all-in first, then new
and committed spend, the reserved level and what to sign) and two tornado charts (all-in cost and the reserved
level: for each key the range between its lowest and highest value, widest first). Inline CSS and SVG; the
footer's time is SOURCE_DATE_EPOCH when set, and nothing that changes between runs (seconds, points read
back) is on the page, so the same points give the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator
from rich.table import Table

from optimizer import formatting
from optimizer.atomic import write_text_atomic
from optimizer.report.charts import RC, plain, to_svg
from optimizer.report.provenance import Provenance, provenance
from optimizer.resources import templates_dir
from optimizer.results.sweep import SweepPoint, TornadoBar, Vary, tornado

TEMPLATE = "sweep.html.j2"
HTML = "sweep.html"
LOW_COLOR, HIGH_COLOR, RANGE_COLOR = "#4e79a7", "#e15759", "#d9dee5"


def value_text(key: str, v: float | None) -> str:
    """A key's value as the table shows it: multipliers ×0.8, occupancy 60%, growth 5%."""
    if v is None:
        return "as planned"
    if key in ("occupancy", "growth"):
        return f"{v * 100:.4g}%"
    return f"×{v:.4g}"


def vary_text(p: SweepPoint, base: Vary) -> str:
    """What the point moves away from the plan ("the plan" when nothing), grid points: every key moved."""
    moved = [f"{k} {value_text(k, v)}" for k, v in p.vary.items() if base.get(k) != v]
    return ", ".join(moved) if moved else "the plan"


def _money(x: float | None, currency: str) -> str:
    return "–" if x is None else formatting.money(x, currency)


def _gpus(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def to_sign(p: SweepPoint) -> str:
    """The new commitments a point's plan would sign, one phrase each ("16 × coreweave-h200-sxm reserved-1y";
    a savings plan "$12.50/hour aws savings plan 1y"); "nothing" when none, "–" without a plan (or read back from
    an older sweep.jsonl)."""
    if p.new_commitments is None:
        return "–"
    phrases = [f"{n['gpus']:,} × {n['offer']} {n['tier']}" + (f" from {n['start']}" if n.get("start") else "")
               for n in p.new_commitments]
    phrases += [f"${n['usd_per_hour']:,.2f}/hour {n['provider']} savings plan {n['term']}"
                + (f" from {n['start']}" if n.get("start") else "") for n in p.new_spend_commitments or []]
    return "; ".join(phrases) if phrases else "nothing"


def sweep_table(points: Sequence[SweepPoint], base: Vary, currency: str) -> Table:
    """point, varies, status, all-in (new + committed), new spend, committed, reserved GPUs, what to sign:
    one row a point, in point order."""
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("point", justify="right")
    t.add_column("varies")
    t.add_column("status")
    t.add_column("all-in", justify="right")
    t.add_column("new spend", justify="right")
    t.add_column("committed", justify="right")
    t.add_column("reserved GPUs", justify="right")
    t.add_column("to sign (full term)")
    for i, p in enumerate(points, 1):
        sign = to_sign(p) + (f" ({_money(p.full_term, currency)})" if p.full_term else "")
        t.add_row(str(i), vary_text(p, base), p.status_text, _money(p.cost_all_in, currency),
                  _money(p.cost_total, currency), _money(p.cost_committed, currency), _gpus(p.reserved_gpus), sign)
    return t


def _change(x: float | None, base: float | None) -> str:
    """x against the plan's own value, as a percentage ("+8.7%"); "–" when either is missing or the base is 0."""
    if x is None or base is None or base == 0:
        return "–"
    pct = 100.0 * (x - base) / base
    return "0.0%" if abs(pct) < 0.05 else f"{pct:+.1f}%"


# --- tornado charts --------------------------------------------------------------------------------


def tornado_svg(bars: list[TornadoBar], base_value: float | None, xlabel: str, prefix: str,
                fmt=lambda x: f"{x:,.0f}", integer: bool = False) -> str:
    """Horizontal bars, widest on top: each key's range (grey), the move to its lowest value (blue) and
    to its highest (red) from the plan's value (the dashed line)."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(8.0, 0.9 + 0.42 * max(1, len(bars))), dpi=96)
        ax = fig.subplots()
        ys = list(range(len(bars)))[::-1]  # widest first, at the top
        for y, b in zip(ys, bars):
            ax.barh(y, b.width, left=b.lo, height=0.62, color=RANGE_COLOR)
            if base_value is not None:
                for at, color in ((b.at_low, LOW_COLOR), (b.at_high, HIGH_COLOR)):
                    lo, hi = sorted((base_value, at))
                    ax.barh(y, hi - lo, left=lo, height=0.42, color=color, alpha=0.85)
            span = max(b.width, 1e-9)
            ax.text(b.lo - 0.01 * span, y, f"{value_text(b.key, b.low_value)}", va="center", ha="right", fontsize=7,
                    color=LOW_COLOR)
            ax.text(b.hi + 0.01 * span, y, f"{value_text(b.key, b.high_value)}", va="center", ha="left", fontsize=7,
                    color=HIGH_COLOR)
        ax.set_yticks(ys, [plain(b.key) for b in bars])
        if base_value is not None:
            ax.axvline(base_value, color="#1d2733", linestyle="--", linewidth=1)
        lo = min([b.lo for b in bars] + ([base_value] if base_value is not None else []))
        hi = max([b.hi for b in bars] + ([base_value] if base_value is not None else []))
        pad = 0.12 * (hi - lo) if hi > lo else max(1.0, 0.05 * abs(hi))
        # costs and GPU counts are never below 0: no negative ticks, half a step of room left of 0 for a bar there
        left = max(lo - pad, -0.5) if lo >= 0 else lo - pad
        ax.set_xlim(left, hi + pad)
        ax.set_ylim(-0.7, len(bars) - 0.3)
        if integer:  # a count of GPUs: whole ticks only, never a fraction rounded to "-0" or twice to "1"
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: fmt(0.0 if abs(x) < 1e-9 else x)))
        ax.set_xlabel(plain(xlabel))
        ax.grid(axis="x", color="#e6e6e6", linewidth=0.6)
        ax.set_axisbelow(True)
        fig.tight_layout()
        return to_svg(fig, prefix)


def context(sweep: Any) -> dict[str, Any]:
    """The template's strings, from an optimizer.studies.sweep.Sweep (read duck-typed: report sits below it)."""
    cur = sweep.currency
    base_pt = next((p for p in sweep.points if p.vary == sweep.base and p.solved), None)
    charts = []
    for measure, title, xlabel, fmt in (
            ("cost_all_in", "All-in cost (new + committed)", f"all-in cost over the horizon ({cur})",
             lambda x: formatting.money(x, cur)),
            ("reserved_gpus", "Reserved level", "GPUs reserved or bought", lambda x: f"{x:,.0f}")):
        bars = tornado(sweep.points, sweep.base, measure)
        if bars:
            at_base = None if base_pt is None else getattr(base_pt, measure)
            base_value = None if at_base is None else float(at_base)
            charts.append({"title": title, "svg": Markup(tornado_svg(bars, base_value, xlabel, f"t{len(charts) + 1}",
                                                                     fmt, integer=measure == "reserved_gpus")),
                           "rows": [{"key": b.key, "low": value_text(b.key, b.low_value),
                                     "high": value_text(b.key, b.high_value), "at_low": fmt(b.at_low),
                                     "at_high": fmt(b.at_high), "range": fmt(b.width)} for b in bars]})
    base_all_in = None if base_pt is None else base_pt.cost_all_in
    rows = [{"i": i, "varies": vary_text(p, sweep.base), "status": p.status_text, "ok": p.solved,
             "cells": [value_text(k, p.vary.get(k)) for k in sweep.keys],
             "all_in": _money(p.cost_all_in, cur), "all_in_change": _change(p.cost_all_in, base_all_in),
             "cost": _money(p.cost_total, cur), "committed": _money(p.cost_committed, cur),
             "reserved": _gpus(p.reserved_gpus), "sign": to_sign(p).split("; "), "full_term": _money(p.full_term, cur),
             "message": p.message}
            for i, p in enumerate(sweep.points, 1)]
    solved = sum(1 for p in sweep.points if p.solved)
    no_tornado = "" if charts else (
        "No tornado: it needs the plan's own point and the points where one key moves alone, and none of them "
        "solved" if not sweep.grid else
        "No tornado: it needs the points where one key moves alone, the others at the plan's values — include "
        "each key's plan value in its range (e.g. demand=0.8:1.2:3 holds ×1), or sweep one key at a time")
    short = sum(1 for p in sweep.points if p.solved and p.status != "optimal")
    return {"no_tornado": no_tornado, "short": short, "plan": sweep.plan, "file": sweep.file, "keys": sweep.keys,
            "base": [{"key": k, "value": value_text(k, v)} for k, v in sweep.base.items()],
            "mode": "every combination (grid)" if sweep.grid else "one key at a time, the others at the plan's",
            "rows": rows, "charts": charts, "solved": solved, "total": len(sweep.points),
            "proven": sum(1 for p in sweep.points if p.interpolated),
            "base_cost": _money(base_pt.cost_total if base_pt else None, cur),
            "base_all_in": _money(base_all_in, cur),
            "base_committed": _money(base_pt.cost_committed if base_pt else None, cur),
            "base_sign": to_sign(base_pt) if base_pt else "–",
            "base_reserved": _gpus(base_pt.reserved_gpus if base_pt else None)}


def render_html(sweep: Any, made: Provenance | None = None) -> str:
    made = made or provenance()
    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template(TEMPLATE).render(**context(sweep), made=made)


def write_html(sweep: Any, outdir: Path) -> Path:
    """OUTDIR/sweep.html, written atomically."""
    path = Path(outdir) / HTML
    write_text_atomic(path, render_html(sweep))
    return path
