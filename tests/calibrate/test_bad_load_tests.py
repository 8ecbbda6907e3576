"""Bad load tests (tests/data/bad_inputs/loadtests): every case refused through the CLI by one rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bad_input_rule import CORPUS, cases, refused

PLAN = CORPUS.parent / "calibrate" / "plan.yaml"


@pytest.mark.parametrize("case", cases("loadtests"), ids=lambda c: c["file"])
def test_every_bad_load_test_is_refused_by_the_rule(case: dict, tmp_path: Path) -> None:
    bench = CORPUS / "loadtests" / case["file"]
    out = tmp_path / "out.yaml"
    refused(["calibrate", PLAN, "--bench", bench, "-o", out, *case.get("args", [])], [PLAN, bench], tmp_path,
            str(bench), case["expect"])
