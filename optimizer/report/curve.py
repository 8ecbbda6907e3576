"""The throughput-versus-interactivity curve of one replica (`planopt estimate --concurrency … --plot`):
output tokens/s per GPU against tokens/s per user (1000 / TPOT), one point per concurrency, as
InferenceX and aiconfigurator draw it. A standalone HTML page with the chart inline (charts.to_svg:
byte-identical between runs)."""

from __future__ import annotations

from html import escape

import matplotlib
from matplotlib.figure import Figure

from optimizer.report.charts import RC, plain, to_svg

LINE_COLOR = "#1f77b4"


def curve_html(title: str, subtitle: str, points: list[dict]) -> str:
    """The page: `points` are estimate --concurrency's curve objects (concurrency, tpot_ms,
    output_tokens_per_s_per_gpu), drawn in order of concurrency as one line."""
    pts = sorted(points, key=lambda p: p["concurrency"])
    xs = [1000.0 / p["tpot_ms"] for p in pts]
    ys = [p["output_tokens_per_s_per_gpu"] for p in pts]
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.0, 4.2), dpi=96)
        ax = fig.subplots()
        ax.plot(xs, ys, color=LINE_COLOR, linewidth=1.6, marker="o", markersize=4)
        for p, x, y in zip(pts, xs, ys):
            ax.annotate(f"{p['concurrency']}", (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8)
        ax.set_xlabel("interactivity: output tokens/s per user (1000 / TPOT ms)")
        ax.set_ylabel("output tokens/s per GPU")
        ax.set_title(plain(title), loc="left")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(color="#e6e6e6", linewidth=0.6)
        ax.set_axisbelow(True)
        fig.tight_layout()
        svg = to_svg(fig, "curve")
    rows = "".join(
        f"<tr><td>{p['concurrency']}</td><td>{1000.0 / p['tpot_ms']:,.1f}</td>"
        f"<td>{p['output_tokens_per_s_per_gpu']:,.1f}</td><td>{p['tpot_ms']:,.2f}</td><td>{p['ttft_ms']:,.1f}</td>"
        f"<td>{escape(p['bound'])}</td></tr>" for p in pts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:24px;color:#222}svg{max-width:100%;height:auto}"
            "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:right;"
            "border-bottom:1px solid #ddd}</style></head><body>\n"
            f"<h1 style=\"font-size:18px\">{escape(title)}</h1>\n<p>{escape(subtitle)}</p>\n{svg}\n"
            "<table><tr><th>concurrency</th><th>tok/s per user</th><th>output tok/s per GPU</th><th>TPOT ms</th>"
            f"<th>TTFT ms</th><th>bound</th></tr>{rows}</table>\n</body></html>\n")
