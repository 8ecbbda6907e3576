"""Workload keys speculative and prefix_cache: bounds and key paths, every problem at once."""

import pytest

from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan

PLAN = """\
plan: serving keys
horizon_days: 1
workloads:
  - name: chat
    model: llama-3.1-70b
    precisions: [fp8]
    tokens: {input: 2000, output: 300}
    demand: {peak_output_tokens_per_s: 1000}
    KEYS
"""


def _load(tmp_path, keys: str):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.replace("KEYS", keys))
    return load_plan(path)


def test_good_keys_load(tmp_path):
    w = _load(tmp_path, "speculative: {method: draft, draft_tokens: 4, acceptance: 0.6, draft_model: llama-3.2-1b}\n"
                        "    prefix_cache: {hit_rate: 0.5}").plan.workloads[0]
    assert w.speculative.draft_tokens == 4 and w.prefix_cache.hit_rate == 0.5


@pytest.mark.parametrize("keys, says", [
    ("speculative: {method: mtp, draft_tokens: 0, acceptance: 0.5}", "workloads[0].speculative.draft_tokens"),
    ("speculative: {method: mtp, draft_tokens: 17, acceptance: 0.5}", "workloads[0].speculative.draft_tokens"),
    ("speculative: {method: mtp, draft_tokens: 3, acceptance: 1}", "workloads[0].speculative.acceptance"),
    ("speculative: {method: mtp, draft_tokens: 3, acceptance: -0.1}", "workloads[0].speculative.acceptance"),
    ("speculative: {method: eagle, draft_tokens: 3, acceptance: 0.5}", "workloads[0].speculative.method"),
    ("speculative: {method: draft, draft_tokens: 3, acceptance: 0.5}", "needs draft_model"),
    ("speculative: {method: mtp, draft_tokens: 3, acceptance: 0.5, draft_model: llama-3.2-1b}", "draft_model is for"),
    ("speculative: {method: draft, draft_tokens: 3, acceptance: 0.5, draft_model: nope-1b}",
     "workloads[0].speculative.draft_model: unknown model 'nope-1b'"),
    ("prefix_cache: {hit_rate: 1.0}", "workloads[0].prefix_cache.hit_rate"),
    ("prefix_cache: {hit_rate: -0.5}", "workloads[0].prefix_cache.hit_rate"),
])
def test_bad_keys_name_their_path(tmp_path, keys, says):
    with pytest.raises(PlanError) as e:
        _load(tmp_path, keys)
    assert says in str(e.value)


def test_both_at_once(tmp_path):
    with pytest.raises(PlanError) as e:
        _load(tmp_path, "speculative: {method: mtp, draft_tokens: 30, acceptance: 0.5}\n    prefix_cache: {hit_rate: 2}")
    assert "speculative.draft_tokens" in str(e.value) and "prefix_cache.hit_rate" in str(e.value)
