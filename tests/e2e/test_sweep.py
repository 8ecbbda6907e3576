"""planopt sweep: the points equal solving each varied plan directly (written as YAML, not through the sweep's
own code), a rerun reads the points back, Ray gives the process pool's numbers, the HTML is the same bytes
twice, and every bad input is exit 2 with what is wrong and how to fix it, and nothing written."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.inputs.derived import peak_derivation
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.sweep import append_point, read_points, reserved_gpus, vary_key
from optimizer.studies.sweep import apply_point, parse_vary, run_sweep

from tests.helpers.paths import PLANS
from tests.helpers.solving import NO_TIME_LIMIT
from tests.helpers.sweep_plans import BATCH, ON_DEMAND, PEAK, write_plan

VARIES = ["demand=0.8:1.2:3", "price.on-demand=0.8:1.2:3"]
runner = CliRunner()



@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The plan swept over demand and price.on-demand on the process pool (2 workers), via the CLI."""
    d = tmp_path_factory.mktemp("sweep")
    plan = write_plan(d / "plan.yaml")
    args = ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "--workers", "2", "-o", str(d / "out"),
            "--json"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return d, plan, args, json.loads(res.stdout)


def test_points_equal_solving_each_varied_plan(swept):
    d, _plan, _args, data = swept
    points = data["points"]
    assert set(data) == {"points"}
    assert all(set(p) == {"vary", "status", "cost_all_in", "cost_new", "cost_committed", "cost_total", "reserved_gpus",
                          "new_commitments", "new_spend_commitments", "full_term"} for p in points)
    # one at a time: the plan, then each key's other two values
    assert [p["vary"] for p in points] == [
        {"demand": 1.0, "price.on-demand": 1.0}, {"demand": 0.8, "price.on-demand": 1.0},
        {"demand": 1.2, "price.on-demand": 1.0}, {"demand": 1.0, "price.on-demand": 0.8},
        {"demand": 1.0, "price.on-demand": 1.2}]
    for p in points:
        direct = solve_plan(write_plan(d / "direct.yaml", p["vary"]["demand"], p["vary"]["price.on-demand"]),
                            SolveOptions(alternatives=0))
        assert p["status"] == direct.status == "optimal"
        assert p["cost_total"] == pytest.approx(direct.cost_total, abs=0.01), p["vary"]
        assert p["reserved_gpus"] == reserved_gpus(direct)
    costs = [p["cost_total"] for p in points]
    assert costs[1] < costs[0] < costs[2] and costs[3] < costs[0] < costs[4]
    assert len({p["reserved_gpus"] for p in points}) > 1  # the reserved level moves too
    assert (d / "out" / "sweep.html").exists()


def test_a_rerun_reads_the_points_back_and_solves_none(swept):
    d, _plan, args, data = swept
    before = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8")
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == data
    assert "read back 5 solved points from sweep.jsonl; solving 0" in res.stderr
    assert (d / "out" / "sweep.jsonl").read_text(encoding="utf-8") == before  # nothing solved, nothing appended
    # a grid over the same keys solves only the four corners it lacks
    seen = []
    sweep = run_sweep(d / "plan.yaml", [parse_vary(v) for v in VARIES], d / "out", grid=True, workers=2,
                      on_start=lambda todo, back: seen.append((todo, back)))
    assert seen == [(4, 5)] and len(sweep.points) == 9 and sweep.read_back == 5
    assert len(read_points(d / "out" / "sweep.jsonl")) == 9


def test_ray_gives_the_process_pools_numbers(swept, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'planopt[ray]')")
    d, plan, _args, data = swept
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        res = runner.invoke(app, ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "--engine", "ray",
                                  "-o", str(tmp_path / "ray"), "--json"])
    finally:
        ray.shutdown()
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == data


def test_the_html_is_the_same_bytes_twice(swept, monkeypatch):
    from optimizer.report.sweep import render_html

    d, plan, _args, _data = swept
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    sweep = run_sweep(plan, [parse_vary(v) for v in VARIES], d / "out")
    html = render_html(sweep)
    assert html == render_html(run_sweep(plan, [parse_vary(v) for v in VARIES], d / "out"))
    assert html.count("<svg") == 2 and "All-in cost" in html and "Reserved level" in html
    assert "2026-01-01 00:00:00 UTC" in html and "SOURCE_DATE_EPOCH" in html
    assert "http://" not in html and "https://" not in html and "<script" not in html


def test_an_infeasible_point_is_recorded_and_not_retried(tmp_path):
    plan = write_plan(tmp_path / "plan.yaml", caps=", available_gpus: {reserved-1y: 40, on-demand: 10}")
    varies = [parse_vary("demand=1:3:2")]
    sweep = run_sweep(plan, varies, tmp_path / "out", workers=2)
    assert [(p.vary["demand"], p.status) for p in sweep.points] == [(1.0, "optimal"), (3.0, "infeasible")]
    bad = sweep.points[1]
    assert bad.cost_total is None and bad.reserved_gpus is None and bad.message
    again = run_sweep(plan, varies, tmp_path / "out")
    assert again.read_back == 2 and [p.status for p in again.points] == ["optimal", "infeasible"]


def test_applying_a_point_changes_only_what_it_names(tmp_path):
    loaded = load_plan(write_plan(tmp_path / "plan.yaml"))
    moved = apply_point(loaded, {"demand": 1.0, "price.on-demand": 1.0, "goodput": 1.0})
    assert moved.plan == loaded.plan and moved.catalog.offers == loaded.catalog.offers
    p = apply_point(loaded, {"demand.summaries": 2.0, "occupancy": 0.5, "price.reserved-1y": 0.5})
    chat, summaries = p.plan.workloads
    assert chat.demand.peak_output_tokens_per_s == PEAK and summaries.batch.output_tokens_per_day == 2 * BATCH
    assert p.plan.policy.occupancy == 0.5 and loaded.plan.policy.occupancy == 0.6
    assert p.catalog.offers["test-h100"].price("reserved-1y") == pytest.approx(1.4)
    assert p.catalog.offers["test-h100"].price("on-demand") == ON_DEMAND
    assert loaded.catalog.offers["test-h100"].price("reserved-1y") == 2.8  # the loaded plan is untouched


def test_goodput_scales_estimated_goodput_and_leaves_measured_alone(tmp_path):
    loaded = load_plan(write_plan(tmp_path / "plan.yaml"))
    base = {c.key: c.goodput for cs in build_candidates(loaded).by_workload.values() for c in cs}
    low = {c.key: c.goodput for cs in build_candidates(apply_point(loaded, {"goodput": 0.8})).by_workload.values()
           for c in cs}
    shared = base.keys() & low.keys()
    assert shared and all(low[k] == pytest.approx(0.8 * base[k]) for k in shared)
    seed = load_plan(PLANS / "seed-fleet.yaml")  # measured goodput only
    assert (solve_plan(apply_point(seed, {"goodput": 0.5})).cost_total == solve_plan(seed).cost_total == 1800.0)


BUSINESS = """\
plan: growth
horizon_days: 90
catalogs: []
policy: {{tiers: [on-demand]}}
models: [{{id: m70, params_b: 70, kv_gb_per_seq: 1.6}}]
accelerators: [{{id: g80, memory_gb: 80}}]
offers: [{{id: o80, accelerator: g80, provider: p, gpus_per_node: 2, price_per_gpu_hour: {{on-demand: 2.5}}}}]
workloads:
  - name: chat
    model: m70
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand: {{users: {users}, active_share: 0.25, requests_per_active_user_per_day: 12, peak_hour_share: 0.125,
              monthly_growth: {growth}}}
    measured: [{{accelerator: g80, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
"""


def test_growth_and_demand_rederive_a_business_peak(tmp_path):
    def peak(users: float, growth: float) -> float:
        path = tmp_path / "b.yaml"
        path.write_text(BUSINESS.format(users=users, growth=growth), encoding="utf-8")
        return load_plan(path).plan.workloads[0].demand.peak_output_tokens_per_s

    path = tmp_path / "base.yaml"
    path.write_text(BUSINESS.format(users=120000, growth=0.05), encoding="utf-8")
    loaded = load_plan(path)
    for vary, users, growth in (({"growth": 0.1}, 120000, 0.1), ({"demand": 1.5}, 180000, 0.05),
                                ({"growth": 0.0, "demand.chat": 0.5}, 60000, 0.0)):
        point = apply_point(loaded, vary)
        w = point.plan.workloads[0]
        assert w.demand.peak_output_tokens_per_s == pytest.approx(peak(users, growth)), vary
        assert peak_derivation(point.plan, w).peak_output_tokens_per_s == pytest.approx(peak(users, growth))
    res = runner.invoke(app, ["sweep", str(path), "--vary", "growth=0:0.1:2", "-o", str(tmp_path / "out"),
                              "--workers", "1", "--json"])
    assert res.exit_code == 0, res.output
    assert [p["vary"] for p in json.loads(res.stdout)["points"]] == [{"growth": 0.05}, {"growth": 0.0},
                                                                    {"growth": 0.1}]


# --- bad input: exit 2, what is wrong and the fix, nothing written ------------------------------------


@pytest.mark.parametrize("vary, said", [
    ("demnad=0.8:1.2:3", "unknown key 'demnad' — did you mean 'demand'?"),
    ("price.ondemand=0.8:1.2:3", "did you mean 'price.on-demand'?"),
    ("demand.chatt=0.8:1.2:3", "the plan has no workload 'chatt' — did you mean 'demand.chat'?"),
    ("demand=1.2:0.8:3", "LO 1.2 is above HI 0.8 — swap them: demand=0.8:1.2:3"),
    ("demand=0.8:1.2:0", "N is 0 — give 1 to 1000 values"),
    ("demand=0.8:1.2:1001", "N is 1001 — give 1 to 1000 values"),
    ("demand=1.5:2:1", "one value (N = 1) cannot run from 1.5 to 2 — give one value as demand=1.5:1.5:1"),
    ("demand=0.8:1.2:three", "N 'three' is not a whole number"),
    ("demand=low:1.2:3", "LO 'low' is not a number"),
    ("demand=a:b:c", "'demand=a:b:c': LO 'a' is not a number"),  # as typed: ':b:' is not an emoji code
    ("demand=0.8:nan:3", "HI 'nan' is not a number"),
    ("demand=0.8:1.2", "is not LO:HI:N"),
    ("demand", "has no KEY="),
    ("price.on-demand=-0.5:1:3", "-0.5 is not a multiplier"),
    ("price.spot=0.5:2:3", "buys no spot (policy.tiers: reserved-1y, on-demand), so its price changes nothing"),
    ("goodput=0:1:3", "give multipliers above 0"),
    ("occupancy=0:0.5:3", "policy.occupancy 0 is out of range: input should be greater than or equal to 0.01"),
    ("occupancy=0.001:0.5:2", "policy.occupancy 0.001 is out of range: input should be greater than or equal to 0.01"),
    ("occupancy=0.5:1.2:3", "policy.occupancy 1.2 is out of range: input should be less than or equal to 1"),
    ("demand=1:1e9:2", "--vary demand: × 1e+09 gives chat"),
    ("demand=1e-300:1:2", "--vary demand: × 1e-300 gives chat"),  # solved to $0 before
    ("price.on-demand=1:1e12:2", "× 1e+12 is beyond the × 100 a scenario may state"),
    ("goodput=0.5:20:2", "× 20 is beyond the × 10 a scenario may state"),
    ("demand=1e-300:1:2", "greater than or equal to 0.001 — give a lowest multiplier of at least"),
    ("growth=0:0.1:3", "no workload of"),
    ("price.api=0.5:2:3", "sends tokens to an API, so its price changes nothing — give a workload `api:`"),
])
def test_bad_varies_are_exit_2_with_a_fix(tmp_path, vary, said):
    plan = write_plan(tmp_path / "plan.yaml")
    res = runner.invoke(app, ["sweep", str(plan), "--vary", vary, "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert said in res.stderr, res.stderr
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_a_grid_too_large_is_refused_before_its_points_are_made(tmp_path):
    """10⁹ combinations had been made before they were counted: the run filled the memory and was killed."""
    plan = write_plan(tmp_path / "plan.yaml")
    res = runner.invoke(app, ["sweep", str(plan), "--grid", "--vary", "demand=0.8:1.2:1000",
                              "--vary", "price.on-demand=0.8:1.2:1000", "--vary", "occupancy=0.5:0.7:1000",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "the sweep has 1,000,000,000 points, more than 10,000" in res.stderr
    assert not (tmp_path / "out").exists()


def test_a_report_that_cannot_be_written_is_said_before_any_point_is_solved(tmp_path):
    """sweep.html a folder: every point had been solved and sweep.jsonl written before the exit 2."""
    plan = write_plan(tmp_path / "plan.yaml")
    (tmp_path / "out" / "sweep.html").mkdir(parents=True)
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=0.8:1.2:2", "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "sweep.html is a folder, not a file" in res.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["sweep.html"]


def test_a_key_given_twice_and_an_address_without_ray_are_exit_2(tmp_path):
    plan = write_plan(tmp_path / "plan.yaml")
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=1:2:2", "--vary", "demand=1:3:2",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "--vary demand is given twice" in res.stderr
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=1:2:2", "--address", "10.0.0.1:6379",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "add --engine ray" in res.stderr
    assert not (tmp_path / "out").exists()


def test_a_bad_line_in_sweep_jsonl_is_exit_2_with_its_line(swept, tmp_path):
    d, plan, _args, _data = swept
    out = tmp_path / "out"
    out.mkdir()
    lines = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    for bad, said in (('{"plan_hash": "x", "vary": {"demand": 1.0}}\n', "sweep.jsonl:3: not a sweep point: no 'status'"),
                      ("not json\n", "sweep.jsonl:3: not a sweep point: not JSON"),
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": "a lot", '
                       '"reserved_gpus": 1}\n', "cost_total is 'a lot', not a number"),
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": 1, "reserved_gpus": 1, '
                       '"spend": {"on-demand": "cheap"}}\n', "spend 'on-demand' is 'cheap', not a number"),
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": 1, "reserved_gpus": 1, '
                       '"spend": [1, 2]}\n', "'spend' is not an object of TIER: cost"),
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": 1, "reserved_gpus": 1, '
                       '"interpolated": "yes"}\n', "'interpolated' is 'yes', not true or false"),
                      # values a sweep never writes, read back and reported before
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": -5, "reserved_gpus": 1}\n',
                       "cost_total is -5, below 0"),
                      ('{"plan_hash": "x", "vary": {}, "status": "splendid", "cost_total": 1, "reserved_gpus": 1}\n',
                       "'status' is 'splendid', not one of optimal, feasible, infeasible, error, invalid"),
                      ('{"plan_hash": "x", "vary": {}, "status": "optimal", "cost_total": 1, "reserved_gpus": 1, '
                       '"gap": -1}\n', "gap is -1, below 0"),
                      ('{"plan_hash": "x", "vary": {}, "status": "feasible", "cost_total": 1, "reserved_gpus": 1, '
                       '"time_limit_s": 0}\n', "time_limit_s is 0, not a time limit"),
                      (lines[0][:40] + "\n", "sweep.jsonl:3: not a sweep point: not JSON"),  # cut, then written on
                      ('{"plan_hash": "x"}', "sweep.jsonl:3: not a sweep point: no 'vary'")):  # JSON, not cut
        (out / "sweep.jsonl").write_text("".join(lines) + bad, encoding="utf-8")
        res = runner.invoke(app, ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "-o", str(out)])
        assert res.exit_code == 2, res.output
        assert said in res.stderr and "delete that line" in res.stderr, res.stderr
        assert "Traceback" not in res.output and sorted(p.name for p in out.iterdir()) == ["sweep.jsonl"]


def test_a_last_line_cut_off_mid_write_is_dropped_and_its_point_solved_again(swept, tmp_path):
    """A run killed while writing a point leaves half a line: the next run drops it (saying so), solves that point
    and appends it after whole lines only."""
    d, plan, _args, data = swept
    out = tmp_path / "out"
    out.mkdir()
    whole = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:len(data["points"])]
    cut = whole[2][:40]
    (out / "sweep.jsonl").write_text("".join(whole[:2]) + cut, encoding="utf-8")
    res = runner.invoke(app, ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "-o", str(out)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.stderr.split())
    assert (f"note: the last line of {out / 'sweep.jsonl'} (line 3) was cut off (a run stopped while writing it) "
            "and is dropped: that point is solved again") in said, said
    assert "read back 2 solved points from sweep.jsonl" in said
    text = (out / "sweep.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n") and text.startswith("".join(whole[:2]))
    assert all(json.loads(line) for line in text.splitlines())  # every line whole again
    points = read_points(out / "sweep.jsonl")
    assert len(points) == len(data["points"]) and {vary_key(p.vary) for p in points} == {
        vary_key(p["vary"]) for p in data["points"]}
    res = runner.invoke(app, ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "-o", str(out)])
    assert res.exit_code == 0 and "cut off" not in res.stderr, res.stderr


def test_a_cut_off_last_line_is_left_in_place_when_the_run_stops_first(swept, tmp_path):
    """Exit 2 for another reason (here a key the plan does not have): nothing is written, the file included."""
    d, plan, _args, _data = swept
    out = tmp_path / "out"
    out.mkdir()
    whole = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    before = "".join(whole[:2]) + whole[2][:40]
    (out / "sweep.jsonl").write_text(before, encoding="utf-8")
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "price.nowhere=0.8:1.2:3", "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert (out / "sweep.jsonl").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in out.iterdir()) == ["sweep.jsonl"]


def test_one_point_proven_at_two_costs_is_exit_2_naming_both_lines(swept, tmp_path):
    """Two sweeps of one plan writing to one folder (or an edit) can leave a point proven twice at different
    costs: which to believe is not for planopt to guess. The same cost twice (within the gap) is read."""
    d, plan, _args, _data = swept
    out = tmp_path / "out"
    out.mkdir()
    lines = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    assert first["status"] == "optimal"
    again = json.dumps({**first, "cost_total": 1.0}) + "\n"
    (out / "sweep.jsonl").write_text("".join(lines[:2]) + again, encoding="utf-8")
    res = runner.invoke(app, ["sweep", str(plan), *sum((["--vary", v] for v in VARIES), []), "-o", str(out)])
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert "sweep.jsonl:3:" in said and "is proven twice at different costs" in said and "on line 1" in said
    same = json.dumps({**first, "cost_total": first["cost_total"] * (1 + 1e-9)}) + "\n"
    (out / "sweep.jsonl").write_text("".join(lines[:2]) + same, encoding="utf-8")
    assert len(read_points(out / "sweep.jsonl")) == 3


def test_a_last_line_without_its_newline_is_read_and_appended_after(swept, tmp_path):
    d, _plan, _args, _data = swept
    lines = (d / "out" / "sweep.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "sweep.jsonl"
    path.write_text("\n".join(lines[:2]), encoding="utf-8")  # edited by hand: no newline at the end
    first, second = read_points(path)
    append_point(path, replace(first, vary={"demand": 2.0, "price.on-demand": 1.0}))
    assert [p.vary["demand"] for p in read_points(path)] == [first.vary["demand"], second.vary["demand"], 2.0]


def test_ray_missing_is_exit_2_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    plan = write_plan(tmp_path / "plan.yaml")
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=1:2:2", "--engine", "ray",
                              "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "pip install 'planopt[ray]'" in res.stderr and not (tmp_path / "out").exists()


def test_a_point_the_time_limit_stopped_is_solved_again_under_a_longer_limit(tmp_path):
    """A point read back that its time limit stopped short of the gap stands for a rerun under the same limit
    and solver, and is solved again under a longer one (the advice the sweep gives) or another solver."""
    from optimizer.results.sweep import SweepPoint
    from optimizer.studies.sweep import plan_hash

    plan = write_plan(tmp_path / "plan.yaml")
    out = tmp_path / "out"
    short = SweepPoint({"demand": 1.0}, "feasible", 1.0e9, 7, plan_hash(load_plan(plan)), 1.0, gap=0.3,
                       spend={}, solver="highs", time_limit_s=5.0, cost_committed=0.0, new_commitments=[])
    append_point(out / "sweep.jsonl", short)
    varies = [parse_vary("demand=1:1:1")]
    seen = []
    again = run_sweep(plan, varies, out, options=SolveOptions(alternatives=0, time_limit_s=5.0),
                      on_start=lambda todo, back: seen.append((todo, back)))
    assert seen == [(0, 1)] and again.points[0].cost_total == 1.0e9  # the same limit: read back
    longer = run_sweep(plan, varies, out, options=SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT),
                       on_start=lambda todo, back: seen.append((todo, back)))
    assert seen[-1] == (1, 0)
    point = longer.points[0]
    assert point.status == "optimal" and point.cost_total < 1.0e9
    assert (point.solver, point.time_limit_s) == ("highs", NO_TIME_LIMIT)
    assert read_points(out / "sweep.jsonl")[-1].cost_total == pytest.approx(point.cost_total, abs=0.005)  # the last line wins, to the cent
    other = run_sweep(plan, varies, out,
                      options=SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT, solver="cbc"), on_start=lambda todo, back: seen.append((todo, back)))
    assert seen[-1] == (0, 1) and other.points[0].cost_total == pytest.approx(point.cost_total, abs=0.005)  # proven: any solver's


def test_every_point_on_a_rerun_solves_the_points_proven_from_their_neighbours(tmp_path):
    plan = write_plan(tmp_path / "plan.yaml")
    varies = [parse_vary("price.on-demand=0.8:1.2:5")]
    first = run_sweep(plan, varies, tmp_path / "out", workers=2)
    between = [p for p in first.points if p.interpolated]
    assert between, "the price line proves some points from their neighbours"
    seen = []
    every = run_sweep(plan, varies, tmp_path / "out", workers=2, every_point=True,
                      on_start=lambda todo, back: seen.append((todo, back)))
    assert seen == [(len(between), len(first.points) - len(between))]
    assert not any(p.interpolated for p in every.points)
    for a, b in zip(first.points, every.points):
        assert b.cost_total == pytest.approx(a.cost_total, rel=0.002)  # within the plan's gap


def test_a_plan_refused_as_written_or_an_outdir_that_is_a_file_stops_before_any_solve(tmp_path):
    plan = write_plan(tmp_path / "plan.yaml")
    huge = tmp_path / "huge.yaml"  # 405B on one-GPU nodes: no config meets chat's TPOT (as `solve`: exit 1)
    huge.write_text(plan.read_text().replace("model: llama-3.1-8b", "model: llama-3.1-405b", 1))
    res = runner.invoke(app, ["sweep", str(huge), "--vary", "demand=0.5:1:2", "-o", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    assert "workload 'chat' cannot meet its SLO" in res.stderr
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    for outdir in (afile, afile / "sub"):
        res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=0.5:1:2", "-o", str(outdir)])
        assert res.exit_code == 2, res.output
        assert "afile is a file, not a folder" in res.stderr and "choose a writable --outdir" in res.stderr
        assert "Traceback" not in res.output and afile.read_text() == "x"


def test_a_ray_address_where_nothing_answers_is_exit_2_in_seconds(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'planopt[ray]')")
    plan = write_plan(tmp_path / "plan.yaml")
    res = runner.invoke(app, ["sweep", str(plan), "--vary", "demand=1:2:2", "--engine", "ray",
                              "--address", "127.0.0.1:1", "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert "cannot join the Ray cluster at 127.0.0.1:1: nothing answers at 127.0.0.1:1" in said
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()
