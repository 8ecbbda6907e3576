"""A bandwidth of 0 is a stated value (no link), never a missing one: the physics does not fall back
to a default network where an offer says there is none."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from optimizer.inputs.catalog import load_estimator_params
from optimizer.inputs.schema.catalog import CatalogFile
from optimizer.physics import memory, roofline
from optimizer.physics.layout import GB_S, Layout, links
from optimizer.resources import catalogs_dir


def _load(name: str) -> dict:
    data = YAML(typ="safe").load((catalogs_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
    return {e.id: e for e in getattr(CatalogFile.model_validate(data), name)}


ACC, MOD, PREC = _load("accelerators"), _load("models"), _load("precisions")
PARAMS = load_estimator_params()


def _pair(transfer_gb_s: float | None):
    """Llama-3.1-70B fp8 on H200, prefill tp1 and decode tp2, 500 in / 500 out, p90 TTFT 800 ms, TPOT 40 ms."""
    m, p, a = MOD["llama-3.1-70b"], PREC["fp8"], ACC["h200-sxm"]
    pre, dec = Layout("tp", tp=1), Layout("tp", tp=2)
    f = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, 2, 1000, 0.10, p.kv_bytes_per_elem, attention_tp=2,
                   runtime_gb_per_gpu=PARAMS.runtime_gb)
    return roofline.disaggregated(m, p, a, pre, dec, 500, 500, ttft_ms=800, tpot_ms=40, percentile=90.0,
                                  max_batch=f.kv_concurrency, params=PARAMS, prefill_link=links(a, pre, PARAMS),
                                  decode_link=links(a, dec, PARAMS), transfer_gb_s=transfer_gb_s)


def test_a_transfer_bandwidth_of_zero_is_no_link_not_the_fallback():
    """roofline.disaggregated read `transfer_gb_s or accelerator.scale_out_gb_s or fallback`: 0 (an offer with
    no inter-node network) became 50 GB/s. Now 0 raises: no link carries the KV between the groups."""
    with pytest.raises(ValueError, match="no link carries the KV"):
        _pair(0.0)


def test_the_transfer_runs_at_the_bandwidth_given_and_defaults_only_when_none_is():
    m, p, a = MOD["llama-3.1-70b"], PREC["fp8"], ACC["h200-sxm"]
    kv_seq = roofline.kv_bytes_per_seq(m, 500, p.kv_bytes_per_elem)
    for given, used in ((5.0, 5.0), (400.0, 400.0), (None, a.scale_out_gb_s)):
        d = _pair(given)
        assert d is not None
        assert d.kv_transfer_ms == pytest.approx(kv_seq / (used * 1e9 * PARAMS.eta_scale_out * 2) * 1e3)


def test_links_take_an_offer_network_of_zero_as_none():
    """links(): `scale_out_gb_s=0` is the offer's word (no network), not a missing value — the stage and
    all-to-all links across machines get no bandwidth to speak of, never the accelerator's 50 GB/s."""
    h100 = ACC["h100-sxm"]
    pp2 = Layout("pp", tp=8, pp=2)
    none = links(h100, pp2, PARAMS, domain=8, scale_out_gb_s=0.0)
    stated = links(h100, pp2, PARAMS, domain=8, scale_out_gb_s=None)
    assert stated.stage_bw == pytest.approx(h100.scale_out_gb_s * GB_S * PARAMS.eta_scale_out)
    assert none.stage_bw < 1e-3 * stated.stage_bw
    ep16 = links(h100, Layout("ep", tp=1, dp=16), PARAMS, domain=8, scale_out_gb_s=0.0)
    assert ep16.a2a_bw < 1e-3 * stated.stage_bw * 16
