"""Queueing at a replica: the wait for prefill (M/D/c) and the spread of a request's TPOT (Poisson).

Pure math, no third-party imports. Used by the roofline to put TTFT and TPOT at a percentile.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def erlang_c(servers: float, offered: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with `offered` = λ·s Erlangs (< servers).

    Fractional server counts (prefill capacity shared by several groups) are rounded up: the
    formula needs whole servers, and more servers never wait longer.
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


def mean_wait_s(servers: float, arrival_rate: float, service_s: float) -> float:
    """Mean wait of the same M/D/c approximation: C · service / (2(c − a))."""
    a = arrival_rate * service_s
    c = max(1, math.ceil(servers - 1e-9))
    if a >= c:
        return math.inf
    return erlang_c(c, a) * service_s / (2.0 * (c - a))


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
