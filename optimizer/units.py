"""Units and rounding: bytes in a GB, seconds in an hour, and ceil/floor that forgive float noise.

No third-party imports and no I/O: the lowest layer of the package.
"""

from __future__ import annotations

import math

GB = 1e9
"""Bytes in a GB as planopt reports it: the SI gigabyte, as accelerator vendors state memory."""
GIB = 2**30
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24
HOURS = range(24)
TOL = 1e-9
"""A quotient within TOL of an integer is that integer: 2.1 / 0.7 is 3 replicas, not 4."""


def ceil_tol(x: float, tol: float = TOL) -> int:
    """ceil(x), except that x within `tol` of an integer is that integer (forgives float noise)."""
    c = math.ceil(x)
    return c - 1 if c - x >= 1 - tol else c


def floor_tol(x: float, tol: float = TOL) -> int:
    """floor(x), except that x within `tol` of an integer is that integer (forgives float noise)."""
    f = math.floor(x)
    return f + 1 if x - f >= 1 - tol else f
