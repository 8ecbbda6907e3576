"""matplotlib → inline SVG, byte-identical between runs (fixed hash salt, no date, text as text)."""

from __future__ import annotations

import io
import re
from itertools import count

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

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
SUPPLY_COLORS = {"committed": L.COMMITTED_COLOR, "owned": L.OWNED_COLOR, "bought": L.TIER_COLORS["buy"]}
SUPPLY_KEYS = ("demand", "committed", "owned", "bought", "reserved", "on_demand", "spot")


def supply_tiers(result: PlanResult) -> tuple[tuple[str, str], ...]:
    """The supply bars of a pool chart, bottom up: contracts signed before, servers owned and bought
    (when the plan has them), then the rented tiers."""
    out: tuple[tuple[str, str], ...] = (("committed", "committed (signed before)"),) if result.commitments else ()
    own = result.own
    if own is not None:
        out += ((("owned", "owned servers"),) if own.owned else ()) \
            + ((("bought", "bought servers"),) if own.bought or own.break_even else ())
    return out + TIERS


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
    # shapes' coordinates to a tenth of a pixel (matplotlib writes six decimals): the same drawing, and a
    # chart of many panels a fraction of the bytes
    svg = re.sub(r'(?<= d=")[^"]*', lambda m: _tenths(m.group(0)), svg)
    return svg.replace('<style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>', "")


EDGES = [h - 0.5 for h in range(25)]
"""The hours' edges on a pool chart: hour h spans h − ½ to h + ½."""


def _tenths(path: str) -> str:
    """An SVG path's numbers to one decimal ("192.870361" → "192.9", "-0.0" → "0"), its lines joined."""
    def num(m: re.Match) -> str:
        x = round(float(m.group(0)), 1)
        return f"{x:.1f}".rstrip("0").rstrip(".") if x != 0 else "0"
    return re.sub(r"-?\d+\.\d+", num, path).replace(" \n", " ").replace("\n", " ")


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
        days = shown_day_types(result)
        periods = pool_periods(result, pool)
        cols = panel_columns(result) if len(days) == len(result.day_types) else min(len(days), 4)
        chunks = [days[i:i + cols] for i in range(0, len(days), cols)]
        with matplotlib.rc_context(RC):
            fig = self._fig(11.0, 2.9 * len(periods) * len(chunks))
            panels = fig.subplots(len(periods) * len(chunks), min(cols, len(days)), sharey=True, squeeze=False)
            hours = list(range(24))
            tiers = supply_tiers(result)
            level = 0.0
            for period in periods:
                series = pool_series(result, pool, period)
                level = max([level] + [v for d in days for v in series[d]["reserved"]])
            grid = []  # (axes, period, day types) per row of panels
            for i, period in enumerate(periods):
                for j, chunk in enumerate(chunks):
                    row = panels[i * len(chunks) + j]
                    for ax in row[len(chunk):]:
                        ax.set_visible(False)
                    grid.append((row, period, chunk))
            for row, period, chunk in grid:
                series = pool_series(result, pool, period)
                for ax, d in zip(row, chunk):
                    s = series[d]
                    bottom = [0.0] * 24
                    for key, label in tiers:
                        color = SUPPLY_COLORS.get(key) or L.TIER_COLORS[key]
                        top = [b + v for b, v in zip(bottom, s[key])]
                        # one stepped band a tier (its 24 hours in one shape, not 24 bars): a plan with many day
                        # types and scenarios draws hundreds of panels, and a shape per hour made its page
                        # megabytes. A tier with nothing in the panel is not drawn; the legend's proxies below
                        # keep its entry.
                        if any(v > 0 for v in s[key]):
                            ax.stairs(top, EDGES, baseline=bottom, fill=True, color=color, linewidth=0)
                        bottom = top
                    ax.step(hours, s["demand"], where="mid", color=L.DEMAND_COLOR, linewidth=1.8)
                    if level:
                        ax.axhline(level, color="#1f3864", linestyle="--", linewidth=1)
                    title = f"{d} ({L.day_type_days(result, d)})" if period is None else f"{d}, {period}"
                    ax.set_title(plain(title), loc="left")
                    ax.set_xticks(range(0, 24, 3), [f"{h:02d}:00" for h in range(0, 24, 3)])
                    ax.set_xlim(-0.6, 23.6)
                    ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
                    ax.set_axisbelow(True)
                row[0].set_ylabel("GPUs")
            handles = [Patch(color=SUPPLY_COLORS.get(key) or L.TIER_COLORS[key], label=label) for key, label in tiers]
            handles.append(Line2D([], [], color=L.DEMAND_COLOR, linewidth=1.8, label="demand"))
            if level:
                handles.append(Line2D([], [], color="#1f3864", linestyle="--", linewidth=1, label="reserved level"))
            grid[0][0][len(grid[0][2]) - 1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            fig.tight_layout()
            return self._svg(fig)

    def break_even(self, result: PlanResult) -> str:
        """Per buy offer, what a GPU-hour used costs against utilization: owning (fixed ÷ use + serving
        energy), each rented alternative (reserved: price ÷ use, paid whether used or not; hourly: the price)."""
        own = result.own
        assert own is not None and own.break_even
        offers = list(dict.fromkeys(b.offer for b in own.break_even))
        use = {b.offer: b.utilization for b in own.bought}
        xs = [u / 100 for u in range(2, 101)]
        with matplotlib.rc_context(RC):
            fig = self._fig(9.0, 2.9 * len(offers))
            axes = fig.subplots(len(offers), 1, squeeze=False)
            for (ax,), o in zip(axes, offers):
                rows = [b for b in own.break_even if b.offer == o]
                top = 2.0 * max(b.price_per_gpu_hour for b in rows)
                f, v = rows[0].fixed_per_gpu_hour, rows[0].serving_energy_per_gpu_hour
                ax.plot([100 * x for x in xs], [f / x + v for x in xs], color=L.TIER_COLORS["buy"], linewidth=2.2,
                        label=plain(f"own {o}"))
                for b in rows:
                    held = b.tier.startswith("reserved")
                    ys = [b.price_per_gpu_hour / x for x in xs] if held else [b.price_per_gpu_hour] * len(xs)
                    color = L.TIER_COLORS[vocab.TIER_GROUP.get(b.tier, "reserved")]
                    ax.plot([100 * x for x in xs], ys, color=color, linewidth=1.3,
                            linestyle="--" if b.tier == "reserved-3y" else "-", label=plain(f"{b.against} {b.tier}"))
                if o in use:
                    ax.axvline(100 * use[o], color="#1f3864", linestyle=":", linewidth=1, label="this plan's use")
                ax.set_xlim(0, 100)
                ax.set_ylim(0, top)
                ax.xaxis.set_major_formatter(lambda x, _pos: f"{x:.0f}%")
                ax.set_xlabel("utilization of the GPUs held")
                ax.set_ylabel(plain(f"{result.currency} per GPU-hour used"))
                ax.set_title(plain(f"{o} ({rows[0].accelerator}): owning against renting"), loc="left")
                ax.grid(color="#e6e6e6", linewidth=0.6)
                ax.set_axisbelow(True)
                ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
            fig.tight_layout()
            return self._svg(fig)

    def scenario_costs(self, result: PlanResult) -> str:
        """Each scenario's cost had it come true (the first stage, decided once, + its hourly part), with the
        expected cost, the P90 and, under cvar or worst, the risk measure as lines."""
        risk = result.risk
        assert risk is not None and result.scenarios
        rows = result.scenarios
        xs = list(range(len(rows)))
        with matplotlib.rc_context(RC):
            fig = self._fig(9.0, 2.9)
            ax = fig.subplots()
            first = [r.cost_total - r.cost_hourly for r in rows]
            ax.bar(xs, first, width=0.6, color=L.TIER_COLORS["reserved"], label="decided once (reserved, bought)")
            ax.bar(xs, [r.cost_hourly for r in rows], bottom=first, width=0.6, color=L.TIER_COLORS["on_demand"],
                   label="hourly part (on-demand, spot, API, energy)")
            lines = [(risk.expected, "expected", "--", "#1d2733"), (risk.p90, "P90", ":", L.DEMAND_COLOR)]
            if risk.measure != "expected":
                lines.append((risk.value, plain(L.risk_name(result)), "-", "#5b4a8a"))
            for v, label, style, color in lines:
                ax.axhline(v, color=color, linestyle=style, linewidth=1.3, label=label)
            ax.set_xticks(xs, [plain(f"{r.name} ({r.weight:.0%})") for r in rows])
            ax.yaxis.set_major_formatter(_money_axis(result.currency))
            ax.set_ylim(0, 1.08 * max([r.cost_total for r in rows] + [v for v, *_ in lines]))
            ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.set_title("Cost over the horizon if each scenario came true (weight)", loc="left")
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
            fig.tight_layout()
            return self._svg(fig)

    def month_fan(self, fan: dict) -> str:
        """Per month, each scenario's peak GPUs demanded (lines, the band between the lowest and the highest)
        against the GPUs held each month (labels.month_fan)."""
        months, names = fan["months"], fan["scenarios"]
        xs = list(range(len(months)))
        colors = ["#2f5d8a", "#e39b2d", "#7fae5a", "#9b6fb0", "#8a6d3b", "#5b6770", "#c0392b"]
        with matplotlib.rc_context(RC):
            fig = self._fig(9.0, 2.9)
            ax = fig.subplots()
            lo = [min(fan["peak"][s][i] for s in names) for i in xs]
            hi = [max(fan["peak"][s][i] for s in names) for i in xs]
            ax.fill_between(xs, lo, hi, color="#e39b2d", alpha=0.18, linewidth=0, label="range of the scenarios")
            for i, s in enumerate(names):
                ax.plot(xs, fan["peak"][s], marker="o", markersize=4, linewidth=1.6, color=colors[i % len(colors)],
                        label=plain(s))
            ax.step(xs, fan["held"], where="mid", color="#1f3864", linestyle="--", linewidth=1.2,
                    label="GPUs held (reserved, bought, owned, signed)")
            ax.set_xticks(xs, [plain(m) for m in months])
            ax.set_ylim(0, 1.1 * max(hi + fan["held"] + [1]))
            ax.set_ylabel("peak GPUs demanded")
            ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
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


MAX_PANELS = 12
"""Day types a pool chart draws a panel for at most before a plan with scenarios shows one scenario's."""


def shown_scenario(result: PlanResult) -> str | None:
    """The scenario a pool chart shows when its day types are too many to draw every scenario's (a forecast's
    months × weekday/weekend × five quantiles): the weightiest, the middle one of equals (p50 of p10…p90);
    None when every day type is drawn."""
    if len(result.day_types) <= MAX_PANELS or len(result.scenarios) < 2:
        return None
    top = max(s.weight for s in result.scenarios)
    heaviest = [s.name for s in result.scenarios if s.weight >= top - 1e-12]
    name = heaviest[(len(heaviest) - 1) // 2]
    return name if any(L.scenario_of(d)[2] == name for d in result.day_types) else None


def shown_day_types(result: PlanResult) -> list[str]:
    """The day types a pool chart draws: every one, or shown_scenario's."""
    name = shown_scenario(result)
    return [d for d in result.day_types if name is None or L.scenario_of(d)[2] == name]


def panel_columns(result: PlanResult) -> int:
    """Day-type panels per row of a pool chart: one per scenario (a row per day type) in a plan with a few
    scenarios; otherwise up to four."""
    n = len(result.scenarios)
    if 1 < n <= 4 and len(result.day_types) % n == 0:
        return n
    return min(max(len(result.day_types), 1), 4)


def pool_series(result: PlanResult, pool: str, period: str | None = None) -> dict[str, dict[str, list[float]]]:
    """GPUs per tier and demanded, per day type and hour. With contract periods and no `period`, the
    day type's average (each period's rows weighted by its share of the day type's days); with a
    `period`, that period's own supply (rows of offers that do not change count in every period)."""
    out = {d: {k: [0.0] * 24 for k in SUPPLY_KEYS} for d in result.day_types}
    own = own_offers(result)
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
        mine = h.offer in own  # at servers of your own, committed GPUs are owned ones, reserved GPUs bought ones
        s["owned" if mine else "committed"][h.hour] += wt * h.committed_gpus
        s["bought" if mine else "reserved"][h.hour] += wt * h.reserved_gpus
        s["on_demand"][h.hour] += wt * h.on_demand_gpus
        s["spot"][h.hour] += wt * h.spot_gpus
    return out


def own_offers(result: PlanResult) -> set[str]:
    """Offers of servers owned or bought (their hourly rows count owned GPUs as committed, bought as reserved)."""
    own = result.own
    if own is None:
        return set()
    return ({r.offer for r in own.owned} | {b.offer for b in own.bought} | {b.offer for b in own.break_even}
            | {o for o, info in result.offers.items() if info.get("provider") == "own"})


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
