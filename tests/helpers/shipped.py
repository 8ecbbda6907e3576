"""A plan solved once per test session, whichever test files and pytest-xdist workers ask for it.

Many files read the same solved plan (plans/q4.yaml alone is read by a dozen); each used to solve it again. Here
`solved(plan, options)` solves it the first time it is asked for and keeps the PlanResult, pickled, in a folder
the session's workers share (tests/conftest.py names it: the parent of each worker's base temp). A lock per key
makes a second worker wait for the first one's solve rather than solve it too.

The key is everything the result depends on: the plan's path and bytes, the other YAML files beside it (a plan
may name a catalog there), the options, and the bytes of every file under optimizer/, catalogs/ and plans/ — a
cached result can only be the one a solve would give now. Each call returns a fresh copy, so a test that edits
its result changes nothing another test reads.

Tests of the solve itself (the same plan twice gives the same JSON, a solve killed or stopped) solve for real.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from dataclasses import fields
from pathlib import Path

try:
    import fcntl
except ImportError:  # no POSIX locks (Windows): each process solves for itself
    fcntl = None

from tests.helpers.paths import ROOT
from tests.helpers.solving import NO_TIME_LIMIT

_DIR: Path | None = None
_MEMO: dict[str, bytes] = {}
_SOURCES: str | None = None

SOURCE_FOLDERS = ("optimizer", "catalogs", "plans")
"""What a solve reads besides the plan: the code, the built-in catalogs and the shipped plans (plans/serving
names files beside it)."""


def configure(folder: Path | None) -> None:
    """Where this session keeps its solved plans (tests/conftest.py, once per worker); None: this process only."""
    global _DIR
    _DIR = folder
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)


def _sources() -> str:
    global _SOURCES
    if _SOURCES is None:
        h = hashlib.sha256()
        for top in SOURCE_FOLDERS:
            for path in sorted((ROOT / top).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
        _SOURCES = h.hexdigest()
    return _SOURCES


def _key(plan: Path, options, carry: Path | None) -> str:
    h = hashlib.sha256(_sources().encode())
    plan = plan if plan.is_absolute() else Path.cwd() / plan
    h.update(str(plan).encode() + b"\0" + plan.read_bytes())
    for other in sorted(plan.parent.glob("*.y*ml")):  # a catalog the plan names beside it
        h.update(str(other).encode() + b"\0" + other.read_bytes())
    if carry is not None:
        h.update(b"carry\0" + str(carry).encode() + b"\0" + Path(carry).read_bytes())
    for f in fields(options):
        if f.name != "progress":
            h.update(f"{f.name}={getattr(options, f.name)!r}\0".encode())
    return h.hexdigest()[:32]


def solved(plan: Path | str, options=None, carry: Path | str | None = None):
    """`solve_plan(plan, options, carry=carry)`'s PlanResult (a fresh copy), solved once per session. The options
    default to no time limit: the solve stops on work alone, and every file asking for the plan shares it."""
    from optimizer.pipeline import SolveOptions, solve_plan

    options = SolveOptions(time_limit_s=NO_TIME_LIMIT) if options is None else options
    assert options.progress is None, "a solve that reports its progress is not shared"
    plan = Path(plan)
    key = _key(plan, options, None if carry is None else Path(carry))
    if key not in _MEMO:
        _MEMO[key] = _load_or_solve(key, lambda: solve_plan(plan, options, carry=carry))
    return pickle.loads(_MEMO[key])


def _load_or_solve(key: str, solve) -> bytes:
    if _DIR is None or fcntl is None:
        return pickle.dumps(solve())
    path = _DIR / f"{key}.pickle"
    with open(_DIR / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, by this worker or by its death
        if path.exists():
            return path.read_bytes()
        data = pickle.dumps(solve())
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_bytes(data)
        os.replace(part, path)
        return data
