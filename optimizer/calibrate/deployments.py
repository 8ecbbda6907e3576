"""What `planopt deploy` deployed, read back from its manifests: each Deployment's (LeaderWorkerSet's, CronJob's)
workload and config, so a load test run against it (`calibrate --deployment NAME`) is attributed without --map."""

from __future__ import annotations

from pathlib import Path

from optimizer.errors import PlanError, Problem

LABEL = "planopt.io"
"""The prefix of the labels and annotations `planopt deploy` writes (optimizer/deploy/manifests.py)."""

KINDS = ("Deployment", "LeaderWorkerSet", "CronJob")


def read_deployments(folder: Path | str) -> dict[str, dict[str, str]]:
    """Deployment name → {workload, config, accelerator, precision, tp, engine} from the YAML files under
    `folder` (the directory `planopt deploy -o` wrote); PlanError when there are none."""
    import yaml

    folder = Path(folder)
    shown = str(folder)
    if not folder.is_dir():
        raise PlanError(Problem("not a folder" if folder.exists() else "folder not found",
                                "give the folder `planopt deploy -o DIR` wrote", file=shown))
    files = sorted(folder.glob("manifests/*.yaml")) or sorted(folder.glob("*.yaml"))
    out: dict[str, dict[str, str]] = {}
    problems = []
    for f in files:
        try:
            docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            mark = getattr(exc, "problem_mark", None)
            problems.append(Problem(f"not YAML: {getattr(exc, 'problem', None) or exc}",
                                    "give the manifests as `planopt deploy` wrote them", file=str(f),
                                    line=mark.line + 1 if mark is not None else None))
            continue
        for d in docs:
            if not isinstance(d, dict) or d.get("kind") not in KINDS:
                continue
            meta = d.get("metadata") or {}
            notes = meta.get("annotations") or {}
            labels = meta.get("labels") or {}
            name = meta.get("name")
            workload = notes.get(f"{LABEL}/workload") or labels.get(f"{LABEL}/workload")
            if not name or not workload:
                continue
            out[str(name)] = {
                "workload": str(workload), "config": str(notes.get(f"{LABEL}/config-key", "")),
                "accelerator": str(notes.get(f"{LABEL}/accelerator") or labels.get(f"{LABEL}/accelerator") or ""),
                "precision": str(notes.get(f"{LABEL}/precision", "")), "tp": str(notes.get(f"{LABEL}/tp", "")),
                "engine": str(labels.get(f"{LABEL}/engine", "")), "file": str(f)}
    if problems:
        raise PlanError(problems)
    if not out:
        raise PlanError(Problem("no deployment labelled by planopt in it (planopt.io/workload)",
                                "give the folder `planopt deploy -o DIR` wrote", file=shown))
    return out
