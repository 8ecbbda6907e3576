"""What the builder shares between configs changes no number: a workload alike in all sizing reads (a twin) gets the
first one's configs and drops under its own name, exactly as sizing it alone would give them; a roofline's
per-step constants give the very floats of its formulas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from optimizer.candidates.build import build_candidates
from optimizer.inputs.catalog import builtin_catalog
from optimizer.inputs.loading import load_plan
from optimizer.physics import roofline
from optimizer.physics.layout import Layout

CATALOG = builtin_catalog()


def _plan(tmp_path: Path, names: list[str]) -> Path:
    w = {"model": "llama-3.1-70b", "precisions": ["bf16", "fp8"], "accelerators": ["h100-sxm", "a100-80gb", "l40s"],
         "tokens": {"input": 2000, "output": 300}, "slo": {"ttft_ms": 1000, "tpot_ms": 50},
         "demand": {"peak_output_tokens_per_s": 2000}}
    path = tmp_path / f"{'-'.join(names)}.yaml"
    path.write_text(json.dumps({"plan": "twins", "horizon_days": 30, "catalogs": ["builtin"],
                                "workloads": [{"name": n, **w} for n in names]}))
    return path


def _dump(cs, name: str) -> tuple[list[str], list[str]]:
    """Every config and drop of one workload, with its name and keys written as 'X'."""
    configs = [repr(c).replace(f"'{name}/", "'X/").replace(f"workload='{name}'", "workload='X'")
               for c in cs.by_workload[name]]
    drops = [repr(d).replace(f"workload='{name}'", "workload='X'") for d in cs.dropped if d.workload == name]
    return configs, drops


def test_a_twin_is_configured_as_it_would_be_alone(tmp_path):
    both = build_candidates(load_plan(_plan(tmp_path, ["left", "right"])), keep_dominated=frozenset({"left", "right"}))
    alone = build_candidates(load_plan(_plan(tmp_path, ["right"])), keep_dominated=frozenset({"right"}))
    twin, own = _dump(both, "right"), _dump(alone, "right")
    assert twin[0] and twin == own
    assert twin[1] and twin[1] == own[1]
    assert _dump(both, "left") == own


@pytest.mark.parametrize("model,acc,prec,tp", [("llama-3.1-70b", "h100-sxm", "fp8", 2),
                                               ("mixtral-8x7b", "a100-80gb", "bf16", 2),
                                               ("qwen3-8b", "l40s", "bf16", 1)])
def test_the_decode_step_constants_give_the_formulas_floats(model, acc, prec, tp):
    rl = roofline.roofline(CATALOG.models[model], CATALOG.precisions[prec], CATALOG.accelerators[acc],
                           Layout("tp", tp=tp), 2000, 300, params=CATALOG.estimator)
    assert rl._plain
    for b in [1, 2, 3.5, 7.25, 16, 100.125, 255.99609375, 1024]:
        whole = rl._body_s(b, 1) + rl._comm(b) + rl.overhead  # the step as its terms define it
        assert rl.decode_s(b) == whole and rl.decode_s(b) == whole  # (the second from the kept step)
        prefill = rl.prefill_s(b * rl.input_tokens / rl.output_tokens)
        assert rl.tpot_s(b) == whole + prefill
    assert rl._alone_s == rl.prefill_alone_s(rl.input_tokens)
    assert rl._chunks == max(1, math.ceil(rl.input_tokens * rl.uncached_share / rl.chunk_tokens))
