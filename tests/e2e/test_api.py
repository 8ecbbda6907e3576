"""The Python API for notebooks: load, solve, and read the PlanResult as DataFrames."""

from __future__ import annotations


import pytest

from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.paths import PLANS
from tests.helpers.solving import NO_TIME_LIMIT

SEED = PLANS / "seed-fleet.yaml"


@pytest.fixture(scope="module")
def result():
    return solve_plan(load_plan(SEED))


def test_result_numbers(result):
    w = result.workload("chat-70b")
    assert (w.replicas.base, w.replicas.spares, w.replicas.rollout, w.replicas.total) == (11, 1, 3, 15)
    assert w.gpus_at_peak == 30 and w.kv_concurrency == 46
    assert result.cost_per_day == pytest.approx(1800.0)
    assert result.status == "optimal" and result.solver.gap == pytest.approx(0.0, abs=1e-9)


def test_dataframe_views(result):
    wl = result.workloads_df()
    assert list(wl["name"]) == ["chat-70b"]
    assert wl.loc[0, "replicas_total"] == 15 and wl.loc[0, "goodput_source"] == "measured"
    pur = result.purchases_df()
    assert pur[["offer", "tier", "gpus"]].values.tolist() == [["seed-cloud-80gb", "on-demand", 30]]
    assert pur["cost"].sum() == pytest.approx(result.cost_total)
    hourly = result.hourly_df()
    assert len(hourly) == 24 and set(hourly["on_demand_gpus"]) == {30}
    assert (hourly["demand_gpus"] <= hourly["reserved_gpus"] + hourly["on_demand_gpus"] + hourly["spot_gpus"]).all()
    cands = result.candidates_df()
    assert cands["chosen"].sum() == 1
    dropped = result.dropped_df()
    assert set(dropped.columns) >= {"workload", "option", "family", "reason"}


def test_solve_options_override_the_policy(result):
    cbc = solve_plan(SEED, SolveOptions(solver="cbc", time_limit_s=NO_TIME_LIMIT))
    assert cbc.solver.name == "cbc"
    assert cbc.cost_total == pytest.approx(result.cost_total)


def test_the_planner_uses_the_catalogs_estimator_efficiencies():
    """catalogs/estimator.yaml is data the planner reads, not a copy of code defaults: halving the
    memory efficiency there halves a bandwidth-bound estimate."""
    import dataclasses

    from optimizer.candidates.build import build_candidates

    plan = PLANS / "q4.yaml"
    loaded = load_plan(plan)
    est = build_candidates(loaded).by_workload["support-bot"][0]
    slow = loaded.catalog.copy()
    # halved wherever the catalog states it: the shared value and each engine's own (EstimatorParams.engines)
    engines = {e: {g: {k: (v / 2 if k == "eta_memory" else v) for k, v in vals.items()} for g, vals in gens.items()}
               for e, gens in slow.estimator.engines.items()}
    slow.estimator = slow.estimator.model_copy(update={"eta_memory": slow.estimator.eta_memory / 2, "engines": engines})
    est_slow = build_candidates(dataclasses.replace(loaded, catalog=slow)).by_workload["support-bot"]
    same = next(c for c in est_slow if (c.offer, c.precision, c.tp) == (est.offer, est.precision, est.tp))
    assert est.goodput_source == "estimated"
    assert same.goodput < 0.75 * est.goodput
