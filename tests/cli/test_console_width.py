"""The console's width when planopt's output is piped: COLUMNS when set, else a width that keeps ids whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def piped(*args: str, columns: int | None = None, timeout: float = 360) -> subprocess.CompletedProcess:
    """`planopt ARGS | …`: a fresh process whose stdout is a pipe, with COLUMNS as given (unset for None)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "optimizer.cli", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_q4_piped_shows_every_offer_id_and_workload_name_whole(tmp_path):
    res = piped("solve", ROOT / "plans" / "q4.yaml", "-o", tmp_path, timeout=900)
    assert res.returncode == 0, res.stderr
    result = json.loads((tmp_path / "q4.json").read_text(encoding="utf-8"))
    ids = {p["offer"] for p in result["purchases"]} | {w["offer"] for w in result["workloads"] if w.get("offer")}
    names = {w["name"] for w in result["workloads"]}
    assert ids and names
    words = set(res.stdout.split())
    assert ids <= words, ids - words
    assert names <= words, names - words
    tables = res.stdout[res.stdout.index("Workloads"):]
    assert "…" not in tables


def test_columns_is_honoured_when_piped():
    narrow = piped("catalog", "offers", columns=90)
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90
    wide = piped("catalog", "offers")
    assert max(len(line) for line in wide.stdout.splitlines()) > 90


def test_a_narrow_console_folds_ids_instead_of_cutting_them():
    res = piped("catalog", "offers", columns=60)
    assert res.returncode == 0, res.stderr
    assert max(len(line) for line in res.stdout.splitlines()) <= 60
    rows = [line for line in res.stdout.splitlines() if "│" in line]
    assert rows and not any("…" in row.split("│")[0] for row in rows)
    # the id column, read down, holds every offer id in order
    column = "".join(row.split("│")[0].strip() for row in rows)
    ids = [row["id"] for row in json.loads(piped("catalog", "offers", "--json").stdout)]
    assert column == "".join(ids)
