"""planopt calibrate writes a request-size mix (tokens.mix) from a usage log: as many classes as the cost tells
apart (calibrate.mix), one class for one cluster, none unless the mix matters to the workload or --mix asks."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from optimizer.calibrate import mix as mix_mod
from optimizer.calibrate.run import CalibrateOptions, calibrate, write_outputs
from optimizer.cli import app
from optimizer.inputs.loading import load_plan

PLAN = """\
# A split workload on two offers: a compute-rich GPU and a cheaper one.
plan: mix test
currency: USD
horizon_days: 7
day_types: {{weekday: 7}}
catalogs: [builtin]

policy:
  occupancy: 0.6
  tiers: [on-demand]
  split: {split}

workloads:
  - name: chat
    model: llama-3.1-8b
    precisions: [fp8]
    offers: [coreweave-h100-sxm, coreweave-l40s]
    tokens: {tokens}   # last quarter's guess
    context_tokens: 16384
    slo: {{ttft_ms: 2000, tpot_ms: 60}}
    demand:
      peak_output_tokens_per_s: 9000
"""


def plan(tmp: Path, split: str = "by_size", tokens: str = "{input: 1800, output: 350}") -> Path:
    p = tmp / f"plan-{split}.yaml"
    p.write_text(PLAN.format(split=split, tokens=tokens), encoding="utf-8")
    return p


def log(tmp: Path, clusters: list[tuple[float, float, float]], n: int = 3000, seed: int = 1) -> Path:
    """A week of requests whose sizes come from clusters (share, mean input, mean output), ±20%."""
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 7, 6, tzinfo=dt.UTC).timestamp()
    ts = t0 + np.sort(rng.uniform(0, 7 * 86400, n))
    which = rng.choice(len(clusters), size=n, p=[c[0] for c in clusters])
    inp = np.array([rng.gamma(25, clusters[k][1] / 25) for k in which]).round().astype(int) + 1
    out = np.array([rng.gamma(25, clusters[k][2] / 25) for k in which]).round().astype(int) + 1
    iso = np.datetime_as_string((ts * 1000).astype("datetime64[ms]"), unit="ms")
    path = tmp / f"usage-{seed}-{len(clusters)}.csv"
    pd.DataFrame({"timestamp": [s + "Z" for s in iso], "model": "llama-3.1-8b", "prompt_tokens": inp,
                  "completion_tokens": out}).to_csv(path, index=False)
    return path


def tokens_of(text: str) -> dict:
    return YAML(typ="safe").load(text)["workloads"][0]["tokens"]


TWO = [(0.7, 200, 400), (0.3, 6000, 100)]
"""Short chats (decode-heavy) and long documents (prefill-heavy): the two GPUs' costs differ between them."""


def test_two_clusters_give_two_classes_at_their_sizes(tmp_path):
    p, usage = plan(tmp_path), log(tmp_path, TWO)
    cal = calibrate(p, CalibrateOptions(usage=(usage,)), tmp_path / "out.yaml")
    tok = tokens_of(cal.yaml_text)
    assert set(tok) == {"mix"}
    mix = tok["mix"]
    assert len(mix) == 2
    assert sum(c["share"] for c in mix) == pytest.approx(1.0, abs=1e-9)
    small, large = mix
    assert small["share"] == pytest.approx(0.7, abs=0.03) and large["share"] == pytest.approx(0.3, abs=0.03)
    # A grid cell astride the two clusters (the long documents of fewest output tokens beside short chats) goes
    # whole to one class: its means stay near, not at, the cluster's (the cost moved less than 0.5%).
    assert small["input"] == pytest.approx(200, rel=0.25) and small["output"] == pytest.approx(400, rel=0.1)
    assert large["input"] == pytest.approx(6000, rel=0.1) and large["output"] == pytest.approx(100, rel=0.1)
    # the mix's means are the log's means, as calibrate writes them without a mix
    wc = cal.workloads[0]
    assert sum(c["share"] * c["input"] for c in mix) == pytest.approx(wc.new_tokens[0], rel=1e-3)
    assert sum(c["share"] * c["output"] for c in mix) == pytest.approx(wc.new_tokens[1], rel=1e-3)
    # the comments of the plan stay, the new one says how the classes were chosen
    assert "# A split workload on two offers" in cal.yaml_text
    assert "calibrated: 2 size classes of 3,000 requests" in cal.yaml_text
    write_outputs(cal, tmp_path / "out.yaml", "<html></html>")
    assert len(load_plan(tmp_path / "out.yaml").plan.workloads[0].tokens.mix) == 2
    # deterministic
    again = calibrate(p, CalibrateOptions(usage=(usage,)), tmp_path / "out.yaml")
    assert again.yaml_text == cal.yaml_text


def test_one_tight_cluster_stays_input_and_output(tmp_path):
    p = plan(tmp_path)
    cal = calibrate(p, CalibrateOptions(usage=(log(tmp_path, [(1.0, 1000, 300)], seed=2),)), tmp_path / "out.yaml")
    tok = tokens_of(cal.yaml_text)
    assert set(tok) == {"input", "output"}
    assert tok["input"] == pytest.approx(1000, rel=0.05) and tok["output"] == pytest.approx(300, rel=0.05)


def test_a_workload_the_mix_does_not_matter_to_keeps_its_means_unless_asked(tmp_path):
    p, usage = plan(tmp_path, split="none"), log(tmp_path, TWO)
    default = calibrate(p, CalibrateOptions(usage=(usage,)), tmp_path / "out.yaml")
    means = calibrate(p, CalibrateOptions(usage=(usage,), mix=False), tmp_path / "out.yaml")
    assert default.yaml_text == means.yaml_text
    assert set(tokens_of(default.yaml_text)) == {"input", "output"}
    # --mix: split none still weighs the classes (one config serves every class at their harmonic mean)
    asked = calibrate(p, CalibrateOptions(usage=(usage,), mix=True), tmp_path / "out.yaml")
    assert "classes of input × output merged while the cost moved" in asked.yaml_text


def test_no_mix_replaces_a_plans_mix_by_the_means(tmp_path):
    p = plan(tmp_path, tokens="{mix: [{share: 0.5, input: 100, output: 100}, {share: 0.5, input: 900, output: 50}]}")
    cal = calibrate(p, CalibrateOptions(usage=(log(tmp_path, TWO),), mix=False), tmp_path / "out.yaml")
    assert set(tokens_of(cal.yaml_text)) == {"input", "output"}
    assert any(c.what == "size classes" and c.new == "one (the means)" for c in cal.changes)


def test_mix_options_need_a_usage_log(tmp_path):
    p = plan(tmp_path)
    result = CliRunner().invoke(app, ["calibrate", str(p), "-o", str(tmp_path / "o.yaml"), "--bench",
                                      str(tmp_path / "none.json"), "--no-mix"])
    assert result.exit_code == 2
    assert "--no-mix needs --usage" in result.output


# --- the merging rule, by hand ------------------------------------------------------------------------


def cells(*groups: tuple[int, int, int, float, float]) -> list[tuple[int, int, int, float, float]]:
    return list(groups)


TWO_CELLS = cells((10, 80, 500, 500 * 300.0, 500 * 700.0), (100, 20, 500, 500 * 6000.0, 500 * 5.0))


def test_goodput_that_ignores_sizes_merges_everything():
    choice = mix_mod.choose(TWO_CELLS, lambda sizes: {"a": (1.0, [100.0] * len(sizes))}, by_size=True)
    assert len(choice.classes) == 1 and choice.classes[0] == (1.0, 3150, 352.5)


def test_two_configs_each_best_at_one_class_keep_both():
    # config a: 100 tok/s on short requests, 10 on long; b the other way round; same price.
    def goodputs(sizes):
        return {"a": (1.0, [100.0 if i < 1000 else 10.0 for i, _o in sizes]),
                "b": (1.0, [10.0 if i < 1000 else 100.0 for i, _o in sizes])}
    split = mix_mod.choose(TWO_CELLS, goodputs, by_size=True)
    assert [(s, i, o) for s, i, o in split.classes] == [(0.5, 300, 700), (0.5, 6000, 5)]
    # Single cost N: a serves every class for 0.5·700/100 + 0.5·5/10 = 3.75 per request; merged (3150 input,
    # 352.5 output) b serves it at 352.5/100 = 3.525: 6% off, not negligible either.
    single = mix_mod.choose(TWO_CELLS, goodputs, by_size=False)
    assert len(single.classes) == 2


def test_a_small_cost_difference_is_merged():
    # b is 0.4% dearer on long requests than on short ones: a negligible difference
    def goodputs(sizes):
        return {"b": (1.0, [100.0 if i < 1000 else 99.6 for i, _o in sizes])}
    assert len(mix_mod.choose(TWO_CELLS, goodputs, by_size=True).classes) == 1
