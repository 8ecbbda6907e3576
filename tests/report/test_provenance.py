"""Provenance: the HTML footer and the workbook's Assumptions say which planopt wrote them, when
(SOURCE_DATE_EPOCH when set, so the same result gives the same bytes), and where each offer's prices
come from and when they were checked."""

from __future__ import annotations

import datetime as dt
import html as htmllib
import json
import re
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from optimizer import __version__
from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.pipeline import solve_plan
from optimizer.report import html
from optimizer.report.provenance import NOT_KEPT, provenance
from optimizer.report.xlsx import workbook as excel
from optimizer.results.jsonio import dumps, from_dict, to_dict

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:Data Validation extension:UserWarning")

# Built-in catalog offers only: each has a source and an as-of date (plans/q4.yaml's own offers state no date).
PLAN = ROOT / "plans" / "serving" / "llama-70b-fp8-l40s.yaml"


@pytest.fixture(scope="module")
def result():
    return solve_plan(PLAN)


def footer(page: str) -> str:
    found = re.search(r"<footer>(.*)</footer>", page, re.S)
    assert found, "no footer"
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", found.group(1))))


def assumptions_rows(path: Path) -> dict[str, list]:
    ws = openpyxl.load_workbook(path)["Assumptions"]
    return {str(row[0]): [c for c in row[1:] if c is not None] for row in ws.iter_rows(values_only=True)
            if row[0] is not None}


def test_the_result_keeps_each_offers_price_source_and_as_of(result):
    offers = json.loads(dumps(result))["offers"]
    assert offers
    for o, info in offers.items():
        assert info["source"] and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", info["as_of"]), (o, info)


def test_html_footer_says_version_time_and_price_sources(result, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    text = footer(html.render_html(result))
    assert f"Written by planopt {__version__} on 2026-01-01 00:00:00 UTC (the time SOURCE_DATE_EPOCH gives)" in text
    for o, info in result.offers.items():
        assert re.search(rf"{re.escape(o)} {re.escape(info['source'])} {re.escape(info['as_of'])}", text), text


def test_workbook_assumptions_say_version_time_and_price_sources(result, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    path = tmp_path / "r.xlsx"
    excel.write_workbook(result, path)
    rows = assumptions_rows(path)
    assert rows["Written by"] == [f"planopt {__version__}"]
    assert rows["Written at"] == ["2026-01-01 00:00:00 UTC", "the time SOURCE_DATE_EPOCH gives"]
    assert rows["Where the prices come from"] == []
    assert rows["Offer"][:2] == ["As of", "Price source"]
    for o, info in result.offers.items():
        assert rows[o] == [info["as_of"], info["source"]]
    props = openpyxl.load_workbook(path).properties
    assert props.created == dt.datetime(2026, 1, 1) and props.creator == f"planopt {__version__}"


def test_with_source_date_epoch_two_renders_are_the_same_bytes(result, tmp_path, monkeypatch):
    def render(epoch: str, name: str) -> tuple[str, bytes]:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
        excel.write_workbook(result, tmp_path / name)
        return html.render_html(result), (tmp_path / name).read_bytes()

    first = render("0", "a.xlsx")
    assert render("0", "b.xlsx") == first
    # not vacuously: the time is in both files
    later = render("86400", "c.xlsx")
    assert later[0] != first[0] and later[1] != first[1]
    assert "1970-01-01 00:00:00 UTC" in footer(first[0]) and "1970-01-02 00:00:00 UTC" in footer(later[0])


def test_without_source_date_epoch_the_time_is_now(result, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    text = footer(html.render_html(result))
    after = dt.datetime.now(dt.timezone.utc)
    when = re.search(r"on (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC from", text)
    assert when, text
    assert before <= dt.datetime.fromisoformat(when.group(1)).replace(tzinfo=dt.timezone.utc) <= after
    assert "SOURCE_DATE_EPOCH" not in text


def test_a_result_written_before_sources_were_kept_still_renders(result, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    d = to_dict(result)
    for info in d["offers"].values():
        del info["source"], info["as_of"]
    text = footer(html.render_html(from_dict(d)))
    assert all(f"{o} {NOT_KEPT} {NOT_KEPT}" in text for o in d["offers"]), text


@pytest.mark.parametrize("value", ["yesterday", "-1", "1.5", "99999999999999999999"])
def test_a_bad_source_date_epoch_is_a_user_error(value, result, tmp_path):
    with pytest.raises(PlanError, match="SOURCE_DATE_EPOCH"):
        provenance({"SOURCE_DATE_EPOCH": value})
    res = CliRunner().invoke(app, ["solve", str(PLAN), "-o", str(tmp_path / "out")], env={"SOURCE_DATE_EPOCH": value})
    assert res.exit_code == 2, res.output
    assert "SOURCE_DATE_EPOCH" in res.output and "Traceback" not in res.output
