"""Solving in the tests: what a test asserts (a status, an optimum, a proven gap) is decided by the solver,
never by the clock, so the suite gives the same verdict on an idle machine and a busy one."""

from __future__ import annotations

NO_TIME_LIMIT = 1e9
"""A time limit no solve in the suite reaches (HiGHS and CBC both take it; CBC refuses infinity). The solve stops on
work (policy.work_limit), so a test plan's time_limit_s is only its safety cap: the random plans of the brute-force,
split and scenario suites carry 600 s, which a busy machine does not reach (30 s had: a split plan's CBC solve
stopped 'feasible' at it beside other sessions' tests)."""
