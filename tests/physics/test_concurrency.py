"""Goodput at a fixed concurrency (a closed loop): Little's law holds at the answer, and the KV cap binds."""

import pytest

from optimizer.inputs.catalog import load_catalog
from optimizer.physics.concurrency import at_concurrency
from optimizer.physics.layout import Layout, links
from optimizer.physics.roofline import roofline


@pytest.fixture(scope="module")
def rl():
    cat = load_catalog([])
    m, a, p = cat.models["llama-3.1-70b"], cat.accelerators["h100-sxm"], cat.precisions["fp8"]
    layout = Layout("tp", tp=2)
    return roofline(m, p, a, layout, 1000, 200, params=cat.estimator, link=links(a, layout, cat.estimator))


@pytest.mark.parametrize("n", [1, 4, 16, 64])
def test_littles_law_at_the_answer(rl, n):
    r = at_concurrency(rl, n, 10_000)
    rate = r.output_tokens_per_s / rl.output_tokens
    # every request in flight is decoding or waiting for its first token
    assert r.batch + rate * r.ttft_ms / 1e3 == pytest.approx(n, rel=1e-6)
    assert r.tpot_ms == pytest.approx(rl.tpot_s(r.batch) * 1e3)


def test_more_concurrency_more_throughput_and_slower_tokens(rl):
    points = [at_concurrency(rl, n, 10_000) for n in (1, 2, 8, 32, 128)]
    assert all(a.output_tokens_per_s < b.output_tokens_per_s for a, b in zip(points, points[1:]))
    assert all(a.tpot_ms <= b.tpot_ms for a, b in zip(points, points[1:]))


def test_the_kv_cache_caps_the_batch_and_the_rest_wait(rl):
    free = at_concurrency(rl, 64, 10_000)
    capped = at_concurrency(rl, 64, 8)
    assert capped.batch == 8 and capped.bound == "kv-memory"
    assert capped.output_tokens_per_s < free.output_tokens_per_s
    rate = capped.output_tokens_per_s / rl.output_tokens
    # the whole latency of a request is N / λ: its wait for a slot is in the TTFT
    assert (capped.ttft_ms + rl.output_tokens * capped.tpot_ms) / 1e3 == pytest.approx(64 / rate, rel=1e-9)


def test_bad_arguments(rl):
    with pytest.raises(ValueError):
        at_concurrency(rl, 0, 10)
    with pytest.raises(ValueError):
        at_concurrency(rl, 4, 0)


@pytest.mark.parametrize("n", [1, 8, 64])
def test_a_closed_loop_wave_waits_behind_its_prefills(rl, n):
    spread = at_concurrency(rl, n, 10_000)
    waves = at_concurrency(rl, n, 10_000, wave_share=0.5)
    rate = waves.output_tokens_per_s / rl.output_tokens
    # Little's law still holds, and the wave's wait is in the TTFT at the batch the loop settles on
    assert waves.batch + rate * waves.ttft_ms / 1e3 == pytest.approx(n, rel=1e-6)
    wait = 0.5 * (n - 1) * rl.prefill_s(rl.input_tokens)
    assert waves.ttft_ms / 1e3 == pytest.approx(rl.ttft_s(waves.batch) + wait, rel=1e-9)
    if n == 1:  # one client: nothing arrives with it
        assert waves == spread
    else:  # fewer requests decode at once: a faster step, fewer tokens per second
        assert waves.batch < spread.batch
        assert waves.tpot_ms < spread.tpot_ms
        assert waves.output_tokens_per_s < spread.output_tokens_per_s


def test_wave_share_is_a_share(rl):
    with pytest.raises(ValueError):
        at_concurrency(rl, 4, 10, wave_share=1.5)
