"""`planopt forecast`: weeks of usage → each workload's busiest hour in each coming month, with a band.

The model (statsmodels), per workload with demand, on the log of its hourly output tokens/s in the
plan's time zone (24 clock hours a day; a clock change's missing hour is filled, its doubled hour
averaged):
- hours without traffic where every other week had traffic at that hour are gaps (an outage, a lost
  export), and hours far off a robust STL fit (a spike, an incident) are set aside as one-offs: both are
  filled like gap days and named in a note;
- MSTL splits off a daily (24 h) and a weekly (168 h) season; the future repeats their last week;
- what is left is an UnobservedComponents model: a deterministic linear trend (on the log scale, so
  growth compounds), an AR(1) for runs of busy or quiet hours, and white noise;
- 1,000 paths are simulated from the end of the log to the last month. statsmodels draws each path's
  starting state (level, slope, AR) from its filtered distribution, so what the log leaves unknown
  about the trend widens the band.

A month's busiest hour on one path is the path's highest hour in that month; P10, P50 and P90 are the
10th, 50th and 90th percentiles of that maximum across the paths. The band is a prediction interval of
the busiest hour as it will happen, its hour-to-hour noise included, not of the mean curve: sized to
P50, a month's busiest hour is met half of the time. Left out: the error of the estimated seasonal shape
and of the model's variances, so the band runs a little narrow: on 40 seeded synthetic logs
(benchmarks/forecast_accuracy.py) P10–P90 held the true busiest hour 73% of the time, not 80%, missing
about equally above and below.

No printing and no files: `forecast` returns what the CLI prints and `write_outputs` writes.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from optimizer.calibrate.coverage import slots
from optimizer.calibrate.run import (
    _check_ambiguous,
    _zone,
    out_path_problems,
    read_usage,
    write_plan_and_page,
)
from optimizer.calibrate.types import sig
from optimizer.calibrate.usage import UsageAggregate
from optimizer.errors import PlanError, Problem
from optimizer.formatting import plural
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.inputs.schema.plan import FIRST_DATE, LAST_DATE
from optimizer.vocab import day_type_of, weekday_id

MIN_HOURS = 14 * 24
MIN_DAYS = 14
"""Days on which a workload itself has output tokens: two weekly cycles of its own."""
OUTLIER_SCALES = 8.0
"""An hour whose log rate is this many robust deviations (1.4826 × MAD) off a robust STL fit is a one-off."""
"""Two weekly cycles: MSTL fits a weekly season only on more than that."""
MAX_MONTHS = 24
MAX_LEAD_MONTHS = 12
"""--start at most this many months after the log ends: further out, weeks of usage say little."""
MAX_SCENARIOS = 9
PATHS = 1000
CHUNK = 200
"""Paths simulated at a time (memory stays small for 24 months)."""
BAND = (0.10, 0.50, 0.90)
DAY = 24
TREND = "deterministic trend"
AR = 1
"""What is left after the seasons: a straight trend and AR(1). A stochastic level (random walk with drift)
gave P10–P90 bands over 100% wide on 8–12 weeks of hourly data; AR(2) a slightly narrower, less honest band."""


@dataclass(frozen=True)
class ForecastOptions:
    usage: tuple[Path, ...]
    start: str
    """The first month's first day, YYYY-MM-DD, as typed."""
    months: int = 3
    scenarios: int = 5
    """Demand scenarios to write from the quantiles (0: keep the plan's scenarios as they are)."""
    maps: tuple[str, ...] = ()
    usage_workload: str | None = None
    max_bad_rows: int = 0
    allow_clock_steps: bool = False
    paths: int = PATHS
    seed: int = 0


@dataclass(frozen=True)
class MonthForecast:
    month: str
    """YYYY-MM."""
    first: dt.date
    days: int
    p10: float
    p50: float
    p90: float


@dataclass
class WorkloadForecast:
    name: str
    history_first: dt.date
    history_peaks: list[float]
    """The busiest hour of each day of the log (output tokens/s), from history_first on; hours set aside as
    one-offs or gaps count as the fill the forecast used."""
    months: list[MonthForecast]
    daily: dict[str, list[float]]
    """p10, p50, p90 of each forecast day's busiest hour, from the first month's first day on."""
    profile: dict[str, list[float]]
    """Per day type, 24 fractions of the busiest hour (the forecast's shape)."""
    multipliers: dict[float, float]
    """Quantile level → its busiest month ÷ the busiest month's P50 (the scenarios' demand multipliers)."""
    growth_per_month: float | None
    hours: int
    filled_hours: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def peak(self) -> float:
        return max(m.p50 for m in self.months)


@dataclass(frozen=True)
class Scenario:
    name: str
    level: float
    weight: float
    demand: dict[str, float]


@dataclass
class Forecast:
    plan_file: str
    plan_name: str
    out_file: str
    timezone: str
    start: dt.date
    months: list[tuple[str, dt.date, int]]
    """(YYYY-MM, first day, days) of each forecast month."""
    horizon_days: int
    day_types: dict[str, int] | None
    """The plan's day types re-counted for the new calendar (None: the plan has none)."""
    definition: str
    usage: UsageAggregate | None = None
    period: tuple[str, str] | None = None
    workloads: list[WorkloadForecast] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    yaml_text: str = ""

    def to_dict(self) -> dict:
        """What `--json` prints: per workload and month, the busiest hour's P10, P50 and P90 (output tokens/s)."""
        return {"workloads": [{"name": w.name, "months": [
            {"month": m.month, "p10": sig(m.p10), "p50": sig(m.p50), "p90": sig(m.p90)} for m in w.months]}
            for w in self.workloads]}


DEFINITION = ("monthly peak = the busiest hour (output tokens/s, {tz}) of each calendar month; P10/P50/P90 = "
              "percentiles of that hour across {paths:,} paths simulated from a statsmodels fit of the log hourly "
              "rate: MSTL daily and weekly seasons, a linear trend, AR(1) and noise")


# --- the whole command -------------------------------------------------------------------------


def forecast(plan_path: Path | str, options: ForecastOptions, out_path: Path | str,
             progress: Callable[[float], None] | None = None, extra_catalogs: list[Path | str] = ()) -> Forecast:
    """Read the plan and the logs, forecast each workload with demand, build NEXT.yaml's text; write nothing."""
    from optimizer.calibrate.forecast_plan import write_plan

    plan_path, out_path = Path(plan_path), Path(out_path)
    start = check_options(options, plan_path, out_path)
    loaded = load_plan(plan_path, list(extra_catalogs))
    plan = loaded.plan
    zone = _zone(loaded)
    months = calendar_months(start, options.months)
    horizon = sum(n for _, _, n in months)
    fc = Forecast(loaded.file, plan.plan, str(out_path), plan.timezone, start, months, horizon,
                  _day_types(loaded, start, horizon),
                  DEFINITION.format(tz=plan.timezone, paths=options.paths))
    files, rename, matcher, agg = read_usage(loaded, options.usage, options.maps, options.usage_workload,
                                             options.max_bad_rows, progress, fc.notes, options.allow_clock_steps)
    shown = [str(p) for p in files]
    fc.usage = agg
    _check_ambiguous(agg, matcher)
    if agg.unmatched:
        raise PlanError(unmatched_problems(files, shown, rename, matcher, loaded))
    assert agg.first_epoch_s is not None and agg.last_epoch_s is not None
    fc.period = (dt.datetime.fromtimestamp(agg.first_epoch_s, zone).strftime("%Y-%m-%d %H:%M"),
                 dt.datetime.fromtimestamp(agg.last_epoch_s, zone).strftime("%Y-%m-%d %H:%M"))
    s = slots(agg.first_epoch_s, agg.last_epoch_s, zone, agg.active_quarters)
    if s.gaps:
        fc.notes.append(f"{plural(len(s.gaps), 'day')} inside the log with no event at all ({s.gaps[0]}"
                        f"{', …' if len(s.gaps) > 1 else ''}): read as gaps in the export and filled from the "
                        "same hours a week before or after")
    weekdays = plan.day_type_weekdays()
    problems: list[Problem] = []
    series = {}
    for w in plan.workloads:
        if not agg.quarters.get(w.name):
            if w.demand is not None:
                fc.notes.append(f"{w.name}: no events in the log; its demand is kept as the plan has it")
            continue
        if w.demand is None:
            kind = "a batch job's output_tokens_per_day" if w.batch is not None else "a reservation"
            fc.notes.append(f"{w.name}: events counted but not forecast ({kind} is kept as the plan has it)")
            continue
        h = history(agg, s, w.name)
        own = sorted({s.of_quarter[qi][0] for qi, (_n, _p, c) in agg.quarters[w.name].items() if c > 0})
        if h.data_hours > MIN_HOURS and 0 < len(own) < MIN_DAYS:
            # The log is long enough, this workload's traffic is not: a workload seen only in the log's first
            # week leaves weeks of zeros behind it, and nothing for a season or a trend to be fitted to.
            span = f" ({own[0]} to {own[-1]})" if own else ""
            problems.append(Problem(
                f"{w.name}: has output tokens on {plural(len(own), 'day')} of the log{span}; the forecast needs "
                f"at least {MIN_DAYS} days of a workload's own usage to fit a weekly season",
                f"give a log in which {w.name} has traffic on {MIN_DAYS} days or more, or route its events with "
                f"--map model=MODEL:workload={w.name} if the log names it otherwise",
                file=shown[0] if len(shown) == 1 else None))
            continue
        if h.data_hours <= MIN_HOURS:
            problems.append(Problem(
                f"{w.name}: needs at least 14 days of hourly usage to fit a weekly season (two whole weeks and "
                f"more); got " + (f"{h.data_hours / DAY:.1f} days" if h.data_hours >= DAY else
                                  plural(round(h.data_hours), "hour") if h.data_hours >= 1 else "less than an hour")
                + f" ({fc.period[0]} to {fc.period[1]}, {plan.timezone})",
                "export a longer period of the gateway's log: 8 weeks or more give a steadier trend",
                file=shown[0] if len(shown) == 1 else None))
            continue
        if not np.any(h.rates > 0):  # requests, and never an output token: nothing to forecast from
            fc.notes.append(f"{w.name}: the log has no output tokens for it; its demand is kept as the plan has it")
            continue
        series[w.name] = h
    if problems:
        raise PlanError(problems)
    last = max(h.end for h in series.values()) if series else None
    if last is not None:
        _check_start(start, last, shown)
    for name, h in series.items():
        try:
            wf = forecast_workload(name, h, months, weekdays, options.paths,
                                   seed=[options.seed, zlib.crc32(name.encode())], scenarios=options.scenarios)
        except (ValueError, np.linalg.LinAlgError) as exc:  # statsmodels on a series it cannot fit
            raise PlanError(Problem(f"{name}: the forecast model could not be fitted to its usage ({exc})",
                                    "check the log's hours of this workload (--debug shows where it failed)",
                                    file=shown[0] if len(shown) == 1 else None)) from exc
        if wf.peak <= 0:
            fc.notes.append(f"{name}: the forecast's busiest hour is 0 (no output tokens lately); its demand is "
                            "kept as the plan has it")
            continue
        fc.workloads.append(wf)
    if not fc.workloads and any(agg.quarters.get(w.name) for w in plan.workloads if w.demand is not None):
        raise PlanError(Problem("the usage log's events for the plan's workloads carry no output tokens (or none "
                                "lately): nothing to forecast",
                                "check the log's output-token column (--map COLUMN=completion_tokens names it)",
                                file=shown[0] if len(shown) == 1 else None))
    if not fc.workloads:
        raise PlanError(Problem("no workload with demand has events in the usage log: nothing to forecast",
                                "route the log's models to the plan's workloads: --map model=MODEL:workload=NAME",
                                file=shown[0] if len(shown) == 1 else None))
    fc.scenarios = scenarios_from(fc.workloads, options.scenarios)
    fc.yaml_text = write_plan(loaded, fc, out_path)
    return fc


def write_outputs(fc: Forecast, out_path: Path | str, html: str, extra_catalogs: list[Path | str] = ()) -> Path:
    """Write NEXT.yaml (only if it loads as a plan) and NEXT.html beside it; nothing on failure."""
    return write_plan_and_page(fc.yaml_text, out_path, html, extra_catalogs, "forecast")


# --- options and the calendar ------------------------------------------------------------------


def check_options(options: ForecastOptions, plan_path: Path, out_path: Path) -> dt.date:
    """The first month's first day; PlanError listing every bad option."""
    problems = []
    start = None
    try:
        start = dt.date.fromisoformat(options.start.strip())
    except ValueError:
        problems.append(Problem(f"--start {options.start}: not a date",
                                "give the first month's first day as YYYY-MM-DD, e.g. --start 2027-01-01"))
    if start is not None and not FIRST_DATE <= start <= LAST_DATE - dt.timedelta(days=31 * MAX_MONTHS):
        problems.append(Problem(f"--start {options.start}: out of range",
                                f"give a month from {FIRST_DATE:%Y-%m} on, whose months end by {LAST_DATE:%Y-%m}, "
                                "e.g. --start 2027-01-01"))
        start = None
    if start is not None and start.day != 1:
        nxt = _add_months(start.replace(day=1), 1)
        problems.append(Problem(f"--start {options.start}: not the first day of a month; the forecast is by "
                                "calendar month",
                                f"start at a month's first day: --start {start.replace(day=1)} or --start {nxt}"))
    if not 1 <= options.months <= MAX_MONTHS:
        problems.append(Problem(f"--months {options.months}: outside 1–{MAX_MONTHS}",
                                "forecast 1 to 24 calendar months, e.g. --months 3 for a quarter"))
    if not 0 <= options.scenarios <= MAX_SCENARIOS:
        problems.append(Problem(f"--scenarios {options.scenarios}: outside 0–{MAX_SCENARIOS}",
                                "e.g. --scenarios 5 (0 keeps the plan's own scenarios)"))
    if options.paths < 100:
        problems.append(Problem(f"{options.paths} simulated paths are too few for a P10–P90 band", "use 1,000"))
    if not options.usage:
        problems.append(Problem("no usage log", "give --usage FILE (a gateway log of 14 days or more)"))
    problems += out_path_problems(out_path, plan_path, "forecast", "forecast", "NEXT.yaml",
                                  "plans/q1-forecast.yaml")
    if problems:
        raise PlanError(problems)
    assert start is not None
    return start


def _add_months(d: dt.date, n: int) -> dt.date:
    k = d.year * 12 + d.month - 1 + n
    return dt.date(k // 12, k % 12 + 1, 1)


def calendar_months(start: dt.date, n: int) -> list[tuple[str, dt.date, int]]:
    out = []
    for i in range(n):
        first = _add_months(start, i)
        out.append((first.strftime("%Y-%m"), first, (_add_months(start, i + 1) - first).days))
    return out


def _day_types(loaded: LoadedPlan, start: dt.date, days: int) -> dict[str, int] | None:
    """The plan's day types counted on the new calendar (None when it has none)."""
    plan = loaded.plan
    if not plan.day_types:
        return None
    weekdays = plan.day_type_weekdays()
    counts = {t: 0 for t in weekdays}
    for k in range(days):
        t = day_type_of(start + dt.timedelta(days=k), weekdays)
        if t is not None:
            counts[t] += 1
    return counts


def _check_start(start: dt.date, last: dt.date, shown: list[str]) -> None:
    who = shown[0] if len(shown) == 1 else "the usage logs"
    if start <= last:
        nxt = _add_months(last.replace(day=1), 1)
        raise PlanError(Problem(f"--start {start}: the usage log reaches {last}; a forecast starts after it",
                                f"forecast from the first month after the log: --start {nxt}",
                                file=shown[0] if len(shown) == 1 else None))
    lead = (start.year * 12 + start.month) - (last.year * 12 + last.month)
    if lead > MAX_LEAD_MONTHS:
        raise PlanError(Problem(f"--start {start} is {lead} months after {who} ends ({last}); weeks of usage say "
                                "little that far ahead",
                                f"give a recent log, or start at most {MAX_LEAD_MONTHS} months after it"))


# --- the hourly series -------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    """One workload's output tokens/s per local clock hour, 24 a day, gaps filled."""

    first: dt.date
    first_hour: int
    rates: np.ndarray
    data_hours: int
    """Hours the log saw (the rest were filled)."""
    silent_hours: int = 0
    """Of the hours the log covers, those without traffic read as gaps (_silent_hours)."""

    @property
    def end(self) -> dt.date:
        """The local date of the last hour."""
        return self.first + dt.timedelta(days=(self.first_hour + len(self.rates) - 1) // DAY)

    def when(self, k: int) -> tuple[dt.date, int]:
        """Index → (local date, hour); any k, past the end too."""
        j = self.first_hour + k
        return self.first + dt.timedelta(days=j // DAY), j % DAY


def history(agg: UsageAggregate, s, name: str) -> History:
    """The workload's hourly rates over the log's whole hours, from the first day it has events."""
    tokens: dict[tuple[dt.date, int], float] = {}
    for qi, (_n, _p, c) in agg.quarters[name].items():
        key = s.of_quarter[qi]
        tokens[key] = tokens.get(key, 0.0) + c
    whole = sorted(k for k, h in s.hours.items() if h >= 1.0)
    if not whole:  # the log covers no whole hour (an hour's trace from 10:20 to 11:20): no history at all
        d0 = min(s.hours)[0] if s.hours else min(tokens)[0]
        return History(d0, 0, np.zeros(0), 0)
    active = min(d for (d, _h), c in tokens.items() if c > 0) if any(c > 0 for c in tokens.values()) else whole[0][0]
    whole = [k for k in whole if k[0] >= active] or whole
    (d0, h0), (d1, h1) = whole[0], whole[-1]
    n = ((d1 - d0).days * DAY + h1) - h0 + 1
    rates = np.full(n, np.nan)
    seen = 0
    for (d, h), covered in s.hours.items():
        k = (d - d0).days * DAY + h - h0
        if 0 <= k < n and covered >= 1.0:
            rates[k] = tokens.get((d, h), 0.0) / (3600.0 * covered)
            seen += 1
    silent = _silent_hours(rates)
    rates[silent] = np.nan
    return History(d0, h0, _fill(rates), seen - len(silent), len(silent))


def _silent_hours(x: np.ndarray) -> np.ndarray:
    """Hours without traffic where every other week of the log had traffic at that hour (two weeks at
    least): an outage or a lost export, read as a gap — as zero demand, six such hours had raised the
    forecast busiest hour by half (their log is far below anything, and the noise fitted to it widens
    every path)."""
    week = 7 * DAY
    out = []
    for k in np.flatnonzero(x == 0):
        others = x[k % week::week]
        others = others[~np.isnan(others)]
        if len(others) >= 3 and np.count_nonzero(others) == len(others) - 1:
            out.append(k)
    return np.asarray(out, dtype=int)


def _fill(x: np.ndarray) -> np.ndarray:
    """Missing hours (gap days, the hour a clock change skips): the same hour a week away, else a straight line."""
    x = x.copy()
    week = 7 * DAY
    for k in np.flatnonzero(np.isnan(x)):
        near = [x[j] for j in (k - week, k + week, k - 2 * week, k + 2 * week) if 0 <= j < len(x) and not np.isnan(x[j])]
        if near:
            x[k] = float(np.mean(near[:2]))
    bad = np.isnan(x)
    if bad.any():
        idx = np.arange(len(x))
        x[bad] = np.interp(idx[bad], idx[~bad], x[~bad]) if (~bad).any() else 0.0
    return x


# --- the model -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    seasonal: np.ndarray
    """The last week of the daily + weekly seasons (log scale), from the series' end − 168 h."""
    results: object
    offset: float
    """Added before the log: a share of the mean, so hours without traffic stay finite."""
    converged: bool
    outliers: list[tuple[int, float]] = field(default_factory=list)
    """Hours far off their season (OUTLIER_SCALES robust deviations), read as gaps: (index, how far, as a
    factor of the robust fit)."""


def fit(rates: np.ndarray) -> Fit:
    """MSTL(24, 168) on log(rate + offset), then a deterministic trend + AR(1) + noise on what is left."""
    from statsmodels.tools.sm_exceptions import ConvergenceWarning
    from statsmodels.tsa.seasonal import MSTL
    from statsmodels.tsa.statespace.structural import UnobservedComponents

    offset = max(1e-6, 0.01 * float(np.mean(rates)))
    z = np.log(rates + offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' own deprecations inside its internals are not ours to act on
        # Hours far off their season (a spike, an incident) stand out of a robust STL's remainder; they are
        # read as gaps before the fit: kept as data, one hour at 3× becomes part of the weekly season and
        # raises every coming month's busiest hour by a fifth
        rest = np.asarray(MSTL(z, periods=(DAY, 7 * DAY), stl_kwargs={"robust": True}).fit().resid)
        odd = _outliers(rest)
        factors = [(int(k), math.exp(rest[k] - float(np.median(rest[k % DAY::DAY])))) for k in odd]
        if len(odd):
            cleaned = rates.astype(float).copy()
            cleaned[odd] = np.nan
            z = np.log(_fill(cleaned) + offset)
        seasons = np.asarray(MSTL(z, periods=(DAY, 7 * DAY)).fit().seasonal)
    if seasons.ndim != 2 or seasons.shape[1] != 2:
        raise ValueError("MSTL dropped a season: the series is too short")
    seasonal = seasons.sum(axis=1)
    rest = z - seasonal
    model = UnobservedComponents(rest, level=TREND, autoregressive=AR)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = model.fit(disp=False, cov_type="none")
    converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
    return Fit(seasonal[-7 * DAY:], results, offset, converged, factors)


def _outliers(rest: np.ndarray) -> np.ndarray:
    """Hours of a robust STL remainder more than OUTLIER_SCALES robust deviations (1.4826 × MAD) from the
    median of the same clock hour: quiet hours are noisier than busy ones (fewer requests), so each hour
    of the day is measured against its own spread."""
    odd = []
    for hour in range(DAY):
        r = rest[hour::DAY]
        dev = np.abs(r - np.median(r))
        scale = 1.4826 * float(np.median(dev))
        if scale > 0:
            odd.extend(hour + DAY * np.flatnonzero(dev > OUTLIER_SCALES * scale))
    return np.asarray(sorted(odd), dtype=int)


def forecast_workload(name: str, h: History, months: list[tuple[str, dt.date, int]],
                      weekdays: dict[str, tuple[str, ...]], paths: int = PATHS, seed: object = 0,
                      scenarios: int = 5) -> WorkloadForecast:
    """Fit, simulate `paths` paths to the last month, and read each month's busiest hour off them."""
    f = fit(h.rates)
    n = len(h.rates)
    week = 7 * DAY

    def index(d: dt.date) -> int:
        return (d - h.first).days * DAY - h.first_hour

    first, end = index(months[0][1]), index(months[-1][1] + dt.timedelta(days=months[-1][2]))
    steps = end - n
    season = f.seasonal[(np.arange(n, end) - (n - week)) % week]
    rng = np.random.default_rng(seed)
    days = (end - first) // DAY
    monthly = np.empty((len(months), paths))
    daily = np.empty((days, paths))
    done = 0
    while done < paths:
        k = min(CHUNK, paths - done)
        sim = np.asarray(f.results.simulate(steps, anchor="end", repetitions=k, rng=rng)).reshape(steps, k)
        rate = np.maximum(np.exp(sim + season[:, None]) - f.offset, 0.0)[first - n:]
        daily[:, done:done + k] = rate.reshape(days, DAY, k).max(axis=1)
        for i, (_m, d, _n) in enumerate(months):
            a = (index(d) - first) // DAY
            monthly[i, done:done + k] = daily[a:a + _n, done:done + k].max(axis=0)
        done += k
    out_months = []
    for i, (m, d, nd) in enumerate(months):
        p10, p50, p90 = (float(v) for v in np.quantile(monthly[i], BAND))
        out_months.append(MonthForecast(m, d, nd, p10, p50, p90))
    # The busiest month of each path: its quantiles over the median's scale every month alike.
    busiest = monthly.max(axis=0)
    mid = float(np.quantile(busiest, 0.5))
    # A median busiest month of 0 (no output tokens lately) has no scale; the caller keeps the plan's demand.
    multipliers = {q: float(np.quantile(busiest, q)) / mid if mid > 0 else 1.0 for q in quantile_levels(scenarios)}
    qd = np.quantile(daily, BAND, axis=1)
    hist_days = (n + h.first_hour) // DAY
    seen = h.rates.copy()  # the history the forecast is from: one-offs set aside
    seen[[k for k, _x in f.outliers]] = np.nan
    seen = _fill(seen)
    peaks = [float(seen[max(0, j * DAY - h.first_hour):(j + 1) * DAY - h.first_hour].max())
             for j in range(hist_days + (1 if (n + h.first_hour) % DAY else 0))]
    wf = WorkloadForecast(
        name, h.first, peaks, out_months, {"p10": qd[0].tolist(), "p50": qd[1].tolist(), "p90": qd[2].tolist()},
        profile(f.seasonal, h.when(n - week)[0], h.when(n - week)[1], weekdays), multipliers,
        _growth(f.results), n, n - h.data_hours)
    if not f.converged:
        wf.notes.append("the trend fit did not fully converge; read the band with care")
    if f.outliers:
        top = sorted(f.outliers, key=lambda kf: -abs(math.log(kf[1])))[:3]
        shown = ", ".join(f"{d} {hh:02d}:00 at {x:.2g}× the fit" for k, x in top for d, hh in [h.when(k)])
        more = f" and {len(f.outliers) - 3} more" if len(f.outliers) > 3 else ""
        wf.notes.append(f"{plural(len(f.outliers), 'hour')} far off the daily and weekly pattern set aside as "
                        f"one-offs (a spike, an incident): {shown}{more}")
    if h.silent_hours:
        wf.notes.append(f"{plural(h.silent_hours, 'hour')} without traffic, where every other week had traffic at "
                        "that hour, read as a gap in the log (an outage or a lost export), not as no demand")
    if n - h.data_hours > n / 3:
        wf.notes.append(f"{n - h.data_hours:,} of {n:,} hours were filled (gaps in the log)")
    return wf


def scenarios_from(workloads: list[WorkloadForecast], n: int) -> list[Scenario]:
    """N demand scenarios at quantile levels spread over P10–P90, weighted by the probability each stands
    for; in each, every forecast workload at that quantile of its busiest month (they move together: the
    cautious reading, as one product's growth lifts its workloads alike)."""
    levels = quantile_levels(n)
    return [Scenario(f"p{round(q * 100):d}", q, wt, {w.name: round(w.multipliers[q], 3) for w in workloads})
            for q, wt in zip(levels, quantile_weights(levels))]


def quantile_levels(n: int) -> list[float]:
    """N levels spread evenly over 0.1–0.9 (0.5 alone for one)."""
    if n <= 1:
        return [0.5] if n == 1 else []
    return [round(0.1 + 0.8 * i / (n - 1), 4) for i in range(n)]


def quantile_weights(levels: list[float]) -> list[float]:
    """Each level stands for the probability between the midpoints to its neighbours (0 and 1 at the ends):
    five levels 0.1, 0.3, …, 0.9 weigh 0.2 each."""
    if not levels:
        return []
    edges = [0.0] + [(a + b) / 2 for a, b in zip(levels, levels[1:])] + [1.0]
    w = [round(b - a, 4) for a, b in zip(edges, edges[1:])]
    w[-1] = round(1.0 - sum(w[:-1]), 4)
    return w


def profile(seasonal_week: np.ndarray, first: dt.date, first_hour: int,
            weekdays: dict[str, tuple[str, ...]]) -> dict[str, list[float]]:
    """Per day type and hour, the mean over its days of the week of the forecast's weekly shape, ÷ the
    busiest hour of all (a quieter weekend stays below 1)."""
    shape = np.exp(seasonal_week)
    by: dict[tuple[str, int], float] = {}
    for k, v in enumerate(shape):
        j = first_hour + k
        by[(weekday_id(first + dt.timedelta(days=j // DAY)), j % DAY)] = float(v)
    raw = {t: [float(np.mean([by[(wd, hr)] for wd in wds])) for hr in range(DAY)] for t, wds in weekdays.items()}
    top = max(max(v) for v in raw.values()) or 1.0
    return {t: [min(1.0, round(v / top, 3)) for v in vals] for t, vals in raw.items()}


def _growth(results) -> float | None:
    """The fitted trend as compounding growth per month (30.44 days)."""
    try:
        slope = float(np.asarray(results.trend["smoothed"])[-1])
    except (AttributeError, KeyError, TypeError, IndexError):
        return None
    return math.expm1(slope * DAY * 30.4375) if math.isfinite(slope) else None


# --- events for no workload ------------------------------------------------------------------------


def unmatched_problems(files: list[Path], shown: list[str], rename: dict[str, str], matcher,
                       loaded: LoadedPlan) -> list[Problem]:
    """Per file, the first rows whose model or workload is none of the plan's, with their line."""
    import duckdb

    from optimizer.calibrate.usage import (
        PROBLEM_SQL,
        _file_select,
        _workload_sql,
        inspect,
        workload_hint,
    )

    names = [w.name for w in loaded.plan.workloads if w.reserve_gpus is None]
    problems = []
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE TEMP MACRO epoch_any(v) AS CASE WHEN abs(v) >= 1e14 THEN v / 1e6 "
                    "WHEN abs(v) >= 1e11 THEN v / 1e3 ELSE v END")
        for path, name in zip(files, shown):
            src = inspect(con, path, name, rename, matcher.default, matcher.choices)
            rows = con.execute(
                f"SELECT v, min(rn), count(*) FROM (SELECT row_number() OVER () AS rn, coalesce(wlcol, model, '') AS v, "
                f"{PROBLEM_SQL} AS problem, {_workload_sql(matcher)} AS wl FROM ({_file_select(0, src)})) "
                f"WHERE problem IS NULL AND wl IS NULL GROUP BY v ORDER BY min(rn) LIMIT 5").fetchall()
            for value, rn, count in rows:
                line = {"csv": rn + 1, "json": rn}.get(src.fmt)
                model = value or "(no model)"
                problems.append(Problem(
                    f"{plural(count, 'event')} for '{model}', which is not a workload of the plan nor the model of one "
                    f"(workloads: {', '.join(names)})",
                    f"route them: --map model={value or 'MODEL'}:workload={workload_hint(value, matcher)}, add a "
                    f"workload for '{model}' to the plan, or leave its events out of the log",
                    file=name, line=line))
    finally:
        con.close()
    return problems or [Problem("events match no workload of the plan", "route them with --map model=M:workload=W")]
