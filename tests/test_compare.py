"""planopt compare: plans or results side by side — cost by tier, choices, replicas, new and removed workloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.pipeline import solve_plan
from optimizer.results.compare import compare
from optimizer.results.jsonio import dumps

ROOT = Path(__file__).resolve().parent.parent
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
    assert rows["summaries"]["replicas_b"] == 4 and rows["summaries"]["replicas_a"] is None


def test_compare_plans_solves_them_first_and_prints_a_table(plans):
    r = invoke("compare", plans["a"], plans["b"])
    assert r.exit_code == 0, r.output
    for text in ("Cost", "total", "chat-70b", "15 → 20", "summaries", "new", "legacy", "removed", "on-demand"):
        assert text in r.output, text


def test_compare_a_plan_with_its_own_result_changes_nothing(plans):
    r = invoke("compare", plans["a"], plans["ja"], "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["cost"]["total"]["change"] == pytest.approx(0.0, abs=1e-6)
    assert {w["status"] for w in d["workloads"]} == {"same"}
    assert d["a"]["kind"] == "plan" and d["b"]["kind"] == "result"


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


def test_invalid_plan_exits_2_with_file_and_line(plans, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SEED.read_text().replace("occupancy: 0.6", "occupancy: 1.6"))
    r = invoke("compare", plans["ja"], bad)
    assert r.exit_code == 2
    assert "bad.yaml:" in r.output and "occupancy" in r.output
