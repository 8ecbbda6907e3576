"""The program's math is stated once (optimize.families): docs/model.md is generated from it, every function it
names exists, and every row of a built program belongs to a family it states — and every family it states is
built by some plan here (no solve: the programs are only built)."""

from __future__ import annotations

import dataclasses
import importlib
import re
from functools import lru_cache
from pathlib import Path

import pulp
import pytest

from optimizer.candidates.build import build_candidates
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.optimize import families
from optimizer.optimize.cuts import add_cuts, define_pooled_rounding
from optimizer.optimize.model import build_model
from optimizer.optimize.program import Program
from optimizer.optimize.strategy import _segments
from optimizer.optimize.tiebreak import define_tie_break
from optimizer.pipeline import as_solved

ROOT = Path(__file__).resolve().parents[2]


def test_docs_model_md_is_the_registry():
    page = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    assert page == families.markdown(), "regenerate: planopt schema --model -o docs/model.md"


def _resolve(dotted: str):
    module, _, name = dotted.partition(".")
    obj = importlib.import_module(f"optimizer.optimize.{module}")
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_family_and_term_names_a_function_that_exists():
    names = [f.name for f in families.FAMILIES]
    assert len(names) == len(set(names)), "a family is stated twice"
    for f in families.FAMILIES:
        assert callable(_resolve(f.built_by)), f.name
        doc = _resolve(f.built_by).__doc__ or ""
        # the inequality is the registry's: a builder's docstring names its family and does not restate it
        assert f.math not in doc, f"{f.built_by} restates {f.name}'s inequality: refer to optimize.families"
    for t in families.OBJECTIVE:
        assert callable(_resolve(t.built_by)), t.name


def test_every_rule_outside_the_program_points_at_code_that_exists():
    for rule in families.OUTSIDE:
        assert rule.where, rule.name
        for where in rule.where:
            path, _, func = where.partition("::")
            text = (ROOT / path).read_text(encoding="utf-8")
            if func:
                name = func.split(".")[-1]
                assert re.search(rf"^\s*(def|class) {re.escape(name)}\b", text, re.M), f"{rule.name}: {where}"


def test_the_rules_a_newcomer_looks_for_are_stated():
    stated = {r.name for r in families.OUTSIDE} | {f.name for f in families.FAMILIES}
    for rule in ("spares", "rollout", "occupancy", "whole nodes", "caps", "overflow_share",
                 "reserved from its start to the horizon's end", "dominated configs"):
        assert rule in stated, rule
    assert "## Rules outside the program" in families.markdown()


# --- built programs ---------------------------------------------------------------------------------


def _with_policy(loaded: LoadedPlan, **policy) -> LoadedPlan:
    """The plan with these policy fields changed (risk as a dict)."""
    pol = loaded.plan.policy
    update = {k: (pol.risk.model_copy(update=v) if k == "risk" else v) for k, v in policy.items()}
    plan = loaded.plan.model_copy(update={"policy": pol.model_copy(update=update)})
    return dataclasses.replace(loaded, plan=plan)


@lru_cache(maxsize=None)
def _loaded(name: str, risk: str | None = None, shared: bool | None = None) -> tuple[LoadedPlan, object]:
    """The plan as the program sees it (pipeline.as_solved), with policy.risk.measure or
    policy.share_reserved_across_pools changed where given, and its candidates."""
    loaded = load_plan(ROOT / "plans" / f"{name}.yaml")
    if risk is not None:
        loaded = _with_policy(loaded, risk={"measure": risk})
    if shared is not None:
        loaded = _with_policy(loaded, share_reserved_across_pools=shared)
    loaded = as_solved(loaded)
    return loaded, build_candidates(loaded)


def _program(name: str, *, elastic: bool = False, risk: str | None = None, shared: bool | None = None) -> Program:
    loaded, cands = _loaded(name, risk, shared)
    return build_model(loaded, cands, _segments(loaded, cands), elastic=elastic)  # type: ignore[arg-type]


def _savings_program() -> Program:
    """A small plan with a savings plan to sign and a signed spend commitment (families spend_cover, spend_list)."""
    import tempfile
    from pathlib import Path

    from tests.optimize.test_savings_plans import PROVIDER, _plan
    from tests.helpers.small_plans import write

    signed = [{"provider": PROVIDER, "usd_per_hour": 20.0, "term": "1y", "discount": 0.2, "start": "2026-01-01",
               "end": "2026-11-14"}]
    with tempfile.TemporaryDirectory() as d:
        loaded = as_solved(load_plan(write(Path(d), _plan(4, [1.0] * 12 + [0.5] * 12, signed=signed))))
    cands = build_candidates(loaded)
    return build_model(loaded, cands, _segments(loaded, cands))  # type: ignore[arg-type]


def _rows(prog: Program) -> dict[str, list[str]]:
    return {family: list(names) for family, names in prog.constraint_families.items()}


def _check_rows(rows: dict[str, list[str]], where: str) -> None:
    by_name = {f.name: f for f in families.FAMILIES}
    for family, names in rows.items():
        assert family in by_name, f"{where}: family {family} is not in optimize.families"
        prefixes = by_name[family].row_prefixes
        for name in names:
            assert any(name == p or name.startswith(p + "_") for p in prefixes), \
                f"{where}: row {name} of family {family} is named by none of {prefixes}"


def _tie_break_rows(prog: Program) -> dict[str, list[str]]:
    """The tie-break program's rows at a plan whose first config of each workload is chosen (no solve)."""
    for w in prog.plan.workloads:
        for i, c in enumerate(prog.cands.by_workload[w.name]):
            x = prog.choice[c.key]
            if isinstance(x, pulp.LpVariable):
                x.varValue = 1.0 if i == 0 else 0.0
    for n in prog.batch_replicas.values():
        n.varValue = 0.0
    problem, _start = define_tie_break(prog, 1e12)
    own = {row.name for row in prog.prob.constraints()}
    tie = [f for f in families.FAMILIES if f.kind == "tie-break"]
    out: dict[str, list[str]] = {}
    for row in problem.constraints():
        if row.name not in own:  # the tie-break program's own rows, filed under the family whose name starts it
            family = next((f.name for f in tie if row.name.startswith(f.name)), row.name)
            out.setdefault(family, []).append(row.name)
    return out


def _split_program(baseline: bool = False) -> Program:
    """Mélange's example as one workload with split: by_size, spares and rollout (every split row); with
    `baseline`, its two configs as a last plan's (baseline_split) and held on them (fixed_choice)."""
    import json
    import tempfile

    from tests.optimize.test_split import melange_plan

    plan = melange_plan(30)
    plan["policy"].update(spares=1, rollout_fraction=0.25)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(plan), encoding="utf-8")
        loaded = as_solved(load_plan(path))
    cands = build_candidates(loaded)
    if not baseline:
        return build_model(loaded, cands, _segments(loaded, cands))  # type: ignore[arg-type]
    from optimizer.candidates.overflow import split_key

    keys = split_key(c.key for c in cands.by_workload["chat"][:2])
    prog = build_model(loaded, cands, _segments(loaded, cands),  # type: ignore[arg-type]
                       baseline={"chat": (keys, 100.0)})
    prog.fix_choice("chat", keys)
    return prog


def _low_q4() -> Program:
    """q4 with policy.size_commitments_at low and a band for every generation and datatype (commit_low rows)."""
    import typing

    from optimizer.inputs.schema.catalog import Generation
    from optimizer.inputs.schema.estimator import GroupEvidence, ValidationTable

    loaded = _with_policy(load_plan(ROOT / "plans" / "q4.yaml"), size_commitments_at="low")
    band = GroupEvidence(points=10, error_p10=-0.3, error_p90=0.3)
    table = ValidationTable(groups={f"{g}/{d}/*/*": band for g in typing.get_args(Generation)
                                    for d in ("bf16", "fp8", "fp4", "weight-only")})
    est = loaded.catalog.estimator.model_copy(update={"validation": table})
    loaded = as_solved(dataclasses.replace(loaded, catalog=dataclasses.replace(loaded.catalog, estimator=est)))
    cands = build_candidates(loaded)
    return build_model(loaded, cands, _segments(loaded, cands))  # type: ignore[arg-type]


def _move_cost_program() -> Program:
    """owned-cluster with policy.move_cost: its workloads may move at the servers' arrivals, each move priced."""
    loaded, cands = _loaded("owned-cluster")
    loaded = _with_policy(loaded, move_cost=2.0)
    return build_model(loaded, cands, _segments(loaded, cands))  # type: ignore[arg-type]


def _move_baseline_program() -> Program:
    """owned-cluster with a baseline for each workload that may move (baseline_moves), held on it (fixed_choice)."""
    from optimizer.optimize.moves import fix_schedule

    loaded, cands = _loaded("owned-cluster")
    plain = build_model(loaded, cands, _segments(loaded, cands))  # type: ignore[arg-type]
    last = {w: (cs[0].key, 100.0) for w, cs in plain.movers.items()}
    assert last, "owned-cluster has a workload that may move"
    prog = build_model(loaded, cands, _segments(loaded, cands), baseline=last)  # type: ignore[arg-type]
    for w, (key, _cost) in last.items():
        fix_schedule(prog, w, key)
    return prog


def test_every_row_of_a_built_program_is_a_family_and_every_family_is_built():
    seen: set[str] = set()
    q4 = _program("q4")
    builds = {
        "q4": q4,
        "q4, pools not sharing, diagnosis": _program("q4", elastic=True, shared=False),
        "q1-with-commitments, pools not sharing": _program("q1-with-commitments", shared=False),
        "owned-cluster": _program("owned-cluster"),
        "owned-cluster, a move cost": _move_cost_program(),
        "owned-cluster, a baseline for its workloads that may move": _move_baseline_program(),
        "q1-forecast, worst": _program("q1-forecast", risk="worst"),
        "q1-forecast, cvar": _program("q1-forecast", risk="cvar"),
        "q4, commitments at the low end of a band": _low_q4(),
        "a tokens.mix split by size": _split_program(),
        "a tokens.mix split by size, with a baseline": _split_program(baseline=True),
        "small models sharing GPUs": _program("small-models-shared"),
        "a savings plan and a signed spend commitment": _savings_program(),
    }
    for where, prog in builds.items():
        add_cuts(prog)
        rows = _rows(prog)
        _check_rows(rows, where)
        seen |= set(rows)
    # the rows a solve adds: pooled rounding at one plan's configs, a workload held, the tie-break program
    reference = {w.name: q4.cands.by_workload[w.name][0].key for w in q4.plan.workloads}
    define_pooled_rounding(q4, reference)
    w = next(w for w in q4.plan.workloads if len(q4.cands.by_workload[w.name]) > 1)
    q4.fix_choice(w.name, q4.cands.by_workload[w.name][0].key)
    rows = _rows(q4)
    _check_rows(rows, "q4 with its solve's rows")
    seen |= set(rows)
    tie = _tie_break_rows(q4)
    _check_rows(tie, "q4's tie-break program")
    seen |= set(tie)
    tie = _tie_break_rows(builds["q1-forecast, worst"])  # a scenario plan's: each segment keeps its cost
    _check_rows(tie, "q1-forecast's tie-break program")
    seen |= set(tie)
    # `sole_tenant` needs a config alone at its offer that no plan there serves: the solve's pricing decides it
    unbuilt = {f.name for f in families.FAMILIES} - seen - {"sole_tenant"}
    assert not unbuilt, f"families no plan here builds (a stale registry entry, or a plan to add): {sorted(unbuilt)}"


@pytest.mark.parametrize("name", ["q4"])
def test_sole_tenant_rows_are_a_family(name):
    loaded, cands = _loaded(name)
    c = next(c for cs in cands.by_workload.values() if len(cs) > 1 for c in cs)  # type: ignore[attr-defined]
    prog = build_model(loaded, cands, _segments(loaded, cands), sole_tenant={c.key: float("inf")})  # type: ignore[arg-type]
    rows = _rows(prog)
    assert "sole_tenant" in rows
    _check_rows(rows, name)


def test_what_binds_names_a_family_or_a_rule():
    """The "what binds" report's kinds are the registry's names."""
    text = (ROOT / "optimizer" / "results" / "extract.py").read_text(encoding="utf-8")
    kinds = set(re.findall(r'Binding\("(\w+)"', text)) | {"cap_on_demand", "cap_spot"}  # cap_{tier}
    stated = {r.name for r in families.OUTSIDE} | {f.name for f in families.FAMILIES}
    assert kinds and kinds <= stated, kinds - stated
