"""The command line: the --json contract, stdout purity, exit codes 0/1/2/3, fit, estimate, catalog, explain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.optimize.solver import available_solvers

from tests.helpers.paths import ROOT
from tests.helpers.solving import NO_TIME_LIMIT
from tests.helpers.steps import no_plan_within_nodes, patch_steps

SEED = ROOT / "plans" / "seed-fleet.yaml"
Q4 = ROOT / "plans" / "q4.yaml"

TOP_KEYS = {"plan", "status", "currency", "horizon_days", "cost", "workloads", "purchases", "solver"}
COST_KEYS = {"total", "per_day", "by_tier"}
TIER_KEYS = {"reserved", "on_demand", "spot", "api"}
WORKLOAD_KEYS = {"name", "pool", "model", "offer", "accelerator", "precision", "tp", "gpus_per_replica",
                 "goodput_output_tokens_per_s", "goodput_source", "weights_gb", "kv_gb_per_seq",
                 "kv_concurrency", "replicas", "gpus_at_peak", "cost"}
REPLICA_KEYS = {"base", "spares", "rollout", "total"}
PURCHASE_KEYS = {"offer", "accelerator", "tier", "gpus", "gpu_hours"}
SOLVER_KEYS = {"name", "seconds", "gap"}
ESTIMATE_KEYS = {"weights_gb", "kv_gb_per_seq", "kv_concurrency", "batch", "ttft_ms", "tpot_ms",
                 "goodput_output_tokens_per_s", "bound"}

SEED_CATALOG = """\
models:
  - id: seed-70b
    name: 70B, 8-bit
    params_b: 70
    kv_gb_per_seq: 1.6
accelerators:
  - id: gpu-80gb
    name: 80 GB class
    memory_gb: 80
"""

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def planopt(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """`planopt ...` in a fresh process, on this checkout's package."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "optimizer.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def check_contract(d: dict) -> None:
    assert TOP_KEYS <= set(d), TOP_KEYS - set(d)
    assert isinstance(d["plan"], str)
    assert d["status"] in ("optimal", "feasible", "infeasible", "error")
    assert isinstance(d["currency"], str) and isinstance(d["horizon_days"], int)
    assert COST_KEYS <= set(d["cost"]) and set(d["cost"]["by_tier"]) == TIER_KEYS
    assert all(isinstance(v, float) for v in d["cost"]["by_tier"].values())
    assert d["cost"]["total"] == pytest.approx(sum(d["cost"]["by_tier"].values()))
    assert d["cost"]["all_in"] == pytest.approx(d["cost"]["total"] + d["cost"]["committed"])
    for w in d["workloads"]:
        assert WORKLOAD_KEYS <= set(w), WORKLOAD_KEYS - set(w)
        assert REPLICA_KEYS <= set(w["replicas"])
    for p in d["purchases"]:
        assert PURCHASE_KEYS <= set(p), PURCHASE_KEYS - set(p)
    assert SOLVER_KEYS <= set(d["solver"])


# --- solve --json: the contract, and nothing else on stdout ---------------------------------------------


@pytest.mark.parametrize("solver", available_solvers())
def test_solve_json_prints_exactly_one_object(tmp_path, solver):
    res = planopt("solve", SEED, "--json", "--solver", solver, "-o", tmp_path / "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("{") and res.stdout.endswith("}\n"), res.stdout[:200]
    d = json.loads(res.stdout)  # raises on anything before or after the object
    check_contract(d)
    assert d["status"] == "optimal" and d["solver"]["name"] == solver
    assert d["cost"]["per_day"] == pytest.approx(1800)
    assert d["cost"]["total"] == pytest.approx(1800)
    assert d["horizon_days"] == 1 and d["currency"] == "USD"
    (w,) = d["workloads"]
    assert w["replicas"] == {"base": 11, "spares": 1, "rollout": 3, "total": 15}
    assert w["gpus_at_peak"] == 30
    assert w["kv_concurrency"] == 46
    assert (w["precision"], w["tp"], w["goodput_source"]) == ("fp8", 2, "measured")
    assert w["weights_gb"] == pytest.approx(70) and w["kv_gb_per_seq"] == pytest.approx(1.6)
    assert [(p["tier"], p["gpus"]) for p in d["purchases"]] == [("on-demand", 30)]
    assert (tmp_path / "out" / "seed-fleet.json").read_text(encoding="utf-8") == res.stdout


def test_solve_json_in_process_matches(tmp_path):
    res = invoke("solve", SEED, "--json", "-o", tmp_path)
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["workloads"][0]["replicas"]["total"] == 15


def test_solve_console_summary(tmp_path):
    res = invoke("solve", SEED, "-o", tmp_path)
    assert res.exit_code == 0, res.output
    assert "$1,800 per day" in res.output
    assert "chat-70b" in res.output and "seed-cloud-80gb" in res.output
    assert (tmp_path / "seed-fleet.json").exists()


def _stable(d: dict) -> dict:
    """The result but its timing (solver.seconds): the work each step did is the same from run to run, since every
    step stops on work, not on the clock (tests/optimize/test_stopping_rule.py)."""
    d = json.loads(json.dumps(d))
    d["solver"].pop("seconds")
    return d


def test_seed_json_identical_twice(tmp_path):
    a = invoke("solve", SEED, "--json", "-o", tmp_path / "a")
    b = invoke("solve", SEED, "--json", "-o", tmp_path / "b")
    assert a.exit_code == b.exit_code == 0
    assert _stable(json.loads(a.stdout)) == _stable(json.loads(b.stdout))


@pytest.mark.e2e
@pytest.mark.slow
def test_q4_json_identical_twice(tmp_path):
    """The realistic plan, solved twice in fresh processes: the same bytes but for solver.seconds.

    Only a plan solved to optimality can promise that (a time-limited incumbent depends on timing): no
    time limit, so the solver alone decides when it is done.
    """
    runs = []
    for name in ("a", "b"):
        res = planopt("solve", Q4, "--json", "--time-limit", NO_TIME_LIMIT, "-o", tmp_path / name, cwd=ROOT,
                      timeout=900)
        assert res.returncode == 0, res.stderr
        d = json.loads(res.stdout)
        check_contract(d)
        assert d["status"] == "optimal", f"status {d['status']}, gap {d['solver']['gap']}"
        runs.append(d)
    assert _stable(runs[0]) == _stable(runs[1])
    assert len(runs[0]["workloads"]) == 9


# --- exit codes -----------------------------------------------------------------------------------------------


INFEASIBLE = """\
plan: caps too tight
horizon_days: 1
catalogs: []
policy: {occupancy: 1.0, spares: 0, rollout_fraction: 0, tiers: [on-demand]}
models: [{id: m7, params_b: 7, kv_gb_per_seq: 0.5}]
accelerators: [{id: gpu-a, memory_gb: 80}]
offers:
  - {id: small-offer, accelerator: gpu-a, provider: p, gpus_per_node: 1,
     price_per_gpu_hour: {on-demand: 1.0}, available_gpus: {on-demand: 2}}
workloads:
  - name: chat
    model: m7
    precisions: [bf16]
    tp: [1]
    tokens: {input: 100, output: 100}
    demand: {peak_output_tokens_per_s: 300}
    measured: [{accelerator: gpu-a, precision: bf16, tp: 1, goodput_output_tokens_per_s: 100}]
"""


def test_exit_0_solved(tmp_path):
    assert invoke("solve", SEED, "-o", tmp_path).exit_code == 0


def test_exit_1_no_plan_meets_the_caps(tmp_path):
    path = tmp_path / "tight.yaml"
    path.write_text(INFEASIBLE, encoding="utf-8")
    res = invoke("solve", path, "-o", tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert "no plan meets the constraints" in res.output
    assert "chat" in res.output and "small-offer" in res.output and "can supply 2" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_json_stdout_stays_clean_when_no_plan_meets_the_caps(tmp_path):
    """With --json, stdout holds the JSON object or nothing: never the reasons (they go to stderr)."""
    path = tmp_path / "tight.yaml"
    path.write_text(INFEASIBLE, encoding="utf-8")
    res = planopt("solve", path, "--json", "-o", tmp_path / "out", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    d = json.loads(res.stdout)  # one object, the contract's "infeasible" status, nothing else
    assert d["status"] == "infeasible" and d["cost"] is None and d["workloads"] == []
    assert any("can supply 2" in r for r in d["reasons"])
    assert "can supply 2" in res.stderr and "Traceback" not in res.stderr


def test_json_on_a_bad_plan_prints_the_error_object_with_each_problem(tmp_path):
    """solve --json on a plan with a typo: exit 2, nothing written, and stdout holds the contract's object with
    status "error" and each problem as validate --json gives it (automation had got an empty stdout)."""
    path = tmp_path / "bad.yaml"
    path.write_text(INFEASIBLE.replace("horizon_days: 1", "horizon_dayz: 1"), encoding="utf-8")
    res = planopt("solve", path, "--json", "-o", tmp_path / "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    d = json.loads(res.stdout)
    assert d["status"] == "error" and d["cost"] is None and d["horizon_days"] is None  # the plan did not load
    (p,) = [p for p in d["problems"] if p["key"] == "horizon_dayz"]
    assert p["file"] == str(path) and p["line"] and "unknown key" in p["message"] and "horizon_days" in p["fix"]
    assert not (tmp_path / "out").exists() and "Traceback" not in res.stderr


def test_exit_2_invalid_input(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(INFEASIBLE.replace("horizon_days: 1", "horizon_dayz: 1"), encoding="utf-8")
    res = invoke("solve", path, "-o", tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert f"{path}:2:" in res.output and "did you mean 'horizon_days'" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_exit_2_missing_file(tmp_path):
    res = invoke("solve", tmp_path / "nope.yaml", "-o", tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert "not found" in res.output


@pytest.mark.parametrize("command", ["solve", "explain", "sweep"])
@pytest.mark.parametrize("limit", ["0", "-5", "nan", "inf"])
def test_exit_2_bad_time_limit(tmp_path, command, limit):
    """nan had reached the solver (exit 3, "solver failure"), and a sweep wrote every point as an error."""
    extra = {"explain": ["--workload", "chat-70b"], "sweep": ["--vary", "demand=0.8:1.2:2", "-o", tmp_path / "out"],
             "solve": ["-o", tmp_path / "out"]}[command]
    res = invoke(command, SEED, *extra, "--time-limit", limit)
    assert res.exit_code == 2, res.output
    assert "--time-limit must be > 0" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_estimate_that_does_not_fit_names_the_sequence_that_does_not():
    """It had said "weights 72.7 GB, usable 153.9 GB" — as if it fitted — leaving out the KV of one sequence."""
    res = invoke("estimate", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--precision", "fp8", "--tp", "2",
                 "--input-tokens", "100000000", "--output-tokens", "100000000")
    assert res.exit_code == 2, res.output
    assert "does not fit: weights 72.7 GB + one sequence's KV" in res.output and "> usable 153.9 GB" in res.output


def test_the_result_says_the_time_limit_the_solve_ran_with(tmp_path):
    """--time-limit 30 on a plan whose policy says 60: the JSON, workbook and page had shown 60."""
    res = invoke("solve", SEED, "--time-limit", "7", "--json", "-o", tmp_path)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["policy"]["time_limit_s"] == 7


def test_the_result_says_the_work_limit_the_solve_ran_with(tmp_path):
    """--work-limit 2 doubles the plan's nodes and simplex iterations, and the result states the limit it ran with."""
    res = invoke("solve", SEED, "--work-limit", "2", "--json", "-o", tmp_path)
    assert res.exit_code == 0, res.output
    work = json.loads(res.stdout)["policy"]["work_limit"]
    assert (work["nodes"], work["lp_iterations"]) == (40_000, 40_000_000)


@pytest.mark.parametrize("factor", ["0", "-1", "nan", "1e9"])
def test_exit_2_bad_work_limit(tmp_path, factor):
    res = invoke("solve", SEED, "--work-limit", factor, "-o", tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert "--work-limit must be > 0" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["--ttft-ms", "--tpot-ms"])
@pytest.mark.parametrize("value", ["0", "nan", "inf"])
def test_estimate_refuses_a_target_that_is_no_number_of_milliseconds(flag, value):
    """nan had read as no target at all (exit 0)."""
    res = invoke("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
                 "--input-tokens", "1500", "--output-tokens", "250", flag, value)
    assert res.exit_code == 2, res.output
    assert f"{flag} must be > 0" in res.output


@pytest.mark.slow
def test_a_time_limit_shorter_than_any_solve_still_gives_the_first_plan(tmp_path):
    """--time-limit is a safety cap: it ends the search for better plans and proofs, never the steps a first plan
    rests on. q4's presolve alone takes longer than 10 ms (this had exited 3 with nothing); now the plan comes out,
    exit 0, and every new commitment is provisional exactly when the plan is unproven. Load-proof: whatever the
    cap let the search do, a plan is returned and its flags follow its own gap."""
    res = planopt("solve", Q4, "--json", "--time-limit", "0.01", "-o", tmp_path / "out", cwd=ROOT, timeout=900)
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["status"] in ("optimal", "feasible") and d["cost"]["total"] > 0, d["solver"]
    assert d["solver"]["stopped_by"]["relax"] != "safety cap", d["solver"]
    gap, target = d["solver"]["gap"], d["policy"]["mip_gap"]
    unproven = gap is None or gap > target + 1e-9
    items = [*d["new_commitments"], *d.get("new_spend_commitments", [])]
    assert all(n["provisional"] is unproven for n in items), (gap, target)
    assert (tmp_path / "out" / "q4.json").exists()


def test_exit_3_no_plan_within_the_work_limit(tmp_path, monkeypatch):
    """No plan at all within the work limit (every integer program stopped on its nodes without one: the solver
    stood in for, the same on every machine) is a solver failure, exit 3, with the error object and nothing
    written."""
    patch_steps(monkeypatch, "solve", no_plan_within_nodes)
    res = invoke("solve", SEED, "--json", "--alternatives", "0", "-o", tmp_path / "out")
    assert res.exit_code == 3, res.output
    assert json.loads(res.stdout)["status"] == "error"
    assert "without a feasible plan within the work limit" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_exit_3_solver_failure_in_process(tmp_path, monkeypatch):
    from optimizer.optimize.solution import SolveInfo

    patch_steps(monkeypatch, "solve", lambda *a, **k: SolveInfo("highs", "error", 0.5, None, None, None))
    res = invoke("solve", SEED, "--json", "-o", tmp_path / "out")
    assert res.exit_code == 3, res.output
    assert '"status": "error"' in res.stdout
    assert "solver failure" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


# --- fit, estimate, catalog ---------------------------------------------------------------------------------


@pytest.fixture
def seed_catalog(tmp_path) -> Path:
    path = tmp_path / "seed-catalog.yaml"
    path.write_text(SEED_CATALOG, encoding="utf-8")
    return path


def test_fit_seed_golden_numbers(seed_catalog):
    res = invoke("fit", "--model", "seed-70b", "--accelerator", "gpu-80gb", "--precision", "fp8", "--tp", "2",
                 "--catalog", seed_catalog, "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["weights_gb"] == pytest.approx(70)
    assert d["total_gb"] == pytest.approx(160)
    assert d["reserve_gb"] == pytest.approx(16)
    assert d["usable_gb"] == pytest.approx(144)
    assert d["free_gb"] == pytest.approx(74)
    assert d["kv_gb_per_seq"] == pytest.approx(1.6)
    assert d["kv_concurrency"] == 46
    assert d["fits"] is True


def test_fit_seed_at_sixteen_bits(seed_catalog):
    res = invoke("fit", "--model", "seed-70b", "--accelerator", "gpu-80gb", "--precision", "bf16", "--tp", "2",
                 "--catalog", seed_catalog, "--json", "--concurrency", "3")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["weights_gb"] == pytest.approx(140) and d["free_gb"] == pytest.approx(4)
    assert d["kv_concurrency"] == 2 and d["fits"] is False


def test_fit_console(seed_catalog):
    ok = invoke("fit", "--model", "seed-70b", "--accelerator", "gpu-80gb", "--precision", "fp8", "--tp", "2",
                "--catalog", seed_catalog, "--concurrency", "46")
    assert ok.exit_code == 0, ok.output
    assert "fits" in ok.output and "46" in ok.output
    too_many = invoke("fit", "--model", "seed-70b", "--accelerator", "gpu-80gb", "--precision", "fp8", "--tp", "2",
                      "--catalog", seed_catalog, "--concurrency", "47")
    assert too_many.exit_code == 1, too_many.output
    assert "does not fit" in too_many.output


@pytest.mark.parametrize("slo", [[], ["--ttft-ms", "500", "--tpot-ms", "30"]])
def test_estimate_json_has_the_contract_keys(slo):
    res = invoke("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
                 "--input-tokens", "1500", "--output-tokens", "250", *slo, "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert ESTIMATE_KEYS <= set(d)  # the contract's keys; more may be added, none renamed
    # 8.03 B parameters: the body at 1 byte, embedding and output layer (2 × 128,256 × 4,096) at 2
    assert d["weights_gb"] == pytest.approx((8.03e9 - 2 * 128_256 * 4_096) * 1 / 1e9 + 2 * 128_256 * 4_096 * 2 / 1e9)
    assert d["goodput_output_tokens_per_s"] > 0 and d["batch"] >= 1
    assert 1 <= d["batch"] <= d["kv_concurrency"]
    assert d["bound"] in ("bandwidth", "compute", "kv-memory", "tpot", "ttft")
    if slo:
        assert d["tpot_ms"] <= 30 + 1e-6 and d["ttft_ms"] <= 500 + 1e-6


def test_estimate_slo_costs_throughput():
    base = ["estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
            "--input-tokens", "1500", "--output-tokens", "250", "--json"]
    free = json.loads(invoke(*base).stdout)
    tight = json.loads(invoke(*base, "--tpot-ms", "15").stdout)
    assert tight["goodput_output_tokens_per_s"] <= free["goodput_output_tokens_per_s"]
    assert tight["batch"] <= free["batch"]


def test_catalog_accelerators_json():
    res = invoke("catalog", "accelerators", "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert isinstance(rows, list) and len(rows) >= 5
    assert all(isinstance(r["id"], str) and isinstance(r["name"], str) and r["name"] for r in rows)
    ids = [r["id"] for r in rows]
    assert "h100-sxm" in ids and len(ids) == len(set(ids))


@pytest.mark.parametrize("section", ["models", "precisions", "offers", "systems"])
def test_catalog_other_sections_json(section):
    res = invoke("catalog", section, "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows and all("id" in r and "name" in r for r in rows)


def test_catalog_systems_table():
    """Systems to buy: price per server or rack (* where estimated), power, lead time, liquid cooling."""
    res = invoke("catalog", "systems")
    assert res.exit_code == 0, res.output
    assert "systems (" in res.output
    for column in ("accelerator", "GPUs", "unit", "price USD", "kW", "lead days", "liquid"):
        assert column in res.output, column
    h100 = next(line for line in res.output.splitlines() if "hgx-h100" in line)
    assert "h100-sxm" in h100 and "317,000" in h100 and "317,000*" not in h100 and "10.2" in h100
    rack = next(line for line in res.output.splitlines() if "gb200-nvl72" in line)
    assert "72" in rack and "rack" in rack and "*" in rack and "True" in rack
    rows = {r["id"]: r for r in json.loads(invoke("catalog", "systems", "--json").stdout)}
    assert rows["hgx-b200"]["accelerator"] == "b200" and rows["hgx-b200"]["price_per_node"]["estimated"] is True


@pytest.mark.parametrize("args, guess", [
    (["fit", "--model", "llama-3.1-70", "--accelerator", "h100-sxm"], "llama-3.1-70b"),
    (["fit", "--model", "llama-3.1-70b", "--accelerator", "h100-sx"], "h100-sxm"),
    (["estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp9"], "fp8"),
])
def test_unknown_ids_exit_2_with_a_guess(args, guess):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert f"did you mean '{guess}'" in res.output
    assert "Traceback" not in res.output


def test_unknown_section_is_a_usage_error():
    res = invoke("catalog", "gpus")
    assert res.exit_code == 2


# --- explain ----------------------------------------------------------------------------------------------


EXPLAIN_PLAN = """\
plan: explain me
horizon_days: 1
catalogs: []
policy: {mip_gap: 0, tiers: [on-demand]}
models: [{id: m30, params_b: 30, kv_gb_per_seq: 0.5}]
accelerators:
  - {id: gpu-80, memory_gb: 80}
  - {id: gpu-48, memory_gb: 48}
  - {id: gpu-24, memory_gb: 24, scale_up_gpus: 2}
offers:
  - {id: o80, accelerator: gpu-80, provider: p1, gpus_per_node: 4, price_per_gpu_hour: {on-demand: 3.0}}
  - {id: o48, accelerator: gpu-48, provider: p2, gpus_per_node: 4, price_per_gpu_hour: {on-demand: 2.0}}
  - {id: o24, accelerator: gpu-24, provider: p3, gpus_per_node: 4, price_per_gpu_hour: {on-demand: 1.0}}
  - {id: o80-b, accelerator: gpu-80, provider: p4, gpus_per_node: 2, price_per_gpu_hour: {on-demand: 3.2}}
  - {id: o48-b, accelerator: gpu-48, provider: p5, gpus_per_node: 2, price_per_gpu_hour: {on-demand: 2.1}}
  - {id: o24-b, accelerator: gpu-24, provider: p6, gpus_per_node: 2, price_per_gpu_hour: {on-demand: 1.1}}
workloads:
  - name: chat
    model: m30
    precisions: [bf16, fp8]
    tp: [1, 2, 4]
    tokens: {input: 1000, output: 200}
    demand: {peak_output_tokens_per_s: 3000}
    measured:
"""


def _explain_plan(tmp_path: Path) -> Path:
    lines = []
    for acc, speed in (("gpu-80", 1.0), ("gpu-48", 0.8), ("gpu-24", 0.5)):
        for p, k in (("bf16", 1.0), ("fp8", 1.5)):
            for tp in (1, 2, 4):
                g = round(400 * speed * k * tp ** 0.9, 1)
                lines.append(f"      - {{accelerator: {acc}, precision: {p}, tp: {tp}, goodput_output_tokens_per_s: {g}}}")
    path = tmp_path / "explain.yaml"
    path.write_text(EXPLAIN_PLAN + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_explain_lists_alternatives_and_dropped(tmp_path):
    path = _explain_plan(tmp_path)
    res = invoke("explain", path, "--workload", "chat", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    alts = d["alternatives"]
    assert len(alts) >= 5
    assert all(a["total_cost"] is not None for a in alts)
    # The chosen config is optimal: forcing any other costs at least as much.
    assert all(a["difference"] >= -1e-6 for a in alts)
    assert [a["total_cost"] for a in alts] == sorted(a["total_cost"] for a in alts)
    assert d["chosen"] not in [a["key"] for a in alts]
    families = {x["family"] for x in d["dropped"]}
    assert "fit" in families  # 30 B at bf16 (60 GB) cannot fit one 24 or 48 GB GPU
    assert "scale-up" in families  # tp4 on gpu-24 (scale-up domain 2)
    assert all(x["reason"] for x in d["dropped"])

    text = invoke("explain", path, "--workload", "chat")
    assert text.exit_code == 0, text.output
    assert "Alternatives, cheapest on their own first" in text.output and "Dropped before solving" in text.output
    assert "scale-up domain" in text.output


def test_explain_json_prints_exactly_one_object(tmp_path):
    res = planopt("explain", _explain_plan(tmp_path), "--workload", "chat", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["workload"] == "chat" and len(d["alternatives"]) >= 5


def test_explain_unknown_workload(tmp_path):
    res = invoke("explain", _explain_plan(tmp_path), "--workload", "chta")
    assert res.exit_code == 2, res.output
    assert "did you mean 'chat'" in res.output


def test_explain_re_solves_in_the_solved_program_as_a_fresh_solve_would(tmp_path):
    """Each alternative forced in the solved program costs what a fresh solve with it fixed costs (mip_gap 0),
    progress is reported once per alternative, and --top bounds how many."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.strategy import solve_candidates
    from optimizer.pipeline import SolveOptions as Options
    from optimizer.pipeline import explain

    path = _explain_plan(tmp_path)
    seen = []
    ex = explain(path, "chat", Options(), count=4, on_progress=lambda i, n, a: seen.append((i, n, a.key)))
    assert [(i, n) for i, n, _k in seen] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    loaded = load_plan(path)
    cands = build_candidates(loaded, frozenset({"chat"}), strict=False)
    # the plan is solved over its pruned configs (exact), the alternatives over every config
    _sol, whole = solve_candidates(loaded, cands, Options(alternatives=0, mip_gap=0.0))
    assert ex.result is not None and ex.result.cost_total == pytest.approx(whole.objective, rel=1e-9)
    for a in ex.alternatives:
        assert a.proven and a.bound is not None and a.bound <= a.total_cost + 1e-6
        _sol, info = solve_candidates(loaded, cands, Options(alternatives=0), fix={"chat": a.key})
        assert a.total_cost == pytest.approx(info.objective, abs=1e-6), a.label
    res = invoke("explain", path, "--workload", "chat", "--top", "2", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)["alternatives"]) == 2


def test_explain_side_by_side_prices_as_in_turn(tmp_path):
    """The forced re-solves in two worker processes give the prices one process gives, in the same order,
    with a progress call per alternative as each ends."""
    from optimizer.candidates.build import build_candidates
    from optimizer.candidates.prune import ranked_alternatives
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.forcing import solve_and_force
    from optimizer.pipeline import SolveOptions as Options

    unlimited = Options(time_limit_s=NO_TIME_LIMIT)  # the solver alone decides when it is done

    loaded = load_plan(_explain_plan(tmp_path))
    cands = build_candidates(loaded, frozenset({"chat"}), strict=False)
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    ranked = ranked_alternatives(loaded.plan, offers, cands.by_workload, {w.name: "" for w in loaded.plan.workloads})
    keys = [c.key for c in ranked["chat"]]
    runs = {}
    for workers in (1, 2):
        seen = []
        _sol, _info, forced = solve_and_force(loaded, cands, unlimited, "chat", keys, 3,
                                              lambda i, n, f, _p: seen.append((i, n)), workers=workers)
        assert seen == [(1, 3), (2, 3), (3, 3)]
        runs[workers] = [(f.key, f.status, f.objective) for f in forced]
    assert [k for k, *_ in runs[1]] == [k for k, *_ in runs[2]]
    for (_k, s1, o1), (_k2, s2, o2) in zip(runs[1], runs[2]):
        assert s1 == s2 == "optimal" and o1 == pytest.approx(o2, abs=1e-6)


def test_explain_prices_an_offer_at_its_best_api_overflow_ceiling():
    """An alternative is its hardware — offer, precision, parallelism — at whichever API overflow ceiling
    makes the plan cheapest: q4's chat on lambda-b200 ranks first with a ceiling of 13 replicas on its own
    ($232,342.06 with it forced), but the plan with no ceiling there costs $229,683.36, and that is its price.
    The chosen config's own hardware at another ceiling is not listed as an alternative."""
    from optimizer.candidates.build import build_candidates
    from optimizer.candidates.overflow import without_ceiling
    from optimizer.candidates.prune import ranked_alternatives
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize.forcing import solve_and_force
    from optimizer.pipeline import SolveOptions as Options

    unlimited = Options(time_limit_s=NO_TIME_LIMIT)  # the solver alone decides when it is done

    loaded = load_plan(ROOT / "plans" / "q4.yaml")
    cands = build_candidates(loaded, frozenset({"chat"}), strict=False)
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    ranked = ranked_alternatives(loaded.plan, offers, cands.by_workload, {w.name: "" for w in loaded.plan.workloads})
    keys = [c.key for c in ranked["chat"]]
    b200 = next(k for k in keys if k.startswith("chat/lambda-b200/fp8/tp1/"))
    assert b200 != without_ceiling(b200)  # the ceiling variant ranks first on its own
    sol, info, forced = solve_and_force(loaded, cands, unlimited, "chat", [b200], 1, workers=1)
    (f,) = forced
    assert f.status == "optimal" and f.chosen == without_ceiling(b200)
    assert f.objective == pytest.approx(223_178.40, rel=loaded.plan.policy.mip_gap)
    _sol, _info, listed = solve_and_force(loaded, cands, unlimited, "chat", keys[:4], 3, workers=1)
    assert all(without_ceiling(x.key) != without_ceiling(sol.chosen["chat"]) for x in listed)


def test_explain_drops_an_early_re_solve_of_the_config_the_plan_chose(tmp_path, monkeypatch):
    """The first re-solve starts while the plan is solved, on the first ranked config the relaxation
    does not choose; when the plan chooses that one after all, its re-solve is dropped and the next
    ranked configs are priced, at the prices one process gives."""
    from optimizer.candidates.build import build_candidates
    from optimizer.candidates.prune import ranked_alternatives
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize import forcing
    from optimizer.pipeline import SolveOptions as Options

    unlimited = Options(time_limit_s=NO_TIME_LIMIT)  # the solver alone decides when it is done

    loaded = load_plan(_explain_plan(tmp_path))
    cands = build_candidates(loaded, frozenset({"chat"}), strict=False)
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    ranked = ranked_alternatives(loaded.plan, offers, cands.by_workload, {w.name: "" for w in loaded.plan.workloads})
    sol, _info, _forced = forcing.solve_and_force(loaded, cands, unlimited, "chat", [], 0)
    chosen = sol.chosen["chat"]
    keys = [chosen] + [c.key for c in ranked["chat"] if c.key != chosen]
    other = keys[1]
    started = []
    real = forcing._likely_choices

    def misled(prog):  # the relaxation "chooses" another config, so the early re-solve is the plan's own
        started.append(True)
        return {**real(prog), "chat": other}

    monkeypatch.setattr(forcing, "_likely_choices", misled)
    seen = []
    _sol, _i, side = forcing.solve_and_force(loaded, cands, unlimited, "chat", keys, 2,
                                             lambda i, n, f, _p: seen.append((i, n)), workers=2)
    _sol, _i, alone = forcing.solve_and_force(loaded, cands, unlimited, "chat", keys, 2, workers=1)
    assert started and seen == [(1, 2), (2, 2)]
    assert [f.key for f in side] == [f.key for f in alone] == keys[1:3]
    for a, b in zip(side, alone):
        assert a.status == b.status == "optimal" and a.objective == pytest.approx(b.objective, abs=1e-6)


def test_explain_prices_an_early_re_solve_from_the_plans_configs_too(tmp_path, monkeypatch):
    """The early re-solve starts from the relaxation's configs; where they are not the plan's (another
    workload's, here), the plan with only the forced workload moved is priced too, and the cheaper plan found
    is the price: the prices one process gives."""
    from optimizer.candidates.build import build_candidates
    from optimizer.candidates.prune import ranked_alternatives
    from optimizer.inputs.loading import load_plan
    from optimizer.optimize import forcing
    from optimizer.pipeline import SolveOptions as Options

    unlimited = Options(time_limit_s=NO_TIME_LIMIT)  # the solver alone decides when it is done

    path = _explain_plan(tmp_path)
    text = path.read_text(encoding="utf-8")
    rows = text[text.index("    measured:\n"):]
    path.write_text(text + "  - name: summarize\n    model: m30\n    precisions: [bf16, fp8]\n    tp: [1, 2, 4]\n"
                    "    tokens: {input: 4000, output: 300}\n    demand: {peak_output_tokens_per_s: 1700}\n" + rows,
                    encoding="utf-8")
    loaded = load_plan(path)
    cands = build_candidates(loaded, frozenset({"chat"}), strict=False)
    offers = {o: loaded.catalog.offers[o] for o in cands.offer_ids()}
    ranked = ranked_alternatives(loaded.plan, offers, cands.by_workload, {w.name: "" for w in loaded.plan.workloads})
    sol, _info, _forced = forcing.solve_and_force(loaded, cands, unlimited, "chat", [], 0)
    keys = [c.key for c in ranked["chat"] if c.key != sol.chosen["chat"]]
    wrong = next(c.key for c in cands.by_workload["summarize"] if c.key != sol.chosen["summarize"])
    real = forcing._likely_choices
    monkeypatch.setattr(forcing, "_likely_choices", lambda prog: {**real(prog), "summarize": wrong})
    merged = []
    with_start = forcing._with_start
    monkeypatch.setattr(forcing, "_with_start",
                        lambda forced, kept, gap: merged.append((forced.key, kept)) or with_start(forced, kept, gap))
    _sol, _i, side = forcing.solve_and_force(loaded, cands, unlimited, "chat", keys, 2, workers=2)
    _sol, _i, alone = forcing.solve_and_force(loaded, cands, unlimited, "chat", keys, 2, workers=1)
    early = [(k, kept) for k, kept in merged if kept is not None]
    assert len(early) == 1 and early[0][0] == keys[0]  # the early one, priced from the plan's configs too
    assert [f.key for f in side] == [f.key for f in alone] == keys[:2]
    for a, b in zip(side, alone):
        assert a.status == b.status == "optimal" and a.objective == pytest.approx(b.objective, abs=1e-6)
    assert side[0].objective <= early[0][1] + 1e-6


def test_with_start_takes_the_cheaper_plan_and_keeps_the_bound():
    from optimizer.optimize.forcing import ForcedSolve, _with_start

    bounded = ForcedSolve("k", 680.0, 460.0, "bounded", 9.0)
    assert _with_start(bounded, 503.0, 0.01) == ForcedSolve("k", 503.0, 460.0, "bounded", 9.0)
    assert _with_start(bounded, 464.0, 0.01) == ForcedSolve("k", 464.0, 460.0, "optimal", 9.0)  # within 1%
    assert _with_start(bounded, 700.0, 0.01) is bounded and _with_start(bounded, None, 0.01) is bounded
    none_found = ForcedSolve("k", None, 460.0, "not solved", 9.0)
    assert _with_start(none_found, 503.0, 0.01) == ForcedSolve("k", 503.0, 460.0, "bounded", 9.0)
    infeasible = ForcedSolve("k", None, None, "infeasible", 1.0)
    assert _with_start(infeasible, 503.0, 0.01) is infeasible


def test_solve_reports_its_progress_bound_below_plan(tmp_path):
    """The progress hook hears the relaxation's bound, then the plan; the best plan never gets dearer, the
    bound never falls, and the last plan heard is the result's cost."""
    from optimizer.pipeline import SolveOptions as Options
    from optimizer.pipeline import solve_plan

    heard = []
    r = solve_plan(_explain_plan(tmp_path), Options(progress=lambda *a: heard.append(a)))
    phases = [p for p, *_ in heard]
    assert phases[0] == "bound" and "plan" in phases
    plans = [inc for p, _t, inc, _b in heard if inc is not None]
    bounds = [b for p, _t, _i, b in heard if b is not None]
    assert plans == sorted(plans, reverse=True) and bounds == sorted(bounds)
    assert plans[-1] == pytest.approx(r.cost_total) and all(b <= plans[-1] + 1e-6 for b in bounds)
    times = [t for _p, t, *_ in heard]
    assert times == sorted(times)


def test_counts_of_gpus_and_replicas_have_thousands_separators(tmp_path):
    """A fleet of millions of GPUs reads as one: 2,976,196, not 2976196 (the console, as the money beside it)."""
    text = (ROOT / "plans" / "seed-fleet.yaml").read_text()
    assert text.count("peak_output_tokens_per_s: 9000") == 1
    plan = tmp_path / "huge.yaml"
    plan.write_text(text.replace("peak_output_tokens_per_s: 9000", "peak_output_tokens_per_s: 1.0e+9"))
    res = invoke("solve", str(plan), "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "huge.json").read_text())
    gpus = result["workloads"][0]["gpus_at_peak"]
    assert gpus > 1_000_000
    text = res.stdout
    assert f"{gpus:,}" in text and str(gpus) not in text.replace(",", ";")
    assert f"{gpus:,} GPUs rest on hourly capacity" in " ".join(text.split())


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGPIPE"), reason="no SIGPIPE on this platform")
def test_a_reader_that_stops_early_ends_planopt_by_sigpipe_not_exit_1(tmp_path):
    """`planopt solve q4 --json | head -1`: the reader goes away after a line; planopt ends by SIGPIPE (the
    shell's 141) with its files written — it had exited 1, which says no plan meets the constraints."""
    import signal

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "optimizer.cli", "solve", str(ROOT / "plans" / "q4.yaml"),
                             "--json", "-o", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"{"  # the JSON is far larger than the pipe holds
    proc.stdout.close()
    assert proc.wait(timeout=600) == -signal.SIGPIPE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q4.html", "q4.json", "q4.xlsx"]


def test_version():
    from optimizer import __version__

    res = invoke("--version")
    assert res.exit_code == 0 and res.output.strip() == f"planopt {__version__}"


def test_explain_without_a_workload_names_the_plans_workloads():
    res = invoke("explain", str(ROOT / "plans" / "q4.yaml"))
    assert res.exit_code == 2
    said = " ".join(res.output.split())
    assert "which workload to explain? — give --workload NAME, one of: chat, code-assistant" in said
