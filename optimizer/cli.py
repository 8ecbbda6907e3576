"""`planopt`: the command line. The only module that prints and picks exit codes.

Exit codes: 0 solved; 1 no plan meets the constraints; 2 invalid input; 3 solver failure.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from optimizer import vocab
from optimizer.errors import InfeasiblePlan, PlanError, Problem, SolverError

app = typer.Typer(
    name="planopt",
    help="Capacity planner for self-hosted LLM inference: does it fit, how many, how to pay.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

out = Console(highlight=False, soft_wrap=False, width=140)
err = Console(stderr=True, highlight=False, soft_wrap=True)

CatalogOpt = Annotated[Optional[list[Path]], typer.Option(
    "--catalog", help="Extra catalog YAML (repeatable); same ids override the built-in entries.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]


class SolverName(str, Enum):
    highs = "highs"
    cbc = "cbc"


class CatalogSection(str, Enum):
    accelerators = "accelerators"
    models = "models"
    precisions = "precisions"
    offers = "offers"


def _run(fn: Callable[[], int | None], debug: bool) -> None:
    """Run a command body; map planopt's errors to messages and exit codes, never tracebacks."""
    try:
        code = fn() or 0
    except PlanError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {_escape(str(p))}")
        n = len(exc.problems)
        if n > 1:
            err.print(f"{n} problems; nothing was written")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(2) from None
    except InfeasiblePlan as exc:
        err.print("[red]no plan meets the constraints:[/red]")
        for r in exc.reasons:
            err.print(f"  - {_escape(r)}")
        err.print("raise the caps (available_gpus), allow more offers or tiers, or allow API overflow")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(1) from None
    except SolverError as exc:
        err.print(f"[red]solver failure:[/red] {_escape(str(exc))}")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(3) from None
    except KeyboardInterrupt:
        err.print("interrupted; nothing was written")
        raise typer.Exit(130) from None
    raise typer.Exit(code)


def _escape(s: str) -> str:
    from rich.markup import escape

    return escape(s)


def _failure_json(plan_path: Path, exc: Exception) -> dict:
    """What `solve --json` prints when no plan is returned (exit 1 or 3)."""
    name, currency, horizon = plan_path.stem, "USD", None
    try:
        from optimizer.inputs.loading import load_plan

        loaded = load_plan(plan_path)
        name, currency, horizon = loaded.plan.plan, loaded.plan.currency, loaded.plan.horizon_days
    except PlanError:
        pass
    infeasible = isinstance(exc, InfeasiblePlan)
    return {"plan": name, "status": "infeasible" if infeasible else "error", "currency": currency,
            "horizon_days": horizon, "cost": None, "workloads": [], "purchases": [],
            "solver": None, "reasons": exc.reasons if infeasible else [str(exc)]}  # type: ignore[attr-defined]


def _slug(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-") or "plan"


# ---------------------------------------------------------------------------------------------

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
        opts = SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit)
        last = None
        if baseline is not None:
            from optimizer.results.baseline import load_baseline

            last = load_baseline(baseline)
        try:
            result = solve_plan(plan, opts, list(catalog or []), baseline=last)
        except (InfeasiblePlan, SolverError) as exc:
            if as_json:  # the contract's "infeasible" / "error" object; the exit code follows
                sys.stdout.write(json.dumps(_failure_json(plan, exc), indent=2, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            raise
        text = dumps(result)
        written = _write_reports(result, outdir, _slug(plan), text)
        if as_json:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            print_result(result, out)
            out.print(f"\nwrote {', '.join(str(p) for p in written)}", style="dim")
        for note in result.notes + (result.baseline.notes if result.baseline else []):
            err.print(f"[yellow]warning:[/yellow] {_escape(note)}")
        return 0

    _run(body, debug)


def _write_reports(result, outdir: Path, name: str, json_text: str | None) -> list[Path]:
    from optimizer.report.files import write_reports

    try:
        return write_reports(result, outdir, name, json_text)
    except OSError as exc:
        raise PlanError(Problem(f"cannot write the result files: {exc.strerror or exc}",
                                "choose a writable --outdir", file=str(outdir))) from None


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
        written = _write_reports(result, outdir if outdir is not None else result_file.parent, _slug(result_file), None)
        out.print(f"wrote {', '.join(str(p) for p in written)}", style="dim")
        return 0

    _run(body, debug)


@app.command()
def explain(
    plan: Annotated[Path, typer.Argument(help="The plan YAML.")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="The workload to explain.")],
    count: Annotated[int, typer.Option(help="How many alternatives to re-solve.")] = 6,
    solver: Annotated[Optional[SolverName], typer.Option(help="Override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Why this config: the choice, the next best alternatives with their cost difference, and what was dropped."""

    def body() -> int:
        from optimizer.pipeline import SolveOptions
        from optimizer.pipeline import explain as do_explain
        from optimizer.vocab import money

        opts = SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit)
        ex = do_explain(plan, workload, opts, count, list(catalog or []))
        w = ex.result.workload(workload)
        cur = ex.result.currency
        if as_json:
            from dataclasses import asdict

            sys.stdout.write(json.dumps({
                "workload": workload, "chosen": w.key, "total_cost": round(ex.result.cost_total, 6),
                "alternatives": [asdict(a) for a in ex.alternatives],
                "dropped": [asdict(d) for d in ex.dropped]}, indent=2, ensure_ascii=False) + "\n")
            return 0
        choice = vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak, layout=w.layout)
        out.print(f"[bold]{_escape(workload)}[/bold]: {_escape(choice)}")
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
                      f"{r.base} base + {r.spares} spare + {r.rollout} rollout = {r.total} replicas = {w.gpus_at_peak} GPUs")
        out.print(f"  plan total {money(ex.result.cost_total, cur)}; this workload {money(w.cost, cur)}")
        t = Table(title="Next best configs (whole plan re-solved with each forced)", title_justify="left", show_edge=False)
        for col in ("config", "goodput tok/s", "source", "peak GPUs", "plan total", "difference"):
            t.add_column(col, justify="left" if col in ("config", "source") else "right")
        for a in ex.alternatives:
            t.add_row(a.label, f"{a.goodput_output_tokens_per_s:,.0f}", a.goodput_source, str(a.gpus_at_peak),
                      money(a.total_cost, cur) if a.total_cost is not None else "no plan",
                      ("+" + money(a.difference, cur)) if a.difference is not None else _escape(a.note[:60]))
        out.print(t)
        shown = [x for x in ex.dropped if x.family != "dominated"]
        if shown:
            d = Table(title="Dropped before solving", title_justify="left", show_edge=False)
            d.add_column("option")
            d.add_column("why")
            d.add_column("detail")
            for x in shown:
                d.add_row(_escape(x.option), x.family, _escape(x.reason))
            out.print(d)
        dominated = len(ex.dropped) - len(shown)
        if dominated:
            out.print(f"{dominated} dominated options (another config or offer is never worse) are not listed; "
                      "--json lists every one", style="dim")
        return 0

    _run(body, debug)


@app.command()
def fit(
    model: Annotated[str, typer.Option(help="Model id, e.g. llama-3.1-70b.")],
    accelerator: Annotated[str, typer.Option(help="Accelerator id, e.g. h100-sxm.")],
    precision: Annotated[str, typer.Option(help="bf16, fp16, fp8, int8, int4-awq, w8a16, fp4 or mxfp4.")] = "bf16",
    tp: Annotated[int, typer.Option(help="Tensor-parallel GPUs (of attention, with --ep).")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline stages.")] = 1,
    ep: Annotated[int, typer.Option(help="MoE: GPUs the experts spread over, attention data-parallel.")] = 1,
    context_tokens: Annotated[int, typer.Option("--context-tokens", help="Working context per sequence.")] = 8192,
    concurrency: Annotated[Optional[int], typer.Option(help="Sequences the replica must hold at once.")] = None,
    memory_reserve: Annotated[float, typer.Option("--memory-reserve", help="Share kept for activations and buffers.")] = 0.10,
    kv_precision: Annotated[Optional[str], typer.Option("--kv-precision", help="KV datatype (default: the precision's).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Does the model fit: weights + KV cache for the concurrency + reserve."""

    def body() -> int:
        from optimizer.physics import memory

        _check_sizing_flags(tp, context_tokens, memory_reserve, concurrency, pp, ep)
        m, a, p, est = _lookup(catalog, model, accelerator, precision)
        layout = _layout(a, tp, pp, ep)
        kv_elem = _kv_elem(kv_precision)
        f = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, layout.gpus, context_tokens, memory_reserve, kv_elem,
                       attention_tp=layout.tp, runtime_gb_per_gpu=est.runtime_gb)
        need = concurrency or 1
        ok = f.fits(need)
        if as_json:
            sys.stdout.write(json.dumps({
                "weights_gb": f.weights_gb, "kv_gb_per_seq": f.kv_gb_per_seq, "kv_copies": f.kv_copies,
                "total_gb": f.total_gb, "reserve_gb": f.reserve_gb, "usable_gb": f.usable_gb, "free_gb": f.free_gb,
                "kv_concurrency": f.kv_concurrency, "needed_concurrency": need, "fits": ok,
                "layout": layout.label, "gpus": layout.gpus}, indent=2) + "\n")
            return 0
        out.print(f"[bold]{m.name or m.id}[/bold] at {p.id} on {layout.gpus} × {a.name or a.id} ({layout.label})")
        t = Table(show_header=False, show_edge=False)
        t.add_column()
        t.add_column(justify="right")
        t.add_row(f"device memory ({a.memory_bytes_per_gpu / 1e9:,.1f} GB per GPU as the driver reports it)",
                  f"{f.total_gb:,.1f} GB")
        t.add_row(f"reserve ({memory_reserve:.0%}, at least {est.runtime_gb:g} GB per GPU)", f"{f.reserve_gb:,.1f} GB")
        t.add_row("weights", f"{f.weights_gb:,.1f} GB")
        t.add_row("free for KV cache", f"{f.free_gb:,.1f} GB")
        copies = f" (× {f.kv_copies:g} copies: the MLA latent on every GPU)" if f.kv_copies > 1 and m.attention == "mla" \
            else (f" (× {f.kv_copies:g} copies: more GPUs than KV heads)" if f.kv_copies > 1 else "")
        t.add_row(f"KV per sequence ({context_tokens:,} tokens){copies}", f"{f.kv_gb_per_seq:,.3f} GB")
        t.add_row("sequences that fit", f"{f.kv_concurrency:,}")
        out.print(t)
        if ok:
            out.print(f"[green]fits[/green]: {f.kv_concurrency} sequences ≥ {need} needed")
            return 0
        if f.free_gb <= 0:
            out.print("[red]does not fit[/red]: the weights alone exceed usable memory — "
                      "quantize further or add GPUs per replica (--tp, --pp, --ep)")
        else:
            out.print(f"[red]does not fit[/red]: {f.kv_concurrency} sequences < {need} needed — "
                      "quantize, shorten the context, or add GPUs per replica (--tp, --pp, --ep)")
        return 1

    _run(body, debug)


@app.command()
def estimate(
    model: Annotated[str, typer.Option(help="Model id.")],
    accelerator: Annotated[str, typer.Option(help="Accelerator id.")],
    precision: Annotated[str, typer.Option(help="Precision id.")] = "bf16",
    tp: Annotated[int, typer.Option(help="Tensor-parallel GPUs (of attention, with --ep).")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline stages.")] = 1,
    ep: Annotated[int, typer.Option(help="MoE: GPUs the experts spread over, attention data-parallel.")] = 1,
    input_tokens: Annotated[int, typer.Option("--input-tokens", help="Mean input tokens per request.")] = 1000,
    output_tokens: Annotated[int, typer.Option("--output-tokens", help="Mean output tokens per request.")] = 200,
    ttft_ms: Annotated[Optional[float], typer.Option("--ttft-ms", help="TTFT target at the percentile.")] = None,
    tpot_ms: Annotated[Optional[float], typer.Option("--tpot-ms", help="TPOT target at the percentile.")] = None,
    percentile: Annotated[float, typer.Option("--percentile", help="The percentile TTFT and TPOT hold at.")] = 99.0,
    occupancy: Annotated[float, typer.Option("--occupancy", help="The replica's planned load, as a share of its goodput: TTFT is also shown there.")] = 0.6,
    context_tokens: Annotated[Optional[int], typer.Option("--context-tokens", help="KV sizing context (default input + output).")] = None,
    memory_reserve: Annotated[float, typer.Option("--memory-reserve")] = 0.10,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Estimated goodput at an SLO (without SLO flags: the maximum throughput), what bounds it, and
    the TTFT at the replica's planned load."""

    def body() -> int:
        from optimizer.physics import memory, roofline
        from optimizer.physics.layout import links

        ctx = context_tokens or (input_tokens + output_tokens)
        _check_sizing_flags(tp, ctx, memory_reserve, None, pp, ep)
        problems = []
        if input_tokens < 1 or output_tokens < 1:
            problems.append(Problem("--input-tokens and --output-tokens must be ≥ 1", None))
        for name, v in (("--ttft-ms", ttft_ms), ("--tpot-ms", tpot_ms)):
            if v is not None and v <= 0:
                problems.append(Problem(f"{name} must be > 0", "give milliseconds, e.g. 50"))
        if not 50 <= percentile < 100:
            problems.append(Problem(f"--percentile {percentile:g} is outside [50, 100)", "e.g. 99 for p99"))
        if not 0 < occupancy <= 1:
            problems.append(Problem(f"--occupancy {occupancy:g} is outside (0, 1]", "e.g. 0.6"))
        if problems:
            raise PlanError(problems)
        m, a, p, est = _lookup(catalog, model, accelerator, precision)
        why = roofline.why_not_native(p, a)
        if why:
            raise PlanError(Problem(why, "choose a precision with kernels on the accelerator, or a weight-only one"))
        layout = _layout(a, tp, pp, ep)
        f = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, layout.gpus, ctx, memory_reserve,
                       attention_tp=layout.tp, runtime_gb_per_gpu=est.runtime_gb)
        if f.kv_concurrency < 1:
            raise PlanError(Problem(f"does not fit: weights {f.weights_gb:.1f} GB, usable {f.usable_gb:.1f} GB",
                                    "quantize, or add GPUs per replica (--tp, --pp, --ep)"))
        link = links(a, layout, est)
        try:
            e = roofline.estimate(m, p, a, layout, input_tokens, output_tokens, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                                  percentile=percentile, params=est, max_batch=f.kv_concurrency, link=link)
            rl = roofline.roofline(m, p, a, layout, input_tokens, output_tokens, params=est, link=link)
        except ValueError as exc:
            raise PlanError(Problem(str(exc), "give the accelerator bandwidth_tb_s and tflops_dense")) from None
        load_batch = rl.batch_at_throughput(occupancy * e.raw_goodput_output_tokens_per_s, max(e.batch, 1))
        at_load = rl.ttft_s(load_batch, percentile) * 1e3 if e.batch else None
        pw = f"p{percentile:g}"
        res = {"weights_gb": round(f.weights_gb, 6), "kv_gb_per_seq": round(f.kv_gb_per_seq, 6),
               "kv_copies": f.kv_copies, "kv_concurrency": f.kv_concurrency, "batch": e.batch,
               "ttft_ms": round(e.ttft_ms, 3), "tpot_ms": round(e.tpot_ms, 3),
               "goodput_output_tokens_per_s": round(e.goodput_output_tokens_per_s, 3), "bound": e.bound,
               "percentile": percentile, "layout": layout.label, "gpus": layout.gpus,
               "ttft_at_load_ms": None if at_load is None else round(at_load, 3), "occupancy": occupancy,
               "calibrated": e.calibrated, "group": e.group,
               "roofline_goodput_output_tokens_per_s": round(e.raw_goodput_output_tokens_per_s, 3)}
        if as_json:
            sys.stdout.write(json.dumps(res, indent=2) + "\n")
            return 0
        out.print(f"[bold]{m.name or m.id}[/bold] at {p.id} on {layout.gpus} × {a.name or a.id} ({layout.label}), "
                  f"{input_tokens} in / {output_tokens} out")
        t = Table(show_header=False, show_edge=False)
        t.add_column()
        t.add_column(justify="right")
        rows = [("weights GB", res["weights_gb"]), ("KV GB per sequence" + (f" ({f.kv_copies:g} copies)"
                                                                            if f.kv_copies > 1 else ""),
                                                      res["kv_gb_per_seq"]),
                ("sequences that fit", res["kv_concurrency"]), ("batch at the SLO", res["batch"]),
                (f"{pw} TTFT ms at that batch (queueing included)", res["ttft_ms"]), (f"{pw} TPOT ms", res["tpot_ms"]),
                ("goodput output tok/s", res["goodput_output_tokens_per_s"]), ("bound by", res["bound"])]
        if at_load is not None:
            rows.append((f"{pw} TTFT ms at the planned load ({occupancy:.0%} of goodput)", round(at_load, 3)))
        for label, v in rows:
            t.add_row(label, f"{v:,.2f}" if isinstance(v, float) else str(v))
        out.print(t)
        if not e.calibrated:
            out.print(f"[yellow]no published result calibrated {e.group}[/yellow]: the goodput keeps "
                      f"{est.uncalibrated_headroom:.0%} of the roofline's "
                      f"({e.raw_goodput_output_tokens_per_s:,.0f} tok/s) — measure it and give it in the plan")
        if e.batch == 0:
            out.print("[red]the SLO cannot be met even at batch 1[/red]")
        return 0

    _run(body, debug)


@app.command("catalog")
def catalog_cmd(
    section: Annotated[CatalogSection, typer.Argument(help="accelerators, models, precisions or offers")],
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list of objects, each with id and name.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """List the catalog: what planopt knows about accelerators, models, precisions and offers."""

    def body() -> int:
        from optimizer.inputs.catalog import load_catalog

        cat = load_catalog(catalog or [])
        entries = [getattr(cat, section.value)[k] for k in sorted(getattr(cat, section.value))]
        if as_json:
            rows = []
            for e in entries:
                d = e.model_dump(mode="json", exclude_none=True)
                d["name"] = d.get("name") or (f"{e.provider} {e.accelerator} {e.region}" if section.value == "offers" else e.id)
                rows.append({"id": d.pop("id"), "name": d.pop("name"), **d})
            sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
            return 0
        t = Table(title=f"{section.value} ({len(entries)})", title_justify="left", show_edge=False)
        cols = {
            "accelerators": [("id", "id"), ("name", "name"), ("memory GB", "memory_gb"), ("TB/s", "bandwidth_tb_s"),
                             ("bf16 TF", "tflops_dense.bf16"), ("fp8 TF", "tflops_dense.fp8"),
                             ("fp4 TF", "tflops_dense.fp4"), ("scale-up", "scale_up_gpus"), ("cooling", "cooling"),
                             ("MIG", "mig_profiles"), ("status", "status")],
            "models": [("id", "id"), ("name", "name"), ("params B", "params_b"), ("active B", "active_params_b"),
                       ("layers", "layers"), ("kv heads", "kv_heads"), ("attention", "attention"),
                       ("context", "max_context")],
            "precisions": [("id", "id"), ("bytes/param", "bytes_per_param"), ("compute", "compute_dtype"),
                           ("weight-only", "weight_only"), ("KV bytes", "kv_bytes_per_elem"), ("native on", "native_on")],
            "offers": [("id", "id"), ("provider", "provider"), ("accelerator", "accelerator"), ("region", "region"),
                       ("GPUs/node", "gpus_per_node"), ("on-demand", "price:on-demand"),
                       ("reserved-1y", "price:reserved-1y"), ("reserved-3y", "price:reserved-3y"),
                       ("spot", "price:spot")],
        }[section.value]
        for label, _ in cols:
            t.add_column(label)
        for e in entries:
            t.add_row(*[_cell(e, path) for _, path in cols])
        out.print(t)
        return 0

    _run(body, debug)


def _cell(entry, path: str) -> str:
    if path.startswith("price:"):
        tier = path.split(":", 1)[1]
        p = entry.price(tier)
        return "–" if p is None else (f"{p:.2f}*" if entry.estimated(tier) else f"{p:.2f}")
    v = entry
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else getattr(v, part, None)
    if v is None:
        return "–"
    if isinstance(v, list):
        if v and hasattr(v[0], "name"):
            return str(len(v))
        return ", ".join(str(x) for x in v) or "–"
    if isinstance(v, float):
        return f"{v:g}"
    return _escape(str(v))


def _lookup(catalog: list[Path] | None, model: str, accelerator: str, precision: str):
    """Model, accelerator, precision and estimator efficiencies from the catalogs."""
    from optimizer.inputs.catalog import load_catalog

    cat = load_catalog(catalog or [])
    return cat.model(model), cat.accelerator(accelerator), cat.precision(precision), cat.estimator


def _layout(acc, tp: int, pp: int, ep: int):
    """The layout the flags ask for; TP within the scale-up domain (or a machine of 8 over PCIe)."""
    from optimizer.physics.layout import Layout

    limit = acc.scale_up_gpus if acc.topology != "pcie" else max(acc.scale_up_gpus, 8)
    if tp > limit:
        raise PlanError(Problem(f"--tp {tp} is beyond the scale-up domain of {acc.id} ({limit} GPUs)",
                                f"use --tp {limit} or less, and --pp or --ep for more GPUs"))
    if ep > 1:
        if ep % tp:
            raise PlanError(Problem(f"--ep {ep} is not a multiple of --tp {tp}", "the experts spread over tp × dp GPUs"))
        return Layout("ep", tp=tp, dp=ep // tp, pp=pp)
    return Layout("pp" if pp > 1 else "tp", tp=tp, pp=pp)


def _kv_elem(kv_precision: str | None) -> float | None:
    if kv_precision is None:
        return None
    table = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
    if kv_precision not in table:
        raise PlanError(Problem(f"unknown KV precision '{kv_precision}'", f"use one of {', '.join(table)}"))
    return table[kv_precision]


def _check_sizing_flags(tp: int, context_tokens: int, memory_reserve: float, concurrency: int | None,
                        pp: int = 1, ep: int = 1) -> None:
    problems = []
    for flag, v in (("--tp", tp), ("--pp", pp), ("--ep", ep)):
        if v < 1 or v & (v - 1):
            problems.append(Problem(f"{flag} {v} is not a power of two", "use 1, 2, 4, 8, …"))
    if context_tokens < 1:
        problems.append(Problem("--context-tokens must be ≥ 1", None))
    if not 0 <= memory_reserve < 1:
        problems.append(Problem(f"--memory-reserve {memory_reserve} is outside [0, 1)", "e.g. 0.10"))
    if concurrency is not None and concurrency < 1:
        problems.append(Problem("--concurrency must be ≥ 1", None))
    if problems:
        raise PlanError(problems)


# --- calibrate and compare (the planning loop) --------------------------------------------------

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
    workload: Annotated[Optional[str], typer.Option("--workload", help="Load tests without metadata: the workload.")] = None,
    max_bad_rows: Annotated[int, typer.Option("--max-bad-rows", help="Leave out up to this many bad usage rows instead of stopping.")] = 0,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Feed real usage and load tests back into the plan: demand, token means and measured goodput."""

    def body() -> int:
        from optimizer.calibrate.loadtests import Flags
        from optimizer.calibrate.run import CalibrateOptions, write_outputs
        from optimizer.calibrate.run import calibrate as do_calibrate
        from optimizer.calibrate.usage import total_bytes
        from optimizer.report.calibration import print_calibration, render_html

        opts = CalibrateOptions(
            usage=tuple(usage or ()), bench=tuple(bench or ()), result=result, maps=tuple(maps or ()),
            peak_percentile=peak_percentile, slo_percentile=percentile,
            flags=Flags(accelerator, precision, tp, workload), max_bad_rows=max_bad_rows)
        show = err.is_terminal and total_bytes(list(opts.usage)) >= PROGRESS_MIN_BYTES
        if show:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("reading usage"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                          TimeElapsedColumn(), console=err, transient=True) as bar:
                task = bar.add_task("usage", total=1.0)
                cal = do_calibrate(plan, opts, out_yaml, lambda f: bar.update(task, completed=f), list(catalog or []))
        else:
            cal = do_calibrate(plan, opts, out_yaml, None, list(catalog or []))
        html_path = write_outputs(cal, out_yaml, render_html(cal), list(catalog or []))
        print_calibration(cal, out)
        out.print(f"\nwrote {out_yaml} and {html_path}", style="dim")
        return 0

    _run(body, debug)


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="Plan YAML or result JSON (before).")],
    b: Annotated[Path, typer.Argument(help="Plan YAML or result JSON (after).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as one JSON object, nothing else.")] = False,
    solver: Annotated[Optional[SolverName], typer.Option(help="For plans: override policy.solver.")] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help="For plans: seconds per solve.")] = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Two plans or two results side by side: cost by tier, each workload's choice and replicas, new and removed."""

    def body() -> int:
        from optimizer.pipeline import SolveOptions, load_side
        from optimizer.report.calibration import print_comparison
        from optimizer.results.compare import compare as do_compare

        if time_limit is not None and time_limit <= 0:
            raise PlanError(Problem("--time-limit must be > 0", "give seconds, e.g. --time-limit 60"))
        opts = SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit)
        ra, ka = load_side(a, opts, list(catalog or []))
        rb, kb = load_side(b, opts, list(catalog or []))
        cmp = do_compare(ra, rb, str(a), str(b), ka, kb)
        if as_json:
            sys.stdout.write(json.dumps(cmp.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            sys.stdout.flush()
        else:
            print_comparison(cmp, out)
        return 0

    _run(body, debug)


def main() -> None:  # pragma: no cover - console script entry
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
