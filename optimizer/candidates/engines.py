"""Which serving engines may run a config: the workload's engine, else policy.engines, else every engine the
catalog knows — narrowed to those that run the accelerator's generation, the precision and the parallelism
family (catalogs/engines.yaml)."""

from __future__ import annotations

from optimizer.inputs.catalog import Catalog
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.inputs.schema.plan import Plan, Workload


def allowed(plan: Plan, catalog: Catalog, w: Workload) -> list[str]:
    """The engines a workload may run on, in order of preference (ties in goodput go to the first)."""
    if w.engine is not None:
        return [w.engine]
    if plan.policy.engines is not None:
        return list(plan.policy.engines)
    return list(catalog.engines)


def _whose(plan: Plan, w: Workload, names: list[str]) -> str:
    if w.engine is not None:
        return f"the workload's engine is {w.engine}"
    if plan.policy.engines is not None:
        return f"policy.engines is [{', '.join(names)}]"
    return f"the engines catalog has [{', '.join(names)}]"


def runnable(plan: Plan, catalog: Catalog, w: Workload, generation: str, precision: str,
             family: str) -> tuple[list[str], str | None]:
    """(the allowed engines that run `precision` with `family` on `generation`, why none does). A catalog with
    no engines puts no limit: ([None], None) — one config, engine unnamed."""
    names = allowed(plan, catalog, w)
    if not catalog.engines:
        return [None], None  # type: ignore[list-item]
    known = [catalog.engines[n] for n in names if n in catalog.engines]
    ok = [e.id for e in known if e.why_not(generation, precision, family) is None]
    if ok:
        return ok, None
    if not any(generation in e.runs_on for e in known):
        return [], f"no allowed engine runs {generation}: {_whose(plan, w, names)}"
    why = "; ".join(r for e in known if (r := e.why_not(generation, precision, family)) is not None
                    and generation in e.runs_on)
    return [], f"no allowed engine serves {precision} with {family} on {generation} ({why})"


def tuned(cache: dict, params: EstimatorParams, engines: list[str | None],
          generation: str) -> list[tuple[str | None, EstimatorParams, str | None]]:
    """(engine, its parameters on `generation`, their cache key) for the engines whose parameters differ, each
    under the first engine (in preference order) that runs at them: engines without tuning of their own share
    the fitted defaults and one estimate. The key is None for the defaults."""
    out: list[tuple[str | None, EstimatorParams, str | None]] = []
    seen: set[str | None] = set()
    for e in engines:
        key = ("engine-params", e, generation)
        if key not in cache:
            p = params.for_engine(e, generation)
            cache[key] = (p, None if p is params else f"{e}/{generation}")
        p, tuning = cache[key]
        if tuning not in seen:
            seen.add(tuning)
            out.append((e, p, tuning))
    return out
