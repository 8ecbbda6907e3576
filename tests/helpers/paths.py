"""Where things are, whatever folder a test file sits in."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root: pyproject.toml, plans/, catalogs/."""
PLANS = ROOT / "plans"
SEED = PLANS / "seed-fleet.yaml"
Q4 = PLANS / "q4.yaml"
DATA = ROOT / "tests" / "data"
"""Log files, load tests, checkpoint sizes and a LibreOffice profile the tests read."""
BAD_PLANS = ROOT / "tests" / "bad_plans"
