"""Faults: what planopt does when the plan cannot be met, the solver runs out of time, HiGHS is
missing, or the process is killed while writing — through the real CLI.

Exit codes (docs/design.md, "Contracts"): 1 no plan meets the constraints, with a sentence naming the workload, the
hour and the limit; 2 a workload with no candidate at all, listing why each option family was
dropped; 3 the time limit passed without a feasible plan. A time-limited solve that has a plan
returns it with status `feasible` and its proven gap.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import InfeasiblePlan, PlanError
from optimizer.pipeline import SolveOptions, solve_plan

from tests.helpers.paths import DATA, ROOT
from tests.helpers.small_plans import batch, interactive, offer, plan, write
from tests.helpers.solving import NO_TIME_LIMIT

SEED = ROOT / "plans" / "seed-fleet.yaml"
runner = CliRunner()


def _generator():
    from optimizer.synth.plans import generate

    return generate


def refused(path: Path, tmp_path: Path, code: int) -> str:
    """Run `planopt solve`; check the exit code, no traceback and no output; return the output."""
    before = path.read_bytes()
    res = runner.invoke(app, ["solve", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()
    assert path.read_bytes() == before
    return res.output


# --- exit 1: caps ------------------------------------------------------------------------------------


def test_caps_that_cannot_cover_the_peak(tmp_path):
    """Two workloads on one capped offer: 3 + 4 GPUs at 14:00, 6 on-demand GPUs to be had."""
    peak = [0.5] * 24
    peak[14] = 1.0
    data = plan([interactive("chat", 300, peak), interactive("search", 400, peak)],
                [offer("tight-offer", caps={"on-demand": 6}, on_demand=1.0)], tiers=["on-demand"])
    path = write(tmp_path, data)
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(path)
    [reason] = exc.value.reasons
    assert "chat (3 GPUs) and search (4 GPUs) need 7 on-demand gpu-a GPUs at 14:00" in reason, reason
    assert "tight-offer (prov-tight-offer) can supply 6" in reason and "short at 14:00–15:00" in reason
    out = refused(path, tmp_path, 1)
    assert "no plan meets the constraints" in out and "14:00" in out and "can supply 6" in out


def test_a_reserved_cap_that_cannot_cover_a_flat_load(tmp_path):
    data = plan([interactive("chat", 300)], [offer("o", caps={"reserved-1y": 2}, reserved_1y=0.6)],
                tiers=["reserved-1y"])
    path = write(tmp_path, data)
    out = refused(path, tmp_path, 1)
    assert "chat needs 3 reserved-1y gpu-a GPUs for the horizon; o (prov-o) can supply 2" in out, out


def test_a_batch_volume_that_cannot_fit_its_window(tmp_path):
    """16 replica-hours in the 8 hours [22, 6) with 1 GPU to be had: 8 short. The sentence names
    the job, the offer and the cap, and what the window can hold."""
    data = plan([batch("nightly", 100 * 3600 * 16, [22, 6])], [offer("o", caps={"on-demand": 1}, on_demand=1.0)],
                tiers=["on-demand"])
    path = write(tmp_path, data)
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(path)
    [reason] = exc.value.reasons
    assert reason.startswith("nightly needs 16 GPU-hours a day") and "o (prov-o) caps on-demand at 1" in reason, reason
    assert "at most 8 GPU-hours in the window" in reason, reason
    refused(path, tmp_path, 1)


def test_a_batch_shortfall_is_told_in_gpu_hours_over_its_window(tmp_path):
    data = plan([batch("nightly", 100 * 3600 * 16, [22, 6])], [offer("o", caps={"on-demand": 1}, on_demand=1.0)],
                tiers=["on-demand"])
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(write(tmp_path, data))
    reason = exc.value.reasons[0]
    assert "22:00–06:00" in reason and "16" in reason and "GPU-hours" in reason, reason


def test_a_shortage_at_every_hour_says_all_day(tmp_path):
    data = plan([interactive("chat", 500)], [offer("o", caps={"on-demand": 4}, on_demand=1.0)], tiers=["on-demand"])
    with pytest.raises(InfeasiblePlan) as exc:
        solve_plan(write(tmp_path, data))
    reason = exc.value.reasons[0]
    assert "00:00–00:00" not in reason and "all day" in reason, reason


# --- exit 2: nothing to choose from ------------------------------------------------------------------


NOWHERE = """\
plan: a model that fits nowhere
horizon_days: 30
catalogs: [builtin]
policy: {tiers: [on-demand]}
workloads:
  - name: giant
    model: llama-3.1-405b
    precisions: [bf16, fp8]
    tp: [1, 2, 16]
    parallelism: [tp]
    accelerators: [h100-sxm, a100-80gb]
    tokens: {input: 2000, output: 400}
    slo: {ttft_ms: 1000, tpot_ms: 50}
    demand: {peak_output_tokens_per_s: 9000}
"""


def test_a_model_that_fits_nowhere_lists_every_family(tmp_path):
    """405 B does not fit one or two H100s, fp8 is not native on Ampere, TP 16 is beyond NVLink
    (and the plan allows no pipeline stages): each family is named with an example and its reason."""
    path = tmp_path / "nowhere.yaml"
    path.write_text(NOWHERE, encoding="utf-8")
    with pytest.raises(PlanError) as exc:
        solve_plan(path)
    [p] = exc.value.problems
    assert (p.file, p.line) == (str(path), 6)
    assert "workload 'giant' has no candidate config" in p.message
    for family, why in [("fit:", "does not fit: weights"), ("native:", "fp8 is not native on ampere"),
                        ("scale-up:", "TP 16 is beyond the scale-up domain of")]:
        assert family in p.message and why in p.message, (family, p.message)
    out = refused(path, tmp_path, 2)
    assert f"{path}:6:" in out


# --- time limits ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hard_plan(tmp_path_factory) -> Path:
    """20 generated workloads over the built-in catalog, 8-GPU nodes, mip_gap 0: not proven in a second."""
    path = tmp_path_factory.mktemp("hard") / "hard.yaml"
    path.write_text(_generator()(20, seed=1, mip_gap=0.0, time_limit_s=1.5), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def stopped_plan(tmp_path_factory) -> Path:
    """8 generated workloads, mip_gap 0 and no time limit: HiGHS stopped at its first plan leaves a gap."""
    path = tmp_path_factory.mktemp("stopped") / "stopped.yaml"
    path.write_text(_generator()(8, seed=1, mip_gap=0.0, time_limit_s=NO_TIME_LIMIT), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_solve_stopped_before_its_proof_returns_the_best_plan_with_its_gap(stopped_plan, tmp_path, monkeypatch):
    """Branch and bound stopped before its proof (by the time limit, on a real plan) still writes its best plan,
    status feasible, with the gap to the bound. HiGHS stopped at its first plan (solver.solve's `first_plan`)
    stands in for the clock: an incumbent and a bound, as at a time limit, but the same on every machine and
    under any load, so the claim is checked on every run."""
    from optimizer.optimize import solver as solver_mod

    real = solver_mod._solve_highs

    def first_plan_only(prob, time_limit_s, mip_gap, msg, relax=False, warm=None, node_limit=None, progress=None,
                        first_plan=False, *rest, **kw):
        return real(prob, time_limit_s, mip_gap, msg, relax, warm, node_limit, progress, first_plan or not relax,
                    *rest, **kw)

    monkeypatch.setattr(solver_mod, "_solve_highs", first_plan_only)
    args = ["solve", str(stopped_plan), "--solver", "highs", "--alternatives", "0"]
    res = runner.invoke(app, [*args, "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    assert result["status"] == "feasible", result["solver"]
    gap = result["solver"]["gap"]
    assert gap is not None and 0 < gap < 1
    assert result["cost"]["total"] > 0 and len(result["workloads"]) == 8
    assert (tmp_path / "out" / "stopped.json").exists()
    console = runner.invoke(app, [*args, "-o", str(tmp_path / "out2")])
    assert console.exit_code == 0, console.output
    assert "status feasible" in console.output and "gap" in console.output, console.output


@pytest.mark.slow
def test_a_time_limit_below_any_solve_still_returns_a_plan(hard_plan, tmp_path):
    """The time limit is a safety cap that never leaves a solve without the plan its first steps find (this had
    exited 3): 1 ms gives a plan, exit 0, whose commitments are provisional exactly when it is unproven."""
    res = runner.invoke(app, ["solve", str(hard_plan), "--time-limit", "0.001", "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["status"] in ("optimal", "feasible") and len(d["workloads"]) == 20
    unproven = d["solver"]["gap"] is None or d["solver"]["gap"] > d["policy"]["mip_gap"] + 1e-9
    assert all(n["provisional"] is unproven for n in d["new_commitments"])
    result = solve_plan(hard_plan, SolveOptions(time_limit_s=0.001, alternatives=0))
    assert result.status in ("optimal", "feasible")


# --- HiGHS missing: CBC, with a note ----------------------------------------------------------------------


def test_missing_highs_falls_back_to_cbc_with_a_warning(tmp_path, monkeypatch):
    import optimizer.optimize.solver as solve_mod

    if not solve_mod._cbc_cmd().available():
        pytest.skip("CBC is not installed")
    monkeypatch.setattr(solve_mod, "_highs_available", lambda: False)
    result = solve_plan(SEED)
    assert result.cost_per_day == pytest.approx(1800.0)
    note = "HiGHS is not available (pip install highspy); solved with CBC instead"
    assert note in result.notes
    res = runner.invoke(app, ["solve", str(SEED), "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    result_json = json.loads(res.stdout)  # stdout is the JSON object alone
    assert result_json["solver"]["name"] == "cbc"
    assert f"warning: {note}" in res.output and "warning:" not in res.stdout  # the warning is on stderr


# --- atomic writes: SIGKILL while writing leaves the previous files intact -------------------------------


def _seed_variant(peak: int) -> str:
    text = SEED.read_text(encoding="utf-8")
    assert "peak_output_tokens_per_s: 9000" in text
    return text.replace("peak_output_tokens_per_s: 9000", f"peak_output_tokens_per_s: {peak}")


def _complete_new(name: str, data: bytes, plan_name: str, peak_gpus: int) -> bool:
    """A finished file of the second solve (its bytes vary with solver.seconds, so check its content)."""
    import io

    if name.endswith(".json"):
        return json.loads(data)["workloads"][0]["gpus_at_peak"] == peak_gpus
    if name.endswith(".html"):
        return data.rstrip().endswith(b"</html>") and plan_name.encode() in data
    wb = openpyxl.load_workbook(io.BytesIO(data))
    return len(wb.sheetnames) > 1


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killing_solve_while_it_writes_leaves_the_previous_files_intact(tmp_path):
    plan_path = tmp_path / "fleet.yaml"
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "optimizer.cli", "solve", str(plan_path), "-o", str(out)]

    plan_path.write_text(_seed_variant(9000), encoding="utf-8")
    first = runner.invoke(app, ["solve", str(plan_path), "-o", str(out)])  # the files a kill must leave intact
    assert first.exit_code == 0, first.output
    previous = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(previous) == ["fleet.html", "fleet.json", "fleet.xlsx"]

    plan_path.write_text(_seed_variant(12000), encoding="utf-8")  # 40 GPUs at the peak instead of 30
    rng = random.Random(6)
    mid_write = 0
    for attempt in range(5):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.endswith(".tmp") for p in out.iterdir()):  # it has started writing
                break
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.03))  # the seed's files take ~50 ms to write
        writing = any(p.name.endswith(".tmp") for p in out.iterdir())
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            mid_write += writing
        proc.wait(timeout=120)
        for name, old in previous.items():
            now = (out / name).read_bytes()
            assert now == old or _complete_new(name, now, "seed", 40), f"{name} is neither the old file nor a whole new one"
        for p in out.glob(".*.tmp"):  # what a SIGKILL leaves behind is a hidden temporary, never a target
            p.unlink()
        for name in previous:  # put the old files back for the next attempt
            (out / name).write_bytes(previous[name])
    assert mid_write >= 2, f"only {mid_write} of 5 kills landed while files were being written"


# --- outputs that cannot be written: refused before the work, nothing written ----------------------

CAL_PLAN = DATA / "calibrate" / "plan.yaml"
BENCH = DATA / "loadtests"


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def test_a_result_file_whose_place_is_a_folder_is_refused_before_the_solve(tmp_path, monkeypatch):
    """OUTDIR/<plan>.xlsx is a folder: exit 2 naming it, no solve, and neither the JSON nor the HTML is
    written (the three files come as a set)."""
    out = tmp_path / "out"
    (out / "seed-fleet.xlsx").mkdir(parents=True)
    import optimizer.pipeline as pipeline

    monkeypatch.setattr(pipeline, "solve_plan", lambda *a, **k: pytest.fail("solved before checking the outputs"))
    r = runner.invoke(app, ["solve", str(SEED), "-o", str(out), "-q"])
    assert r.exit_code == 2, r.output
    said = " ".join(r.stderr.split())
    assert f"{out / 'seed-fleet.xlsx'}: is a folder, not a file" in said and "choose a writable --outdir" in said
    assert _files(out) == [] and "Traceback" not in r.output


def test_report_writes_none_of_its_files_when_one_place_is_a_folder(tmp_path):
    res = runner.invoke(app, ["solve", str(SEED), "-o", str(tmp_path / "a"), "-q"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "b"
    (out / "seed-fleet.html").mkdir(parents=True)
    r = runner.invoke(app, ["report", str(tmp_path / "a" / "seed-fleet.json"), "-o", str(out)])
    assert r.exit_code == 2 and "seed-fleet.html: is a folder, not a file" in " ".join(r.stderr.split())
    assert _files(out) == []


def test_calibrate_refuses_a_page_whose_place_is_a_folder_and_says_a_failed_write(tmp_path, monkeypatch):
    """OUT.html (written beside OUT.yaml) is a folder: exit 2 before reading anything. A write that fails
    anyway (permissions: here mkstemp refused) is exit 2 naming OUT.yaml, not a traceback."""
    bench = next(BENCH.glob("vllm*.json"))
    (tmp_path / "p.html").mkdir()
    r = runner.invoke(app, ["calibrate", str(CAL_PLAN), "--bench", str(bench), "-o", str(tmp_path / "p.yaml")])
    assert r.exit_code == 2 and "p.html: is a folder, not a file" in " ".join(r.stderr.split()), r.output
    assert not (tmp_path / "p.yaml").exists()

    import optimizer.atomic as atomic

    def refused(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".q.yaml.x.tmp"))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refused)
    r = runner.invoke(app, ["calibrate", str(CAL_PLAN), "--bench", str(bench), "-o", str(tmp_path / "q.yaml")])
    assert r.exit_code == 2, r.output
    assert f"{tmp_path / 'q.yaml'}: cannot write: Permission denied" in " ".join(r.stderr.split())
    assert "Traceback" not in r.output and not (tmp_path / "q.yaml").exists()
