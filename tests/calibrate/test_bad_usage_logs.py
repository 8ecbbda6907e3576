"""Bad usage logs (tests/data/bad_inputs/usage): every case refused through the CLI by one rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bad_input_rule import CORPUS, cases, refused

PLAN = CORPUS.parent / "calibrate" / "plan.yaml"


@pytest.mark.parametrize("case", cases("usage"), ids=lambda c: c["file"])
def test_every_bad_usage_log_is_refused_by_the_rule(case: dict, tmp_path: Path) -> None:
    log = CORPUS / "usage" / case["file"]
    out = tmp_path / "out.yaml"
    command = case.get("command", "calibrate")
    extra = ["--start", "2027-01-01"] if command == "forecast" else []
    refused([command, PLAN, "--usage", log, *extra, "-o", out, *case.get("args", [])], [PLAN, log], tmp_path,
            str(log), case["expect"])
