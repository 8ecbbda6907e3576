"""Goodput at a fixed concurrency: N requests kept in flight on one replica (a closed loop).

This is how online-serving load tests are run (vLLM's benchmark_serving and SGLang's bench_serving
with a maximum concurrency, genai-perf, trtllm-serve's benchmark): each of N clients sends a request,
waits for its last token and sends the next. At steady state the N requests are either being
prefilled (or waiting for it) or decoding, so with λ the replica's request rate (Little's law):

    N = b + λ · TTFT(b),    λ = b / (O · TPOT(b))

b being the decode batch. TPOT(b) and TTFT(b) are the roofline's (`Roofline.tpot_s`, mean, prefill
interference included; `Roofline.ttft_s`, mean, the prefill queue included), so b + λ·TTFT grows with b
and the root in (0, N] is found by bisection. Where the KV cache holds fewer than that, b stops at its
capacity and the other requests wait for a slot: their wait joins the TTFT (Little's law again:
the whole latency is N / λ). The replica delivers λ · O = b / TPOT(b) output tokens/s.

A closed loop's arrivals are not Poisson: its N clients start together, and with output lengths fixed
(`--ignore-eos`) or drawn from a narrow range they finish, and send their next prompt, close together.
So a prompt arrives in a wave and waits behind the prefills of the prompts that arrived with it. With
w the engine's `closed_loop_wave_share` (fitted on published closed-loop runs: the share of the other
N − 1 prompts a request waits behind, 0 for arrivals spread evenly),

    TTFT_closed(b) = TTFT(b) + w · (N − 1) · prefill(I),

prefill(I) being one prompt's share of a batched prefill (`Roofline.prefill_s`); TTFT_closed takes
TTFT's place above. An open loop (a plan's traffic, Poisson arrivals) has no waves: `solve` sizes with
TTFT(b) alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.physics.roofline import Roofline

BISECTIONS = 60
"""Halvings of the decode batch's bracket: (0, N] to well below 1e-12 of N."""


@dataclass(frozen=True)
class AtConcurrency:
    """One replica with `concurrency` requests kept in flight."""

    concurrency: int
    batch: float
    """Requests decoding at once, a mean over time (the rest are being prefilled or wait)."""
    output_tokens_per_s: float
    """Of the replica: b / TPOT(b) before any headroom."""
    tpot_ms: float
    """Mean time per output token after the first."""
    ttft_ms: float
    """Mean time to first token: waiting for a KV slot and for prefill, then the prefill."""
    bound: str
    """What limits the step: bandwidth, compute, overhead (fixed per-step costs: launch, collectives,
    routing) or kv-memory (the KV cache holds fewer sequences than the load would decode)."""


def at_concurrency(rl: Roofline, concurrency: int, max_batch: float, wave_share: float = 0.0) -> AtConcurrency:
    """The replica of roofline `rl` with `concurrency` requests in flight; `max_batch` is the number of
    sequences its KV cache (or the engine's cap) holds; `wave_share` the engine's
    `EstimatorParams.closed_loop_wave_share` (see the module's docstring)."""
    if concurrency < 1:
        raise ValueError("concurrency must be ≥ 1")
    if max_batch < 1:
        raise ValueError("not one sequence fits in the KV cache")
    if not 0.0 <= wave_share <= 1.0:
        raise ValueError("wave_share must be in [0, 1]")
    out = rl.output_tokens
    wave = wave_share * (concurrency - 1) * rl.prefill_s(rl.input_tokens)

    def ttft_s(b: float) -> float:
        return rl.ttft_s(b) + wave

    def in_flight(b: float) -> float:
        step = rl.tpot_s(b)
        lam = b / (out * step)
        return b + lam * ttft_s(b)

    lo, hi = 0.0, float(concurrency)
    if in_flight(hi) <= concurrency:
        b = hi
    else:
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            if in_flight(mid) > concurrency:
                hi = mid
            else:
                lo = mid
        b = lo if lo > 0 else hi
    bound = None
    if b > max_batch:
        b, bound = float(max_batch), "kv-memory"
    tpot = rl.tpot_s(b)
    rate = b / (out * tpot)
    # Every request waits, is prefilled and decodes: N / λ is its whole latency, the decode part O · TPOT.
    ttft = max(concurrency / rate - out * tpot, ttft_s(b)) if bound else ttft_s(b)
    if not math.isfinite(ttft):
        ttft = concurrency / rate - out * tpot
    if bound is None:
        mem, comp, other = rl.parts(b)
        comp += rl.prefill_s(b * rl.input_tokens / rl.output_tokens)
        bound = "overhead" if other > max(mem, comp) else ("compute" if comp > mem else "bandwidth")
    return AtConcurrency(concurrency=concurrency, batch=b, output_tokens_per_s=b / tpot, tpot_ms=tpot * 1e3,
                         ttft_ms=ttft * 1e3, bound=bound)
