"""init, validate, schema: a plan to start from, and every check before a solve."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from optimizer.cli.common import (
    CatalogOpt,
    DebugOpt,
    app,
    err,
    escape,
    out,
    problem_dict,
    run,
)
from optimizer.errors import InfeasiblePlan, PlanError, Problem


class Template(str, Enum):
    startup = "startup"
    enterprise = "enterprise"
    seed = "seed"


TEMPLATE_HELP = {
    "startup": "one model behind one product: reserved or on-demand, API overflow",
    "enterprise": "a quarter of several pools: caps, reserved base, spot batch, a fixed research block",
    "seed": "the seed case: a 70B model on 2-GPU replicas, $1,800 a day",
}


@app.command()
def init(
    template: Annotated[Template, typer.Option(
        "--template", "-t", help="startup: " + TEMPLATE_HELP["startup"] + "; enterprise: " + TEMPLATE_HELP["enterprise"]
        + "; seed: " + TEMPLATE_HELP["seed"] + ".")] = Template.startup,
    output: Annotated[Path, typer.Option("-o", "--output", help="The plan to write.")] = Path("plan.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite PLAN.yaml if it exists.")] = False,
    debug: DebugOpt = False,
) -> None:
    """Write a commented plan to start from, and plan.schema.json beside it for editor completion."""

    def body() -> int:
        from optimizer.atomic import write_text_atomic
        from optimizer.inputs.reference import SCHEMA_FILE, schema_text
        from optimizer.resources import templates_dir

        if output.exists() and not force:
            raise PlanError(Problem(f"{output} exists; nothing was written",
                                    "choose another -o, or add --force to overwrite it"))
        if output.suffix.lower() not in (".yaml", ".yml"):
            raise PlanError(Problem(f"{output}: a plan is a YAML file", "name it something.yaml"))
        text = (templates_dir() / "plans" / f"{template.value}.yaml").read_text(encoding="utf-8")
        schema = output.parent / SCHEMA_FILE
        for path in (output, schema):  # both or neither: a plan without its schema beside it is half a start
            if path.is_dir():
                raise PlanError(Problem(f"cannot write {path}: it is a directory; nothing was written",
                                        "choose another -o, or move that directory"))
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(output, text)
            write_text_atomic(schema, schema_text())
        except OSError as exc:
            raise PlanError(Problem(f"cannot write {output}: {exc.strerror or exc}", "choose a writable -o")) from None
        out.print(f"wrote {output} ({template.value}: {TEMPLATE_HELP[template.value]}) and {schema} "
                  "(editors complete and check the plan with it)")
        out.print(f"next: planopt validate {output} && planopt solve {output}", style="dim")
        return 0

    run(body, debug)


@app.command()
def validate(
    plans: Annotated[list[Path], typer.Argument(metavar="PLAN...", help="Plan YAML files.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: each plan with its problems.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Every check `solve` makes before it builds the program — schema, references, catalogs, fit and
    candidates per workload — without solving. Exit 0 valid; 1 a workload no config can serve at its
    SLO (as `solve` would say); 2 invalid input."""

    def body() -> int:
        from optimizer.candidates.build import build_candidates
        from optimizer.inputs.lint import lint, stale_prices
        from optimizer.inputs.loading import load_plan
        from optimizer.results.evidence import candidate_notes

        reports = []
        for path in plans:
            entry: dict = {"file": str(path), "status": "valid", "problems": []}
            try:
                loaded = load_plan(path, list(catalog or []))
                cands = build_candidates(loaded)
                entry["workloads"] = len(loaded.plan.workloads)
                entry["candidates"] = len(cands.all())
                used = set(cands.offer_ids())  # where they run: the plan's own offers, and the catalogs'
                mine = {o.id for o in loaded.plan.offers}
                entry["offers"] = {"plan": len(used & mine), "catalogs": len(used - mine)}
                entry["warnings"] = lint(loaded.plan) + stale_prices(
                    loaded.plan, [loaded.catalog.offers[o] for o in sorted(used)]) + cands.notes
                if loaded.plan.policy.unvalidated == "warn":
                    entry["warnings"] += candidate_notes(cands)
            except PlanError as exc:
                entry["status"] = "invalid"
                entry["problems"] = [problem_dict(p) for p in exc.problems] + _physics(exc, path)
            except InfeasiblePlan as exc:
                entry["status"] = "infeasible"
                entry["problems"] = ([problem_dict(p) for p in exc.problems] or
                                     [{"file": str(path), "line": None, "key": None, "message": r, "fix": exc.fix}
                                      for r in exc.reasons])
            reports.append(entry)
        statuses = {r["status"] for r in reports}
        code = 2 if "invalid" in statuses else 1 if "infeasible" in statuses else 0
        if as_json:
            sys.stdout.write(json.dumps({"valid": code == 0, "plans": reports}, indent=2, ensure_ascii=False) + "\n")
            return code
        for r in reports:
            if r["status"] == "valid":
                out.print(f"{escape(r['file'])}: valid — {r['workloads']} workload"
                          f"{'' if r['workloads'] == 1 else 's'}, {r['candidates']} candidate config"
                          f"{'' if r['candidates'] == 1 else 's'} on {_offers_text(r['offers'])}")
                for w in r["warnings"]:
                    err.print(f"[yellow]warning:[/yellow] {escape(r['file'])}: {escape(w)}")
                continue
            label = "error" if r["status"] == "invalid" else "no config meets the SLO"
            for p in r["problems"]:
                err.print(f"[red]{label}:[/red] {escape(_problem_text(p))}")
        bad = [r for r in reports if r["status"] != "valid"]
        if bad and len(plans) > 1:
            err.print(f"{len(bad)} of {len(plans)} plans have problems")
        return code

    run(body, debug)


def _physics(exc: PlanError, path: Path) -> list[dict]:
    """The physics problems (no config meets a workload's SLO) of the workloads of a plan that did not load but
    whose own part of it did: reported with its schema and reference problems, in one round."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import sound_part

    part = sound_part(exc)
    if part is None:
        return []
    try:
        build_candidates(part)
    except PlanError as more:
        return [problem_dict(p) for p in more.problems]
    except InfeasiblePlan as more:
        return ([problem_dict(p) for p in more.problems] or
                [{"file": str(path), "line": None, "key": None, "message": r, "fix": more.fix} for r in more.reasons])
    except Exception:  # noqa: BLE001 — a part of a plan may fail in ways a whole one cannot: its problems stand
        return []
    return []


def _offers_text(offers: dict) -> str:
    """'3 offers of the plan and 19 of the catalogs' — the built-in offers join a plan unless it filters them."""
    parts = [f"{n} offer{'' if n == 1 else 's'} of the {where}" for where, n in
             (("plan", offers["plan"]), ("catalogs", offers["catalogs"])) if n]
    return " and ".join(parts) or "no offer"


def _problem_text(p: dict) -> str:
    return str(Problem(p["message"], p["fix"], p["file"], p["line"], p["key"]))


@app.command()
def schema(
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write here instead of printing.")] = None,
    reference: Annotated[bool, typer.Option(
        "--reference", help="The plan reference as Markdown (docs/plan-reference.md) instead of the JSON Schema.")] = False,
    model: Annotated[bool, typer.Option(
        "--model", help="The integer program's math as Markdown (docs/model.md) instead of the JSON Schema.")] = False,
    result: Annotated[bool, typer.Option(
        "--result", help="The JSON Schema of a result (`solve --json`, docs/result.schema.json) instead.")] = False,
    debug: DebugOpt = False,
) -> None:
    """The plan file's JSON Schema (editors: completion and inline errors), its Markdown reference, the
    integer program's math, or the JSON Schema of the result `solve --json` writes."""

    def body() -> int:
        from optimizer.atomic import write_text_atomic
        from optimizer.inputs.reference import plan_reference, schema_text
        from optimizer.optimize.families import markdown
        from optimizer.results.jsonio import result_schema_text

        if sum((reference, result, model)) > 1:
            raise PlanError(Problem("--reference, --result and --model: give one", "the plan's reference, the "
                                    "result's schema or the program's math"))
        text = (markdown() if model else plan_reference() if reference else result_schema_text() if result
                else schema_text())
        if output is None:
            sys.stdout.write(text)
            return 0
        try:
            write_text_atomic(output, text)
        except OSError as exc:
            raise PlanError(Problem(f"cannot write {output}: {exc.strerror or exc}", "choose a writable -o")) from None
        out.print(f"wrote {output}", style="dim")
        return 0

    run(body, debug)
