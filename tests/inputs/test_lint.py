"""inputs/lint.py: the warnings of a plan that loads but looks wrong, from the plan alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.inputs.lint import lint
from optimizer.inputs.loading import load_plan

ROOT = Path(__file__).resolve().parents[2]

ODD = """\
plan: odd but valid
horizon_days: 14
start_date: 2027-01-04
day_types: {weekday: 4, weekend: 10}
catalogs: [builtin]
policy: {tiers: [on-demand], spot_pools: [interactive], providers: [lambda]}
offers:
  - {id: lambda-h100-steep, accelerator: h100-sxm, provider: lambda, gpus_per_node: 8,
     price_per_gpu_hour: {on-demand: 250}}
  - {id: acme-h100, accelerator: h100-sxm, provider: acme, gpus_per_node: 8, price_per_gpu_hour: {on-demand: 2.0}}
workloads:
  - {name: chat, model: llama-3.1-8b, tokens: {input: 1000, output: 250}, slo: {ttft_ms: 1500000},
     demand: {peak_output_tokens_per_s: 900}}
"""


def test_every_odd_thing_is_said_once_in_plan_order(tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text(ODD, encoding="utf-8")
    said = lint(load_plan(path).plan)
    starts = ["policy.spot_pools names interactive, but policy.tiers has no spot",
              "offer lambda-h100-steep: 250 USD per GPU-hour (on-demand) is far above any accelerator's rent",
              "day_types state weekday 4, weekend 10, but the calendar from start_date 2027-01-04 has weekday 10, "
              "weekend 4",
              "offer acme-h100 is in the plan, but its provider acme is not in policy.providers (lambda)",
              "chat: slo.ttft_ms 1,500,000 ms is 25.0 minutes — targets are in milliseconds"]
    assert len(said) == len(starts), said
    for sentence, start in zip(said, starts):
        assert sentence.startswith(start), (sentence, start)


@pytest.mark.parametrize("plan", sorted((ROOT / "plans").glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_plans_are_clean(plan):
    assert lint(load_plan(plan).plan) == []
