"""tests.helpers.shipped: a plan solved once per session gives what a solve gives, a fresh copy each time, and a
changed plan or option is another solve."""

from __future__ import annotations

from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.jsonio import dumps

from tests.helpers import shipped
from tests.helpers.paths import SEED
from tests.helpers.solving import NO_TIME_LIMIT


def _stable(text: str) -> str:
    import json

    d = json.loads(text)
    d["solver"]["seconds"] = 0.0
    return json.dumps(d, sort_keys=True)


def test_a_shared_solve_is_the_solve_and_each_caller_gets_its_own_copy():
    a, b = shipped.solved(SEED), shipped.solved(SEED)
    assert a is not b and a.workloads is not b.workloads
    assert dumps(a) == dumps(b)
    assert _stable(dumps(a)) == _stable(dumps(solve_plan(SEED, SolveOptions(time_limit_s=NO_TIME_LIMIT))))


def test_the_key_follows_the_plans_bytes_and_the_options(tmp_path):
    plan = tmp_path / "seed.yaml"
    plan.write_text(SEED.read_text(encoding="utf-8"), encoding="utf-8")
    keys = {shipped._key(plan, SolveOptions(), None), shipped._key(plan, SolveOptions(mip_gap=0.0), None)}
    plan.write_text(SEED.read_text(encoding="utf-8").replace("peak_output_tokens_per_s: 9000",
                                                             "peak_output_tokens_per_s: 9001"), encoding="utf-8")
    keys.add(shipped._key(plan, SolveOptions(), None))
    assert len(keys) == 3
