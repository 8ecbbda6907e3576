"""calibrate --bench reads the serving engine a load test names (--metadata engine=…, or --engine) and carries it
onto the measured point it writes; an engine the catalog does not know is an input error."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.loading import load_plan
from tests.helpers.paths import DATA

PLAN = DATA / "calibrate" / "plan.yaml"
RUN = DATA / "loadtests" / "vllm-chat-h100-fp8-tp2-c48.json"


def _run(tmp_path, **extra) -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**json.loads(RUN.read_text(encoding="utf-8")), **extra}), encoding="utf-8")
    return str(path)


def test_the_runs_engine_is_carried_onto_the_measured_point(tmp_path):
    out = tmp_path / "o.yaml"
    r = CliRunner().invoke(app, ["calibrate", str(PLAN), "--bench", _run(tmp_path, engine="SGLang"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    (m,) = load_plan(out).plan.workloads[0].measured
    assert (m.accelerator, m.precision, m.tp, m.engine, m.goodput_output_tokens_per_s) == (
        "h100-sxm", "fp8", 2, "sglang", 1534)


def test_the_engine_flag_names_it_for_files_that_do_not(tmp_path):
    out = tmp_path / "o.yaml"
    r = CliRunner().invoke(app, ["calibrate", str(PLAN), "--bench", str(RUN), "--engine", "trtllm", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert [m.engine for m in load_plan(out).plan.workloads[0].measured] == ["trtllm"]
    # without either, the point names no engine (vllm bench serve's `backend` is the client protocol, not the server)
    r = CliRunner().invoke(app, ["calibrate", str(PLAN), "--bench", str(RUN), "-o", str(tmp_path / "n.yaml")])
    assert r.exit_code == 0, r.output
    assert [m.engine for m in load_plan(tmp_path / "n.yaml").plan.workloads[0].measured] == [None]


def test_an_unknown_engine_is_an_input_error(tmp_path):
    r = CliRunner().invoke(app, ["calibrate", str(PLAN), "--bench", _run(tmp_path, engine="mlc-llm"),
                                 "-o", str(tmp_path / "o.yaml")])
    assert r.exit_code == 2
    assert "unknown engine 'mlc-llm'" in r.output and "vllm, sglang, trtllm" in r.output
    assert not (tmp_path / "o.yaml").exists()


def test_the_runs_achieved_latencies_are_written_beside_its_goodput(tmp_path):
    """The memory check of a measured point counts the sequences in flight at the TPOT the run achieved (Little's
    law), so calibrate writes it; the run's percentile is the plan's (p99 here)."""
    out = tmp_path / "o.yaml"
    r = CliRunner().invoke(app, ["calibrate", str(PLAN), "--bench", str(RUN), "-o", str(out)])
    assert r.exit_code == 0, r.output
    run = json.loads(RUN.read_text(encoding="utf-8"))
    (m,) = load_plan(out).plan.workloads[0].measured
    assert m.tpot_ms == pytest.approx(run["p99_tpot_ms"], rel=1e-3)
    assert m.ttft_ms == pytest.approx(run["p99_ttft_ms"], rel=1e-3)
