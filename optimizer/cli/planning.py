"""solve, report, explain: the plan in, the fleet and its reasons out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from optimizer import vocab
from optimizer.cli.common import (
    CatalogOpt,
    DebugOpt,
    SolverName,
    app,
    err,
    escape,
    failure_json,
    out,
    run,
    slug,
    write_reports,
)
from optimizer.cli.complete import workload_names
from optimizer.errors import InfeasiblePlan, PlanError, Problem, SolverError

CarryOpt = Annotated[Optional[Path], typer.Option(
    "--carry", metavar="LAST_RESULT.json",
    help="Last plan's result: its new reservations and the contracts still running on this plan's first day "
         "join the plan's commitments (ones the plan already lists are skipped).")]


@app.command()
def solve(
    plan: Annotated[Path, typer.Argument(help="The plan YAML.")],
    outdir: Annotated[Path, typer.Option("-o", "--outdir", help="Where the result files go.")] = Path("out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object, nothing else.")] = False,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help="Seconds; overrides policy.time_limit_s.")] = None,
    baseline: Annotated[Optional[Path], typer.Option(
        "--baseline", metavar="LAST_RESULT.json",
        help="Last plan's result: keep each workload's choice unless moving saves more than policy.change_threshold.")] = None,
    carry: CarryOpt = None,
    alternatives: Annotated[int, typer.Option(
        "--alternatives", min=0, max=20, metavar="N",
        help="Next configs per workload priced after the solve (forced, the other choices kept); 0: none.")] = 3,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Choose the cheapest fleet that serves every workload on the bad day.

    Writes OUTDIR/<plan>.json, OUTDIR/<plan>.xlsx (live workbook for finance) and OUTDIR/<plan>.html.
    """

    def body() -> int:
        from optimizer.pipeline import SolveOptions, solve_plan
        from optimizer.report.console import print_result
        from optimizer.results.jsonio import dumps

        if time_limit is not None and time_limit <= 0:
            raise PlanError(Problem("--time-limit must be > 0", "give seconds, e.g. --time-limit 60"))
        opts = SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit,
                            alternatives=alternatives)
        last = None
        if baseline is not None:
            from optimizer.results.baseline import load_baseline

            last = load_baseline(baseline)
        try:
            result = solve_plan(plan, opts, list(catalog or []), baseline=last, carry=carry)
        except (InfeasiblePlan, SolverError) as exc:
            if as_json:  # the contract's "infeasible" / "error" object; the exit code follows
                sys.stdout.write(json.dumps(failure_json(plan, exc), indent=2, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            raise
        text = dumps(result)
        written = write_reports(result, outdir, slug(plan), text)
        if as_json:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            print_result(result, out)
            out.print(f"\nwrote {', '.join(str(p) for p in written)}", style="dim")
        for note in result.notes + (result.baseline.notes if result.baseline else []):
            err.print(f"[yellow]warning:[/yellow] {escape(note)}")
        return 0

    run(body, debug)


@app.command()
def report(
    result_file: Annotated[Path, typer.Argument(metavar="RESULT.json", help="A result saved by `planopt solve`.")],
    outdir: Annotated[Optional[Path], typer.Option("-o", "--outdir", help="Where the files go (default: beside RESULT.json).")] = None,
    debug: DebugOpt = False,
) -> None:
    """Re-render the workbook and the HTML report from a saved result, without solving again."""

    def body() -> int:
        from optimizer.results.jsonio import read_result

        result = read_result(result_file)
        written = write_reports(result, outdir if outdir is not None else result_file.parent, slug(result_file), None)
        out.print(f"wrote {', '.join(str(p) for p in written)}", style="dim")
        return 0

    run(body, debug)


@app.command()
def explain(
    plan: Annotated[Path, typer.Argument(help="The plan YAML.")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="The workload to explain.",
                                          autocompletion=workload_names)],
    count: Annotated[int, typer.Option(help="How many alternatives to re-solve.")] = 6,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    carry: CarryOpt = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Why this config: the choice, the next best alternatives with their cost difference, and what was dropped."""

    def body() -> int:
        from optimizer.pipeline import SolveOptions
        from optimizer.pipeline import explain as do_explain
        from optimizer.vocab import money

        opts = SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit)
        ex = do_explain(plan, workload, opts, count, list(catalog or []), carry=carry)
        for note in ex.result.carried.notes if ex.result and ex.result.carried else []:
            err.print(f"[yellow]note:[/yellow] {escape(note)}")
        if as_json:
            from dataclasses import asdict

            sys.stdout.write(json.dumps({
                "workload": workload, "chosen": ex.result.workload(workload).key if ex.result else None,
                "total_cost": round(ex.result.cost_total, 6) if ex.result else None,
                "unreachable": ex.unreachable,
                "alternatives": [asdict(a) for a in ex.alternatives],
                "dropped": [asdict(d) for d in ex.dropped]}, indent=2, ensure_ascii=False) + "\n")
            return 0
        if ex.result is None:
            out.print(f"[bold]{escape(workload)}[/bold]: no config meets its SLO")
            out.print(f"  {escape(ex.unreachable or '')}")
            _print_dropped(ex.dropped, everything=True)
            return 0
        w = ex.result.workload(workload)
        cur = ex.result.currency
        choice = vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout)
        out.print(f"[bold]{escape(workload)}[/bold]: {escape(choice)}")
        if w.kind == "interactive" and w.offer:
            gpr = w.gpus_per_replica
            per = f"{gpr:g} GPU" + ("" if gpr == 1 else "s") + " per replica"
            copies = (f" ({w.kv_copies:g} copies: {w.kv_gb_per_seq / w.kv_copies:.3f} GB each)" if w.kv_copies > 1
                      else "")
            calib = "" if w.calibrated else "; no published result calibrates this accelerator and precision: headroom kept"
            out.print(f"  {per}; goodput {w.goodput_output_tokens_per_s:,.0f} tok/s ({w.goodput_source}"
                      f"{', bound by ' + w.bound if w.bound else ''}{calib}); weights {w.weights_gb:.1f} GB, "
                      f"KV {w.kv_gb_per_seq:.3f} GB/seq{copies}, {w.kv_concurrency} sequences fit, "
                      f"{w.needed_concurrency} needed")
            if w.ttft_at_load_ms is not None:
                pct = ex.result.policy.get("occupancy", 0.6)
                out.print(f"  TTFT at the planned load ({pct:.0%} of goodput): {w.ttft_at_load_ms:,.0f} ms "
                          "(queueing for prefill included)")
            r = w.replicas
            out.print(f"  at the peak ({w.peak_day_type} {w.peak_hour:02d}:00, {w.peak_output_tokens_per_s:,.0f} tok/s): "
                      f"{r.base} base + {r.spares} spare + {r.rollout} rollout = {vocab.plural(r.total, 'replica')}"
                      f"{_on_gpus(w)}")
        out.print(f"  plan total {money(ex.result.cost_total, cur)}; this workload {money(w.cost, cur)}")
        t = Table(title="Next best configs (whole plan re-solved with each forced)", title_justify="left", show_edge=False)
        for col in ("config", "goodput tok/s", "source", "peak GPUs", "plan total", "difference"):
            t.add_column(col, justify="left" if col in ("config", "source") else "right")
        for a in ex.alternatives:
            t.add_row(a.label, f"{a.goodput_output_tokens_per_s:,.0f}", a.goodput_source, str(a.gpus_at_peak),
                      money(a.total_cost, cur) if a.total_cost is not None else "no plan",
                      ("+" + money(a.difference, cur)) if a.difference is not None else escape(a.note[:60]))
        if ex.alternatives:
            out.print(t)
        else:
            out.print("  no other config to compare: every other option was dropped before solving (below)"
                      if ex.dropped else "  no other config to compare: this is the only option the plan allows")
        _print_dropped(ex.dropped)
        return 0

    run(body, debug)


def _print_dropped(dropped, everything: bool = False) -> None:
    """The options dropped before solving, with why; dominated ones only counted (unless everything)."""
    shown = [x for x in dropped if everything or x.family != "dominated"]
    if shown:
        d = Table(title="Tried and dropped before solving" if everything else "Dropped before solving",
                  title_justify="left", show_edge=False)
        d.add_column("option")
        d.add_column("why")
        d.add_column("detail")
        for x in shown:
            d.add_row(escape(x.option), x.family, escape(x.reason))
        out.print(d)
    dominated = len(dropped) - len(shown)
    if dominated:
        out.print(f"{vocab.plural(dominated, 'dominated option')} (another config or offer is never worse) "
                  "not listed; --json lists every one", style="dim")


def _on_gpus(w) -> str:
    """' on 3g.40gb MIG slices (2 per GPU) = 2 GPUs', ' × 2 GPUs = 30 GPUs' or ' = 4 GPUs'."""
    gpus = vocab.plural(w.gpus_at_peak, "GPU")
    if w.mig:
        return f" on {w.mig} MIG slices = {gpus}"
    if w.gpus_per_replica and w.gpus_per_replica != 1:
        return f" × {w.gpus_per_replica:g} GPUs = {gpus}"
    return f" = {gpus}"
