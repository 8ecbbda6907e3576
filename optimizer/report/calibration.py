"""Views of a calibration (console, HTML with inline SVG) and of a plan comparison (console)."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optimizer.formatting import money, plural

if TYPE_CHECKING:
    from optimizer.calibrate.run import Calibration, WorkloadCalibration
    from optimizer.results.compare import Comparison

TEMPLATE = "calibrate.html.j2"


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _ratio(r: float | None) -> str:
    if r is None:
        return ""
    if 0.5 <= r <= 2:
        return f"{(r - 1) * 100:+.1f}%"
    return f"×{r:.3g}"


# --- console -------------------------------------------------------------------------------------


def print_calibration(cal: "Calibration", out: Console) -> None:
    out.print(f"[bold]{escape(cal.plan_name)}[/bold] calibrated from {escape(cal.plan_file)}")
    if cal.usage is not None:
        u = cal.usage
        files = ", ".join(f"{escape(f.file)} ({f.fmt}, {f.events:,} events)" for f in u.files)
        out.print(f"usage: {u.events:,} events in {u.seconds:.1f} s from {files}")
        if cal.period:
            days = ", ".join(f"{k} {v}" for k, v in cal.full_days.items())
            out.print(f"period: {cal.period[0]} to {cal.period[1]} ({escape(cal.timezone)}); full days: {days}")
        out.print(f"[dim]{escape(cal.definition)}[/dim]")
    for note in cal.notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")
    if cal.changes:
        t = Table(title="What changed", title_justify="left", show_edge=False)
        for col in ("workload", "what", "old", "new", "change"):
            t.add_column(col, justify="right" if col == "change" else "left")
        for c in cal.changes:
            t.add_row(escape(c.workload), escape(c.what), escape(c.old), escape(c.new), _ratio(c.ratio))
        out.print(t)
    else:
        out.print("nothing changed")
    wl = [w for w in cal.workloads if w.tenants or w.notes]
    if wl:
        t = Table(title="Per workload", title_justify="left", show_edge=False)
        t.add_column("workload")
        t.add_column("requests", justify="right")
        t.add_column("tenants (share of output tokens)")
        t.add_column("notes")
        for w in wl:
            ten = ", ".join(f"{escape(n)} {s:.0%}" for n, s, _ in w.tenants[:4])
            if len(w.tenants) > 4:
                ten += f", +{len(w.tenants) - 4}"
            t.add_row(escape(w.name), f"{w.requests:,}" if w.requests else "–", ten or "–",
                      escape("; ".join(w.notes)) or "")
        out.print(t)
    bursty = [w for w in cal.workloads if w.burst is not None]
    if bursty:
        t = Table(title="Inside the hour: the busiest minute ÷ the hour's mean minute (p95 across hours)",
                  title_justify="left", show_edge=False)
        for col in ("workload", "hours", "busiest minute", "occupancy it allows", "policy", ""):
            t.add_column(col, justify="left" if col in ("workload", "") else "right")
        for w in bursty:
            b = w.burst
            t.add_row(escape(w.name), f"{b.hours:,}", f"{b.ratio:.2f}×", f"{b.occupancy:.0%}",
                      f"{b.policy_occupancy:.0%}", escape(burst_remark(b)))
        out.print(t)
    if cal.verdicts:
        p = f"p{cal.slo_percentile:g}"
        t = Table(title=f"Load tests (TTFT and TPOT at {p} against each workload's SLO)", title_justify="left",
                  show_edge=False)
        for col in ("file", "load", "workload", "config", "output tok/s", "TTFT ms", "TPOT ms", "verdict"):
            t.add_column(col, justify="right" if "tok" in col or "ms" in col else "left")
        for v in cal.verdicts:
            t.add_row(escape(v.run.where), escape(v.run.load or "–"), escape(v.workload or "?"),
                      escape(f"{v.accelerator} {v.precision} tp{v.tp}"), _num(v.run.output_tokens_per_s),
                      _num(v.run.ttft_ms), _num(v.run.tpot_ms), verdict(v, markup=True))
        out.print(t)
    if cal.occupancy:
        target = cal.occupancy[0].target
        t = Table(title=f"Occupancy against {escape(cal.result_file or 'the result')} "
                        f"(actual ÷ serving replicas × goodput; policy {target:.0%})",
                  title_justify="left", show_edge=False)
        for col in ("workload", "hours", f"above {target:.0%}", "highest", "when", "mean at busiest hour"):
            t.add_column(col, justify="left" if col in ("workload", "when") else "right")
        for o in cal.occupancy:
            h = o.highest
            when = f"{h.date} {h.hour:02d}:00 ({h.day_type})" if h else "–"
            t.add_row(escape(o.workload), str(o.hours), str(len(o.above)),
                      _pct(h.occupancy) if h else "–", when, _pct(o.mean_at_busiest))
        out.print(t)


def burst_remark(b) -> str:
    """Whether the policy's occupancy leaves room for the busiest minutes."""
    if b.policy_occupancy <= b.occupancy + 1e-9:
        return "the policy leaves room for it"
    if not b.beyond_noise:
        return (f"Poisson arrivals at this rate give up to {b.poisson:.2f}× by chance: noise the policy's "
                f"occupancy absorbs, not a burst")
    return (f"at the policy's {b.policy_occupancy:.0%} that minute needs {b.policy_occupancy * b.ratio:.0%} of the "
            f"fleet: requests queue (TTFT) unless occupancy is at most {b.occupancy:.0%}")


def verdict(v, markup: bool = False) -> str:
    """used / meets the SLO (a faster run was used) / misses the SLO: why / not used: why."""
    def tag(style: str, text: str) -> str:
        return f"[{style}]{text}[/{style}]" if markup else text

    why = escape("; ".join(v.reasons)) if markup else "; ".join(v.reasons)
    if v.used:
        return tag("green", "used")
    if v.meets_slo:
        return "meets the SLO; a faster run was used"
    if v.run.problem:
        return tag("yellow", "not used: ") + why
    return tag("red", "misses the SLO: ") + why


def _pct(x: float | None) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "∞ (no serving replica)"
    return f"{x:.0%}"


def print_comparison(c: "Comparison", out: Console) -> None:
    cur = c.b.currency
    out.print(f"[bold]A[/bold] {escape(c.a.label)} ({c.a.kind}: {escape(c.a.plan)}, {plural(c.a.horizon_days, 'day')}, {c.a.status})")
    out.print(f"[bold]B[/bold] {escape(c.b.label)} ({c.b.kind}: {escape(c.b.plan)}, {plural(c.b.horizon_days, 'day')}, {c.b.status})")
    for n in c.notes:
        out.print(f"[yellow]note:[/yellow] {escape(n)}")
    t = Table(title="Cost", title_justify="left", show_edge=False)
    for col in ("", "A", "B", "change", "%"):
        t.add_column(col, justify="left" if not col else "right")
    labels = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot", "api": "API",
              "savings_plan": "savings plan"}
    rows = [("all-in (new + committed)", c.all_in), ("all-in per day", c.all_in_per_day), ("new spend", c.total),
            ("committed (signed before)", c.committed), ("new spend per day", c.per_day)] + \
        [(f"  {labels[k]}", v) for k, v in c.by_tier.items()] + \
        [("new commitments, full term", c.full_term)]
    for name, d in rows:
        pct = d.change_pct
        sign = "+" if d.change > 0.5 else "-" if d.change < -0.5 else ""
        t.add_row(name, money(d.a, cur), money(d.b, cur), sign + money(abs(d.change), cur),
                  "–" if pct is None else f"{pct:+.1f}%", style="bold" if name.startswith("all-in") else None)
    out.print(t)
    if c.bridge is not None:
        b = Table(title="All-in, A to B", title_justify="left", show_edge=False)
        b.add_column("")
        b.add_column("change", justify="right")
        b.add_column("what it is")
        b.add_row("A all-in", money(c.all_in.a, cur), "")
        for name, value, what in bridge_rows(c):
            b.add_row(name, _saving(value, cur), what)  # B − A: + costs more
        b.add_row("B all-in", money(c.all_in.b, cur), "", style="bold")
        out.print(b)
        if c.full_term.a or c.full_term.b:
            out.print(f"[dim]new commitments' full terms (beyond the horizon too, not in all-in): "
                      f"{money(c.full_term.a, cur)} → {money(c.full_term.b, cur)}[/dim]")
    if c.demand_changes:
        d = Table(title="Demand that changed (peak output tokens/s)", title_justify="left", show_edge=False)
        for col in ("workload", "A", "B", "%"):
            d.add_column(col, justify="left" if col == "workload" else "right")
        for r in c.demand_changes:
            d.add_row(escape(r.name), _rate(r.peak_a), _rate(r.peak_b), _rate_pct(r.peak_a, r.peak_b))
        out.print(d)
    signs = sign_rows(c)
    if signs:
        n = Table(title="New commitments (to sign)", title_justify="left", show_edge=False)
        for col in ("side", "offer", "tier", "GPUs or $/hour", "start", "end", "full term"):
            n.add_column(col, justify="right" if col in ("GPUs or $/hour", "full term") else "left")
        for x in signs:
            n.add_row(x["side"], escape(x["offer"]), x["tier"], x["gpus"], x["start"], x["end"], x["full_term"])
        out.print(n)
    w = Table(title=escape(_headline(c)), title_justify="left", show_edge=False)
    money_cols = ("all-in A", "all-in B", "saving (all-in)")
    for col in ("workload", "status", "A choice", "B choice", "replicas", "GPUs at peak") + money_cols + ("what",):
        w.add_column(col, justify="right" if col in ("replicas", "GPUs at peak") + money_cols else "left")
    style = {"new": "green", "removed": "red", "changed": "yellow", "cost moved": "cyan", "same": "dim"}
    for r in c.workloads:
        reps = f"{_i(r.replicas_a)} → {_i(r.replicas_b)}" if r.replicas_a != r.replicas_b else _i(r.replicas_a)
        gpus = f"{_i(r.gpus_a)} → {_i(r.gpus_b)}" if r.gpus_a != r.gpus_b else _i(r.gpus_a)
        w.add_row(escape(r.name), f"[{style[r.status]}]{r.status}[/{style[r.status]}]", escape(r.choice_a or "–"),
                  escape(r.choice_b or "–") if r.choice_b != r.choice_a else "same", reps, gpus,
                  money(r.all_in_a, cur) if r.all_in_a is not None else "–",
                  money(r.all_in_b, cur) if r.all_in_b is not None else "–",
                  _saving(r.saving, cur) if r.status == "changed" and r.saving is not None else "",
                  ", ".join(r.what_changed) + (f" ({escape(r.reason)})" if r.reason else ""))
    out.print(w)
    if any(r.committed_a or r.committed_b for r in c.workloads):
        out.print("[dim]all-in: a workload's new spend plus its share of contracts signed before the plan; a move "
                  "onto capacity already paid for is not a saving[/dim]")
    changed = [p for p in c.purchases if p.gpus_a != p.gpus_b or round(p.cost_a, 2) != round(p.cost_b, 2)]
    if changed:
        p = Table(title="Purchases that changed", title_justify="left", show_edge=False)
        for col in ("offer", "tier", "GPUs A", "GPUs B", "cost A", "cost B"):
            p.add_column(col, justify="left" if col in ("offer", "tier") else "right")
        for x in changed:
            p.add_row(escape(x.offer), x.tier, str(x.gpus_a), str(x.gpus_b), money(x.cost_a, cur), money(x.cost_b, cur))
        out.print(p)


BRIDGE_WORDS = {
    "price": ("price", "B's purchases at B's prices less at A's"),
    "volume": ("volume", "A's new spend (but new commitments) × how the tokens asked moved"),
    "mix": ("mix", "other offers, tiers, configs or API shares, at A's prices"),
    "new_commitments": ("new commitments", "their horizon share (reservations and savings plans), B less A, "
                                           "at A's prices"),
    "roll_off": ("roll-off of commitments", "spend on contracts and spend commitments signed before the plan, "
                                            "B less A"),
}
"""The bridge's steps as the console and the HTML word them (results.compare.Bridge defines them)."""


def sign_rows(c: "Comparison") -> list[dict[str, str]]:
    """The new commitments each side signs, as the console and the HTML list them: reservations (GPUs), then
    spend commitments (a provider's savings plan: $/hour, its term and discount)."""
    cur = c.b.currency
    rows = [{"side": side, "offer": x["offer"], "tier": x["tier"], "gpus": f"{x['gpus']:,}",
             "start": x["start"] or "–", "end": x["end"] or "–", "full_term": money(x["total_committed"], cur)}
            for side, xs in (("A", c.new_commitments_a), ("B", c.new_commitments_b)) for x in xs]
    rows += [{"side": side, "offer": f"{x['provider']} savings plan",
              "tier": f"savings plan {x['term']}, {x['discount']:.0%} off",
              "gpus": f"{money(x['usd_per_hour'], cur, 2)}/hour",
              "start": x["start"] or "–", "end": x["end"] or "–", "full_term": money(x["total_committed"], cur)}
             for side, xs in (("A", c.new_spend_commitments_a), ("B", c.new_spend_commitments_b)) for x in xs]
    return rows


def bridge_rows(c: "Comparison") -> list[tuple[str, float, str]]:
    """(step, B − A, what it is) for each step of the bridge, in its order; empty without one."""
    from optimizer.results.compare import BRIDGE_PARTS

    if c.bridge is None:
        return []
    return [(BRIDGE_WORDS[k][0], getattr(c.bridge, k), BRIDGE_WORDS[k][1]) for k in BRIDGE_PARTS]


def render_comparison_html(c: "Comparison") -> str:
    """The comparison as one self-contained page: cost (all-in, per day, new, committed, tiers, full terms), the
    all-in bridge from A to B, the demand that changed, the new commitments each side signs, and the workloads.
    Nothing on it changes between runs."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    from optimizer.resources import templates_dir

    cur = c.b.currency
    labels = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot", "api": "API",
              "savings_plan": "savings plan"}
    rows = [("all-in (new + committed)", c.all_in, True), ("all-in per day", c.all_in_per_day, True),
            ("new spend", c.total, False), ("committed (signed before)", c.committed, False),
            ("new spend per day", c.per_day, False)] + \
        [(f"new spend: {labels[k]}", v, False) for k, v in c.by_tier.items()] + \
        [("new commitments, full term", c.full_term, False)]
    cost_rows = [{"name": n, "a": money(d.a, cur), "b": money(d.b, cur), "change": _saving(d.change, cur),
                  "pct": "–" if d.change_pct is None else f"{d.change_pct:+.1f}%", "bold": bold} for n, d, bold in rows]
    ctx = {
        "c": c, "cost_rows": cost_rows,
        "bridge": [{"name": n, "value": _saving(v, cur), "what": w} for n, v, w in bridge_rows(c)],
        "all_in_a": money(c.all_in.a, cur), "all_in_b": money(c.all_in.b, cur),
        "full_term_a": money(c.full_term.a, cur), "full_term_b": money(c.full_term.b, cur),
        "demand": [{"name": r.name, "a": _rate(r.peak_a), "b": _rate(r.peak_b), "pct": _rate_pct(r.peak_a, r.peak_b)}
                   for r in c.demand_changes],
        "signs": sign_rows(c),
        "workloads": [{"name": r.name, "status": r.status, "choice_a": r.choice_a or "–",
                       "choice_b": (r.choice_b or "–") if r.choice_b != r.choice_a else "same",
                       "all_in_a": "–" if r.all_in_a is None else money(r.all_in_a, cur),
                       "all_in_b": "–" if r.all_in_b is None else money(r.all_in_b, cur),
                       "what": ", ".join(r.what_changed) + (f" ({r.reason})" if r.reason else "")}
                      for r in c.workloads],
    }
    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, keep_trailing_newline=True)
    return env.get_template(COMPARE_TEMPLATE).render(**ctx)


COMPARE_TEMPLATE = "compare.html.j2"


def _rate(x: float | None) -> str:
    return "–" if x is None else f"{x:,.1f}"


def _rate_pct(a: float | None, b: float | None) -> str:
    return "–" if not a or b is None else f"{100.0 * (b - a) / a:+.1f}%"


def _headline(c: "Comparison") -> str:
    """'2 changed (1 a new choice) · 1 cost moved, config kept · 1 new · 1 removed · 3 the same': a workload whose
    cost moved only with its share of shared GPUs is counted apart from those that changed."""
    same = sum(1 for r in c.workloads if r.status == "same")
    parts = [f"{len(c.changed)} changed" + (f" ({len(c.choice_changed)} a new choice)" if c.changed else "")]
    if c.cost_moved:
        parts.append(f"{len(c.cost_moved)} cost moved, config kept (its share of shared GPUs)")
    parts += [f"{n} {what}" for n, what in ((len(c.added), "new"), (len(c.removed), "removed"), (same, "the same"))
              if n]
    return "Workloads: " + " · ".join(parts)


def _saving(x: float, cur: str) -> str:
    """B saves (+) or costs more (−) than A, signed before the currency symbol."""
    sign = "+" if x > 0.5 else "-" if x < -0.5 else ""
    return sign + money(abs(x), cur)


def _i(x: int | None) -> str:
    return "–" if x is None else str(x)


# --- HTML ----------------------------------------------------------------------------------------


def render_html(cal: "Calibration") -> str:
    """A small self-contained page: forecast vs actual per workload, changes, load tests, occupancy."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    from optimizer.resources import templates_dir

    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    env.filters["ratio"] = _ratio
    charts = {}
    for w in cal.workloads:
        if w.actual and (w.new_peak is not None or w.old_peak is not None) and w.kind == "interactive":
            charts[w.name] = Markup(chart_svg(w))
    return env.get_template(TEMPLATE).render(cal=cal, charts=charts, verdict=verdict, burst_remark=burst_remark)


def chart_svg(w: "WorkloadCalibration") -> str:
    """Forecast (before and after) against the actual hourly rate, one panel per day type; byte-stable SVG."""
    import matplotlib
    from matplotlib.figure import Figure

    types = [t for t in w.actual]
    rc = {"svg.hashsalt": "planopt-calibrate", "svg.fonttype": "none", "font.size": 8,
          "axes.spines.top": False, "axes.spines.right": False}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=(3.4 * max(1, len(types)), 2.7))
        axes = fig.subplots(1, max(1, len(types)), sharey=True, squeeze=False)[0]
        hours = list(range(24))
        for ax, t in zip(axes, types):
            st = w.actual[t]
            if st.days:
                lo = [v if v is not None else math.nan for v in st.low]
                hi = [v if v is not None else math.nan for v in st.high]
                mean = [v if v is not None else math.nan for v in st.mean]
                ax.fill_between(hours, lo, hi, color="#f4a259", alpha=0.25, linewidth=0, label="actual min–max")
                ax.plot(hours, mean, color="#e07a1f", linewidth=1.4, label="actual mean")
            if w.old_peak is not None and t in w.old_profile:
                ax.plot(hours, [w.old_peak * v for v in w.old_profile[t]], color="#888888", linestyle="--",
                        linewidth=1.1, label="plan before")
            if w.new_peak is not None and w.new_profile is not None:
                ax.plot(hours, [w.new_peak * v for v in w.new_profile[t]], color="#1f5fa8", linewidth=1.4,
                        label="calibrated")
            ax.set_title(f"{t} ({st.days} days)")
            ax.set_xticks([0, 6, 12, 18, 23])
            ax.set_xlabel("hour")
        axes[0].set_ylabel("output tokens/s")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]
