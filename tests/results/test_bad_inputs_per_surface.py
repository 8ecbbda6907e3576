"""The bad-input corpora of result files, sweeps, carry and baseline, owned hardware and scenarios
(tests/data/bad_inputs/<surface>/), each case run through the real CLI and judged by one rule.

Each folder's README.md has a table: the case, the command (`{case}` the file, `{plan}` the folder's plan.yaml,
`{out}` a fresh folder, `{dir}` a fresh folder holding the case as sweep.jsonl), the exit code, and the fragments
(in backticks) that must be said. The rule:
- exit 2 (refused) or 0 (a warning case: `warning:` with the fragments);
- no traceback;
- every fragment said, and a refusal names the file it refuses (the case; for a sweep of the case itself, its
  --vary is what is named);
- a refusal writes nothing: {out} not made, {dir} holding its sweep.jsonl alone;
- every input byte unchanged (the corpus folder and {dir}).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "bad_inputs"
SURFACES = ("results", "sweeps", "carry", "owned", "scenarios")

runner = CliRunner()


@dataclass(frozen=True)
class Case:
    folder: Path
    name: str
    run: str
    exit: int
    expects: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.folder / self.name


def _cases() -> list[Case]:
    out = []
    for surface in SURFACES:
        folder = CORPUS / surface
        for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 5 or cells[0] in ("case", "---"):
                continue
            out.append(Case(folder, cells[0], cells[1], int(cells[2]), tuple(re.findall(r"`([^`]+)`", cells[3]))))
    return out


CASES = _cases()


def test_every_surface_has_cases_and_every_file_is_a_case():
    for surface in SURFACES:
        folder = CORPUS / surface
        listed = {c.name for c in CASES if c.folder == folder}
        assert len(listed) >= 4, surface
        files = {p.name for p in folder.iterdir() if p.name != "README.md"}
        assert files - listed <= {"plan.yaml"}, (surface, files - listed)  # plan.yaml: what the cases are given to
        assert listed <= files, (surface, listed - files)


def _hashes(*folders: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for f in folders if f.exists() for p in sorted(f.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.folder.name}/{c.name}")
def test_each_case_is_refused_or_warned_by_one_rule(case, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    shown = str(case.path.relative_to(ROOT))
    out = tmp_path / "out"
    dir_ = tmp_path / "dir"
    if "{dir}" in case.run:
        dir_.mkdir()
        shutil.copyfile(case.path, dir_ / "sweep.jsonl")
    args = [a.format(case=shown, plan=str((case.folder / "plan.yaml").relative_to(ROOT)), out=out, dir=dir_)
            for a in case.run.split()]
    before = _hashes(CORPUS, dir_)
    res = runner.invoke(app, args)
    said = " ".join(res.output.split())
    assert res.exit_code == case.exit, said
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit)), said
    for fragment in case.expects:
        assert " ".join(fragment.split()) in said, (fragment, said)
    assert _hashes(CORPUS, dir_) == before  # inputs unchanged
    if case.exit == 0:
        assert "warning:" in said, said
        return
    named = str(dir_ / "sweep.jsonl") if "{dir}" in case.run else shown
    if not case.run.startswith("sweep {case}"):
        assert named in said, said
    assert not out.exists(), list(out.rglob("*"))
    if "{dir}" in case.run:
        assert [p.name for p in dir_.iterdir()] == ["sweep.jsonl"]
