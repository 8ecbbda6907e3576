"""YAML in, with line marks: safe loading, YAML 1.2, and file:line for every error."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from optimizer.errors import Collector, PlanError, Problem

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 200_000
"""Bound on the expanded size of a document, so an alias bomb is refused, not expanded."""

_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}


@dataclass(frozen=True)
class Document:
    """A loaded YAML file: plain data for validation, and the round-trip tree for lines."""

    file: str
    """The path as the user wrote it (used in messages)."""
    path: Path
    tree: Any
    data: Any

    def line(self, loc: tuple[Any, ...] | list[Any]) -> int | None:
        """1-based line of the deepest node on `loc` that exists in the file."""
        return line_of(self.tree, loc)

    def problem(self, loc: tuple[Any, ...] | list[Any], message: str, fix: str | None = None) -> Problem:
        return Problem(message, fix, file=self.file, line=self.line(loc), path=format_loc(loc))


def format_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """('workloads', 1, 'model') -> 'workloads[1].model'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def line_of(tree: Any, loc: tuple[Any, ...] | list[Any]) -> int | None:
    node, line = tree, None
    if isinstance(node, (CommentedMap, CommentedSeq)) and node.lc.line is not None:
        line = node.lc.line + 1
    for part in loc:
        try:
            if isinstance(node, CommentedMap) and part in node:
                line = node.lc.key(part)[0] + 1
                node = node[part]
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
                line = node.lc.item(part)[0] + 1
                node = node[part]
            else:
                break
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return line


class _PlainConstructor(RoundTripConstructor):
    """Round-trip construction that reports bad scalars with their line instead of raising ValueError.

    ruamel builds dates and ints itself: `2026-13-01` or an int of 5,000 digits raises a bare
    ValueError, and the YAML 1.1 collection tags (!!set, !!omap, !!pairs, !!binary) build values
    that carry no tag for the plain-data check below.
    """

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:
            value = str(getattr(node, "value", ""))
            shown = value if len(value) <= 40 else value[:37] + "..."
            why = str(exc)
            if "integer string conversion" in why:  # Python's guard against quadratic int parsing
                why = f"a number of {len(value):,} digits"
            fix = "write a plain number, string or date (YYYY-MM-DD)"
            if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", value.strip()):  # 2026-02-30: a date's form, not on the calendar
                why, fix = "not a day on the calendar", "write a day the month has (YYYY-MM-DD)"
            raise ConstructorError(None, None, f"cannot read '{shown}': {why} — {fix}", node.start_mark) from None

    def _refuse_tag(self, node: Any) -> Any:
        raise ConstructorError(None, None, f"YAML tag '{short_tag(node.tag)}' is not allowed — remove the tag; "
                               "plans hold plain data", node.start_mark)


def short_tag(tag: Any) -> str:
    """'tag:yaml.org,2002:python/name:os.system' -> '!!python/name:os.system', as it was written."""
    text = str(getattr(tag, "value", tag))
    return "!!" + text.removeprefix("tag:yaml.org,2002:") if text.startswith("tag:yaml.org,2002:") else text


for _tag in ("set", "omap", "pairs", "binary"):
    _PlainConstructor.add_constructor(f"tag:yaml.org,2002:{_tag}", _PlainConstructor._refuse_tag)


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.Constructor = _PlainConstructor
    y.allow_duplicate_keys = False
    return y


DATA_SUFFIXES = {".csv": "a usage log", ".jsonl": "a usage log", ".parquet": "a usage log",
                 ".csv.gz": "a usage log", ".jsonl.gz": "a usage log", ".xlsx": "a workbook", ".html": "a report"}
"""File types that are never YAML: what each is."""
DATA_USES = {"a usage log": "a usage log goes to `planopt calibrate PLAN --usage FILE` or `planopt forecast`",
             "a workbook": "planopt writes workbooks, it does not read them",
             "a report": "planopt writes reports, it does not read them"}


def load_yaml(path: Path | str, *, shown_as: str | None = None, what: str = "file") -> Document:
    """Read one YAML file; raise PlanError with file:line for anything wrong with it."""
    path = Path(path)
    shown = shown_as or str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise PlanError(Problem(f"{what} not found", "check the path", file=shown)) from None
    except OSError as exc:
        raise PlanError(Problem(f"cannot read {what}: {exc.strerror}", None, file=shown)) from None
    if path.is_dir():
        raise PlanError(Problem(f"{what} is a directory", "give a .yaml file", file=shown))
    kind = DATA_SUFFIXES.get("".join(path.suffixes[-2:]).lower()) or DATA_SUFFIXES.get(path.suffix.lower())
    if kind is not None:  # a log or table passed where YAML goes: say so, not what its size or first byte is
        raise PlanError(Problem(f"this is {kind}, not a {what.removesuffix(' file')} (YAML)",
                                f"give the YAML file; {DATA_USES[kind]}", file=shown))
    if size > MAX_FILE_BYTES:
        raise PlanError(Problem(
            f"{what} is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}",
            "split catalogs into separate files listed under `catalogs:`", file=shown))
    raw = path.read_bytes()
    return parse_yaml(raw, shown, path)


def parse_yaml(raw: bytes, shown: str, path: Path | None = None) -> Document:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    _check_encoding(raw, shown)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PlanError(Problem(
            f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid UTF-8",
            "save the file as UTF-8", file=shown, line=line)) from None
    try:
        tree = _yaml().load(text)
    except MarkedYAMLError as exc:
        raise PlanError(_syntax_problem(exc, shown)) from None
    except YAMLError as exc:
        raise PlanError(_reader_problem(exc, text, shown)) from None
    except RecursionError:
        raise PlanError(Problem("YAML nesting is too deep", "flatten the document", file=shown)) from None
    except ValueError as exc:  # a scalar ruamel could not build, outside construct_object
        raise PlanError(Problem(f"cannot read a value: {exc}", "fix the value", file=shown)) from None
    errors = Collector()
    budget = [MAX_NODES]
    data = _to_plain(tree, (), tree, shown, errors, budget)
    errors.raise_if_any()
    return Document(shown, path or Path(shown), tree, data)


def _check_encoding(raw: bytes, shown: str) -> None:
    """UTF-16 and UTF-32 files decode as garbage or fail deep inside the parser: say so up front."""
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if raw.startswith(bom):
            raise PlanError(Problem(f"the file is {name} (it starts with a {name} byte-order mark); plans are UTF-8",
                                    "save the file as UTF-8", file=shown, line=1))
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise PlanError(Problem(f"the file has a NUL byte at offset {nul}: it is not UTF-8 text (UTF-16? binary?)",
                                "save the file as UTF-8", file=shown, line=raw[:nul].count(b"\n") + 1))


def _syntax_problem(exc: MarkedYAMLError, shown: str) -> Problem:
    """A YAML syntax error in words a plan author acts on, at the line where the mistake is."""
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    at = exc.problem_mark or exc.context_mark
    line = at.line + 1 if at is not None else None
    opened = exc.context_mark.line + 1 if exc.context_mark is not None else None
    if " — " in problem:  # planopt's own constructor errors carry their fix
        what, fix = problem.split(" — ", 1)
        return Problem(what, fix, file=shown, line=line)
    if "duplicate key" in problem or "duplicate key" in str(exc):
        key = str(exc).split('duplicate key "', 1)[-1].split('"', 1)[0]
        return Problem(f"duplicate key '{key}'", "remove or rename one of the two entries", file=shown, line=line)
    if "\t" in problem or "'\\t'" in problem:
        return Problem("a tab character where YAML expects spaces", "indent with spaces, not tabs",
                       file=shown, line=line)
    if context == "while scanning a quoted scalar" and opened is not None:
        return Problem("a quoted string starts here and is never closed",
                       "close the quote on the same line (or remove it)", file=shown, line=opened)
    if context in ("while parsing a flow sequence", "while parsing a flow mapping") and opened is not None:
        bracket, close = ("[", "]") if "sequence" in context else ("{", "}")
        return Problem(f"the '{bracket}' opened here is not closed ({problem} on line {line})",
                       f"close it with '{close}' on the same line, or write the entries as a block",
                       file=shown, line=opened)
    if problem == "mapping values are not allowed here":
        return Problem("unexpected ':' here", "check the indentation (keys of one mapping line up) and the "
                       "space after '-'; quote a value that contains ': '", file=shown, line=line)
    if problem.startswith("expected <block end>") or problem.startswith("expected <block"):
        return Problem("this line's indentation does not match the lines above",
                       "indent it like the other keys at its level (spaces only)", file=shown, line=line)
    if problem.startswith("found undefined alias"):
        name = problem.split("'")[1] if "'" in problem else "?"
        return Problem(f"alias *{name} names no anchor", f"define &{name} on an earlier value, or write the value out",
                       file=shown, line=line)
    return Problem(problem or context or "invalid YAML", "fix the YAML syntax", file=shown, line=line)


def _reader_problem(exc: YAMLError, text: str, shown: str) -> Problem:
    """Errors without a mark (ruamel's reader): control characters, mostly."""
    msg = str(exc).splitlines()[0].strip() if str(exc).strip() else "invalid YAML"
    line = None
    m = re.search(r"position (\d+)", str(exc))
    if m:
        line = text[: int(m.group(1))].count("\n") + 1
    m = re.search(r"unacceptable character #x([0-9a-fA-F]+)", msg)
    if m:
        return Problem(f"character U+{int(m.group(1), 16):04X} is not allowed in YAML",
                       "remove the control character (or save the file as UTF-8 text)", file=shown, line=line)
    return Problem(f"invalid YAML: {msg}", "fix the YAML syntax", file=shown, line=line)


def _tag_of(node: Any) -> str | None:
    tag = getattr(node, "tag", None)
    value = getattr(tag, "value", None)
    if value and value not in _PLAIN_TAGS:
        return value
    return None


def _to_plain(node: Any, loc: tuple[Any, ...], tree: Any, file: str, errors: Collector,
              budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        if budget[0] == -1:
            errors.add(f"the document expands to more than {MAX_NODES:,} values (aliases?)",
                       "write the values out instead of nesting aliases",
                       file=file, line=line_of(tree, loc))
        return None
    tag = _tag_of(node)
    if tag is not None:
        errors.add(f"YAML tag '{short_tag(tag)}' is not allowed", "remove the tag; plans hold plain data",
                   file=file, line=line_of(tree, loc), path=format_loc(loc) or None)
        return None
    if isinstance(node, TaggedScalar):
        return node.value
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if isinstance(k, dt.date):  # an unquoted 2026-10-01 as a key: a date, where ids and months are text
                errors.add(f"key {k.isoformat()} is read as a date", "quote it ('2027-01'); months are "
                           "written YYYY-MM", file=file, line=line_of(tree, loc), path=format_loc(loc) or None)
                continue
            if not isinstance(k, (str, int, float, bool)) or isinstance(k, (list, dict)):
                errors.add("mapping keys must be plain scalars", "write the key as plain text or a number",
                           file=file, line=line_of(tree, loc), path=format_loc(loc) or None)
                continue
            out[str(k) if not isinstance(k, str) else k] = _to_plain(v, loc + (k,), tree, file, errors, budget)
        return out
    if isinstance(node, list):
        return [_to_plain(v, loc + (i,), tree, file, errors, budget) for i, v in enumerate(node)]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        if not math.isfinite(node):
            errors.add(f"{node!s} is not a finite number", "write a finite number",
                       file=file, line=line_of(tree, loc), path=format_loc(loc) or None)
            return None
        return float(node)
    if isinstance(node, str):
        return str(node)
    # dates and other YAML 1.2 scalars ruamel constructs
    return node


def validate(doc: Document, cls: type, data: Any = None, base: tuple[Any, ...] = ()) -> tuple[Any, list[Problem]]:
    """Validate `data` (default: the whole document) as pydantic `cls`.

    Returns (instance or None, problems), each problem with its file:line and a fix.
    """
    from pydantic import ValidationError

    payload = doc.data if data is None else data
    try:
        return cls.model_validate(payload), []
    except ValidationError as exc:
        errors = _prefer_specific(exc.errors(include_url=False))
        errors = _drop_missing_keys_that_were_misspelt(cls, errors)
        problems = [_pydantic_problem(doc, cls, err, base) for err in errors]
        return None, problems


_TYPE_WORDS = {
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false",
    "string_type": "text", "list_type": "a list", "tuple_type": "a list", "set_type": "a list",
    "dict_type": "a mapping (key: value)", "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "date_type": "a date (YYYY-MM-DD)", "date_parsing": "a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "a date (YYYY-MM-DD)",
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _guess_key(cls: type, loc: tuple[Any, ...]) -> tuple[str | None, list[str]]:
    """For an unknown key at `loc`: the closest allowed key, and the allowed keys."""
    from optimizer.errors import did_you_mean

    allowed = _fields_at(cls, loc[:-1])
    key = str(loc[-1]) if loc else "?"
    return (did_you_mean(key, allowed) if allowed else None), allowed


def _drop_missing_keys_that_were_misspelt(cls: type, errors: list[dict]) -> list[dict]:
    """`horizon: 30` is one mistake, not two: the 'unknown key' already says 'did you mean horizon_days'."""
    guessed = set()
    for err in errors:
        if err["type"] == "extra_forbidden":
            loc = tuple(p for p in err["loc"] if not _is_branch_label(p))
            guess, _ = _guess_key(cls, loc)
            if guess:
                guessed.add(loc[:-1] + (guess,))
    return [e for e in errors if not (e["type"] == "missing" and
                                      tuple(p for p in e["loc"] if not _is_branch_label(p)) in guessed)]


def _pydantic_problem(doc: Document, cls: type, err: dict, base: tuple[Any, ...]) -> Problem:
    # Pydantic adds union-branch names ('int', 'DayType', 'list[float]') to loc: drop them.
    loc = tuple(p for p in err["loc"] if not _is_branch_label(p))
    bad_key = bool(loc) and loc[-1] == "[key]"  # a mapping key (not its value) is wrong
    loc = tuple(p for p in loc if p != "[key]")
    full = base + loc
    kind = err["type"]
    msg = err["msg"]
    fix = None
    value = err.get("input")
    if kind == "literal_error":
        from optimizer.errors import did_you_mean

        allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
        guess = did_you_mean(str(value), allowed) if allowed and isinstance(value, str) else None
        fix = f"did you mean '{guess}'?" if guess else "use one of the listed values"
        ties = [a for a in allowed if isinstance(value, str) and value and a.lower().startswith(value.lower())]
        if len(ties) > 1:  # 'reserved': reserved-1y as much as reserved-3y
            fix = "did you mean " + " or ".join(f"'{t}'" for t in ties) + "?"
        if bad_key:
            return doc.problem(full, f"unknown key {_shown(value)}: {msg.lower().replace('input should be', 'keys are')}",
                               fix)
        return doc.problem(full, f"{_shown(value)}: {msg.lower()}", fix)
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        guess, allowed = _guess_key(cls, loc)
        msg = f"unknown key '{key}'"
        fix = f"did you mean '{guess}'?" if guess else (
            f"allowed keys: {', '.join(sorted(allowed))}" if allowed else "remove it")
        if str(key).startswith("x-"):
            fix = "x- keys are ignored at the top level and in workloads only; move it there"
        return doc.problem(full, msg, fix)
    if kind == "missing" and loc and isinstance(loc[-1], int):  # a list too short for its fixed places
        fix = ("write [start, end], e.g. [22, 6]" if len(loc) > 1 and loc[-2] == "window_hours"
               else "give every value of the list")
        return Problem("has too few values", fix, file=doc.file, line=doc.line(full[:-1]),
                       path=format_loc(full[:-1]))
    if kind.startswith("date_from_datetime"):
        shown = value.isoformat() if isinstance(value, dt.date) else _shown(value)
        return doc.problem(full, f"{shown} is a time, not a date", "write the day alone: YYYY-MM-DD")
    if kind == "missing":
        key = loc[-1] if loc else "?"
        return Problem(f"required key '{key}' is missing", f"add `{key}: …`",
                       file=doc.file, line=doc.line(full[:-1]), path=format_loc(full))
    if kind.startswith("value_error") or kind == "assertion_error":
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if " — " in msg:
            msg, fix = msg.split(" — ", 1)
        elif "; " in msg:
            msg, fix = msg.split("; ", 1)
    elif kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        msg = f"{_shown(value)} is out of range: {msg.lower()}"
        limit = next(iter((err.get("ctx") or {}).values()), None)
        if kind.startswith("less") and isinstance(limit, (int, float)) and limit >= 1000:
            fix = "check the value and its units; the limit is far beyond any real fleet"
        elif (kind.startswith("less") and limit == 1 and isinstance(value, (int, float))
              and not isinstance(value, bool) and 5 <= value <= 100):  # 60 meant 0.6; 1.5 meant nothing of 1.5%
            fix = f"a fraction, not a percentage: {value:g} → {value / 100:g}"
        elif (kind.startswith("greater") and isinstance(limit, (int, float)) and limit > 0
              and isinstance(value, (int, float)) and not isinstance(value, bool)):
            fix = f"check the value and its units; the least planopt plans is {limit:g}"
        else:
            fix = "use a value in range"
    elif kind in _TYPE_WORDS or kind == "union_type":
        words = err["words"] if kind == "union_type" else _TYPE_WORDS[kind]
        if value is None:
            msg, fix = f"no value given; expected {words}", f"write {words} after the colon"
        else:
            integer = " (an integer)" if kind in ("int_type", "int_parsing", "int_from_float") else ""
            msg, fix = f"{_shown(value)} is not {words}{integer}", f"write {words}"
    elif kind in {"string_too_short", "string_too_long"}:
        ctx = err.get("ctx") or {}
        if value == "":
            msg, fix = "is empty", "give it a name" if loc and loc[-1] in ("name", "plan") else "write a value"
        elif kind == "string_too_long":
            msg, fix = f"{_shown(value)} is longer than {ctx.get('max_length')} characters", "shorten it"
        else:
            msg, fix = f"{_shown(value)} is shorter than {ctx.get('min_length')} characters", "lengthen it"
    elif kind in {"too_short", "too_long"}:
        ctx = err.get("ctx") or {}
        actual = ctx.get("actual_length")
        if loc and loc[-1] == "window_hours":
            msg, fix = f"has {actual} values; a window is two hours", "write [start, end], e.g. [22, 6]"
        elif kind == "too_short" and actual == 0:
            msg, fix = "is empty", "list at least one entry"
        else:
            bound = ctx.get("max_length") if kind == "too_long" else ctx.get("min_length")
            msg = f"has {actual} entries; {'at most' if kind == 'too_long' else 'at least'} {bound} allowed"
            fix = "check the list"
    return doc.problem(full, msg, fix)


def _is_branch_label(part: Any) -> bool:
    if not isinstance(part, str):
        return False
    return (part[:1].isupper() or part.startswith(("list[", "dict[", "tuple[", "function-", "constrained-"))
            or part in {"int", "float", "str", "bool", "none", "date"})


def _prefer_specific(errors: list[dict]) -> list[dict]:
    """For a value that matched no branch of a union, keep the branch that says most.

    A negative price fails both 'a number ≥ 0' and 'a {price: …} mapping'; the range error is
    the useful one. Type mismatches are dropped where another error names the same key.
    """
    by_loc: dict[tuple, list[dict]] = {}
    for err in errors:
        loc = tuple(p for p in err["loc"] if not _is_branch_label(p))
        by_loc.setdefault(loc, []).append(err)
    out = []
    for errs in by_loc.values():
        specific = [e for e in errs if not e["type"].endswith("_type") and e["type"] != "model_attributes_type"]
        if specific and len(errs) > 1:
            out.extend(specific)
        elif len(errs) > 1 and all(e["type"] in _TYPE_WORDS for e in errs):
            # No branch of a union took the value: one message naming every shape it could have.
            words = list(dict.fromkeys(_TYPE_WORDS[e["type"]] for e in errs))
            out.append(dict(errs[0], type="union_type", words=" or ".join(words)))
        else:
            out.extend(errs)
    return out


def _fields_at(cls: type, loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at `loc` inside pydantic model `cls` (for 'did you mean')."""
    import typing

    from pydantic import BaseModel

    def models_in(tp: Any) -> list[type]:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return [tp]
        out: list[type] = []
        for arg in typing.get_args(tp):
            out.extend(models_in(arg))
        return out

    current: list[Any] = [cls]
    for part in loc:
        nxt: list[Any] = []
        for tp in current:
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                if isinstance(part, str) and part in tp.model_fields:
                    nxt.append(tp.model_fields[part].annotation)
            else:
                origin = typing.get_origin(tp)
                args = typing.get_args(tp)
                if origin in (list, tuple) and isinstance(part, int) and args:
                    nxt.append(args[0])
                elif origin is dict and args:
                    nxt.append(args[1])
                elif args:
                    # Optional / Union: look inside each branch for this same part
                    for a in args:
                        nxt.extend(_resolve_one(a, part))
        current = nxt
    names: list[str] = []
    for tp in current:
        for m in models_in(tp):
            names.extend(m.model_fields)
    return sorted(set(names))


def _resolve_one(tp: Any, part: Any) -> list[Any]:
    import typing

    from pydantic import BaseModel

    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp.model_fields[part].annotation] if isinstance(part, str) and part in tp.model_fields else []
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (list, tuple) and isinstance(part, int) and args:
        return [args[0]]
    if origin is dict and args:
        return [args[1]]
    return []
