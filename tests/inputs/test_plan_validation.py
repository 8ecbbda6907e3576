"""Bad plans: each one is refused with FILE:LINE:, a specific message and a fix — no traceback, no output.

Every case edits one line of BASE (line numbers below are BASE's) and is checked twice: through
load_plan (PlanError, the right line) and through `planopt solve` (exit 2, nothing written, the
input untouched).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.lint import lint
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import solve_plan

from tests.helpers.paths import PLANS

BASE = """\
plan: validation base
horizon_days: 2
catalogs: []
policy:
  occupancy: 0.6
  tiers: [on-demand]
models:
  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
offers:
  - id: seed-cloud
    accelerator: gpu-80gb
    provider: seed-cloud
    gpus_per_node: 2
    price_per_gpu_hour: {on-demand: 2.5}
workloads:
  - name: chat
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {input: 1000, output: 250}
    demand:
      peak_output_tokens_per_s: 9000
    measured:
      - {accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}
"""
BASE_COST = 30 * 2.5 * 24 * 2  # the seed: 30 GPUs on demand, 2 days

BATCH = "    demand:\n      peak_output_tokens_per_s: 9000\n"
PEAK = "      peak_output_tokens_per_s: 9000\n"


def variant(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def profile(values: list[float]) -> str:
    return PEAK + "      profile: [" + ", ".join(str(v) for v in values) + "]\n"


SECOND_CHAT = """\
  - name: chat
    model: seed-70b
    precisions: [fp8]
    tokens: {input: 1000, output: 250}
    demand: {peak_output_tokens_per_s: 10}
"""

CASES = [
    pytest.param(variant("  occupancy: 0.6", "  occupancyy: 0.6"), 5,
                 ["unknown key 'occupancyy'", "did you mean 'occupancy'?"], id="typo-key"),
    pytest.param(variant("    model: seed-70b", "    modle: seed-70b"), 19,
                 ["unknown key 'modle'", "did you mean 'model'?"], id="typo-workload-key"),
    pytest.param(variant("    model: seed-70b", "    model: seed-70"), 19,
                 ["unknown model 'seed-70'", "did you mean 'seed-70b'?"], id="unknown-model"),
    pytest.param(variant("      - {accelerator: gpu-80gb,", "      - {accelerator: gpu-80g,"), 26,
                 ["unknown accelerator 'gpu-80g'", "did you mean 'gpu-80gb'?"], id="unknown-accelerator"),
    pytest.param(BASE + SECOND_CHAT, 27, ["duplicate workload name 'chat'"], id="duplicate-workload"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: 0.6\n  occupancy: 0.7"), 6,
                 ["duplicate key 'occupancy'"], id="duplicate-yaml-key"),
    pytest.param(variant("{on-demand: 2.5}", "{on-demand: 2.5, on-demand: 3.0}"), 16,
                 ["duplicate key 'on-demand'"], id="duplicate-flow-key"),
    pytest.param(variant("  occupancy: 0.6", "\toccupancy: 0.6"), 5, ["tabs"], id="tab"),
    pytest.param(variant("  occupancy: 0.6", '  occupancy: !!python/object/apply:os.system ["echo hi"]'), 5,
                 ["python/object/apply:os.system", "is not allowed"], id="python-tag"),
    pytest.param(variant("plan: validation base", "plan: !!python/object:os.system echo"), 1,
                 ["python/object:os.system", "is not allowed"], id="python-tag-scalar"),
    pytest.param(variant("catalogs: []", "catalogs: !!set {a, b}"), 3, ["set", "is not allowed"], id="set-tag"),
    pytest.param(variant("plan: validation base", "plan: !!binary aGVsbG8="), 1, ["binary", "is not allowed"],
                 id="binary-tag"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: .nan"), 5, ["not a finite number"], id="nan"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: .inf"), 5, ["not a finite number"], id="inf"),
    pytest.param(variant(PEAK, "      peak_output_tokens_per_s: 1e400\n"), 24, ["not a finite number"], id="1e400"),
    pytest.param(variant("horizon_days: 2", "horizon_days: " + "9" * 5000), 2, ["cannot read"], id="huge-int"),
    pytest.param(variant("horizon_days: 2", "horizon_days: 2\nstart_date: 2026-13-01"), 3,
                 ["cannot read '2026-13-01'", "month"], id="bad-date"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: 0"), 5, ["occupancy", "out of range"], id="occupancy-0"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: 1.5"), 5, ["occupancy", "out of range"],
                 id="occupancy-1.5"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: 0.6\n  memory_reserve: 1"), 6,
                 ["memory_reserve", "out of range"], id="memory-reserve-1"),
    pytest.param(variant("  occupancy: 0.6", "  occupancy: 0.6\n  spares: 1.5"), 6,
                 ["spares", "integer"], id="spares-fraction"),
    pytest.param(variant(PEAK, profile([0.5] * 23)), 25, ["has 23 values", "exactly 24"], id="profile-23"),
    pytest.param(variant(PEAK, profile([0.5] * 23 + [1.2])), 25, ["value 1.2 is outside [0, 1]"], id="profile-1.2"),
    pytest.param(variant(PEAK, "      peak_output_tokens_per_s: 9000\n      profile: {weekday: [" +
                         ", ".join(["0.5"] * 24) + "]}\n"), 25, ["unknown day type 'weekday'"],
                 id="profile-unknown-day-type"),
    pytest.param(variant("horizon_days: 2", "horizon_days: 2\nday_types: {weekday: 1, weekend: 2}"), 3,
                 ["day types add up to 3 days, horizon_days is 2"], id="day-types-sum"),
    pytest.param(variant("horizon_days: 2", "horizon_days: 0"), 2, ["horizon_days", "out of range"],
                 id="horizon-0"),
    pytest.param(variant("    tp: [2]", "    tp: [3]"), 21, ["3 is not a power of two"], id="tp-3"),
    pytest.param(variant(BATCH, "    batch: {output_tokens_per_day: 2.0e9, window_hours: [22, 24]}\n"), 23,
                 ["hour 24 is outside 0–23"], id="window-hour-24"),
    pytest.param(variant("    tp: [2]", "    tp: [2]\n    api: {usd_per_m_input: 1, usd_per_m_output: 1, "
                         "max_share: 1.5}"), 22, ["max_share", "out of range"], id="max-share-1.5"),
    pytest.param(variant("    tp: [2]", "    tp: [2]\n    api: {usd_per_m_input: -1, usd_per_m_output: 1}"), 22,
                 ["usd_per_m_input", "out of range"], id="negative-api-price"),
    pytest.param(variant("{on-demand: 2.5}", "{on-demand: -2.5}"), 16,
                 ["price_per_gpu_hour.on-demand", "out of range"], id="negative-price"),
    pytest.param(variant("    gpus_per_node: 2", "    gpus_per_node: 0"), 15, ["gpus_per_node", "out of range"],
                 id="gpus-per-node-0"),
    pytest.param(variant("{on-demand: 2.5}", "{on-demand: 2.5, reserved-2y: 2.0}"), 16,
                 ["'reserved-2y'", "'reserved-1y'"], id="unknown-tier"),
    pytest.param(variant("catalogs: []", "catalogs: [extra.yaml]"), 3,
                 ["catalog file 'extra.yaml' does not exist"], id="missing-catalog"),
    pytest.param(variant("  tiers: [on-demand]", "  tiers: [on-demand]\n  spot_pools: [interactiv]"), 7,
                 ["no workload is in pool 'interactiv'", "did you mean 'interactive'?"], id="spot-pool-typo"),
    pytest.param(variant("workloads:", "workload:"), 17, ["unknown key 'workload'", "did you mean 'workloads'?"],
                 id="typo-top-level"),
    pytest.param(variant("plan: validation base", "plan: café plan").encode("latin-1"), 1, ["UTF-8"],
                 id="latin-1"),
    pytest.param("- a\n- b\n", 1, ["a plan is a mapping"], id="not-a-mapping"),
]


def _write(tmp_path: Path, content: str | bytes, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _refused_by_cli(tmp_path: Path, path: Path, where: str, fragments: list[str]) -> None:
    before = path.read_bytes()
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert where in res.output, res.output
    for f in fragments:
        assert f in res.output, (f, res.output)
    assert "Traceback" not in res.output
    assert not out.exists(), "bad input must not write output files"
    assert path.read_bytes() == before, "bad input must not change the input file"


def test_the_base_plan_is_valid(tmp_path):
    assert solve_plan(_write(tmp_path, BASE)).cost_total == pytest.approx(BASE_COST)


@pytest.mark.parametrize("content, line, fragments", CASES)
def test_bad_plan_is_refused_with_file_line_and_fix(tmp_path, content, line, fragments):
    path = _write(tmp_path, content)
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    text = str(exc.value)
    where = f"{path}:{line}:"
    assert where in text, text
    for f in fragments:
        assert f in text, (f, text)
    hit = next(p for p in exc.value.problems if p.line == line)
    assert hit.fix, f"no fix given: {hit}"
    _refused_by_cli(tmp_path, path, where, fragments)


def test_every_problem_at_once(tmp_path):
    text = variant("  occupancy: 0.6", "  occupancy: 0")
    text = text.replace("    tp: [2]", "    tp: [3]").replace("horizon_days: 2", "horizon_days: -1")
    path = _write(tmp_path, text)
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    assert [p.line for p in exc.value.problems] == [2, 5, 21]
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert "3 problems; nothing was written" in res.output
    assert not (tmp_path / "out").exists()


def test_yaml_1_2_numbers(tmp_path):
    """`2.0e9` and `1e9` are numbers (YAML 1.2), not strings."""
    for volume in ("2.0e9", "1e9"):
        path = _write(tmp_path, variant(BATCH, f"    batch: {{output_tokens_per_day: {volume}, "
                                               "window_hours: [22, 6]}\n"))
        w = load_plan(path).plan.workloads[0]
        assert w.batch is not None and w.batch.output_tokens_per_day == float(volume)


def test_bom_prefixed_plan_solves(tmp_path):
    path = _write(tmp_path, b"\xef\xbb\xbf" + BASE.encode("utf-8"))
    assert solve_plan(path).cost_total == pytest.approx(BASE_COST)
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["x-bomb:", '  l0: &l0 [' + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"  # 9^9 ≈ 387 million strings once expanded


def test_alias_bomb_is_refused_quickly(tmp_path):
    path = _write(tmp_path, BASE + _bomb())
    started = time.process_time()  # CPU: the tests share the cores with each other
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    assert time.process_time() - started < 3
    text = str(exc.value)
    assert re.search(re.escape(str(path)) + r":\d+:", text), text
    assert "expands to more than" in text
    _refused_by_cli(tmp_path, path, f"{path}:", ["expands to more than"])


def test_anchors_and_aliases_are_allowed(tmp_path):
    text = variant("    tokens: {input: 1000, output: 250}", "    tokens: &tok {input: 1000, output: 250}")
    text += SECOND_CHAT.replace("name: chat", "name: chat-2").replace(
        "    tokens: {input: 1000, output: 250}", "    tokens: *tok")
    text = text.replace("    demand: {peak_output_tokens_per_s: 10}",
                        "    demand: {peak_output_tokens_per_s: 10}\n    tp: [2]\n    measured:\n"
                        "      - {accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}")
    loaded = load_plan(_write(tmp_path, text))
    assert loaded.plan.workloads[1].tokens == loaded.plan.workloads[0].tokens


def test_file_over_one_megabyte_is_refused_before_parsing(tmp_path):
    path = _write(tmp_path, BASE + "# " + "x" * 1_000_100 + "\n")
    started = time.process_time()  # CPU: the tests share the cores with each other
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    assert time.process_time() - started < 1
    assert f"{path}: " in str(exc.value) and "the limit is 1,000,000" in str(exc.value)
    _refused_by_cli(tmp_path, path, f"{path}:", ["the limit is 1,000,000"])


# --- catalog paths ---------------------------------------------------------------------------------------


EXTRA_CATALOG = """\
models:
  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}
accelerators:
  - {id: gpu-80gb, memory_gb: 80}
"""


def _plan_beside(tmp_path: Path, catalog_ref: str) -> Path:
    (tmp_path / "plans").mkdir()
    (tmp_path / "extra.yaml").write_text(EXTRA_CATALOG, encoding="utf-8")
    text = variant("catalogs: []", f"catalogs: [{catalog_ref}]")
    text = text.replace("models:\n  - {id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}\n", "")
    text = text.replace("accelerators:\n  - {id: gpu-80gb, memory_gb: 80}\n", "")
    return _write(tmp_path / "plans", text)


def test_catalog_path_escaping_the_plan_folder_is_refused(tmp_path, monkeypatch):
    path = _plan_beside(tmp_path, "../extra.yaml")
    monkeypatch.chdir(tmp_path / "plans")  # neither the plan's folder nor the current one holds ../extra.yaml
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    assert f"{path}:3:" in str(exc.value)
    assert "leaves the plan's folder and the current folder" in str(exc.value)
    _refused_by_cli(tmp_path, path, f"{path}:3:", ["leaves the plan's folder"])


def test_catalog_path_inside_the_current_folder_is_allowed(tmp_path, monkeypatch):
    """As `plans/q4.yaml` naming `../catalogs/extra.yaml` when run from the repo."""
    path = _plan_beside(tmp_path, "../extra.yaml")
    monkeypatch.chdir(tmp_path)
    assert solve_plan(path).cost_total == pytest.approx(BASE_COST)


def test_absolute_catalog_path_is_taken_as_given(tmp_path, monkeypatch):
    path = _plan_beside(tmp_path, str(tmp_path / "extra.yaml"))
    monkeypatch.chdir(tmp_path / "plans")
    assert solve_plan(path).cost_total == pytest.approx(BASE_COST)


@pytest.mark.parametrize("old, new, warning", [
    ("  tiers: [on-demand]\n", "  tiers: [on-demand]\n  spot_pools: [interactive]\n",
     "policy.spot_pools names interactive, but policy.tiers has no spot: no pool rents spot"),
    ("{on-demand: 2.5}", "{on-demand: 250}",
     "offer seed-cloud: 250 USD per GPU-hour (on-demand) is far above any accelerator's rent — is it in cents"),
    ("    tokens: {input: 1000, output: 250}\n",
     "    tokens: {input: 1000, output: 250}\n    slo: {ttft_ms: 1500000}\n",
     "chat: slo.ttft_ms 1,500,000 ms is 25.0 minutes — targets are in milliseconds (1.5 s is ttft_ms: 1500)"),
    ("horizon_days: 2\n", "horizon_days: 2\nstart_date: 2027-01-01\ncommitments:\n  - {offer: seed-cloud, "
     "tier: reserved-1y, gpus: 2, start: 2025-01-01, end: 2025-12-31, price_per_gpu_hour: 1.0}\n",
     "the contract on seed-cloud (2025-01-01 to 2025-12-31) lies outside the horizon (2027-01-01 to 2027-01-02)"),
    ("    tokens: {input: 1000, output: 250}\n",
     "    tokens: {input: 1000, output: 250}\n    api: {usd_per_m_input: 0.0000006, usd_per_m_output: 0.0000008, "
     "max_share: 0.05}\n",
     "chat: api prices 6e-07 and 8e-07 per million tokens are far below any API's — per token?"),
    ("horizon_days: 2\n", "horizon_days: 14\nstart_date: 2027-01-04\nday_types: {weekday: 4, weekend: 10}\n",
     "day_types state weekday 4, weekend 10, but the calendar from start_date 2027-01-04 has weekday 10, weekend 4"),
    ("      peak_output_tokens_per_s: 9000\n",
     "      peak_output_tokens_per_s: 9000\n      profile: {weekday: [%s], weekend: [%s]}\n"
     % (", ".join(["0.05"] * 12 + ["0.1"] * 12), ", ".join(["0.3"] * 12 + ["0.45"] * 12)),
     "chat: demand.profile never reaches the peak on any day type (busiest hours: weekday 0.1, weekend 0.45)"),
    ("    price_per_gpu_hour: {on-demand: 2.5}\n",
     "    price_per_gpu_hour: {on-demand: 2.5}\n  - {id: acme-gpu, accelerator: gpu-80gb, provider: acme, "
     "gpus_per_node: 2, price_per_gpu_hour: {on-demand: 2.0}}\n",
     "offer acme-gpu is in the plan, but its provider acme is not in policy.providers (seed-cloud): no workload "
     "may use it"),
])
def test_valid_but_suspicious_plans_warn(tmp_path, old, new, warning):
    """Valid plans that look wrong: validate prints a warning (exit 0), solve notes it."""
    path = tmp_path / "plan.yaml"
    text = variant(old, new)
    if "acme" in new:  # the policy keeps to the accounts the team has
        text = text.replace("  tiers: [on-demand]\n", "  tiers: [on-demand]\n  providers: [seed-cloud]\n", 1)
    if "weekend:" in new:
        text = text.replace("horizon_days: 2\n", "horizon_days: 2\nday_types: {weekday: 1, weekend: 1}\n", 1)
    path.write_text(text, encoding="utf-8")
    assert any(warning in w for w in lint(load_plan(path).plan)), lint(load_plan(path).plan)
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0 and warning in " ".join(res.output.split()), res.output
    path.write_text(BASE, encoding="utf-8")
    assert lint(load_plan(path).plan) == []


@pytest.mark.parametrize("name, content, said", [
    # a result handed back as a plan: 192 "unknown key" lines before, one for each key a plan does not have
    ("q4.json", '{"plan": "q4", "status": "optimal", "cost": {"total": 1}, "solver": {}, "purchases": [], '
                '"workloads": []}', "this is a planopt result (what `planopt solve` writes), not a plan"),
    ("run.json", '{"date": "20260901", "completed": 100, "output_throughput": 900.5, "mean_ttft_ms": 80}',
     "this is a load test's results, not a plan"),
    # a usage log: its size had been blamed on catalogs ("split catalogs into separate files")
    ("usage.csv", "timestamp,model,prompt_tokens,completion_tokens\n2026-07-06T10:00:00Z,chat,1,2\n",
     "this is a usage log, not a plan (YAML)"),
])
def test_a_file_of_another_kind_is_named_for_what_it_is(tmp_path, name, content, said):
    path = _write(tmp_path, content, name)
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and said in errors[0] and " — " in errors[0], res.output
    _refused_by_cli(tmp_path, path, str(path), [said])


def test_owned_servers_beyond_the_facility_are_warned_of(tmp_path):
    """Valid (nothing can be bought under the limit), but likelier a typo in the facility or the servers."""
    path = _write(tmp_path, """\
plan: over the facility
horizon_days: 30
facility: {usd_per_kwh: 0.1, power_kw: 40, racks: 1}
owned:
  - {accelerator: h100-sxm, nodes: 8, node_power_kw: 10.2}
workloads:
  - name: chat
    model: llama-3.1-8b
    tokens: {input: 1000, output: 200}
    slo: {ttft_ms: 1000, tpot_ms: 40}
    demand: {peak_output_tokens_per_s: 2000}
""")
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "the servers owned draw 82 kW at load, above facility.power_kw 40" in res.output
    assert "the servers owned take 2 rack positions, above facility.racks 1" in res.output


def test_a_tpot_target_in_seconds_gets_the_milliseconds_hint(tmp_path):
    """tpot_ms: 0.15 (seconds written where milliseconds go): no config meets it, and the reason says 0.15 s
    would be tpot_ms: 150, as it says for ttft_ms (it had said nothing)."""
    path = tmp_path / "plan.yaml"
    path.write_text("""\
plan: tpot in seconds
horizon_days: 1
catalogs: [builtin]
workloads:
  - name: chat
    model: llama-3.3-70b
    accelerators: [h100-sxm]
    precisions: [fp8]
    tokens: {input: 1000, output: 250}
    slo: {tpot_ms: 0.15}
    demand: {peak_output_tokens_per_s: 1000}
""", encoding="utf-8")
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 1, res.output
    assert "tpot_ms is in milliseconds: 0.15 s would be tpot_ms: 150" in " ".join(res.output.split())


def test_the_calendar_is_checked_on_the_day_types_a_scenario_plan_states(tmp_path):
    """The program's copy of a plan with scenarios holds each day type once per scenario, its days weighted
    (weekday-2027-01~p10: 21 × 0.2 = 4.2): its days are added back up before they meet the calendar. Solving
    plans/q1-forecast.yaml had warned "day_types state weekday-2027-01~p10 4.2 … but the calendar … has
    weekday-2027-01~p10 21, weekday-2027-01~p30 0" on a plan whose days are right."""
    from optimizer.pipeline import as_solved

    q1 = as_solved(PLANS / "q1-forecast.yaml")
    assert lint(q1.plan) == []
    path = tmp_path / "plan.yaml"
    path.write_text(variant("horizon_days: 2\n", "horizon_days: 14\nstart_date: 2027-01-04\n"
                            "day_types: {weekday: 4, weekend: 10}\nscenarios:\n"
                            "  - {name: low, weight: 0.5, demand: {all: 0.8}}\n"
                            "  - {name: high, weight: 0.5, demand: {all: 1.2}}\n"), encoding="utf-8")
    said = [w for w in lint(as_solved(path).plan) if w.startswith("day_types state")]
    assert said == [w for w in lint(load_plan(path).plan) if w.startswith("day_types state")]
    assert said and said[0].startswith("day_types state weekday 4, weekend 10, but the calendar from start_date "
                                       "2027-01-04 has weekday 10, weekend 4"), said
