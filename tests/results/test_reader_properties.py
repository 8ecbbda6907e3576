"""Property tests of the two readers of what planopt wrote: the result JSON (`read_result`) and sweep.jsonl
(`read_sweep`). Whatever the bytes — random JSON, a real result or sweep line edited at random, cut short or
nested deep — each reader gives back what it read or a PlanError (exit 2): never another exception.

200 examples per test by default; `HYPOTHESIS_PROFILE=thorough` runs 2,000. The profiles are applied to these
tests alone (registering hypothesis's own "default" profile would change every other test's count too).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.results.jsonio import dumps, read_result
from optimizer.results.sweep import read_sweep

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "plans" / "seed-fleet.yaml"
OLD = ROOT / "tests" / "data" / "results" / "35dde86-q1-with-commitments.json"

_QUIET = dict(deadline=None, derandomize=False, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
settings.register_profile("readers", max_examples=200, **_QUIET)
settings.register_profile("thorough", max_examples=2000, **_QUIET)
PROFILE = settings.get_profile("thorough" if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else "readers")

runner = CliRunner()


@pytest.fixture(scope="module")
def seed_result(tmp_path_factory) -> str:
    """plans/seed-fleet.yaml solved by this planopt: today's format, as text."""
    out = tmp_path_factory.mktemp("seed")
    res = runner.invoke(app, ["solve", str(SEED), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return (out / "seed-fleet.json").read_text(encoding="utf-8")


def _read(tmp: Path, text: str | bytes) -> None:
    path = tmp / "r.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        result = read_result(path)
    except PlanError as exc:
        assert exc.problems and all(str(p) for p in exc.problems)
        return
    dumps(result)  # what reads writes back


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False),
                    st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=20)


@settings(PROFILE)
@given(value=json_values, keys=st.booleans())
def test_random_json_is_read_or_refused(tmp_path_factory, value, keys):
    """Any JSON value, alone or under the two keys that make a file look like a result."""
    doc = {"plan": "x", "workloads": [value], "cost": value} if keys else value
    _read(tmp_path_factory.mktemp("r"), json.dumps(doc))


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out += _paths(v, path + (i,))
    return out


def _mutated(d: Any, data: st.DataObject) -> Any:
    paths = [p for p in _paths(d) if p]
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        path = data.draw(st.sampled_from(paths), label="path")
        node = d
        try:
            for part in path[:-1]:
                node = node[part]
            key = path[-1]
            how = data.draw(st.sampled_from(["replace", "delete", "scale", "negate"]), label="how")
            old = node[key]
            if how == "delete":
                del node[key]
            elif how == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
                node[key] = old * data.draw(st.sampled_from([0, 2, 1.5, 1e12, -1]), label="factor")
            elif how == "negate" and isinstance(old, (int, float)) and not isinstance(old, bool):
                node[key] = -old
            else:
                node[key] = data.draw(json_values, label="value")
        except (KeyError, IndexError, TypeError):
            continue
    return d


@settings(PROFILE)
@given(data=st.data())
def test_a_real_result_edited_at_random_is_read_or_refused(tmp_path_factory, seed_result, data):
    """Values replaced, deleted, scaled or negated in a result planopt wrote (today's and an earlier format)."""
    text = seed_result if data.draw(st.booleans(), label="today") else OLD.read_text(encoding="utf-8")
    _read(tmp_path_factory.mktemp("r"), json.dumps(_mutated(json.loads(text), data)))


@settings(PROFILE)
@given(data=st.data())
def test_a_real_result_damaged_as_text_is_read_or_refused(tmp_path_factory, seed_result, data):
    """Cut short, a byte changed, a key written twice, or nested deep at a random place."""
    text = seed_result
    at = data.draw(st.integers(0, len(text)), label="at")
    how = data.draw(st.sampled_from(["cut", "byte", "twice", "deep", "nan"]), label="how")
    if how == "cut":
        text = text[:at]
    elif how == "byte":
        text = text[:at] + data.draw(st.sampled_from(list('{}[]",:0-e.\\\x00é')), label="char") + text[at + 1:]
    elif how == "twice":
        text = text.replace('"total": ', '"total": 1.0, "total": ', 1)
    elif how == "deep":
        depth = data.draw(st.integers(150, 100_000), label="depth")
        text = text[:-2] + ', "x": ' + "[" * depth + "]" * depth + "}\n"
    else:
        text = text.replace('"total": ', '"total": NaN, "t": ', 1)
    _read(tmp_path_factory.mktemp("r"), text)


GOOD_LINE = {"plan_hash": "abc123", "vary": {"price.on-demand": 1.0, "demand": 1.2}, "status": "optimal",
             "cost_total": 1800.0, "reserved_gpus": 8, "seconds": 0.4, "gap": 0.0,
             "spend": {"on-demand": 1800.0, "api": 0.0}, "solver": "highs", "time_limit_s": 60.0}


def _sweep(tmp: Path, lines: list[str], newline: bool) -> None:
    path = tmp / "sweep.jsonl"
    path.write_bytes(("\n".join(lines) + ("\n" if newline else "")).encode("utf-8", "surrogatepass"))
    try:
        read_sweep(path)
    except PlanError as exc:
        assert exc.problems and all(str(p) for p in exc.problems)


@settings(PROFILE)
@given(data=st.data(), newline=st.booleans())
def test_sweep_lines_edited_at_random_are_read_or_refused(tmp_path_factory, data, newline):
    """A sweep.jsonl of good lines, random JSON and good lines edited at random, with or without its last newline."""
    lines = []
    for _ in range(data.draw(st.integers(1, 4), label="lines")):
        kind = data.draw(st.sampled_from(["good", "edited", "random", "text", "deep"]), label="kind")
        if kind == "good":
            lines.append(json.dumps(GOOD_LINE))
        elif kind == "edited":
            lines.append(json.dumps(_mutated(json.loads(json.dumps(GOOD_LINE)), data)))
        elif kind == "random":
            lines.append(json.dumps(data.draw(json_values, label="value")))
        elif kind == "text":
            lines.append(data.draw(st.text(max_size=40).filter(lambda t: "\n" not in t and "\r" not in t),
                                   label="text"))
        else:
            depth = data.draw(st.integers(10, 50_000), label="depth")
            lines.append('{"vary": ' + "[" * depth + "]" * depth + "}")
    _sweep(tmp_path_factory.mktemp("s"), lines, newline)
