"""Stable re-plans: `solve --baseline LAST.json` keeps last quarter's choices unless moving saves more
than policy.change_threshold (2%) of the workload's cost, or the old choice is gone.

The plan: one day; chat needs 8 GPUs all day (goodput 100 tok/s per 1-GPU replica, occupancy 1)
on one of two offers sold by the GPU on demand: oa at $1.00 (8 × 24 × $1.00 = $192 a day) and ob,
0.5% dearer. The threshold is 2% × $192 = $3.84.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.baseline import load_baseline
from optimizer.results.compare import compare
from optimizer.results.jsonio import dumps, from_dict

from tests.helpers.paths import PLANS
from tests.helpers.small_plans import interactive, offer, plan, write

CHAT = 8 * 24 * 1.00  # $192 on oa


def two_offers(ob_price: float, **policy) -> dict:
    offers = [offer("oa", "gpu-a", on_demand=1.00), offer("ob", "gpu-b", on_demand=ob_price)]
    ws = [interactive("chat", 800), interactive("tools", 300, pool="small", accs=("gpu-a",))]
    return plan(ws, offers, tiers=["on-demand"], **policy)


@pytest.fixture
def last(tmp_path):
    """Last quarter: ob 0.5% dearer, so chat runs on oa."""
    r = solve_plan(write(tmp_path, two_offers(1.005), "last.yaml"))
    assert r.workload("chat").offer == "oa" and r.workload("chat").cost == pytest.approx(CHAT)
    path = tmp_path / "last.json"
    path.write_text(dumps(r), encoding="utf-8")
    return path


def test_a_one_percent_price_change_on_an_unused_offer_changes_nothing(tmp_path, last):
    """ob 1% cheaper than before is 0.5% cheaper than oa: $0.96 a day saved, under the $3.84 threshold."""
    new = write(tmp_path, two_offers(1.005 * 0.99))
    free = solve_plan(new)
    assert free.workload("chat").offer == "ob"              # without a baseline it moves
    r = solve_plan(new, baseline=load_baseline(last))
    assert r.workload("chat").offer == "oa"
    assert r.cost_total == pytest.approx(CHAT + 3 * 24 * 1.00)  # the true cost: no switching cost in it
    assert r.baseline is not None and r.baseline.changes == []
    assert sorted(r.baseline.kept) == ["chat", "tools"]


@pytest.mark.parametrize("gap", [0.0, 0.001])
def test_a_ten_percent_cheaper_offer_moves_the_workload_and_says_what_it_saves(tmp_path, last, gap):
    """ob at $0.90: 8 × 24 × 0.90 = $172.80, a saving of $19.20 (10%) > $3.84."""
    r = solve_plan(write(tmp_path, two_offers(0.90, mip_gap=gap)), baseline=load_baseline(last))
    assert r.workload("chat").offer == "ob"
    c, = r.baseline.changes
    assert (c.workload, c.from_label, c.to_label) == ("chat", "oa · bf16 · tp1", "ob · bf16 · tp1")
    assert (c.from_key, c.to_key) == ("chat/oa/bf16/tp1", "chat/ob/bf16/tp1")
    assert c.cost_before == pytest.approx(192.0) and c.cost_after == pytest.approx(172.8)
    assert c.saving == pytest.approx(19.2)
    assert "saves $19 (10.0% of its cost; the threshold is 2.0%)" in c.reason
    assert r.baseline.kept == ["tools"]


def test_the_threshold_is_the_policy_s(tmp_path, last):
    r = solve_plan(write(tmp_path, two_offers(0.90, change_threshold=0.15)), baseline=load_baseline(last))
    assert r.workload("chat").offer == "oa" and r.baseline.changes == []


def test_a_choice_that_is_gone_is_free_to_change_and_says_why(tmp_path, last):
    """chat may no longer use oa (say its engine is not qualified there): it moves, dearer, and says why."""
    data = two_offers(1.20)
    data["workloads"][0]["offers"] = ["ob"]
    r = solve_plan(write(tmp_path, data), baseline=load_baseline(last))
    c, = r.baseline.changes
    assert (c.workload, c.to_key) == ("chat", "chat/ob/bf16/tp1")
    assert c.saving == pytest.approx(192 - 8 * 24 * 1.20)   # -$38.40: it costs more, and had to move
    assert "no longer possible" in c.reason and "offer oa" in c.reason


def test_cli_solve_with_baseline_json_and_compare_list_the_change(tmp_path, last):
    runner = CliRunner()
    new = write(tmp_path, two_offers(0.90))
    res = runner.invoke(app, ["solve", str(new), "--baseline", str(last), "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["baseline"]["change_threshold"] == 0.02
    ch, = d["baseline"]["changes"]
    assert (ch["workload"], ch["from"], ch["to"], ch["saving"]) == ("chat", "oa · bf16 · tp1", "ob · bf16 · tp1", 19.2)
    assert from_dict(d).baseline.changes[0].saving == pytest.approx(19.2)
    # the console, the workbook's Summary and the HTML report list it too
    res = runner.invoke(app, ["solve", str(new), "--baseline", str(last), "-o", str(tmp_path / "out2")])
    assert res.exit_code == 0, res.output
    assert "Changes against the baseline" in res.output and "$19" in res.output
    page = (tmp_path / "out2" / "plan.html").read_text(encoding="utf-8")
    assert 'id="changes"' in page and "oa · bf16 · tp1" in page and "$19" in page
    # compare: the saving per workload, and why B moved it
    cmp = compare(from_dict(json.loads(last.read_text())), from_dict(d))
    row = {w.name: w for w in cmp.workloads}["chat"]
    assert row.status == "changed" and row.saving == pytest.approx(19.2) and "threshold" in row.reason
    res = runner.invoke(app, ["compare", str(last), str(tmp_path / "out" / "plan.json")])
    assert res.exit_code == 0, res.output
    assert "+$19" in res.output


@pytest.mark.parametrize("content, message", [
    (None, "baseline file not found"),
    ("{not json", "not JSON"),
    ('{"hello": 1}', "not a planopt result"),
])
def test_a_bad_baseline_is_an_input_error(tmp_path, content, message):
    path = tmp_path / "last.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(PlanError, match=message):
        load_baseline(path)
    res = CliRunner().invoke(app, ["solve", str(write(tmp_path, two_offers(1.0))), "--baseline", str(path),
                                   "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert message in res.output and not (tmp_path / "out").exists()


def test_a_plan_solved_against_its_own_result_changes_nothing(tmp_path):
    """The real plan: every workload keeps its choice and the cost does not move."""
    seed = PLANS / "seed-fleet.yaml"
    first = solve_plan(seed, SolveOptions())
    path = tmp_path / "seed.json"
    path.write_text(dumps(first), encoding="utf-8")
    again = solve_plan(seed, SolveOptions(), baseline=load_baseline(path))
    assert again.baseline.changes == [] and again.cost_total == pytest.approx(first.cost_total)


def test_a_baseline_of_another_plan_is_warned_about(tmp_path):
    """A result sharing no workload with the plan keeps nothing: said, not just its other day count."""
    seed = PLANS / "seed-fleet.yaml"
    other = tmp_path / "seed.json"
    other.write_text(dumps(solve_plan(seed, SolveOptions())), encoding="utf-8")
    new = write(tmp_path, two_offers(1.0))
    res = CliRunner().invoke(app, ["solve", str(new), "--baseline", str(other), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert (f"warning: the baseline {other} (plan 'seed fleet (fleet.go)') has no workload in common with this plan: "
            "none of its choices can be kept, every workload is chosen afresh — give the result of this plan's "
            "last solve") in said, said


def test_a_baseline_sharing_a_workload_is_not_warned_about(tmp_path, last):
    again = solve_plan(write(tmp_path, two_offers(1.005)), baseline=load_baseline(last))
    assert not any("no workload in common" in n for n in again.baseline.notes)


def test_a_demand_that_renames_the_api_ceiling_keeps_the_choice(tmp_path):
    """chat spills to the API above a ceiling that follows its demand (PEAKY at 1000 tok/s and 5%: 7 replicas;
    at 1200: another ceiling), so its config key is renamed although the same hardware runs it. Against last
    quarter's result it stays on oa when ob is 0.5% cheaper (under the 2% threshold); it had been read as a
    choice no longer possible, moved, and listed as a change from oa to oa."""
    from tests.helpers.small_plans import PEAKY, api

    def data(peak: float, ob_price: float) -> dict:
        return plan([interactive("chat", peak, PEAKY, api=api(0.01, 0.05))],
                    [offer("oa", "gpu-a", on_demand=1.00), offer("ob", "gpu-b", on_demand=ob_price)],
                    tiers=["on-demand"])

    r = solve_plan(write(tmp_path, data(1000, 1.005), "last.yaml"))
    before = r.workload("chat").key
    assert r.workload("chat").offer == "oa" and before.endswith("/cap7")
    last = tmp_path / "last.json"
    last.write_text(dumps(r), encoding="utf-8")
    new = write(tmp_path, data(1200, 0.995))
    assert solve_plan(new).workload("chat").offer == "ob"  # without a baseline it moves
    r = solve_plan(new, baseline=load_baseline(last))
    assert r.workload("chat").offer == "oa" and r.workload("chat").key != before
    assert r.baseline.changes == [] and r.baseline.kept == ["chat"]
