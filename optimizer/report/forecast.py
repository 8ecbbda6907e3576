"""Views of a forecast: the console (history as a sparkline, each month's band) and NEXT.html (history and
forecast with the P10–P90 band, inline SVG, the same bytes for the same inputs under SOURCE_DATE_EPOCH)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from optimizer.formatting import plural
from optimizer.report.calibration import _num

if TYPE_CHECKING:
    from optimizer.calibrate.forecast import Forecast, WorkloadForecast
    from optimizer.report.provenance import Provenance

TEMPLATE = "forecast.html.j2"
BARS = "▁▂▃▄▅▆▇█"
RECENT_DAYS = 28


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return BARS[len(BARS) // 2] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / (hi - lo) * len(BARS)))] for v in values)


def recent_peak(w: "WorkloadForecast") -> float:
    return max(w.history_peaks[-RECENT_DAYS:])


def _growth(w: "WorkloadForecast") -> str:
    return "–" if w.growth_per_month is None else f"{w.growth_per_month:+.1%} a month"


# --- console -------------------------------------------------------------------------------------


def print_forecast(fc: "Forecast", out: Console) -> None:
    first, last = fc.months[0][0], fc.months[-1][0]
    span = first if first == last else f"{first} to {last}"
    out.print(f"[bold]{escape(fc.plan_name)}[/bold] forecast from {escape(fc.plan_file)} for {span} "
              f"({plural(fc.horizon_days, 'day')})")
    if fc.usage is not None:
        files = ", ".join(f"{escape(f.file)} ({f.events:,} events)" for f in fc.usage.files)
        out.print(f"usage: {files}" + (f"; {fc.period[0]} to {fc.period[1]} ({escape(fc.timezone)})"
                                       if fc.period else ""))
    out.print(f"[dim]{escape(fc.definition)}[/dim]")
    for note in fc.notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")
    for w in fc.workloads:
        recent = w.history_peaks[-RECENT_DAYS:]
        out.print(f"\n[bold]{escape(w.name)}[/bold]: fitted trend {_growth(w)}, from {plural(round(w.hours / 24, 1), 'day')} "
                  "of usage")
        out.print(f"  last {len(recent)} days, each day's busiest hour: {sparkline(recent)}  "
                  f"(busiest {_num(max(recent))} tok/s)")
        t = Table(show_edge=False, box=None, padding=(0, 2))
        for col in ("month", "P10", "P50", "P90", f"P50 vs last {len(recent)} days", "P10 ─ P50 ● ─ P90"):
            t.add_column(col, justify="left" if col.startswith(("month", "P10 ")) else "right")
        lo, hi = min(m.p10 for m in w.months), max(m.p90 for m in w.months)
        for m in w.months:
            t.add_row(m.month, _num(m.p10), f"[bold]{_num(m.p50)}[/bold]", _num(m.p90),
                      f"{m.p50 / recent_peak(w) - 1:+.0%}", _band(m.p10, m.p50, m.p90, lo, hi))
        out.print(t)
        for note in w.notes:
            out.print(f"  [yellow]note:[/yellow] {escape(note)}")
    if fc.scenarios:
        out.print("\n[bold]Scenarios written[/bold] (demand multipliers on each month's peak)")
        t = Table(show_edge=False)
        t.add_column("scenario")
        t.add_column("weight", justify="right")
        for w in fc.workloads:
            t.add_column(escape(w.name), justify="right")
        for s in fc.scenarios:
            t.add_row(s.name, f"{s.weight:g}", *[f"{s.demand[w.name]:.3f}" for w in fc.workloads])
        out.print(t)


def _band(p10: float, p50: float, p90: float, lo: float, hi: float, width: int = 24) -> str:
    """A text band: ─ from P10 to P90, ● at P50, on a scale from `lo` to `hi` (the workload's months)."""
    def at(v: float) -> int:
        return min(width - 1, max(0, round((v - lo) / (hi - lo) * (width - 1)))) if hi > lo else 0

    cells = [" "] * width
    for i in range(at(p10), at(p90) + 1):
        cells[i] = "─"
    cells[at(p50)] = "●"
    return "".join(cells).rstrip()


# --- HTML ----------------------------------------------------------------------------------------


def render_html(fc: "Forecast", made: "Provenance | None" = None) -> str:
    """A self-contained page: per workload, history and forecast with the band, the months, the scenarios."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    from optimizer.report.provenance import provenance
    from optimizer.resources import templates_dir

    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["num"] = _num
    charts = {w.name: Markup(chart_svg(w, i)) for i, w in enumerate(fc.workloads)}
    return env.get_template(TEMPLATE).render(fc=fc, charts=charts, made=made or provenance(),
                                             growth=_growth, recent_peak=recent_peak)


def chart_svg(w: "WorkloadForecast", n: int = 0) -> str:
    """Each day's busiest hour: the log's, then the forecast's median with its P10–P90 band; each month's
    busiest hour as a bar across the month (P50) over its band. Byte-stable SVG."""
    import matplotlib
    from matplotlib.figure import Figure

    from optimizer.report.charts import RC, to_svg

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(9.0, 3.0), dpi=96)
        ax = fig.subplots()
        hist = [w.history_first + dt.timedelta(days=i) for i in range(len(w.history_peaks))]
        ax.plot(hist, w.history_peaks, color="#3b4a5a", linewidth=1.2, label="log: each day's busiest hour")
        first = w.months[0].first
        days = [first + dt.timedelta(days=i) for i in range(len(w.daily["p50"]))]
        ax.fill_between(days, w.daily["p10"], w.daily["p90"], color="#7aa6d8", alpha=0.35, linewidth=0,
                        label="forecast P10–P90")
        ax.plot(days, w.daily["p50"], color="#1f5fa8", linewidth=1.2, label="forecast P50")
        for i, m in enumerate(w.months):
            end = m.first + dt.timedelta(days=m.days)
            ax.fill_between([m.first, end], [m.p10] * 2, [m.p90] * 2, color="#e07a1f", alpha=0.18, linewidth=0,
                            label="month's busiest hour P10–P90" if i == 0 else None)
            ax.plot([m.first, end], [m.p50] * 2, color="#e07a1f", linewidth=2.0,
                    label="month's busiest hour P50" if i == 0 else None)
        ax.set_ylabel("output tokens/s")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5)
        fig.tight_layout()
        return to_svg(fig, f"f{n}")
