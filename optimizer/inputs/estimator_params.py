"""Load the goodput estimator's efficiencies from catalogs/estimator.yaml."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.resources import catalogs_dir


def load_estimator_params(path: str | Path | None = None) -> EstimatorParams:
    """EstimatorParams from `path` (default: the built-in catalogs/estimator.yaml)."""
    file = Path(path) if path is not None else catalogs_dir() / "estimator.yaml"
    data = YAML(typ="safe").load(file.read_text(encoding="utf-8-sig"))
    if not isinstance(data, dict) or "estimator" not in data:
        raise ValueError(f"{file}: expected a top-level 'estimator:' mapping")
    return EstimatorParams.model_validate(data["estimator"])
