"""Large plans size their workloads on every core (candidates.build._every_workload): the configs, what
was dropped and why, and the demand must be exactly those of sizing them one by one."""

from __future__ import annotations


import pytest

from optimizer.candidates import build as candidates_mod
from optimizer.inputs.loading import load_plan
from optimizer.synth.plans import generate

from tests.helpers.paths import ROOT



def _both(loaded, monkeypatch, keep=frozenset()):
    monkeypatch.setattr(candidates_mod, "PARALLEL_WORKLOADS", 10**9)
    one_by_one = candidates_mod.build_candidates(loaded, keep, strict=False)
    monkeypatch.setattr(candidates_mod, "PARALLEL_WORKLOADS", 1)
    monkeypatch.setattr(candidates_mod.os, "cpu_count", lambda: 2)
    side_by_side = candidates_mod.build_candidates(loaded, keep, strict=False)
    return one_by_one, side_by_side


def _whole(cands) -> dict:
    """Every config with the fields a Candidate leaves out of ==: its hourly GPUs, replicas and API overflow."""
    return {w: [(c, c.gpus, c.replicas, c.api_output_tokens_per_day) for c in cs] for w, cs in cands.by_workload.items()}


@pytest.mark.slow
@pytest.mark.parametrize("plan", ["q4", "generated"])
def test_workloads_sized_side_by_side_give_the_same_candidates(tmp_path, monkeypatch, plan):
    if plan == "generated":
        path = tmp_path / "p12.yaml"
        path.write_text(generate(12, seed=3), encoding="utf-8")  # several models, batch and reserve workloads
    else:
        path = ROOT / "plans" / "q4.yaml"
    loaded = load_plan(path)
    a, b = _both(loaded, monkeypatch)
    assert list(a.by_workload) == list(b.by_workload)
    assert _whole(a) == _whole(b)
    assert a.dropped == b.dropped
    assert a.demand == b.demand
    assert a.pruned == b.pruned


@pytest.mark.slow
def test_explained_workload_keeps_its_dominated_configs_side_by_side(monkeypatch):
    loaded = load_plan(ROOT / "plans" / "q4.yaml")
    a, b = _both(loaded, monkeypatch, frozenset({"chat"}))
    assert _whole(a) == _whole(b) and a.dropped == b.dropped
    assert len(b.by_workload["chat"]) > 100  # every alternative kept for explain


def test_no_process_pool_to_be_had_sizes_them_in_this_process(monkeypatch):
    """Where processes cannot be started (a sandbox, a broken pool), the same candidates, one by one."""
    loaded = load_plan(ROOT / "plans" / "q4.yaml")
    monkeypatch.setattr(candidates_mod, "PARALLEL_WORKLOADS", 10**9)
    expected = candidates_mod.build_candidates(loaded)

    class NoPool:
        def __init__(self, *args, **kwargs):
            raise OSError("no processes here")

    monkeypatch.setattr(candidates_mod, "PARALLEL_WORKLOADS", 1)
    monkeypatch.setattr(candidates_mod.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(candidates_mod.cf, "ProcessPoolExecutor", NoPool)
    got = candidates_mod.build_candidates(loaded)
    assert _whole(got) == _whole(expected) and got.dropped == expected.dropped


def test_fits_and_rooflines_shared_across_workloads_size_as_computed_afresh(tmp_path, monkeypatch):
    """Workloads alike but for their SLO share their fits and rooflines within a build
    (configs._memo): every config, drop and reason is what sizing each afresh gives."""
    path = tmp_path / "p12.yaml"
    path.write_text(generate(12, seed=3), encoding="utf-8")
    loaded = load_plan(path)
    monkeypatch.setattr(candidates_mod, "PARALLEL_WORKLOADS", 10**9)
    shared = candidates_mod.build_candidates(loaded, strict=False)
    monkeypatch.setattr(candidates_mod.configs, "_memo", lambda _shared, _key, make: make())
    afresh = candidates_mod.build_candidates(loaded, strict=False)
    assert _whole(shared) == _whole(afresh)
    assert shared.dropped == afresh.dropped and shared.pruned == afresh.pruned
