"""Only configs the hardware can run: a replica, or a disaggregated prefill–decode pair, that spans machines
needs the offer's inter-node network, and `scale_out_gb_s: 0` means there is none. Within one machine the
machine's own links carry the KV."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from optimizer.candidates import configs
from optimizer.candidates.build import build_candidates
from optimizer.candidates.types import Dropped
from optimizer.inputs.catalog import builtin_catalog, load_estimator_params
from optimizer.inputs.loading import load_plan
from optimizer.inputs.schema.catalog import Offer
from optimizer.physics.layout import Layout
from optimizer.pipeline import explain, solve_plan

CATALOG = builtin_catalog()
PARAMS = load_estimator_params()
TP1, TP2, TP8 = Layout("tp", tp=1), Layout("tp", tp=2), Layout("tp", tp=8)
FLAT = [1.0] * 24


def _offer(acc: str, node: int, scale_out: float | None, scale_up: int | None = None) -> Offer:
    return Offer(id=f"test-{acc}", accelerator=acc, provider="test", gpus_per_node=node, scale_up_gpus=scale_up,
                 scale_out_gb_s=scale_out, price_per_gpu_hour={"on-demand": 2.0})


def test_the_gh200_offers_state_no_inter_node_network():
    """Cloud GH200 instances are single superchips with no multi-node fabric (the gh200 accelerator's note):
    coreweave-gh200 left scale_out_gb_s unset and inherited 50 GB/s."""
    for oid in ("lambda-gh200", "coreweave-gh200"):
        o = CATALOG.offers[oid]
        assert (o.gpus_per_node, o.max_tp, o.scale_out_gb_s) == (1, 1, 0.0)
        assert configs.offer_scale_out(CATALOG.accelerators["gh200"], o, PARAMS) == 0.0


def test_an_offer_network_of_zero_is_kept_and_only_none_falls_back():
    h100 = CATALOG.accelerators["h100-sxm"]
    assert configs.offer_scale_out(h100, _offer("h100-sxm", 8, 0.0), PARAMS) == 0.0
    assert configs.offer_scale_out(h100, _offer("h100-sxm", 8, 12.5), PARAMS) == 12.5
    assert configs.offer_scale_out(h100, _offer("h100-sxm", 8, None), PARAMS) == h100.scale_out_gb_s


def test_a_pair_across_machines_without_a_network_is_refused():
    gh200 = CATALOG.accelerators["gh200"]
    why = configs.why_not_pair(gh200, CATALOG.offers["lambda-gh200"], TP1, TP1, PARAMS)
    assert why is not None and why[0] == "network"
    assert "span machines of 1" in why[1] and "scale_out_gb_s: 0" in why[1]
    # the same pair with a network is a pair the offer can host, at the network's bandwidth
    networked = _offer("gh200", 1, 25.0, scale_up=1)
    assert configs.why_not_pair(gh200, networked, TP1, TP1, PARAMS) is None
    assert configs.pair_transfer_gb_s(gh200, networked, TP1, TP1, PARAMS) == 25.0


def test_a_pair_inside_one_machine_uses_the_machine_links_whatever_the_network():
    h100 = CATALOG.accelerators["h100-sxm"]
    lonely = CATALOG.offers["lambda-h100-sxm"]  # 8 GPUs on NVLink, scale_out_gb_s: 0
    assert lonely.scale_out_gb_s == 0.0
    assert configs.why_not_pair(h100, lonely, TP1, TP2, PARAMS) is None
    assert configs.pair_transfer_gb_s(h100, lonely, TP1, TP2, PARAMS) == h100.scale_up_bandwidth_gb_s
    # prefill tp1 + decode tp8 is 9 GPUs: across machines, which this offer cannot join
    assert configs.why_not_pair(h100, lonely, TP1, TP8, PARAMS)[0] == "network"
    # a PCIe card eight to a machine: the pair talks over the host's PCIe, not a network
    pcie = CATALOG.accelerators["h100-pcie"]
    box = _offer("h100-pcie", 8, 0.0, scale_up=1)
    assert configs.why_not_pair(pcie, box, TP1, TP2, PARAMS) is None
    assert configs.pair_transfer_gb_s(pcie, box, TP1, TP2, PARAMS) == pcie.pcie_gb_s


def _plan(tmp_path: Path, **extra) -> Path:
    w = {"name": "chat", "model": "llama-3.3-70b", "pool": "interactive", "precisions": ["bf16", "fp8"],
         "offers": ["lambda-gh200", "coreweave-gh200"], "tokens": {"input": 2000, "output": 400},
         "context_tokens": 8192, "slo": {"ttft_ms": 2000, "tpot_ms": 60},
         "demand": {"peak_output_tokens_per_s": 2000, "profile": FLAT}, **extra}
    plan = {"plan": "gh200 without a network", "horizon_days": 30, "catalogs": ["builtin"],
            "policy": {"tiers": ["on-demand", "reserved-1y"], "time_limit_s": 600}, "workloads": [w]}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def _one_gpu(c) -> bool:
    return c.family == "tp" and c.tp == 1 and c.pp == 1 and c.ep == 1 and c.gpu_fraction <= 1


def test_a_one_gpu_machine_without_a_network_gets_no_multi_gpu_or_disaggregated_replica(tmp_path):
    """Llama-3.3-70B on lambda-gh200 and coreweave-gh200 (one GPU per machine, no network) was offered
    'disagg: prefill tp1 × 0.375 + decode tp1', a pair spanning two machines, and bf16 pipelines on
    coreweave-gh200. Every config tried (dominated ones kept) is now one GPU; the rest say why."""
    loaded = load_plan(_plan(tmp_path))
    cands = build_candidates(loaded, frozenset({"chat"}))
    kept = cands.by_workload["chat"]
    assert kept and all(_one_gpu(c) for c in kept), [c.label for c in kept]
    network = [d for d in cands.dropped if d.family == "network"]
    for oid in ("lambda-gh200", "coreweave-gh200"):
        assert any(d.option.startswith(oid) and "disagg" in d.option for d in network), network
        assert any(d.option.startswith(oid) and "pp2" in d.option for d in network), network


def test_the_solve_and_explain_choose_and_price_only_one_gpu_replicas(tmp_path):
    path = _plan(tmp_path)
    result = solve_plan(path)
    w = result.workload("chat")
    if w.offer is not None:  # whatever the solver found in its time
        assert w.family == "tp" and w.gpus_per_replica <= 1 and w.pp == 1
    ex = explain(path, "chat")
    assert all("disagg" not in a.label and " pp" not in a.label for a in ex.alternatives), \
        [a.label for a in ex.alternatives]
    assert any(d.family == "network" and "disagg" in d.option for d in ex.dropped)


def test_size_disaggregated_refuses_a_spanning_pair_itself(tmp_path):
    """configs.size_disaggregated does not rely on its caller: a pair it cannot connect is a `network` drop,
    not a pair priced at a default network."""
    plan = load_plan(_plan(tmp_path)).plan
    out = configs.size_disaggregated(plan, plan.workloads[0], CATALOG.models["llama-3.3-70b"],
                                     CATALOG.accelerators["gh200"], CATALOG.offers["lambda-gh200"],
                                     CATALOG.precisions["fp8"], TP1, TP1, PARAMS)
    assert isinstance(out, Dropped) and out.family == "network"


@pytest.mark.parametrize("oid", ["lambda-gh200", "coreweave-gh200"])
def test_every_layout_that_spans_a_gh200_machine_is_refused_for_the_network(oid):
    gh200, offer = CATALOG.accelerators["gh200"], CATALOG.offers[oid]
    for layout in (Layout("pp", tp=1, pp=2), Layout("pp", tp=1, pp=8), Layout("ep", tp=1, dp=4)):
        why = configs.why_not_layout(gh200, offer, layout, PARAMS)
        assert why is not None and why[0] == "network", (layout, why)


# The other fallbacks of candidates/ on a bandwidth, a count or a price where 0 is legal fall back to 0
# itself (`price or 0.0`, `lead_time_days or 0`, `residual_fraction or 0.0`, `support_per_year or 0.0`,
# `max_gpus_per_instance or 0`): a stated 0 keeps its meaning. These pin that down.

def test_a_price_of_zero_ranks_a_config_at_no_cost(tmp_path):
    from optimizer.candidates.prune import standalone_cost
    loaded = load_plan(_plan(tmp_path))
    c = next(c for c in build_candidates(loaded).by_workload["chat"] if c.offer == "lambda-gh200")
    free = CATALOG.offers["lambda-gh200"].model_copy(update={"price_per_gpu_hour": {"on-demand": 0.0}})
    assert standalone_cost(loaded.plan, {"lambda-gh200": free}, c) == 0.0
    paid = standalone_cost(loaded.plan, {"lambda-gh200": CATALOG.offers["lambda-gh200"]}, c)
    assert paid > 0


def test_bought_servers_with_no_lead_time_residual_or_support_arrive_at_once_and_cost_none(tmp_path):
    from optimizer.candidates import ownership
    from optimizer.inputs.schema.catalog import BuyTerms
    plan = load_plan(_plan(tmp_path)).plan
    plan = plan.model_copy(update={"start_date": datetime.date(2027, 1, 4)})
    buy = BuyTerms(price_per_node=300_000.0, node_power_kw=10.0, lead_time_days=0, residual_fraction=0.0,
                   support_per_year=0.0)
    offer = Offer(id="own-h100", accelerator="h100-sxm", provider="own", gpus_per_node=8, buy=buy)
    t = ownership.terms(plan, {offer.id: offer})[offer.id]
    assert t.residual_fraction == 0.0 and t.support_per_year == 0.0 and t.delivery == plan.start_date
    assert [a.day for a in ownership.arrivals(plan, {offer.id: offer})] == [0]
    assert offer.max_tp == 8  # no max_gpus_per_instance, no scale_up_gpus: the node
