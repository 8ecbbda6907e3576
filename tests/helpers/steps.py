"""Patching the solve's steps: strategy.py runs named steps that live in optimizer/optimize/steps/, and each module
imports what it calls (the solver's `solve`, the clock, the cut routines), so a test that stands in for one of those
patches it in every module that looks it up."""

from __future__ import annotations

from typing import Any

from optimizer.optimize import strategy
from optimizer.optimize.steps import price, relax, run, search, settle, tidy
from optimizer.optimize.steps import round as round_step  # (not the builtin)

MODULES = (strategy, run, relax, round_step, search, settle, tidy, price)
"""strategy and its steps, where a name the steps call is looked up."""


def patch_steps(monkeypatch, name: str, value: Any) -> None:
    """`name` replaced by `value` in strategy and every step module that has it (at least one must)."""
    found = [m for m in MODULES if hasattr(m, name)]
    assert found, f"no step module has {name}"
    for module in found:
        monkeypatch.setattr(module, name, value)
