"""Demand from business numbers (users × active share × requests × tokens × the busiest hour's share):
the derivation by hand, the same fleet as the stated peak, the arithmetic in explain and the JSON, the
profile check, the errors, and calibrate replacing the numbers with a measured peak."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import PlanError
from optimizer.inputs.derived import peak_derivation
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import solve_plan
from optimizer.results.jsonio import dumps, from_dict, to_dict

from tests.helpers.paths import DATA

# 120,000 users × 25% × 12 requests × 250 output tokens = 90 M output tokens a day; 12.5% of them in
# the busiest hour: 11.25 M ÷ 3,600 s = 3,125 tok/s exactly (peak_to_mean 3 = 24 × 0.125 says the same).
BUSINESS = "{users: 120000, active_share: 0.25, requests_per_active_user_per_day: 12, peak_hour_share: 0.125}"
STATED = "{peak_output_tokens_per_s: 3125}"
PROFILE = ("[0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0, 1.0, "
           "0.9, 0.9, 0.9, 0.8, 0.7, 0.5, 0.4, 0.3, 0.2, 0.2, 0.1, 0.1]")

PLAN = """\
plan: business numbers
horizon_days: {horizon}
catalogs: []
policy: {{occupancy: 0.6, spares: 1, rollout_fraction: 0.25, tiers: [reserved-1y, on-demand]}}
models:
  - {{id: seed-70b, params_b: 70, kv_gb_per_seq: 1.6}}
accelerators:
  - {{id: gpu-80gb, memory_gb: 80}}
offers:
  - {{id: seed-cloud-80gb, accelerator: gpu-80gb, provider: seed, gpus_per_node: 2,
     price_per_gpu_hour: {{on-demand: 2.50, reserved-1y: 1.75}}}}
workloads:
  - name: chat
    model: seed-70b
    precisions: [fp8]
    tp: [2]
    tokens: {{input: 1000, output: 250}}
    demand: {demand}
    measured: [{{accelerator: gpu-80gb, precision: fp8, tp: 2, goodput_output_tokens_per_s: 1400}}]
"""


def write(tmp_path: Path, demand: str, horizon: int = 30, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(PLAN.format(demand=demand, horizon=horizon), encoding="utf-8")
    return path


def with_profile(demand: str, profile: str = PROFILE) -> str:
    return demand[:-1] + f", profile: {profile}}}"


def first_derivation(loaded):
    """How the plan's first workload's peak follows from its business numbers (None when stated)."""
    return peak_derivation(loaded.plan, loaded.plan.workloads[0])


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


# --- the derivation -----------------------------------------------------------------------------------


def test_the_peak_by_hand(tmp_path):
    loaded = load_plan(write(tmp_path, BUSINESS))
    d = loaded.plan.workloads[0].demand
    assert d.peak_output_tokens_per_s == 3125.0
    derivation = first_derivation(loaded)
    assert derivation.output_tokens_per_day == 90_000_000
    assert derivation.text() == ("peak 3,125 tok/s = 120,000 users × 25% active × 12 requests × 250 output tokens "
                                   "× 12.5% in the busiest hour ÷ 3,600 s")
    ptm = BUSINESS.replace("peak_hour_share: 0.125", "peak_to_mean: 3")
    loaded = load_plan(write(tmp_path, ptm))
    d = loaded.plan.workloads[0].demand
    assert d.peak_output_tokens_per_s == pytest.approx(90e6 / 86400 * 3, rel=1e-15) == pytest.approx(3125)
    assert "÷ 86,400 s × 3 peak-to-mean" in first_derivation(loaded).text()


def test_growth_sizes_for_the_horizons_end(tmp_path):
    """Five per cent a month over a 90-day horizon: three 30-day months, 3,125 × 1.05³."""
    grown = BUSINESS[:-1] + ", monthly_growth: 0.05}"
    loaded = load_plan(write(tmp_path, grown, horizon=90))
    d = loaded.plan.workloads[0].demand
    assert first_derivation(loaded).growth_months == 3
    assert d.peak_output_tokens_per_s == pytest.approx(3125 * 1.157625, rel=1e-12)
    assert "× 1.158 (5% a month over 3.0 months: sized for the horizon's end)" in first_derivation(loaded).text()
    # growth 0 is no growth
    d = load_plan(write(tmp_path, BUSINESS[:-1] + ", monthly_growth: 0}", horizon=90)).plan.workloads[0].demand
    assert d.peak_output_tokens_per_s == 3125.0


def test_the_stated_peak_has_no_derivation(tmp_path):
    loaded = load_plan(write(tmp_path, STATED))
    d = loaded.plan.workloads[0].demand
    assert d.peak_output_tokens_per_s == 3125 and first_derivation(loaded) is None


# --- the same fleet as the stated peak ----------------------------------------------------------------


def test_business_numbers_buy_what_the_equivalent_stated_peak_buys(tmp_path):
    a = solve_plan(write(tmp_path, with_profile(BUSINESS), name="business.yaml"))
    b = solve_plan(write(tmp_path, with_profile(STATED), name="stated.yaml"))
    assert a.status == b.status == "optimal"
    assert a.cost_total == b.cost_total > 0
    assert [(p.offer, p.tier, p.gpus) for p in a.purchases] == [(p.offer, p.tier, p.gpus) for p in b.purchases]
    wa, wb = a.workloads[0], b.workloads[0]
    assert wa.peak_output_tokens_per_s == wb.peak_output_tokens_per_s == 3125
    assert wa.replicas == wb.replicas and wa.hourly_demand == wb.hourly_demand
    assert wa.peak_derivation is not None and wb.peak_derivation is None


def test_the_json_carries_the_numbers_and_reads_back(tmp_path):
    r = solve_plan(write(tmp_path, with_profile(BUSINESS)))
    d = to_dict(r)
    derived = d["workloads"][0]["peak"]["derived_from"]
    assert derived["users"] == 120000 and derived["peak_hour_share"] == 0.125
    assert derived["output_tokens_per_s"] == 3125 and derived["text"].startswith("peak 3,125 tok/s = ")
    text = dumps(r)
    again = from_dict(json.loads(text))
    assert again.workloads[0].peak_derivation == r.workloads[0].peak_derivation
    assert dumps(again) == text
    stated = to_dict(solve_plan(write(tmp_path, with_profile(STATED), name="stated.yaml")))
    assert "derived_from" not in stated["workloads"][0]["peak"]


# --- explain and the profile check --------------------------------------------------------------------


def test_explain_shows_the_arithmetic(tmp_path):
    path = write(tmp_path, with_profile(BUSINESS))
    res = invoke("explain", path, "--workload", "chat", "--top", "1")
    assert res.exit_code == 0, res.output
    assert ("peak 3,125 tok/s = 120,000 users × 25% active × 12 requests × 250 output tokens × 12.5% in the busiest "
            "hour ÷ 3,600 s") in " ".join(res.output.split())
    res = invoke("explain", path, "--workload", "chat", "--top", "1", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)["peak_derivation"]
    assert d["output_tokens_per_s"] == 3125 and d["active_share"] == 0.25 and d["peak_to_mean"] is None
    res = invoke("explain", write(tmp_path, with_profile(STATED), name="stated.yaml"), "--workload", "chat",
                 "--top", "1", "--json")
    assert json.loads(res.stdout)["peak_derivation"] is None


def test_a_profile_that_contradicts_the_peak_hour_share_is_a_warning(tmp_path):
    """PROFILE's busiest hour holds 1 ÷ 11.1 ≈ 9% of its day: 12.5% contradicts it, 9.5% does not."""
    r = solve_plan(write(tmp_path, with_profile(BUSINESS)))
    assert [n for n in r.notes if "peak_hour_share is 12.5%, but the profile puts 9.01% of the day" in n
            and "(peak_hour_share: 0.090)" in n]
    agree = BUSINESS.replace("peak_hour_share: 0.125", "peak_hour_share: 0.095")
    assert not [n for n in solve_plan(write(tmp_path, with_profile(agree))).notes if "demand." in n]
    # no profile: every hour at the peak, 1/24 of the day each
    r = solve_plan(write(tmp_path, BUSINESS))
    assert [n for n in r.notes if "without a profile every hour is at the peak" in n]
    res = invoke("solve", write(tmp_path, with_profile(BUSINESS)), "-o", tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert "warning: chat: demand.peak_hour_share is 12.5%" in " ".join(res.output.split())
    # validate says it too, before any solve (and lists it in --json)
    res = invoke("validate", write(tmp_path, with_profile(BUSINESS)))
    assert res.exit_code == 0 and "warning:" in res.output and "peak_hour_share is 12.5%" in " ".join(res.output.split())
    res = invoke("validate", write(tmp_path, with_profile(BUSINESS)), "--json")
    assert any("peak_hour_share is 12.5%" in w for w in json.loads(res.stdout)["plans"][0]["warnings"])


def test_a_profile_that_never_reaches_the_peak_is_a_warning(tmp_path):
    """A profile at most 0.9 of the peak plans for 90% of it: valid, but said (shares of the day, which add up
    to 1, are refused: bad_plans/142)."""
    low = PROFILE.replace("1.0", "0.9")
    res = invoke("validate", write(tmp_path, with_profile(STATED, low)))
    assert res.exit_code == 0, res.output
    assert ("chat: demand.profile never reaches the peak (its busiest hour is 0.9): the fleet is sized "
            "for 90% of peak_output_tokens_per_s") in " ".join(res.output.split()) and "warning:" in res.output
    assert [n for n in solve_plan(write(tmp_path, with_profile(STATED, low))).notes if "never reaches the peak" in n]
    assert not [n for n in solve_plan(write(tmp_path, with_profile(STATED))).notes if "never reaches" in n]


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("demand, message", [
    ("{peak_output_tokens_per_s: 3125, users: 120000}",
     r"gives peak_output_tokens_per_s and business numbers \(users\) — keep one way"),
    ("{users: 120000, active_share: 0.25, peak_hour_share: 0.125}",
     "business numbers without requests_per_active_user_per_day — add requests_per_active_user_per_day: …"),
    (BUSINESS[:-1] + ", peak_to_mean: 3}", "gives both peak_hour_share and peak_to_mean"),
    ("{users: 120000, active_share: 0.25, requests_per_active_user_per_day: 12}",
     "business numbers without the day's shape — add peak_hour_share"),
    (BUSINESS.replace("0.25", "25"), "active_share: 25 is out of range"),
    (BUSINESS.replace("120000", "-1"), "users: -1 is out of range"),
    (BUSINESS.replace("12,", "-12,"), "requests_per_active_user_per_day: -12 is out of range"),
    (BUSINESS.replace("0.125", "1.5"), "peak_hour_share: 1.5 is out of range"),
    (BUSINESS.replace("0.125", "0.03"), r"peak_hour_share: 0.03 is below 1/24"),
    (BUSINESS.replace("peak_hour_share: 0.125", "peak_to_mean: 0.5"), "peak_to_mean: 0.5 is out of range"),
    (BUSINESS[:-1] + ", monthly_growth: -0.1}", "monthly_growth: -0.1 is out of range"),
    ("{peak_output_tokens_per_s: 3125, monthly_growth: 0.05}", "monthly_growth grows users"),
    ("{}", "gives no size"),
])
def test_bad_business_numbers_are_refused_with_their_line(tmp_path, demand, message):
    with pytest.raises(PlanError, match=message) as exc:
        load_plan(write(tmp_path, demand))
    assert "plan.yaml:18: workloads[0].demand" in str(exc.value)  # a flow mapping: one line


def test_business_numbers_need_tokens(tmp_path):
    path = write(tmp_path, BUSINESS)
    path.write_text(path.read_text().replace("    tokens: {input: 1000, output: 250}\n", ""))
    with pytest.raises(PlanError, match="needs tokens .*the business numbers multiply requests by tokens.output"):
        load_plan(path)


# --- calibrate: measured usage replaces the numbers ---------------------------------------------------


@pytest.mark.parametrize("growth", [None, 0.05])
def test_calibrate_replaces_business_numbers_with_the_measured_peak(tmp_path, growth):
    """With monthly_growth the measured peak is not grown (the log is the past): the console and the YAML
    comment say so and where growth goes instead."""
    from optimizer.synth import usage as usage_synth

    data = DATA / "calibrate" / "plan.yaml"
    text = data.read_text(encoding="utf-8")
    assert "      peak_output_tokens_per_s: 9000   # last quarter's guess\n" in text
    text = text.replace("      peak_output_tokens_per_s: 9000   # last quarter's guess\n",
                        "      users: 300000\n      active_share: 0.2\n      requests_per_active_user_per_day: 15\n"
                        "      peak_hour_share: 0.1\n" + (f"      monthly_growth: {growth}\n" if growth else ""))
    plan = tmp_path / "plan.yaml"
    plan.write_text(text, encoding="utf-8")
    before = load_plan(plan).plan.workloads[0].demand
    assert before.peak_output_tokens_per_s == pytest.approx(300000 * 0.2 * 15 * 350 * 0.1 / 3600
                                                            * (1 + (growth or 0)) ** (28 / 30))
    events, truth = usage_synth.generate(2000, days=14, seed=11, mode="exact")
    log = usage_synth.write(events, tmp_path / "usage.csv", style="openai")
    out = tmp_path / "calibrated.yaml"
    res = invoke("calibrate", plan, "--usage", log, "-o", out)
    assert res.exit_code == 0, res.output
    demand = YAML(typ="safe").load(out.read_text(encoding="utf-8"))["workloads"][0]["demand"]
    assert list(demand)[0] == "peak_output_tokens_per_s"
    assert not {"users", "active_share", "requests_per_active_user_per_day", "peak_hour_share"} & set(demand)
    assert "replaces the business numbers" in out.read_text(encoding="utf-8")
    calibrated = load_plan(out)
    after = calibrated.plan.workloads[0].demand
    assert first_derivation(calibrated) is None
    assert math.isclose(after.peak_output_tokens_per_s, truth.peak_output_tokens_per_s["chat"], rel_tol=0.05)
    said = " ".join(res.output.split())
    if growth:
        assert "monthly_growth 0.05 went with the business numbers" in said and "planopt forecast" in said
        assert "monthly_growth not applied" in out.read_text(encoding="utf-8")
    else:
        assert "monthly_growth" not in said
