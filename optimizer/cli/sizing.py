"""fit, estimate, catalog: the physics and the catalogs one question at a time, without a plan."""

from __future__ import annotations

import json
import math
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from optimizer.cli.common import CatalogOpt, DebugOpt, app, err, escape, out, run
from optimizer.cli.complete import catalog_ids
from optimizer.errors import PlanError, Problem


class CatalogSection(str, Enum):
    accelerators = "accelerators"
    models = "models"
    precisions = "precisions"
    offers = "offers"
    systems = "systems"
    engines = "engines"


# What fit and estimate both ask: one model on one accelerator, at a precision and a layout.
ModelOpt = Annotated[str, typer.Option(help="Model id, e.g. llama-3.1-70b.", autocompletion=catalog_ids("models"))]
AcceleratorOpt = Annotated[str, typer.Option(help="Accelerator id, e.g. h100-sxm.",
                                             autocompletion=catalog_ids("accelerators"))]
PrecisionOpt = Annotated[str, typer.Option(help="bf16, fp16, fp8, int8, int4-awq, w8a16, fp4 or mxfp4.",
                                           autocompletion=catalog_ids("precisions"))]
TpOpt = Annotated[int, typer.Option(help="Tensor-parallel GPUs (of attention, with --ep).")]
PpOpt = Annotated[int, typer.Option(help="Pipeline stages.")]
EpOpt = Annotated[int, typer.Option(help="MoE: GPUs the experts spread over, attention data-parallel.")]
KvPrecisionOpt = Annotated[Optional[str], typer.Option("--kv-precision",
                                                       help="KV datatype (default: the precision's).")]


@app.command()
def fit(
    model: ModelOpt,
    accelerator: AcceleratorOpt,
    precision: PrecisionOpt = "bf16",
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    context_tokens: Annotated[int, typer.Option("--context-tokens", help="Working context per sequence.")] = 8192,
    concurrency: Annotated[Optional[int], typer.Option(help="Sequences the replica must hold at once.")] = None,
    memory_reserve: Annotated[float, typer.Option("--memory-reserve", help="Share kept for activations and buffers.")] = 0.10,
    kv_precision: KvPrecisionOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Does the model fit: weights + KV cache for the concurrency + reserve."""

    def body() -> int:
        from optimizer.physics import memory

        _check_sizing_flags(tp, context_tokens, memory_reserve, concurrency, pp, ep)
        m, a, p, est = _lookup(catalog, model, accelerator, precision)
        layout = _layout(a, tp, pp, ep, m)
        kv_elem = _kv_elem(kv_precision)
        _warn_context(m, context_tokens)
        f = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, layout.gpus, context_tokens, memory_reserve, kv_elem,
                       attention_tp=layout.tp, runtime_gb_per_gpu=est.runtime_gb, dense_copies=layout.dp)
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
        t.add_row("weights" + (f" (all but the routed experts × {layout.dp}: one copy per attention group)"
                               if layout.dp > 1 else ""), f"{f.weights_gb:,.1f} GB")
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

    run(body, debug)


@app.command()
def estimate(
    model: ModelOpt,
    accelerator: AcceleratorOpt,
    precision: PrecisionOpt = "bf16",
    tp: TpOpt = 1,
    pp: PpOpt = 1,
    ep: EpOpt = 1,
    input_tokens: Annotated[int, typer.Option("--input-tokens", help="Mean input tokens per request.")] = 1000,
    output_tokens: Annotated[int, typer.Option("--output-tokens", help="Mean output tokens per request.")] = 200,
    ttft_ms: Annotated[Optional[float], typer.Option("--ttft-ms", help="TTFT target at the percentile.")] = None,
    tpot_ms: Annotated[Optional[float], typer.Option("--tpot-ms", help="TPOT target at the percentile.")] = None,
    percentile: Annotated[float, typer.Option("--percentile", help="The percentile TTFT and TPOT hold at.")] = 99.0,
    occupancy: Annotated[float, typer.Option("--occupancy", help="The replica's planned load, as a share of its goodput: TTFT is also shown there.")] = 0.6,
    context_tokens: Annotated[Optional[int], typer.Option("--context-tokens", help="KV sizing context (default input + output).")] = None,
    memory_reserve: Annotated[float, typer.Option("--memory-reserve", help="Share kept for activations and buffers.")] = 0.10,
    kv_precision: KvPrecisionOpt = None,
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
            if v is not None and not 0 < v < math.inf:  # nan too: it would read as no target
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
        layout = _layout(a, tp, pp, ep, m)
        kv_elem = _kv_elem(kv_precision)
        _warn_context(m, ctx)
        f = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, layout.gpus, ctx, memory_reserve, kv_elem,
                       attention_tp=layout.tp, runtime_gb_per_gpu=est.runtime_gb, dense_copies=layout.dp)
        if f.kv_concurrency < 1:
            raise PlanError(Problem(f"does not fit: weights {f.weights_gb:.1f} GB + one sequence's KV "
                                    f"{f.kv_gb_per_seq:,.2f} GB ({ctx:,} tokens) > usable {f.usable_gb:.1f} GB",
                                    "quantize, shorten the context, or add GPUs per replica (--tp, --pp, --ep)"))
        link = links(a, layout, est)
        try:
            e = roofline.estimate(m, p, a, layout, input_tokens, output_tokens, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                                  percentile=percentile, params=est, max_batch=f.kv_concurrency, link=link,
                                  kv_bytes_per_elem=kv_elem)
            rl = roofline.roofline(m, p, a, layout, input_tokens, output_tokens, params=est, link=link,
                                   kv_bytes_per_elem=kv_elem)
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

    run(body, debug)


@app.command("catalog")
def catalog_cmd(
    section: Annotated[CatalogSection, typer.Argument(help="accelerators, models, precisions, offers or systems")],
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list of objects, each with id and name.")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """List the catalog: what planopt knows about accelerators, models, precisions, offers and systems to buy."""

    def body() -> int:
        from optimizer.inputs.catalog import load_catalog
        from optimizer.report.console import overflow

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
            "systems": [("id", "id"), ("accelerator", "accelerator"), ("GPUs", "gpus_per_node"), ("unit", "unit"),
                        ("price USD", "price:node"), ("kW", "node_power_kw"), ("lead days", "lead_time_days"),
                        ("liquid", "liquid_cooling")],
            "engines": [("id", "id"), ("name", "name"), ("runs on", "runs_on"), ("parallelism", "parallelism")],
        }[section.value]
        for label, _ in cols:
            t.add_column(label, overflow=overflow(label))
        for e in entries:
            t.add_row(*[_cell(e, path) for _, path in cols])
        out.print(t)
        return 0

    run(body, debug)


def _cell(entry, path: str) -> str:
    if path == "price:node":  # a system to buy: USD per server or rack
        return f"{entry.price:,.0f}*" if entry.estimated else f"{entry.price:,.0f}"
    if path.startswith("price:"):
        tier = path.split(":", 1)[1]
        p = entry.price(tier)
        return "–" if p is None else (f"{p:.2f}*" if entry.estimated(tier) else f"{p:.2f}")
    v = entry
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else getattr(v, part, None)
    if v is None:
        return "–"
    if isinstance(v, dict):  # an engine's runs_on: the generations
        return ", ".join(v) or "–"
    if isinstance(v, list):
        if v and hasattr(v[0], "name"):
            return str(len(v))
        return ", ".join(str(x) for x in v) or "–"
    if isinstance(v, float):
        return f"{v:g}"
    return escape(str(v))


def _lookup(catalog: list[Path] | None, model: str, accelerator: str, precision: str):
    """Model, accelerator, precision and estimator efficiencies from the catalogs."""
    from optimizer.inputs.catalog import load_catalog

    cat = load_catalog(catalog or [])
    return cat.model(model), cat.accelerator(accelerator), cat.precision(precision), cat.estimator


def _warn_context(m, context_tokens: int) -> None:
    if m.max_context and context_tokens > m.max_context:
        err.print(f"[yellow]warning:[/yellow] {escape(m.id)} supports {m.max_context:,} tokens of context; "
                  f"sized here for {context_tokens:,} (a plan with it is refused)")


def _layout(acc, tp: int, pp: int, ep: int, model=None):
    """The layout the flags ask for; TP within the scale-up domain (or a machine of 8 over PCIe)."""
    from optimizer.physics.layout import Layout

    limit = acc.scale_up_gpus if acc.topology != "pcie" else max(acc.scale_up_gpus, 8)
    if tp > limit:
        raise PlanError(Problem(f"--tp {tp} is beyond the scale-up domain of {acc.id} ({limit} GPUs)",
                                f"use --tp {limit} or less, and --pp or --ep for more GPUs"))
    if ep > 1:
        if model is not None and not (model.experts and model.experts > 1):
            raise PlanError(Problem(f"--ep {ep}: {model.id} is a dense model, it has no experts to spread",
                                    "use --tp (or --pp) for a dense model; --ep is for MoE models"))
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
    if tp < 1 or tp & (tp - 1):
        problems.append(Problem(f"--tp {tp} is not a power of two", "use 1, 2, 4, 8, … (attention heads split evenly)"))
    for flag, v in (("--pp", pp), ("--ep", ep)):
        if v < 1:
            problems.append(Problem(f"{flag} {v} is not a positive whole number", "e.g. 2, 3 or 72"))
    if context_tokens < 1:
        problems.append(Problem("--context-tokens must be ≥ 1", None))
    if not 0 <= memory_reserve < 1:
        problems.append(Problem(f"--memory-reserve {memory_reserve} is outside [0, 1)", "e.g. 0.10"))
    if concurrency is not None and concurrency < 1:
        problems.append(Problem("--concurrency must be ≥ 1", None))
    if problems:
        raise PlanError(problems)
