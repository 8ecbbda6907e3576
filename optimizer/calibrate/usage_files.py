"""Usage files: their formats, which column holds which field (OpenAI usage, LiteLLM spend logs, Azure's public
LLM inference trace, --map), read errors."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from optimizer.errors import PlanError, Problem, did_you_mean

FIELDS = ("timestamp", "model", "workload", "tenant", "prompt_tokens", "completion_tokens", "status", "latency_ms")
FIELD_ALIASES = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens", "team": "tenant"}

AUTO_COLUMNS: dict[str, tuple[str, ...]] = {
    # OpenAI-style usage logs, LiteLLM's LiteLLM_SpendLogs and Azure's public LLM inference traces
    # (TIMESTAMP, ContextTokens, GeneratedTokens), in order of preference.
    "timestamp": ("timestamp", "starttime", "start_time", "created_at", "created", "request_time", "time", "ts"),
    "workload": ("workload",),
    "model": ("model_group", "model", "model_id", "model_name"),
    "tenant": ("tenant", "team_id", "team", "user", "user_id", "end_user"),
    "prompt_tokens": ("prompt_tokens", "input_tokens", "usage.prompt_tokens", "usage.input_tokens", "contexttokens"),
    "completion_tokens": ("completion_tokens", "output_tokens", "usage.completion_tokens", "usage.output_tokens",
                          "generatedtokens"),
    "status": ("status",),
    # How long the response took, in ms (optional): its output tokens are spread over it for burstiness.
    "latency_ms": ("latency_ms", "duration_ms", "response_time_ms", "request_duration_ms"),
}
COALESCED = {"model", "tenant"}
"""Fields filled from the first non-empty of several columns (LiteLLM: model_group, else model)."""

FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json-array",
           ".parquet": "parquet", ".pq": "parquet"}
COMPRESSED = (".gz", ".zst")



@dataclass(frozen=True)
class Route:
    """`--map model=M:tenant=T:workload=W`: events with this model (and tenant) belong to W."""

    workload: str
    model: str | None = None
    tenant: str | None = None

    def __str__(self) -> str:
        parts = [f"model={self.model}"] if self.model is not None else []
        parts += [f"tenant={self.tenant}"] if self.tenant is not None else []
        return ":".join(parts + [f"workload={self.workload}"])


@dataclass(frozen=True)
class Column:
    name: str
    json_path: str | None = None
    """For a nested JSON key like usage.prompt_tokens: the path inside column `name`."""
    type: str = "VARCHAR"

    def __str__(self) -> str:
        return f"{self.name}.{self.json_path}" if self.json_path else self.name


@dataclass(frozen=True)
class Source:
    path: Path
    shown: str
    fmt: str
    columns: dict[str, tuple[Column, ...]]
    bytes: int
    delim: str | None = None
    header: tuple[str, ...] | None = None
    """CSV only, when the sniffer could not read the file: its header, read as written."""
    default_workload: str | None = None
    """The file has no model or workload column: every event goes to this workload."""
    shadowed: tuple[tuple[str, str, str], ...] = ()
    """(field, column --map named, the file's usual column for the field left unread)."""


# --- parsing the --map options -------------------------------------------------------------------


def parse_maps(maps: list[str]) -> tuple[dict[str, str], list[Route]]:
    """`column=field` renames and `model=M[:tenant=T]:workload=W` routes; PlanError on anything else."""
    columns: dict[str, str] = {}
    routes: list[Route] = []
    problems = []
    for raw in maps:
        text = raw.strip()
        if ":" in text:
            parts = dict(p.split("=", 1) for p in text.split(":") if "=" in p)
            bad = [p for p in text.split(":") if "=" not in p]
            unknown = sorted(set(parts) - {"model", "tenant", "workload"})
            if bad or unknown or "workload" not in parts or not ({"model", "tenant"} & set(parts)):
                problems.append(Problem(f"--map {raw}: not a route",
                                        "write --map model=NAME:workload=NAME or --map tenant=NAME:workload=NAME"))
                continue
            routes.append(Route(parts["workload"], parts.get("model"), parts.get("tenant")))
            continue
        if "=" not in text:
            problems.append(Problem(f"--map {raw}: expected COLUMN=FIELD",
                                    f"e.g. --map ts=timestamp; fields: {', '.join(FIELDS)}"))
            continue
        col, fld = (s.strip() for s in text.split("=", 1))
        fld = FIELD_ALIASES.get(fld, fld)
        if fld not in FIELDS or not col:
            guess = did_you_mean(fld, list(FIELDS))
            problems.append(Problem(f"--map {raw}: unknown field '{fld}'",
                                    f"did you mean '{guess}'?" if guess else f"fields: {', '.join(FIELDS)}"))
            continue
        columns[fld] = col
    if problems:
        raise PlanError(problems)
    return columns, routes


# --- finding the columns -------------------------------------------------------------------------


def detect_format(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in COMPRESSED:
        suffixes.pop()
    return FORMATS.get(suffixes[-1]) if suffixes else None


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _reader(fmt: str, path: Path, json_columns: dict[str, str] | None = None, delim: str | None = None,
            header: tuple[str, ...] | None = None) -> str:
    p = _lit(str(path))
    if fmt == "csv":
        # Every column as text: bad values are then found and reported by row, not guessed at.
        if header:
            cols = ", ".join(f"{_lit(h)}: 'VARCHAR'" for h in header)
            return (f"read_csv({p}, header = true, auto_detect = false, delim = {_lit(delim or ',')}, quote = '\"', "
                    f"escape = '\"', columns = {{{cols}}}, ignore_errors = false)")
        return f"read_csv({p}, header = true, all_varchar = true, ignore_errors = false)"
    if fmt in ("json", "json-array"):
        # .jsonl: one event per line; .json: an array of events (or lines; DuckDB tells them apart).
        form = "'newline_delimited'" if fmt == "json" else "'auto'"
        if json_columns is None:
            return f"read_json({p}, format = {form})"
        cols = ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in json_columns.items())
        return f"read_json({p}, format = {form}, columns = {{{cols}}})"
    return f"read_parquet({p})"


def inspect(con, path: Path, shown: str, rename: dict[str, str], default_workload: str | None = None,
            workloads: tuple[str, ...] = ()) -> Source:
    """Which columns of this file hold which field; PlanError when a required one is missing.

    A file with no model or workload column goes to `default_workload` (the plan's only workload, or
    --usage-workload); without one, the error lists `workloads`, the ones it could go to.
    """
    fmt = detect_format(path)
    if not path.exists():
        raise PlanError(Problem("usage file not found", "check the path", file=shown))
    if path.is_dir():
        raise PlanError(Problem("is a directory", "give a .csv, .jsonl or .parquet file", file=shown))
    if fmt is None:
        raise PlanError(Problem(f"unknown usage file type '{path.suffix}'",
                                "name it .csv, .jsonl or .parquet (optionally .gz)", file=shown))
    size = path.stat().st_size
    if size == 0:
        raise PlanError(Problem("the file is empty", "export the gateway's usage log with a header row and events",
                                file=shown))
    header: tuple[str, ...] | None = None
    delim = None
    try:
        rel = con.execute(f"DESCRIBE SELECT * FROM {_reader(fmt, path)}").fetchall()
        sniffed = True
    except Exception as exc:  # duckdb raises several error classes; all mean "cannot read this file"
        rel, sniffed, first_error = [], False, exc
    written, written_delim = _csv_header(path) if fmt == "csv" else (None, None)
    if fmt == "csv" and (not sniffed or len(rel) == 1 or written is not None and len(written) != len(rel)):
        # The sniffer gives up on files whose rows disagree, or takes a longer row for the header: take the
        # header as written, so the scan names the row that does not fit.
        header, delim = written, written_delim
        if header is not None and len(header) > 1:
            rel = [(h, "VARCHAR") for h in header]
            sniffed = True
    if not sniffed:
        _raise_duckdb(first_error, {str(path): shown}, default_file=shown)
    types = {r[0]: str(r[1]) for r in rel}
    lower = {name.lower(): name for name in types}
    columns: dict[str, tuple[Column, ...]] = {}
    for fld, aliases in AUTO_COLUMNS.items():
        wanted = [rename[fld]] if fld in rename else list(aliases)
        found: list[Column] = []
        for alias in wanted:
            col = _resolve(alias, lower, types, fmt)
            if col is not None:
                found.append(col)
                if fld not in COALESCED:
                    break
        if not found and fld in rename and fld in AUTO_COLUMNS:
            # The renamed column is not in this file: fall back to the usual names.
            for alias in aliases:
                col = _resolve(alias, lower, types, fmt)
                if col is not None:
                    found.append(col)
                    if fld not in COALESCED:
                        break
        if found:
            columns[fld] = tuple(found)
    used = {c.name for cols in columns.values() for c in cols}
    shadowed = []  # a usual column --map turned away from: said, so a renamed column never hides silently
    for fld, aliases in AUTO_COLUMNS.items():
        if fld in rename:
            usual = [c for a in aliases if (c := _resolve(a, lower, types, fmt)) is not None and c.name not in used]
            shadowed += [(fld, rename[fld], usual[0].name)] if usual else []
    problems = _duplicate_columns(written, columns, shown)
    if fmt == "parquet":
        problems += _typed_columns(columns, shown)
    have = ", ".join(types) or "none"
    for fld in ("timestamp", "prompt_tokens", "completion_tokens"):
        if fld not in columns:
            looked = rename.get(fld) or ", ".join(AUTO_COLUMNS[fld])
            problems.append(Problem(f"no {fld} column (looked for {looked}; the file has {have})",
                                    f"rename the column or pass --map COLUMN={fld}", file=shown))
    default = None
    if "model" not in columns and "workload" not in columns:
        if default_workload is not None:
            default = default_workload
        elif workloads:
            problems.append(Problem(
                f"no model or workload column (the file has {have}), and the plan has {len(workloads)} workloads "
                f"it could belong to: {', '.join(workloads)}",
                "pass --usage-workload NAME to send all of this file's events to one of them, "
                "or --map COLUMN=model (or COLUMN=workload)", file=shown))
        else:
            problems.append(Problem(f"no model or workload column (the file has {have})",
                                    "pass --map COLUMN=model (or COLUMN=workload)", file=shown))
    if problems:
        raise PlanError(problems)
    return Source(path, shown, fmt, columns, size, delim, header, default, tuple(shadowed))


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
_TEXT = ("VARCHAR",)


def _kind(duck_type: str) -> str:
    t = duck_type.upper()
    if t.startswith(("TIMESTAMP", "DATETIME")):
        return "timestamp"
    if t == "DATE":
        return "date"
    if t.startswith(_NUMERIC):
        return "number"
    if t.startswith(_TEXT):
        return "text"
    return "other"


_MEANT = {
    # field: (kinds a typed column of it may be, what the field is, how to write it)
    "timestamp": (("timestamp", "number", "text"), "a time of day",
                  "store the request's time as a TIMESTAMP (or epoch seconds, or ISO 8601 text with the time)"),
    "prompt_tokens": (("number",), "a count of tokens", "store token counts as integers"),
    "completion_tokens": (("number",), "a count of tokens", "store token counts as integers"),
    "model": (("text",), "a model name", "store the model as a string"),
    "workload": (("text",), "a workload name", "store the workload as a string"),
    "tenant": (("text", "number"), "a tenant", "store the tenant as a string or an integer id"),
    "latency_ms": (("number",), "a duration in ms", "store the latency as a number of milliseconds"),
}


def _typed_columns(columns: dict[str, tuple[Column, ...]], shown: str) -> list[Problem]:
    """A typed file's (Parquet's) column types against what each field means: a DATE timestamp puts every
    event at midnight, a text or time token count is no count."""
    problems = []
    for fld, cols in columns.items():
        if fld not in _MEANT:
            continue
        kinds, what, fix = _MEANT[fld]
        for col in cols:
            kind = _kind(col.type)
            if kind in kinds:
                continue
            named = f"column {col.name}" + (f" (the {fld})" if col.name != fld else "")
            if kind == "date":
                msg = f"{named} is stored as DATE: a date without a time would put every event at midnight"
            else:
                msg = f"{named} is stored as {col.type}, which is not {what}"
            problems.append(Problem(msg, f"{fix}, or point --map at another column (--map COLUMN={fld})", file=shown))
    return problems


def _duplicate_columns(header: tuple[str, ...] | None, columns: dict[str, tuple[Column, ...]],
                       shown: str) -> list[Problem]:
    """A CSV header naming a column it reads twice: which of the two holds the field is anyone's guess
    (DuckDB would read the first, and rename the other), so neither is read."""
    if not header:
        return []
    first: dict[str, int] = {}
    problems = []
    read = {c.name.lower(): fld for fld, cols in columns.items() for c in cols}
    for i, name in enumerate(header, 1):
        key = name.lower()
        if key not in first:
            first[key] = i
        elif key in read:
            problems.append(Problem(
                f"the header has column {name} twice (columns {first[key]} and {i}): which one holds "
                f"{read[key]}?", "rename or remove one of them", file=shown, line=1))
    return problems


def _csv_header(path: Path) -> tuple[tuple[str, ...] | None, str | None]:
    import csv
    import gzip

    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:  # type: ignore[operator]
            line = f.readline()
    except (OSError, UnicodeDecodeError):
        return None, None
    delim = max((",", "\t", ";", "|"), key=line.count)
    if not line.count(delim):
        return None, None
    row = next(csv.reader([line], delimiter=delim))
    return tuple(h.strip() for h in row), delim


def _resolve(alias: str, lower: dict[str, str], types: dict[str, str], fmt: str) -> Column | None:
    if alias.lower() in lower:
        name = lower[alias.lower()]
        return Column(name, None, types[name])
    if "." in alias and fmt.startswith("json"):
        head, path = alias.split(".", 1)
        if head.lower() in lower:
            name = lower[head.lower()]
            if types[name].upper().startswith(("STRUCT", "JSON", "MAP")) and path.lower() in types[name].lower():
                return Column(name, path, "JSON")
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _raise_duckdb(exc: BaseException, shown: dict[str, str] | None = None, default_file: str | None = None) -> None:
    """DuckDB's reader errors as `FILE:LINE: what — fix` (it names the file and line in its text)."""
    if isinstance(exc, (PlanError, KeyboardInterrupt)):
        raise exc
    text = str(exc)
    msg = _first_line(exc)
    file, line = default_file, None
    m = re.search(r'file = (.+)$', text, re.M) or re.search(r'file "([^"]+)"', text)
    if m:
        file = m.group(1).strip()
        for path, name in (shown or {}).items():
            if file in (path, Path(path).name) or Path(file).resolve() == Path(path).resolve():
                file = name
    elif file is None:  # a compressed stream's error names its file at the end
        file = next((name for path, name in (shown or {}).items() if str(path) in text), None)
    m = re.search(r"Line: (\d+)", text)
    if m:
        line = int(m.group(1))
    elif m := re.search(r"in line (\d+)", text):  # DuckDB's JSON reader: one past the malformed line
        line = _malformed_json_line(file, shown, int(m.group(1)))
    m = re.search(r"Expected Number of Columns: (\d+) Found: (\d+)", text)
    if m:
        raise PlanError(Problem(f"the row does not have the header's {m.group(1)} columns",
                                "fix the row; quote fields that contain the delimiter", file=file, line=line)) from None
    if "not utf-8 encoded" in text.lower() or "invalid unicode" in text.lower():
        raise PlanError(Problem("the file is not UTF-8 text", "save or export it as UTF-8", file=file,
                                line=line)) from None
    msg = re.sub(r'^[A-Za-z ]*Error: ', "", msg)
    msg = re.sub(r" in line \d+", "", msg)  # the line, counted right, is in front
    msg = re.sub(r'in file "[^"]*",?\s*', "", msg).strip()
    raise PlanError(Problem(f"cannot read the usage log: {msg}",
                            "check the file's format and encoding (UTF-8)" + ("; fix that line" if line else ""),
                            file=file, line=line)) from None


def _malformed_json_line(file: str | None, shown: dict[str, str] | None, said: int) -> int:
    """The first line up to `said` (DuckDB's count) that is not JSON, read from the file itself; `said` when
    the file cannot be read as plain text (compressed) or every line is JSON."""
    path = next((p for p, name in (shown or {}).items() if name == file), file)
    try:
        with open(path, encoding="utf-8-sig", errors="strict") as fh:
            for n, text in enumerate(fh, 1):
                if n > said:
                    break
                if text.strip():
                    try:
                        json.loads(text)
                    except ValueError:
                        return n
    except (OSError, UnicodeDecodeError, TypeError):
        pass
    return said


def total_bytes(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total
