"""sweep: one plan solved over a range of its inputs (demand, prices, goodput, occupancy, growth)."""

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
    SolverName,
    app,
    err,
    escape,
    out,
    run,
    solve_options,
)
from optimizer.errors import PlanError, Problem
from optimizer.formatting import plural


class Engine(str, Enum):
    process = "process"
    ray = "ray"


@app.command()
def sweep(
    plan: Annotated[Path, typer.Argument(help="The plan YAML (never changed).")],
    vary: Annotated[list[str], typer.Option(
        "--vary", metavar="KEY=LO:HI:N",
        help="A key over N values from LO to HI (repeatable). Keys: demand, demand.<workload>, price.on-demand, "
             "price.spot, price.reserved-1y, price.reserved-3y, price.api, goodput (multipliers: 1 is the plan's; goodput "
             "scales estimated goodput, measured stays), occupancy (policy.occupancy), growth (monthly_growth of "
             "workloads sized from business numbers).")],
    grid: Annotated[bool, typer.Option("--grid", help="Every combination of the keys' values (default: one key "
                                                      "at a time, the others at the plan's; the plan itself once).")] = False,
    engine: Annotated[Engine, typer.Option("--engine", help="process: a local process pool; ray: Ray tasks "
                                                            "(pip install '.[ray]' in a checkout).")] = Engine.process,
    address: Annotated[Optional[str], typer.Option(
        "--address", metavar="ADDR", help="--engine ray: the cluster to join (its workers need planopt installed); "
                                          "default: a local Ray.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, metavar="N", help="Processes of the local pool (default: the CPU count); Ray places "
                                              "its own tasks.")] = None,
    outdir: Annotated[Path, typer.Option("-o", "--outdir", metavar="DIR",
                                         help="Where sweep.jsonl (the solved points: a rerun solves only the "
                                              "missing ones) and sweep.html go.")] = Path("out/sweep"),
    as_json: Annotated[bool, typer.Option("--json", help="Print {\"points\": [...]} as JSON, nothing else: each point's vary, "
                                                         "status, cost_all_in, cost_new, cost_committed, cost_total (= cost_new), "
                                                         "reserved_gpus, new_commitments, new_spend_commitments and "
                                                         "full_term.")] = False,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", metavar="S",
                                                        help="Safety cap in seconds per point (each stops on work); overrides policy.time_limit_s.")] = None,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    every_point: Annotated[bool, typer.Option(
        "--every-point", help="Solve every point. By default a point along a price (3+ values) that the points "
                              "solved on either side prove within the gap is not solved: a price moves the cost "
                              "linearly, so the least cost is concave in it.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Solve the plan at many points to see which inputs move its cost and reserved level most.

    Writes DIR/sweep.jsonl (a line per solved point, appended as each finishes) and DIR/sweep.html (the
    table and tornado charts of all-in cost and reserved GPUs). Each point carries its all-in cost
    (new + committed), new and committed spend, and the new commitments its plan would sign.
    """

    def body() -> int:
        from optimizer.atomic import unwritable
        from optimizer.report.sweep import HTML, sweep_table, write_html
        from optimizer.results.sweep import point_json
        from optimizer.studies.sweep import parse_varies, run_sweep

        specs = parse_varies(list(vary))
        opts = solve_options(solver, time_limit, alternatives=0)
        # said before the points are solved, not after (run_sweep says what is wrong with the folder itself)
        blocked = unwritable(outdir, folder=True) is None and unwritable(outdir / HTML, folder=False)
        if blocked:
            raise PlanError(Problem(f"cannot write the sweep's report: {blocked}", "choose another --outdir, or "
                                    "move it", file=str(outdir)))
        progress = _Progress(not as_json)
        try:
            with progress:
                result = run_sweep(plan, specs, outdir, grid=grid, engine=engine.value, workers=workers,
                                   address=address, options=opts, extra_catalogs=list(catalog or []),
                                   every_point=every_point, on_start=progress.start, on_point=progress.point)
        except KeyboardInterrupt:
            err.print(f"interrupted: the {plural(progress.done, 'point')} solved {'is' if progress.done == 1 else 'are'} in "
                      f"{outdir / 'sweep.jsonl'}; "
                      "run the same command again to solve the rest")
            raise typer.Exit(130) from None
        try:
            html = write_html(result, outdir)
        except OSError as exc:
            raise PlanError(Problem(f"cannot write the sweep's report: {exc.strerror or exc}",
                                    "choose a writable --outdir", file=str(outdir))) from None
        if as_json:
            sys.stdout.write(json.dumps({"points": [point_json(p) for p in result.points]}, indent=2,
                                        ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            out.print(sweep_table(result.points, result.base, result.currency))
            failed = sum(1 for p in result.points if not p.solved)
            if failed:
                out.print(f"{failed} of {len(result.points)} points have no plan (their status says why)")
            proven = sum(1 for p in result.points if p.interpolated)
            if proven:
                out.print(f"{proven} of {len(result.points)} points were proven from the points solved on either "
                          "side of them along a price, not solved (--every-point solves them)")
            out.print(f"\nwrote {result.jsonl}, {html}", style="dim")
        short = sum(1 for p in result.points if p.solved and p.status != "optimal")
        if short:
            err.print(f"note: {plural(short, 'point')} stopped at the time limit short of the plan's mip_gap (status and gap "
                      "in the table): a cheaper plan may exist there — raise --time-limit or use fewer --workers")
        if result.cut_line is not None:
            err.print(f"note: the last line of {result.jsonl} (line {result.cut_line}) was cut off (a run stopped while "
                      "writing it) and is dropped: that point is solved again")
        if result.other_lines:
            are = "is" if result.other_lines == 1 else "are"
            err.print(f"note: {plural(result.other_lines, 'line')} of {result.jsonl} {are} for another version of the plan "
                      "or other keys; kept, not used")
        return 0

    run(body, debug)


class _Progress:
    """A bar on stderr while points solve (when stderr is a terminal and not --json), and a line saying
    how many points were read back from sweep.jsonl."""

    def __init__(self, show: bool) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.show = show
        self.done = 0
        self.bar = Progress(TextColumn("points"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[last]}"), console=err, transient=True,
                            disable=not (show and err.is_terminal))
        self.task = None

    def __enter__(self) -> "_Progress":
        self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def start(self, to_solve: int, read_back: int) -> None:
        if read_back:  # stderr: --json keeps stdout to the JSON
            err.print(f"read back {plural(read_back, 'solved point')} from sweep.jsonl; solving {to_solve}")
        self.task = self.bar.add_task("points", total=to_solve, last="")

    def point(self, done: int, total: int, p) -> None:
        self.done = done
        last = escape(f"last: {', '.join(f'{k}={v:g}' for k, v in p.vary.items() if v is not None)} {p.status}")
        if self.task is not None:
            self.bar.update(self.task, completed=done, last=last)
