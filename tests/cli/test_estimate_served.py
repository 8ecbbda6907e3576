"""estimate at a concurrency (--concurrency, --plot, --engine) and with every flag a config solve chooses needs
(--disagg and the prefill group, --offer, --mig, speculative decoding, the prefix cache)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.catalog import load_catalog
from optimizer.physics.concurrency import at_concurrency
from optimizer.physics.layout import Layout, links
from optimizer.physics.memory import fit
from optimizer.physics.roofline import roofline

runner = CliRunner()
BASE = ["estimate", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--precision", "fp8", "--tp", "2"]
POINT_KEYS = {"concurrency", "batch", "output_tokens_per_s", "output_tokens_per_s_per_gpu", "tpot_ms", "ttft_ms",
              "bound"}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_one_concurrency_is_the_physics_at_that_load():
    res = invoke(*BASE, "--concurrency", "16", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert POINT_KEYS | {"gpus", "layout", "engine", "curve"} <= set(d)
    assert d["concurrency"] == 16 and d["gpus"] == 2 and d["layout"] == "tp2" and d["engine"] is None
    assert len(d["curve"]) == 1 and {k: d[k] for k in POINT_KEYS} == {k: d["curve"][0][k] for k in POINT_KEYS}
    # the same model the estimator's online rows use: physics.concurrency on the replica's roofline
    cat = load_catalog([])
    m, a, p, est = cat.models["llama-3.1-70b"], cat.accelerators["h100-sxm"], cat.precisions["fp8"], cat.estimator
    layout = Layout("tp", tp=2)
    rl = roofline(m, p, a, layout, 1000, 200, params=est, link=links(a, layout, est))
    kv = fit(m, p, a.memory_bytes_per_gpu / 1e9, 2, 1200, 0.10, attention_tp=2, runtime_gb_per_gpu=est.runtime_gb)
    at = at_concurrency(rl, 16, max(1, min(kv.kv_concurrency, est.max_batch)), est.closed_loop_wave_share)
    assert d["closed_loop_wave_share"] == est.closed_loop_wave_share > 0  # no engine: the shared value
    assert d["calibrated"] is True  # hopper/fp8: no headroom, planned = roofline
    assert d["output_tokens_per_s"] == pytest.approx(at.output_tokens_per_s, abs=1e-3)
    assert d["output_tokens_per_s_per_gpu"] == pytest.approx(at.output_tokens_per_s / 2, abs=1e-3)
    assert d["tpot_ms"] == pytest.approx(at.tpot_ms, abs=1e-3) and d["ttft_ms"] == pytest.approx(at.ttft_ms, abs=1e-3)


def test_a_list_is_the_curve_in_order_of_concurrency():
    res = invoke(*BASE, "--concurrency", "64,1,16,4,16", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [p["concurrency"] for p in d["curve"]] == [1, 4, 16, 64]
    assert "concurrency" not in d  # several points: only the curve
    assert all(POINT_KEYS <= set(p) for p in d["curve"])
    per_gpu = [p["output_tokens_per_s_per_gpu"] for p in d["curve"]]
    per_user = [p["tokens_per_s_per_user"] for p in d["curve"]]
    assert per_gpu == sorted(per_gpu) and per_user == sorted(per_user, reverse=True)


def test_the_estimate_is_the_physics_and_a_plan_counts_on_the_headroom_beside_it():
    cat = load_catalog([])
    est = cat.estimator
    acc = next(a for a in sorted(cat.accelerators.values(), key=lambda a: a.id)
               if a.bandwidth_tb_s and "bf16" in a.tflops_dense and a.memory_gb and a.memory_gb >= 40
               and not est.is_calibrated(a.generation, "bf16") and a.generation != "other")
    res = invoke("estimate", "--model", "llama-3.1-8b", "--accelerator", acc.id, "--precision", "bf16",
                 "--concurrency", "8", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["calibrated"] is False
    h = est.uncalibrated_headroom * est.goodput_factor
    assert d["planned_output_tokens_per_s"] == pytest.approx(d["output_tokens_per_s"] * h, rel=1e-6)
    assert d["planned_output_tokens_per_s_per_gpu"] == pytest.approx(d["output_tokens_per_s_per_gpu"] * h, rel=1e-6)
    assert d["validation"]["source"] == "estimated" and d["validation"]["group"].startswith(f"{acc.generation}/bf16/")


def test_plot_writes_a_standalone_page_deterministically(tmp_path):
    page = tmp_path / "sub" / "curve.html"
    args = [*BASE, "--concurrency", "1,4,16,64", "--plot", page]
    assert invoke(*args).exit_code == 0
    first = page.read_bytes()
    assert first.startswith(b"<!DOCTYPE html>") and b"<svg" in first and b"tokens/s per GPU" in first
    assert invoke(*args).exit_code == 0
    assert page.read_bytes() == first
    assert [p.name for p in page.parent.iterdir()] == ["curve.html"]  # written atomically, nothing left beside


def test_the_engine_is_named_and_an_unknown_one_refused():
    d = json.loads(invoke(*BASE, "--concurrency", "4", "--engine", "vllm", "--json").stdout)
    assert d["engine"] == "vllm"
    res = invoke(*BASE, "--concurrency", "4", "--engine", "tensor-magic")
    assert res.exit_code == 2 and "unknown engine 'tensor-magic'" in res.output and "vllm" in res.output


@pytest.mark.parametrize("args, says", [
    (["--concurrency", "0"], "--concurrency 0"),
    (["--concurrency", "4,x"], "x is not a number"),
    (["--plot", "curve.html"], "--plot draws the curve"),
    (["--concurrency", "4", "--tpot-ms", "50"], "--concurrency fixes the load"),
    (["--concurrency", "4", "--disagg"], "--concurrency with --disagg"),
    (["--prefill-tp", "2"], "add --disagg"),
    (["--disagg", "--prefill-tp", "3"], "--prefill-tp 3 is not a power of two"),
    (["--mig", "3g.40gb"], "a MIG slice serves a replica on its own"),
    (["--spec-tokens", "3"], "add --spec-method"),
    (["--spec-method", "eagle", "--spec-tokens", "3", "--spec-acceptance", "0.5"], "--spec-method eagle"),
    (["--spec-method", "mtp", "--spec-tokens", "17", "--spec-acceptance", "0.5"], "--spec-tokens 17"),
    (["--spec-method", "mtp", "--spec-tokens", "3", "--spec-acceptance", "1"], "--spec-acceptance 1"),
    (["--spec-method", "draft", "--spec-tokens", "3", "--spec-acceptance", "0.5"], "needs --draft-model"),
    (["--prefix-hit-rate", "1"], "--prefix-hit-rate 1"),
    (["--offer", "aws-b200-us-east-1"], "sells b200"),
    (["--transfer-gb-s", "-1", "--disagg"], "is not a bandwidth"),
])
def test_bad_flags_exit_2_saying_what_to_give(args, says):
    res = invoke(*BASE, *args)
    assert res.exit_code == 2, res.output
    assert says in res.output and "Traceback" not in res.output


def test_bad_flags_are_reported_together():
    res = invoke(*BASE, "--concurrency", "0", "--prefill-tp", "2", "--prefix-hit-rate", "2")
    assert res.exit_code == 2 and "3 problems" in res.output


def test_a_mig_slice_counts_as_its_share_of_a_gpu():
    res = invoke("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--precision", "fp8",
                 "--mig", "3g.40gb", "--concurrency", "4", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["mig"] == "3g.40gb" and d["gpu_fraction"] == 0.5
    assert d["output_tokens_per_s_per_gpu"] == pytest.approx(2 * d["output_tokens_per_s"], abs=2e-3)
    bad = invoke("estimate", "--model", "llama-3.1-8b", "--accelerator", "h100-sxm", "--mig", "9g.1tb")
    assert bad.exit_code == 2 and "no MIG profile '9g.1tb'" in bad.output


def test_speculative_decoding_and_the_prefix_cache_reach_the_estimate():
    plain = json.loads(invoke(*BASE, "--concurrency", "4", "--json").stdout)
    spec = json.loads(invoke(*BASE, "--concurrency", "4", "--spec-method", "mtp", "--spec-tokens", "3",
                             "--spec-acceptance", "0.7", "--json").stdout)
    assert spec["speculative"]["tokens_per_step"] == pytest.approx((1 - 0.7**4) / 0.3, rel=1e-5)
    assert spec["tpot_ms"] < plain["tpot_ms"]
    cached = json.loads(invoke(*BASE, "--concurrency", "4", "--prefix-hit-rate", "0.5", "--json").stdout)
    assert cached["prefix_hit_rate"] == 0.5 and cached["ttft_ms"] < plain["ttft_ms"]
    draft = json.loads(invoke(*BASE, "--spec-method", "draft", "--draft-model", "llama-3.2-1b", "--spec-tokens", "4",
                              "--spec-acceptance", "0.6", "--json").stdout)
    no_draft = json.loads(invoke(*BASE, "--json").stdout)
    assert draft["speculative"]["draft_model"] == "llama-3.2-1b"
    assert draft["weights_gb"] > no_draft["weights_gb"] and draft["kv_concurrency"] < no_draft["kv_concurrency"]


def test_without_new_flags_the_keys_are_unchanged_but_for_the_evidence():
    d = json.loads(invoke(*BASE, "--json").stdout)
    assert d.pop("validation")["group"] == "hopper/fp8/*/dense"  # no engine: the shared calibration's evidence
    assert set(d) == {"weights_gb", "kv_gb_per_seq", "kv_copies", "kv_concurrency", "batch", "ttft_ms", "tpot_ms",
                      "goodput_output_tokens_per_s", "bound", "percentile", "layout", "gpus", "ttft_at_load_ms",
                      "occupancy", "calibrated", "group", "roofline_goodput_output_tokens_per_s"}


PLAN = """\
plan: every config
horizon_days: 1
policy: {tiers: [on-demand], spares: 0, rollout_fraction: 0}
workloads:
  - name: chat
    model: MODEL
    pool: POOL
    precisions: [fp8]
    offers: [coreweave-h100-sxm]
    tp: TPS
    parallelism: [tp, ep, disagg]
    tokens: {input: 2000, output: 300}
    slo: {tpot_ms: 40, ttft_ms: 2000}
    SERVING
    demand: {peak_output_tokens_per_s: 20000}
"""


def _layout_flags(key: str, prefix: str = "") -> list:
    """--tp/--ep/--pp (or --prefill-…) of a candidate key's layout part: 'tp2', 'ep8', 'tp2ep8pp2'."""
    deg = {k: int(v) for k, v in re.findall(r"(tp|ep|pp)(\d+)", key)}
    flags = ["--" + prefix + "tp", deg.get("tp", 1)]
    if "ep" in deg:
        flags += ["--" + prefix + "ep", deg["ep"]]
    if "pp" in deg:
        flags += ["--" + prefix + "pp", deg["pp"]]
    return flags


@pytest.mark.parametrize("model, pool, tps, serving, flags", [
    ("llama-3.1-70b", "interactive", "[2, 4]", "", []),
    ("llama-3.1-70b", "interactive", "[2, 4]", "prefix_cache: {hit_rate: 0.5}", ["--prefix-hit-rate", "0.5"]),
    ("llama-3.1-70b", "interactive", "[2, 4]", "speculative: {method: mtp, draft_tokens: 2, acceptance: 0.6}",
     ["--spec-method", "mtp", "--spec-tokens", "2", "--spec-acceptance", "0.6"]),
    ("qwen3-30b-a3b", "small", "[1, 2]", "", []),
])
def test_estimate_reproduces_every_candidate_solve_sizes(tmp_path: Path, model, pool, tps, serving, flags):
    """Every config the candidates offer solve (disaggregated pairs on the offer's links, experts over GPUs,
    MIG slices) comes back from estimate, on the engine it was sized on, with the same goodput and GPUs per
    replica. Candidates only: no
    solver, no time limit."""
    from optimizer.candidates.build import build_candidates
    from optimizer.inputs.loading import load_plan

    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.replace("MODEL", model).replace("POOL", pool).replace("TPS", tps)
                    .replace("SERVING", serving or "team: x"))
    cands = build_candidates(load_plan(path), frozenset({"chat"})).all()
    families = {c.family for c in cands} | {"mig" for c in cands if c.mig}
    assert "disagg" in families and (model != "qwen3-30b-a3b" or {"ep", "mig"} <= families), families
    for c in {c.key: c for c in cands if c.goodput_source == "estimated"}.values():
        args = ["estimate", "--model", model, "--accelerator", c.accelerator, "--precision", c.precision,
                "--input-tokens", "2000", "--output-tokens", "300", "--tpot-ms", "40", "--ttft-ms", "2000",
                "--offer", c.offer, "--json", *flags]
        if c.engine and c.engine != "generic":  # the engine the candidate was sized on (its best allowed one)
            args += ["--engine", c.engine]
        layout = c.key.split("/")[3]
        if c.family == "disagg":
            pre, dec = layout.removeprefix("disagg-p").split("-d")
            args += ["--disagg", *_layout_flags(dec), *_layout_flags(pre, "prefill-")]
        else:
            args += _layout_flags(layout)
        if c.mig:
            args = [a for a in args if a not in ("--tp", 1)] + ["--mig", c.mig]
        res = invoke(*args)
        assert res.exit_code == 0, (c.key, res.output)
        d = json.loads(res.stdout)
        assert d["goodput_output_tokens_per_s"] == pytest.approx(c.goodput, abs=6e-4), c.key  # JSON rounds to 1e-3
        gpus = d.get("gpu_fraction", d["gpus"])
        assert gpus == pytest.approx(c.gpu_fraction, rel=1e-6), c.key


def test_a_prefill_group_that_does_not_hold_the_model_is_refused():
    res = invoke("estimate", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--precision", "bf16",
                 "--tp", "4", "--disagg", "--prefill-tp", "1", "--tpot-ms", "50")
    assert res.exit_code == 2 and "the prefill group (tp1) does not hold the model" in res.output


class _Engine:
    def __init__(self, id, runs):
        self.id, self.runs, self.aliases = id, runs, []

    def why_not(self, generation, precision, family):
        return None if generation in self.runs else f"{self.id} does not run {generation}"


def test_an_engine_that_does_not_run_the_accelerator_is_refused_naming_one_that_does():
    """With the catalog's engines section (its Engine.why_not), --engine is checked against the accelerator."""
    from types import SimpleNamespace

    from optimizer.cli.sizing import _check_engine
    from optimizer.errors import PlanError

    cat = load_catalog([])
    acc, prec = cat.accelerators["mi300x"], cat.precisions["fp8"]
    fake = SimpleNamespace(engines={"trtllm": _Engine("trtllm", {"hopper", "blackwell"}),
                                    "vllm": _Engine("vllm", {"hopper", acc.generation})},
                           estimator=cat.estimator)
    assert _check_engine(fake, "vllm", acc, prec, "tp") == "vllm"
    with pytest.raises(PlanError) as e:
        _check_engine(fake, "trtllm", acc, prec, "tp")
    assert f"trtllm does not run {acc.generation}" in str(e.value) and "engines that run it: vllm" in str(e.value)
    with pytest.raises(PlanError) as e:
        _check_engine(fake, "nope", acc, prec, "tp")
    assert "unknown engine 'nope'" in str(e.value) and "trtllm, vllm" in str(e.value)
