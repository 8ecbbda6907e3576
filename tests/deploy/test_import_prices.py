"""planopt catalog import-prices: SkyPilot's catalog CSV → plan-local offers that solve; bad input refused whole;
and the staleness warning on prices far older than the plan's start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.lint import price_date, stale_prices
from optimizer.inputs.loading import load_plan
from optimizer.pipeline import SolveOptions, solve_plan
from tests.helpers.paths import DATA

runner = CliRunner()
CSV = DATA / "skypilot" / "vms.csv"
HEADER = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GPUInfo,Region,AvailabilityZone,Price,SpotPrice\n"


def _import(tmp_path: Path, *extra: str, csv: Path = CSV, as_of: str = "2026-09-15"):
    out = tmp_path / "offers.yaml"
    res = runner.invoke(app, ["catalog", "import-prices", str(csv), "--provider", "skytest", "--as-of", as_of,
                              "-o", str(out), *extra])
    return res, out


def _plan(tmp_path: Path, start: str) -> Path:
    plan = {"plan": "imported prices", "horizon_days": 7, "start_date": start, "catalogs": ["builtin"],
            "day_types": {"all": 7},
            "policy": {"providers": ["skytest"], "tiers": ["on-demand", "spot"], "spot_pools": ["batch"],
                       "time_limit_s": 600},
            "workloads": [{"name": "chat", "model": "llama-3.1-8b", "precisions": ["fp8"],
                           "accelerators": ["l40s", "h100-sxm"], "tokens": {"input": 1000, "output": 200},
                           "slo": {"ttft_ms": 1000, "tpot_ms": 50},
                           "demand": {"peak_output_tokens_per_s": 3000, "profile": [1.0] * 24}}]}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def test_skypilot_csv_imports_into_offers_that_solve(tmp_path):
    res, out = _import(tmp_path)
    assert res.exit_code == 0, res.output
    offers = {o["id"]: o for o in yaml.safe_load(out.read_text())["offers"]}
    p5 = offers["skytest-p5.48xlarge-us-east-1"]
    assert p5["accelerator"] == "h100-sxm" and p5["gpus_per_node"] == 8  # the instance type settles SXM
    assert p5["price_per_gpu_hour"] == {"on-demand": 6.88, "spot": 2.58}  # per GPU; spot the cheapest zone
    assert p5["as_of"] == "2026-09-15" and "vms.csv" in p5["source"]
    assert offers["skytest-p4de.24xlarge-us-east-1"]["price_per_gpu_hour"] == {"on-demand": 5.12075}
    assert offers["skytest-g6e.12xlarge-us-east-1"]["accelerator"] == "l40s"
    text = " ".join(res.output.split())
    assert "T4 (1 row)" in text and "fractional" in text and "A10 on Standard_NV6ads_A10_v5" in text
    result = solve_plan(load_plan(_plan(tmp_path, "2026-10-01"), [out]), SolveOptions(alternatives=0))
    assert result.workloads[0].offer in offers
    assert not [n for n in result.notes if "older than start_date" in n]


def test_the_solve_and_validate_warn_of_prices_older_than_90_days(tmp_path):
    _res, out = _import(tmp_path)
    plan = _plan(tmp_path, "2027-01-01")
    loaded = load_plan(plan, [out])
    said = stale_prices(loaded.plan, [loaded.catalog.offers[o] for o in sorted(loaded.catalog.offers)
                                      if o.startswith("skytest-")])
    assert len(said) == 1 and "skytest-p5.48xlarge-us-east-1 (as_of 2026-09-15)" in said[0]
    res = runner.invoke(app, ["validate", str(plan), "--catalog", str(out)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "older than start_date 2027-01-01" in text and "skytest-g6e.xlarge-us-east-1 (as_of 2026-09-15)" in text
    result = solve_plan(load_plan(plan, [out]), SolveOptions(alternatives=0))
    assert any("older than start_date 2027-01-01" in n and "as_of 2026-09-15" in n for n in result.notes)


def test_staleness_counts_a_month_from_its_first_day_and_needs_a_start_date(tmp_path):
    assert str(price_date("2026-09")) == "2026-09-01" and str(price_date("2026-09-15")) == "2026-09-15"
    assert price_date(None) is None
    _res, out = _import(tmp_path, as_of="2026-10")
    loaded = load_plan(_plan(tmp_path, "2026-12-31"), [out])  # 2026-10-01 is 91 days before
    mine = [loaded.catalog.offers[o] for o in loaded.catalog.offers if o.startswith("skytest-")]
    assert stale_prices(loaded.plan, mine)
    loaded = load_plan(_plan(tmp_path, "2026-12-30"), [out])  # 90 days: not stale
    assert not stale_prices(loaded.plan, mine)
    undated = _plan(tmp_path, "2027-06-01")
    data = json.loads(undated.read_text())
    del data["start_date"]
    undated.write_text(json.dumps(data))
    assert not stale_prices(load_plan(undated, [out]).plan, mine)


def test_an_instance_type_that_does_not_settle_the_variant_needs_a_map(tmp_path):
    csv = tmp_path / "gpu.csv"
    csv.write_text(HEADER + "gpu_8x_h100,208,1800,H100,8,,us-east-1,,23.92,\n"
                   "gpu_1x_h100,26,200,H100,1,,us-east-1,,2.99,\n", encoding="utf-8")
    res, out = _import(tmp_path, csv=csv)
    assert res.exit_code == 2 and not out.exists()
    text = " ".join(res.output.split())
    assert "H100 on gpu_1x_h100, gpu_8x_h100" in text and "--map H100=h100-sxm" in text
    res, out = _import(tmp_path, "--map", "H100=h100-pcie", csv=csv)
    assert res.exit_code == 0, res.output
    assert {o["accelerator"] for o in yaml.safe_load(out.read_text())["offers"]} == {"h100-pcie"}


@pytest.mark.parametrize("body, said", [
    ("p5.48xlarge,192,2048,H100,eight,,us-east-1,,55.04,\n", ["vms.csv:2", "AcceleratorCount 'eight' is not a number"]),
    ("p5.48xlarge,192,2048,H100,8,,us-east-1,,-1,\ng6e.xlarge,4,32,L40S,1,,,,1.8,\n",
     ["vms.csv:2", "Price -1 is negative", "vms.csv:3", "Region is empty", "2 problems"]),
    ("p5.48xlarge,192,2048,H100,8,us-east-1\n", ["vms.csv:2", "6 fields where the header has 10"]),
])
def test_bad_rows_are_all_said_with_their_lines_and_nothing_is_written(tmp_path, body, said):
    csv = tmp_path / "vms.csv"
    csv.write_text(HEADER + body, encoding="utf-8")
    res, out = _import(tmp_path, csv=csv)
    assert res.exit_code == 2 and "Traceback" not in res.output
    text = " ".join(res.output.split())
    for s in said:
        assert s in text, text
    assert not out.exists()


@pytest.mark.parametrize("args, said", [
    (["--as-of", "yesterday"], "--as-of yesterday: not a date"),
    (["--map", "H100"], "--map H100: not NAME=ID"),
    (["--map", "H100=h100-xyz"], "h100-xyz is not a catalog accelerator"),
])
def test_bad_options_exit_2(tmp_path, args, said):
    out = tmp_path / "offers.yaml"
    base = {"--as-of": "2026-09-15"}
    opts = ["--provider", "skytest", *(["--as-of", base["--as-of"]] if "--as-of" not in args else []), *args]
    res = runner.invoke(app, ["catalog", "import-prices", str(CSV), *opts, "-o", str(out)])
    assert res.exit_code == 2 and said in " ".join(res.output.split())
    assert not out.exists()


def test_a_file_that_is_not_a_skypilot_catalog_is_refused(tmp_path):
    csv = tmp_path / "other.csv"
    csv.write_text("name,price\nx,1\n", encoding="utf-8")
    res, _out = _import(tmp_path, csv=csv)
    assert res.exit_code == 2 and "other.csv:1" in res.output and "no column InstanceType" in res.output
    res = runner.invoke(app, ["catalog", "import-prices", str(CSV), "-o", str(tmp_path / "o.yaml")])
    assert res.exit_code == 2 and "--provider is required" in res.output and "--as-of is required" in res.output


def test_listing_a_section_takes_no_import_options(tmp_path):
    res = runner.invoke(app, ["catalog", "offers", "--provider", "aws"])
    assert res.exit_code == 2 and "unexpected --provider" in res.output


def test_a_plans_own_offer_with_an_old_price_is_named_even_when_no_config_uses_it(tmp_path):
    plan = {"plan": "own offers", "horizon_days": 7, "start_date": "2027-01-01", "catalogs": ["builtin"],
            "policy": {"providers": ["acme"], "tiers": ["on-demand"]},
            "offers": [{"id": "acme-h100", "accelerator": "h100-sxm", "provider": "acme", "gpus_per_node": 8,
                        "price_per_gpu_hour": {"on-demand": 3.0}, "as_of": "2026-09-15"},
                       {"id": "acme-b200", "accelerator": "b200", "provider": "acme", "gpus_per_node": 8,
                        "price_per_gpu_hour": {"on-demand": 5.0}, "as_of": "2026-09-15"}],
            "workloads": [{"name": "chat", "model": "llama-3.1-8b", "accelerators": ["h100-sxm"],
                           "tokens": {"input": 1000, "output": 200}, "slo": {"ttft_ms": 1000, "tpot_ms": 50},
                           "demand": {"peak_output_tokens_per_s": 1000}}]}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan), encoding="utf-8")
    res = runner.invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "acme-b200 (as_of 2026-09-15)" in text and "acme-h100 (as_of 2026-09-15)" in text
