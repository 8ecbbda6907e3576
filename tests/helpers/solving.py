"""Solving in the tests: what a test asserts (a status, an optimum, a proven gap) is decided by the solver,
never by the clock, so the suite gives the same verdict on an idle machine and a busy one."""

from __future__ import annotations

NO_TIME_LIMIT = 1e9
"""A time limit no solve in the suite reaches (HiGHS and CBC both take it; CBC refuses infinity)."""
