"""The HTML report laid out by headless Chromium: a script measures every number-like token and
element marked as a number, and what overflows the page (tests/report/test_html_layout.py)."""

from __future__ import annotations

import html as htmllib
import json
import re
import subprocess
from pathlib import Path

from tests.helpers.office import need


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
                          capture_output=True, text=True, timeout=360)
    found = re.search(r'<pre id="layout-report">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"Chromium printed no layout report (exit {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(htmllib.unescape(found.group(1)))
    assert out["width"] == width, f"the page was laid out {out['width']} px wide, not {width}"
    assert out["tokens"] > 100, out  # the script saw the numbers
    return out
