"""A sweep's values are validated by the plan's schema, as a plan file stating them would be: the schema's limits
are stated there alone, and a value outside one gets the schema's message (the points are made by model_copy,
which skips validation, so the sweep validates the models it changes again)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "plans" / "seed-fleet.yaml"

runner = CliRunner()


def _said(res) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    return " ".join(res.output.split())


def _schema_message(text: str) -> str:
    """pydantic's words for a limit: 'input should be less than or equal to 1'."""
    found = re.search(r"input should be (?:less|greater) than(?: or equal to)? [\d.e+]+", text)
    assert found, text
    return found.group(0)


@pytest.mark.parametrize("edit, vary, key", [
    (("occupancy: 0.6", "occupancy: 1.2"), "occupancy=0.5:1.2:2", "policy.occupancy 1.2"),
    (("occupancy: 0.6", "occupancy: 0.001"), "occupancy=0.001:0.6:2", "policy.occupancy 0.001"),
    (("peak_output_tokens_per_s: 9000", "peak_output_tokens_per_s: 9e12"), "demand=1:1e9:2",
     "demand.peak_output_tokens_per_s 9e+12"),
])
def test_a_sweep_value_outside_a_schema_limit_gets_the_schema_s_message(tmp_path, edit, vary, key):
    text = SEED.read_text(encoding="utf-8")
    assert edit[0] in text
    stated = tmp_path / "stated.yaml"
    stated.write_text(text.replace(edit[0], edit[1]), encoding="utf-8")
    by_file = _said(runner.invoke(app, ["validate", str(stated)]))
    by_sweep = _said(runner.invoke(app, ["sweep", str(SEED), "--vary", vary, "-o", str(tmp_path / "out")]))
    assert _schema_message(by_sweep) == _schema_message(by_file)
    assert f"--vary {vary.split('=')[0]}: " in by_sweep and f"{key} is out of range: " in by_sweep, by_sweep
    assert not (tmp_path / "out").exists()


def test_a_sweep_inside_the_limits_is_not_refused(tmp_path):
    res = runner.invoke(app, ["sweep", str(SEED), "--vary", "occupancy=0.5:1:2", "--vary", "demand=0.5:2:2",
                              "-o", str(tmp_path / "out"), "--workers", "1", "--json"])
    assert res.exit_code == 0, res.output
