"""The deployment bundle of one solved result: every file `planopt deploy` writes, by path, and the workloads it
could not emit with the reason. Pure: reading and writing are the caller's."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from optimizer.deploy import engines as eng
from optimizer.deploy import manifests as k8s
from optimizer.results.types import PlanResult, WorkloadResult

NAMESPACES = "00-namespaces.yaml"
INDEX = "launch/deploy.json"
"""The manifests sit at the folder's top (`kubectl apply -f DIR` applies them, namespaces first); the launch
scripts and the index, which are not Kubernetes objects, in launch/ (kubectl does not descend without -R)."""

KV_NAME = {2.0: "bf16", 1.0: "fp8"}
"""KV bytes per element of a precision's usual pairing → the cache dtype it stands for."""


@dataclass
class Skipped:
    workload: str
    reason: str


@dataclass
class Entry:
    """One emitted group, as the index and the README list it."""

    group: k8s.Group
    launch: eng.Launch
    kind: str
    """serving or batch."""
    facts: dict[str, Any]
    """The plan's numbers behind the arguments and the manifests."""


@dataclass
class Bundle:
    files: dict[str, str]
    entries: list[Entry]
    skipped: list[Skipped]
    notes: list[str] = field(default_factory=list)


def build(result: PlanResult, catalog, plan=None, engine: str | None = None) -> Bundle:
    """Every file for the result. `plan`: the loaded plan it was solved from (context lengths, KV precisions,
    batch windows, engines workloads name), None when it cannot be read (those figures are then left to the
    engine's defaults and said so). `engine`: the engine for workloads whose plan entry names none."""
    pw = {w.name: w for w in plan.workloads} if plan is not None else {}
    notes: list[str] = []
    if plan is None:
        notes.append("the plan was not read: context lengths and KV-cache dtypes are the engines' defaults "
                     "and batch work runs as a daily CronJob over the whole day")
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    for w in sorted(result.workloads, key=lambda w: w.name):
        why = _not_served(w)
        if why:
            skipped.append(Skipped(w.name, why))
            continue
        chosen = _engine(w, pw.get(w.name), engine)
        why = _cannot_emit(chosen, w, catalog)
        if why:
            skipped.append(Skipped(w.name, why))
            continue
        entries += _groups(result, w, pw.get(w.name), plan, catalog, chosen)
    files: dict[str, str] = {}
    pools = sorted({e.group.namespace: e.group.pool for e in entries}.items())
    files[NAMESPACES] = _yaml([k8s.namespace(ns, pool) for ns, pool in pools])
    by_workload: dict[str, list[Entry]] = {}
    for e in entries:
        by_workload.setdefault(e.group.workload, []).append(e)
    for wname, es in sorted(by_workload.items()):
        docs: list[dict[str, Any]] = []
        for e in es:
            docs += k8s.batch(e.group) if e.kind == "batch" else k8s.serving(e.group)
        files[f"{k8s.dns_name(wname)}.yaml"] = _yaml(docs)
        files[f"launch/{k8s.dns_name(wname)}.sh"] = _script(es)
    files[INDEX] = json.dumps(_index(result, entries, skipped, notes), indent=2, ensure_ascii=False) + "\n"
    files["README.md"] = _readme(result, entries, skipped, notes)
    return Bundle(dict(sorted(files.items())), entries, skipped, notes)


# --- which workloads, which engine ----------------------------------------------------------------


def _not_served(w: WorkloadResult) -> str | None:
    if w.kind == "reserve":
        return "a block of reserved GPUs (reserve_gpus): no model to serve, nothing to launch"
    if w.offer is None or w.accelerator is None:
        return "served by the API: no GPUs to deploy on"
    if w.model is None:
        return "no model: nothing to launch"
    return None


def _engine(w: WorkloadResult, planned, flag: str | None) -> str:
    named = getattr(planned, "engine", None)
    if named:
        return named
    if flag:
        return flag
    return w.engine or "vllm"


def _cannot_emit(engine: str, w: WorkloadResult, catalog) -> str | None:
    if engine not in eng.EMITTED:
        return (f"engine {engine}: planopt writes launch arguments for {', '.join(eng.EMITTED)} only — "
                "launch it by hand from the config in the result")
    acc = catalog.accelerators.get(w.accelerator)
    if acc is None:
        return f"accelerator {w.accelerator} is not in the catalogs given"
    known = catalog.engines.get(engine) if getattr(catalog, "engines", None) else None
    if known is not None and acc.generation not in known.runs_on:
        return (f"{engine} does not run on {acc.name} ({acc.vendor} {acc.generation}; catalogs/engines.yaml) — "
                f"deploy it with an engine that does (--engine), or name one in the plan")
    if acc.vendor not in k8s.GPU_RESOURCE:
        return f"no Kubernetes device resource known for {acc.vendor} accelerators"
    if engine == "trtllm" and w.family == "disagg":
        return ("trtllm serves a disaggregated pair through `trtllm-serve disaggregated` and a config file, "
                "not launch arguments — deploy it with --engine vllm or sglang")
    return None


# --- groups -----------------------------------------------------------------------------------------


_LAYOUT = re.compile(r"^(?:tp(?P<tp>\d+)|ep(?P<ep1>\d+) \(dp-attention\)|tp(?P<tp2>\d+) × ep(?P<ep2>\d+))"
                     r"(?: × pp(?P<pp>\d+))?$")
_DISAGG = re.compile(r"prefill (?P<p>.+?) × (?P<n>[\d.]+) \+ decode (?P<d>.+)$")


def _degrees(label: str) -> tuple[int, int, int, str]:
    """(tp, pp, ep, family) of a layout label ('tp4', 'tp8 × pp2', 'ep16 (dp-attention)', 'tp2 × ep8')."""
    m = _LAYOUT.match(label.strip())
    if m is None:
        raise ValueError(f"unknown layout {label!r}")
    pp = int(m["pp"] or 1)
    if m["tp"]:
        return int(m["tp"]), pp, 1, "tp" if pp == 1 else "pp"
    if m["ep1"]:
        return 1, pp, int(m["ep1"]), "ep"
    return int(m["tp2"]), pp, int(m["ep2"]), "ep"


def _policy(result: PlanResult, key: str, pool: str, default: float) -> float:
    v = result.policy.get(key, default)
    if isinstance(v, dict):
        v = v.get(pool, v.get("default", default))
    return float(v)


def _hourly_min(w: WorkloadResult) -> int:
    values = [v for row in w.hourly_replicas.values() for v in row]
    return min(values) if values else w.replicas.base


def _groups(result: PlanResult, w: WorkloadResult, planned, plan, catalog, engine: str) -> list[Entry]:
    context = planned.context if planned is not None else None
    occupancy = _policy(result, "occupancy", w.pool, 0.6)
    reserve = _policy(result, "memory_reserve", w.pool, 0.10)
    ns = k8s.dns_name(w.pool)
    info = eng.ENGINE_VERSIONS[engine]
    batch = w.kind == "batch"
    window = tuple(planned.batch.window_hours) if batch and planned is not None and planned.batch else None
    timezone = plan.timezone if plan is not None else "UTC"
    low = _hourly_min(w)

    configs: list[_Config] = []
    if w.split:
        rows = {c.label: c for c in result.candidates if c.workload == w.name}
        for label in sorted(w.split):
            c = rows.get(label)
            if c is None or c.offer is None or c.accelerator is None:
                continue
            tp, pp, ep, fam = _degrees(c.layout) if c.layout and c.family in ("pp", "ep") else (c.tp, 1, 1, "tp")
            own = c.key == w.key
            # the row's own config carries the workload's replica figures; another config its GPUs at the peak
            hi = w.replicas.total if own else max(1, math.ceil(w.split_gpus_at_peak.get(label, 0)
                                                               / max(c.gpus_per_replica, 1e-9)))
            configs.append(_Config("" if own else label, c.key, label, c.offer, c.accelerator, c.precision, tp, pp,
                                   ep, fam, c.mig, hi, low if own else 1, None, c.gpus_per_replica,
                                   w.needed_concurrency if own else min(w.needed_concurrency, c.kv_concurrency)))
    elif w.family == "disagg" and w.layout and _DISAGG.search(w.layout):
        m = _DISAGG.search(w.layout)
        label = _label(w)
        share = float(m["n"])
        for role, part, hi, lo in (("prefill", m["p"], max(1, math.ceil(w.replicas.total * share)),
                                    max(1, math.floor(low * share))),
                                   ("decode", m["d"], w.replicas.total, low)):
            tp, pp, ep, fam = _degrees(part)
            configs.append(_Config(role, w.key, label, w.offer, w.accelerator, w.precision, tp, pp, ep, fam, None,
                                   hi, lo, role, tp * pp * max(1, ep // max(1, tp)), w.needed_concurrency))
    else:
        if w.layout and w.family in ("pp", "ep"):
            tp, pp, ep, fam = _degrees(w.layout)
        else:
            tp, pp, ep, fam = w.tp, w.pp, w.ep, w.family
        configs.append(_Config("", w.key, _label(w), w.offer, w.accelerator, w.precision, tp, pp, ep, fam, w.mig,
                               w.replicas.total, low, None, w.gpus_per_replica, w.needed_concurrency))

    out = []
    for cf in configs:
        suffix, key, label, tp, pp, ep, fam, mig, hi, lo, role, gpr = (
            cf.suffix, cf.key, cf.label, cf.tp, cf.pp, cf.ep, cf.family, cf.mig, cf.hi, cf.lo, cf.role, cf.gpr)
        acc = catalog.accelerators[cf.accelerator]
        prec = catalog.precisions.get(cf.precision) if cf.precision else None
        kv = getattr(planned, "kv_precision", None)
        if kv is None and prec is not None:
            kv = KV_NAME.get(float(prec.kv_bytes_per_elem))
        gpn = int((result.offers.get(cf.offer) or {}).get("gpus_per_node") or 8)
        gpus = max(1, int(round(gpr))) if not mig else 1
        nodes = 1 if mig else max(1, math.ceil(gpus / gpn))
        per_pod = gpus if nodes == 1 else math.ceil(gpus / nodes)
        shape = eng.Shape(model=w.model, precision=cf.precision, kv_dtype=kv, tp=tp, pp=pp, ep=ep, family=fam,
                          max_seqs=max(1, cf.seqs), context=context,
                          memory_fraction=_memory_fraction(engine, w, reserve, _shared_memory(result, w.name)),
                          nodes=nodes, role=role)
        launch = eng.launch(engine, shape)
        lo_note = None
        if not batch and lo < 1:
            lo_note = ("the plan's fewest replicas is 0 (hours with no traffic); an autoscaler keeps at least 1 "
                       "(scaling to zero needs the HPAScaleToZero feature gate or KEDA)")
            lo = 1
        lo = min(lo, hi)
        command, args, wcmd, wargs = launch.command, launch.args, None, None
        if nodes > 1:
            command, args, wcmd, wargs = _multinode(engine, launch, nodes)
        g = k8s.Group(
            name=k8s.dns_name(w.name, suffix), namespace=ns, workload=w.name, pool=w.pool, config_key=key,
            config_label=label, engine=engine, image=info["image"], port=int(info["port"]), command=command,
            args=args, accelerator=cf.accelerator, vendor=acc.vendor, mig=mig, gpus_per_pod=per_pod, nodes=nodes,
            min_replicas=lo, max_replicas=hi, metric=_metric_name(info["running_metric"]),
            target_in_flight=max(1, round(cf.seqs * occupancy)), role=role,
            batch_window=window if batch else None, timezone=timezone, worker_command=wcmd, worker_args=wargs,
            extra_annotations={f"{k8s.LABEL}/accelerator": cf.accelerator, f"{k8s.LABEL}/precision": cf.precision or "",
                               f"{k8s.LABEL}/tp": str(tp), f"{k8s.LABEL}/engine-version": f"{engine} {info['version']}"})
        facts = {
            "tensor_parallel": tp, "pipeline_parallel": pp, "expert_parallel": ep, "family": fam,
            "precision": cf.precision, "kv_cache_dtype": kv, "max_running_sequences": shape.max_seqs,
            "context_tokens": context, "memory_fraction": eng._fraction(shape.memory_fraction),
            "memory_reserve": reserve, "gpus_per_replica": gpr, "pods_per_replica": nodes, "mig": mig,
            "min_replicas": lo, "max_replicas": hi, "replicas": {"base": w.replicas.base,
                                                                "spares": w.replicas.spares,
                                                                "rollout": w.replicas.rollout,
                                                                "total": w.replicas.total},
            "fewest_replicas_in_an_hour": low, "occupancy": occupancy,
            "target_requests_in_flight_per_replica": g.target_in_flight, "accelerator": cf.accelerator,
            "offer": cf.offer, "engine_planned": w.engine,
        }
        if lo_note:
            launch.notes.append(lo_note)
        if batch:
            facts["window_hours"] = list(window) if window else None
        if engine != (w.engine or engine):
            launch.notes.append(f"sized on {w.engine}; deployed on {engine}: measure it (planopt calibrate PLAN "
                                f"--bench RUN.json --deployment {g.name} --manifests DIR) and solve again")
        out.append(Entry(g, launch, "batch" if batch else "serving", facts))
    return out


@dataclass(frozen=True)
class _Config:
    """One group to emit: a config of the workload (or one side of its disaggregated pair) and its numbers."""

    suffix: str
    key: str
    label: str
    offer: str
    accelerator: str
    precision: str | None
    tp: int
    pp: int
    ep: int
    family: str
    mig: str | None
    hi: int
    lo: int
    role: str | None
    gpr: float
    seqs: int


def _label(w: WorkloadResult) -> str:
    from optimizer import vocab

    return vocab.config_label(w.offer, w.precision, w.tp, w.mig, layout=w.layout)


def _shared_memory(result, workload: str) -> float | None:
    """A workload sharing GPUs (policy.share_pools): the share of each GPU's usable memory its process may take."""
    return next((m.memory_share for g in result.shared_gpus for m in g.members if m.workload == workload), None)


def _memory_fraction(engine: str, w: WorkloadResult, reserve: float, shared: float | None = None) -> float:
    if shared is not None:  # its part of a GPU other processes share (MPS, time-slicing): no more than planned
        mine = shared * (w.total_gb - w.reserve_gb)
        if engine == "trtllm":
            left = w.total_gb - w.weights_gb
            return min(0.99, max(0.01, (mine - w.weights_gb) / left)) if left > 0 else 0.01
        return min(0.99, max(0.01, mine / w.total_gb)) if w.total_gb > 0 else 0.01
    if engine == "trtllm":  # a share of what the weights leave, not of the whole GPU
        left = w.total_gb - w.weights_gb
        return min(0.99, max(0.01, w.free_gb / left)) if left > 0 else 1.0 - reserve
    return 1.0 - reserve


def _metric_name(prometheus: str) -> str:
    """The name the custom-metrics API serves a Prometheus gauge under (prometheus-adapter's `as:`, ':' → '_')."""
    return prometheus.replace(":", "_")


def _multinode(engine: str, launch: eng.Launch, nodes: int) -> tuple[list[str], list[str], list[str], list[str]]:
    """Leader and worker commands of a replica spread over `nodes` pods of a LeaderWorkerSet."""
    if engine == "sglang":
        extra = ["--nnodes", str(nodes), "--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000"]
        return (launch.command, launch.args + extra + ["--node-rank", "0"], launch.command,
                launch.args + extra + ["--node-rank", "$(LWS_WORKER_INDEX)"])
    # vLLM and TensorRT-LLM spread a replica over machines with a Ray cluster the leader heads
    serve = eng.shell(launch)
    leader = ["/bin/sh", "-c"]
    leader_args = [f"ray start --head --port=6379 && {serve} --distributed-executor-backend ray"
                   if engine == "vllm" else f"ray start --head --port=6379 && {serve}"]
    worker_args = ["ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
    return leader, leader_args, ["/bin/sh", "-c"], worker_args


# --- files ------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"' if data in ("0", "1") else None)


def _yaml(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                         width=120)


def _script(entries: list[Entry]) -> str:
    lines = ["#!/bin/sh", "# Launch commands planopt deploy wrote from the plan (one per group); the manifests run",
             "# the same commands. Weights are read from /models/<model>.", ""]
    for e in entries:
        g = e.group
        lines.append(f"# {g.name}: {g.config_label}" + (f" ({g.role})" if g.role else "")
                     + f" — {g.engine} {eng.ENGINE_VERSIONS[g.engine]['version']}")
        for n in e.launch.notes:
            lines.append(f"#   note: {n}")
        lines.append(eng.shell(e.launch))
        lines.append("")
    return "\n".join(lines)


def _index(result: PlanResult, entries: list[Entry], skipped: list[Skipped], notes: list[str]) -> dict[str, Any]:
    used = sorted({e.group.engine for e in entries})
    return {
        "plan": result.plan, "result_file": result.file,
        "engines": {e: {k: v for k, v in eng.ENGINE_VERSIONS[e].items()} for e in used},
        "deployments": [{
            "name": e.group.name, "namespace": e.group.namespace, "workload": e.group.workload,
            "config": e.group.config_key, "config_label": e.group.config_label, "role": e.group.role,
            "kind": e.kind, "engine": e.group.engine, "command": e.launch.command + e.launch.args,
            "from_plan": e.facts, "notes": e.launch.notes,
            "manifest": f"{k8s.dns_name(e.group.workload)}.yaml"} for e in entries],
        "not_emitted": [{"workload": s.workload, "reason": s.reason} for s in skipped],
        "notes": notes,
    }


def _readme(result: PlanResult, entries: list[Entry], skipped: list[Skipped], notes: list[str]) -> str:
    used = sorted({e.group.engine for e in entries})
    out = [f"# Deployment of {result.plan}", "",
           f"Written by `planopt deploy` from the solved result of `{result.file}`"
           + _stamp() + ". Every number below comes from the solved plan; nothing here was measured.", "",
           "## Files", "",
           "| file | what it is |", "|---|---|",
           "| `00-namespaces.yaml` | one Namespace per pool of the plan (first, as `kubectl apply -f DIR` applies files in name order) |"]
    for wname in sorted({e.group.workload for e in entries}):
        kinds = sorted({k["kind"] for e in entries if e.group.workload == wname
                        for k in (k8s.batch(e.group) if e.kind == "batch" else k8s.serving(e.group))})
        out.append(f"| `{k8s.dns_name(wname)}.yaml` | workload {wname}: {', '.join(kinds)} |")
        out.append(f"| `launch/{k8s.dns_name(wname)}.sh` | workload {wname}: the engine's launch command |")
    out += ["| `launch/deploy.json` | the same, machine-readable: each group's command and the plan figures behind "
            "it, and the workloads not emitted |",
            "", "## Engines", ""]
    for e in used:
        v = eng.ENGINE_VERSIONS[e]
        out.append(f"- **{e} {v['version']}** (image `{v['image']}`): flags as documented at {v['flags']}.")
    out += ["", "## What came from the plan", "",
            "| group | config | engine | TP | PP | EP | precision | KV cache | max sequences | context | memory "
            "fraction | replicas min–max (total) | target in flight |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        f = e.facts
        out.append(f"| {e.group.name}{' (' + e.group.role + ')' if e.group.role else ''}"
                   f"{' (batch)' if e.kind == 'batch' else ''} | {e.group.config_label} | {e.group.engine} | "
                   f"{f['tensor_parallel']} | {f['pipeline_parallel']} | {f['expert_parallel']} | {f['precision']} | "
                   f"{f['kv_cache_dtype'] or 'default'} | {f['max_running_sequences']} | "
                   f"{f['context_tokens'] or 'default'} | {f['memory_fraction']} | {f['min_replicas']}–"
                   f"{f['max_replicas']} ({f['replicas']['total']}) | "
                   f"{f['target_requests_in_flight_per_replica'] if e.kind == 'serving' else '–'} |")
    out += ["", "- **TP / PP / EP**: the chosen config's tensor, pipeline and expert parallelism.",
            "- **max sequences**: the concurrency each replica was sized to hold at the SLO (the result's "
            "`needed_concurrency`): vLLM `--max-num-seqs`, SGLang `--max-running-requests`, TensorRT-LLM "
            "`--max_batch_size`.",
            "- **context**: the workload's `context_tokens` (else input + output tokens).",
            "- **memory fraction**: 1 − `policy.memory_reserve` (vLLM `--gpu-memory-utilization`, SGLang "
            "`--mem-fraction-static`).",
            "- **replicas**: the autoscaler's `minReplicas` is the fewest replicas the plan runs in any hour "
            "(over every day type, month and scenario; at least 1), `maxReplicas` the replica total with spares "
            "and rollout. The Deployment starts at `minReplicas`.",
            "- **target in flight**: the autoscaler's metric is the engine's gauge of requests running per pod "
            "(vLLM `vllm:num_requests_running`, SGLang `sglang:num_running_reqs`), served to the custom-metrics "
            "API by prometheus-adapter with `:` written as `_`; the target is the sized concurrency × "
            "`policy.occupancy`, the load a replica carries at the planned occupancy. (KEDA on the gateway's "
            "queue works as well: the same target per replica.)",
            "- **batch**: work with a window runs as a CronJob starting all its replicas at the window's first hour "
            "(`activeDeadlineSeconds` ends them at its last), in the plan's time zone; the batch driver sends "
            "requests to its Service. No autoscaler.", "",
            "## Before applying", "",
            "- Label GPU nodes `planopt.io/accelerator=<accelerator id>` (the node selectors); GPU nodes are "
            "expected to carry the vendor's NoSchedule taint (tolerated).",
            "- Create a PersistentVolumeClaim `models` in each namespace holding the weights under "
            "`/models/<model id>`.",
            "- MIG slices are requested as `nvidia.com/mig-<profile>` (the GPU operator's mixed strategy).",
            *([f"- Workloads sharing GPUs ({', '.join(m.workload for g in result.shared_gpus for m in g.members)}) "
               "request `nvidia.com/gpu: 1` of a GPU the device plugin shares (its MPS or time-slicing config, as "
               "many replicas per GPU as a group has workloads); each process's memory fraction is its planned "
               "share of the GPU."] if result.shared_gpus else []),
            "- A replica larger than one machine is a LeaderWorkerSet (install the LeaderWorkerSet controller).",
            "- Labels `planopt.io/workload` and `planopt.io/config` name each group's workload and config: "
            "`planopt calibrate PLAN --bench RUN.json --deployment NAME --manifests DIR` attributes a load test "
            "against that group without `--map`.", ""]
    if skipped:
        out += ["## Not emitted", ""]
        out += [f"- **{s.workload}**: {s.reason}" for s in skipped]
        out.append("")
    notes_all = notes + [f"{e.group.name}: {n}" for e in entries for n in e.launch.notes]
    if notes_all:
        out += ["## Notes", ""] + [f"- {n}" for n in notes_all] + [""]
    return "\n".join(out)


def _stamp() -> str:
    """A date only when SOURCE_DATE_EPOCH asks for one (reproducible builds): the bundle is the same bytes for the
    same result otherwise."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        return ""
    return f" on {dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"


def write(bundle: Bundle, outdir) -> list:
    """Write every file of the bundle under outdir, each atomically (a file is whole or absent)."""
    from pathlib import Path

    from optimizer.atomic import write_text_atomic

    outdir = Path(outdir)
    written = []
    for rel, text in bundle.files.items():
        path = outdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
        written.append(path)
    return written
