"""A result's derived numbers checked against their parts when read, within a cent; and what `solve` warns of,
on stderr and in `--json` under `warnings`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.lint import lint
from optimizer.inputs.loading import load_plan
from optimizer.results.jsonio import read_result

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "bad_inputs"
SEED = ROOT / "plans" / "seed-fleet.yaml"

runner = CliRunner()


@pytest.fixture(scope="module")
def solved(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("seed")
    res = runner.invoke(app, ["solve", str(SEED), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads((out / "seed-fleet.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, d: dict) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def test_a_total_within_a_cent_of_its_tiers_reads(solved, tmp_path):
    """Each part is written to 6 decimals: a sum a fraction of a cent off is rounding, not an edit."""
    d = json.loads(json.dumps(solved))
    d["cost"]["total"] += 0.004
    assert read_result(_write(tmp_path, d)).cost_total == pytest.approx(1800.004)


def test_a_total_two_cents_off_is_refused_naming_both_numbers(solved, tmp_path):
    d = json.loads(json.dumps(solved))
    d["cost"]["total"] += 0.02
    d["cost"]["per_day"] += 0.02
    d["cost"]["all_in"] += 0.02
    d.pop("showback")  # its own check (rows against all-in) is tested in test_showback.py
    with pytest.raises(PlanError) as err:
        read_result(_write(tmp_path, d))
    said = [str(p) for p in err.value.problems]
    assert said == [f"{tmp_path / 'r.json'}: cost.total: 1,800.02 is not the sum of cost.by_tier (1,800.00): the total "
                    "is its tiers added up — give the file as `planopt solve` wrote it, or solve the plan again"]


def test_a_result_with_no_plan_and_no_cost_reads(solved, tmp_path):
    """Status against cost: an error with nothing bought and no cost is what a result with no plan holds."""
    d = json.loads(json.dumps(solved))
    d["status"] = "error"
    d["purchases"] = []
    d["cost"].update(total=0.0, per_day=0.0, all_in=0.0, idle=0.0,
                     by_tier={k: 0.0 for k in d["cost"]["by_tier"]})
    for w in d["workloads"]:
        w["cost"] = 0.0
        w["cost_by_tier"] = {k: 0.0 for k in w["cost_by_tier"]}
    for row in d["showback"]:
        row.update(cost=0.0, committed_cost=0.0)
    assert read_result(_write(tmp_path, d)).status == "error"


def test_late_hardware_is_warned_of_in_plan_order():
    said = lint(load_plan(CORPUS / "owned" / "lead-time-beyond-the-horizon.yaml").plan)
    assert [s for s in said if "lead_time_days" in s] == [
        "offer buy-80gb: buy.lead_time_days 400 is beyond the horizon (90 days): servers ordered on its first day "
        "arrive after it ends and serve nothing in this plan — check lead_time_days (days, not hours), or lengthen "
        "horizon_days"]
    said = lint(load_plan(CORPUS / "owned" / "since-after-the-horizon.yaml").plan)
    assert any(s.startswith("owned[0] (4 × gpu-80gb): since 2027-03-01 is after the horizon's last day 2027-01-31")
               for s in said), said


def test_solve_json_lists_its_warnings_and_says_them_on_stderr(tmp_path):
    plan = CORPUS / "owned" / "since-after-the-horizon.yaml"
    res = runner.invoke(app, ["solve", str(plan), "--json", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    late = [w for w in d["warnings"] if "since 2027-03-01 is after the horizon's last day" in w]
    assert len(late) == 1 and late[0] in d["notes"]  # the notes keep every sentence, warnings what was warned of
    assert f"warning: {late[0]}" in " ".join(res.stderr.split())
    [path] = (tmp_path / "out").glob("*.json")
    assert json.loads(path.read_text(encoding="utf-8"))["warnings"] == d["warnings"]
    assert read_result(path).notes == d["notes"]  # the file with warnings reads back
