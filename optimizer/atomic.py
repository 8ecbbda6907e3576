"""Atomic writes: a file appears whole or not at all (outputs are never partial)."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_write(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_write(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def unwritable(path: Path, *, folder: bool) -> str | None:
    """Why outputs cannot go to `path` — a folder to fill (`folder`) or a file's place — or None when they can:
    checked before the work, so a run does not end in a write that fails."""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        return f"{path} is a file, not a folder"
    if not folder and path.is_dir():
        return f"{path} is a folder, not a file"
    where = path if folder else path.parent
    while not where.exists():
        if where.is_symlink() or where == where.parent:
            break
        where = where.parent
    if where.exists() and not where.is_dir():
        return f"{where} is a file, not a folder"
    if where.exists() and not os.access(where, os.W_OK | os.X_OK):
        return f"cannot write in {where}"
    return None
