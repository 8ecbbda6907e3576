"""Usage events (a gateway's log: CSV, JSON Lines or Parquet) → token sums per workload and 15 minutes, via DuckDB.

DuckDB streams the files, so logs far larger than memory aggregate in one pass (to minutes, then
quarter-hours and each hour's busiest minute); Python only sees the aggregates (a few thousand
rows per workload and quarter).
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from optimizer.calibrate.usage_files import (  # noqa: F401  (re-exported: the CLI and calibrate use them)
    Column,
    Route,
    Source,
    _lit,
    _q,
    _raise_duckdb,
    _reader,
    inspect,
    parse_maps,
    total_bytes,
)
from optimizer.calibrate.names import catalog_model, model_key
from optimizer.errors import PlanError, Problem
from optimizer.inputs.schema.plan import MAX_TOKENS_PER_REQUEST

QUARTER_S = 900
BURST_PERCENTILE = 95.0
BURST_MIN_MINUTES = 15
"""An hour counts for burstiness when the log spans at least this many of its minutes."""
BURST_BUSY_SHARE = 0.5
"""Burstiness is read over the hours with at least this share of the workload's busiest hour's tokens: the
hours that size the fleet (quiet night hours' few requests make any minute look bursty: 7.1× against 2.5×)."""
FAILED_STATUS = ("failure", "failed", "error")
EPOCH_MIN, EPOCH_MAX = 946_684_800, 4_102_444_800  # 2000-01-01 .. 2100-01-01 UTC

PROBLEMS = {
    # code: (field, what, fix)
    "timestamp-missing": ("timestamp", "has no timestamp", "every event needs a time"),
    "timestamp-date-only": ("timestamp", "is a date without a time (every event that day would be at midnight)",
                            "write each request's time: ISO 8601 with the time (2026-10-01T14:03:00Z) or epoch "
                            "seconds/milliseconds"),
    "timestamp-unparseable": ("timestamp", "is not a timestamp",
                              "write ISO 8601 (2026-10-01T14:03:00Z; no offset means UTC) or epoch seconds/milliseconds"),
    "timestamp-range": ("timestamp", "is outside 2000–2100",
                        "check the column: epoch values are read as seconds below 1e11, milliseconds below 1e14, "
                        "microseconds above"),
    "prompt-bad": ("prompt_tokens", "is not a number", "write the request's prompt tokens as a whole number"),
    "prompt-negative": ("prompt_tokens", "is negative", "token counts are ≥ 0; fix or drop the row"),
    "completion-bad": ("completion_tokens", "is not a number",
                       "write the request's completion tokens as a whole number"),
    "completion-negative": ("completion_tokens", "is negative", "token counts are ≥ 0; fix or drop the row"),
    # A plan's request (its context, prompt and completion together) stops at MAX_TOKENS_PER_REQUEST: a row
    # beyond it is a broken count (a sum, an overflow, a wrong column), and would make the calibrated plan
    # unloadable.
    "prompt-huge": ("prompt_tokens", f"is more than {MAX_TOKENS_PER_REQUEST:,} tokens, for one request",
                    "check the column holds each request's own tokens; fix or drop the row"),
    "completion-huge": ("completion_tokens", f"takes the request (prompt + completion) past "
                        f"{MAX_TOKENS_PER_REQUEST:,} tokens", "check the column holds each request's own tokens; "
                        "fix or drop the row"),
}


@dataclass(frozen=True)
class Matcher:
    """How an event finds its workload: its workload field, a route, its model = a name, else a model id."""

    names: tuple[str, ...]
    by_model: dict[str, tuple[str, ...]]
    routes: tuple[Route, ...] = ()
    default: str | None = None
    """Where the events of a file with no model or workload column go (the plan's only workload, or
    --usage-workload)."""
    default_given: bool = False
    """The default is --usage-workload: some file must then need it."""
    choices: tuple[str, ...] = ()
    """The workloads such a file could go to (the plan's workloads with demand), for the error without a default."""
    tpot_s: dict[str, float] = field(default_factory=dict)
    """Per workload, seconds per output token (its TPOT target): a response's tokens are spread over its
    generation time, output tokens × this, from its timestamp on."""

    def ambiguous_models(self) -> dict[str, tuple[str, ...]]:
        return {m: ws for m, ws in self.by_model.items() if len(ws) > 1 and m not in self.names}


@dataclass(frozen=True)
class FileSummary:
    file: str
    fmt: str
    columns: dict[str, str]
    """field → column(s) used, as shown to the user."""
    events: int
    failed: int
    bad: dict[str, int]
    default_workload: str | None = None
    """No model or workload column: every event went to this workload."""
    shadowed: tuple[tuple[str, str, str], ...] = ()
    """(field, column --map named, the file's usual column for it, not read)."""


@dataclass
class UsageAggregate:
    files: list[FileSummary]
    quarters: dict[str, dict[int, tuple[int, float, float]]]
    """workload → 15-minute index (epoch // 900) → (requests, prompt tokens, completion tokens)."""
    tenants: dict[str, dict[str, tuple[int, float]]]
    """workload → tenant → (requests, completion tokens)."""
    unmatched: dict[str, int]
    """model (or workload) value → events that match no workload."""
    ambiguous: dict[str, int]
    first_epoch_s: float | None
    last_epoch_s: float | None
    events: int
    excluded_bad: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    active_quarters: set[int] = field(default_factory=set)
    """15-minute indexes with at least one good event (any workload, matched or not)."""
    burst: dict[str, tuple[int, float]] = field(default_factory=dict)
    """workload → (hours counted, p95 across them of the busiest minute's output tokens ÷ the hour's mean minute)."""
    burst_poisson: dict[str, float] = field(default_factory=dict)
    """workload → p95 across the same hours of the busiest minute Poisson arrivals at each hour's rate give
    (poisson_peak_ratio): a busiest minute up to this is noise, not a burst."""
    repeated: dict[str, int] = field(default_factory=dict)
    """Per workload, events that repeat another exactly (timestamp, tokens, tenant): overlapping exports?"""
    served_routes: tuple[Route, ...] = ()
    """Routes for the log's model names that name a workload's model as people write it (a Hugging Face id)."""
    sizes: dict[str, list[tuple[int, int, int, float, float]]] = field(default_factory=dict)
    """workload → its requests' sizes as a histogram: (prompt bin, completion bin, requests, prompt tokens,
    completion tokens) per cell, bins of SIZE_BINS_PER_OCTAVE per doubling of 1 + tokens (size_bin)."""


# --- the query -------------------------------------------------------------------------------------


def _text(src: Source, col: Column) -> str:
    if col.json_path is not None:
        return f"({_q(col.name)} ->> {_lit('$.' + col.json_path)})"
    if src.fmt == "parquet" and col.type.upper() != "VARCHAR":
        return f"CAST({_q(col.name)} AS VARCHAR)"
    return _q(col.name)


def _epoch(src: Source, col: Column) -> str:
    """Seconds since 1970 (UTC) from ISO 8601 text, epoch s/ms/µs, or a typed timestamp."""
    t = col.type.upper()
    if src.fmt == "parquet" and col.json_path is None:
        if t.startswith("TIMESTAMP") or t == "DATE":
            return f"epoch(CAST({_q(col.name)} AS {'TIMESTAMPTZ' if 'TIME ZONE' in t else 'TIMESTAMP'}))"
        if any(k in t for k in ("INT", "DOUBLE", "FLOAT", "DECIMAL")):
            return f"epoch_any(CAST({_q(col.name)} AS DOUBLE))"
    x = _text(src, col)
    return (f"CASE WHEN TRY_CAST(trim({x}) AS DOUBLE) IS NOT NULL THEN epoch_any(TRY_CAST(trim({x}) AS DOUBLE)) "
            f"ELSE epoch(TRY_CAST({x} AS TIMESTAMPTZ)) END")


def _number(src: Source, col: Column) -> str:
    t = col.type.upper()
    if src.fmt == "parquet" and col.json_path is None and any(k in t for k in ("INT", "DOUBLE", "FLOAT", "DECIMAL")):
        return f"CAST({_q(col.name)} AS DOUBLE)"
    return f"TRY_CAST(trim({_text(src, col)}) AS DOUBLE)"


def _first_text(src: Source, cols: tuple[Column, ...] | None) -> str:
    if not cols:
        return "CAST(NULL AS VARCHAR)"
    parts = [f"NULLIF(trim({_text(src, c)}), '')" for c in cols]
    return parts[0] if len(parts) == 1 else f"COALESCE({', '.join(parts)})"


def _file_select(fid: int, src: Source) -> str:
    c = src.columns
    wlcol = _lit(src.default_workload) if src.default_workload is not None else _first_text(src, c.get("workload"))
    ts = c["timestamp"][0]
    json_cols = None
    if src.fmt.startswith("json"):
        json_cols = {}
        for cols in c.values():
            for col in cols:
                json_cols[col.name] = "JSON" if col.json_path else "VARCHAR"
    status = c.get("status")
    failed = (f"lower({_first_text(src, status)}) IN ({', '.join(_lit(s) for s in FAILED_STATUS)})"
              if status else "false")
    return (f"SELECT {fid} AS fid, {_epoch(src, ts)} AS epoch_s, {_text(src, ts)} AS ts_text, "
            f"{_number(src, c['prompt_tokens'][0])} AS p, {_text(src, c['prompt_tokens'][0])} AS p_text, "
            f"{_number(src, c['completion_tokens'][0])} AS c, {_text(src, c['completion_tokens'][0])} AS c_text, "
            f"{_first_text(src, c.get('model'))} AS model, {wlcol} AS wlcol, "
            f"{_first_text(src, c.get('tenant'))} AS tenant, coalesce({failed}, false) AS failed, "
            f"{_number(src, c['latency_ms'][0]) + ' / 1000.0' if 'latency_ms' in c else 'CAST(NULL AS DOUBLE)'} AS lat "
            f"FROM {_reader(src.fmt, src.path, json_cols, src.delim, src.header)}")


PROBLEM_SQL = f"""CASE
  WHEN failed THEN 'failed'
  WHEN ts_text IS NULL OR trim(ts_text) = '' THEN 'timestamp-missing'
  WHEN regexp_full_match(trim(ts_text), '[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}') THEN 'timestamp-date-only'
  WHEN epoch_s IS NULL OR NOT isfinite(epoch_s) THEN 'timestamp-unparseable'
  WHEN epoch_s < {EPOCH_MIN} OR epoch_s >= {EPOCH_MAX} THEN 'timestamp-range'
  WHEN p IS NULL OR NOT isfinite(p) THEN 'prompt-bad'
  WHEN p < 0 THEN 'prompt-negative'
  WHEN p > {MAX_TOKENS_PER_REQUEST} THEN 'prompt-huge'
  WHEN c IS NULL OR NOT isfinite(c) THEN 'completion-bad'
  WHEN c < 0 THEN 'completion-negative'
  WHEN p + c > {MAX_TOKENS_PER_REQUEST} THEN 'completion-huge'
END"""


SIZE_BINS_PER_OCTAVE = 8
"""Request sizes are kept as a histogram with this many bins per doubling of 1 + tokens (9% wide): fine enough
that the size classes calibrate draws from it (calibrate.mix) sit where the log's requests are, and a few
thousand cells at most whatever the log's length. Each cell keeps its requests' exact token sums."""


def size_bin(tokens: float) -> int:
    """The histogram bin of a request of `tokens` prompt (or completion) tokens, as the scan computes it."""
    return int(math.floor(SIZE_BINS_PER_OCTAVE * math.log2(1.0 + tokens)))


MAX_GENERATION_S = 3600
"""A response's tokens are spread over at most this long (a broken count cannot explode the minutes)."""


def _tpot_sql(m: Matcher) -> str:
    """Seconds per output token of the event's workload (0: its tokens all count in the minute it arrives)."""
    whens = " ".join(f"WHEN {_lit(w)} THEN {float(v)!r}" for w, v in sorted(m.tpot_s.items()) if v > 0)
    return f"(CASE wl {whens} ELSE 0.0 END)" if whens else "0.0"


def _workload_sql(m: Matcher) -> str:
    """The SQL CASE that names an event's workload (NULL when none or ambiguous)."""
    names = ", ".join(_lit(n) for n in m.names)
    whens = []
    if names:
        whens.append(f"WHEN wlcol IN ({names}) THEN wlcol")
    for r in m.routes:
        conds = []
        if r.model is not None:
            conds.append(f"model = {_lit(r.model)}")
        if r.tenant is not None:
            conds.append(f"tenant = {_lit(r.tenant)}")
        whens.append(f"WHEN {' AND '.join(conds)} THEN {_lit(r.workload)}")
    if names:
        whens.append(f"WHEN model IN ({names}) THEN model")
    for model, ws in sorted(m.by_model.items()):
        if len(ws) == 1:
            whens.append(f"WHEN model = {_lit(model)} THEN {_lit(ws[0])}")
    if not whens:
        return "CAST(NULL AS VARCHAR)"
    return "CASE " + " ".join(whens) + " END"


def aggregate(paths: list[Path], matcher: Matcher, *, rename: dict[str, str] | None = None,
              shown: list[str] | None = None, max_bad_rows: int = 0,
              progress: Callable[[float], None] | None = None, allow_clock_steps: bool = False) -> UsageAggregate:
    """Scan every usage file once; sum tokens per workload and quarter-hour, per workload and tenant."""
    import duckdb

    started = time.perf_counter()
    shown = shown or [str(p) for p in paths]
    tmp = tempfile.mkdtemp(prefix="planopt-duckdb-")
    con = duckdb.connect(config={"temp_directory": tmp})
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE TEMP MACRO epoch_any(v) AS CASE WHEN abs(v) >= 1e14 THEN v / 1e6 "
                    "WHEN abs(v) >= 1e11 THEN v / 1e3 ELSE v END")
        sources, problems = [], []
        for p, s in zip(paths, shown):
            try:
                sources.append(inspect(con, Path(p), s, rename or {}, matcher.default, matcher.choices))
            except PlanError as exc:
                problems.extend(exc.problems)
        if not problems and matcher.default_given and all(src.default_workload is None for src in sources):
            problems.append(Problem(
                f"--usage-workload {matcher.default}: every usage file has a model or workload column, "
                "and events go by it",
                f"leave --usage-workload out, or route a model's events: --map model=MODEL:workload={matcher.default}"))
        if problems:
            raise PlanError(problems)

        def scan(m: Matcher) -> UsageAggregate:
            union = " UNION ALL ".join(_file_select(i, s) for i, s in enumerate(sources))
            query = f"""
            WITH ev AS (SELECT *, {PROBLEM_SQL} AS problem FROM ({union})),
            ev2 AS (SELECT *, CASE WHEN problem IS NULL THEN {_workload_sql(m)} END AS wl FROM ev),
            ev3 AS (
              SELECT fid, problem, epoch_s, p, c, wl, lat,
                     CASE WHEN problem IS NULL AND wl IS NULL THEN coalesce(wlcol, model, '') END AS umodel,
                     CASE WHEN wl IS NOT NULL THEN coalesce(tenant, '(none)') END AS tenant,
                     CASE WHEN problem IS NULL THEN CAST(floor(epoch_s / 60) AS BIGINT) END AS minute,
                     CASE WHEN wl IS NOT NULL THEN CAST(floor({SIZE_BINS_PER_OCTAVE} * log2(1 + p)) AS BIGINT) END AS pbin,
                     CASE WHEN wl IS NOT NULL THEN CAST(floor({SIZE_BINS_PER_OCTAVE} * log2(1 + c)) AS BIGINT) END AS cbin
              FROM ev2),
            g AS MATERIALIZED (
              SELECT CASE WHEN GROUPING(fid, problem) = 0 THEN 'file' WHEN GROUPING(wl, umodel, minute) = 0 THEN 'minute'
                          WHEN GROUPING(wl, pbin, cbin) = 0 THEN 'size' ELSE 'tenant' END AS kind,
                     fid, problem, wl, umodel, minute, tenant, pbin, cbin, count(*) AS n, sum(p) AS p, sum(c) AS c,
                     sum(c * c) AS c2,
                     min(epoch_s) FILTER (WHERE problem IS NULL) AS t0, max(epoch_s) FILTER (WHERE problem IS NULL) AS t1
              FROM ev3
              -- request sizes: a histogram of (prompt, completion) bins per workload, with each cell's exact sums
              GROUP BY GROUPING SETS ((fid, problem), (wl, umodel, minute), (wl, tenant), (wl, pbin, cbin))),
            span AS (SELECT CAST(floor(min(t0) / 60) AS BIGINT) AS m0, CAST(floor(max(t1) / 60) AS BIGINT) AS m1
                     FROM g WHERE kind = 'file'),
            gen AS (
              -- Each response's output tokens spread evenly over its generation time (the log's latency where
              -- it has one, else tokens × the workload's TPOT; at most an hour) from its timestamp on, into
              -- the minutes it overlaps.
              SELECT wl, c, epoch_s AS t, d,
                     unnest(range(CAST(floor(epoch_s / 60) AS BIGINT), CAST(floor((epoch_s + d) / 60) AS BIGINT) + 1))
                       AS minute
              FROM (SELECT wl, c, epoch_s,
                           least(CASE WHEN lat > 0 AND isfinite(lat) THEN lat ELSE c * {_tpot_sql(m)} END,
                                 {MAX_GENERATION_S}) AS d
                    FROM ev3 WHERE problem IS NULL AND wl IS NOT NULL)),
            spread AS (
              SELECT wl, minute, sum(CASE WHEN d <= 0 THEN c
                                          ELSE c * greatest(0, least(t + d, 60.0 * (minute + 1)) - greatest(t, 60.0 * minute))
                                               / d END) AS c
              FROM gen GROUP BY wl, minute),
            arrivals AS (
              SELECT wl, minute // 60 AS hour, sum(n) AS n, sum(c) AS c, sum(c2) AS c2
              FROM g WHERE kind = 'minute' AND wl IS NOT NULL GROUP BY wl, minute // 60),
            hours AS (
              -- Each clock hour's busiest minute and its mean minute over the minutes the log spans.
              SELECT wl, minute // 60 AS hour, max(c) AS top, sum(c) AS total,
                     least(m1, minute // 60 * 60 + 59) - greatest(m0, minute // 60 * 60) + 1 AS minutes
              FROM spread CROSS JOIN span
              GROUP BY wl, minute // 60, m0, m1),
            busy AS (SELECT *, max(total / minutes) OVER (PARTITION BY wl) AS busiest FROM hours
                     WHERE total > 0 AND minutes >= {BURST_MIN_MINUTES})
            SELECT kind, fid, problem, wl, umodel, NULL AS quarter, tenant, n, p, c, t0, t1 FROM g
            WHERE kind NOT IN ('minute', 'size')
            UNION ALL
            SELECT 'size', NULL, NULL, wl, NULL, NULL, NULL, n, p, c, pbin, cbin FROM g WHERE kind = 'size' AND wl IS NOT NULL
            UNION ALL
            SELECT 'quarter', NULL, NULL, wl, umodel, minute // {QUARTER_S // 60}, NULL, sum(n), sum(p), sum(c), NULL, NULL
            FROM g WHERE kind = 'minute' AND minute IS NOT NULL
            GROUP BY wl, umodel, minute // {QUARTER_S // 60}
            UNION ALL
            -- per busy hour: its requests a minute, its busiest minute ÷ its mean minute, E[c²] ÷ E[c]²
            SELECT 'burst', NULL, NULL, busy.wl, NULL, NULL, NULL, NULL, top / (total / minutes),
                   CASE WHEN a.c > 0 THEN a.c2 * a.n / (a.c * a.c) END, a.n / minutes, NULL
            FROM busy LEFT JOIN arrivals a ON a.wl = busy.wl AND a.hour = busy.hour
            WHERE total / minutes >= {BURST_BUSY_SHARE} * busiest
            UNION ALL
            SELECT 'repeat', NULL, NULL, wl, NULL, NULL, NULL, count(*) - count(DISTINCT (epoch_s, p, c, tenant)),
                   NULL, NULL, NULL, NULL
            FROM ev3 WHERE problem IS NULL AND wl IS NOT NULL
            GROUP BY wl
            """
            names = {str(src.path): src.shown for src in sources}
            try:
                rows = _run_with_progress(con, query, sum(src.bytes for src in sources), progress)
            except PlanError:
                raise
            except Exception as exc:
                _raise_duckdb(exc, names)
                raise
            return _collect(rows, sources, m)

        if not allow_clock_steps:
            steps = _clock_steps(con, sources)
            if steps:
                raise PlanError(steps)
        agg = scan(matcher)
        served, problems, notes = _served_routes(agg, matcher)
        if problems:
            raise PlanError(problems)
        if served:  # names as people write them (a Hugging Face id): read again with them routed
            matcher = replace(matcher, routes=matcher.routes + tuple(served))
            agg = scan(matcher)
            agg.served_routes = tuple(served)
        agg.notes.extend(notes)
        if allow_clock_steps:
            agg.notes.extend(_clock_step_notes(con, sources))
        bad_total = sum(sum(f.bad.values()) for f in agg.files)
        if bad_total > max_bad_rows:
            raise PlanError(_bad_row_problems(con, sources, agg.files, bad_total, max_bad_rows))
        agg.excluded_bad = bad_total
        empty = [f for f in agg.files if f.events == 0 and f.failed == 0 and not f.bad]
        if empty:
            raise PlanError([Problem("has no events (a header and no rows?)",
                                     "export a period with traffic, or leave this file out", file=f.file)
                             for f in empty])
        agg.seconds = time.perf_counter() - started
        return agg
    finally:
        con.close()
        _rmtree(tmp)


def _rmtree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _read_bytes_so_far() -> int | None:
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _run_with_progress(con, query: str, size_bytes: int, progress: Callable[[float], None] | None) -> list[tuple]:
    """Run the query; meanwhile report a fraction done (bytes read, or DuckDB's own estimate)."""
    if progress is None:
        return _execute(con, query)
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["rows"] = con.execute(query).fetchall()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    start = _read_bytes_so_far()
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            done = max(0.0, con.query_progress() / 100.0)
            now = _read_bytes_so_far()
            if start is not None and now is not None and size_bytes > 0:
                done = max(done, (now - start) / size_bytes)
            progress(min(done, 0.99))
    except KeyboardInterrupt:
        con.interrupt()
        worker.join()
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    progress(1.0)
    return box["rows"]  # type: ignore[return-value]


def _execute(con, query: str) -> list[tuple]:
    return con.execute(query).fetchall()


def _collect(rows: list[tuple], sources: list[Source], matcher: Matcher) -> UsageAggregate:
    per_file: dict[int, dict[str | None, int]] = {i: {} for i in range(len(sources))}
    quarters: dict[str, dict[int, tuple[int, float, float]]] = {}
    tenants: dict[str, dict[str, tuple[int, float]]] = {}
    unmatched: dict[str, int] = {}
    ambiguous: dict[str, int] = {}
    amb = matcher.ambiguous_models()
    first = last = None
    active: set[int] = set()
    hours_of: dict[str, list[tuple[float, float, float]]] = {}
    repeated: dict[str, int] = {}
    sizes: dict[str, list[tuple[int, int, int, float, float]]] = {}
    for kind, fid, problem, wl, umodel, quarter, tenant, n, p, c, t0, t1 in rows:
        if kind == "file":
            per_file[fid][problem] = n
            if problem is None and t0 is not None:
                first = t0 if first is None else min(first, t0)
                last = t1 if last is None else max(last, t1)
        elif kind == "quarter":
            active.add(int(quarter))
            if wl is not None:
                quarters.setdefault(wl, {})[int(quarter)] = (int(n), float(p or 0.0), float(c or 0.0))
            elif umodel is not None:
                into = ambiguous if umodel in amb else unmatched
                into[umodel] = into.get(umodel, 0) + int(n)
        elif kind == "burst":
            if wl is not None and p is not None:
                hours_of.setdefault(wl, []).append((float(p), float(c) if c is not None else 1.0,
                                                    float(t0) if t0 is not None else 0.0))
        elif kind == "size":
            if wl is not None and n:
                sizes.setdefault(wl, []).append((int(t0), int(t1), int(n), float(p or 0.0), float(c or 0.0)))
        elif kind == "repeat":
            if wl is not None and n:
                repeated[wl] = int(n)
        elif wl is not None:
            tenants.setdefault(wl, {})[tenant] = (int(n), float(c or 0.0))
    files = []
    for i, s in enumerate(sources):
        counts = per_file[i]
        files.append(FileSummary(
            file=s.shown, fmt=s.fmt,
            columns={k: " or ".join(str(c) for c in v) for k, v in s.columns.items()},
            events=counts.get(None, 0), failed=counts.get("failed", 0),
            bad={k: v for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))
                 if k is not None and k != "failed"}, default_workload=s.default_workload, shadowed=s.shadowed))
    events = sum(f.events for f in files)
    burst, poisson = {}, {}
    for wl, hrs in sorted(hours_of.items()):
        burst[wl] = (len(hrs), float(np.percentile([r for r, _k, _lam in hrs], BURST_PERCENTILE)))
        poisson[wl] = float(np.percentile([poisson_peak_ratio(lam / k) for _r, k, lam in hrs], BURST_PERCENTILE))
    return UsageAggregate(files, quarters, tenants, dict(sorted(unmatched.items())), dict(sorted(ambiguous.items())),
                          first, last, events, active_quarters=active, burst=burst, burst_poisson=poisson,
                          repeated=dict(sorted(repeated.items())),
                          sizes={wl: sorted(cells) for wl, cells in sorted(sizes.items())})


POISSON_QUANTILE = 0.9999
"""The minute's quantile the Poisson peak is read at: an hour has 60 minutes, so under Poisson arrivals its
busiest minute stays below this quantile in 0.9999^60 = 99.4% of hours."""


def poisson_peak_ratio(lam: float, q: float = POISSON_QUANTILE) -> float:
    """The `q` quantile of a minute's arrivals under Poisson arrivals of mean `lam` a minute, ÷ `lam`: how far
    the busiest minute of an hour rises above its mean by chance alone. `lam` is the hour's requests a minute,
    divided by E[c²]/E[c]² of its output lengths (a compound Poisson count of tokens, read as Poisson of the
    same relative spread). Summed term by term up to a mean of 1,000, a normal approximation above."""
    if not lam > 0 or not math.isfinite(lam):
        return 1.0
    if lam > 1000:
        z = 3.719  # the standard normal's 0.9999 quantile
        return (lam + z * math.sqrt(lam) + 1.0) / lam
    term = math.exp(-lam)
    total, k = term, 0
    while total < q and k < 100_000:
        k += 1
        term *= lam / k
        total += term
    return max(1.0, k / lam)


def _bad_row_problems(con, sources: list[Source], files: list[FileSummary], total: int, allowed: int) -> list[Problem]:
    """The first few bad rows of each kind, by line (CSV, JSON Lines) or row (Parquet)."""
    problems = []
    for fid, (src, summary) in enumerate(zip(sources, files)):
        for code, count in summary.bad.items():
            fld, what, fix = PROBLEMS[code]
            col = src.columns[fld][0]
            raw = {"timestamp": "ts_text", "prompt_tokens": "p_text", "completion_tokens": "c_text"}[fld]
            query = (f"SELECT rn, {raw} FROM (SELECT row_number() OVER () AS rn, *, {PROBLEM_SQL} AS problem "
                     f"FROM ({_file_select(fid, src)})) WHERE problem = {_lit(code)} ORDER BY rn LIMIT 3")
            examples = _execute(con, query)
            more = f" ({count:,} rows like this)" if count > len(examples) else ""
            for rn, value in examples:
                shown = "empty" if value is None or str(value).strip() == "" else repr(str(value)[:40])
                # Lines assume one line per row (true unless a quoted field holds a line break).
                line = {"csv": rn + 1, "json": rn}.get(src.fmt)
                problems.append(Problem(f"row {rn:,}: {col} {shown} {what}{more}", fix, file=src.shown, line=line))
                more = ""
    if allowed:
        problems.append(Problem(f"{total:,} bad rows, more than --max-bad-rows {allowed:,}",
                                "fix the rows, or raise --max-bad-rows to leave them out"))
    return problems


# --- model names as people write them ---------------------------------------------------------------


def _served_routes(agg: UsageAggregate, matcher: Matcher) -> tuple[list[Route], list[Problem], list[str]]:
    """Routes for the model names that match no workload but name one's model (meta-llama/Llama-3.3-70B-Instruct
    for llama-3.3-70b), the problems of those that name a model two workloads serve, and notes."""
    routes, problems, notes = [], [], []
    for name, n in agg.unmatched.items():
        mid = catalog_model(name, list(matcher.by_model)) if name else None
        if mid is None:
            continue
        ws = matcher.by_model[mid]
        if len(ws) == 1:
            routes.append(Route(ws[0], model=name))
            notes.append(f"{n:,} events for model '{name}' read as {mid}, the model of {ws[0]}")
        else:
            problems.append(Problem(
                f"{n:,} events for model '{name}' ({mid}) do not say which workload they belong to: "
                f"{' and '.join(ws)} both serve it",
                f"map them: --map model={name}:workload={ws[0]}, or by tenant: --map tenant=TEAM:workload={ws[-1]}"))
    return routes, problems, notes


def workload_hint(name: str, matcher: Matcher) -> str:
    """The workload a `--map model=NAME:workload=…` hint should name: the one serving the model NAME is a
    variant of (llama-3.1-70b-prod → the workload of llama-3.1-70b), else the placeholder NAME — never a
    workload of another model."""
    key = model_key(name) if name else ""
    for model, ws in sorted(matcher.by_model.items()):
        mk = model_key(model)
        if len(ws) == 1 and key and (key == mk or key.startswith(mk + "-")):
            return ws[0]
    return "NAME"


# --- clock steps -------------------------------------------------------------------------------------


CLOCK_STEP_S = 300
"""A timestamp this many seconds behind the one before it (of the same model or workload), in a log written in
arrival order, is the gateway's clock stepping back: its hour would count twice, its peak with it."""
ARRIVAL_ORDER_SHARE = 0.01
"""A file is written in arrival order when at most this share of its rows (and at least a few) step back by
more than CLOCK_STEP_S; more, and its order is another (sorted by tenant, shuffled) and says nothing of clocks."""


def _steps(con, fid: int, src: Source) -> tuple[int, int, list[tuple]]:
    """(good rows, steps back, the first few steps as (row before, row, time before, time, model))."""
    query = f"""
    WITH r AS (SELECT row_number() OVER () AS rn, epoch_s, p, c, tenant, coalesce(wlcol, model, '') AS k,
                      {PROBLEM_SQL} AS problem
               FROM ({_file_select(fid, src)})),
    l AS (SELECT rn, epoch_s, k, lag(epoch_s) OVER (PARTITION BY k ORDER BY rn) AS prev,
                 lag(rn) OVER (PARTITION BY k ORDER BY rn) AS prev_rn, count(*) OVER () AS n,
                 count(*) OVER (PARTITION BY k, epoch_s, p, c, tenant) > 1 AS twin
          FROM r WHERE problem IS NULL)
    -- a row that repeats another exactly starts an overlapping export appended, not a clock step
    SELECT prev_rn, rn, prev, epoch_s, k, n, count(*) OVER () AS steps FROM l
    WHERE prev - epoch_s > {CLOCK_STEP_S} AND NOT twin ORDER BY rn LIMIT 3"""
    try:
        rows = _execute(con, query)
    except Exception as exc:  # the main scan names the file's read error; here it is the same error
        _raise_duckdb(exc, {str(src.path): src.shown})
        raise
    if not rows:
        return 0, 0, []
    return int(rows[0][5]), int(rows[0][6]), [r[:5] for r in rows]


def _step_text(src: Source, step: tuple) -> tuple[str, int | None]:
    import datetime as dt

    prev_rn, rn, prev, t, k = step
    when = (lambda x: dt.datetime.fromtimestamp(x, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))
    back = prev - t
    span = f"{back / 3600:.1f} h" if back >= 3600 else f"{back / 60:.0f} min"
    who = f" ({k})" if k else ""
    line = {"csv": rn + 1, "json": rn}.get(src.fmt)
    return (f"rows {prev_rn:,} → {rn:,}{who}: the time steps back {span}, from {when(prev)} to {when(t)}", line)


def _ordered(n: int, steps: int) -> bool:
    return 0 < steps <= max(3, ARRIVAL_ORDER_SHARE * n)


def _clock_steps(con, sources: list[Source]) -> list[Problem]:
    """A problem per clock step (the first three of each file written in arrival order)."""
    problems = []
    for fid, src in enumerate(sources):
        n, steps, first = _steps(con, fid, src)
        if not _ordered(n, steps):
            continue
        more = f" ({steps:,} steps like this)" if steps > len(first) else ""
        for step in first:
            text, line = _step_text(src, step)
            problems.append(Problem(
                f"{text}, in a log otherwise in arrival order: a clock step{more}",
                "fix the clock's rows or leave them out; or pass --allow-clock-steps to count the events at the "
                "times written (that hour counts twice)", file=src.shown, line=line))
            more = ""
    return problems


def _clock_step_notes(con, sources: list[Source]) -> list[str]:
    notes = []
    for fid, src in enumerate(sources):
        n, steps, first = _steps(con, fid, src)
        if _ordered(n, steps):
            text, _line = _step_text(src, first[0])
            notes.append(f"{src.shown}: {steps:,} clock step(s) back (first {text}); events counted at the times "
                         "written (--allow-clock-steps)")
    return notes


def workloads_for(plan) -> Matcher:
    """The plan's workloads as a Matcher (reserve_gpus workloads have no model); a file with no model
    column goes to the plan's only workload with demand, if it has just one."""
    by_model: dict[str, list[str]] = {}
    for w in plan.workloads:
        if w.model is not None and w.reserve_gpus is None:
            by_model.setdefault(w.model, []).append(w.name)
    choices = tuple(w.name for w in plan.workloads if w.reserve_gpus is None)
    tpot = {w.name: w.slo.tpot_ms / 1000.0 for w in plan.workloads
            if w.reserve_gpus is None and w.slo is not None and w.slo.tpot_ms}
    return Matcher(tuple(w.name for w in plan.workloads), {k: tuple(v) for k, v in by_model.items()},
                   default=choices[0] if len(choices) == 1 else None, choices=choices, tpot_s=tpot)


