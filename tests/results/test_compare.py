"""planopt compare: plans or results side by side — cost by tier, choices, replicas, new and removed workloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.compare import compare
from optimizer.results.jsonio import dumps

from tests.helpers import shipped
from tests.helpers.paths import ROOT
from tests.helpers.solving import NO_TIME_LIMIT

SEED = ROOT / "plans" / "seed-fleet.yaml"
runner = CliRunner()

EXTRA = """
  - name: {name}
    model: seed-70b
    pool: interactive
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 500, output: 100}}
    demand:
      peak_output_tokens_per_s: {peak}
    measured:
      - {{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}
"""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """A: the seed plus a 'legacy' workload. B: the seed's peak up to 12,000 tok/s, 'legacy' gone, 'summaries' new."""
    d = tmp_path_factory.mktemp("compare")
    seed = SEED.read_text()
    a = d / "q3.yaml"
    a.write_text(seed + EXTRA.format(name="legacy", peak=800))
    b = d / "q4.yaml"
    b.write_text(seed.replace("peak_output_tokens_per_s: 9000", "peak_output_tokens_per_s: 12000")
                 + EXTRA.format(name="summaries", peak=1500))
    ra, rb = solve_plan(a), solve_plan(b)
    ja, jb = d / "q3.json", d / "q4.json"
    ja.write_text(dumps(ra))
    jb.write_text(dumps(rb))
    return {"a": a, "b": b, "ja": ja, "jb": jb, "ra": ra, "rb": rb}


def test_compare_json_reports_cost_choices_and_replicas(plans):
    r = invoke("compare", plans["ja"], plans["jb"], "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # seed at 9000: 15 replicas = 30 GPUs = $1,800/day; at 12,000: 15 + 1 + 4 = 20 replicas = $2,400/day.
    seed_a, seed_b = 1800.0, 2400.0
    legacy = 3 * 2 * 2.5 * 24        # 800 tok/s: 1 base + 1 spare + 1 rollout = 3 replicas = 6 GPUs
    summaries = 4 * 2 * 2.5 * 24     # 1500 tok/s: 2 base + 1 spare + 1 rollout = 4 replicas = 8 GPUs
    assert d["cost"]["total"]["a"] == pytest.approx(seed_a + legacy)
    assert d["cost"]["total"]["b"] == pytest.approx(seed_b + summaries)
    assert d["cost"]["total"]["change"] == pytest.approx(d["cost"]["total"]["b"] - d["cost"]["total"]["a"])
    assert set(d["cost"]["by_tier"]) == {"reserved", "on_demand", "spot", "api"}
    assert d["cost"]["by_tier"]["on_demand"]["change"] == pytest.approx(d["cost"]["total"]["change"])
    rows = {w["name"]: w for w in d["workloads"]}
    assert rows["chat-70b"]["status"] == "changed"
    assert (rows["chat-70b"]["replicas_a"], rows["chat-70b"]["replicas_b"]) == (15, 20)
    assert "replicas" in rows["chat-70b"]["what_changed"] and "demand" in rows["chat-70b"]["what_changed"]
    assert rows["chat-70b"]["choice_a"] == rows["chat-70b"]["choice_b"] == "seed-cloud-80gb · fp8 · tp2"
    assert d["added"] == ["summaries"] and d["removed"] == ["legacy"]
    assert d["changed"] == ["chat-70b"] and d["choice_changed"] == [] and d["cost_moved"] == []
    assert rows["summaries"]["replicas_b"] == 4 and rows["summaries"]["replicas_a"] is None


def test_compare_plans_solves_them_first_and_prints_a_table(plans):
    r = invoke("compare", plans["a"], plans["b"])
    assert r.exit_code == 0, r.output
    for text in ("Cost", "all-in", "new spend", "chat-70b", "15 → 20", "summaries", "new", "legacy", "removed", "on-demand",
                 "Workloads: 1 changed (0 a new choice) · 1 new · 1 removed"):
        assert text in r.output, text


def test_compare_a_plan_with_its_own_result_changes_nothing(plans):
    r = invoke("compare", plans["a"], plans["ja"], "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["cost"]["total"]["change"] == pytest.approx(0.0, abs=1e-6)
    assert {w["status"] for w in d["workloads"]} == {"same"}
    assert d["a"]["kind"] == "plan" and d["b"]["kind"] == "result"


def test_a_cost_moved_by_its_share_of_shared_gpus_says_so(plans):
    """Config, replicas and demand unchanged, cost moved (another workload took more of a shared pool's GPUs):
    the reason names the shared GPUs, not just "cost"."""
    import dataclasses

    ra = plans["ra"]
    w = ra.workloads[0]
    rb = dataclasses.replace(ra, workloads=[dataclasses.replace(w, cost=w.cost - 234.0)] + ra.workloads[1:])
    c = compare(ra, rb)
    row = c.workloads[0]
    assert row.status == "cost moved" and row.what_changed == ["cost (its share of shared GPUs)"]
    # counted apart: it had been one of the "changed" workloads, as if its config had moved
    assert c.changed == [] and c.choice_changed == [] and c.cost_moved == [w.name]
    d = c.to_dict()
    assert (d["changed"], d["choice_changed"], d["cost_moved"]) == ([], [], [w.name])
    assert d["workloads"][0]["saving"] == pytest.approx(234.0)  # the amount is still there
    from rich.console import Console

    from optimizer.report.calibration import print_comparison

    con = Console(record=True, width=200)
    print_comparison(c, con)
    text = " ".join(con.export_text().split())
    assert "Workloads: 0 changed · 1 cost moved, config kept (its share of shared GPUs)" in text
    assert f"{w.name} │ cost moved │" in text


def test_choice_change_is_reported(plans):
    import dataclasses

    ra = plans["ra"]
    w = ra.workloads[0]
    moved = dataclasses.replace(w, offer="other-cloud", precision="bf16", tp=4)
    rb = dataclasses.replace(ra, workloads=[moved] + ra.workloads[1:])
    c = compare(ra, rb)
    row = c.workloads[0]
    assert row.status == "changed" and row.what_changed == ["choice"]
    assert row.choice_b == "other-cloud · bf16 · tp4"
    assert c.changed == c.choice_changed == [w.name] and c.cost_moved == []


def test_a_new_parallelism_or_api_split_is_a_choice_not_a_share_of_shared_gpus(plans):
    """Same offer, precision and tp, but pp 2 or a share of the tokens sent to the API (with the cost that
    follows): the choice changed; it had read "cost (its share of shared GPUs)"."""
    import dataclasses

    ra = plans["ra"]
    w = ra.workloads[0]
    for moved, what in ((dataclasses.replace(w, pp=2, layout="tp2 × pp2", cost=w.cost * 2), "choice"),
                        (dataclasses.replace(w, api_share=0.2, cost=w.cost - 100.0), "API share")):
        c = compare(ra, dataclasses.replace(ra, workloads=[moved] + ra.workloads[1:]))
        assert c.workloads[0].what_changed == [what] and c.workloads[0].status == "changed", what
        assert c.choice_changed == [w.name] and c.cost_moved == []


def test_results_of_plans_with_no_workload_in_common_are_noted(plans, tmp_path):
    """Every workload new or removed: a side-by-side of two different plans, said first."""
    d = json.loads(plans["jb"].read_text())
    d["plan"] = "other team"
    for w in d["workloads"]:
        w["name"] = "other-" + w["name"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(d))
    r = invoke("compare", plans["ja"], other)
    assert r.exit_code == 0, r.output
    ra = plans["ra"].plan
    assert (f"note: A (plan '{ra}') and B (plan 'other team') have no workload in common: a side-by-side of "
            "different plans, not a change to one") in " ".join(r.output.split()), r.output
    assert not any("no workload in common" in n for n in compare(plans["ra"], plans["rb"]).notes)  # legacy → summaries


@pytest.mark.parametrize("content,expect", [
    (None, "file not found"),
    ('{"hello": 1}', "not a planopt result"),
    ("{oops", "not JSON"),
])
def test_bad_inputs_exit_2(plans, tmp_path, content, expect):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    r = invoke("compare", plans["ja"], bad)
    assert r.exit_code == 2, r.output
    assert expect in r.output and "Traceback" not in r.output


def _edited(path, tmp_path, edit) -> Path:
    d = json.loads(Path(path).read_text())
    edit(d)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(d))
    return out


@pytest.mark.parametrize("edit,expect", [
    (lambda d: d["cost"].__setitem__("total", "1800"), 'cost.total: "1800" is not a number'),
    (lambda d: d.__setitem__("horizon_days", 0), "horizon_days: 0 is not a horizon"),
    (lambda d: d["workloads"][0].__setitem__("cost", "x"), 'workloads[0].cost: "x" is not a number'),
    (lambda d: d["workloads"][0]["replicas"].__setitem__("total", "fifteen"),
     'workloads[0].replicas.total: "fifteen" is not a number'),
    (lambda d: d["workloads"][0]["replicas"].__setitem__("total", -3),
     "workloads[0].replicas.total: -3 is negative (a count of GPUs, nodes or replicas)"),
    (lambda d: d["purchases"][0].__setitem__("gpus", -8), "purchases[0].gpus: -8 is negative"),
    (lambda d: d.__setitem__("notes", None), "notes: null is not a list"),
    (lambda d: d.__setitem__("currency", None), "currency: null is not text"),
    (lambda d: d["policy"].__setitem__("occupancy", 0), "policy.occupancy: 0 is not a share"),
    (lambda d: d["purchases"][0].__setitem__("tier", "x"), "purchases[0].tier: 'x' is not a tier"),
    (lambda d: d["hourly"][0].__setitem__("day_type", "x"), "hourly[0].day_type: 'x' is not one of"),
    (lambda d: next(iter(d["offers"].values())).__setitem__("prices", "x"), 'prices: "x" is not an object'),
])
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_hand_edited_result_is_refused_with_the_key_and_exit_2(plans, tmp_path, edit, expect, command):
    """A result whose values are not what `planopt solve` writes is refused when read — the key, the value,
    exit 2 — not halfway through a report with a traceback; `report` writes nothing."""
    bad = _edited(plans["ja"], tmp_path, edit)
    args = ("compare", plans["ja"], bad) if command == "compare" else ("report", bad, "-o", tmp_path / "out")
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert expect in " ".join(r.output.split()) and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


def test_a_result_saved_with_a_byte_order_mark_is_read(plans, tmp_path):
    """Windows tools save UTF-8 with a BOM; the result reads the same."""
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + Path(plans["ja"]).read_bytes())
    r = invoke("compare", plans["ja"], bom, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cost"]["total"]["change"] == pytest.approx(0.0, abs=1e-6)


def test_invalid_plan_exits_2_with_file_and_line(plans, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SEED.read_text().replace("occupancy: 0.6", "occupancy: 1.6"))
    r = invoke("compare", plans["ja"], bad)
    assert r.exit_code == 2
    assert "bad.yaml:" in r.output and "occupancy" in r.output


PREPAID = """
start_date: 2027-01-01
commitments:
  - {offer: seed-cloud-80gb, tier: reserved-1y, gpus: 30, start: 2026-07-01, end: 2027-06-30, price_per_gpu_hour: 2.0}
"""


def test_a_move_onto_prepaid_capacity_is_not_a_saving(tmp_path):
    """B serves the seed on 30 GPUs signed before the plan at $2.00: new spend falls to $0, all-in falls
    only by the price difference ($0.50 × 30 GPUs × 24 h), and the workload's saving is that, not $1,800."""
    plan = tmp_path / "prepaid.yaml"
    plan.write_text(SEED.read_text().replace("catalogs: []", "catalogs: []" + PREPAID))
    ra, rb = solve_plan(SEED), solve_plan(plan)
    c = compare(ra, rb).to_dict()
    assert c["cost"]["new"]["change"] == pytest.approx(-1800.0)
    assert c["cost"]["committed"]["b"] == pytest.approx(30 * 2.0 * 24)
    assert c["cost"]["all_in"]["a"] == pytest.approx(1800.0)
    assert c["cost"]["all_in"]["change"] == pytest.approx(-360.0)
    row = c["workloads"][0]
    assert row["saving"] == pytest.approx(360.0)
    assert row["committed_b"] == pytest.approx(1440.0) and row["cost_b"] == pytest.approx(0.0)
    assert "onto committed capacity" in row["what_changed"]
    # the other way round, dropping the prepaid capacity costs more all-in, not less
    back = compare(rb, ra).to_dict()
    assert back["cost"]["all_in"]["change"] == pytest.approx(360.0)
    assert back["workloads"][0]["saving"] == pytest.approx(-360.0)


def test_compare_q4_and_q1_shows_all_in_new_and_committed_with_the_right_sign(tmp_path):
    """q4 and q1 run on the same contracts signed before q4 ($611k of them in q1, where one ends mid-quarter):
    all-in, new and committed spend each change with the right sign."""
    opts = SolveOptions(time_limit_s=NO_TIME_LIMIT)
    q4 = shipped.solved(ROOT / "plans" / "q4.yaml", opts)
    q1 = shipped.solved(ROOT / "plans" / "q1-with-commitments.yaml", opts)
    for r in (q4, q1):
        (tmp_path / f"{r.plan[:7]}.json").write_text(dumps(r))
    ja, jb = sorted(tmp_path.glob("*.json"))
    out = invoke("compare", ja, jb, "--json")
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    cost = d["cost"]
    for key in ("all_in", "new", "committed"):
        assert set(cost[key]) >= {"a", "b", "change"}
    assert cost["all_in"]["a"] == pytest.approx(q4.cost_total + q4.cost_committed, rel=1e-6)
    assert cost["all_in"]["b"] == pytest.approx(q1.cost_total + q1.cost_committed, rel=1e-6)
    assert cost["all_in"]["change"] == pytest.approx(cost["new"]["change"] + cost["committed"]["change"], abs=0.01)
    assert (cost["all_in"]["change"] > 0) == (q1.cost_all_in > q4.cost_all_in)
    assert cost["committed"]["a"] == pytest.approx(q4.cost_committed) and q4.cost_committed > 0   # the same contracts
    assert (cost["committed"]["change"] > 0) == (q1.cost_committed > q4.cost_committed)   # one ends mid-q1
    text = invoke("compare", ja, jb)
    assert text.exit_code == 0 and "all-in (new + committed)" in text.output and "committed (signed before)" in text.output


def test_the_bridge_adds_up_to_the_all_in_difference_exactly(plans, tmp_path):
    """price + volume + mix + new commitments + roll-off = B's all-in − A's, both ways round, to the cent; and
    the console and the HTML page show every step, all-in per day and the demand that changed."""
    from optimizer.results.compare import BRIDGE_PARTS

    for a, b in ((plans["ra"], plans["rb"]), (plans["rb"], plans["ra"]), (plans["ra"], plans["ra"])):
        c = compare(a, b)
        assert c.bridge is not None
        parts = sum(getattr(c.bridge, k) for k in BRIDGE_PARTS)
        assert parts == pytest.approx(c.all_in.change, abs=1e-6)
        assert round(parts, 2) == round(b.cost_all_in - a.cost_all_in, 2)
        d = c.to_dict()
        assert round(sum(d["bridge"][k] for k in BRIDGE_PARTS), 2) == round(d["cost"]["all_in"]["change"], 2)
        assert d["cost"]["all_in_per_day"]["a"] == pytest.approx(a.cost_all_in / a.horizon_days, abs=1e-6)
        assert d["cost"]["new_commitments_full_term"]["b"] == pytest.approx(
            sum(n.total_committed for n in b.new_commitments), abs=1e-6)
    same = compare(plans["ra"], plans["ra"]).bridge
    assert all(abs(getattr(same, k)) < 1e-9 for k in BRIDGE_PARTS)  # a plan against itself: nothing moves
    grown = compare(plans["ra"], plans["rb"])
    assert grown.bridge.volume > 0 and grown.bridge.volume_b > grown.bridge.volume_a  # B asks more tokens
    assert grown.bridge.price == pytest.approx(0.0, abs=1e-9)  # the same catalog: no price moved
    assert [w.name for w in grown.demand_changes] == [w.name for w in grown.workloads if "demand" in w.what_changed]
    assert grown.demand_changes
    page = tmp_path / "cmp.html"
    r = invoke("compare", plans["ja"], plans["jb"], "--html", page)
    assert r.exit_code == 0, r.output
    for words in ("All-in, A to B", "roll-off of commitments", "all-in per day", "Demand that changed"):
        assert words in r.stdout
    html = page.read_text(encoding="utf-8")
    for words in ("All-in, A to B", "price", "volume", "mix", "new commitments", "roll-off of commitments",
                  "all-in per day", "Demand that changed", grown.demand_changes[0].name):
        assert words in html
    r2 = invoke("compare", plans["ja"], plans["jb"], "--html", tmp_path / "cmp2.html", "--json")
    assert r2.exit_code == 0 and (tmp_path / "cmp2.html").read_bytes() == page.read_bytes()  # the same bytes twice


def test_the_bridge_prices_b_at_as_prices():
    """A price move alone (the same purchases, B's on-demand price 1.5 × A's) is all price: volume, mix and
    new commitments are 0, and the steps add up to the difference."""
    from dataclasses import replace

    from optimizer.results.jsonio import read_result

    a = read_result(ROOT / "tests" / "data" / "results" / "35dde86-q1-with-commitments.json")
    ups = [replace(p, price_per_gpu_hour=p.price_per_gpu_hour * 1.5, cost=p.cost * 1.5) if p.tier == "on-demand"
           else p for p in a.purchases]
    moved = sum(p.cost for p in ups) - sum(p.cost for p in a.purchases)
    b = replace(a, purchases=ups, cost_total=a.cost_total + moved)
    c = compare(a, b)
    assert c.bridge.price == pytest.approx(moved, abs=1e-6)
    assert c.bridge.volume == pytest.approx(0.0, abs=1e-9)
    assert c.bridge.mix == pytest.approx(0.0, abs=1e-6)
    assert c.bridge.new_commitments == pytest.approx(0.0, abs=1e-9)
    assert c.bridge.total == pytest.approx(c.all_in.change, abs=1e-6)
