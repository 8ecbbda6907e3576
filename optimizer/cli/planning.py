"""solve, report, explain: the plan in, the fleet and its reasons out."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from optimizer import formatting, vocab
from optimizer.cli.common import (
    READ_BACK_FAILURES,
    CatalogOpt,
    DebugOpt,
    SolverName,
    app,
    check_writable,
    err,
    escape,
    failure_json,
    not_as_written,
    out,
    run,
    slug,
    solve_options,
    write_failed,
    write_reports,
)
from optimizer.cli.complete import workload_names
from optimizer.errors import InfeasiblePlan, PlanError, Problem, SolverError
from optimizer.results.evidence import reason as evidence_reason
from optimizer.results.evidence import rests_on_unvalidated

CarryOpt = Annotated[Optional[Path], typer.Option(
    "--carry", metavar="LAST_RESULT.json",
    help="Last plan's result: its new reservations and the contracts still running on this plan's first day "
         "join the plan's commitments (ones the plan already lists are skipped).")]


class ParallelName(str, Enum):
    serial = "serial"
    process = "process"
    ray = "ray"


@app.command()
def solve(
    plan: Annotated[Path, typer.Argument(help="The plan YAML.")],
    outdir: Annotated[Path, typer.Option("-o", "--outdir", help="Where the result files go.")] = Path("out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object, nothing else.")] = False,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option(
        "--time-limit", help="Safety cap in seconds: the solve stops on work, the cap only ends its search for a "
                             "better plan or a proof (a first plan is always found; unproven, it is provisional); "
                             "overrides policy.time_limit_s.")] = None,
    work_limit: Annotated[Optional[float], typer.Option(
        "--work-limit", metavar="FACTOR",
        help="Times policy.work_limit (nodes and simplex iterations: the same decision on any machine); "
             "e.g. 4 to search longer.")] = None,
    baseline: Annotated[Optional[Path], typer.Option(
        "--baseline", metavar="LAST_RESULT.json",
        help="Last plan's result: keep each workload's choice unless moving saves more than policy.change_threshold.")] = None,
    carry: CarryOpt = None,
    alternatives: Annotated[int, typer.Option(
        "--alternatives", min=0, max=20, metavar="N",
        help="Next configs per workload priced after the solve (forced, the other choices kept); 0: none.")] = 3,
    parallel: Annotated[Optional[ParallelName], typer.Option(
        "--parallel", help="A scenario plan solved by scenario (policy.decompose): where its scenarios' solves run — "
                           "serial, process (a local process pool, the default) or ray (pip install '.[ray]'). The "
                           "answer is the same on each.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines on stderr while solving.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Choose the cheapest fleet that serves every workload on the bad day.

    Writes OUTDIR/<plan>.json, OUTDIR/<plan>.xlsx (live workbook for finance) and OUTDIR/<plan>.html.
    """

    def body() -> int:
        from optimizer.pipeline import solve_plan
        from optimizer.report.console import print_result
        from optimizer.report.files import report_paths
        from optimizer.results.jsonio import dumps, warnings_of

        opts = solve_options(solver, time_limit, work_limit=work_limit, alternatives=alternatives,
                             parallel=parallel.value if parallel else None,
                             progress=None if quiet or as_json or not err.is_terminal else _SolveProgress())
        try:
            check_writable(report_paths(outdir, slug(plan)), "--outdir")  # before the solve, not after it
            last = None
            if baseline is not None:
                from optimizer.results.baseline import load_baseline

                last = load_baseline(baseline)
            result = solve_plan(plan, opts, list(catalog or []), baseline=last, carry=carry)
        except (InfeasiblePlan, SolverError, PlanError) as exc:
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
        warned = set(warnings_of(result))  # what --carry did is said as a note, not warned
        for note in result.notes + (result.baseline.notes if result.baseline else []):
            err.print(f"[yellow]warning:[/yellow] {escape(note)}" if note in warned else f"[dim]note:[/dim] {escape(note)}")
        gap, target = result.solver.gap, result.policy.get("mip_gap")
        if not as_json and gap is not None and target is not None and gap > float(target) + 1e-12:
            capped = any(w.stopped_by == "safety cap" for w in result.solver.work) or not result.solver.work
            raise_it = (f"raise --time-limit (now {time_limit or result.policy.get('time_limit_s')} s) or "
                        "policy.time_limit_s" if capped else "raise --work-limit (e.g. 4) or policy.work_limit")
            err.print(f"[yellow]note:[/yellow] the {'time limit' if capped else 'work limit'} stopped the search at a "
                      f"proven {gap:.2%} gap (target {float(target):.2%}): a cheaper plan may exist — {raise_it}")
        return 0

    run(body, debug)


class _SolveProgress:
    """Lines on stderr as the solve improves: the bound, the best plan and the gap between them."""

    def __init__(self) -> None:
        self.last: tuple | None = None
        self.shown_at = -10.0

    def __call__(self, phase: str, seconds: float, incumbent: float | None, bound: float | None) -> None:
        inc = None if incumbent is None else round(incumbent, 2)
        new = self.last is None or phase != self.last[0] or inc != self.last[1]
        if not new:  # only the bound moved: at most every 2 s, and only if it moved
            assert self.last is not None
            moved = bound is not None and (self.last[2] is None or bound - self.last[2] > 1e-6 * max(1.0, abs(bound)))
            if seconds - self.shown_at < 2.0 or not moved:
                return
        self.last, self.shown_at = (phase, inc, bound), seconds
        what = {"bound": "relaxation", "plan": "rounded plan", "search": "searching", "alternatives": "pricing alternatives",
                "decompose": "by scenario, a round"}
        parts = [f"{seconds:6.1f} s  {what.get(phase, phase):<20}"]
        if incumbent is not None:
            parts.append(f"plan {incumbent:,.0f}")
        if bound is not None:
            parts.append(f"bound {bound:,.0f}")
        if incumbent is not None and bound is not None and incumbent > 0:
            parts.append(f"gap {max(0.0, (incumbent - bound) / incumbent):.2%}")
        err.print("  ".join(parts), style="dim", highlight=False)


@app.command()
def report(
    result_file: Annotated[Path, typer.Argument(metavar="RESULT.json", help="A result saved by `planopt solve`.")],
    outdir: Annotated[Optional[Path], typer.Option("-o", "--outdir", help="Where the files go (default: beside RESULT.json).")] = None,
    chargeback: Annotated[Optional[Path], typer.Option(
        "--chargeback", metavar="FILE.csv",
        help="Also write the result's showback by cost centre × month × tier to this CSV: the all-in spend, "
             "or the book view with policy.showback: book.")] = None,
    debug: DebugOpt = False,
) -> None:
    """Re-render the workbook and the HTML report from a saved result, without solving again."""

    def body() -> int:
        from optimizer.results.jsonio import read_result

        if chargeback is not None:
            check_writable([chargeback], "--chargeback file")
        result = read_result(result_file)
        if chargeback is not None and not result.showback:
            raise PlanError(Problem("has no showback rows (it was written before they were kept)",
                                    "solve the plan again, then export the chargeback", file=str(result_file)))
        try:
            written = write_reports(result, outdir if outdir is not None else result_file.parent, slug(result_file),
                                    None)
        except READ_BACK_FAILURES as exc:
            raise not_as_written(result_file, exc) from exc
        if chargeback is not None:
            from optimizer.atomic import write_text_atomic
            from optimizer.report.chargeback import chargeback_csv

            try:
                write_text_atomic(chargeback, chargeback_csv(result))
            except OSError as exc:
                raise write_failed(exc, chargeback, "--chargeback file") from exc
            written = [*written, chargeback]
        out.print(f"wrote {', '.join(str(p) for p in written)}", style="dim")
        return 0

    run(body, debug)


@app.command()
def explain(
    plan: Annotated[Path, typer.Argument(help="The plan YAML.")],
    workload: Annotated[Optional[str], typer.Option("--workload", "-w", help="The workload to explain.",
                                                    autocompletion=workload_names)] = None,
    count: Annotated[int, typer.Option("--top", "--count", min=0, max=50,
                                       help="How many alternatives to re-solve (the cheapest on their own first).")] = 5,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option(
        "--time-limit", help="Safety cap in seconds over the plan's solve and every re-solve, which stop on work "
                             "(default policy.time_limit_s).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    carry: CarryOpt = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Why this config: the choice, the next best alternatives with their cost difference, and what was dropped."""

    def body() -> int:
        from optimizer.pipeline import explain as do_explain
        from optimizer.report.console import overflow
        from dataclasses import replace

        from optimizer.report.labels import alternative_figures, shared_lines, size_classes_text
        from optimizer.formatting import money

        if workload is None:  # which one: the plan's workloads, named
            from optimizer.inputs.loading import load_plan

            names = [w.name for w in load_plan(plan, list(catalog or [])).plan.workloads]
            raise PlanError(Problem("which workload to explain?", f"give --workload NAME, one of: {', '.join(names)}",
                                    file=str(plan)))
        opts = solve_options(solver, time_limit)
        with _progress(not as_json) as progress:
            ex = do_explain(plan, workload, opts, count, list(catalog or []), carry=carry, on_progress=progress)
        for note in ex.result.carried.notes if ex.result and ex.result.carried else []:
            err.print(f"[yellow]note:[/yellow] {escape(note)}")
        if as_json:
            from dataclasses import asdict

            from optimizer.results.jsonio import derivation_json

            sys.stdout.write(json.dumps({
                "workload": workload, "chosen": ex.result.workload(workload).key if ex.result else None,
                "total_cost": round(ex.result.cost_total, 6) if ex.result else None,
                "unreachable": ex.unreachable,
                "peak_derivation": derivation_json(ex.result.workload(workload).peak_derivation) if ex.result else None,
                "alternatives": [asdict(a) for a in ex.alternatives],
                **({"sharing": ex.sharing} if ex.sharing else {}),
                "dropped": [asdict(d) for d in ex.dropped]}, indent=2, ensure_ascii=False) + "\n")
            return 0
        if ex.result is None:
            out.print(f"[bold]{escape(workload)}[/bold]: no config meets its SLO")
            out.print(f"  {escape(ex.unreachable or '')}")
            _print_dropped(ex.dropped, everything=True)
            return 0
        w = ex.result.workload(workload)
        cur = ex.result.currency
        choice = vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout,
                                    shared=w.shared)
        out.print(f"[bold]{escape(workload)}[/bold]: {escape(choice)}")
        if w.peak_derivation is not None:
            out.print(f"  {escape(w.peak_derivation.text())}")
            for note in ex.result.notes:
                if note.startswith(f"{workload}: demand."):
                    err.print(f"[yellow]warning:[/yellow] {escape(note)}")
        if w.kind == "interactive" and w.offer:
            gpr = w.gpus_per_replica
            per = f"{gpr:g} GPU" + ("" if gpr == 1 else "s") + " per replica"
            copies = (f" ({w.kv_copies:g} copies: {w.kv_gb_per_seq / w.kv_copies:.3f} GB each)" if w.kv_copies > 1
                      else "")
            calib = "" if not rests_on_unvalidated(w) else f"; {evidence_reason(w)}"
            if w.goodput_source == "estimated" and ex.result.policy.get("estimate_error") == "headroom":
                calib += "; planned at the held-out P10 of the estimate (policy.estimate_error)"
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
                      f"{r.base} base + {r.spares} spare + {r.rollout} rollout = {formatting.plural(r.total, 'replica')}"
                      f"{_on_gpus(w)}")
            if w.split:  # split: by_size — every config that serves, its share of each size class's requests
                how = " by request size" if len(w.size_classes) > 1 else ""
                out.print(f"  split{how} among its configs (share of each class's requests; goodput per "
                          "replica at each class's sizes, tok/s):")
                if w.size_classes:
                    out.print("    size classes (requests · input→output tokens): " + size_classes_text(w))
                for label, shares in w.split.items():
                    goodput = " / ".join(f"{g:,.0f}" for g in w.split_goodput.get(label, []))
                    x = w.split_configs.get(label)
                    out.print(f"    {escape(label)}: " + " / ".join(f"{z:.0%}" for z in shares)
                              + f"; {w.split_gpus_at_peak.get(label, 0):,} GPUs at the peak; goodput {goodput}"
                              + (f"; {money(x.cost, cur)}" if x is not None else ""))
            for g in ex.result.shared_gpus:  # the group it shares GPUs with
                if any(m.workload == workload for m in g.members):
                    out.print(f"  shares GPUs: {escape(shared_lines(replace(ex.result, shared_gpus=[g]))[0])}")
        out.print(f"  plan total {money(ex.result.cost_total, cur)}; this workload {money(w.cost, cur)}")
        if ex.sharing:
            out.print(f"  {escape(ex.sharing)}")
        t = Table(title="Alternatives, cheapest on their own first (whole plan re-solved with each forced)",
                  title_justify="left", show_edge=False)
        for col in ("config", "goodput tok/s", "source", "peak GPUs", "plan total", "difference", "note"):
            t.add_column(col, overflow=overflow(col), justify="left" if col in ("config", "source", "") else "right")
        for a in ex.alternatives:
            t.add_row(a.label, *alternative_figures(w.kind, a.goodput_output_tokens_per_s, a.goodput_source,
                                                    a.gpus_at_peak),
                      _total_text(a, cur), _difference_text(a, ex.result.cost_total, cur),
                      "" if a.proven or a.total_cost is None else "range: search stopped short")
        if ex.alternatives:
            out.print(t)
        elif count == 0:
            out.print("  no alternative re-solved (--top 0)")
        else:
            out.print("  no other config to compare: every other option was dropped before solving (below)"
                      if ex.dropped else "  no other config to compare: this is the only option the plan allows")
        _print_dropped(ex.dropped)
        return 0

    run(body, debug)


def _total_text(a, cur: str) -> str:
    from optimizer.formatting import money

    if a.total_cost is None:
        return "no plan"
    if a.proven or a.bound is None:
        return money(a.total_cost, cur)
    return f"{money(a.bound, cur)} – {money(a.total_cost, cur)}"


def _difference_text(a, plan_total: float, cur: str) -> str:
    from optimizer.formatting import money

    def signed(x: float) -> str:
        return ("+" if x >= 0 else "−") + money(abs(x), cur)

    if a.total_cost is None:
        return escape(a.note[:60])
    if a.proven or a.bound is None:
        return signed(a.total_cost - plan_total)
    return f"{signed(a.bound - plan_total)} to {signed(a.total_cost - plan_total)}"


class _progress:
    """A progress bar and a line per re-solved alternative on stderr, while explain works (a terminal only)."""

    def __init__(self, show: bool) -> None:
        self.show = show and err.is_terminal
        self.bar = None

    def __enter__(self):
        if not self.show:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("re-solving alternatives"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                            TimeElapsedColumn(), console=err, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("", total=None)
        return self.step

    def step(self, i: int, n: int, a) -> None:
        self.bar.update(self.task, completed=i, total=n)
        diff = "no plan" if a.difference is None else (("+" if a.difference >= 0 else "−") + f"{abs(a.difference):,.0f}")
        self.bar.console.print(f"  [{i}/{n}] {escape(a.label)}: {diff}{'' if a.proven else ' (at most)'}"
                               f" in {a.seconds:.1f} s")

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def _print_dropped(dropped, everything: bool = False) -> None:
    """The options dropped before solving, with why; dominated ones only counted (unless everything)."""
    from optimizer.report.console import overflow

    shown = [x for x in dropped if everything or x.family != "dominated"]
    if shown:
        d = Table(title="Tried and dropped before solving" if everything else "Dropped before solving",
                  title_justify="left", show_edge=False)
        d.add_column("option", overflow=overflow("option"))
        d.add_column("why")
        d.add_column("detail")
        for x in shown:
            d.add_row(escape(x.option), x.family, escape(x.reason))
        out.print(d)
    dominated = len(dropped) - len(shown)
    if dominated:
        out.print(f"{formatting.plural(dominated, 'dominated option')} (another config or offer is never worse) "
                  "not listed; --json lists every one", style="dim")


def _on_gpus(w) -> str:
    """' on 3g.40gb MIG slices (2 per GPU) = 2 GPUs', ' × 2 GPUs = 30 GPUs' or ' = 4 GPUs'."""
    gpus = formatting.plural(w.gpus_at_peak, "GPU")
    if w.mig:
        return f" on {w.mig} MIG slices = {gpus}"
    if w.gpus_per_replica and w.gpus_per_replica != 1:
        return f" × {w.gpus_per_replica:g} GPUs = {gpus}"
    return f" = {gpus}"
