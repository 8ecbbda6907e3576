"""calibrate reads the deployment back: a load test against a deployment `planopt deploy` wrote is attributed to
its workload and config by the manifests' labels, without --map or --accelerator/--precision/--tp."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from optimizer.calibrate.loadtests import Flags
from optimizer.calibrate.run import CalibrateOptions, calibrate
from optimizer.cli import app
from tests.helpers.paths import DATA, Q4

runner = CliRunner()
BENCH = DATA / "loadtests" / "profile_export_aiperf.json"  # an AIPerf run of llama-3.1-70b, no metadata


def _deployed(tmp_path):
    out = tmp_path / "deploy"
    res = runner.invoke(app, ["deploy", str(DATA / "deploy" / "q4.json"), "--plan", str(Q4), "--engine", "vllm",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_a_run_against_a_deployment_is_attributed_to_its_workload_and_config(tmp_path):
    out = _deployed(tmp_path)
    cal = calibrate(Q4, CalibrateOptions(bench=(BENCH,), flags=Flags(deployment="chat"), manifests=out),
                    tmp_path / "cal.yaml")
    (v,) = cal.verdicts
    assert (v.workload, v.accelerator, v.precision, v.tp, v.engine) == ("chat", "h200-sxm", "fp8", 1, "vllm")


def test_the_run_can_name_the_deployment_itself(tmp_path):
    out = _deployed(tmp_path)
    run = json.loads(BENCH.read_text())
    run["metadata"] = {"deployment": "code-assistant"}
    bench = tmp_path / "run.json"
    bench.write_text(json.dumps(run))
    res = runner.invoke(app, ["calibrate", str(Q4), "--bench", str(bench), "--manifests", str(out),
                              "-o", str(tmp_path / "cal.yaml")])
    # the run served llama-3.1-70b, code-assistant serves qwen3-32b: attributed, then refused as another model's
    assert res.exit_code == 2
    assert "code-assistant serves qwen3-32b" in " ".join(res.output.split())


def test_an_unknown_deployment_or_no_manifests_is_an_input_error(tmp_path):
    out = _deployed(tmp_path)
    res = runner.invoke(app, ["calibrate", str(Q4), "--bench", str(BENCH), "--deployment", "chatt",
                              "--manifests", str(out), "-o", str(tmp_path / "cal.yaml")])
    assert res.exit_code == 2 and "did you mean 'chat'" in res.output
    res = runner.invoke(app, ["calibrate", str(Q4), "--bench", str(BENCH), "--deployment", "chat",
                              "-o", str(tmp_path / "cal.yaml")])
    assert res.exit_code == 2 and "--manifests DIR" in " ".join(res.output.split())
    assert not (tmp_path / "cal.yaml").exists()
