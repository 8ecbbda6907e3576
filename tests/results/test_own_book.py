"""The book view of a plan with servers of your own, the buy decision's payback and NPV, and the one account of
what binds.

plans/owned-cluster.yaml owns 16 H100 servers and buys B200s. The book view is what the accounts carry:
depreciation of servers owned and bought plus opex, the cost of capital shown apart; by its definition
(docs/owned-hardware.md) book = all-in + owned depreciation − cost of capital. The identities below hold for
whatever plan the solve returns (nothing here rests on a wall-clock-limited optimum).
"""

from __future__ import annotations

import dataclasses

import pytest

from optimizer import formatting
from optimizer.results import decision
from optimizer.results.jsonio import from_dict, to_dict
from optimizer.results.own import book_by_workload, book_view, npv_per_unit

from tests.helpers import shipped
from tests.helpers.paths import PLANS


@pytest.fixture(scope="module")
def owned():
    result = shipped.solved(PLANS / "owned-cluster.yaml")
    return result, to_dict(result)


def test_book_is_all_in_plus_owned_depreciation_less_the_cost_of_capital(owned):
    result, d = owned
    own = result.own
    assert own is not None and own.owned
    b = book_view(result)
    assert b is not None
    dep_owned = sum(r.depreciation_in_horizon for r in own.owned)
    dep_bought = sum(x.depreciation_in_horizon for x in own.bought)
    capital = sum(x.capital_in_horizon for x in own.bought)
    assert dep_owned > 0
    assert b.depreciation_owned == pytest.approx(dep_owned, rel=1e-12)
    assert b.depreciation_bought == pytest.approx(dep_bought, rel=1e-12)
    assert b.cost_of_capital == pytest.approx(capital, rel=1e-12)
    assert b.all_in == pytest.approx(result.cost_all_in, rel=1e-12)
    assert b.total == pytest.approx(result.cost_all_in + dep_owned - capital, rel=1e-12)
    assert b.total == pytest.approx(b.depreciation_owned + b.depreciation_bought + b.opex, rel=1e-12)
    # opex: everything the all-in counts but bought servers' depreciation and capital (their support stays)
    assert b.opex == pytest.approx(result.cost_all_in - result.cost_by_tier.get("buy", 0.0)
                                   + sum(x.support_in_horizon for x in own.bought), rel=1e-9)
    # the JSON carries it, derived, to the micro-dollar
    j = d["book"]
    assert set(j) == {"depreciation_owned", "depreciation_bought", "opex", "cost_of_capital", "all_in", "total"}
    assert j["total"] == pytest.approx(d["cost"]["all_in"] + j["depreciation_owned"] - j["cost_of_capital"], abs=1e-5)
    assert j["all_in"] == pytest.approx(d["cost"]["all_in"], abs=1e-5)
    # read back, the same book
    again = book_view(from_dict(d))
    assert again is not None and again.total == pytest.approx(j["total"], abs=1e-5)


def test_a_plan_without_hardware_of_its_own_has_no_book_key(owned):
    result, d = owned
    plain = dataclasses.replace(result, own=None)
    assert book_view(plain) is None
    assert "book" not in to_dict(plain)


def test_each_workload_carries_its_owned_depreciation_and_the_rows_add_up_to_the_book(owned):
    """book_by_workload (what showback reads): owned servers' depreciation goes to the workloads that ran on them
    by GPU-hours, the unused part to the "" row; the rows' book adds up to the book view's total."""
    result, _ = owned
    rows = book_by_workload(result)
    b = book_view(result)
    assert set(rows) == {w.name for w in result.workloads} | {""}
    assert sum(r["book"] for r in rows.values()) == pytest.approx(b.total, rel=1e-9)
    assert sum(r["all_in"] for r in rows.values()) == pytest.approx(result.cost_all_in, rel=1e-9)
    assert sum(r["depreciation_owned"] for r in rows.values()) == pytest.approx(b.depreciation_owned, rel=1e-9)
    assert sum(r["cost_of_capital"] for r in rows.values()) == pytest.approx(b.cost_of_capital, rel=1e-9)
    owned_offers = {r.offer for r in result.own.owned}
    on_owned = [w for w in result.workloads if w.offer in owned_offers and w.gpu_hours_by_tier.get("owned")]
    assert on_owned, "the owned H100s serve a workload"
    dep = result.own.owned[0]
    held = dep.gpu_hours_used / dep.utilization
    for w in on_owned:
        want = dep.depreciation_in_horizon * w.gpu_hours_by_tier["owned"] / held
        assert rows[w.name]["depreciation_owned"] == pytest.approx(want, rel=1e-6)
        assert rows[w.name]["book"] > rows[w.name]["all_in"]
    for w in result.workloads:
        assert rows[w.name]["all_in"] == pytest.approx(w.cost + w.committed_cost, rel=1e-12)


def test_payback_and_npv_of_a_server_bought(owned):
    """payback = price ÷ the monthly saving; the NPV discounts that saving monthly at the cost of capital over
    the life, adds the residual and takes the price: both from one saving."""
    result, _ = owned
    bought = [x for x in result.own.bought if x.payback_months is not None]
    assert bought, "the plan buys B200 servers that pay back"
    for x in bought:
        inp = next(i for i in result.own.inputs if i.offer == x.offer)
        saving = inp.price_per_node / x.payback_months
        assert x.npv_per_unit == pytest.approx(
            npv_per_unit(inp.price_per_node, saving, inp.life_years, inp.residual_fraction, inp.cost_of_capital),
            rel=1e-9)
        # the closed form against the sum it stands for
        i, n = inp.cost_of_capital / 12, round(inp.life_years * 12)
        assert n == inp.life_years * 12
        summed = sum(saving / (1 + i) ** m for m in range(1, n + 1)) + inp.residual_fraction * inp.price_per_node \
            / (1 + i) ** n - inp.price_per_node
        assert x.npv_per_unit == pytest.approx(summed, rel=1e-9)
    assert npv_per_unit(100.0, 10.0, 1.0, 0.1, 0.0) == pytest.approx(10.0 * 12 + 10.0 - 100.0)


def test_one_account_of_what_binds(owned):
    """The issue's case: facility power binds (one more MW would save $251) while the racks are full but a rack
    more saves nothing. The Decision says power binds, says the racks are full and do not bind, and never says
    that nothing binds."""
    result, _ = owned
    f = result.own.facility
    case = dataclasses.replace(result, own=dataclasses.replace(result.own, facility=dataclasses.replace(
        f, binding=["power_kw"], marginal={"power_kw_plus_1000": 251.0, "racks_plus_1": 0.0}, racks=f.racks_used)))
    money = lambda v, nd=0: formatting.money(v, result.currency, nd)  # noqa: E731
    lines = decision.what_binds(case, money)
    assert decision.NOTHING_BINDS not in lines
    assert lines[-2:] == [f"facility power: {f.power_kw_used:,.0f} of {f.power_kw:,.0f} kW taken by servers; one "
                          f"more MW would save $251",
                          f"facility racks: {f.racks_used} of {f.racks_used} rack positions taken (full, but one more "
                          f"rack would save $0: it does not bind)"]
    said = [x.text for x in decision.decide(case, money).lines if x.what == "Binds"]
    assert said == lines
    # nothing binding and nothing full: one line that says so
    none = dataclasses.replace(result, binding=[], own=dataclasses.replace(result.own, facility=dataclasses.replace(
        f, binding=[], marginal={}, racks=None, power_kw=None)))
    assert decision.what_binds(none, money) == [decision.NOTHING_BINDS]
