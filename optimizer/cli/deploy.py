"""deploy: a solved plan as engine launch commands and Kubernetes manifests."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from optimizer.cli.common import (
    READ_BACK_FAILURES,
    CatalogOpt,
    DebugOpt,
    app,
    check_writable,
    err,
    escape,
    not_as_written,
    out,
    run,
    write_failed,
)
from optimizer.errors import PlanError, Problem


class EngineName(str, Enum):
    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"


@app.command()
def deploy(
    result_file: Annotated[Path, typer.Argument(metavar="RESULT.json", help="A result saved by `planopt solve`.")],
    engine: Annotated[Optional[EngineName], typer.Option(
        "--engine", help="The engine for workloads whose plan entry names none (default: the one each was "
                         "planned on).")] = None,
    outdir: Annotated[Optional[Path], typer.Option(
        "-o", "--outdir", help="Where the files go (default: <RESULT>-deploy beside RESULT.json).")] = None,
    plan: Annotated[Optional[Path], typer.Option(
        "--plan", help="The plan the result was solved from (default: the file the result names): context "
                       "lengths, KV-cache precisions, batch windows.")] = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Write each GPU workload's engine launch command and its Kubernetes manifests (Deployment or
    LeaderWorkerSet, Service, HorizontalPodAutoscaler; CronJob for batch work) and a README saying which numbers
    came from the plan."""

    def body() -> int:
        from optimizer.deploy.build import build, write
        from optimizer.inputs.catalog import load_catalog
        from optimizer.inputs.loading import load_plan
        from optimizer.results.jsonio import read_result

        result = read_result(result_file)
        target = outdir if outdir is not None else result_file.parent / f"{result_file.stem}-deploy"
        loaded = None
        if plan is not None:
            loaded = load_plan(plan, list(catalog or []))
        elif result.file and Path(result.file).is_file():
            try:
                loaded = load_plan(result.file, list(catalog or []))
            except PlanError:
                loaded = None  # the plan changed since the solve: its figures are not this result's
        cat = loaded.catalog if loaded is not None else load_catalog(list(catalog or []))
        try:
            bundle = build(result, cat, loaded.plan if loaded is not None else None,
                           engine.value if engine else None)
        except READ_BACK_FAILURES as exc:
            raise not_as_written(result_file, exc) from exc
        if not bundle.entries and not bundle.skipped:
            raise PlanError(Problem("the result has no workloads to deploy", "solve a plan with workloads first",
                                    file=str(result_file)))
        check_writable([target / rel for rel in bundle.files], "--outdir")
        try:
            write(bundle, target)
        except OSError as exc:
            raise write_failed(exc, target, "--outdir") from None
        for e in bundle.entries:
            g = e.group
            out.print(f"{escape(g.name)}: {escape(g.config_label)}"
                      + (f" ({g.role})" if g.role else "") + f" — {g.engine}, "
                      + (f"CronJob × {g.max_replicas}" if e.kind == "batch" else
                         f"{'LeaderWorkerSet' if g.nodes > 1 else 'Deployment'} {g.min_replicas}–{g.max_replicas} "
                         "replicas"))
        for s in bundle.skipped:
            err.print(f"[yellow]not emitted:[/yellow] {escape(s.workload)}: {escape(s.reason)}")
        for n in bundle.notes:
            err.print(f"[yellow]note:[/yellow] {escape(n)}")
        out.print(f"wrote {len(bundle.files)} files to {target}", style="dim")
        return 0

    run(body, debug)
