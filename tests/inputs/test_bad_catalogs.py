"""Bad catalogs (tests/data/bad_inputs/catalogs): every case refused through the CLI by one rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bad_input_rule import CORPUS, cases, refused

PLAN = CORPUS.parent / "calibrate" / "plan.yaml"


@pytest.mark.parametrize("case", cases("catalogs"), ids=lambda c: c["file"])
def test_every_bad_catalog_is_refused_by_the_rule(case: dict, tmp_path: Path) -> None:
    catalog = CORPUS / "catalogs" / case["file"]
    refused(["validate", PLAN, "--catalog", catalog, *case.get("args", [])], [PLAN, catalog], tmp_path,
            str(catalog), case["expect"])
