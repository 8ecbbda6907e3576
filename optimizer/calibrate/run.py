"""`planopt calibrate`: usage events, load tests and a solved result → the plan with measured demand and goodput.

Definitions (stated in the output too):
- hourly rate: output tokens completed in an hour of the plan's time zone ÷ 3600 s;
- peak (`demand.peak_output_tokens_per_s`): for each day type, the P-th percentile (default 95)
  across full days of that day's busiest hour; the highest of the day types;
- profile: for each day type and hour, the same percentile across days of that hour's rate,
  divided by the one peak (a quieter weekend stays below 1);
- batch (`batch.output_tokens_per_day`): the same percentile of the output tokens of full days;
- what the log did not see keeps the plan's numbers (coverage.py): a day type absent from the log
  keeps its curve and peak in tokens/s; a day type seen for less than one whole day is kept too when
  another day type has a whole day, and stops the run when none has — unless --allow-partial, which
  scales the plan's curve to the hours the log saw;
- burstiness: the busiest minute's output tokens ÷ the hour's mean minute, p95 across the busy hours
  (at least half the busiest hour's rate: usage.BURST_BUSY_SHARE), each response's tokens spread over its
  generation time (output tokens × the workload's TPOT target); a fleet sized for the hour at occupancy o
  runs at o × that in the minute, so 1 ÷ it is the occupancy to keep — unless Poisson arrivals at the
  hour's rate give as much by chance (usage.poisson_peak_ratio): that is the noise the occupancy absorbs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from optimizer.calibrate import usage as usage_mod
from optimizer.calibrate.coverage import Coverage, Slots, coverage, merge_curve, slots
from optimizer.calibrate.deployments import read_deployments
from optimizer.calibrate.loadtests import Flags, judge, read_runs
from optimizer.calibrate.occupancy import occupancy
from optimizer.calibrate.rewrite import rewrite
from optimizer.calibrate.types import (
    Burst,
    Calibration,
    HourStats,
    WorkloadCalibration,
    pword,
    sig,
)
from optimizer.calibrate.usage import UsageAggregate
from optimizer.errors import PlanError, Problem, unknown_id_fix
from optimizer.inputs.loading import LoadedPlan, load_plan
from optimizer.results.jsonio import read_result
from optimizer.vocab import WEEKDAYS, profile_for, weekday_id

HOURS = range(24)


@dataclass(frozen=True)
class CalibrateOptions:
    usage: tuple[Path, ...] = ()
    bench: tuple[Path, ...] = ()
    result: Path | None = None
    maps: tuple[str, ...] = ()
    peak_percentile: float = 95.0
    slo_percentile: float | None = None
    """The percentile load tests are judged at; default: the plan's SLO percentile (p99 unless it says)."""
    flags: Flags = Flags()
    max_bad_rows: int = 0
    allow_partial: bool = False
    """Let less than one whole day of a day type set its demand (the plan's curve scaled to the hours seen)."""
    usage_workload: str | None = None
    """The workload of usage files with no model or workload column (needed when the plan has several)."""
    allow_clock_steps: bool = False
    """Count events at their times where a log's clock steps back more than 5 minutes (else refused)."""
    manifests: Path | None = None
    """The folder `planopt deploy` wrote: load tests against its deployments (--deployment) are attributed by it."""
    mix: bool | None = None
    """Usage: write each workload's request sizes as a tokens.mix of size classes (calibrate.mix): True — every
    workload with tokens; False — none (token means, a plan's mix replaced by them); None (default) — the
    interactive workloads the mix matters to: split by_size or any, or a tokens.mix already."""


# --- the whole command -------------------------------------------------------------------------


def calibrate(plan_path: Path | str, options: CalibrateOptions, out_path: Path | str,
              progress: Callable[[float], None] | None = None,
              extra_catalogs: list[Path | str] = ()) -> Calibration:
    """Read everything, compute the new numbers and the new plan text; write nothing."""

    plan_path, out_path = Path(plan_path), Path(out_path)
    _check_options(options, plan_path, out_path)
    loaded = load_plan(plan_path, list(extra_catalogs))
    plan = loaded.plan
    if options.slo_percentile is None:  # the plan's SLOs say at which percentile they hold
        options = replace(options, slo_percentile=max((w.slo.percentile for w in plan.workloads), default=99.0))
    zone = _zone(loaded)
    q = options.peak_percentile
    cal = Calibration(plan_file=loaded.file, plan_name=plan.plan, out_file=str(out_path), yaml_text="",
                      timezone=plan.timezone, peak_percentile=q, slo_percentile=options.slo_percentile,
                      definition=(f"peak = {pword(q)} across full days of each day's busiest hour (output tokens/s, "
                                  f"{plan.timezone}), for the day type with the highest; profile = {pword(q)} of each "
                                  f"hour across days ÷ that peak"))
    cal.workloads = [_old(w) for w in plan.workloads]
    by_name = {w.name: w for w in cal.workloads}
    # The small inputs first, so a mistake in them does not wait for a long scan.
    result = read_result(Path(options.result)) if options.result is not None else None
    if options.bench:
        runs = []
        problems = []
        for p in options.bench:
            try:
                runs.extend(read_runs(Path(p), str(p), options.slo_percentile))
            except PlanError as exc:
                problems.extend(exc.problems)
        if problems:
            raise PlanError(problems)
        deployments = read_deployments(options.manifests) if options.manifests is not None else None
        cal.verdicts, cal.points = judge(runs, plan, loaded.catalog, options.flags,
                                         usage_mod.parse_maps(list(options.maps))[1], deployments)
        cal.notes.extend(n for v in cal.verdicts for n in v.notes)
    if options.usage:
        _files, _rename, matcher, agg = read_usage(loaded, options.usage, options.maps, options.usage_workload,
                                                   options.max_bad_rows, progress, cal.notes,
                                                   options.allow_clock_steps)
        cal.usage = agg
        _check_ambiguous(agg, matcher)
        _usage_notes(cal, agg, plan, matcher)
        if agg.events:
            _demand(cal, agg, loaded, zone, by_name, options.allow_partial)
            _mixes(cal, agg, loaded, by_name, options.mix)
    elif options.maps and not options.bench:
        cal.notes.append("--map applies to usage files and load tests; none were given")
    if result is not None:
        cal.result_file = str(options.result)
        cal.occupancy = occupancy(result, cal.workloads, _calendar(loaded), plan.policy.occupancy)
        if not cal.occupancy:
            shared = sorted({w.name for w in result.workloads} & {w.name for w in plan.workloads})
            cal.notes.append(f"--result {options.result}: no occupancy to show — " + (
                f"it has none of this plan's workloads (it is the result of '{result.plan}')" if not shared else
                f"its workloads here ({', '.join(shared)}) are batch, reserved or without usage in the log"))
    cal.yaml_text, cal.changes = rewrite(loaded, cal, out_path)
    return cal


def _check_options(options: CalibrateOptions, plan_path: Path, out_path: Path) -> None:
    problems = []
    if not options.usage and not options.bench:
        problems.append(Problem("nothing to calibrate from",
                                "give --usage FILE (gateway log) and/or --bench FILE (load test)"))
    if options.result is not None and not options.usage:
        problems.append(Problem("--result needs --usage", "occupancy compares the result with actual usage"))
    if options.allow_partial and not options.usage:
        problems.append(Problem("--allow-partial needs --usage", "it lets a short usage log set demand"))
    if options.mix is not None and not options.usage:
        problems.append(Problem(f"--{'mix' if options.mix else 'no-mix'} needs --usage",
                                "size classes are read from a usage log's requests"))
    if options.usage_workload is not None and not options.usage:
        problems.append(Problem("--usage-workload needs --usage",
                                "it names the workload of usage logs with no model column"))
    if not 50 <= options.peak_percentile <= 100:
        problems.append(Problem(f"--peak-percentile {options.peak_percentile:g} is outside 50–100", "e.g. 95"))
    if options.slo_percentile is not None and not 0 < options.slo_percentile <= 100:
        problems.append(Problem(f"--percentile {options.slo_percentile:g} is outside (0, 100]", "e.g. 99"))
    if options.max_bad_rows < 0:
        problems.append(Problem("--max-bad-rows must be ≥ 0", None))
    problems += out_path_problems(out_path, plan_path, "calibrated", "calibrate", "OUT.yaml",
                                  "plans/q4-calibrated.yaml")
    if problems:
        raise PlanError(problems)


def out_path_problems(out_path: Path, plan_path: Path, what: str, command: str, name: str,
                      example: str) -> list[Problem]:
    """What is wrong with -o for a plan the loop writes (calibrate, forecast): it is YAML, and never the input."""
    problems = []
    if out_path.suffix.lower() not in (".yaml", ".yml"):
        problems.append(Problem(f"-o {out_path}: the {what} plan is YAML", f"name it {name}"))
    try:
        same = out_path.resolve() == plan_path.resolve()
    except OSError:
        same = False
    if same:
        problems.append(Problem(f"-o {out_path} is the plan itself; {command} never changes its input",
                                f"write the {what} plan to a new file, e.g. {example}"))
    return problems


def _zone(loaded: LoadedPlan) -> ZoneInfo:
    try:
        return ZoneInfo(loaded.plan.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise PlanError(loaded.doc.problem(("timezone",), f"unknown time zone '{loaded.plan.timezone}'",
                                           "use an IANA name like UTC, Europe/Berlin or America/New_York")) from None


def _old(w) -> WorkloadCalibration:
    wc = WorkloadCalibration(w.name, w.kind)
    if w.tokens is not None:
        wc.old_tokens = (w.tokens.input, w.tokens.output)
        if w.tokens.mix is not None:
            wc.old_mix = tuple((c.share, c.input, c.output) for c in w.tokens.mix)
    if w.demand is not None:
        wc.old_peak = w.demand.peak_output_tokens_per_s
    if w.batch is not None:
        wc.old_batch = w.batch.output_tokens_per_day
    return wc


def read_usage(loaded: LoadedPlan, usage: Sequence[Path | str], maps: Sequence[str], usage_workload: str | None,
               max_bad_rows: int, progress: Callable[[float], None] | None, notes: list[str],
               allow_clock_steps: bool = False
               ) -> tuple[list[Path], dict[str, str], usage_mod.Matcher, usage_mod.UsageAggregate]:
    """The usage logs read into the hourly aggregate, as calibrate and forecast both do: a file given twice
    is read once (a note says so), --map columns and routes applied, rows matched to workloads.
    Returns (files, column renames, matcher, aggregate)."""
    seen: set[Path] = set()
    files = []
    for p in usage:
        key = Path(p).resolve()
        if key in seen:
            notes.append(f"{p} was given twice; read once")
            continue
        seen.add(key)
        files.append(Path(p))
    rename, routes = usage_mod.parse_maps(list(maps))
    matcher = _matcher(loaded, routes, usage_workload)
    agg = usage_mod.aggregate(files, matcher, rename=rename, shown=[str(p) for p in files],
                              max_bad_rows=max_bad_rows, progress=progress, allow_clock_steps=allow_clock_steps)
    notes.extend(agg.notes)
    if agg.served_routes:
        matcher = replace(matcher, routes=matcher.routes + agg.served_routes)
    return files, rename, matcher, agg


def _matcher(loaded: LoadedPlan, routes: list, usage_workload: str | None = None) -> usage_mod.Matcher:
    base = usage_mod.workloads_for(loaded.plan)
    names = [w.name for w in loaded.plan.workloads]
    problems = []
    for r in routes:
        if r.workload not in names:
            problems.append(Problem(f"--map {r}: unknown workload '{r.workload}'",
                                    unknown_id_fix("workloads", r.workload, names)))
    default, given = base.default, False
    if usage_workload is not None:
        if usage_workload not in names:
            problems.append(Problem(f"--usage-workload {usage_workload}: unknown workload",
                                    unknown_id_fix("workloads", usage_workload, list(base.choices))))
        elif usage_workload not in base.choices:
            problems.append(Problem(f"--usage-workload {usage_workload}: a reserve_gpus workload has no demand",
                                    f"name one of {', '.join(base.choices)}"))
        default, given = usage_workload, True
    if problems:
        raise PlanError(problems)
    return replace(base, routes=tuple(routes), default=default, default_given=given)


def _check_ambiguous(agg: UsageAggregate, matcher: usage_mod.Matcher) -> None:
    amb = matcher.ambiguous_models()
    problems = []
    for model, n in agg.ambiguous.items():
        ws = amb[model]
        problems.append(Problem(
            f"{n:,} events for model '{model}' do not say which workload they belong to: "
            f"{' and '.join(ws)} both serve it",
            f"map them: --map model={model}:workload={ws[0]}, or by tenant: --map tenant=TEAM:workload={ws[-1]}"))
    if problems:
        raise PlanError(problems)


def _usage_notes(cal: Calibration, agg: UsageAggregate, plan, matcher: usage_mod.Matcher) -> None:
    for model, n in agg.unmatched.items():
        cal.notes.append(f"{n:,} events for '{model or '(no model)'}' match no workload; not counted "
                         f"(add --map model={model or 'NAME'}:workload={usage_mod.workload_hint(model, matcher)} "
                         "to count them)")
    failed = sum(f.failed for f in agg.files)
    if failed:
        cal.notes.append(f"{failed:,} failed requests (status failure) left out")
    if agg.excluded_bad:
        cal.notes.append(f"{agg.excluded_bad:,} bad rows left out (--max-bad-rows)")
    for name, n in agg.repeated.items():
        cal.notes.append(f"{name}: {n:,} events repeat another exactly (same timestamp, tokens and tenant) — counted; "
                         "if the logs are overlapping exports, give each event once")
    for f in agg.files:
        for fld, mapped, left in f.shadowed:
            cal.notes.append(f"{f.file}: {fld} read from column {mapped} (--map {mapped}={fld}); its column {left} "
                             "is not read")
        if f.default_workload is not None:
            why = "--usage-workload" if matcher.default_given else "the plan's only workload"
            cal.notes.append(f"{f.file} has no model or workload column: its {f.events:,} events go to "
                             f"{f.default_workload} ({why})")
    reserve = {w.name for w in plan.workloads if w.reserve_gpus is not None}
    for name in sorted(reserve & set(agg.quarters)):
        cal.notes.append(f"events for {name} are counted but not used: a reserve_gpus workload has no demand")


# --- demand ------------------------------------------------------------------------------------


def _calendar(loaded: LoadedPlan) -> Callable[[dt.date], str | None]:
    """Date → the plan's day type for it (vocab.day_type_of: the first whose days of the week include it)."""
    return loaded.plan.day_type_of


def _demand(cal: Calibration, agg: UsageAggregate, loaded: LoadedPlan, zone: ZoneInfo,
            by_name: dict[str, WorkloadCalibration], allow_partial: bool = False) -> None:
    plan = loaded.plan
    day_type = _calendar(loaded)
    s = slots(agg.first_epoch_s, agg.last_epoch_s, zone, agg.active_quarters)  # type: ignore[arg-type]
    dates = sorted({d for d, _ in s.hours})
    cal.period = (dt.datetime.fromtimestamp(agg.first_epoch_s, zone).strftime("%Y-%m-%d %H:%M"),  # type: ignore[arg-type]
                  dt.datetime.fromtimestamp(agg.last_epoch_s, zone).strftime("%Y-%m-%d %H:%M"))  # type: ignore[arg-type]
    types = list(plan.day_type_days())
    cal.full_days = {t: sum(1 for d in s.full_days if day_type(d) == t) for t in types}
    cov = coverage(s, types, day_type)
    with_demand = [w for w in plan.workloads if w.demand is not None and agg.quarters.get(w.name)]
    partial = [c for c in cov.values() if c.partial]
    ignored: set[str] = set()  # day types seen for part of a day, left as the plan has them
    if partial and with_demand and not allow_partial:
        if not any(cal.full_days.values()):  # nothing whole to learn from: say why, write nothing
            raise PlanError([_partial_problem(c, agg, plan.timezone, s, day_type) for c in partial])
        ignored = {c.day_type for c in partial}
        for c in partial:
            cal.notes.append(f"{c.day_type}: the log covers {c.amount()} of it, not one whole day: {c.day_type} demand "
                             f"kept as the plan has it (--allow-partial scales it to those hours)")
    if s.gaps:
        shown = ", ".join(str(d) for d in s.gaps[:4]) + (", …" if len(s.gaps) > 4 else "")
        cal.notes.append(f"{len(s.gaps)} day(s) inside the log with no event at all ({shown}): read as gaps in the "
                         "log, not days without demand")
    if with_demand:
        for c in cov.values():
            if c.hours == 0:
                cal.notes.append(f"no {c.day_type} in the log: {c.day_type} demand kept as the plan has it "
                                 "(its curve and peak in tokens/s)")
            elif c.partial and c.day_type not in ignored:
                cal.notes.append(f"{c.day_type}: the log covers {c.amount()} and not one whole day (--allow-partial): "
                                 f"the hours it saw replace the plan's; the other hours keep the plan's shape, "
                                 f"scaled to match")
    orphan = sorted({weekday_id(d) for d in dates if day_type(d) is None}, key=WEEKDAYS.index)
    if orphan:
        cal.notes.append(f"days on {', '.join(orphan)} fall in none of the plan's day types; left out of the shape")
    q = cal.peak_percentile
    for w in plan.workloads:
        wc = by_name[w.name]
        quarters = agg.quarters.get(w.name)
        if not quarters:
            if w.demand is not None or w.batch is not None:
                wc.notes.append("no events; kept as it was")
            continue
        tokens: dict[tuple[dt.date, int], float] = {}
        requests = 0
        prompt = completion = 0.0
        for qi, (n, p, c) in quarters.items():
            key = s.of_quarter[qi]
            tokens[key] = tokens.get(key, 0.0) + c
            requests += n
            prompt += p
            completion += c
        wc.requests, wc.output_tokens = requests, completion
        if requests:
            wc.new_tokens = (sig(prompt / requests), sig(completion / requests))
            if wc.new_tokens[1] == 0:
                wc.new_tokens = None
                wc.notes.append("events have no completion tokens; token means kept")
        ten = agg.tenants.get(w.name, {})
        total_c = sum(c for _, c in ten.values()) or 1.0
        wc.tenants = sorted(((t, c / total_c, n) for t, (n, c) in ten.items()), key=lambda x: (-x[1], x[0]))
        if [t for t, _, _ in wc.tenants] == ["(none)"]:
            wc.tenants = []  # the log has no tenant column
        wc.rates = {k: tokens.get(k, 0.0) / (3600.0 * h) for k, h in s.hours.items() if h > 0}
        by_type = {t: [d for d in dates if day_type(d) == t] if t not in ignored else [] for t in types}
        for t, ds in by_type.items():
            wc.actual[t] = _hour_stats(wc.rates, ds, q)
        if w.demand is not None:
            _interactive(wc, w, by_type, s, types, q, cov)
            if w.name in agg.burst:
                hours, ratio = agg.burst[w.name]
                wc.burst = Burst(hours, ratio, plan.policy.occupancy, agg.burst_poisson.get(w.name, 1.0))
        elif w.batch is not None:
            full = [d for d in dates if d in s.full_days and day_type(d) is not None]
            if full:
                per_day = [sum(tokens.get((d, h), 0.0) for h in HOURS) for d in full]
                value = float(np.percentile(per_day, q))
                if value > 0:
                    wc.new_batch = sig(value)
                    wc.peak_days = len(full)
            else:
                wc.notes.append("no full day in the log; output_tokens_per_day kept")


def wants_mix(w, policy, mix: bool | None) -> bool:
    """Whether calibrate writes the workload's sizes as a tokens.mix (CalibrateOptions.mix)."""
    if w.tokens is None or mix is False:
        return False
    if mix:
        return True
    return w.kind == "interactive" and (w.split_mode(policy) != "none" or w.tokens.mix is not None)


def _mixes(cal: Calibration, agg: UsageAggregate, loaded: LoadedPlan, by_name: dict[str, WorkloadCalibration],
           mix: bool | None) -> None:
    """Each workload's size classes from the log (calibrate.mix): a mix when more than one class tells the cost
    apart, else the means as today."""
    from optimizer.calibrate import mix as mix_mod

    plan = loaded.plan
    for w in plan.workloads:
        wc = by_name[w.name]
        cells = agg.sizes.get(w.name)
        if wc.new_tokens is None or not cells or not wants_mix(w, plan.policy, mix):
            continue
        goodputs, unit = mix_mod.config_goodputs(loaded, w.name)
        by_size = w.kind == "interactive" and w.split_mode(plan.policy) == "by_size"
        choice = mix_mod.choose(cells, goodputs, by_size)
        what = "split and single cost" if by_size else "cost"
        if choice.finest == 1:
            wc.mix_note = "one size class: the log's sizes fall in one quantile cell"
            continue
        if not choice.weighed:
            if choice.finest > 1:
                wc.notes.append("no config serves its size classes: written as one class at the means")
            wc.mix_note = "one size class: no config to weigh the log's classes by"
            continue
        per = "" if unit and unit[0] == "$" else ", weighed by GPUs: some offer has no hourly price"
        how = (f"{choice.finest} quantile classes of input × output merged while the {what} moved "
               f"≤ {mix_mod.NEGLIGIBLE:.1%}: {choice.change:.2%}{per}")
        if len(choice.classes) > 1:
            wc.new_mix = choice.classes
            wc.mix_note = how
        else:
            wc.mix_note = how + ": one class"


def _partial_problem(c: Coverage, agg: UsageAggregate, tz: str, s: Slots,
                     day_type: Callable[[dt.date], str | None]) -> Problem:
    days = sorted({d for d, _ in s.hours if day_type(d) == c.day_type})
    shown = ", ".join(str(d) for d in days[:3]) + (", …" if len(days) > 3 else "")
    files = [f.file for f in agg.files]
    who = "the log" if len(files) == 1 else "the usage logs"
    return Problem(
        f"{who} cover{'s' if len(files) == 1 else ''} {c.amount()} of {c.day_type} ({shown}, {tz}) and not one whole "
        f"day of it: too little to replace the {c.day_type} peak",
        f"give a log with at least one whole day of {c.day_type} (00:00–24:00 {tz}), or pass --allow-partial to scale "
        f"the plan's {c.day_type} curve to the hours the log has (the other hours keep the plan's shape)",
        file=files[0] if len(files) == 1 else None)


def _hour_stats(rates: dict[tuple[dt.date, int], float], days: list[dt.date], q: float) -> HourStats:
    mean, low, high, pct = [], [], [], []
    for h in HOURS:
        vals = [rates[(d, h)] for d in days if (d, h) in rates]
        if vals:
            mean.append(float(np.mean(vals)))
            low.append(float(min(vals)))
            high.append(float(max(vals)))
            pct.append(float(np.percentile(vals, q)))
        else:
            mean.append(None)
            low.append(None)
            high.append(None)
            pct.append(None)
    return HourStats(len(days), mean, low, high, pct)


def _interactive(wc: WorkloadCalibration, w, by_type: dict[str, list[dt.date]], s: Slots, types: list[str],
                 q: float, cov: dict[str, Coverage]) -> None:
    """Peak and profile: the log's where it saw them, the plan's (in tokens/s) where it did not."""
    old = w.demand
    wc.old_profile = {t: profile_for(old.profile, t) for t in types}
    plan_abs = {t: [v * old.peak_output_tokens_per_s for v in wc.old_profile[t]] for t in types}
    curves: dict[str, list[float]] = {}
    peaks: dict[str, tuple[float, int]] = {}
    kept: list[str] = []
    scaled: dict[str, tuple[str, float | None]] = {}
    for t in types:
        stats = wc.actual.get(t)
        if stats is None or stats.days == 0:
            curves[t] = plan_abs[t]
            kept.append(t)
            continue
        curves[t], k = merge_curve(stats.pct, plan_abs[t])
        full = [d for d in by_type[t] if d in s.full_days]
        if full:
            maxes = [max(wc.rates.get((d, h), 0.0) for h in HOURS if (d, h) in wc.rates) for d in full]
            peaks[t] = (float(np.percentile(maxes, q)), len(full))
            # The busiest hour carries the day type's peak: when the busiest hour moves from day to day, each
            # hour's percentile across days falls short of the percentile of the days' maxima, and a curve
            # topping out at 0.99 of the peak would size the fleet below the peak it states.
            busiest = max(HOURS, key=lambda h: (curves[t][h], -h))
            curves[t][busiest] = max(curves[t][busiest], peaks[t][0])
        else:  # less than a whole day (the caller stopped unless --allow-partial)
            peaks[t] = (max(curves[t]), 0)
            scaled[t] = (cov[t].amount(), k)
    if not peaks or max(v for v, _ in peaks.values()) <= 0:
        wc.notes.append("no output tokens in the period; demand kept")
        return
    level = {t: peaks[t][0] if t in peaks else max(curves[t]) for t in types}
    top = max(types, key=lambda t: (level[t], -types.index(t)))
    if top in peaks:
        peak = float(sig(level[top]))
        wc.peak_days = peaks[top][1]
    else:
        peak = float(sig(level[top], 6))
        wc.peak_kept = True
    wc.new_peak, wc.peak_day_type = peak, top
    wc.kept, wc.scaled = kept, scaled
    if old.monthly_growth:  # the business numbers go; their growth is a view of the future the log cannot give
        wc.notes.append(f"monthly_growth {old.monthly_growth:g} went with the business numbers: the peak is the "
                        "log's, not grown — for growth inside the horizon use `planopt forecast` (peak_by_month)")
    profile = {}
    for t in types:
        seen = wc.actual[t].pct if t not in kept else [None] * 24
        profile[t] = [_fraction(v / peak, seen[h] is not None) for h, v in enumerate(curves[t])]
        if t in scaled:
            amount, k = scaled[t]
            wc.notes.append(f"{t}: {amount} from the log; the other hours are the plan's "
                            + (f"× {k:.3g}" if k is not None else "as they were (the plan is 0 where the log is)"))
    wc.new_profile = profile


def _fraction(x: float, from_log: bool) -> float:
    """A profile value: the log's to 3 decimals (3 digits below 0.1: a tiny share of another day type's peak),
    the plan's own numbers to 4 digits, so a day type kept in tokens/s survives a new peak."""
    if from_log:
        return min(1.0, round(x, 3) if x >= 0.1 else float(sig(x, 3)))
    return min(1.0, float(sig(x, 4)))


def write_outputs(cal: Calibration, out_path: Path | str, html: str,
                  extra_catalogs: list[Path | str] = ()) -> Path:
    """Write OUT.yaml (only if it loads as a plan) and OUT.html beside it; nothing on failure."""
    return write_plan_and_page(cal.yaml_text, out_path, html, extra_catalogs, "calibrated")


def write_plan_and_page(yaml_text: str, out_path: Path | str, html: str, extra_catalogs: list[Path | str],
                        what: str) -> Path:
    """A plan the loop wrote (calibrated, forecast) and its HTML page beside it, each atomically — the
    plan only if it loads as one, and nothing at all when it does not. Returns the page's path."""
    from optimizer.atomic import atomic_write, write_text_atomic

    out_path = Path(out_path)
    html_path = out_path.with_suffix(".html")
    with atomic_write(out_path) as tmp:
        tmp.write_text(yaml_text, encoding="utf-8")
        try:
            load_plan(tmp, list(extra_catalogs))
        except PlanError as exc:
            raise PlanError([Problem(f"the {what} plan would not load: {p.message}", p.fix, file=str(out_path),
                                     line=p.line, path=p.path) for p in exc.problems]) from None
        write_text_atomic(html_path, html)
    return html_path
