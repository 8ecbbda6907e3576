"""The property tests' settings and extras: a fixed, derandomized hypothesis sample, and a random plan
given a batch job or API overflow."""

from __future__ import annotations

import copy
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.helpers.small_plans import batch


EXAMPLES = int(os.environ.get("PLANOPT_PROPERTY_EXAMPLES", "25"))
"""A fixed, derandomized sample in the suite; PLANOPT_PROPERTY_EXAMPLES=500 PLANOPT_PROPERTY_RANDOM=1 explores."""
DERANDOMIZE = os.environ.get("PLANOPT_PROPERTY_RANDOM", "") != "1"
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE,
                    suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(min_value=0, max_value=100_000)


def with_extras(data: dict, draw, *, batch_job: bool = True) -> dict:
    """Sometimes a batch job on the plan's accelerators, sometimes API overflow on one workload."""
    data = copy.deepcopy(data)
    accs = [a["id"] for a in data["accelerators"]]
    if batch_job and draw(st.booleans()):
        data["models"].append({"id": "batch-7b", "params_b": 7, "kv_gb_per_seq": 0.1})  # fits every accelerator
        goodput = draw(st.sampled_from([200.0, 500.0, 1200.0]))
        w = batch("nightly", draw(st.sampled_from([2, 8, 30])) * 3600 * goodput, draw(st.sampled_from([[22, 6], [0, 0]])),
                  accs=tuple(accs), goodput=goodput)
        w["model"] = "batch-7b"
        if draw(st.booleans()):
            w["api"] = {"usd_per_m_input": 0.1, "usd_per_m_output": draw(st.sampled_from([0.5, 5.0])), "max_share": 0.3}
        data["workloads"].append(w)
        data["policy"]["spot_pools"] = sorted(set(data["policy"]["spot_pools"]) | {"batch"})
    if draw(st.booleans()):
        i = draw(st.integers(0, len(interactive_workloads(data)) - 1))
        interactive_workloads(data)[i]["api"] = {"usd_per_m_input": 0.1, "usd_per_m_output": draw(st.sampled_from([0.3, 3.0])),
                                        "max_share": draw(st.sampled_from([0.05, 0.2]))}
    return data


def interactive_workloads(data: dict) -> list[dict]:
    return [w for w in data["workloads"] if "demand" in w]
