"""Where the built-in catalogs and report templates live, installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def catalogs_dir() -> Path:
    return _data_dir("catalogs")


def templates_dir() -> Path:
    return _data_dir("templates")
