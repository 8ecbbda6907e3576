"""planopt deploy: engine launch arguments and Kubernetes manifests from a solved result (q4, checked in)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.deploy.build import build
from optimizer.inputs.loading import load_plan
from optimizer.results.jsonio import read_result
from tests.helpers.paths import DATA, Q4

RESULT = DATA / "deploy" / "q4.json"
GOLDEN = DATA / "deploy" / "golden"
K8S_VERSION = "1.31"
TP_FLAG = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size", "trtllm": "--tp_size"}

runner = CliRunner()


@pytest.fixture(scope="module")
def result():
    return read_result(RESULT)


@pytest.fixture(scope="module")
def loaded():
    return load_plan(Q4)


def _deploy(tmp_path: Path, engine: str) -> Path:
    out = tmp_path / engine
    res = runner.invoke(app, ["deploy", str(RESULT), "--plan", str(Q4), "--engine", engine, "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _docs(folder: Path) -> list[dict]:
    return [d for f in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())
            if d is not None]


def _containers(doc: dict) -> list[dict]:
    spec = doc["spec"]
    if doc["kind"] == "Deployment":
        return spec["template"]["spec"]["containers"]
    if doc["kind"] == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    if doc["kind"] == "LeaderWorkerSet":
        return spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    return []


def _gpu_workloads(result):
    return [w for w in result.workloads if w.offer is not None and w.kind != "reserve"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_manifests_validate_against_kubernetes_1_31(tmp_path, engine):
    docs = _docs(_deploy(tmp_path, engine))
    assert docs
    for d in docs:
        try:
            kubernetes_validate.validate(d, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            assert d["kind"] == "LeaderWorkerSet", d["kind"]  # a custom resource: no built-in schema


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_gpu_workload_carries_its_tensor_parallel_size(tmp_path, engine, result):
    docs = _docs(_deploy(tmp_path, engine))
    for w in _gpu_workloads(result):
        runs = [d for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet", "CronJob")
                and d["metadata"]["annotations"]["planopt.io/workload"] == w.name]
        assert runs, w.name
        for d in runs:
            args = _containers(d)[0]["args"]
            i = args.index(TP_FLAG[engine])
            assert args[i + 1] == str(w.tp), (w.name, args)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_online_gpu_workload_scales_up_to_its_replica_total(tmp_path, engine, result):
    """The autoscaler's ceiling is the replica total (spares and rollout included), its floor the fewest replicas
    of any hour; batch work is a CronJob running the total in its window, with no autoscaler."""
    docs = _docs(_deploy(tmp_path, engine))
    hpas = {d["metadata"]["annotations"]["planopt.io/workload"]: d for d in docs
            if d["kind"] == "HorizontalPodAutoscaler"}
    crons = {d["metadata"]["annotations"]["planopt.io/workload"]: d for d in docs if d["kind"] == "CronJob"}
    for w in _gpu_workloads(result):
        if w.kind == "batch":
            assert w.name not in hpas
            assert crons[w.name]["spec"]["jobTemplate"]["spec"]["parallelism"] == w.replicas.total
            continue
        spec = hpas[w.name]["spec"]
        assert spec["maxReplicas"] == w.replicas.total, w.name
        fewest = min(v for row in w.hourly_replicas.values() for v in row)
        assert spec["minReplicas"] == max(1, fewest), w.name
        assert spec["metrics"][0]["type"] == "Pods"


def test_window_and_resources_follow_the_plan(tmp_path, result):
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _docs(_deploy(tmp_path, "vllm"))}
    nightly = docs[("CronJob", "nightly-summaries")]["spec"]
    assert nightly["schedule"] == "0 22 * * *" and nightly["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 8 * 3600
    guard = _containers(docs[("Deployment", "guardrail")])[0]["resources"]["limits"]
    assert guard == {"nvidia.com/mig-3g.40gb": 1}
    code = docs[("Deployment", "code-assistant")]
    assert _containers(code)[0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    pod = code["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"planopt.io/accelerator": "h100-sxm"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert code["metadata"]["namespace"] == "interactive"
    args = _containers(code)[0]["args"]
    for flag, value in (("--max-model-len", "16384"), ("--gpu-memory-utilization", "0.9"),
                        ("--quantization", "fp8"), ("--kv-cache-dtype", "fp8"),
                        ("--max-num-seqs", str(result.workload("code-assistant").needed_concurrency))):
        assert args[args.index(flag) + 1] == value, flag


def test_workloads_that_cannot_be_deployed_are_listed(tmp_path):
    out = _deploy(tmp_path, "vllm")
    index = json.loads((out / "launch" / "deploy.json").read_text())
    assert index["not_emitted"] == [{"workload": "research", "reason": index["not_emitted"][0]["reason"]}]
    assert "research" in (out / "README.md").read_text()
    assert index["engines"]["vllm"]["version"]


def test_trtllm_on_amd_is_listed_not_emitted(result, loaded):
    chat = result.workload("chat")
    amd = dataclasses.replace(chat, accelerator="mi300x")
    bundle = build(dataclasses.replace(result, workloads=[amd]), loaded.catalog, loaded.plan, "trtllm")
    assert not bundle.entries
    assert bundle.skipped[0].workload == "chat" and "trtllm does not run on" in bundle.skipped[0].reason
    vllm = build(dataclasses.replace(result, workloads=[amd]), loaded.catalog, loaded.plan, "vllm")
    (e,) = vllm.entries
    assert e.group.vendor == "AMD"
    assert "amd.com/gpu" in vllm.files["chat.yaml"]


def test_a_replica_across_machines_is_a_leader_worker_set(result, loaded):
    chat = dataclasses.replace(result.workload("chat"), tp=8, pp=2, family="pp", layout="tp8 × pp2",
                               gpus_per_replica=16.0)
    for engine in ("vllm", "sglang"):
        bundle = build(dataclasses.replace(result, workloads=[chat]), loaded.catalog, loaded.plan, engine)
        docs = list(yaml.safe_load_all(bundle.files["chat.yaml"]))
        lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
        assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
        hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
        assert hpa["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
        assert hpa["spec"]["maxReplicas"] == chat.replicas.total
        text = " ".join(_containers(lws)[0]["args"])
        assert ("--pipeline-parallel-size 2" in text) if engine == "vllm" else ("--pp-size 2" in text)
        for d in docs:
            if d["kind"] != "LeaderWorkerSet":
                kubernetes_validate.validate(d, K8S_VERSION, strict=True)


def test_a_disaggregated_pair_is_two_deployments(result, loaded):
    chat = dataclasses.replace(result.workload("chat"), tp=4, family="disagg", gpus_per_replica=5.0,
                               layout="disagg: prefill tp2 × 0.5 + decode tp4")
    for engine, flag in (("vllm", "--kv-transfer-config"), ("sglang", "--disaggregation-mode")):
        bundle = build(dataclasses.replace(result, workloads=[chat]), loaded.catalog, loaded.plan, engine)
        roles = {e.group.role: e for e in bundle.entries}
        assert set(roles) == {"prefill", "decode"}
        assert roles["decode"].group.max_replicas == chat.replicas.total
        assert roles["prefill"].group.max_replicas == -(-chat.replicas.total // 2)
        assert all(flag in e.launch.args for e in bundle.entries)
        assert roles["prefill"].group.gpus_per_pod == 2 and roles["decode"].group.gpus_per_pod == 4


def test_a_split_workload_gets_a_deployment_and_autoscaler_per_config(result, loaded):
    chat = result.workload("chat")
    other = next(c for c in result.candidates if c.workload == "chat" and c.label == "aws-h100-sxm-us-east-1 · fp8 · tp2")
    own = next(c for c in result.candidates if c.workload == "chat" and c.key == chat.key)
    split = dataclasses.replace(chat, split={own.label: [0.9, 0.2], other.label: [0.1, 0.8]},
                                split_gpus_at_peak={own.label: 20, other.label: 6},
                                split_goodput={own.label: [900.0, 800.0], other.label: [1500.0, 1400.0]})
    bundle = build(dataclasses.replace(result, workloads=[split]), loaded.catalog, loaded.plan, "vllm")
    docs = list(yaml.safe_load_all(bundle.files["chat.yaml"]))
    hpas = {d["metadata"]["annotations"]["planopt.io/config-key"]: d["spec"] for d in docs
            if d["kind"] == "HorizontalPodAutoscaler"}
    assert hpas[chat.key]["maxReplicas"] == chat.replicas.total
    assert hpas[other.key]["maxReplicas"] == 3  # 6 GPUs at the peak, 2 a replica
    deps = {d["metadata"]["annotations"]["planopt.io/config-key"]: d for d in docs if d["kind"] == "Deployment"}
    assert len({d["metadata"]["name"] for d in deps.values()}) == 2
    theirs = deps[other.key]
    assert theirs["spec"]["template"]["spec"]["nodeSelector"] == {"planopt.io/accelerator": "h100-sxm"}
    args = _containers(theirs)[0]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "2"
    for d in docs:
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)


def test_output_is_deterministic(result, loaded, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a = build(result, loaded.catalog, loaded.plan, "sglang").files
    b = build(result, loaded.catalog, loaded.plan, "sglang").files
    assert a == b and list(a) == sorted(a)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    assert "2027-01-15" in build(result, loaded.catalog, loaded.plan, "sglang").files["README.md"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_bundle_matches_its_golden_files(tmp_path, engine, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    out = _deploy(tmp_path, engine)
    written = {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}
    golden = GOLDEN / engine
    if os.environ.get("PLANOPT_UPDATE_GOLDEN"):
        for rel, text in written.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_text(text)
    kept = {p.relative_to(golden).as_posix(): p.read_text() for p in sorted(golden.rglob("*")) if p.is_file()}
    assert set(written) == set(kept)
    for rel in kept:
        assert written[rel] == kept[rel], rel


def test_deploying_again_into_the_same_folder_rewrites_it(tmp_path):
    first = _deploy(tmp_path, "vllm")
    before = {p: p.read_text() for p in first.rglob("*") if p.is_file()}
    assert {p: p.read_text() for p in _deploy(tmp_path, "vllm").rglob("*") if p.is_file()} == before


def test_an_outdir_that_is_a_file_is_refused(tmp_path):
    blocked = tmp_path / "out"
    blocked.write_text("x")
    res = runner.invoke(app, ["deploy", str(RESULT), "--plan", str(Q4), "-o", str(blocked)])
    assert res.exit_code == 2 and "--outdir" in res.output and blocked.read_text() == "x"


def test_bad_result_exits_2_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(app, ["deploy", str(bad), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "not JSON" in res.output
    assert not (tmp_path / "out").exists()
