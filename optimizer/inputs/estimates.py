"""The estimator's held-out error, planned for (policy.estimate_error).

A goodput the estimator computed is a number with an error: on benchmark rows of models it was not fitted
on, what the engine really delivered per unit of estimate spread from `estimator.held_out["p10"]` to its
`["p90"]` (catalogs/estimator.yaml, from benchmarks/fit_estimator.py --cv model). A plan built on
estimates may carry that error in one of two ways:

  headroom   every estimated goodput × the P10 ratio: sized so that 9 in 10 held-out models would have
             had enough (one plan, no scenarios; batch work too);
  scenarios  three scenarios of estimated goodput at the P10, P50 and P90 ratio, weighted 0.3, 0.4 and
             0.3 (Swanson's rule for a three-point distribution), crossed with the plan's own scenarios:
             the reservations are decided once, hourly capacity follows each (the two-stage program);
             interactive replicas, batch replica-hours and API overflow follow each scenario's goodput.

Where an estimate's group (generation/dtype/engine/model class) has a band of its own in the catalog's
`estimator.validation` (own or pooled: physics.validation), headroom plans it at that band's low end,
1 ÷ (1 + error_p90), instead of the global P10 (`group_headroom`); scenarios keep the global three points.

Measured goodput (a workload's `goodput:` table or a calibrated load test) is never scaled. Groups no
published result calibrated keep their `uncalibrated_headroom` besides. No solving, no I/O: pipeline
applies it to the stated plan, before months and scenarios are cut into day types.
"""

from __future__ import annotations

from dataclasses import replace

from optimizer.inputs.derived import program_input, with_program_input
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.inputs.schema.plan import Plan, Scenario

SWANSON = (("p10", 0.3), ("p50", 0.4), ("p90", 0.3))
"""The three points of the held-out ratio and their weights (Swanson's rule)."""


def note(loaded: LoadedPlan) -> str | None:
    """The sentence a result carries about it (None when the plan takes estimates as they are)."""
    mode = loaded.plan.policy.estimate_error
    q = loaded.catalog.estimator.held_out
    bands = bool(loaded.catalog.estimator.validation.groups)
    if mode == "headroom":
        if bands:
            return (f"estimated goodput planned at the low end of its group's held-out error band, 1 ÷ (1 + error_p90) "
                    f"of the estimate (each workload's validation names the group and band), or at {q['p10']:.0%} "
                    "where the group has no band: the global P10 of what held-out models delivered per unit of "
                    "estimate (policy.estimate_error: headroom); measured goodput as measured")
        return (f"estimated goodput planned at {q['p10']:.0%} of the estimate: the P10 of what held-out models "
                f"delivered per unit of estimate (policy.estimate_error: headroom); measured goodput as measured")
    if mode == "scenarios":
        return (f"estimated goodput in three scenarios, {q['p10']:.0%} / {q['p50']:.0%} / {q['p90']:.0%} of the "
                f"estimate (held-out P10 / P50 / P90, weights 0.3 / 0.4 / 0.3; policy.estimate_error: scenarios"
                + ("; the global held-out numbers, not the groups' bands" if bands else "")
                + "); measured goodput as measured")
    return None


def expand(loaded: LoadedPlan) -> LoadedPlan:
    """The plan with the estimator's error applied (unchanged with estimate_error none, or when applied)."""
    plan, catalog = loaded.plan, loaded.catalog
    mode = plan.policy.estimate_error
    if mode == "none" or program_input(plan).estimate_note is not None:
        return loaded
    q = catalog.estimator.held_out
    if mode == "headroom":
        est = catalog.estimator.model_copy(update={"goodput_factor": catalog.estimator.goodput_factor * q["p10"]})
        out = with_program_input(plan, estimate_note=note(loaded))
        return replace(loaded, plan=out, catalog=replace(catalog, estimator=est))
    if plan.scenarios:
        crossed = [s.model_copy(update={"name": f"{s.name}-goodput-{level}", "weight": s.weight * weight,
                                        "goodput": s.goodput * q[level]})
                   for s in plan.scenarios for level, weight in SWANSON]
    else:
        crossed = [Scenario(name=f"goodput-{level}", weight=weight, goodput=q[level]) for level, weight in SWANSON]
    out = with_program_input(plan.model_copy(update={"scenarios": crossed}), estimate_note=note(loaded))
    return replace(loaded, plan=out)


def group_headroom(plan: Plan, estimator: EstimatorParams, error_p90: float | None) -> float:
    """What an estimate of a group whose band reaches `error_p90` is multiplied by, beyond the global headroom
    expand() applied: (1 ÷ (1 + error_p90)) ÷ P10 under policy.estimate_error: headroom, so that it is planned at its
    own band's low end; 1 without a band, under any other mode, or before expand()."""
    if plan.policy.estimate_error != "headroom" or error_p90 is None or program_input(plan).estimate_note is None:
        return 1.0
    return (1.0 / (1.0 + error_p90)) / estimator.held_out["p10"]
