"""The one rule every bad-input corpus case is held to (tests/data/bad_inputs/<surface>/cases.json): exit 2, no
traceback, the message names the file and what is wrong, nothing written, the inputs unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from optimizer.cli import app

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"


def cases(surface: str) -> list[dict]:
    return json.loads((CORPUS / surface / "cases.json").read_text(encoding="utf-8"))


def _digest(paths: list[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def refused(args: list[str], inputs: list[Path], out_dir: Path, names: str, expect: list[str]) -> None:
    """Run `planopt ARGS`; hold the result to the rule. `names` is the file the message must name."""
    before = _digest(inputs)
    beside = sorted({p.parent for p in inputs})  # nothing may appear beside the inputs either
    written_before = sorted(out_dir.rglob("*")) + [sorted(d.iterdir()) for d in beside]
    r = CliRunner().invoke(app, [str(a) for a in args])
    said = r.output
    assert r.exit_code == 2, f"exit {r.exit_code}:\n{said}\n{r.exception!r}"
    assert "Traceback" not in said and (r.exception is None or isinstance(r.exception, SystemExit)), said
    flat = " ".join(said.split())
    assert names in flat, f"the message does not name {names}:\n{said}"
    for needle in expect:
        assert " ".join(needle.split()) in flat, f"{needle!r} not in:\n{said}"
    assert sorted(out_dir.rglob("*")) + [sorted(d.iterdir()) for d in beside] == written_before, "something was written"
    assert _digest(inputs) == before, "an input changed"


def reader_settings():
    """Hypothesis settings for the reader properties: 200 examples, a fixed sample (the suite is repeatable);
    HYPOTHESIS_PROFILE=thorough runs 2,000 fresh ones."""
    import os

    from hypothesis import HealthCheck, settings

    thorough = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
    return settings(max_examples=2000 if thorough else 200, deadline=None, derandomize=not thorough,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
