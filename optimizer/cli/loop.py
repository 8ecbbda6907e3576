"""calibrate, forecast and compare: the planning loop (real usage and load tests back in, the next months
forecast from usage, plans side by side)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from optimizer.cli.common import (
    READ_BACK_FAILURES,
    CatalogOpt,
    DebugOpt,
    SolverName,
    app,
    check_writable,
    err,
    not_as_written,
    out,
    run,
    solve_options,
    write_failed,
)
from optimizer.cli.complete import workload_names

PROGRESS_MIN_BYTES = 16_000_000
"""Usage logs at least this big get a progress bar on a terminal."""


@app.command()
def calibrate(
    plan: Annotated[Path, typer.Argument(help="The plan YAML (never changed).")],
    out_yaml: Annotated[Path, typer.Option("-o", "--out", help="The calibrated plan to write (OUT.yaml; OUT.html beside it).")],
    usage: Annotated[Optional[list[Path]], typer.Option("--usage", help="Usage events: CSV, JSON Lines or Parquet (repeatable).")] = None,
    bench: Annotated[Optional[list[Path]], typer.Option("--bench", help="Load test: vllm bench serve, GenAI-Perf or AIPerf JSON (repeatable).")] = None,
    result: Annotated[Optional[Path], typer.Option("--result", help="A solved result JSON for the period: report occupancy.")] = None,
    maps: Annotated[Optional[list[str]], typer.Option("--map", help="COLUMN=FIELD, or model=M:workload=W / tenant=T:workload=W (repeatable).")] = None,
    percentile: Annotated[Optional[float], typer.Option("--percentile", help="Load tests: TTFT and TPOT percentile checked against the SLO (default: the plan's SLO percentile).")] = None,
    peak_percentile: Annotated[float, typer.Option("--peak-percentile", help="Usage: percentile across days for the peak and the profile.")] = 95.0,
    accelerator: Annotated[Optional[str], typer.Option("--accelerator", help="Load tests without metadata: accelerator id.")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", help="Load tests without metadata: precision.")] = None,
    tp: Annotated[Optional[int], typer.Option("--tp", help="Load tests without metadata: GPUs per replica.")] = None,
    workload: Annotated[Optional[str], typer.Option("--workload", help="Load tests without metadata: the workload.",
                                                    autocompletion=workload_names)] = None,
    engine: Annotated[Optional[str], typer.Option("--engine", help="Load tests without metadata: the serving engine (vllm, sglang, trtllm, …).")] = None,
    deployment: Annotated[Optional[str], typer.Option("--deployment", help="Load tests: the deployment they ran against (a name `planopt deploy` wrote): its workload and config, without --map.")] = None,
    manifests: Annotated[Optional[Path], typer.Option("--manifests", help="The folder `planopt deploy -o DIR` wrote (with --deployment).")] = None,
    max_bad_rows: Annotated[int, typer.Option("--max-bad-rows", help="Leave out up to this many bad usage rows instead of stopping.")] = 0,
    allow_partial: Annotated[bool, typer.Option("--allow-partial", help="Usage: let less than one whole day of a day type set its demand (the plan's curve scaled to the hours seen).")] = False,
    usage_workload: Annotated[Optional[str], typer.Option("--usage-workload", help="Usage: the workload of logs with no model column (when the plan has several).",
                                                          autocompletion=workload_names)] = None,
    allow_clock_steps: Annotated[bool, typer.Option("--allow-clock-steps", help="Usage: count events at their times where a log's clock steps back more than 5 minutes.")] = False,
    mix: Annotated[Optional[bool], typer.Option("--mix/--no-mix", help="Usage: write request sizes as tokens.mix size classes (quantiles of input × output, merged while the estimated cost moves ≤ 0.5%) for every workload (--mix) or none (--no-mix: means only). Default: the interactive workloads with split by_size or any, or a mix already.")] = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Feed real usage and load tests back into the plan: demand, token means and measured goodput."""

    def body() -> int:
        from optimizer.calibrate.loadtests import Flags
        from optimizer.calibrate.run import CalibrateOptions, write_outputs
        from optimizer.calibrate.run import calibrate as do_calibrate
        from optimizer.report.calibration import print_calibration, render_html

        opts = CalibrateOptions(
            usage=tuple(usage or ()), bench=tuple(bench or ()), result=result, maps=tuple(maps or ()),
            peak_percentile=peak_percentile, slo_percentile=percentile,
            flags=Flags(accelerator, precision, tp, workload, engine, deployment), max_bad_rows=max_bad_rows,
            allow_partial=allow_partial, usage_workload=usage_workload, allow_clock_steps=allow_clock_steps,
            manifests=manifests, mix=mix)
        cal, html_path = _run_and_write(opts.usage, out_yaml, list(catalog or []), write_outputs, render_html,
                                        lambda tell: do_calibrate(plan, opts, out_yaml, tell, list(catalog or [])))
        print_calibration(cal, out)
        out.print(f"\nwrote {out_yaml} and {html_path}", style="dim")
        return 0

    run(body, debug)


def _run_and_write(usage, out_yaml: Path, catalogs: list[Path], write_outputs, render_html, work):
    """calibrate and forecast: refuse an -o that cannot be written before reading any usage, run work(tell) on
    the usage, then write the plan and its page. Returns (what work returned, the page's path)."""
    _writable(out_yaml)
    done = _reading_usage(usage, work)
    try:
        html_path = write_outputs(done, out_yaml, render_html(done), catalogs)
    except OSError as exc:
        raise write_failed(exc, out_yaml, "-o") from None
    return done, html_path


def _reading_usage(usage, work):
    """Run work(tell) — tell(fraction) reports how much usage is read — with a progress bar on a terminal
    when the logs are large enough to wait for, and tell None otherwise."""
    from optimizer.calibrate.usage import total_bytes

    if not (err.is_terminal and total_bytes(list(usage)) >= PROGRESS_MIN_BYTES):
        return work(None)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("reading usage"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("usage", total=1.0)
        return work(lambda f: bar.update(task, completed=f))


@app.command()
def forecast(
    plan: Annotated[Path, typer.Argument(help="The plan YAML (never changed).")],
    usage: Annotated[list[Path], typer.Option("--usage", help="Usage events, 14 days or more: CSV, JSON Lines or Parquet (repeatable).")],
    start: Annotated[str, typer.Option("--start", help="The first month's first day, YYYY-MM-DD.")],
    out_yaml: Annotated[Path, typer.Option("-o", "--out", help="The forecast plan to write (NEXT.yaml; NEXT.html beside it).")],
    months: Annotated[int, typer.Option("--months", help="Calendar months to forecast (1–24).")] = 3,
    scenarios: Annotated[int, typer.Option("--scenarios", help="Demand scenarios to write from the forecast's quantiles (0 keeps the plan's).")] = 5,
    maps: Annotated[Optional[list[str]], typer.Option("--map", help="COLUMN=FIELD, or model=M:workload=W / tenant=T:workload=W (repeatable).")] = None,
    usage_workload: Annotated[Optional[str], typer.Option("--usage-workload", help="The workload of logs with no model column (when the plan has several).",
                                                          autocompletion=workload_names)] = None,
    max_bad_rows: Annotated[int, typer.Option("--max-bad-rows", help="Leave out up to this many bad usage rows instead of stopping.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print each workload's monthly P10/P50/P90 as JSON, nothing else.")] = False,
    allow_clock_steps: Annotated[bool, typer.Option("--allow-clock-steps", help="Count events at their times where a log's clock steps back more than 5 minutes.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Forecast each workload's busiest hour per month from weeks of usage: the plan re-dated, with monthly peaks and scenarios."""

    def body() -> int:
        from optimizer.calibrate.forecast import ForecastOptions, write_outputs
        from optimizer.calibrate.forecast import forecast as do_forecast
        from optimizer.report.forecast import print_forecast, render_html

        opts = ForecastOptions(usage=tuple(usage), start=start, months=months, scenarios=scenarios,
                               maps=tuple(maps or ()), usage_workload=usage_workload, max_bad_rows=max_bad_rows,
                               allow_clock_steps=allow_clock_steps)
        fc, html_path = _run_and_write(opts.usage, out_yaml, list(catalog or []), write_outputs, render_html,
                                       lambda tell: do_forecast(plan, opts, out_yaml, tell, list(catalog or [])))
        if as_json:
            sys.stdout.write(json.dumps(fc.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            sys.stdout.flush()
        else:
            print_forecast(fc, out)
            out.print(f"\nwrote {out_yaml} and {html_path}", style="dim")
        return 0

    run(body, debug)


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="Plan YAML or result JSON (before).")],
    b: Annotated[Path, typer.Argument(help="Plan YAML or result JSON (after).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as one JSON object, nothing else.")] = False,
    html: Annotated[Optional[Path], typer.Option("--html", metavar="FILE",
                                                 help="Also write the comparison as one HTML page.")] = None,
    solver: Annotated[Optional[SolverName], typer.Option(help="For plans: override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help="For plans: safety cap in seconds per solve (it stops on work).")] = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Two plans or two results side by side: all-in (and per day), the all-in bridge from A to B (price, volume,
    mix, new commitments, roll-off), cost by tier, demand that changed, new commitments, each workload's choice
    and replicas, new and removed."""

    def body() -> int:
        from optimizer.atomic import write_text_atomic
        from optimizer.pipeline import load_side
        from optimizer.report.calibration import print_comparison, render_comparison_html
        from optimizer.results.compare import compare as do_compare

        if html is not None:
            check_writable([html], "--html")
        opts = solve_options(solver, time_limit)
        ra, ka = load_side(a, opts, list(catalog or []))
        rb, kb = load_side(b, opts, list(catalog or []))
        try:
            cmp = do_compare(ra, rb, str(a), str(b), ka, kb)
            text = json.dumps(cmp.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
            # drawn once aside first: an edited result that breaks the table is refused before anything is shown
            print_comparison(cmp, Console(file=io.StringIO(), width=out.width, emoji=False))
            page = None if html is None else render_comparison_html(cmp)
        except READ_BACK_FAILURES as exc:
            raise not_as_written(" or ".join(str(p) for p, k in ((a, ka), (b, kb)) if k == "result") or str(b), exc) \
                from exc
        if html is not None and page is not None:
            write_text_atomic(html, page)
        if as_json:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            print_comparison(cmp, out)
            if html is not None:
                out.print(f"\nwrote {html}", style="dim")
        return 0

    run(body, debug)


def _writable(out_yaml: Path) -> None:
    """Refuse an output the plan (or its page beside it) cannot be written to before reading any usage
    (exit 2, nothing written)."""
    check_writable([out_yaml, out_yaml.with_suffix(".html")], "-o")
