"""A workload's `validation` in the result: written, read back byte for byte, read from results that wrote
`calibrated` instead, and the one test the decision block reads (results.evidence)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.inputs.schema.estimator import GroupEvidence, ValidationTable
from optimizer.physics.validation import Validation
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.evidence import reason, rests_on_unvalidated
from optimizer.results.jsonio import dumps, read_result, result_json_schema

from tests.helpers.small_plans import write
from tests.helpers.solving import NO_TIME_LIMIT

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "data" / "results" / "7b36570-seed-fleet.json"


def _estimated(tmp_path: Path) -> dict:
    plan = {"plan": "estimated", "horizon_days": 1,
            "policy": {"occupancy": 1.0, "spares": 0, "rollout_fraction": 0.0, "tiers": ["on-demand"]},
            "workloads": [{"name": "chat", "model": "llama-3.1-8b", "pool": "interactive", "precisions": ["fp8"],
                           "tp": [1], "offers": ["aws-h100-sxm-us-east-1"], "engine": "vllm", "tokens": {"input": 1000, "output": 200},
                           "slo": {"tpot_ms": 50}, "demand": {"peak_output_tokens_per_s": 5000}}]}
    loaded = load_plan(write(tmp_path, plan))
    table = ValidationTable(groups={"hopper/fp8/*/*": GroupEvidence(points=12, error_p10=-0.15, error_p90=0.2)})
    est = loaded.catalog.estimator.model_copy(update={"validation": table})
    loaded = dataclasses.replace(loaded, catalog=dataclasses.replace(loaded.catalog, estimator=est))
    r = solve_plan(loaded, SolveOptions(time_limit_s=NO_TIME_LIMIT, alternatives=0))
    return json.loads(dumps(r, stable=True))


def test_an_estimate_s_validation_is_written_and_reads_back_byte_for_byte(tmp_path):
    d = _estimated(tmp_path)
    row = d["workloads"][0]
    assert "calibrated" not in row
    assert row["validation"] == {"source": "estimated", "group": "hopper/fp8/vllm/dense", "engine": "vllm",
                                 "points": 0, "error_p10": -0.15, "error_p90": 0.2, "validated": False,
                                 "band_from": "hopper/fp8/*/*"}
    jsonschema.validate(d, result_json_schema())
    text = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    r = read_result(path)
    assert r.workloads[0].validation == Validation("estimated", "hopper/fp8/vllm/dense", "vllm", 0, -0.15, 0.2,
                                                   False, "hopper/fp8/*/*")
    assert dumps(r, stable=True) == text
    assert rests_on_unvalidated(r.workloads[0])
    why = reason(r.workloads[0])
    assert "0 published points" in why and "hopper/fp8/vllm/dense" in why and "-15% to +20%" in why


def test_a_result_that_wrote_calibrated_reads_it_as_a_validation(tmp_path):
    d = json.loads(OLD.read_text(encoding="utf-8"))
    assert d["workloads"][0]["calibrated"] is True and d["workloads"][0]["goodput_source"] == "measured"
    measured = read_result(OLD).workloads[0]
    assert measured.validation == Validation("measured", None, None, None, None, None, True, None)
    assert not rests_on_unvalidated(measured)
    # an estimate no published result calibrated, as a result of that format wrote it
    d["workloads"][0].update(goodput_source="estimated", calibrated=False)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    w = read_result(path).workloads[0]
    assert w.validation == Validation("estimated", None, None, None, None, None, False, None)
    assert rests_on_unvalidated(w) and "no published result calibrated" in reason(w)
    written = json.loads(dumps(read_result(path)))["workloads"][0]
    assert "calibrated" not in written and written["validation"]["validated"] is False


def test_a_validation_that_is_not_one_is_refused_by_its_key_path(tmp_path):
    d = _estimated(tmp_path)
    d["workloads"][0]["validation"]["points"] = "many"
    d["workloads"][0]["validation"]["colour"] = "red"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(PlanError) as err:
        read_result(path)
    said = " ".join(str(p) for p in err.value.problems)
    assert "workloads[0].validation.points" in said and "workloads[0].validation.colour" in said


def test_the_api_and_measured_rows_rest_on_nothing_unvalidated():
    assert not rests_on_unvalidated(read_result(OLD).workloads[0])
    row = dataclasses.replace(read_result(OLD).workloads[0], validation=None)
    assert not rests_on_unvalidated(row) and reason(row) == ""
