"""Queueing at a replica: the wait for prefill (M/D/c) and the spread of a request's TPOT (Poisson).

Pure math, no third-party imports. Used by the roofline to put TTFT and TPOT at a percentile.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

MEMO = 1 << 16
"""Answers kept by the functions below (of their arguments alone): a sizing asks the same batches again."""


@lru_cache(maxsize=MEMO)
def erlang_c(servers: float, offered: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with `offered` = λ·s Erlangs (< servers).

    A fractional server count is rounded up: the formula needs whole servers. A share of a pool that
    other arrivals use too is not a whole server of one's own: see pooled_wait_quantile_s.
    """
    c = max(1, math.ceil(servers - 1e-9))
    a = offered
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    # Erlang B by the stable recursion, then C = B / (1 − ρ(1 − B)).
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


@lru_cache(maxsize=MEMO)
def wait_quantile_s(servers: float, arrival_rate: float, service_s: float, percentile: float) -> float:
    """The `percentile` of the wait before service in an M/D/c queue, seconds (inf when saturated).

    M/D/c has no closed form; the approximation used (Cosmetatos: the M/D/c mean wait is about half
    the M/M/c one) keeps the M/M/c shape — P(wait > t) = C · exp(−t / τ) — with the conditional
    mean τ = service / (2(c − a)), so the mean is C·τ. For c = 1 the mean is exactly M/D/1's
    ρ·s / (2(1 − ρ)). The quantile is τ · ln(C / (1 − p)), 0 when fewer than 1 − p arrivals wait.
    """
    a = arrival_rate * service_s
    c = max(1, math.ceil(servers - 1e-9))
    if a >= c:
        return math.inf
    waits = erlang_c(c, a)
    tail = 1.0 - percentile / 100.0
    if waits <= tail:
        return 0.0
    tau = service_s / (2.0 * (c - a))
    return tau * math.log(waits / tail)


@lru_cache(maxsize=MEMO)
def pooled_wait_quantile_s(servers: float, arrival_rate: float, service_s: float, percentile: float) -> float:
    """The `percentile` of the wait for a share of a pool: `servers` (fractional, e.g. 0.5 or 1.5)
    paid for by one stream of `arrival_rate` requests/s, in a pool of whole servers that other
    streams alike share (prefill groups shared across decode replicas).

    Every paid server then runs at ρ = arrival_rate · service_s / servers — not the lower
    utilisation of ceil(servers) whole servers seeing this stream alone. The queue taken is the
    smallest whole pool at that utilisation: M/D/c with c = ceil(servers) servers fed by c / servers
    such streams (arrival rate arrival_rate · c / servers). It bounds the wait of any fleet of n
    streams that buys whole servers for its shares: that fleet has ceil(n · servers) ≥ c servers,
    each at most at ρ, and the wait grows with ρ and falls with c at a given ρ (Erlang C and the
    conditional mean service / (2c(1 − ρ)) both do). inf when ρ ≥ 1.
    """
    if servers <= 0:
        return math.inf
    c = max(1, math.ceil(servers - 1e-9))
    return wait_quantile_s(c, arrival_rate * c / servers, service_s, percentile)


@lru_cache(maxsize=MEMO)
def mean_wait_s(servers: float, arrival_rate: float, service_s: float) -> float:
    """Mean wait of the same M/D/c approximation: C · service / (2(c − a))."""
    a = arrival_rate * service_s
    c = max(1, math.ceil(servers - 1e-9))
    if a >= c:
        return math.inf
    return erlang_c(c, a) * service_s / (2.0 * (c - a))


@lru_cache(maxsize=MEMO)
def poisson_quantile(mean: float, percentile: float) -> float:
    """The `percentile` of a Poisson count with this mean (exact below a mean of 50, else the
    normal approximation with Cornish–Fisher skew correction)."""
    if mean <= 0:
        return 0.0
    p = percentile / 100.0
    if mean < 50:
        k, term = 0, math.exp(-mean)
        total = term
        while total < p and k < 10_000:
            k += 1
            term *= mean / k
            total += term
        return float(k)
    z = NormalDist().inv_cdf(p)
    return max(0.0, mean + z * math.sqrt(mean) + (z * z - 1.0) / 6.0)
