"""The HTML report laid out by Chromium: no amount, number or date is broken across lines, on screen or on paper.

A script added to a copy of the page measures every number-like token in the text (a DOM Range over
it: its boxes must all sit on one line) and every element the template marks as a number (`.n`),
then writes what it found into the DOM, which `chromium --dump-dom` prints. Print is measured on a
copy whose `@media print` rules apply on screen, at the width the template's `@page` leaves on A4.
"""

from __future__ import annotations

import html as htmllib
import json
import re
import subprocess
from pathlib import Path

import pytest
from test_reports import need

from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.report import html

ROOT = Path(__file__).resolve().parent.parent
SCREEN_WIDTH_PX = 1280
NARROW_WIDTH_PX = 600  # a laptop's split screen: wide tables scroll in their boxes
PRINT_WIDTH_PX = 718  # A4 portrait less the template's 10 mm @page margins: 190 mm at 96 px per inch (Letter: 740)

# Dates (2026-02-15, 2026-08, 2027-Q1), times (14:00) and amounts ($110,493, -$5.16, 12.5%, 1,234 EUR);
# not the digits inside ids such as h100-sxm or us-east-1.
MEASURE = r"""
<script>
(() => {
  const PRINT = __PRINT__;
  const TOKEN = /(?<![\w.,:\/$+\-\u2212])(?:\d{4}-(?:\d{2}(?:-\d{2})?|Q[1-4])|\d{1,2}:\d{2}|[+\-\u2212]?\$?\d[\d,]*(?:\.\d+)?%?(?:\u00a0[A-Z]{3})?)(?![\w\-\/])/g;
  const lines = (range) => {
    const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0).sort((a, b) => a.top - b.top);
    let n = 0, bottom = -Infinity;
    for (const r of rects) { if (r.top >= bottom - 1) { n += 1; } bottom = Math.max(bottom, r.bottom); }
    return n;
  };
  const broken = [], marked = [], range = document.createRange();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: (t) =>
    t.parentElement.closest("svg, script, style") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  let tokens = 0;
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    for (const m of t.data.matchAll(TOKEN)) {
      if (m[0].length < 2) continue;
      range.setStart(t, m.index);
      range.setEnd(t, m.index + m[0].length);
      const n = lines(range);
      if (n > 0) tokens += 1;
      if (n > 1) broken.push(m[0]);
    }
  }
  for (const el of document.querySelectorAll(".n, .card .v")) {
    range.selectNodeContents(el);
    if (lines(range) > 1) marked.push(el.textContent.trim());
  }
  // On paper nothing may run past the page; on screen a table may run past it inside a box that scrolls.
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const inScrollBox = (el) => { for (let a = el.parentElement; a; a = a.parentElement) if (scrolls(a)) return true; return false; };
  const width = document.documentElement.clientWidth;
  const overflow = [...document.querySelectorAll("body *")]
    .filter(el => !el.closest("svg") && el.getBoundingClientRect().right > width + 1 && (PRINT || !inScrollBox(el)))
    .map(el => el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className : "")
               + " " + Math.round(el.getBoundingClientRect().right) + "px");
  const report = document.createElement("pre");
  report.id = "layout-report";
  report.textContent = JSON.stringify({width, tokens, marked_count: document.querySelectorAll(".n").length,
                                       broken, marked, overflow, page: document.documentElement.scrollWidth});
  document.body.append(report);
})();
</script>
"""


@pytest.fixture(scope="module")
def page() -> str:
    # A quick incumbent is enough: the layout must hold for whatever fleet the report shows.
    # This plan has the widest tables (signed contracts with their dates, new reservations, expiry).
    result = solve_plan(ROOT / "plans" / "q1-with-commitments.yaml", SolveOptions(time_limit_s=5, mip_gap=0.05))
    return html.render_html(result)


def as_printed(text: str) -> str:
    """The page with its print rules in force on screen (headless Chromium cannot emulate print media)."""
    assert "@media print" in text
    return text.replace("@media screen", "@media not all").replace("@media print", "@media all")


def measure(text: str, width: int, printed: bool, tmp_path: Path) -> dict:
    chromium = need("chromium", "chromium-browser", "google-chrome")
    path = tmp_path / f"page-{width}.html"
    script = MEASURE.replace("__PRINT__", "true" if printed else "false")
    path.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={tmp_path / f'profile-{width}'}", "--hide-scrollbars",
                           f"--window-size={width},1000", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="layout-report">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"Chromium printed no layout report (exit {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(htmllib.unescape(found.group(1)))
    assert out["width"] == width, f"the page was laid out {out['width']} px wide, not {width}"
    assert out["tokens"] > 100, out  # the script saw the numbers
    return out


@pytest.mark.parametrize("medium, width", [("screen", SCREEN_WIDTH_PX), ("screen", NARROW_WIDTH_PX),
                                           ("print", PRINT_WIDTH_PX)])
def test_no_amount_number_or_date_breaks_across_lines(page, medium, width, tmp_path):
    printed = medium == "print"
    out = measure(as_printed(page) if printed else page, width, printed, tmp_path)
    assert not out["broken"], f"{medium} at {width} px: broken across lines: {out['broken'][:20]}"
    assert out["marked_count"] > 100, "the template marks its number cells with class n"
    assert not out["marked"], f"{medium} at {width} px: number cells on more than one line: {out['marked'][:20]}"
    # Wide tables scroll inside their box on screen; on paper nothing may run off the page.
    assert not out["overflow"], f"{medium} at {width} px: wider than the page: {out['overflow'][:10]}"
    assert out["page"] <= width, f"{medium}: the page is {out['page']} px wide at {width} px"
