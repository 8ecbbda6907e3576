"""The decision block: the console, the HTML report and the workbook's Summary say the same thing — Sign only a
proven item with no caveat, the caveats under it otherwise, and Provisional with the rerun while the plan is
unproven — and the Summary keeps every cell where it was. Results are stored ones edited by hand (no solve)."""

from __future__ import annotations

import html as htmllib
import re
from dataclasses import replace

import openpyxl
import pytest
from rich.console import Console

from optimizer import formatting
from optimizer.physics.validation import Validation
from optimizer.report import html
from optimizer.report.console import render_result
from optimizer.report.xlsx import workbook as excel
from optimizer.results import decision as D
from optimizer.results.jsonio import read_result

from tests.helpers.office import check_formulas, recalculate
from tests.helpers.paths import DATA

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

STORED = DATA / "results" / "35dde86-q1-with-commitments.json"


@pytest.fixture(scope="module")
def results():
    proven = read_result(STORED)
    caveated = replace(
        proven,
        workloads=[replace(w, validation=Validation("estimated", None, None, None, None, None, False))
                   if w.name == "chat" else w for w in proven.workloads],
        purchases=[replace(p, price_estimated=True) if p.tier == "reserved-1y" else p for p in proven.purchases])
    unproven = D.marked(replace(caveated, status="feasible",
                                solver=replace(caveated.solver, status="feasible", gap=0.232)))
    return {"proven": proven, "caveated": caveated, "unproven": unproven}


def console_text(result) -> str:
    con = Console(record=True, width=400, color_system=None)
    con.print(render_result(result))
    return con.export_text()


def html_text(result) -> str:
    page = html.render_html(result)
    block = page[page.index("<h2>Decision</h2>"):page.index("<h2>Cost by tier</h2>")]
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", block))


@pytest.fixture(scope="module")
def books(results, tmp_path_factory):
    out = tmp_path_factory.mktemp("decision-books")
    paths = {}
    for name, r in results.items():
        paths[name] = out / f"{name}.xlsx"
        excel.write_workbook(r, paths[name])
    return paths


def summary_decision(book) -> list[tuple[str, str]]:
    ws = openpyxl.load_workbook(book)["Summary"]
    rows = [r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Decision"]
    out, r = [], rows[0] + 1
    while ws.cell(r, 1).value:
        out.append((ws.cell(r, 1).value, ws.cell(r, 2).value))
        r += 1
    return out


def headed(heading: str, sentence: str, text: str) -> bool:
    """The console's decision row: the heading, padded to its column, then the sentence."""
    return re.search(rf"\b{heading}\s+│ {re.escape(sentence)}", text) is not None


def words(text: str) -> str:
    return " ".join(text.split())


def test_a_proven_plan_without_caveats_says_sign_in_all_three(results, books):
    r = results["proven"]
    rows = D.decide(r).rows()
    assert rows[0].what == "Sign" and not rows[0].caveats
    assert summary_decision(books["proven"])[0] == ("Sign", rows[0].text)
    assert headed("Sign", rows[0].text, console_text(r))
    assert words(f"Sign {rows[0].text}") in words(html_text(r))


@pytest.mark.parametrize("name", ["caveated", "unproven"])
def test_console_html_and_workbook_show_the_same_caveats_under_the_item(results, books, name):
    r = results[name]
    money = lambda v, nd=0: formatting.money(v, r.currency, nd)  # noqa: E731
    (item,) = D.decide(r, money).items
    expected = {"caveated": ["unvalidated_estimate", "estimated_price"],
                "unproven": ["provisional", "unvalidated_estimate", "estimated_price"]}[name]
    assert [c.kind for c in item.caveats] == expected
    heading = "Check" if name == "caveated" else "Provisional"
    assert item.heading == heading
    caveats = [c.text for c in item.caveats]
    assert any(c.startswith("rests on an unvalidated estimate: chat on coreweave-h200-sxm") for c in caveats)
    assert "price is an estimate: no published reserved-1y price for coreweave-h200-sxm (the catalog derives it)" \
        in caveats

    # workbook: the item's own cell holds the sentence and each caveat on a line of its own
    what, cell = summary_decision(books[name])[0]
    assert what == heading and cell.split("\n") == [item.sentence, *(f"· {c}" for c in caveats)]
    # console: the heading, then each caveat on the rows under it
    text = console_text(r)
    assert headed(heading, item.sentence, text)
    for c in caveats:
        assert f"· {c}" in text
    # HTML: the same words in the decision table
    page = words(html_text(r))
    assert words(f"{heading} {item.sentence}") in page
    for c in caveats:
        assert words(c) in page
    for shown in (text, page, cell):
        assert not re.search(r"\bSign\b", shown.replace("before signing", ""))


def test_the_unproven_plan_names_its_gap_and_the_rerun_in_all_three(results, books):
    r = results["unproven"]
    hint = "provisional: the search stopped at 23.20% of the bound (target 0.10%); rerun with a longer time limit"
    assert hint in summary_decision(books["unproven"])[0][1]
    assert hint in console_text(r)
    assert hint in words(html_text(r))
    assert "--time-limit 300" in summary_decision(books["unproven"])[0][1]


def test_the_summary_keeps_every_cell_where_it_was(books):
    """Caveats go in the item's cell: every other cell of the Summary and every workbook name stays put."""
    base = openpyxl.load_workbook(books["proven"])
    for name in ("caveated", "unproven"):
        other = openpyxl.load_workbook(books[name])
        assert {k: str(v.attr_text) for k, v in other.defined_names.items()} == \
            {k: str(v.attr_text) for k, v in base.defined_names.items()}
        a, b = base["Summary"], other["Summary"]
        assert (a.max_row, a.max_column) == (b.max_row, b.max_column)
        first = summary_decision_row(a)
        differ = [c.coordinate for row in a.iter_rows() for c in row
                  if c.value != b[c.coordinate].value and c.coordinate not in (f"A{first}", f"B{first}")]
        if name == "unproven":  # the status line says the solve stopped
            differ = [x for x in differ if a[x].value != "optimal (highs, proven gap 0.00%)"]
        assert differ == []


def summary_decision_row(ws) -> int:
    return next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Decision") + 1


@pytest.mark.slow
def test_the_caveated_workbooks_still_recalculate_to_their_stored_values(books, tmp_path):
    produced = recalculate(tmp_path, [books["caveated"], books["unproven"]])
    for name in ("caveated", "unproven"):
        assert sum(check_formulas(books[name], produced[name], ("Summary",)).values()) > 5


@pytest.mark.slow
def test_a_solve_stopped_before_its_proof_hands_over_nothing_to_sign(tmp_path, monkeypatch):
    """A real solve stopped short of its gap — HiGHS stopped at its first plan stands in for the clock, the same on
    every machine — marks every new commitment provisional in the JSON, and the console says so with the rerun."""
    from typer.testing import CliRunner

    from optimizer.cli import app
    from optimizer.optimize import solver as solver_mod
    from optimizer.synth.plans import generate

    from tests.helpers.solving import NO_TIME_LIMIT

    real = solver_mod._solve_highs

    def first_plan_only(prob, time_limit_s, mip_gap, msg, relax=False, warm=None, node_limit=None, progress=None,
                        first_plan=False, *rest, **kw):
        return real(prob, time_limit_s, mip_gap, msg, relax, warm, node_limit, progress, first_plan or not relax,
                    *rest, **kw)

    monkeypatch.setattr(solver_mod, "_solve_highs", first_plan_only)
    plan = tmp_path / "stopped.yaml"
    plan.write_text(generate(8, seed=1, mip_gap=0.0, time_limit_s=NO_TIME_LIMIT), encoding="utf-8")
    runner = CliRunner()
    args = ["solve", str(plan), "--solver", "highs", "--alternatives", "0"]
    res = runner.invoke(app, [*args, "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    import json

    d = json.loads(res.stdout)
    assert d["status"] == "feasible" and d["solver"]["gap"] > d["policy"]["mip_gap"]
    assert d["new_commitments"] and all(n["provisional"] is True for n in d["new_commitments"])
    console = runner.invoke(app, [*args, "-o", str(tmp_path / "out2")], terminal_width=400)
    assert console.exit_code == 0, console.output
    decision = console.output[console.output.index("Decision"):console.output.index("Cost by tier")]
    assert decision.count("provisional: the search stopped at") == len(d["new_commitments"])
    assert "before signing" in decision and not re.search(r"^\s*Sign\b", decision, re.M)


class _PastTheCap:
    """The steps' clock, a thousand seconds on at every reading: past any safety cap before the first plan, as on a
    machine far slower than any (only the steps' clock: the solver's own is real)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1000.0
        return self.now

    monotonic = time = perf_counter


@pytest.mark.slow
def test_a_solve_the_safety_cap_stopped_hands_over_nothing_to_sign_on_any_surface(tmp_path, monkeypatch):
    """A solve past its safety cap before its first plan (plans/q1-forecast.yaml --time-limit 10 on a busy machine
    had exited 3 with nothing) still returns the plan its first steps found, and the JSON, the console, the HTML
    decision block and the workbook's Summary all mark every new commitment provisional, with the rerun, and none
    Sign. HiGHS stopped at its first plan makes the plan unproven on every machine (mip_gap 0)."""
    import json

    from typer.testing import CliRunner

    from optimizer.cli import app
    from optimizer.optimize import solver as solver_mod
    from optimizer.synth.plans import generate

    from tests.helpers.steps import patch_steps

    real = solver_mod._solve_highs

    def first_plan_only(prob, time_limit_s, mip_gap, msg, relax=False, warm=None, node_limit=None, progress=None,
                        first_plan=False, *rest, **kw):
        return real(prob, time_limit_s, mip_gap, msg, relax, warm, node_limit, progress, first_plan or not relax,
                    *rest, **kw)

    monkeypatch.setattr(solver_mod, "_solve_highs", first_plan_only)
    patch_steps(monkeypatch, "time", _PastTheCap())
    plan = tmp_path / "capped.yaml"
    plan.write_text(generate(8, seed=1, mip_gap=0.0, time_limit_s=10), encoding="utf-8")
    runner = CliRunner()
    args = ["solve", str(plan), "--solver", "highs", "--alternatives", "0", "--time-limit", "10"]
    res = runner.invoke(app, [*args, "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["status"] == "feasible" and d["solver"]["gap"] > d["policy"]["mip_gap"], d["solver"]
    assert d["solver"]["stopped_by"]["relax"] != "safety cap", d["solver"]  # the relaxation is never cut
    items = [*d["new_commitments"], *d.get("new_spend_commitments", [])]
    assert d["new_commitments"] and all(n["provisional"] is True for n in items)
    console = runner.invoke(app, [*args, "-o", str(tmp_path / "out2")], terminal_width=400)
    assert console.exit_code == 0, console.output
    block = console.output[console.output.index("Decision"):console.output.index("Cost by tier")]
    page = (tmp_path / "out2" / "capped.html").read_text(encoding="utf-8")
    page = htmllib.unescape(re.sub(r"<[^>]+>", " ", page[page.index("<h2>Decision</h2>"):
                                                            page.index("<h2>Cost by tier</h2>")]))
    summary = summary_decision(tmp_path / "out2" / "capped.xlsx")
    cells = " ".join(f"{a} {b}" for a, b in summary)
    for surface, text in (("console", block), ("html", words(page)), ("workbook", words(cells))):
        assert words(text).count("provisional: the search stopped at") == len(d["new_commitments"]), surface
        assert "before signing" in text and not re.search(r"(^|\s)Sign\b", text), (surface, text)
    assert all(a != "Sign" for a, _b in summary) and any(a == "Provisional" for a, _b in summary)
