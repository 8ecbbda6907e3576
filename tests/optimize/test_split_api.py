"""A split workload's API overflow (model._split_api): a share of each size class's requests goes to the API at
every hour, at most api.max_share of the output tokens, against an enumeration by hand, for HiGHS and CBC."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.pipeline import SolveOptions, solve_plan

from tests.optimize.test_split import MELANGE_CLASSES, MELANGE_GOODPUT, MELANGE_PRICES, melange_plan

SOLVERS = available_solvers()
API = {"usd_per_m_input": 0.2, "usd_per_m_output": 1.0}


def _solve(plan: dict, tmp_path: Path, solver: str | None = None):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return solve_plan(path, SolveOptions(solver=solver))


def _plan(rate: float, max_share: float, split: str = "by_size") -> dict:
    plan = copy.deepcopy(melange_plan(rate, split, ("a10g",)))
    plan["workloads"][0]["api"] = {**API, "max_share": max_share}
    return plan


def _by_hand(rate: float, max_share: float) -> float:
    """One A10G config, a flat day, occupancy 1, no spares: n replicas carry the classes of most goodput first
    (the fewest tokens for the API per replica-second they leave), the rest goes to the API; n runs over every
    count that leaves the API at most max_share of the output tokens."""
    mean_in = sum(s * i for s, i, _o in MELANGE_CLASSES)
    mean_out = sum(s * o for s, _i, o in MELANGE_CLASSES)
    price = (API["usd_per_m_output"] + API["usd_per_m_input"] * mean_in / mean_out) / 1e6
    demand = rate * mean_out  # output tokens/s
    tokens = [demand * s * o / mean_out for s, _i, o in MELANGE_CLASSES]  # each class's tokens/s
    g = MELANGE_GOODPUT["a10g"]
    full = sum(t / gb for t, gb in zip(tokens, g))  # replicas for all of it
    best = math.inf
    for n in range(0, math.ceil(full - 1e-9) + 1):
        left, api = float(n), 0.0
        for b in sorted(range(len(g)), key=lambda b: -g[b]):
            need = tokens[b] / g[b]
            served = min(need, left)
            left -= served
            api += (need - served) * g[b]
        if api > max_share * demand * (1 + 1e-9):
            continue
        best = min(best, n * MELANGE_PRICES["a10g"] * 24 + api * 3600 * 24 * price)
    return best


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("rate, max_share", [(5, 0.1), (30, 0.05), (30, 0.3), (120, 0.02), (12, 1.0)])
def test_split_api_share_matches_the_hand_enumeration(rate: float, max_share: float, solver: str,
                                                     tmp_path: Path) -> None:
    result = _solve(_plan(rate, max_share), tmp_path, solver)
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(_by_hand(rate, max_share), rel=1e-7)
    row = result.workloads[0]
    assert row.api_share <= max_share + 1e-9
    assert row.cost == pytest.approx(result.cost_total, rel=1e-9)


def test_the_api_pays_here_and_split_any_takes_a_share_of_the_whole(tmp_path: Path) -> None:
    """At 30 requests/s a few percent to the API saves a replica: the API is used; split: any sends a share of
    the whole traffic (one class), never cheaper than a share of each class."""
    by_size = _solve(_plan(30, 0.3), tmp_path)
    no_api = _solve(melange_plan(30, "by_size", ("a10g",)), tmp_path)
    assert by_size.cost_total < no_api.cost_total - 1.0
    assert by_size.cost_by_tier["api"] > 0
    whole = _solve(_plan(30, 0.3, "any"), tmp_path)
    assert whole.cost_total >= by_size.cost_total - 1e-6
    assert whole.cost_total <= no_api.cost_total + 1e-6
