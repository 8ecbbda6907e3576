"""The programs the report tests drive: LibreOffice recalculating workbooks, and a binary looked up
or the test skipped (failed in CI, where .ci/run installs them)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest

from tests.helpers.paths import DATA


PROFILE_XCU = DATA / "libreoffice-recalc-profile.xcu"

ERROR_VALUE = re.compile(r"^(#(NAME\?|VALUE!|REF!|DIV/0!|N/A|NUM!|NULL!)|Err:\d+)")

def need(*names: str) -> str:
    """The first binary found; skip without it, except in CI (.ci/run installs it) where that fails."""
    for n in names:
        path = shutil.which(n)
        if path:
            return path
    msg = f"{names[0]} is not installed (apt-get install -y {'libreoffice-calc' if 'soffice' in names else names[0]})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{msg}: .ci/run must install it")
    pytest.skip(msg)



def recalculate(base: Path, inputs: list[Path]) -> dict[str, Path]:
    """Workbooks recalculated by LibreOffice in one call, with a profile that forces recalculation:
    input stem → the recalculated copy."""
    soffice = need("soffice", "libreoffice")
    profile = base / "profile"
    (profile / "user").mkdir(parents=True)
    shutil.copy(PROFILE_XCU, profile / "user" / "registrymodifications.xcu")
    out = base / "out"
    proc = subprocess.run([soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                           "--convert-to", "xlsx", "--outdir", str(out), *map(str, inputs)],
                          capture_output=True, text=True, timeout=600)
    produced = {p.stem: out / p.name for p in inputs}
    missing = [str(p) for p in produced.values() if not p.exists()]
    assert not missing, f"LibreOffice wrote nothing for {missing}: {proc.stdout} {proc.stderr}"
    return produced



def check_formulas(book: Path, recalculated: Path, sheets: tuple[str, ...] | None = None, label: str = "",
                   text: bool = True) -> dict[str, int]:
    """Every formula of `book` (on `sheets`, default all) recalculates in LibreOffice to the value stored
    with it: no error, numbers within 1e-9 (1e-6 absolute); with `text`, a value is stored with every
    formula and anything not a number is equal too (a formula that may give "" is stored without one).
    Returns the formulas checked per sheet."""
    formulas = openpyxl.load_workbook(book)
    stored = openpyxl.load_workbook(book, data_only=True)
    again = openpyxl.load_workbook(recalculated, data_only=True)
    per_sheet: dict[str, int] = {}
    for title in sheets or formulas.sheetnames:
        for row in formulas[title].iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                per_sheet[title] = per_sheet.get(title, 0) + 1
                a, b = stored[title][c.coordinate].value, again[title][c.coordinate].value
                where = f"{label}{title}!{c.coordinate} {c.value}"
                assert not text or a is not None, f"{where}: no value stored with the formula"
                assert not (isinstance(b, str) and ERROR_VALUE.match(b)), f"{where}: evaluates to {b}"
                if isinstance(a, (int, float)) and not isinstance(a, bool):
                    assert not text or isinstance(b, (int, float)), f"{where}: stored {a!r}, recalculated {b!r}"
                    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6), f"{where}: stored {a}, recalculated {b}"
                elif text:
                    assert a == b, f"{where}: stored {a!r}, recalculated {b!r}"
    return per_sheet
