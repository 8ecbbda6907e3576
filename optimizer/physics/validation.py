"""How far to trust an estimate: the published evidence behind its group and the estimator's held-out error there.

A goodput the roofline estimates is only as good as the published results its group was judged on. A group is
the accelerator generation, the datatype the matrix multiplies run in, the serving engine and the model's class
(`group_key`); catalogs/estimator.yaml `validation` holds, per group, how many published points back it and the
p10–p90 band of estimated ÷ published − 1 over their held-out predictions (benchmarks/fit_estimator.py). A group
with fewer than `min_points` points is unvalidated; its band is borrowed from the nearest pooled group that has
enough (the engine dropped, then the class: a row of the table, or the envelope of the groups it pools), or there
is none. A measured goodput is its own evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from optimizer.inputs.schema.catalog import Accelerator, Model, Precision
from optimizer.inputs.schema.estimator import EstimatorParams, ValidationTable
from optimizer.physics.roofline import group_dtype

ModelClass = Literal["dense", "moe", "mla", "hybrid"]
MODEL_CLASSES: tuple[ModelClass, ...] = ("dense", "moe", "mla", "hybrid")
GENERIC = "generic"
"""The engine part of a group when no engine is named (today's calibration: never validated on its own)."""
ANY = "*"
"""The engine or class part of a pooled group."""


@dataclass(frozen=True)
class Validation:
    """The evidence behind one config's goodput (the result's `validation` of a workload)."""

    source: str
    """estimated (the roofline) or measured (a load test or a `measured` point of the plan)."""
    group: str | None
    """generation/dtype/engine/class the estimate belongs to, e.g. hopper/fp8/sglang/mla (None in results
    written before it was kept)."""
    engine: str | None
    """The serving engine the goodput is for (None: no engine named; the group says generic)."""
    points: int | None
    """Published points behind the group (None in results written before it was counted)."""
    error_p10: float | None
    """10th percentile of estimated ÷ published − 1 over held-out predictions (None: no band)."""
    error_p90: float | None
    """90th percentile of the same errors (None: no band)."""
    validated: bool
    """True for a measured goodput, or an estimate whose group has at least the table's min_points."""
    band_from: str | None = None
    """The group the band is from: the estimate's own, a pooled one (engine or class '*'), or None (no band)."""


def model_class(model: Model) -> ModelClass:
    """dense, moe, mla (multi-head latent attention, e.g. DeepSeek) or hybrid (linear or sliding-window
    attention layers beside full ones), in that order of precedence: MLA first, then hybrid attention."""
    if model.attention == "mla":
        return "mla"
    if model.linear_attention_layers or (model.sliding_window_layers and model.sliding_window):
        return "hybrid"
    if model.experts is not None and model.experts > 1:
        return "moe"
    return "dense"


def group_key(generation: str, dtype: str, engine: str | None, cls: str) -> str:
    return f"{generation}/{dtype}/{engine or GENERIC}/{cls}"


def wider_groups(group: str) -> list[str]:
    """The pooled groups a group borrows a band from, nearest first: the engine dropped, then the class."""
    generation, dtype, _engine, _cls = group.split("/")
    return [f"{generation}/{dtype}/{ANY}/{_cls}", f"{generation}/{dtype}/{ANY}/{ANY}"]


def validation_of(params: EstimatorParams, accelerator: Accelerator, precision: Precision, model: Model,
                  engine: str | None, *, measured: bool = False) -> Validation:
    """The evidence behind a config's goodput: its group's published points and error band (`measured`: a
    measured goodput, validated whatever the table says)."""
    group = group_key(accelerator.generation, group_dtype(precision, accelerator), engine, model_class(model))
    table = params.validation
    own = table.groups.get(group)
    points = own.points if own is not None else 0
    band, band_from = None, None
    for key in [group, *wider_groups(group)]:
        g = pooled(table, key)
        if g is not None and g[0] >= table.min_points:
            band, band_from = g, key
            break
    return Validation(
        source="measured" if measured else "estimated", group=group, engine=engine, points=points,
        error_p10=band[1] if band else None, error_p90=band[2] if band else None,
        validated=measured or points >= table.min_points, band_from=band_from)


def pooled(table: ValidationTable, key: str) -> tuple[int, float, float] | None:
    """(points, error_p10, error_p90) of a group: its own row where the table has one; for a pooled key ('*' for
    the engine or the class) without a row of its own, the groups it pools together — their points added, and
    the band that holds every one of theirs (the lowest p10, the highest p90: wider than the pooled errors'
    own percentiles, never narrower). None when nothing matches."""
    g = table.groups.get(key)
    if g is not None:
        return g.points, g.error_p10, g.error_p90
    if ANY not in key:
        return None
    want = key.split("/")
    rows = [r for k, r in table.groups.items()
            if ANY not in k and all(w in (ANY, part) for w, part in zip(want, k.split("/")))]
    if not rows:
        return None
    return sum(r.points for r in rows), min(r.error_p10 for r in rows), max(r.error_p90 for r in rows)


def goodput_ratio(v: Validation, level: Literal["low", "high"]) -> float | None:
    """Delivered ÷ estimated goodput at one end of the band (None without one): `low` where the estimator
    over-estimated most (1 ÷ (1 + error_p90)), `high` where it under-estimated most (1 ÷ (1 + error_p10))."""
    err = v.error_p90 if level == "low" else v.error_p10
    return None if err is None else 1.0 / (1.0 + err)
