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


def no_plan_within_nodes(prob, solver: str = "highs", **kw):
    """A stand-in for the steps' `solve`: relaxations solve as usual, and every integer program stops on its nodes
    without a plan (recorded as work, so the same on every machine). Patch it in with patch_steps(…, "solve", …)."""
    from optimizer.optimize import work
    from optimizer.optimize.solution import SolveInfo
    from optimizer.optimize.solver import solve

    if kw.get("relax"):
        return solve(prob, solver, **kw)
    work.record(0, kw.get("node_limit") or 1, "nodes")
    return SolveInfo(solver, "error", 0.0, None, None, None)
