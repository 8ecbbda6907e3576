"""The bad-input corpus: every file in tests/bad_plans/ is refused by the real CLI with exit 2.

Each case is a real file whose header says what must come out:

    # what is wrong, in words
    # expect: a fragment of the message (one line per fragment; all must appear)
    # file: catalogs/x.yaml      (optional: the file the line is in; default the plan itself)
    # line: 14                   (or `none` where no line exists, e.g. an empty file)

Refused means: exit code 2, `FILE:LINE:` on an error line with every fragment, every error line
with a fix (` — `), no traceback, no output file anywhere, and every input byte unchanged.
Headers of UTF-16 cases are UTF-16 as well (the whole file is); Latin-1 cases keep ASCII headers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

from tests.helpers.paths import BAD_PLANS, ROOT

CORPUS = BAD_PLANS
GOOD = CORPUS / "good"


@dataclass(frozen=True)
class Case:
    path: Path
    expects: tuple[str, ...]
    file: Path
    """The file the error points into (the plan, or a catalog it names)."""
    line: int | None


def _header_text(raw: bytes) -> str:
    for bom, enc in ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            return raw.decode(enc)
    if raw[1:2] == b"\x00":  # UTF-16 LE without a byte-order mark
        return raw.decode("utf-16-le", errors="replace")
    return raw.decode("utf-8", errors="replace")


def read_case(path: Path) -> Case:
    expects: list[str] = []
    file, line = path, None
    seen_line = False
    for text in _header_text(path.read_bytes()).splitlines():
        if not text.startswith("#"):
            break
        key, _, value = text[1:].strip().partition(":")
        value = value.strip()
        if key == "expect":
            expects.append(value)
        elif key == "file":
            file = CORPUS / value
        elif key == "line":
            seen_line = True
            line = None if value == "none" else int(value)
    assert expects, f"{path.name}: no `# expect:` line"
    assert seen_line, f"{path.name}: no `# line:` line (write `# line: none` where no line exists)"
    return Case(path, tuple(expects), file, line)


CASES = sorted(CORPUS.glob("*.yaml"))


def _snapshot() -> dict[str, str]:
    """Hash of every file in the corpus, catalogs included: bad input must change none of them."""
    return {str(p.relative_to(CORPUS)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(CORPUS.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def check_refusal(case: Case, output: str, code: int) -> None:
    assert code == 2, f"exit {code}, expected 2:\n{output}"
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert errors, output
    if case.line is not None:
        where = f"{case.file}:{case.line}: "
        hits = [e for e in errors if where in e]
        assert hits, f"no error at {where}\n{output}"
    else:
        hits = [e for e in errors if f"{case.file}:" in e or f"{case.file.name}:" in e]
        assert hits, f"no error names {case.file}\n{output}"
    text = "\n".join(hits)
    for fragment in case.expects:
        assert fragment in text, f"{fragment!r} missing at {case.file.name}:{case.line}:\n{output}"
    for e in errors:
        assert " — " in e, f"an error without a fix: {e}"


def test_the_corpus_is_large_and_well_formed() -> None:
    cases = [read_case(p) for p in CASES]
    assert len(cases) >= 40
    assert len({c.path.name.split("-")[0] for c in cases}) == len(cases), "case numbers are unique"
    referenced = {c.file.name for c in cases if c.file != c.path}
    on_disk = {p.name for p in (CORPUS / "catalogs").glob("*.yaml")}
    assert referenced <= on_disk


@pytest.fixture(scope="module")
def corpus_snapshot():
    before = _snapshot()
    yield
    assert _snapshot() == before, "a bad input file changed"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_bad_input_is_refused(path: Path, tmp_path: Path, monkeypatch, corpus_snapshot) -> None:
    case = read_case(path)
    monkeypatch.chdir(tmp_path)  # default outputs would land here; relative escapes leave both folders
    before = path.read_bytes()
    started = time.process_time()  # CPU, not the wall: the tests share the cores with each other
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    elapsed = time.process_time() - started
    check_refusal(case, res.output, res.exit_code)
    assert list(tmp_path.iterdir()) == [], "bad input must write nothing"
    assert path.read_bytes() == before
    assert elapsed < 5, f"refusing took {elapsed:.1f} s of CPU"


SUBPROCESS = ["alias-bomb", "python-object-apply", "latin-1", "utf-16-bom", "model-fits-nowhere",
              "catalog-offer-unknown-accelerator"]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_bad_input_is_refused_by_a_fresh_process(name: str, tmp_path: Path) -> None:
    """The installed entry point's path: real stderr, real exit code, `--json` stdout stays clean."""
    path = next(p for p in CASES if p.stem.split("-", 1)[1] == name)
    case = read_case(path)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "optimizer.cli", "solve", str(path), "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    check_refusal(case, proc.stderr, proc.returncode)
    assert "Traceback" not in proc.stdout
    if proc.stdout.strip():  # nothing, or the contract's error object
        assert json.loads(proc.stdout)["status"] == "error"
    assert list(tmp_path.iterdir()) == []


def test_every_problem_of_a_file_at_once(tmp_path: Path) -> None:
    """Three independent mistakes, three errors, one run."""
    text = (CORPUS / "good" / "bom-plan.yaml").read_bytes().decode("utf-8-sig")
    text = text.replace("occupancy: 0.6", "occupency: 0.6").replace("model: llama-3.1-70b", "model: llama-3.1-70")
    text = text.replace("peak_output_tokens_per_s: 9000", "peak_output_tokens_per_s: -1")
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2
    # Schema errors come first; cross-references (the model id) are checked once the schema holds.
    assert "2 problems; nothing was written" in res.output, res.output
    assert "did you mean 'occupancy'?" in res.output and "-1 is out of range" in res.output


def test_a_bom_prefixed_plan_solves(tmp_path: Path, monkeypatch) -> None:
    path = GOOD / "bom-plan.yaml"
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["solve", str(path), "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    w = result["workloads"][0]
    base = math.ceil(9000 / (w["goodput_output_tokens_per_s"] * 0.6) - 1e-9)
    assert result["status"] == "optimal" and w["replicas"]["base"] == base


def test_header_reader_understands_every_encoding() -> None:
    by_name = {p.stem.split("-", 1)[1]: read_case(p) for p in CASES}
    assert by_name["utf-16-bom"].expects == ("UTF-16", "UTF-8")
    assert by_name["latin-1"].line is not None
    assert all(re.match(r"^\d{3}-[a-z0-9-]+\.yaml$", p.name) for p in CASES)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_validate_finds_what_solve_finds(path: Path, tmp_path: Path, monkeypatch, corpus_snapshot) -> None:
    """`planopt validate` makes every check `solve` makes before the program: the same error lines,
    the same exit code, and with --json the same problems with file, line, key, message and fix."""
    monkeypatch.chdir(tmp_path)
    solved = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    started = time.process_time()  # this process's CPU: the tests share the cores with each other
    checked = CliRunner().invoke(app, ["validate", str(path)])
    elapsed = time.process_time() - started
    as_json = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert checked.exit_code == solved.exit_code == as_json.exit_code == 2
    lines = sorted(line for line in solved.output.splitlines() if line.startswith("error:"))
    assert sorted(line for line in checked.output.splitlines() if line.startswith("error:")) == lines
    report = json.loads(as_json.stdout)
    assert report["valid"] is False and report["plans"][0]["status"] == "invalid"
    problems = report["plans"][0]["problems"]
    assert len(problems) == len(lines)
    for p in problems:
        assert set(p) == {"file", "line", "key", "message", "fix"} and p["message"]
    assert list(tmp_path.iterdir()) == [], "validate writes nothing"
    # a guard against expanding what a bad plan asks for (a billion laughs fully expanded takes minutes), not
    # a speed test: validating the largest case costs 0.65–1.4 s of CPU on the two-core CI machine
    assert elapsed < 5.0, f"validating took {elapsed:.2f} s of CPU"
