"""The HTML report laid out by Chromium: no amount, number or date is broken across lines, on screen or on paper.

A script added to a copy of the page measures every number-like token in the text (a DOM Range over
it: its boxes must all sit on one line) and every element the template marks as a number (`.n`),
then writes what it found into the DOM, which `chromium --dump-dom` prints. Print is measured on a
copy whose `@media print` rules apply on screen, at the width the template's `@page` leaves on A4.
"""

from __future__ import annotations


import pytest

from optimizer.report import html

from tests.helpers import shipped
from tests.helpers.layout import NARROW_WIDTH_PX, PRINT_WIDTH_PX, SCREEN_WIDTH_PX, as_printed, measure
from tests.helpers.paths import ROOT


@pytest.fixture(scope="module")
def page() -> str:
    # The layout must hold for whatever fleet the report shows: the session's shared solve of the plan serves.
    # This plan has the widest tables (signed contracts with their dates, new reservations, expiry).
    result = shipped.solved(ROOT / "plans" / "q1-with-commitments.yaml")
    return html.render_html(result)


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
