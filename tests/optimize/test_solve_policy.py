"""SolvePolicy holds every tuning number of the solve: strategy.py states none of its own, each field says
why it is what it is, and the steps read the policy in force when they run."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from optimizer.optimize import policy, strategy

OPTIMIZE = Path(__file__).resolve().parents[2] / "optimizer" / "optimize"


def _module_numbers(path: Path) -> list[str]:
    """Module-level names bound to a number, a tuple of strings or a dict: tuning constants."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, (ast.Constant, ast.Dict)) and not isinstance(getattr(value, "value", 0), str):
                out.append(node.targets[0].id)
    return out


def test_strategy_states_no_tuning_constant_of_its_own():
    assert _module_numbers(OPTIMIZE / "strategy.py") == []


def test_every_policy_field_says_why():
    tree = ast.parse((OPTIMIZE / "policy.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SolvePolicy")
    documented = {a.target.id for a, d in zip(cls.body, cls.body[1:])
                  if isinstance(a, ast.AnnAssign) and isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant)}
    fields = {f.name for f in dataclasses.fields(policy.SolvePolicy)}
    assert fields - documented == set()


def test_the_steps_read_the_policy_in_force(monkeypatch, tmp_path):
    """A solve's SolvePolicy is strategy.POLICY's tuning with the plan's policy and the options over it
    (steps/run.py solve_policy): the plan's work limit and its shares, its gap and safety cap, --work-limit's
    factor, and the tuning a test put in strategy.POLICY."""
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.steps.run import solve_policy

    from tests.helpers.small_plans import interactive, offer, plan, write

    data = plan([interactive("w", 100)], [offer("o", on_demand=1.0)])
    data["policy"] = {**data.get("policy", {}), "mip_gap": 0.02, "time_limit_s": 90,
                      "work_limit": {"nodes": 500, "shares": {"search": 0.5}}}
    loaded = load_plan(write(tmp_path, data))
    monkeypatch.setattr(strategy, "POLICY", dataclasses.replace(strategy.POLICY, cut_rounds=2))
    got = solve_policy(loaded, strategy.SolveOptions(), strategy.POLICY)
    assert (got.cut_rounds, got.mip_gap, got.safety_cap_s, got.work.nodes) == (2, 0.02, 90.0, 500)
    assert got.work.step("search") == (250, int(0.5 * got.work.lp_iterations))
    assert got.work.step("round") == (125, int(0.25 * got.work.lp_iterations))  # the default share
    scaled = solve_policy(loaded, strategy.SolveOptions(work_limit=4, time_limit_s=30, mip_gap=0.0), strategy.POLICY)
    assert (scaled.work.nodes, scaled.safety_cap_s, scaled.mip_gap) == (2000, 30.0, 0.0)


def test_the_default_policy_is_frozen_and_shared():
    assert strategy.POLICY == policy.SolvePolicy()
    try:
        strategy.POLICY.cut_rounds = 1  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("SolvePolicy must be frozen")


def _module_constants(path: Path) -> list[str]:
    """Names a module binds at its top level to a value (not a function, class or import)."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
    return out


def test_strategy_is_the_policy_and_the_order_of_its_named_steps():
    """strategy.py orders the steps and shares out the time; the steps themselves live in optimize/steps/."""
    text = (OPTIMIZE / "strategy.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 600
    assert len(_module_constants(OPTIMIZE / "strategy.py")) <= 8, _module_constants(OPTIMIZE / "strategy.py")


def test_no_step_states_a_tuning_constant_of_its_own():
    steps = sorted((OPTIMIZE / "steps").glob("*.py"))
    assert {p.stem for p in steps} >= {"relax", "round", "search", "settle", "tidy", "price"}
    assert {p.name: _module_numbers(p) for p in steps if _module_numbers(p)} == {}
