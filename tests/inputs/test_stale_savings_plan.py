"""The staleness warning covers a savings plan's discount: an `as_of` more than 90 days before start_date (a
month-only date from its first day) is warned of, by the lint and in the solved result's notes; no start_date,
no check."""

from __future__ import annotations

from optimizer.inputs.lint import stale_prices
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from tests.helpers.commitments import H100, OD, chat, quarter
from tests.helpers.small_plans import offer, write
from tests.helpers.solving import NO_TIME_LIMIT

PROVIDER = f"prov-{H100}"


def _data(as_of: str | None, start: str | None = "2026-10-01") -> dict:
    data = quarter([chat(4)], tiers=["on-demand"], reservation_starts="plan_start")
    data["offers"] = [offer(H100, "h100-sxm", on_demand=OD)]
    data["savings_plans"] = [{"provider": PROVIDER, "term": "1y", "discount": 0.3, "as_of": as_of,
                              "source": "https://aws.amazon.com/savingsplans/compute-pricing/"}]
    if start is None:
        del data["start_date"]
    else:
        data["start_date"] = start
    return data


def _said(tmp_path, *args) -> list[str]:
    loaded = load_plan(write(tmp_path, _data(*args)))
    return [w for w in stale_prices(loaded.plan, loaded.catalog.offers.values()) if "savings plan" in w]


def test_a_discount_read_more_than_90_days_before_the_start_is_warned_of(tmp_path):
    said, = _said(tmp_path, "2026-07-02")  # 91 days before 2026-10-01
    assert "savings_plans[0]" in said and "as_of 2026-07-02" in said and f"{PROVIDER} 1y, 30% off" in said
    assert "older than start_date 2026-10-01" in said
    assert not _said(tmp_path, "2026-07-03")  # 90 days: not stale
    assert not _said(tmp_path, None)  # no as_of
    assert not _said(tmp_path, "2025-01-01", None)  # no start_date


def test_a_month_only_date_counts_from_its_first_day(tmp_path):
    assert _said(tmp_path, "2026-07", "2026-09-30")  # 2026-07-01 is 91 days before
    assert not _said(tmp_path, "2026-07", "2026-09-29")


def test_the_solved_result_carries_the_warning(tmp_path):
    r = solve_plan(write(tmp_path, _data("2026-05-01")), SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT))
    assert any("savings_plans[0]" in n and "as_of 2026-05-01" in n for n in r.notes)
