"""The test suite, by stage of the pipeline.

    tests/inputs      plans, catalogs and their validation      tests/results    result files, baselines, ledgers
    tests/physics     memory, KV, replicas, queueing            tests/report     console, HTML, workbook
    tests/candidates  configs per workload                      tests/calibrate  logs, load tests, forecasts
    tests/optimize    the integer program against brute force   tests/cli        the command line and its faults
    tests/e2e         whole pipeline, shipped plans, the built package, the layers

What several files share lives in tests/helpers (plan builders, enumerators, paths, LibreOffice and
Chromium): a test file imports `tests.helpers.*`, never another test file. tests/bad_plans and tests/data
are the inputs the tests read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# pytest-xdist's workers inherit COLUMNS=80, and the console honours COLUMNS (the user's word): the CLI's
# output in tests would wrap where a user's piped output does not. Tests that mean a width set it themselves.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

E2E = Path(__file__).resolve().parent / "e2e"


@pytest.fixture(scope="session", autouse=True)
def _solved_plans_shared(tmp_path_factory) -> None:
    """tests.helpers.shipped keeps the plans it solves where every worker of this session finds them: beside the
    workers' own base temps (pytest-xdist gives each worker one inside the session's), or in the base temp
    when the tests run in one process."""
    from tests.helpers import shipped

    base = tmp_path_factory.getbasetemp()
    shipped.configure((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "solved-plans")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/e2e/ is marked e2e (whole-pipeline tests in the stage folders carry the mark
    themselves), so `-m "not e2e"` runs the stage tests alone."""
    for item in items:
        if item.path.is_relative_to(E2E):
            item.add_marker(pytest.mark.e2e)
