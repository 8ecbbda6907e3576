"""The first hour of a new user: init, validate, the schema and its reference, x- keys, completion,
and answers instead of dead ends."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.reference import (
    SCHEMA_FILE,
    plan_json_schema,
    plan_reference,
    reference_keys,
)

from tests.helpers.paths import ROOT

TEMPLATES = sorted((ROOT / "templates" / "plans").glob("*.yaml"))
PLANS = sorted((ROOT / "plans").rglob("*.yaml"))


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def plain(path: Path):
    """A YAML file as JSON data (dates as ISO text), as an editor's schema validator sees it."""
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    return json.loads(json.dumps(data, default=lambda o: o.isoformat() if isinstance(o, dt.date) else str(o)))


# --- init ------------------------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("template", [p.stem for p in TEMPLATES])
def test_every_template_inits_validates_and_solves(template, tmp_path):
    plan = tmp_path / "p.yaml"
    res = invoke("init", "--template", template, "-o", plan)
    assert res.exit_code == 0, res.output
    assert plan.read_text(encoding="utf-8").startswith(f"# yaml-language-server: $schema={SCHEMA_FILE}\n")
    assert json.loads((tmp_path / SCHEMA_FILE).read_text(encoding="utf-8")) == plan_json_schema()
    res = invoke("validate", plan)
    assert res.exit_code == 0, res.output
    assert "valid" in res.output
    res = invoke("solve", plan, "-o", tmp_path / "out", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["status"] == "optimal"


def test_init_never_overwrites_a_plan_unless_asked(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("mine\n", encoding="utf-8")
    res = invoke("init", "-o", plan)
    assert res.exit_code == 2
    assert "exists; nothing was written" in res.output and "--force" in res.output
    assert plan.read_text(encoding="utf-8") == "mine\n"
    assert invoke("init", "-o", plan, "--force").exit_code == 0
    assert "plan:" in plan.read_text(encoding="utf-8")


def test_init_refuses_an_unknown_template_and_a_non_yaml_name(tmp_path):
    res = invoke("init", "--template", "huge", "-o", tmp_path / "p.yaml")
    assert res.exit_code == 2 and "startup" in res.output
    res = invoke("init", "-o", tmp_path / "p.txt")
    assert res.exit_code == 2 and "something.yaml" in res.output
    assert list(tmp_path.iterdir()) == []


def test_init_writes_nothing_when_the_schema_beside_the_plan_is_a_directory(tmp_path):
    """It had written the plan, then said it could not write the plan (the schema was the directory)."""
    (tmp_path / "plan.schema.json").mkdir()
    res = invoke("init", "-o", tmp_path / "plan.yaml")
    assert res.exit_code == 2, res.output
    assert f"cannot write {tmp_path / 'plan.schema.json'}: it is a directory; nothing was written" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.schema.json"]


def test_the_seed_template_is_the_golden_case(tmp_path):
    invoke("init", "--template", "seed", "-o", tmp_path / "seed.yaml")
    res = invoke("solve", tmp_path / "seed.yaml", "-o", tmp_path / "out", "--json")
    d = json.loads(res.stdout)
    assert d["cost"]["per_day"] == pytest.approx(1800)


# --- validate --------------------------------------------------------------------------------------------


def test_validate_accepts_every_shipped_plan():
    """Each plan valid, saying where its configs run: the plan's own offers and the catalogs' that join it."""
    res = invoke("validate", *PLANS)
    assert res.exit_code == 0, res.output
    assert res.output.count(": valid —") == len(PLANS)
    said = " ".join(res.output.split())
    assert "plans/q4.yaml: valid — 9 workloads, 107 candidate configs on 5 offers of the plan and 21 offers of the " \
           "catalogs" in said


def test_validate_json_lists_each_plan(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("plan: x\nhorizon_days: 0\nworkloads: []\n", encoding="utf-8")
    res = invoke("validate", ROOT / "plans" / "seed-fleet.yaml", bad, "--json")
    assert res.exit_code == 2
    d = json.loads(res.stdout)
    assert d["valid"] is False
    good, wrong = d["plans"]
    assert good["status"] == "valid" and good["problems"] == [] and good["workloads"] == 1
    assert good["offers"] == {"plan": 1, "catalogs": 0}  # the seed keeps to its own offer
    assert wrong["status"] == "invalid"
    assert {p["key"] for p in wrong["problems"]} >= {"horizon_days", "workloads"}
    assert all(p["file"] == str(bad) and p["line"] and p["fix"] for p in wrong["problems"])


def test_validate_of_a_missing_file_is_an_input_error(tmp_path):
    res = invoke("validate", tmp_path / "nope.yaml")
    assert res.exit_code == 2 and "not found" in res.output


# --- the schema and the reference ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator():
    schema = plan_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("path", PLANS + TEMPLATES, ids=lambda p: p.stem)
def test_the_json_schema_accepts_every_shipped_plan_and_template(path, validator):
    errors = [e.message for e in validator.iter_errors(plain(path))]
    assert errors == []


def test_the_json_schema_rejects_an_unknown_key_and_accepts_x_keys(validator):
    data = plain(ROOT / "plans" / "q4.yaml")
    data["polcy"] = {"occupancy": 0.5}
    assert any("polcy" in e.message for e in validator.iter_errors(data))
    del data["polcy"]
    data["x-curves"] = {"flat": [0.5] * 24}
    data["workloads"][0]["x-owner"] = "team-a"
    assert list(validator.iter_errors(data)) == []
    data["policy"]["x-note"] = "not here"
    assert list(validator.iter_errors(data))


def test_planopt_schema_prints_the_schema_and_writes_it(tmp_path):
    res = invoke("schema")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["$schema"].startswith("https://json-schema.org/")
    assert invoke("schema", "-o", tmp_path / "s.json").exit_code == 0
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8")) == plan_json_schema()


def test_the_reference_in_the_repository_is_generated_from_the_schema():
    page = (ROOT / "docs" / "plan-reference.md").read_text(encoding="utf-8")
    assert page == plan_reference(), "regenerate: planopt schema --reference -o docs/plan-reference.md"
    assert "docs/plan-reference.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def _schema_keys(schema: dict) -> set[str]:
    """Every property name of every object in the schema, walked independently of the reference."""
    keys: set[str] = set()
    for node in [schema, *schema.get("$defs", {}).values()]:
        keys |= set(node.get("properties", {}))
    return keys


def test_the_reference_covers_every_key_of_the_schema():
    schema = plan_json_schema()
    documented = reference_keys()
    page = plan_reference()
    assert {k.rsplit(".", 1)[1] for k in documented} == _schema_keys(schema)
    for key in documented:
        section, name = key.rsplit(".", 1)
        assert f"## `{section}`" in page and f"- **`{name}`** — " in page, key
    estimator_or_catalog_only = {"CatalogFile", "EstimatorParams"}
    reached = {ref.split("/")[-1] for ref in json.dumps(schema).split('"$ref": "')[1:]}
    assert not (estimator_or_catalog_only & reached)


def test_every_reference_entry_has_a_type_description_and_example():
    entries = [line for line in plan_reference().splitlines() if line.startswith("- **`")]
    assert len(entries) == len(reference_keys())
    for e in entries:
        body = e.split("** — ", 1)[1]
        assert body.split(";")[0].strip(". "), e
        assert "Example: `" in e or "(see `" in e, f"no example: {e}"


# --- x- keys --------------------------------------------------------------------------------------------------

ANCHORED = """\
plan: anchors
horizon_days: 1
x-curves:
  office: &office [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.3, 0.6, 0.9, 1.0, 1.0, 1.0,
                   1.0, 1.0, 1.0, 1.0, 0.9, 0.7, 0.5, 0.3, 0.2, 0.1, 0.1, 0.1]
policy: {tiers: [on-demand]}
workloads:
  - name: chat
    x-owner: team-a
    model: llama-3.1-8b
    tokens: {input: 1000, output: 200}
    demand: {peak_output_tokens_per_s: 2000, profile: *office}
  - name: search
    model: llama-3.1-8b
    tokens: {input: 500, output: 100}
    demand: {peak_output_tokens_per_s: 1000, profile: *office}
"""


def test_x_keys_hold_anchors_and_are_ignored(tmp_path):
    from optimizer.inputs.loading import load_plan

    path = tmp_path / "p.yaml"
    path.write_text(ANCHORED, encoding="utf-8")
    plan = load_plan(path).plan
    assert [w.demand.profile for w in plan.workloads][0] == [w.demand.profile for w in plan.workloads][1]
    assert plan.workloads[0].demand.profile[9] == 1.0
    assert invoke("validate", path).exit_code == 0


# --- answers instead of dead ends ------------------------------------------------------------------------------

UNREACHABLE = """\
plan: long prompts
horizon_days: 30
policy: {tiers: [on-demand]}
workloads:
  - name: research-rag
    model: llama-3.1-405b
    precisions: [bf16, fp8]
    tokens: {input: 100000, output: 500}
    slo: {ttft_ms: 2000, tpot_ms: 50}
    demand: {peak_output_tokens_per_s: 500}
"""


def test_an_slo_no_config_reaches_is_exit_1_with_the_best_reachable_ttft(tmp_path):
    path = tmp_path / "rag.yaml"
    path.write_text(UNREACHABLE, encoding="utf-8")
    res = invoke("solve", path, "-o", tmp_path / "out")
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "no plan meets the constraints" in text
    assert "best p99 TTFT at 100,000-token prompts:" in text and "above the 2.0 s target" in text
    assert "liquid" not in text and "facility" not in text
    assert "loosen the targets" in text
    assert not (tmp_path / "out").exists()
    res = invoke("solve", path, "--json", "-o", tmp_path / "out")
    assert res.exit_code == 1 and json.loads(res.stdout)["status"] == "infeasible"
    res = invoke("validate", path, "--json")
    assert res.exit_code == 1
    problem = json.loads(res.stdout)["plans"][0]["problems"][0]
    assert problem["key"] == "workloads[0].slo" and problem["line"] == 9 and "best p99 TTFT" in problem["message"]


def test_explain_answers_on_a_plan_whose_slo_no_config_reaches(tmp_path):
    path = tmp_path / "rag.yaml"
    path.write_text(UNREACHABLE, encoding="utf-8")
    res = invoke("explain", path, "--workload", "research-rag")
    assert res.exit_code == 0, res.output
    assert "no config meets its SLO" in res.output
    assert "Tried and dropped before solving" in res.output and "slo" in res.output
    d = json.loads(invoke("explain", path, "--workload", "research-rag", "--json").stdout)
    assert d["chosen"] is None and "best p99 TTFT" in d["unreachable"]
    assert {x["family"] for x in d["dropped"]} >= {"slo", "fit"}


def test_explain_says_why_there_is_nothing_to_compare(tmp_path):
    res = invoke("explain", ROOT / "plans" / "seed-fleet.yaml", "--workload", "chat-70b")
    assert res.exit_code == 0
    assert "no other config to compare" in res.output


# --- completion -------------------------------------------------------------------------------------------------


def test_completion_offers_workload_names_and_catalog_ids():
    from optimizer.cli.complete import catalog_ids, workload_names

    class Ctx:
        params = {"plan": ROOT / "plans" / "q4.yaml"}

    assert "chat" in workload_names(Ctx(), "")
    assert workload_names(Ctx(), "doc") == ["doc-extraction"]
    assert "h100-sxm" in catalog_ids("accelerators")(None, "h1")
    assert all(m.startswith("llama") for m in catalog_ids("models")(None, "llama"))
    assert workload_names(type("C", (), {"params": {}})(), "") == []


def test_shell_completion_is_switched_on():
    res = invoke("--help")
    assert "--install-completion" in res.output
