"""The serving engine as a dimension of a config: only accelerators, precisions and parallelism an allowed
engine runs are candidates (and the reason is said); among the allowed engines the estimate keeps the one with
the most goodput (ties: the first in policy order); measured points keep their own engine."""

from __future__ import annotations

import json
from pathlib import Path


from optimizer.candidates import engines
from optimizer.candidates.build import build_candidates
from optimizer.inputs.catalog import builtin_catalog
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.pipeline import solve_plan
from optimizer.results.jsonio import dumps, read_result

CATALOG = builtin_catalog()


def _plan(tmp_path: Path, policy: dict | None = None, name: str = "plan.yaml", **workload) -> Path:
    w = {"name": "chat", "model": "llama-3.3-70b", "precisions": ["fp8"], "tokens": {"input": 1000, "output": 200},
         "slo": {"tpot_ms": 50}, "demand": {"peak_output_tokens_per_s": 2000}, "parallelism": ["tp"], **workload}
    path = tmp_path / name
    path.write_text(json.dumps({"plan": "t", "horizon_days": 1, "policy": {"time_limit_s": 600, **(policy or {})},
                                    "workloads": [w]}))
    return path


def _built(path: Path, loaded: LoadedPlan | None = None):
    loaded = loaded or load_plan(path)
    return build_candidates(loaded, keep_dominated=frozenset({"chat"}), strict=False)


def test_trtllm_only_drops_every_amd_offer_and_says_why(tmp_path):
    cs = _built(_plan(tmp_path, {"engines": ["trtllm"]}, accelerators=["mi300x", "mi355x", "h100-sxm"]))
    accs = {c.accelerator for c in cs.by_workload["chat"]}
    assert accs == {"h100-sxm"}
    assert {c.engine for c in cs.by_workload["chat"]} == {"trtllm"}
    why = {d.option: d.reason for d in cs.dropped if d.family == "engine"}
    assert why["mi300x · fp8"] == "no allowed engine runs cdna3: policy.engines is [trtllm]"
    assert why["mi355x · fp8"] == "no allowed engine runs cdna4: policy.engines is [trtllm]"


def test_no_allowed_engine_at_all_is_a_plan_error_naming_the_engines(tmp_path):
    from optimizer.errors import PlanError

    path = _plan(tmp_path, {"engines": ["trtllm"]}, accelerators=["mi300x"])
    try:
        build_candidates(load_plan(path))
    except PlanError as exc:
        text = str(exc)
    else:
        raise AssertionError("a workload no allowed engine serves has no candidate")
    assert "engine: mi300x · fp8: no allowed engine runs cdna3: policy.engines is [trtllm]" in text
    assert "allow an engine that runs it" in text


def test_an_accelerator_no_engine_runs_is_not_a_candidate(tmp_path):
    """Trainium runs only the Neuron stack: a team on vLLM and SGLang gets no trn2."""
    path = _plan(tmp_path, {"engines": ["vllm", "sglang"]}, precisions=["bf16"], accelerators=["trn2", "h100-sxm"])
    cs = _built(path)
    assert {c.accelerator for c in cs.by_workload["chat"]} == {"h100-sxm"}
    (d,) = [d for d in cs.dropped if d.family == "engine"]
    assert (d.option, d.reason) == ("trn2 · bf16", "no allowed engine runs trainium: policy.engines is [vllm, sglang]")
    # the workload's own engine narrows the same way
    cs = _built(_plan(tmp_path, precisions=["bf16"], accelerators=["trn2"], engine="neuron"))
    assert cs.by_workload["chat"] and {c.engine for c in cs.by_workload["chat"]} == {"neuron"}


def test_a_precision_or_family_the_engine_lacks_is_dropped_with_the_engines_words(tmp_path):
    cs = _built(_plan(tmp_path, engine="atom", accelerators=["mi355x"], precisions=["fp8", "int8"],
                      parallelism=["tp", "disagg"], slo={"tpot_ms": 50, "ttft_ms": 2000}))
    assert {(c.precision, c.family) for c in cs.by_workload["chat"]} <= {("fp8", "tp")}
    why = {d.option: d.reason for d in cs.dropped if d.family == "engine"}
    assert why["mi355x · int8"] == "no allowed engine serves int8 with tp on cdna4 (atom serves no int8 on cdna4)"
    assert why["mi355x · fp8 · disagg"] == "no allowed engine serves fp8 with disagg on cdna4 (atom has no disagg on cdna4)"


def test_engines_without_a_tuning_share_one_estimate():
    cache: dict = {}
    params = CATALOG.estimator
    untuned = params.model_copy(update={"engines": {}})
    groups = engines.tuned(cache, untuned, ["vllm", "sglang", "trtllm"], "hopper")
    assert [(e, t) for e, _p, t in groups] == [("vllm", None)] and groups[0][1] is untuned
    tuned = untuned.model_copy(update={"engines": {"sglang": {"hopper": {"step_overhead_ms": 0.5}}}})
    groups = engines.tuned({}, tuned, ["vllm", "sglang", "trtllm"], "hopper")
    assert [(e, t) for e, _p, t in groups] == [("vllm", None), ("sglang", "sglang/hopper")]
    assert groups[1][1].step_overhead_ms == 0.5


def _with_tuning(path: Path, tuning: dict) -> LoadedPlan:
    loaded = load_plan(path)
    loaded.catalog.estimator = loaded.catalog.estimator.model_copy(update={"engines": tuning})
    return loaded


def test_the_engine_with_the_most_goodput_is_kept_and_a_tie_goes_to_the_first(tmp_path):
    path = _plan(tmp_path, accelerators=["h100-sxm"])
    untuned = {c.key: c for c in _built(path, _with_tuning(path, {})).by_workload["chat"]}
    assert {c.engine for c in untuned.values()} == {"vllm"}  # every engine ties: the first in catalog order
    order = _plan(tmp_path, {"engines": ["sglang", "vllm"]}, name="order.yaml", accelerators=["h100-sxm"])
    assert {c.engine for c in _built(order, _with_tuning(order, {})).by_workload["chat"]} == {"sglang"}
    # SGLang with a smaller per-step cost on Hopper: more goodput, so it is kept, with its own numbers
    fast = {"sglang": {"hopper": {"step_overhead_ms": 0.2, "allreduce_latency_us": 10.0}}}
    tuned = {c.key: c for c in _built(path, _with_tuning(path, fast)).by_workload["chat"]}
    assert tuned.keys() == untuned.keys()
    for key, c in tuned.items():
        assert c.engine == "sglang" and c.goodput > untuned[key].goodput, key
    # a slower engine is never kept over a faster one
    slow = {"sglang": {"hopper": {"step_overhead_ms": 5.0}}}
    assert {c.engine for c in _built(path, _with_tuning(path, slow)).by_workload["chat"]} == {"vllm"}


def test_a_measured_point_is_used_whatever_its_engine_and_carries_it(tmp_path):
    point = {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2, "goodput_output_tokens_per_s": 900}
    path = _plan(tmp_path, accelerators=["h100-sxm"], offers=["nebius-h100-sxm"], tp=[2],
                 measured=[{**point, "engine": "sglang"}, {**point, "goodput_output_tokens_per_s": 800, "engine": "vllm"}])
    (c,) = _built(path).by_workload["chat"]
    assert (c.goodput_source, c.goodput, c.engine) == ("measured", 900, "sglang")
    # a point that names no engine is measured on no engine in particular
    path = _plan(tmp_path, name="none.yaml", accelerators=["h100-sxm"], offers=["nebius-h100-sxm"], tp=[2],
                 measured=[point])
    (c,) = _built(path).by_workload["chat"]
    assert (c.goodput_source, c.engine) == ("measured", None)


def test_the_result_names_the_engine_and_reads_back(tmp_path):
    from optimizer.report.labels import choice_label, config_label

    r = solve_plan(_plan(tmp_path, {"engines": ["trtllm"]}, accelerators=["h100-sxm"]))
    w = r.workload("chat")
    assert w.engine == "trtllm"
    assert choice_label(w).endswith(" · trtllm") and config_label(w).endswith(" · trtllm")
    data = json.loads(dumps(r))
    assert data["workloads"][0]["engine"] == "trtllm"
    (tmp_path / "r.json").write_text(json.dumps(data))
    assert read_result(tmp_path / "r.json").workload("chat").engine == "trtllm"
    # a result written before engines were planned reads, with no engine
    del data["workloads"][0]["engine"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert read_result(tmp_path / "old.json").workload("chat").engine is None
