"""Spend commitments in the reports: the console's and HTML's tables (tests/optimize/test_savings_plans.py's plan:
a new commitment beside a signed one ending mid-quarter)."""

from __future__ import annotations

from tests.optimize.test_savings_plans import _both


def test_console_and_html_show_the_spend_commitments(tmp_path):
    import io

    from rich.console import Console

    from optimizer.report.console import render_result
    from optimizer.report.html import render_html

    r = _both(tmp_path)
    con = Console(width=400, record=True, file=io.StringIO())
    con.print(render_result(r))
    text = con.export_text()
    assert "New spend commitments over their full term" in text and "Spend commitments already signed" in text
    n = r.new_spend_commitments[0]
    assert f"${n.usd_per_hour:,.2f}" in text and f"{n.break_even_utilization:.0%}" in text
    page = render_html(r)
    assert "New spend commitments over their full term" in page and "Spend commitments already signed" in page


def test_the_decision_says_what_to_sign(tmp_path):
    from optimizer.results.decision import decide

    r = _both(tmp_path)
    n = r.new_spend_commitments[0]
    lines = [e.text for e in decide(r).entries if getattr(e, "topic", "") == "reserve"]
    assert any(f"${n.usd_per_hour:,.2f}/hour" in t and "over the term" in t and "break-even 65%" in t
               for t in lines), lines
