"""matplotlib → inline SVG, byte-identical between runs (fixed hash salt, no date, text as text)."""

from __future__ import annotations

import io
import re
from itertools import count

import matplotlib
from matplotlib.figure import Figure

from optimizer import vocab
from optimizer.report import labels as L
from optimizer.results.types import PlanResult

RC = {
    "svg.hashsalt": "planopt",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#888888",
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
}
TIERS = (("reserved", "reserved"), ("on_demand", "on-demand"), ("spot", "spot"))


def plain(s: str) -> str:
    """Plan text as a matplotlib label: `$` would start mathtext."""
    return s.replace("$", r"\$")


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an <svg> element for inlining, ids prefixed so several charts share a page."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "planopt"}, bbox_inches="tight")
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    # Inline SVG in HTML needs no namespace declarations or RDF metadata (and so names no URL).
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', svg)
    svg = svg.replace("<svg ", '<svg role="img" preserveAspectRatio="xMinYMin meet" ', 1)
    return svg.replace('<style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>', "")


class Charts:
    """Every chart of one report; ids numbered in the order they are drawn."""

    def __init__(self) -> None:
        self._n = count(1)

    def _fig(self, w: float, h: float) -> Figure:
        with matplotlib.rc_context(RC):
            return Figure(figsize=(w, h), dpi=96)

    def _svg(self, fig: Figure) -> str:
        return to_svg(fig, f"c{next(self._n)}")

    def pool(self, result: PlanResult, pool: str) -> str:
        """Per day type (and contract period, where the supply changes at a contract's end), GPUs
        supplied by tier (stacked bars) against GPUs demanded, over 24 hours."""
        days = list(result.day_types)
        periods = pool_periods(result, pool)
        with matplotlib.rc_context(RC):
            fig = self._fig(11.0, 2.9 * len(periods))
            grid = fig.subplots(len(periods), len(days), sharey=True, squeeze=False)
            hours = list(range(24))
            tiers = ((("committed", "committed (signed before)"),) if result.commitments else ()) + TIERS
            level = 0.0
            for period in periods:
                series = pool_series(result, pool, period)
                level = max([level] + [v for d in days for v in series[d]["reserved"]])
            for row, period in zip(grid, periods):
                series = pool_series(result, pool, period)
                for ax, d in zip(row, days):
                    s = series[d]
                    bottom = [0.0] * 24
                    for key, label in tiers:
                        color = L.COMMITTED_COLOR if key == "committed" else L.TIER_COLORS[key]
                        ax.bar(hours, s[key], bottom=bottom, width=0.85, color=color, label=label)
                        bottom = [b + v for b, v in zip(bottom, s[key])]
                    ax.step(hours, s["demand"], where="mid", color=L.DEMAND_COLOR, linewidth=1.8, label="demand")
                    if level:
                        ax.axhline(level, color="#1f3864", linestyle="--", linewidth=1, label="reserved level")
                    title = f"{d} ({vocab.days_text(result.day_types[d])})" if period is None else f"{d}, {period}"
                    ax.set_title(plain(title), loc="left")
                    ax.set_xticks(range(0, 24, 3), [f"{h:02d}:00" for h in range(0, 24, 3)])
                    ax.set_xlim(-0.6, 23.6)
                    ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
                    ax.set_axisbelow(True)
                row[0].set_ylabel("GPUs")
            grid[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
            fig.tight_layout()
            return self._svg(fig)

    def purchase_mix(self, result: PlanResult) -> str:
        """Cost over the horizon per accelerator, split by tier (horizontal stacked bars)."""
        accs = sorted({p.accelerator for p in result.purchases})
        tiers = ((("buy", "bought"),) if any(p.tier == "buy" for p in result.purchases) else ()) + TIERS
        cost = {(a, k): 0.0 for a in accs for k, _ in tiers}
        for p in result.purchases:
            cost[(p.accelerator, vocab.TIER_GROUP[p.tier])] += p.cost
        with matplotlib.rc_context(RC):
            fig = self._fig(11.0, 0.32 * max(len(accs), 1) + 1.1)
            ax = fig.subplots()
            left = [0.0] * len(accs)
            ys = list(range(len(accs)))
            for key, label in tiers:
                vals = [cost[(a, key)] for a in accs]
                ax.barh(ys, vals, left=left, color=L.TIER_COLORS[key], label=label, height=0.7)
                left = [a + b for a, b in zip(left, vals)]
            ax.set_yticks(ys, [plain(a) for a in accs])
            ax.invert_yaxis()
            ax.xaxis.set_major_formatter(_money_axis(result.currency))
            ax.grid(axis="x", color="#e6e6e6", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
            ax.set_title("Cost over the horizon by accelerator and tier", loc="left")
            fig.tight_layout()
            return self._svg(fig)


def pool_series(result: PlanResult, pool: str, period: str | None = None) -> dict[str, dict[str, list[float]]]:
    """GPUs per tier and demanded, per day type and hour. With contract periods and no `period`, the
    day type's average (each period's rows weighted by its share of the day type's days); with a
    `period`, that period's own supply (rows of offers that do not change count in every period)."""
    out = {d: {k: [0.0] * 24 for k in ("demand", "committed", "reserved", "on_demand", "spot")}
           for d in result.day_types}
    for h in result.hourly:
        if h.pool != pool or h.day_type not in out:
            continue
        if period is not None:
            if h.period not in ("", period):
                continue
            wt = 1.0
        else:
            n = result.day_types[h.day_type]
            wt = result.period_days(h) / n if h.period and n else 1.0
        s = out[h.day_type]
        s["demand"][h.hour] += wt * h.demand_gpus
        s["committed"][h.hour] += wt * h.committed_gpus
        s["reserved"][h.hour] += wt * h.reserved_gpus
        s["on_demand"][h.hour] += wt * h.on_demand_gpus
        s["spot"][h.hour] += wt * h.spot_gpus
    return out


def pool_periods(result: PlanResult, pool: str) -> list[str | None]:
    """The contract periods a pool's supply differs across (None: one chart for the horizon)."""
    if any(h.pool == pool and h.period for h in result.hourly) and len(result.periods) > 1:
        return [p.label for p in result.periods]
    return [None]


def _money_axis(currency: str):
    from matplotlib.ticker import FuncFormatter

    def fmt(x: float, _pos: int) -> str:
        for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
            if abs(x) >= div:
                v = f"{x / div:,.1f}".rstrip("0").rstrip(".")
                return plain(f"${v}{suffix}" if currency == "USD" else f"{v}{suffix} {currency}")
        return plain(f"${x:,.0f}" if currency == "USD" else f"{x:,.0f} {currency}")

    return FuncFormatter(fmt)
