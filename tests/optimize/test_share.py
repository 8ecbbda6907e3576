"""GPU sharing (policy.share_pools: small models sharing whole GPUs by MPS or time-slicing) against an enumeration
that imports nothing from the optimizer, for HiGHS and CBC; plans without share_pools as before; the shipped
example, where sharing beats a MIG slice and a GPU of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.optimize.solver import available_solvers
from optimizer.physics import sharing
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.jsonio import dumps, read_result

from tests.helpers.share import SEEDS, SLOWDOWN, brute_force_share, random_share_plan, without_sharing
from tests.helpers.solving import NO_TIME_LIMIT

ROOT = Path(__file__).resolve().parents[2]
SOLVERS = available_solvers()


def _solve(plan: dict, tmp_path: Path, solver: str | None = None):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return solve_plan(path, SolveOptions(solver=solver, time_limit_s=NO_TIME_LIMIT, alternatives=0))


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", SEEDS)
def test_share_matches_enumeration(seed: int, solver: str, tmp_path: Path) -> None:
    plan = random_share_plan(seed)
    best, _choice = brute_force_share(plan)
    result = _solve(plan, tmp_path, solver)
    assert result.status == "optimal"
    assert result.cost_total == pytest.approx(best, rel=1e-7, abs=1e-6), json.dumps(plan)


def test_the_random_share_plans_share_and_some_do_not() -> None:
    """Some plans are cheapest with a group sharing GPUs, some without (else the enumeration tests one side)."""
    shared = [s for s in SEEDS if any(sh for _o, sh in brute_force_share(random_share_plan(s))[1].values())]
    assert 3 <= len(shared) <= len(SEEDS) - 2, shared


def test_memory_binds_in_some_random_plans() -> None:
    """Some plans would share more were memory not added up (else the enumeration tests no memory row)."""
    binds = [s for s in SEEDS if brute_force_share(random_share_plan(s), memory=False)[0]
             < brute_force_share(random_share_plan(s))[0] - 1e-6]
    assert len(binds) >= 2, binds


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_without_share_pools_nothing_shares(seed: int, tmp_path: Path) -> None:
    """No share_pools (the default): every workload on GPUs of its own, at the enumeration's cost without sharing."""
    plan = without_sharing(random_share_plan(seed))
    result = _solve(plan, tmp_path)
    assert result.cost_total == pytest.approx(brute_force_share(plan)[0], rel=1e-7, abs=1e-6)
    assert not result.shared_gpus and not any(w.shared for w in result.workloads)


def test_the_slowdowns_the_enumeration_restates() -> None:
    assert SLOWDOWN == sharing.SLOWDOWN


def test_shipped_example_shares_and_beats_mig_and_own_gpus(tmp_path: Path) -> None:
    """plans/small-models-shared.yaml: three 1–3B models on shared A100s cost less than on MIG slices or GPUs of
    their own (each way's plan solved with the other ways left out), and the result says who shares what."""
    plan = ROOT / "plans" / "small-models-shared.yaml"
    result = solve_plan(plan, SolveOptions(time_limit_s=NO_TIME_LIMIT, alternatives=0))
    assert result.status == "optimal"
    assert all(w.shared == "mps" for w in result.workloads)
    [group] = result.shared_gpus
    assert {m.workload for m in group.members} == {w.name for w in result.workloads}
    assert group.memory_share <= 1 and group.time_share <= 0.6 + 1e-9
    assert group.memory_share == pytest.approx(sum(m.memory_share for m in group.members))
    text = plan.read_text(encoding="utf-8")
    no_share = tmp_path / "no-share.yaml"
    no_share.write_text(text.replace("share_pools: [small]", "share_pools: []"), encoding="utf-8")
    mig = solve_plan(no_share, SolveOptions(time_limit_s=NO_TIME_LIMIT, alternatives=0))
    own = tmp_path / "own.yaml"
    own.write_text(text.replace("share_pools: [small]", "share_pools: []").replace("mig_pools: [small]",
                                                                                   "mig_pools: []"), encoding="utf-8")
    alone = solve_plan(own, SolveOptions(time_limit_s=NO_TIME_LIMIT, alternatives=0))
    assert any(w.mig for w in mig.workloads) and not any(w.mig or w.shared for w in alone.workloads)
    assert result.cost_total < mig.cost_total - 1 and result.cost_total < alone.cost_total - 1
    # the group's GPUs are charged to its members: the workloads' costs and the idle line add up to the total
    assert sum(w.cost for w in result.workloads) + result.cost_idle == pytest.approx(result.cost_total)
    back = read_result_text(dumps(result), tmp_path)
    assert dumps(back) == dumps(result) and [w.shared for w in back.workloads] == ["mps"] * 3
    assert [m.workload for m in back.shared_gpus[0].members] == [m.workload for m in group.members]


def read_result_text(text: str, tmp_path: Path):
    path = tmp_path / "result.json"
    path.write_text(text, encoding="utf-8")
    return read_result(path)


def test_explain_says_whether_sharing_beats_a_mig_slice_and_a_gpu_of_its_own() -> None:
    from optimizer.results.sharing import Priced, first_of_each_way, sharing_verdict

    chosen = Priced("shared", "off · bf16 · tp1 · shared (MPS)", 100.0)
    alts = [Priced("mig", "off · bf16 · MIG 1g.10gb", 150.0), Priced("mig", "off · bf16 · MIG 3g.40gb", 130.0),
            Priced("own", "off · bf16 · tp1", 200.0), Priced("own", "off · bf16 · tp2", None)]
    text = sharing_verdict(chosen, alts, "USD", "mps")
    assert text == ("sharing a GPU (MPS) is chosen: it beats a MIG slice (off · bf16 · MIG 3g.40gb) by $30; "
                    "beats GPUs of its own (off · bf16 · tp1) by $100 over the horizon")
    lost = sharing_verdict(Priced("own", "off · bf16 · tp1", 90.0), [Priced("shared", "s", 100.0)], "USD",
                           "time_slicing")
    assert lost == "sharing a GPU (time-slicing) is not chosen: it costs $10 more than GPUs of its own " \
                   "(off · bf16 · tp1) over the horizon"
    assert sharing_verdict(Priced("own", "x", 1.0), [Priced("mig", "y", 2.0)], "USD", "mps") is None
    ways = {"a": "own", "b": "own", "c": "mig", "d": "shared", "e": "shared"}
    assert first_of_each_way(list("abcde"), ways) == list("acdbe")
