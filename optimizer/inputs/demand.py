"""Demand from business numbers: the peak output tokens/s that users, their activity and the shape of
a day imply, before any usage log exists (a workload's `demand: {users: …}`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from optimizer.units import HOURS_PER_DAY, SECONDS_PER_HOUR

SECONDS_PER_DAY = SECONDS_PER_HOUR * HOURS_PER_DAY
DAYS_PER_MONTH = 30
"""Growth compounds over 30-day months (the cash flow's months when a plan has no start_date)."""
PROFILE_TOLERANCE = 0.15
"""How far (relative) the profile's busiest-hour share may sit from the stated one before a warning."""


@dataclass(frozen=True)
class PeakDerivation:
    """peak = users × active_share × requests × output tokens × peak_hour_share ÷ 3,600 s
    (or ÷ 86,400 s × peak_to_mean), × (1 + monthly_growth)^(horizon_days ÷ 30) with growth.

    planopt buys one fleet for the whole horizon (no month-by-month demand), so growth sizes it for
    the users at the horizon's end.
    """

    users: float
    active_share: float
    requests_per_active_user_per_day: float
    output_tokens: float
    """Mean output tokens per request (the workload's tokens.output)."""
    peak_hour_share: float | None = None
    peak_to_mean: float | None = None
    monthly_growth: float = 0.0
    growth_months: float = 0.0
    """Months of growth to the horizon's end: horizon_days ÷ 30."""

    @property
    def output_tokens_per_day(self) -> float:
        return self.users * self.active_share * self.requests_per_active_user_per_day * self.output_tokens

    @property
    def growth(self) -> float:
        return (1.0 + self.monthly_growth) ** self.growth_months

    @property
    def busiest_hour_share(self) -> float:
        """The busiest hour's share of the day's requests (peak_to_mean ÷ 24 when that is given)."""
        if self.peak_hour_share is not None:
            return self.peak_hour_share
        assert self.peak_to_mean is not None
        return self.peak_to_mean / HOURS_PER_DAY

    @property
    def peak_output_tokens_per_s(self) -> float:
        # The workbook's formula multiplies in the same order (Assumptions), so both give the same float.
        if self.peak_hour_share is not None:
            peak = self.output_tokens_per_day * self.peak_hour_share / SECONDS_PER_HOUR
        else:
            assert self.peak_to_mean is not None
            peak = self.output_tokens_per_day / SECONDS_PER_DAY * self.peak_to_mean
        return peak * self.growth if self.monthly_growth else peak

    def text(self) -> str:
        """'peak 2,750 tok/s = 100,000 users × 30% active × 12 requests × 250 output tokens × 11% in the
        busiest hour ÷ 3,600 s'."""
        parts = [f"{_n(self.users)} users", f"{_pct(self.active_share)} active",
                 f"{_n(self.requests_per_active_user_per_day)} requests", f"{_n(self.output_tokens)} output tokens"]
        if self.peak_hour_share is not None:
            tail = f" × {_pct(self.peak_hour_share)} in the busiest hour ÷ 3,600 s"
        else:
            tail = f" ÷ 86,400 s × {_n(self.peak_to_mean or 0.0)} peak-to-mean"
        text = f"peak {self.peak_output_tokens_per_s:,.0f} tok/s = {' × '.join(parts)}{tail}"
        if self.monthly_growth:
            text += (f" × {self.growth:.3f} ({_pct(self.monthly_growth)} a month over {self.growth_months:.1f} "
                     "months: sized for the horizon's end)")
        return text


def derive_peak(users: float, active_share: float, requests_per_active_user_per_day: float, output_tokens: float,
                peak_hour_share: float | None, peak_to_mean: float | None, monthly_growth: float | None,
                horizon_days: int) -> PeakDerivation:
    g = monthly_growth or 0.0
    return PeakDerivation(users, active_share, requests_per_active_user_per_day, output_tokens, peak_hour_share,
                          peak_to_mean, g, horizon_days / DAYS_PER_MONTH if g else 0.0)


def profile_busiest_share(profiles: dict[str, Sequence[float]]) -> tuple[str, float] | None:
    """(day type, its busiest hour's share of its day) for the day type whose profile peaks highest;
    None when every profile is all zero."""
    best = None
    for d, values in profiles.items():
        total = sum(values)
        if total > 0 and (best is None or max(values) > best[2]):
            best = (d, max(values) / total, max(values))
    return None if best is None else (best[0], best[1])


def profile_warning(name: str, derivation: PeakDerivation, profiles: dict[str, Sequence[float]],
                    stated_profile: bool) -> str | None:
    """A warning when the hourly profile's shape contradicts the stated peak-hour share (or peak_to_mean):
    the fleet is sized for the stated share while the plan's hours follow the profile."""
    found = profile_busiest_share(profiles)
    if found is None:
        return None
    day, share = found
    stated = derivation.busiest_hour_share
    if abs(share - stated) <= PROFILE_TOLERANCE * stated:
        return None
    key = (f"peak_hour_share is {_pct(stated)}" if derivation.peak_hour_share is not None
           else f"peak_to_mean is {_n(derivation.peak_to_mean or 0.0)} ({_pct(stated)} of the day in its busiest hour)")
    which = "the profile" if len(profiles) == 1 else f"the {day} profile"
    shape = (f"{which} puts {_pct(share)} of the day in its busiest hour" if stated_profile
             else f"without a profile every hour is at the peak ({_pct(share)} of the day each)")
    fix = (f"make them agree (peak_hour_share: {share:.3f}), or reshape the profile" if stated_profile
           else "add a 24-hour profile with the day's shape")
    return (f"{name}: demand.{key}, but {shape}: the fleet is sized for the stated share while the day's tokens "
            f"follow the profile — {fix}")


def _n(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.4g}"


def _pct(x: float) -> str:
    return f"{x * 100:.3g}%"
