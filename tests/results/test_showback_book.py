"""policy.showback: book (issue 46): the showback rows add up to the book view (book.total = all-in + owned
servers' depreciation − bought servers' cost of capital) instead of the all-in, to the cent, and a result file
whose rows do not is refused on read; the teams that ran on servers owned carry their depreciation.

plans/owned-cluster.yaml (owned H100s, B200s it may buy) is solved once with policy.showback: book; the default
basis and policy.idle: spread are the same arithmetic on that result (results.showback.rows). The identities hold
for whatever plan the solve returns."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from optimizer.errors import PlanError
from optimizer.pipeline import solve_plan
from optimizer.results import showback as sb
from optimizer.results.jsonio import dumps, read_result
from optimizer.results.own import book_by_workload, book_view

from tests.helpers.paths import PLANS
from tests.helpers.small_plans import interactive, offer, plan, write

CENT = 0.01


def total(rows) -> float:
    return sum(x.cost + x.committed_cost for x in rows)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """owned-cluster with policy.showback: book, through its JSON file."""
    d = tmp_path_factory.mktemp("book")
    y = YAML()
    data = y.load((PLANS / "owned-cluster.yaml").read_text(encoding="utf-8"))
    data["policy"]["showback"] = "book"
    with (d / "owned-book.yaml").open("w", encoding="utf-8") as f:
        y.dump(data, f)
    path = d / "owned-book.json"
    path.write_text(dumps(solve_plan(d / "owned-book.yaml")), encoding="utf-8")
    return path


def test_the_rows_add_up_to_the_book_view_to_the_cent(book):
    r = read_result(book)
    b = book_view(r)
    assert b is not None and b.depreciation_owned > 0
    assert r.policy["showback"] == "book" and sb.basis(r) == "book"
    assert total(r.showback) == pytest.approx(b.total, abs=CENT)
    assert b.total == pytest.approx(r.cost_all_in + b.depreciation_owned - b.cost_of_capital, abs=CENT)
    assert abs(b.total - r.cost_all_in) > 1000  # the two bases differ on this plan
    # tier by tier: the book's difference is its own two tiers; the rest is the all-in's tiers
    by_tier: dict[str, float] = {}
    for x in r.showback:
        by_tier[x.tier] = by_tier.get(x.tier, 0.0) + x.cost + x.committed_cost
    assert by_tier[sb.DEPRECIATION] == pytest.approx(b.depreciation_owned, abs=CENT)
    assert by_tier.get(sb.CAPITAL, 0.0) == pytest.approx(-b.cost_of_capital, abs=CENT)
    for tier, cost in r.cost_by_tier.items():
        assert by_tier.get(tier, 0.0) == pytest.approx(cost, abs=CENT)


@pytest.mark.parametrize("idle", ["separate", "spread"])
def test_each_basis_adds_up_to_its_own_total(book, idle):
    """The default basis adds up to the all-in; book to the book view; either way with idle separate or spread."""
    r = read_result(book)
    assert total(sb.rows(r, idle)) == pytest.approx(r.cost_all_in, abs=CENT)
    assert total(sb.rows(r, idle, book=True)) == pytest.approx(book_view(r).total, abs=CENT)
    if idle == "spread":
        assert not any(x.team == sb.IDLE for x in sb.rows(r, idle, book=True))


def test_the_workloads_on_owned_servers_carry_their_depreciation(book):
    r = read_result(book)
    parts = book_by_workload(r)
    dep: dict[str | None, float] = {}
    for x in r.showback:
        if x.tier == sb.DEPRECIATION:
            dep[x.workload] = dep.get(x.workload, 0.0) + x.cost
    on_owned = [w.name for w in r.workloads if parts[w.name]["depreciation_owned"] > 0]
    assert on_owned
    for name in on_owned:  # rows per workload: this plan names no team
        assert dep[name] == pytest.approx(parts[name]["depreciation_owned"], abs=CENT)
    assert dep.get(None, 0.0) == pytest.approx(parts[""]["depreciation_owned"], abs=CENT)  # held, not used
    spread = sb.rows(r, "spread", book=True)
    carried = sum(x.cost for x in spread if x.tier == sb.DEPRECIATION and x.workload in on_owned)
    assert carried == pytest.approx(book_view(r).depreciation_owned, abs=CENT)  # spread: all of it on its users
    teams = {x["workloads"][0]: x for x in r.showback_by_team() if x["workloads"]}
    for name in on_owned:
        assert teams[name]["book"] > 0 and teams[name]["all_in"] == pytest.approx(
            teams[name]["new"] + teams[name]["committed"] + teams[name]["book"])


def test_a_result_whose_rows_miss_the_book_is_refused(book, tmp_path):
    d = json.loads(book.read_text(encoding="utf-8"))
    d["policy"]["showback"] = "all_in"  # the rows add up to the book, the policy now says all-in
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(PlanError) as e:
        read_result(bad)
    assert "showback" in str(e.value) and "all-in" in str(e.value)
    d["policy"]["showback"] = "book"
    d["showback"][0]["cost"] += 1.0
    bad.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(PlanError) as e:
        read_result(bad)
    assert "book view" in str(e.value)


def test_without_servers_of_your_own_book_is_the_all_in(tmp_path):
    a, b = interactive("alpha", 500, team="t1", cost_center="CC-1"), interactive("beta", 200)
    path = write(tmp_path, plan([a, b], [offer("o", "gpu-a", m=8, on_demand=2.0)], tiers=["on-demand"],
                                showback="book"))
    r = solve_plan(path)
    assert r.own is None and sb.basis(r) == "all_in"
    assert total(r.showback) == pytest.approx(r.cost_all_in, abs=CENT)
    assert not any(x.tier in (sb.DEPRECIATION, sb.CAPITAL) for x in r.showback)
    assert sb.rows(r, "separate", book=True) == sb.rows(r, "separate") == r.showback
