"""Result and sweep files larger than any plan writes are refused before they are read."""

from __future__ import annotations

import pytest

from optimizer.errors import PlanError
from optimizer.results import jsonio
from optimizer.results import sweep as sweep_file


def test_a_result_over_the_bound_is_refused_by_its_size(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text("{" + " " * 2000 + "}", encoding="utf-8")
    monkeypatch.setattr(jsonio, "MAX_FILE_BYTES", 1000)
    with pytest.raises(PlanError, match=r"over the 0 MB a result may be") as info:
        jsonio.read_result(path)
    assert str(path) in str(info.value)


def test_a_sweep_over_the_bound_is_refused_by_its_size(tmp_path, monkeypatch):
    path = tmp_path / "sweep.jsonl"
    path.write_text("\n" * 2000, encoding="utf-8")
    monkeypatch.setattr(sweep_file, "MAX_FILE_BYTES", 1000)
    with pytest.raises(PlanError, match="a sweep.jsonl may be"):
        sweep_file.read_sweep(path)


def test_the_bound_is_far_above_what_a_large_plan_writes():
    assert jsonio.MAX_FILE_BYTES >= 10 * 25_000 * 1_000  # ten times a 1,000-workload plan's result
