"""Measurements beat the model: a measured point is never dropped by the model's own memory check. It counts
the sequences in flight (goodput × TPOT, Little's law) at the TPOT the load test achieved where the point
records one; where the model's KV cache holds fewer, `validate` and `solve` warn with both numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

from typer.testing import CliRunner

from optimizer.candidates.build import build_candidates
from optimizer.cli import app
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import solve_plan

FLAT = [1.0] * 24
TPOT_TARGET = 120.0
# Llama-3.1-70B fp8 on H100 SXM, 8k context: the memory model holds about 3, 60, 175 and 400 sequences at
# tp1, tp2, tp4 and tp8. Every point was measured at the 120 ms TPOT target; at that target the goodputs
# below need 48, 240, 600 and 1,080 sequences — more than the model's KV cache holds at every degree.
POINTS = [
    {"accelerator": "h100-sxm", "precision": "fp8", "tp": 1, "goodput_output_tokens_per_s": 400},
    {"accelerator": "h100-sxm", "precision": "fp8", "tp": 2, "goodput_output_tokens_per_s": 2000, "tpot_ms": 25,
     "ttft_ms": 640},
    {"accelerator": "h100-sxm", "precision": "fp8", "tp": 4, "goodput_output_tokens_per_s": 5000},
    {"accelerator": "h100-sxm", "precision": "fp8", "tp": 8, "goodput_output_tokens_per_s": 9000, "tpot_ms": 70},
]


def _plan(tmp_path: Path, points=POINTS, name: str = "measured.yaml") -> Path:
    w = {"name": "chat", "model": "llama-3.1-70b", "pool": "interactive", "precisions": ["fp8"],
         "offers": ["lambda-h100-sxm", "coreweave-h100-sxm"], "parallelism": ["tp"],
         "tokens": {"input": 2000, "output": 400}, "context_tokens": 8192, "slo": {"tpot_ms": TPOT_TARGET},
         "demand": {"peak_output_tokens_per_s": 20000, "profile": FLAT}, "measured": points}
    plan = {"plan": "every config measured at a TPOT target", "horizon_days": 30, "catalogs": ["builtin"],
            "policy": {"tiers": ["on-demand"], "time_limit_s": 600}, "workloads": [w]}
    path = tmp_path / name
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def test_no_measured_point_is_dropped_by_the_memory_check(tmp_path):
    """The memory check multiplied goodput by the target TPOT and dropped every point here; estimated
    configs then served the plan. Every point is now a candidate on every offer, with its measured goodput."""
    cands = build_candidates(load_plan(_plan(tmp_path)), frozenset({"chat"}))
    kept = cands.by_workload["chat"]
    for m in POINTS:
        for oid in ("lambda-h100-sxm", "coreweave-h100-sxm"):
            c = next((c for c in kept if c.offer == oid and c.tp == m["tp"] and c.mig is None), None)
            assert c is not None, (oid, m)
            assert c.goodput_source == "measured" and c.goodput == m["goodput_output_tokens_per_s"]
    assert not [d for d in cands.dropped if d.family == "fit" and "tp" in d.option], cands.dropped


def test_little_law_runs_at_the_achieved_tpot_where_the_point_records_it(tmp_path):
    cands = build_candidates(load_plan(_plan(tmp_path)), frozenset({"chat"}))
    by_tp = {c.tp: c for c in cands.by_workload["chat"] if c.offer == "lambda-h100-sxm"}
    for m in POINTS:
        c = by_tp[m["tp"]]
        tpot = m.get("tpot_ms", TPOT_TARGET)
        assert c.needed_concurrency == math.ceil(m["goodput_output_tokens_per_s"] * tpot / 1000)
        assert (c.tpot_ms, c.ttft_ms) == (m.get("tpot_ms"), m.get("ttft_ms"))
    # tp2 at its achieved 25 ms needs 50 sequences, which the model's KV cache holds: no warning for it
    assert by_tp[2].needed_concurrency <= by_tp[2].kv_concurrency
    assert not any("tp2" in n for n in cands.notes)


def test_a_contradiction_is_a_warning_naming_both_numbers(tmp_path):
    cands = build_candidates(load_plan(_plan(tmp_path)), frozenset({"chat"}))
    by_tp = {c.tp: c for c in cands.by_workload["chat"] if c.offer == "lambda-h100-sxm"}
    contradicted = [t for t, c in by_tp.items() if c.needed_concurrency > c.kv_concurrency]
    assert sorted(contradicted) == [1, 4, 8]
    assert len(cands.notes) == 3  # once per point, not once per offer
    for t in contradicted:
        c = by_tp[t]
        note = next(n for n in cands.notes if f"h100-sxm · fp8 · tp{t}," in n)
        assert f"{c.goodput:,.4g} tok/s" in note and f"holds {c.kv_concurrency:,}" in note
        assert f"needs {c.needed_concurrency:,} sequences" in note and "kept" in note
    assert "achieved TPOT 70 ms" in next(n for n in cands.notes if "tp8," in n)
    assert "target TPOT 120 ms" in next(n for n in cands.notes if "tp4," in n)


def test_validate_and_solve_warn_and_keep_the_measurement(tmp_path):
    path = _plan(tmp_path)
    out = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert out.exit_code == 0, out.output
    warnings = json.loads(out.stdout)["plans"][0]["warnings"]
    assert sum("measurement is kept" in w for w in warnings) == 3
    result = solve_plan(path)
    assert sum("measurement is kept" in n for n in result.notes) == 3
    w = result.workload("chat")
    if w.offer is not None:  # whatever the solver found in its time: only measured configs exist here
        assert w.goodput_source == "measured"


def test_estimated_configs_still_compete_beside_the_measured_ones(tmp_path):
    """A degree no point measured is estimated as before (the memory check applies to estimates)."""
    only_tp8 = [POINTS[3]]
    cands = build_candidates(load_plan(_plan(tmp_path, only_tp8)), frozenset({"chat"}))
    sources = {(c.tp, c.goodput_source) for c in cands.by_workload["chat"] if c.offer == "lambda-h100-sxm"}
    assert (8, "measured") in sources and (8, "estimated") not in sources
    assert any(src == "estimated" for _tp, src in sources)


def test_the_report_says_the_measurement_is_kept_beyond_the_memory_model(tmp_path):
    """The HTML memory card states both counts and that the measurement stands, instead of a bar that the
    model's KV cache cannot hold."""
    from optimizer.report.html import render_html

    at_target = [{k: v for k, v in m.items() if k not in ("tpot_ms", "ttft_ms")} for m in POINTS]
    result = solve_plan(_plan(tmp_path, at_target))  # every measured config needs more sequences than fit
    page = render_html(result)
    over = [w for w in result.workloads if w.goodput_source == "measured" and w.needed_concurrency > w.kv_concurrency]
    assert over or result.workloads[0].goodput_source != "measured"
    assert ("needs more sequences than the memory model fits; the measurement is kept" in page) == bool(over)
