"""Kubernetes objects for one deployable group (a config of a workload, or one side of a disaggregated pair):
a Deployment (a LeaderWorkerSet where a replica spans machines), a Service, a HorizontalPodAutoscaler, or a
CronJob for batch work. Plain dicts in the API's field order; build.py writes them as YAML."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

LABEL = "planopt.io"
"""Prefix of the labels and annotations planopt writes (calibrate reads them back)."""

LWS_API = "leaderworkerset.x-k8s.io/v1"

GPU_RESOURCE = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "Google": "google.com/tpu",
                "Intel": "habana.ai/gaudi", "AWS": "aws.amazon.com/neuron"}
"""The extended resource each vendor's device plugin advertises (NVIDIA MIG slices: nvidia.com/mig-<profile>)."""


@dataclass
class Group:
    """One thing to run: its name, what the plan chose for it, and its launch."""

    name: str
    namespace: str
    workload: str
    pool: str
    config_key: str
    config_label: str
    engine: str
    image: str
    port: int
    command: list[str]
    args: list[str]
    accelerator: str
    vendor: str
    mig: str | None
    gpus_per_pod: int
    nodes: int
    """Pods per replica: more than 1 when a replica spans machines (a LeaderWorkerSet)."""
    min_replicas: int
    max_replicas: int
    metric: str
    target_in_flight: int
    role: str | None = None
    batch_window: tuple[int, int] | None = None
    timezone: str = "UTC"
    worker_command: list[str] | None = None
    worker_args: list[str] | None = None
    extra_annotations: dict[str, str] = field(default_factory=dict)

    def labels(self) -> dict[str, str]:
        out = {"app.kubernetes.io/name": self.name, "app.kubernetes.io/managed-by": "planopt",
               f"{LABEL}/workload": label_value(self.workload), f"{LABEL}/config": label_value(self.config_key),
               f"{LABEL}/pool": label_value(self.pool), f"{LABEL}/accelerator": label_value(self.accelerator),
               f"{LABEL}/engine": self.engine}
        if self.role:
            out[f"{LABEL}/role"] = self.role
        return out

    def annotations(self) -> dict[str, str]:
        return {f"{LABEL}/workload": self.workload, f"{LABEL}/config-key": self.config_key,
                f"{LABEL}/config": self.config_label, **self.extra_annotations}


def dns_name(*parts: str) -> str:
    """A DNS-1035 label (what a Service name must be): lower-case letters, digits and '-', a letter first, at most
    63 characters (a longer name keeps its start and ends in a hash of the whole, so names stay distinct)."""
    raw = "-".join(p for p in parts if p)
    s = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    s = re.sub(r"-{2,}", "-", s) or "w"
    if not s[0].isalpha():
        s = "w-" + s
    if len(s) > 63:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        s = s[:54].rstrip("-") + "-" + digest
    return s


def label_value(v: str) -> str:
    """A label value: letters, digits, '-', '_', '.', alphanumeric at both ends, at most 63 characters ('/' and
    spaces of a config key become '.'; the exact key is in the annotations)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", ".", v).strip("._-")
    if len(s) > 63:
        s = s[:54].rstrip("._-") + "." + hashlib.sha256(v.encode()).hexdigest()[:8]
    return s


def namespace(name: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "planopt",
                                                   f"{LABEL}/pool": label_value(pool)}}}


def _resources(g: Group) -> dict[str, Any]:
    if g.mig:
        res = {f"nvidia.com/mig-{g.mig}": 1}
    else:
        res = {GPU_RESOURCE[g.vendor]: g.gpus_per_pod}
    return {"limits": dict(res), "requests": dict(res)}


def _tolerations(g: Group) -> list[dict[str, Any]]:
    key = GPU_RESOURCE[g.vendor]
    return [{"key": key, "operator": "Exists", "effect": "NoSchedule"}]


def _container(g: Group, command: list[str], args: list[str], *, serving: bool = True) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "engine", "image": g.image, "command": list(command), "args": list(args)}
    if serving:
        c["ports"] = [{"name": "http", "containerPort": g.port, "protocol": "TCP"}]
        c["readinessProbe"] = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10,
                               "failureThreshold": 3}
        c["startupProbe"] = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10,
                             "failureThreshold": 180}
    c["resources"] = _resources(g)
    c["volumeMounts"] = [{"name": "models", "mountPath": "/models", "readOnly": True},
                         {"name": "dshm", "mountPath": "/dev/shm"}]
    return c


def _pod_spec(g: Group, command: list[str], args: list[str], *, serving: bool = True,
              restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": {f"{LABEL}/accelerator": g.accelerator},
        "tolerations": _tolerations(g),
        "containers": [_container(g, command, args, serving=serving)],
        "volumes": [{"name": "models", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def _meta(g: Group, name: str | None = None) -> dict[str, Any]:
    return {"name": name or g.name, "namespace": g.namespace, "labels": g.labels(), "annotations": g.annotations()}


def _template(g: Group, command: list[str], args: list[str], **kw: Any) -> dict[str, Any]:
    return {"metadata": {"labels": g.labels(), "annotations": g.annotations()},
            "spec": _pod_spec(g, command, args, **kw)}


def serving(g: Group) -> list[dict[str, Any]]:
    """Deployment (or LeaderWorkerSet), Service and HorizontalPodAutoscaler of an online group."""
    selector = {"app.kubernetes.io/name": g.name}
    if g.nodes > 1:
        workload = {
            "apiVersion": LWS_API, "kind": "LeaderWorkerSet", "metadata": _meta(g),
            "spec": {"replicas": g.min_replicas, "leaderWorkerTemplate": {
                "size": g.nodes,
                "leaderTemplate": _template(g, g.command, g.args),
                "workerTemplate": _template(g, g.worker_command or g.command, g.worker_args or g.args,
                                            serving=False)}},
        }
        target = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": g.name}
        # only the leader serves HTTP: the Service selects leaders
        svc_selector = {**selector, "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    else:
        workload = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(g),
            "spec": {"replicas": g.min_replicas, "selector": {"matchLabels": dict(selector)},
                     "template": _template(g, g.command, g.args)},
        }
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": g.name}
        svc_selector = dict(selector)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(g),
               "spec": {"selector": svc_selector,
                        "ports": [{"name": "http", "port": g.port, "targetPort": "http", "protocol": "TCP"}]}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": _meta(g),
           "spec": {"scaleTargetRef": target, "minReplicas": g.min_replicas, "maxReplicas": g.max_replicas,
                    "metrics": [{"type": "Pods", "pods": {
                        "metric": {"name": g.metric},
                        "target": {"type": "AverageValue", "averageValue": str(g.target_in_flight)}}}]}}
    return [workload, service, hpa]


def batch(g: Group) -> list[dict[str, Any]]:
    """A CronJob that starts the group's replicas at the window's first hour and stops them at its end, and the
    Service the batch driver sends its requests to (no autoscaler: the plan sized the window's replicas)."""
    start, end = g.batch_window or (0, 0)
    hours = (end - start) % 24 or 24
    job = {"parallelism": g.max_replicas, "completions": g.max_replicas, "completionMode": "Indexed",
           "activeDeadlineSeconds": hours * 3600, "backoffLimit": g.max_replicas * 2,
           "template": _template(g, g.command, g.args, restart="OnFailure")}
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(g),
            "spec": {"schedule": f"0 {start} * * *", "timeZone": g.timezone, "concurrencyPolicy": "Replace",
                     "jobTemplate": {"metadata": {"labels": g.labels()}, "spec": job}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(g),
               "spec": {"selector": {"app.kubernetes.io/name": g.name},
                        "ports": [{"name": "http", "port": g.port, "targetPort": "http", "protocol": "TCP"}]}}
    return [cron, service]
