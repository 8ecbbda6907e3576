"""Answers of pure physics functions kept per process: a build asks for the same model's parts, the same
efficiencies, for every roofline and fit it makes."""

from __future__ import annotations

import functools
from operator import is_
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)

KEPT = 4096
"""Answers each kept function holds (a bound: sweeps build many catalogs)."""


def kept(fn: F) -> F:
    """`fn` of frozen schema entries (catalog models, precisions, accelerators, estimator parameters) and other
    immutable values, its answers kept. Arguments are keyed by identity and held with the answer (an id is not
    reused while it is kept): the same objects get the same answer; a call with keywords is not kept."""
    memo: dict = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs:
            return fn(*args, **kwargs)
        key = tuple(map(id, args))
        hit = memo.get(key)
        if hit is not None and all(map(is_, hit[0], args)):
            return hit[1]
        out = fn(*args)
        if len(memo) >= KEPT:
            memo.clear()
        memo[key] = (args, out)
        return out

    return wrapper  # type: ignore[return-value]
