"""Results written by earlier versions of planopt read with today's reader (`report`, `compare`, `solve --baseline`,
`solve --carry`); the reader's refusals (every problem at once, by key path; keys given twice; nesting too deep);
and the published JSON Schema of `--json` output, which a solved plan's JSON validates against."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.loading import load_plan
from optimizer.results.jsonio import MAX_DEPTH, dumps, read_result, result_json_schema, result_schema_text
from optimizer.results.ledger import carry_commitments
from tests.helpers.solving import NO_TIME_LIMIT

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "data" / "results"
SEED = ROOT / "plans" / "seed-fleet.yaml"
FORMATS = sorted(OLD.glob("*.json"))

runner = CliRunner()


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> Path:
    """plans/seed-fleet.yaml solved by this planopt (a one-day plan: the solve takes well under a second)."""
    out = tmp_path_factory.mktemp("seed")
    res = runner.invoke(app, ["solve", str(SEED), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out / "seed-fleet.json"


def test_there_is_a_result_of_each_earlier_format():
    """One file per set of keys a version wrote (tests/data/results/README.md says which lacks what)."""
    assert len(FORMATS) >= 5
    keys = {p.name: frozenset(_keys(json.loads(p.read_text(encoding="utf-8")))) for p in FORMATS}
    assert len(set(keys.values())) == len(FORMATS), "two fixtures of the same format"
    assert all("workloads[].validation" not in k for k in keys.values())  # each from before today's format


def _keys(value, path="") -> set[str]:
    """Every key path in parsed JSON, a list's items as one (workloads[].cost), offers' ids and the like aside."""
    if isinstance(value, list):
        return set().union(*(_keys(v, f"{path}[]") for v in value)) if value else set()
    if isinstance(value, dict) and not path.endswith(("offers", "apis", "policy", "by_tier", "day_types")):
        return set().union(*({f"{path}.{k}".lstrip(".")} | _keys(v, f"{path}.{k}".lstrip(".")) for k, v in value.items()))
    return set()


@pytest.mark.parametrize("path", FORMATS, ids=lambda p: p.stem)
def test_an_earlier_format_reads_with_its_missing_keys_at_their_defaults(path):
    d = json.loads(path.read_text(encoding="utf-8"))
    r = read_result(path)
    assert r.plan == d["plan"] and r.cost_total == d["cost"]["total"]
    assert [w.name for w in r.workloads] == [w["name"] for w in d["workloads"]]
    for w, saved in zip(r.workloads, d["workloads"]):
        assert w.replicas.total == saved["replicas"]["total"] and w.peak_hour == saved["peak"]["hour"]
        if "kv_copies" not in saved:
            assert (w.family, w.pp, w.ep, w.kv_copies) == ("tp", 1, 1, 1.0)
            assert w.validation is None or w.validation.validated  # calibrated, when absent, was true
        if "cost_by_tier" not in saved:
            assert w.cost_by_tier == {} and w.committed_cost == 0.0 and w.tenants == {}
    if "committed" not in d["cost"]:
        assert r.cost_committed == 0.0 and r.cost_idle == 0.0
    assert json.loads(dumps(r))["end_is_last_day"] is True  # written again in today's format


def test_an_earlier_new_reservation_s_end_the_day_after_reads_as_its_last_day():
    path = OLD / "35dde86-q1-with-commitments.json"
    saved = json.loads(path.read_text(encoding="utf-8"))["new_commitments"]
    assert saved and saved[0]["end"] == "2028-01-01"  # a year from 2027-01-01, as written then
    n = read_result(path).new_commitments[0]
    assert (n.start, n.end, n.end_text) == ("2027-01-01", "2027-12-31", "2027-12-31")


@pytest.mark.parametrize("path", FORMATS, ids=lambda p: p.stem)
def test_report_and_compare_take_an_earlier_format(path, solved, tmp_path):
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / f"{path.stem}.html").is_file()
    res = runner.invoke(app, ["compare", str(path), str(solved), "--json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("path", [p for p in FORMATS if p.name.endswith("seed-fleet.json")], ids=lambda p: p.stem)
def test_solve_takes_an_earlier_format_as_its_baseline(path, tmp_path):
    res = runner.invoke(app, ["solve", str(SEED), "--baseline", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "seed-fleet.json").read_text(encoding="utf-8"))["baseline"]["file"] == str(path)


def test_carry_takes_an_earlier_format_s_reservations_at_their_last_day():
    q1 = load_plan(ROOT / "plans" / "q1-with-commitments.yaml")
    # the next quarter: a result carried into the plan it came from (the same start) is refused
    loaded = dataclasses.replace(q1, plan=q1.plan.model_copy(update={"start_date": dt.date(2027, 4, 1)}))
    _, info = carry_commitments(loaded, OLD / "35dde86-q1-with-commitments.json")
    rows = info.carried + info.skipped
    assert any(c.entry == "new_commitments[0]" and c.end == "2027-12-31" for c in rows), rows


# --- what the reader refuses -----------------------------------------------------------------------------------

def _refused(path: Path) -> list[str]:
    with pytest.raises(PlanError) as err:
        read_result(path)
    return [str(p) for p in err.value.problems]


def test_every_problem_is_said_at_once_by_its_key_path(solved, tmp_path):
    d = json.loads(solved.read_text(encoding="utf-8"))
    d["workloads"][0]["cost"] = "x"
    d["purchases"][0]["gpus"] = -8
    del d["solver"]["seconds"]
    d["hourly"][0]["colour"] = "red"
    d["currency"] = None
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    said = _refused(path)
    for words in ('workloads[0].cost: "x" is not a number', "purchases[0].gpus: -8 is negative",
                  "solver.seconds: missing", "hourly[0].colour: is not a key of hourly[0]", "currency: null is not text"):
        assert any(line.startswith(f"{path}: {words}") for line in said), (words, said)
    assert len(said) == 5, said
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert all(line.split(" — ")[0] in " ".join(res.output.split()) for line in said), res.output


def test_meanings_are_said_at_once_too(solved, tmp_path):
    d = json.loads(solved.read_text(encoding="utf-8"))
    d["horizon_days"] = 0
    d["hourly"][0]["hour"] = 24
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    said = " ".join(_refused(path))
    assert "horizon_days: 0 is not a horizon" in said and "hourly[0].hour: 24 is not an hour" in said


def test_a_key_given_twice_is_refused(solved, tmp_path):
    text = solved.read_text(encoding="utf-8")
    path = tmp_path / "twice.json"
    path.write_text(text.replace('"currency": "USD",', '"currency": "USD",\n  "currency": "EUR",', 1), encoding="utf-8")
    said = _refused(path)
    assert said == [f"{path}: currency: is given more than once (each key once) — give the file as `planopt solve` "
                    "wrote it, or solve the plan again"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_nesting_deeper_than_the_limit_is_refused_before_parsing(solved, tmp_path, depth):
    d = json.loads(solved.read_text(encoding="utf-8"))
    text = json.dumps(d)[:-1] + ', "notes_x": ' + "[" * depth + "]" * depth + "}"
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    said = _refused(path)  # a PlanError, not a RecursionError
    assert said[0].startswith(f"{path}: nested {depth + 1} levels deep (a result is at most {MAX_DEPTH})")
    res = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2 and "Traceback" not in res.output and "nested" in res.output


def test_brackets_inside_text_do_not_count_as_nesting(solved, tmp_path):
    d = json.loads(solved.read_text(encoding="utf-8"))
    d["notes"] = d["notes"] + ["[" * (MAX_DEPTH + 5) + ' \\" {']
    path = tmp_path / "brackets.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    assert read_result(path).notes[-1] == d["notes"][-1]


# --- the published schema ----------------------------------------------------------------------------------

def test_a_solved_plan_s_json_validates_against_the_published_schema(solved, tmp_path):
    schema = json.loads((ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    d = json.loads(solved.read_text(encoding="utf-8"))
    assert list(validator.iter_errors(d)) == []
    for path in FORMATS:  # earlier formats too: the keys added since have defaults
        assert list(validator.iter_errors(json.loads(path.read_text(encoding="utf-8")))) == [], path
    bad = copy.deepcopy(d)
    bad["workloads"][0]["replicas"]["total"] = -1
    bad["cost"]["colour"] = "red"
    assert len(list(validator.iter_errors(bad))) == 2


def test_the_published_schema_is_the_typed_model_s(tmp_path):
    text = (ROOT / "docs" / "result.schema.json").read_text(encoding="utf-8")
    assert text == result_schema_text(), "regenerate: planopt schema --result -o docs/result.schema.json"
    assert json.loads(text) == result_json_schema()
    res = runner.invoke(app, ["schema", "--result", "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == text


def test_a_plan_with_scenarios_reads_back_byte_for_byte(tmp_path):
    """A scenario's day types stand for its weighted share of the days (0.3 of a day): read as they are written."""
    from optimizer.pipeline import SolveOptions, solve_plan

    plan = tmp_path / "scenarios.yaml"
    plan.write_text(SEED.read_text(encoding="utf-8") + "scenarios:\n  - {name: low, weight: 0.3, demand: {all: 0.6}}\n"
                    "  - {name: base, weight: 0.7}\n", encoding="utf-8")
    text = dumps(solve_plan(plan, SolveOptions(time_limit_s=NO_TIME_LIMIT)))
    assert any(not float(days).is_integer() for days in json.loads(text)["day_types"].values()), text[:400]
    path = tmp_path / "scenarios.json"
    path.write_text(text, encoding="utf-8")
    assert dumps(read_result(path)) == text


def test_a_step_stopped_by_time_reads_as_the_safety_cap(solved, tmp_path):
    """Results written before the work limits said "time" where the wall clock stopped a step."""
    d = json.loads(solved.read_text(encoding="utf-8"))
    step = next(iter(d["solver"]["stopped_by"]))
    d["solver"]["stopped_by"][step] = "time"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    work = {w.step: w.stopped_by for w in read_result(path).solver.work}
    assert work[step] == "safety cap"
