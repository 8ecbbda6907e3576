"""Speculative decoding and prefix caching in the roofline (docs/speculative-and-prefix-caching.md)."""

from dataclasses import replace

import pytest

from optimizer.inputs.catalog import load_catalog
from optimizer.physics import memory
from optimizer.physics.layout import Layout, links
from optimizer.physics.roofline import Speculation, roofline

BATCHES = (1, 4, 16, 64, 256)


@pytest.fixture(scope="module")
def setup():
    cat = load_catalog([])
    m, a, p = cat.models["llama-3.1-70b"], cat.accelerators["h100-sxm"], cat.precisions["fp8"]
    layout = Layout("tp", tp=2)
    ln = links(a, layout, cat.estimator)

    def make(**kw):
        return roofline(m, p, a, layout, 2000, 300, params=cat.estimator, link=ln, **kw)

    return cat, make


@pytest.mark.parametrize("a", [0.0, 0.3, 0.6, 0.9])
@pytest.mark.parametrize("k", [1, 3, 7, 16])
def test_tokens_per_step_is_the_expected_accepted_run(a, k):
    s = Speculation("mtp", k, a)
    assert s.tokens_per_step() == pytest.approx(sum(a**i for i in range(k + 1)), rel=1e-12)
    assert 1.0 <= s.tokens_per_step() <= k + 1


def test_absent_keys_change_nothing(setup):
    _, make = setup
    plain = make()
    assert make(speculative=None, prefix_hit_rate=0.0) == plain
    assert plain.verify_tokens == 1 and plain.tokens_per_step == 1.0 and plain.uncached_share == 1.0


@pytest.mark.parametrize("method", ["mtp", "draft"])
def test_nothing_accepted_is_never_faster_than_plain(setup, method):
    cat, make = setup
    plain = make()
    for k in (1, 3, 8):
        spec = make(speculative=Speculation(method, k, 0.0), draft_model=cat.models["llama-3.2-1b"])
        assert spec.tokens_per_step == 1.0
        for b in BATCHES:
            assert spec.tpot_s(b) >= plain.tpot_s(b)
            assert spec.step_s(b) >= plain.decode_s(b)


def test_tpot_is_the_step_over_the_tokens_it_emits(setup):
    cat, make = setup
    spec = make(speculative=Speculation("mtp", 3, 0.7))
    tau = (1 - 0.7**4) / (1 - 0.7)
    assert spec.tokens_per_step == pytest.approx(tau)
    for b in BATCHES:
        step = spec.step_s(b)
        assert spec.decode_s(b) == pytest.approx(step / tau, rel=1e-12)
        assert spec.tpot_s(b) == pytest.approx(step / tau + spec.prefill_s(b * 2000 / 300), rel=1e-12)


def test_the_step_reads_the_weights_once_and_pays_flops_per_verified_token(setup):
    _, make = setup
    plain = make()
    k = 3
    spec = make(speculative=Speculation("mtp", k, 0.5))
    no_draft = replace(spec, draft_share=0.0)
    for b in BATCHES:
        mem_p, comp_p, _ = plain.parts(b)
        mem_s, comp_s, _ = replace(no_draft, tokens_per_step=1.0).parts(b)
        assert mem_s == pytest.approx(mem_p, rel=1e-12)  # a dense model: the same bytes per step
        assert comp_s == pytest.approx((k + 1) * comp_p, rel=1e-12)
    # MTP drafting: k extra layers' worth of the body per step
    layers = 80
    assert spec.draft_share == pytest.approx(k / layers)
    assert spec.step_s(16) > no_draft.step_s(16)


def test_high_acceptance_lowers_tpot_at_small_batch(setup):
    _, make = setup
    plain = make()
    spec = make(speculative=Speculation("mtp", 3, 0.8))
    assert spec.tpot_s(1) < 0.6 * plain.tpot_s(1)


def test_a_draft_model_pays_its_own_decode_steps(setup):
    cat, make = setup
    draft = cat.models["llama-3.2-1b"]
    spec = make(speculative=Speculation("draft", 4, 0.7), draft_model=draft)
    mtp = make(speculative=Speculation("mtp", 4, 0.7))
    assert spec.draft is not None and spec.draft_steps == 4
    for b in BATCHES:
        assert spec.step_s(b) == pytest.approx(replace(mtp, draft_share=0.0).step_s(b) + 4 * spec.draft.decode_s(b),
                                               rel=1e-12)
    with pytest.raises(ValueError):
        make(speculative=Speculation("draft", 4, 0.7))


def test_a_draft_model_takes_memory(setup):
    cat, _ = setup
    m, a, p = cat.models["llama-3.1-70b"], cat.accelerators["h100-sxm"], cat.precisions["fp8"]
    plain = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, 2, 4096)
    with_draft = memory.fit(m, p, a.memory_bytes_per_gpu / 1e9, 2, 4096, draft=cat.models["llama-3.2-1b"])
    assert with_draft.weights_gb > plain.weights_gb and with_draft.kv_gb_per_seq > plain.kv_gb_per_seq
    assert with_draft.kv_concurrency < plain.kv_concurrency


@pytest.mark.parametrize("h", [0.25, 0.5, 0.9])
def test_a_prefix_hit_cuts_prefill_but_not_the_kv(setup, h):
    _, make = setup
    plain, cached = make(), make(prefix_hit_rate=h)
    assert cached.kv_bytes_per_seq == plain.kv_bytes_per_seq  # the cached prefix is still attended to
    alone_p, alone_c = plain.prefill_alone_s(2000), cached.prefill_alone_s(2000)
    # the GEMMs shrink by (1 − h); attention over the cached prefix is still computed for the new tokens
    assert (1 - h) * alone_p <= alone_c < alone_p
    assert cached.prefill_s(1000) < plain.prefill_s(1000)
    assert cached.ttft_s(1) < plain.ttft_s(1)
    assert cached.tpot_s(64) < plain.tpot_s(64)  # less prefill interference per step


def test_the_uncached_suffix_attends_to_the_whole_prefix(setup):
    """Full causal attention: the suffix's attention is (1 − h²) of the whole prompt's, its GEMMs (1 − h); so
    prefill(h) − (1 − h)·prefill(0) = h(1 − h)·attention, the same attention whatever h."""
    _, make = setup
    alone = make().prefill_alone_s_per_token  # the per-layer latencies (prefill_alone_fixed_s) stay whole
    implied = [(make(prefix_hit_rate=h).prefill_alone_s_per_token - (1 - h) * alone) / (h * (1 - h))
               for h in (0.2, 0.5, 0.8)]
    assert implied[0] > 0
    assert implied[1] == pytest.approx(implied[0], rel=1e-9) and implied[2] == pytest.approx(implied[0], rel=1e-9)


def test_bad_arguments(setup):
    _, make = setup
    for bad in (Speculation("mtp", 0, 0.5), Speculation("mtp", 17, 0.5), Speculation("mtp", 3, 1.0),
                Speculation("eagle", 3, 0.5)):
        with pytest.raises(ValueError):
            make(speculative=bad)
    with pytest.raises(ValueError):
        make(prefix_hit_rate=1.0)
