"""planopt compare with spend commitments (savings plans): a new one's full term beside the new reservations',
its horizon share in the bridge's new-commitments step, a signed one's spend in roll-off with the signed
reservations'; JSON, console and HTML list each side's new spend commitments.

The quarter of tests/helpers/commitments.py: 100 tok/s per 1-GPU replica, a demand of 100·k tok/s needs k GPUs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.pipeline import SolveOptions, solve_plan
from optimizer.results.compare import BRIDGE_PARTS, compare
from optimizer.results.jsonio import dumps
from tests.helpers.commitments import H100, OD, chat, quarter
from tests.helpers.small_plans import offer, write
from tests.helpers.solving import NO_TIME_LIMIT

PROVIDER = f"prov-{H100}"
SIGNED_U = 40.0  # $/hour until 2026-11-14: 45 days of the quarter
SP = {"provider": PROVIDER, "term": "1y", "discount": 0.3, "source": "https://aws.amazon.com/savingsplans/compute-pricing/"}
SIGNED = {"provider": PROVIDER, "usd_per_hour": SIGNED_U, "term": "1y", "discount": 0.3,
          "start": "2025-11-15", "end": "2026-11-14"}


def _data(gpus: float, savings: bool, signed: bool) -> dict:
    data = quarter([chat(gpus)], tiers=["on-demand"], reservation_starts="plan_start")
    data["offers"] = [offer(H100, "h100-sxm", on_demand=OD)]
    data["savings_plans"] = [SP] if savings else []
    data["spend_commitments"] = [SIGNED] if signed else []
    return data


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp-spend")
    out = {}
    for name, args in {"plain": (16, False, False), "signed": (16, False, True), "new": (20, True, False)}.items():
        (d / name).mkdir()
        r = solve_plan(write(d / name, _data(*args)), SolveOptions(alternatives=0, time_limit_s=NO_TIME_LIMIT))
        assert r.status == "optimal"
        (d / f"{name}.json").write_text(dumps(r), encoding="utf-8")
        out[name] = r
    out["dir"] = d
    return out


def _adds_up(c) -> None:
    assert sum(getattr(c.bridge, k) for k in BRIDGE_PARTS) == pytest.approx(c.all_in.change, abs=1e-6)


def test_a_signed_spend_commitment_that_rolls_off_is_roll_off(results):
    """A runs a signed $40/hour for 45 days, B has none: roll-off is −$40 × 24 × 45, committed spend both ways."""
    a, b = results["signed"], results["plain"]
    c = compare(a, b)
    assert c.bridge.roll_off == pytest.approx(-SIGNED_U * 24 * 45, abs=1e-6)
    assert c.committed.a == pytest.approx(SIGNED_U * 24 * 45, abs=1e-6) and c.committed.b == 0
    assert c.bridge.new_commitments == pytest.approx(0.0, abs=1e-9)
    _adds_up(c)
    _adds_up(compare(b, a))


def test_a_new_spend_commitment_is_a_new_commitment_with_its_full_term(results):
    a, b = results["plain"], results["new"]
    n, = b.new_spend_commitments
    c = compare(a, b)
    assert c.bridge.new_commitments == pytest.approx(n.horizon_share, abs=1e-6)
    assert c.full_term.a == 0 and c.full_term.b == pytest.approx(n.total_committed, abs=1e-6)
    assert c.by_tier["savings_plan"].b == pytest.approx(b.cost_by_tier["savings_plan"], abs=1e-9)
    assert c.bridge.price == pytest.approx(0.0, abs=1e-6)  # the same catalog: no price moved
    _adds_up(c)
    back = compare(b, a)
    assert back.bridge.new_commitments == pytest.approx(-n.horizon_share, abs=1e-6)
    _adds_up(back)
    same = compare(b, b).bridge
    assert all(abs(getattr(same, k)) < 1e-6 for k in BRIDGE_PARTS)
    d = c.to_dict()
    s, = d["new_spend_commitments"]["b"]
    assert d["new_spend_commitments"]["a"] == []
    assert (s["provider"], s["term"], s["start"], s["end"]) == (PROVIDER, "1y", n.start, n.end)
    assert s["usd_per_hour"] == pytest.approx(n.usd_per_hour, abs=1e-6)
    assert d["cost"]["new_commitments_full_term"]["b"] == pytest.approx(n.total_committed, abs=0.01)


def test_console_and_html_list_the_savings_plan_to_sign(results):
    d, n = results["dir"], results["new"].new_spend_commitments[0]
    page = d / "cmp.html"
    r = CliRunner().invoke(app, ["compare", str(d / "plain.json"), str(d / "new.json"), "--html", str(page)])
    assert r.exit_code == 0, r.output
    dollars = f"${n.usd_per_hour:,.2f}/hour"
    for text in (f"{PROVIDER} savings plan", dollars, "savings plan"):
        assert text in r.stdout
    html = page.read_text(encoding="utf-8")
    assert f"{PROVIDER} savings plan" in html and dollars in html
    j = CliRunner().invoke(app, ["compare", str(d / "plain.json"), str(d / "new.json"), "--json"])
    assert j.exit_code == 0, j.output
    assert json.loads(j.stdout)["new_spend_commitments"]["b"][0]["provider"] == PROVIDER
