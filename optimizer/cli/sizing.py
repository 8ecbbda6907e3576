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
    import_prices = "import-prices"


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
    concurrency: Annotated[Optional[str], typer.Option(
        "--concurrency", metavar="N[,N…]",
        help="Requests kept in flight on one replica (a closed loop, as load tests with a maximum concurrency "
             "run): the throughput, TPOT and TTFT there. A list (1,4,16,64) gives the throughput-versus-"
             "interactivity curve.")] = None,
    engine: Annotated[Optional[str], typer.Option(
        "--engine", help="Serving engine (vllm, sglang, trtllm, atom, neuron, generic): the estimator as that engine "
                         "runs on the accelerator. Without it: the estimator's shared calibration (a plan that names "
                         "no engine picks the best allowed engine per config).")] = None,
    plot: Annotated[Optional[Path], typer.Option(
        "--plot", metavar="FILE.html", help="With --concurrency: write the throughput-versus-interactivity curve "
                                            "(tok/s per GPU against tok/s per user) as a standalone HTML page.")] = None,
    mig: Annotated[Optional[str], typer.Option("--mig", help="A MIG profile of the accelerator, e.g. 3g.40gb: "
                                                              "one slice serves the replica (tp 1).")] = None,
    offer: Annotated[Optional[str], typer.Option(
        "--offer", help="An offer of the accelerator: its scale-up domain, machine size and inter-node network "
                        "set the links (and whether the layout fits it), as solve sizes it.",
        autocompletion=catalog_ids("offers"))] = None,
    disagg: Annotated[bool, typer.Option("--disagg", help="Disaggregated: prefill on its own groups "
                                                          "(--prefill-tp/-pp/-ep), decode on --tp/--pp/--ep.")] = False,
    prefill_tp: Annotated[int, typer.Option("--prefill-tp", help="With --disagg: the prefill group's TP.")] = 1,
    prefill_pp: Annotated[int, typer.Option("--prefill-pp", help="With --disagg: the prefill group's stages.")] = 1,
    prefill_ep: Annotated[int, typer.Option("--prefill-ep", help="With --disagg: the prefill group's expert GPUs.")] = 1,
    transfer_gb_s: Annotated[Optional[float], typer.Option(
        "--transfer-gb-s", help="With --disagg: GB/s per GPU that ship the KV from prefill to decode (default: "
                                "the offer's links as solve uses them, else the accelerator's network).")] = None,
    spec_method: Annotated[Optional[str], typer.Option(
        "--spec-method", help="Speculative decoding: mtp (the model's own MTP layers) or draft (--draft-model).")] = None,
    spec_tokens: Annotated[Optional[int], typer.Option("--spec-tokens", help="Tokens drafted per step (1–16).")] = None,
    spec_acceptance: Annotated[Optional[float], typer.Option(
        "--spec-acceptance", help="Chance each drafted token is accepted, [0, 1).")] = None,
    draft_model: Annotated[Optional[str], typer.Option("--draft-model", help="With --spec-method draft: its model id.",
                                                       autocompletion=catalog_ids("models"))] = None,
    prefix_hit_rate: Annotated[float, typer.Option(
        "--prefix-hit-rate", help="Share of input tokens the prefix cache serves, [0, 1).")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Estimated goodput at an SLO (without SLO flags: the maximum throughput), what bounds it, and
    the TTFT at the replica's planned load; with --concurrency, the throughput, TPOT and TTFT at N
    requests in flight. Every config solve can choose can be given: --tp/--pp/--ep, --mig, --kv-precision,
    --disagg with the prefill group's layout, --offer for the offer's links, --engine, speculative decoding
    and the prefix cache (docs/speculative-and-prefix-caching.md)."""

    def body() -> int:
        from optimizer.physics import memory, roofline

        ctx = context_tokens or (input_tokens + output_tokens)
        _check_sizing_flags(tp, ctx, memory_reserve, None, pp, ep)
        levels, spec = _check_serving_flags(
            concurrency, plot, disagg, (prefill_tp, prefill_pp, prefill_ep), transfer_gb_s, mig, (tp, pp, ep),
            ttft_ms, tpot_ms, (spec_method, spec_tokens, spec_acceptance, draft_model), prefix_hit_rate)
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
        cat = _catalog(catalog)
        m, a, p, est = cat.model(model), cat.accelerator(accelerator), cat.precision(precision), cat.estimator
        why = roofline.why_not_native(p, a)
        if why:
            raise PlanError(Problem(why, "choose a precision with kernels on the accelerator, or a weight-only one"))
        layout = _layout(a, tp, pp, ep, m)
        kv_elem = _kv_elem(kv_precision)
        _warn_context(m, ctx)
        engine_id = None
        if engine is not None:
            engine_id = _check_engine(cat, engine, a, p, "disagg" if disagg else layout.family)
            est = est.for_engine(engine_id, a.generation)
        served = _Served.of(cat, a, m, layout, est, mig, offer, disagg, (prefill_tp, prefill_pp, prefill_ep),
                            draft_model if spec is not None else None)
        f = memory.fit(m, p, served.memory_gb, layout.gpus, ctx, memory_reserve, kv_elem,
                       attention_tp=layout.tp, runtime_gb_per_gpu=est.runtime_gb, dense_copies=layout.dp,
                       draft=served.draft)
        if f.kv_concurrency < 1:
            draft_kv = f" (the draft model's weights and KV included)" if served.draft else ""
            raise PlanError(Problem(f"does not fit: weights {f.weights_gb:.1f} GB + one sequence's KV "
                                    f"{f.kv_gb_per_seq:,.2f} GB ({ctx:,} tokens){draft_kv} > usable {f.usable_gb:.1f} GB",
                                    "quantize, shorten the context, or add GPUs per replica (--tp, --pp, --ep)"))
        pre = served.prefill
        if pre is not None and memory.fit(m, p, served.memory_gb, pre.gpus, ctx, memory_reserve, kv_elem,
                                          attention_tp=pre.tp, runtime_gb_per_gpu=est.runtime_gb,
                                          dense_copies=pre.dp).kv_concurrency < 1:
            raise PlanError(Problem(f"the prefill group ({pre.label}) does not hold the model and one prompt's KV",
                                    "give larger prefill groups (--prefill-tp, --prefill-pp, --prefill-ep)"))
        link = served.link(layout)
        serving = {"speculative": spec, "draft_model": served.draft, "prefix_hit_rate": prefix_hit_rate}
        try:
            rl = roofline.roofline(m, p, a, layout, input_tokens, output_tokens, mig=served.mig, params=est,
                                   link=link, kv_bytes_per_elem=kv_elem, **serving)
            e = roofline.estimate(m, p, a, layout, input_tokens, output_tokens, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                                  percentile=percentile, params=est, max_batch=f.kv_concurrency, link=link,
                                  kv_bytes_per_elem=kv_elem, mig=served.mig, rl=rl)
            if disagg:
                return _estimate_disaggregated(m, p, a, est, served, layout, f, kv_elem, serving, input_tokens,
                                               output_tokens, ttft_ms, tpot_ms, percentile, occupancy,
                                               transfer_gb_s, engine_id, as_json)
        except ValueError as exc:
            raise PlanError(Problem(str(exc), "give the accelerator bandwidth_tb_s and tflops_dense")) from None
        if levels:
            return _estimate_at_concurrency(m, p, a, est, served, layout, f, rl, e, serving, levels, engine_id, plot,
                                            input_tokens, output_tokens, as_json)
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
               "roofline_goodput_output_tokens_per_s": round(e.raw_goodput_output_tokens_per_s, 3),
               "validation": _validation_json(est, a, p, m, engine_id)}
        res.update(served.extra_keys(engine_id))
        res.update(_serving_keys(spec, served.draft, prefix_hit_rate))
        if _written_or_headed(res, as_json, m.name or m.id, f" at {p.id} on {layout.gpus} × {a.name or a.id} "
                              f"({layout.label}), {input_tokens} in / {output_tokens} out"):
            return 0
        t = _two_columns()
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
        out.print(_validation_line(res["validation"]))
        if e.batch == 0:
            out.print("[red]the SLO cannot be met even at batch 1[/red]")
        return 0

    run(body, debug)


@app.command("catalog")
def catalog_cmd(
    section: Annotated[CatalogSection, typer.Argument(
        help="accelerators, models, precisions, offers, systems or engines; import-prices FILE reads a SkyPilot "
             "catalog CSV into offers")],
    file: Annotated[Optional[Path], typer.Argument(metavar="[FILE]", help="import-prices: the SkyPilot catalog "
                                                                          "CSV (vms.csv).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list of objects, each with id and name.")] = False,
    provider: Annotated[Optional[str], typer.Option("--provider", help="import-prices: the provider id the offers "
                                                                       "are sold by (aws, gcp, lambda, …).")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="import-prices: the day the CSV's prices were "
                                                                 "published (YYYY-MM-DD); the CSV carries no date.")] = None,
    maps: Annotated[Optional[list[str]], typer.Option("--map", help="import-prices: NAME=ID, the catalog "
                                                                    "accelerator a CSV AcceleratorName is "
                                                                    "(repeatable).")] = None,
    out_file: Annotated[Optional[Path], typer.Option("-o", "--out", help="import-prices: the offers YAML to "
                                                                         "write (load it with --catalog).")] = None,
    catalog: CatalogOpt = None,
    debug: DebugOpt = False,
) -> None:
    """List the catalog: what planopt knows about accelerators, models, precisions, offers and systems to buy.
    `planopt catalog import-prices FILE --provider P --as-of DATE -o offers.yaml` turns SkyPilot's catalog CSV
    into offers a plan loads with --catalog."""

    if section is CatalogSection.import_prices:
        run(lambda: _import_prices(file, provider, as_of, maps or [], out_file, catalog), debug)
        return

    def body() -> int:
        stray = ([str(file)] if file is not None else []) + [opt for opt, given in (
            ("--provider", provider), ("--as-of", as_of), ("--map", maps), ("-o", out_file)) if given]
        if stray:
            raise PlanError(Problem(f"unexpected {', '.join(stray)}", f"`planopt catalog {section.value}` lists the "
                                    "section; only import-prices takes a FILE, --provider, --as-of, --map and -o"))
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


def _import_prices(file: Path | None, provider: str | None, as_of: str | None, maps: list[str],
                   out_file: Path | None, catalog: list[Path] | None) -> int:
    from optimizer.atomic import write_text_atomic
    from optimizer.inputs import skypilot

    needed = [Problem(f"{what} is required", fix) for what, given, fix in (
        ("FILE", file, "planopt catalog import-prices vms.csv --provider aws --as-of 2026-12-01 -o offers.yaml"),
        ("--provider", provider, "name the provider the CSV prices: --provider aws"),
        ("--as-of", as_of, "the CSV carries no date: give the day it was published, --as-of YYYY-MM-DD"),
        ("-o", out_file, "name the offers file to write: -o offers.yaml")) if given is None]
    if needed:
        raise PlanError(needed)
    assert file is not None and provider is not None and as_of is not None and out_file is not None
    problems: list[Problem] = []
    try:
        prov = skypilot.check_provider(provider)
    except PlanError as exc:
        problems += exc.problems
    try:
        date = skypilot.check_as_of(as_of)
    except PlanError as exc:
        problems += exc.problems
    cat = _catalog(catalog)
    mapping, bad = skypilot.parse_map(maps, set(cat.accelerators))
    problems += bad
    if problems:
        raise PlanError(problems)
    from optimizer.cli.common import check_writable, write_failed

    check_writable([out_file], "-o")
    imported = skypilot.import_prices(file, prov, date, mapping, set(cat.accelerators))
    if not imported.offers:
        raise PlanError(Problem("no offer to write: no row has an accelerator the catalog knows and a price",
                                "; ".join(imported.notes) or "check the file is a SkyPilot catalog CSV",
                                file=str(file)))
    try:
        write_text_atomic(out_file, skypilot.offers_yaml(imported, file.name, prov, date))
    except OSError as exc:
        raise write_failed(exc, out_file, "-o") from None
    for n in imported.notes:
        err.print(f"[yellow]note:[/yellow] {escape(n)}")
    out.print(f"wrote {len(imported.offers)} offers to {out_file} (load them with --catalog {out_file})",
              style="dim")
    return 0


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


def _catalog(catalog: list[Path] | None):
    from optimizer.inputs.catalog import load_catalog

    return load_catalog(catalog or [])


def _lookup(catalog: list[Path] | None, model: str, accelerator: str, precision: str):
    """Model, accelerator, precision and estimator efficiencies from the catalogs."""
    cat = _catalog(catalog)
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


# --- estimate: the config as solve would serve it, and the load it runs at --------------------------------

KNOWN_ENGINES = ("vllm", "sglang", "trtllm", "atom", "neuron", "generic")
"""Engine ids, where the catalog has no `engines` section to name them."""
MAX_CONCURRENCY = 1_000_000
"""Requests in flight on one replica: beyond it a unit slip is likelier than a load test."""


def _check_serving_flags(concurrency: str | None, plot: Path | None, disagg: bool, prefill: tuple[int, int, int],
                         transfer_gb_s: float | None, mig: str | None, layout: tuple[int, int, int],
                         ttft_ms: float | None, tpot_ms: float | None,
                         speculative: tuple[str | None, int | None, float | None, str | None],
                         prefix_hit_rate: float):
    """The concurrency levels (sorted) and the speculative decoding the flags give, every problem at once."""
    from optimizer.atomic import unwritable
    from optimizer.physics.roofline import Speculation

    problems: list[Problem] = []
    levels: list[int] = []
    if concurrency is not None:
        bad = []
        for part in concurrency.split(","):
            try:
                n = int(part.strip())
            except ValueError:
                n = 0
            if not 1 <= n <= MAX_CONCURRENCY:
                bad.append(part.strip() or "''")
            elif n not in levels:
                levels.append(n)
        if bad:
            problems.append(Problem(f"--concurrency {concurrency}: {', '.join(bad)} is not a number of requests "
                                    f"from 1 to {MAX_CONCURRENCY:,}", "give N or a list, e.g. --concurrency 1,4,16,64"))
    if plot is not None:
        if concurrency is None:
            problems.append(Problem("--plot draws the curve of --concurrency", "add --concurrency 1,4,16,64"))
        why = unwritable(plot, folder=False)
        if why:
            problems.append(Problem(f"--plot {plot}: {why}", "give a file path in a folder you can write"))
    if concurrency is not None and disagg:
        problems.append(Problem("--concurrency with --disagg: a disaggregated replica's prefill groups are sized to "
                                "the decode group's load, not to a fixed number of requests in flight",
                                "drop --concurrency (or --disagg for one replica that prefills and decodes)"))
    if concurrency is not None and (ttft_ms is not None or tpot_ms is not None):
        problems.append(Problem("--concurrency fixes the load; --tpot-ms and --ttft-ms size it to a target instead",
                                "give --concurrency or the targets, not both"))
    ptp, ppp, pep = prefill
    if not disagg and (prefill != (1, 1, 1) or transfer_gb_s is not None):
        problems.append(Problem("--prefill-tp/--prefill-pp/--prefill-ep and --transfer-gb-s describe a "
                                "disaggregated pair", "add --disagg"))
    if ptp < 1 or ptp & (ptp - 1):
        problems.append(Problem(f"--prefill-tp {ptp} is not a power of two", "use 1, 2, 4, 8, …"))
    for flag, v in (("--prefill-pp", ppp), ("--prefill-ep", pep)):
        if v < 1:
            problems.append(Problem(f"{flag} {v} is not a positive whole number", "e.g. 2, 4 or 8"))
    if transfer_gb_s is not None and not 0 <= transfer_gb_s < math.inf:
        problems.append(Problem(f"--transfer-gb-s {transfer_gb_s:g} is not a bandwidth",
                                "give GB/s per GPU, e.g. 50 (0: no link between the groups)"))
    if mig is not None and (layout != (1, 1, 1) or disagg):
        problems.append(Problem(f"--mig {mig}: a MIG slice serves a replica on its own",
                                "drop --tp, --pp, --ep and --disagg (or --mig)"))
    method, k, a, draft = speculative
    spec = None
    if method is None:
        if k is not None or a is not None or draft is not None:
            problems.append(Problem("--spec-tokens, --spec-acceptance and --draft-model describe speculative decoding",
                                    "add --spec-method mtp (or draft with --draft-model)"))
    else:
        if method not in ("mtp", "draft"):
            problems.append(Problem(f"--spec-method {method}: unknown", "use mtp or draft"))
        if k is None or not 1 <= k <= 16:
            problems.append(Problem(f"--spec-tokens {'is missing' if k is None else f'{k} is outside 1–16'}",
                                    "give the tokens drafted per step, e.g. --spec-tokens 3"))
        if a is None or not 0 <= a < 1:
            problems.append(Problem(f"--spec-acceptance {'is missing' if a is None else f'{a:g} is outside [0, 1)'}",
                                    "give the chance a drafted token is accepted, e.g. --spec-acceptance 0.7"))
        if method == "draft" and draft is None:
            problems.append(Problem("--spec-method draft needs --draft-model", "e.g. --draft-model llama-3.2-1b"))
        if method == "mtp" and draft is not None:
            problems.append(Problem("--draft-model is for --spec-method draft", "MTP drafts with the model's own "
                                                                                "layers: drop --draft-model"))
        if not problems:
            spec = Speculation(method, k, a)  # type: ignore[arg-type]
    if not 0 <= prefix_hit_rate < 1:
        problems.append(Problem(f"--prefix-hit-rate {prefix_hit_rate:g} is outside [0, 1)", "e.g. 0.5"))
    if problems:
        raise PlanError(problems)
    return sorted(levels), spec


def _check_engine(cat, engine: str, acc, prec, family: str) -> str:
    """The engine id `--engine` names, when it runs this precision and layout family on the accelerator."""
    engines = getattr(cat, "engines", None)
    if not engines:  # a catalog without an engines section: the ids the estimator knows
        known = sorted(set(KNOWN_ENGINES) | set(cat.estimator.engines))
        if engine not in known:
            raise PlanError(Problem(f"unknown engine '{engine}'", f"use one of {', '.join(known)}"))
        return engine
    e = engines.get(engine) or next((x for x in engines.values() if engine in getattr(x, "aliases", ())), None)
    if e is None:
        raise PlanError(Problem(f"unknown engine '{engine}'", f"use one of {', '.join(sorted(engines))}"))
    why_not = getattr(e, "why_not", None)
    why = why_not(acc.generation, prec.id, family) if why_not else None
    if why:
        able = [x.id for x in engines.values() if getattr(x, "why_not", None) is None
                or x.why_not(acc.generation, prec.id, family) is None]
        fix = (f"engines that run it: {', '.join(sorted(able))}" if able
               else "no engine in the catalog runs it: choose another precision or layout")
        raise PlanError(Problem(f"--engine {engine} on {acc.id} ({prec.id}, {family}): {why}", fix))
    return e.id


class _Served:
    """What the flags add to one replica: a MIG slice, an offer's links, a disaggregated pair's prefill
    group, a draft model."""

    def __init__(self, acc, est, mig, offer, prefill, draft) -> None:
        from optimizer.candidates import configs

        self.acc, self.est, self.mig, self.offer, self.prefill, self.draft = acc, est, mig, offer, prefill, draft
        self.memory_gb = configs.memory_gb_per_gpu(acc, mig)

    @classmethod
    def of(cls, cat, acc, model, layout, est, mig_name: str | None, offer_id: str | None, disagg: bool,
           prefill: tuple[int, int, int], draft_id: str | None) -> "_Served":
        from optimizer.candidates import configs

        mig = None
        if mig_name is not None:
            mig = next((x for x in acc.mig_profiles if x.name == mig_name), None)
            if mig is None:
                names = ", ".join(x.name for x in acc.mig_profiles)
                raise PlanError(Problem(f"{acc.id} has no MIG profile '{mig_name}'",
                                        f"use one of {names}" if names else f"{acc.id} has no MIG profiles: drop --mig"))
        offer = None
        if offer_id is not None:
            offer = cat.offer(offer_id)
            if offer.accelerator != acc.id:
                raise PlanError(Problem(f"offer '{offer.id}' sells {offer.accelerator}, not {acc.id}",
                                        f"give --accelerator {offer.accelerator}, or an offer of {acc.id}"))
        pre = _layout(acc, *prefill, model) if disagg else None
        if offer is not None:
            for lay in (layout, pre):
                why = None if lay is None else configs.why_not_layout(acc, offer, lay, est)
                if why:
                    raise PlanError(Problem(f"offer {offer.id}: {why[1]}", "choose a layout the offer hosts, or "
                                                                           "another offer"))
            why = configs.why_not_pair(acc, offer, pre, layout, est) if pre is not None else None
            if why:
                raise PlanError(Problem(f"offer {offer.id}: {why[1]}", "choose smaller groups, or another offer"))
        draft = cat.model(draft_id) if draft_id else None
        return cls(acc, est, mig, offer, pre, draft)

    def link(self, layout):
        from optimizer.candidates import configs
        from optimizer.physics.layout import links

        if self.offer is not None:
            return configs.offer_links(self.acc, self.offer, layout, self.est)
        return links(self.acc, layout, self.est)

    def transfer_gb_s(self, decode, given: float | None) -> float | None:
        """The KV transfer's bandwidth: as given, else what the offer's machine or network gives the pair
        (configs.pair_transfer_gb_s, as solve sizes it), else the accelerator's network (None)."""
        from optimizer.candidates import configs

        if given is not None or self.offer is None:
            return given
        return configs.pair_transfer_gb_s(self.acc, self.offer, self.prefill, decode, self.est)

    def extra_keys(self, engine: str | None) -> dict:
        """The JSON keys of the flags given (none: estimate's keys as they always were)."""
        d: dict = {}
        if engine is not None:
            d["engine"] = engine
        if self.mig is not None:
            d["mig"] = self.mig.name
            d["gpu_fraction"] = round(1.0 / self.mig.instances_per_gpu, 6)
        if self.offer is not None:
            d["offer"] = self.offer.id
        return d


def _serving_keys(spec, draft, hit: float) -> dict:
    d: dict = {}
    if spec is not None:
        d["speculative"] = {"method": spec.method, "draft_tokens": spec.draft_tokens, "acceptance": spec.acceptance,
                            "tokens_per_step": round(spec.tokens_per_step(), 6),
                            **({"draft_model": draft.id} if draft is not None else {})}
    if hit:
        d["prefix_hit_rate"] = hit
    return d


def _serving_lines(res: dict) -> list[str]:
    """What the flags beyond the layout set, one console line each (escaped)."""
    lines = []
    if res.get("engine"):
        lines.append(f"engine {escape(res['engine'])}: the estimator as it runs on this generation")
    if res.get("offer"):
        lines.append(f"on offer {escape(res['offer'])}: its links and limits")
    if res.get("mig"):
        lines.append(f"on a MIG slice {escape(res['mig'])} ({res['gpu_fraction']:g} of a GPU)")
    sp = res.get("speculative")
    if sp:
        draft = f", draft model {escape(sp['draft_model'])}" if sp.get("draft_model") else ""
        lines.append(f"speculative decoding {sp['method']}{draft}: {sp['draft_tokens']} drafted, acceptance "
                     f"{sp['acceptance']:g} → {sp['tokens_per_step']:.2f} tokens per step")
    if res.get("prefix_hit_rate"):
        lines.append(f"prefix cache: {res['prefix_hit_rate']:.0%} of input tokens not prefilled")
    return lines


def _written_or_headed(res: dict, as_json: bool, bold: str, rest: str, shown: dict | None = None) -> bool:
    """With --json, `shown` (default `res`) as the JSON estimate writes, and True; else the heading (`bold`
    then `rest`) and the serving lines of `res` on the console, and False."""
    if as_json:
        sys.stdout.write(json.dumps(res if shown is None else shown, indent=2) + "\n")
        return True
    out.print(f"[bold]{escape(bold)}[/bold]{escape(rest)}")
    for line in _serving_lines(res):
        out.print(line)
    return False


def _two_columns() -> Table:
    t = Table(show_header=False, show_edge=False)
    t.add_column()
    t.add_column(justify="right")
    return t


def _validation_json(est, a, p, m, engine: str | None) -> dict:
    """The evidence behind the estimate, as a solve's result gives it for a workload (physics.validation).
    Without an engine the estimate is the shared calibration, fitted on every engine's rows: its evidence is
    the pooled group's (engine '*')."""
    from dataclasses import asdict

    from optimizer.physics.validation import ANY, validation_of

    return {**asdict(validation_of(est, a, p, m, engine or ANY)), "engine": engine}


def _validation_line(v: dict) -> str:
    from optimizer.physics.validation import Validation
    from optimizer.results.evidence import band_text

    band = band_text(Validation(**v))
    if v["validated"]:
        return f"validated: {v['points']} published points behind {escape(v['group'])}; {escape(band)}"
    return (f"[yellow]unvalidated[/yellow]: {v['points']} published points behind {escape(v['group'])} "
            f"(fewer than the estimator's minimum); {escape(band)}")


def _estimate_at_concurrency(m, p, a, est, served: _Served, layout, f, rl, e, serving: dict, levels: list[int],
                             engine: str | None, plot: Path | None, input_tokens: int, output_tokens: int,
                             as_json: bool) -> int:
    """One replica with each of `levels` requests in flight (physics.concurrency, the model the estimator's
    online rows are judged with). `output_tokens_per_s(_per_gpu)` is the estimate itself; where a plan counts
    on less (the uncalibrated headroom, or a goodput what-if), `planned_…` says how much."""
    from optimizer.atomic import write_text_atomic
    from optimizer.physics.concurrency import at_concurrency

    cap = max(1, min(f.kv_concurrency, est.max_batch))
    headroom = (1.0 if e.calibrated else est.uncalibrated_headroom) * est.goodput_factor
    gpus = 1.0 / served.mig.instances_per_gpu if served.mig is not None else float(layout.gpus)
    curve = []
    for n in levels:
        at = at_concurrency(rl, n, cap, est.closed_loop_wave_share)
        point = {"concurrency": n, "batch": round(at.batch, 6),
                 "output_tokens_per_s": round(at.output_tokens_per_s, 3),
                 "output_tokens_per_s_per_gpu": round(at.output_tokens_per_s / gpus, 3),
                 "tokens_per_s_per_user": round(1000.0 / at.tpot_ms, 3),
                 "tpot_ms": round(at.tpot_ms, 3), "ttft_ms": round(at.ttft_ms, 3), "bound": at.bound}
        if headroom != 1.0:
            point["planned_output_tokens_per_s"] = round(at.output_tokens_per_s * headroom, 3)
            point["planned_output_tokens_per_s_per_gpu"] = round(at.output_tokens_per_s * headroom / gpus, 3)
        curve.append(point)
    res = {"engine": engine, "layout": layout.label, "gpus": layout.gpus, "input_tokens": input_tokens,
           "output_tokens": output_tokens, "weights_gb": round(f.weights_gb, 6),
           "kv_gb_per_seq": round(f.kv_gb_per_seq, 6), "kv_concurrency": f.kv_concurrency, "max_batch": cap,
           "calibrated": e.calibrated, "group": e.group, "headroom": round(headroom, 6),
           "closed_loop_wave_share": est.closed_loop_wave_share,
           "validation": _validation_json(est, a, p, m, engine)}
    res.update({k: v for k, v in served.extra_keys(engine).items() if k != "engine"})
    res.update(_serving_keys(serving["speculative"], serving["draft_model"], serving["prefix_hit_rate"]))
    if len(curve) == 1:
        res.update(curve[0])
    res["curve"] = curve
    title = f"{m.name or m.id} at {p.id} on {layout.gpus} × {a.name or a.id} ({layout.label})"
    if plot is not None:
        from optimizer.report.curve import curve_html

        sub = (f"{input_tokens} in / {output_tokens} out per request; engine {engine or 'none (shared calibration)'}; "
               "each point: N requests kept in flight on one replica")
        write_text_atomic(plot, curve_html(title, sub, curve))
    if _written_or_headed({**res, "engine": engine}, as_json, title, f", {input_tokens} in / {output_tokens} out",
                          shown=res):
        return 0
    t = Table(show_edge=False)
    for col in ("in flight", "batch", "output tok/s", "tok/s per GPU", "tok/s per user", "TPOT ms", "TTFT ms", "bound"):
        t.add_column(col, justify="right" if col != "bound" else "left")
    for pt in curve:
        t.add_row(str(pt["concurrency"]), f"{pt['batch']:,.1f}", f"{pt['output_tokens_per_s']:,.0f}",
                  f"{pt['output_tokens_per_s_per_gpu']:,.0f}", f"{pt['tokens_per_s_per_user']:,.1f}",
                  f"{pt['tpot_ms']:,.2f}", f"{pt['ttft_ms']:,.0f}", pt["bound"])
    out.print(t)
    if headroom != 1.0 and not e.calibrated:
        out.print(f"[yellow]no published result calibrated {e.group}[/yellow]: a plan counts on "
                  f"{headroom:.0%} of these throughputs — measure it and give it in the plan")
    out.print(_validation_line(res["validation"]))
    if plot is not None:
        out.print(f"curve written to {escape(str(plot))}")
    return 0


def _estimate_disaggregated(m, p, a, est, served: _Served, decode, f, kv_elem, serving: dict, input_tokens: int,
                            output_tokens: int, ttft_ms, tpot_ms, percentile: float, occupancy: float,
                            transfer_gb_s: float | None, engine: str | None, as_json: bool) -> int:
    """A disaggregated replica as solve sizes it (candidates.configs.size_disaggregated): its decode group on
    the layout flags, prefill groups of --prefill-* as many as the load needs, the KV over the offer's links."""
    from optimizer.physics import roofline

    pre = served.prefill
    decode_link, prefill_link = served.link(decode), served.link(pre)
    prefill_serving = {**serving, "speculative": None, "draft_model": None}
    rls = (roofline.roofline(m, p, a, decode, input_tokens, output_tokens, params=est, link=decode_link,
                             kv_bytes_per_elem=kv_elem, **serving),
           roofline.roofline(m, p, a, pre, input_tokens, 1, params=est, link=prefill_link, kv_bytes_per_elem=kv_elem,
                             **prefill_serving))
    d = roofline.disaggregated(m, p, a, pre, decode, input_tokens, output_tokens, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                               percentile=percentile, max_batch=f.kv_concurrency, params=est,
                               kv_bytes_per_elem=kv_elem, prefill_link=prefill_link, decode_link=decode_link,
                               transfer_gb_s=served.transfer_gb_s(decode, transfer_gb_s), load=occupancy,
                               rooflines=rls)
    if d is None:
        raise PlanError(Problem("no decode batch and prefill share meet the SLO together",
                                "loosen --tpot-ms/--ttft-ms, or give larger groups"))
    e = d.decode
    label = f"disagg: prefill {pre.label} × {d.prefill_groups:g} + decode {decode.label}"
    res = {"weights_gb": round(f.weights_gb, 6), "kv_gb_per_seq": round(f.kv_gb_per_seq, 6),
           "kv_copies": f.kv_copies, "kv_concurrency": f.kv_concurrency, "batch": e.batch,
           "ttft_ms": round(d.ttft_ms, 3), "tpot_ms": round(e.tpot_ms, 3),
           "goodput_output_tokens_per_s": round(d.goodput_output_tokens_per_s, 3),
           "bound": "tpot" if tpot_ms else e.bound, "percentile": percentile, "layout": label,
           "gpus": round(d.gpus, 6), "ttft_at_load_ms": None if d.ttft_at_load_ms is None else round(d.ttft_at_load_ms, 3),
           "occupancy": occupancy, "calibrated": d.calibrated, "group": e.group,
           "roofline_goodput_output_tokens_per_s": round(e.raw_goodput_output_tokens_per_s, 3),
           "goodput_output_tokens_per_s_per_gpu": round(d.goodput_output_tokens_per_s / d.gpus, 3),
           "prefill_layout": pre.label, "decode_layout": decode.label, "prefill_groups": d.prefill_groups,
           "kv_transfer_ms": round(d.kv_transfer_ms, 3)}
    res.update(served.extra_keys(engine))
    res.update(_serving_keys(serving["speculative"], serving["draft_model"], serving["prefix_hit_rate"]))
    if _written_or_headed(res, as_json, m.name or m.id, f" at {p.id} on {a.name or a.id} ({label}), "
                          f"{input_tokens} in / {output_tokens} out"):
        return 0
    t = _two_columns()
    pw = f"p{percentile:g}"
    for lab, v in (("GPUs per replica (prefill share included)", res["gpus"]), ("decode batch", res["batch"]),
                   (f"{pw} TTFT ms (prefill queue, prefill, KV transfer, first step)", res["ttft_ms"]),
                   ("KV transfer ms", res["kv_transfer_ms"]), (f"TPOT ms", res["tpot_ms"]),
                   ("goodput output tok/s", res["goodput_output_tokens_per_s"]),
                   ("goodput output tok/s per GPU", res["goodput_output_tokens_per_s_per_gpu"])):
        t.add_row(lab, f"{v:,.2f}" if isinstance(v, float) else str(v))
    out.print(t)
    return 0
