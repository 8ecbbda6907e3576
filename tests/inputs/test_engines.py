"""The serving engines catalog (catalogs/engines.yaml) and the plan keys that name engines: workload `engine`,
`policy.engines`, and a measured point's `engine`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.errors import PlanError
from optimizer.inputs.catalog import builtin_catalog, load_catalog
from optimizer.inputs.loading import load_plan
from optimizer.inputs.schema.catalog import Generation

CATALOG = builtin_catalog()
ENGINES = ("vllm", "sglang", "trtllm", "atom", "neuron", "generic")


def test_the_engines_catalog_loads_in_order_and_every_fact_has_a_source():
    assert tuple(CATALOG.engines) == ENGINES
    for e in CATALOG.engines.values():
        assert e.source and e.as_of, e.id
        for gen, on in e.runs_on.items():
            assert on.source, f"{e.id} on {gen} has no source"
            for p in on.precisions or []:
                assert CATALOG.precision_id(p) in CATALOG.precisions, (e.id, gen, p)


def test_engine_generations_are_the_accelerators_generations():
    known = set(Generation.__args__)  # type: ignore[attr-defined]
    used = {a.generation for a in CATALOG.accelerators.values()}
    for e in CATALOG.engines.values():
        assert set(e.runs_on) <= known
    # every accelerator the catalog sells is run by some engine: none is dropped by the default policy
    for gen in used:
        assert any(gen in e.runs_on for e in CATALOG.engines.values()), gen


def test_what_runs_where():
    e = CATALOG.engines
    assert not {"cdna3", "cdna4"} & set(e["trtllm"].runs_on)  # no TensorRT-LLM on AMD
    assert set(e["atom"].runs_on) == {"cdna3", "cdna4"}
    assert [x for x in ENGINES if "trainium" in e[x].runs_on] == ["neuron"]  # Trainium only with Neuron
    assert "tpu" in e["vllm"].runs_on and "gaudi3" in e["vllm"].runs_on  # vLLM TPU, vLLM-Gaudi
    assert e["generic"].generic and {"tpu", "gaudi3", "rubin", "other"} <= set(e["generic"].runs_on)
    assert e["trtllm"].why_not("blackwell", "fp4", "tp") is None  # NVFP4 on Blackwell
    assert e["vllm"].why_not("blackwell", "fp4", "tp") is None and e["sglang"].why_not("blackwell", "fp4", "ep") is None
    assert e["vllm"].why_not("cdna4", "mxfp4", "tp") is None  # MXFP4 on CDNA4
    assert e["trtllm"].why_not("ampere", "fp8", "tp") == "trtllm serves no fp8 on ampere"  # no FP8 on Ampere
    assert e["vllm"].why_not("ampere", "fp8", "tp") is not None
    assert e["atom"].why_not("cdna4", "fp8", "disagg") == "atom has no disagg on cdna4"
    assert e["trtllm"].why_not("cdna3", "fp8", "tp") == "trtllm does not run cdna3"
    assert CATALOG.engine_id("TensorRT-LLM") == "trtllm" and CATALOG.engine_id("nxdi") == "neuron"
    assert CATALOG.engine_id("no-such-engine") is None


def test_a_user_catalog_adds_and_overrides_engines(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(json.dumps({"engines": [
        {"id": "vllm", "source": "our own build", "runs_on": {"hopper": {"precisions": ["fp8"], "source": "ours"}}},
        {"id": "ours", "source": "in-house", "parallelism": ["tp"], "runs_on": {"other": {"source": "ours"}}}]}))
    cat = load_catalog([f])
    assert list(cat.engines) == [*ENGINES, "ours"]
    assert set(cat.engines["vllm"].runs_on) == {"hopper"} and cat.engines["vllm"].source == "our own build"


def test_a_catalog_engine_with_an_unknown_precision_or_family_is_refused(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("engines:\n  - id: ours\n    parallelism: [tp]\n    runs_on:\n"
                 "      hopper: {precisions: [fp9], parallelism: [pp]}\n")
    with pytest.raises(PlanError) as exc:
        load_catalog([f])
    text = str(exc.value)
    assert "bad.yaml:2" in text and "lists pp, which the engine's parallelism (tp) does not" in text
    f.write_text("engines:\n  - id: ours\n    runs_on:\n      hopper: {precisions: [fp9]}\n")
    with pytest.raises(PlanError) as exc:
        load_catalog([f])
    assert "engine 'ours' names unknown precision 'fp9' on hopper" in str(exc.value)


def _plan(tmp_path: Path, policy: dict | None = None, **workload) -> Path:
    w = {"name": "chat", "model": "llama-3.3-70b", "precisions": ["fp8"], "tokens": {"input": 1000, "output": 200},
         "demand": {"peak_output_tokens_per_s": 1000}, **workload}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps({"plan": "t", "horizon_days": 1, "policy": policy or {}, "workloads": [w]}))
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(PlanError) as exc:
        load_plan(path)
    return [str(p) for p in exc.value.problems]


def test_plan_engines_are_checked_with_their_key_paths(tmp_path):
    path = _plan(tmp_path, {"engines": ["trtllm", "vlm", "trtllm"]}, engine="sglang", measured=[
        {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2, "goodput_output_tokens_per_s": 900,
         "engine": "TensorRT-LLM"},
        {"accelerator": "h100-sxm", "precision": "fp8", "tp": 4, "goodput_output_tokens_per_s": 900,
         "engine": "vllm"}])
    got = _problems(path)
    assert any("policy.engines[1]" in p and "unknown engine 'vlm'" in p and "did you mean 'vllm'" in p
               and "known engines: vllm, sglang, trtllm, atom, neuron, generic" in p for p in got), got
    assert any("policy.engines[2]" in p and "twice" in p for p in got)
    assert any("workloads[0].engine" in p and "runs on sglang" in p and "policy.engines ([trtllm, vlm, trtllm])" in p
               for p in got), got
    assert any("workloads[0].measured[0].engine" in p and "write 'trtllm'" in p for p in got), got
    assert any("workloads[0].measured[1].engine" in p and "the workload runs on sglang" in p for p in got), got
    assert all(f"{path}:" in p or "plan.yaml:" in p for p in got)


def test_a_measured_engine_the_policy_does_not_allow_is_refused(tmp_path):
    path = _plan(tmp_path, {"engines": ["sglang"]}, measured=[
        {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2, "goodput_output_tokens_per_s": 900, "engine": "vllm"}])
    (p,) = _problems(path)
    assert "measured[0].engine" in p and "measured on vllm, which policy.engines ([sglang]) does not allow" in p


def test_an_unknown_workload_engine_lists_the_known_ones(tmp_path):
    (p,) = _problems(_plan(tmp_path, engine="mlc"))
    assert "workloads[0].engine: unknown engine 'mlc'" in p and "known engines: vllm, sglang" in p


def test_points_on_two_engines_may_measure_one_config(tmp_path):
    point = {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2, "goodput_output_tokens_per_s": 900}
    loaded = load_plan(_plan(tmp_path, measured=[{**point, "engine": "vllm"}, {**point, "engine": "sglang"}]))
    assert [m.engine for m in loaded.plan.workloads[0].measured] == ["vllm", "sglang"]
    (p,) = _problems(_plan(tmp_path, measured=[{**point, "engine": "vllm"}, {**point, "engine": "vllm"}]))
    assert "measures the same config" in p and "vllm" in p
