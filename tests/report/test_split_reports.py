"""Reports of a workload split by request size (split: by_size): every config that serves, with its share of each
size class and its cost, in the result file, the console, `explain`, the HTML page and the live workbook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import openpyxl
import pytest

from optimizer.pipeline import solve_plan
from optimizer.report import html
from optimizer.report.console import render_result
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import dumps, read_result

from tests.helpers.office import check_formulas, need, recalculate
from tests.optimize.test_split import MELANGE_CLASSES, melange_plan

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    path = tmp_path_factory.mktemp("split") / "melange.json"
    plan = melange_plan(30)
    plan["horizon_days"] = 2
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return solve_plan(path)


def _chat(result):
    return next(w for w in result.workloads if w.name == "chat")


def test_the_result_carries_each_config_and_the_size_classes(solved, tmp_path: Path) -> None:
    w = _chat(solved)
    assert len(w.split) == 2 and set(w.split_configs) == set(w.split)
    assert [(k.share, k.input, k.output) for k in w.size_classes] == [tuple(map(float, c)) for c in MELANGE_CLASSES]
    assert sum(x.cost for x in w.split_configs.values()) == pytest.approx(w.cost, rel=1e-12)
    assert sum(x.gpu_hours for x in w.split_configs.values()) == pytest.approx(w.gpu_hours, rel=1e-12)
    assert {x.offer for x in w.split_configs.values()} == {"aws-a10g", "aws-a100-80gb"}
    for label, x in w.split_configs.items():
        assert x.replicas.total * x.gpus_per_replica == w.split_gpus_at_peak[label]
        price = 1.01 if x.offer == "aws-a10g" else 3.67
        assert x.cost == pytest.approx(x.gpu_hours * price, rel=1e-9)  # on-demand only, whole GPUs
    assert sum(x.replicas.total for x in w.split_configs.values()) == w.replicas.total
    (tmp_path / "r.json").write_text(dumps(solved), encoding="utf-8")
    back = read_result(tmp_path / "r.json")
    assert dumps(back) == dumps(solved)
    assert _chat(back).split_configs == {k: x for k, x in _chat(back).split_configs.items()}
    assert not any("splits its traffic" in n for n in solved.notes)  # the reports show it: no warning


def test_console_lists_each_config_with_its_shares_and_the_classes(solved) -> None:
    from rich.console import Console

    console = Console(width=260, record=True)
    console.print(render_result(solved))
    text = console.export_text()
    assert "split by request size among 2 configs" in text
    assert "40% 250→100 · 20% 250→800 · 30% 2,000→100 · 10% 2,000→800" in text
    for label, shares in _chat(solved).split.items():
        assert f"↳ {label}: " + " / ".join(f"{z:.0%}" for z in shares) in text


def test_html_lists_each_config_with_its_shares_and_cost(solved) -> None:
    page = html.render_html(solved)
    section = page[page.index('id="workloads"'):page.index('id="showback"')]
    w = _chat(solved)
    assert "Split by request size among 2 configs" in section
    assert "2,000 → 800 tokens" in section
    for label, x in w.split_configs.items():
        assert label in section
        assert f"${x.cost:,.0f}" in section
    assert section.count("<li>") >= 4  # the peak, each config's arithmetic, the sum


def test_workbook_prices_each_config_live(solved, tmp_path: Path) -> None:
    need("soffice", "libreoffice")
    book = tmp_path / "split.xlsx"
    excel.write_workbook(solved, book)
    wb = openpyxl.load_workbook(book)
    name = next(n for n in wb.defined_names if n.startswith("price_aws_a10g") and n.endswith("on_demand"))
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    wb[sheet][coord.replace("$", "")].value *= 2
    doubled = tmp_path / "split-doubled.xlsx"
    wb.save(doubled)
    out = recalculate(tmp_path / "lo", [book, doubled])
    checked = check_formulas(book, out["split"])
    assert checked["Workloads"] >= 30
    w = _chat(solved)
    rows = list(openpyxl.load_workbook(out["split"], data_only=True)["Workloads"].iter_rows(values_only=True))
    head = rows[3]
    cost_col, offer_col, base_col = head.index("Cost over the horizon (tiers it used + API)"), head.index("Offer"), \
        head.index("Base replicas")
    by_offer = {r[offer_col]: r for r in rows[4:] if r[0] == "chat" and r[offer_col] in ("aws-a10g", "aws-a100-80gb")}
    assert set(by_offer) == {"aws-a10g", "aws-a100-80gb"}
    for x in w.split_configs.values():
        assert by_offer[x.offer][cost_col] == pytest.approx(x.cost, rel=1e-9)
        assert by_offer[x.offer][base_col] == x.replicas.base
    workload_row = next(r for r in rows[4:] if r[0] == "chat")
    assert workload_row[cost_col] == pytest.approx(w.cost, rel=1e-9)
    # the configs' replicas are formulas of the peak, the class shares and the goodputs: not pasted numbers
    formulas = openpyxl.load_workbook(book)["Workloads"]
    config_rows = [i for i, r in enumerate(rows) if r[0] == "chat" and r[offer_col] in by_offer]
    for i in config_rows:
        assert str(formulas.cell(i + 1, base_col + 1).value).startswith("=")
        assert str(formulas.cell(i + 1, cost_col + 1).value).startswith("=")
    again = list(openpyxl.load_workbook(out["split-doubled"], data_only=True)["Workloads"].iter_rows(values_only=True))
    a10g = next(x for x in w.split_configs.values() if x.offer == "aws-a10g")
    moved = next(r for r in again[4:] if r[0] == "chat")[cost_col]
    assert moved == pytest.approx(w.cost + a10g.cost, rel=1e-9)
    assert re.match(r"\d+ configs \(below\)", str(workload_row[offer_col]))
