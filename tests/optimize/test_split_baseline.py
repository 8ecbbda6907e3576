"""A workload split by request size in `compare` and `solve --baseline`: a config added or left, or other shares
of the size classes, is a change of choice; a baseline pins a split workload's set of configs (its shares move
freely) and a single config's baseline holds a split workload on that config."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from optimizer.pipeline import solve_plan
from optimizer.results.baseline import load_baseline
from optimizer.results.compare import SIZE_SPLIT, compare
from optimizer.results.jsonio import dumps

from tests.optimize.test_split import melange_plan

A10G, A100 = "aws-a10g · bf16 · tp1", "aws-a100-80gb · bf16 · tp1"


def _plan(tmp_path: Path, name: str, plan: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return path


def _melange(**changes) -> dict:
    plan = melange_plan(30)
    plan["horizon_days"] = 2
    for k, v in changes.items():
        if k == "a10g_price":
            plan["offers"][0]["price_per_gpu_hour"]["on-demand"] = v
        elif k == "threshold":
            plan["policy"]["change_threshold"] = v
        elif k == "accelerators":
            plan = melange_plan(30, "none", v)
            plan["horizon_days"] = 2
    return plan


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("split-baseline")
    out = {"split": solve_plan(_plan(tmp, "split", _melange())),
           "a100": solve_plan(_plan(tmp, "a100", _melange(accelerators=("a100-80gb",))))}
    for k, r in out.items():
        (tmp / f"{k}.result.json").write_text(dumps(r), encoding="utf-8")
    out["dir"] = tmp
    return out


def test_compare_sees_a_config_added_or_other_shares(solved) -> None:
    split, single = solved["split"], solved["a100"]
    assert set(split.workloads[0].split) == {A10G, A100}
    c = compare(single, split)
    row = c.workloads[0]
    assert row.status == "changed" and "choice" in row.what_changed and c.choice_changed == ["chat"]
    assert A10G in row.choice_b and A100 in row.choice_b and "%" in row.choice_b
    same = compare(split, split).workloads[0]
    assert same.status == "same" and same.what_changed == []
    w = split.workloads[0]
    moved = {A10G: [min(1.0, z + 0.1) for z in w.split[A10G]], A100: [max(0.0, z - 0.1) for z in w.split[A100]]}
    other = replace(split, workloads=[replace(w, split=moved)])
    row = compare(split, other).workloads[0]
    assert row.status == "changed" and row.what_changed == [SIZE_SPLIT]
    assert compare(split, other).choice_changed == ["chat"]
    dropped = replace(split, workloads=[replace(w, split_configs={A100: w.split_configs[A100]},
                                                split={A100: [1.0] * len(w.split[A100])})])
    assert "choice" in compare(split, dropped).workloads[0].what_changed


def test_a_baseline_keys_a_split_workloads_configs(solved) -> None:
    b = load_baseline(solved["dir"] / "split.result.json")
    configs = solved["split"].workloads[0].split_configs.values()
    assert set(b.choices["chat"].key.split(" + ")) == {x.key for x in configs}
    assert load_baseline(solved["dir"] / "a100.result.json").choices["chat"].key == solved["a100"].workloads[0].key


@pytest.mark.parametrize("threshold, kept", [(0.5, True), (0.05, False)])
def test_a_single_config_baseline_holds_a_split_workload(solved, threshold: float, kept: bool) -> None:
    """Splitting saves 18% on the A100 alone: kept at a 50% threshold, moved at 5%."""
    base = load_baseline(solved["dir"] / "a100.result.json")
    r = solve_plan(_plan(solved["dir"], f"t{threshold}", _melange(threshold=threshold)), baseline=base)
    if kept:
        assert r.baseline.kept == ["chat"] and set(r.workloads[0].split) <= {A100}
        assert r.cost_total == pytest.approx(solved["a100"].cost_total, rel=1e-9)
    else:
        assert r.baseline.kept == [] and len(r.baseline.changes) == 1
        assert set(r.workloads[0].split) == {A10G, A100}
        assert r.cost_total == pytest.approx(solved["split"].cost_total, rel=1e-9)


@pytest.mark.parametrize("threshold, kept", [(0.5, True), (0.0, False)])
def test_a_split_baseline_pins_its_configs(solved, threshold: float, kept: bool) -> None:
    """With the A10G at $8/h the A100 alone is cheapest; a 50% threshold keeps both configs serving (the A10G
    some traffic), none moves it onto the A100 alone."""
    base = load_baseline(solved["dir"] / "split.result.json")
    alone = solve_plan(_plan(solved["dir"], "dear", _melange(a10g_price=8.0)))
    assert set(alone.workloads[0].split) <= {A100}
    r = solve_plan(_plan(solved["dir"], f"dear{threshold}", _melange(a10g_price=8.0, threshold=threshold)),
                   baseline=base)
    if kept:
        assert r.baseline.kept == ["chat"]
        assert set(r.workloads[0].split) == {A10G, A100}
        assert alone.cost_total < r.cost_total <= alone.cost_total + threshold * solved["split"].cost_total + 1e-6
    else:
        assert r.baseline.kept == [] and r.baseline.changes[0].to_label == A100
        assert r.cost_total == pytest.approx(alone.cost_total, rel=1e-9)
