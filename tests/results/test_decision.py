"""The decision model (results.decision) from hand-made results: a proven item with no caveat is signed; an
estimated price, an unvalidated estimate or an unproven plan each hold the signature back and say why; the
`provisional` flag is written to and read back from the JSON. No solve: each result is a stored one, edited."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from optimizer.physics.validation import Validation
from optimizer.results import decision as D
from optimizer.results.jsonio import dumps, from_dict, read_result
from optimizer.results.types import Binding, BoughtRow, FacilityUse, OwnResult

from tests.helpers.paths import DATA

STORED = DATA / "results" / "35dde86-q1-with-commitments.json"
"""A proven plan (gap 0, mip_gap 0.1%) that signs 16 H200 reserved-1y for chat, on published prices."""


def money(v: float, nd: int = 0) -> str:
    return f"${v:,.{nd}f}"


@pytest.fixture(scope="module")
def proven():
    r = read_result(STORED)
    assert r.solver.gap == 0.0 and len(r.new_commitments) == 1
    return r


def unproven(r, gap: float | None = 0.232, status: str = "feasible"):
    return replace(r, status=status, solver=replace(r.solver, status=status, gap=gap))


UNVALIDATED = Validation("estimated", None, None, None, None, None, False)
"""What a result that wrote `calibrated: false` reads as (results.jsonio)."""


def uncalibrated(r, *names: str):
    return replace(r, workloads=[replace(w, validation=UNVALIDATED) if w.name in names else w for w in r.workloads])


def estimated_price(r):
    return replace(r, purchases=[replace(p, price_estimated=True) if p.tier == "reserved-1y" else p
                                 for p in r.purchases])


def test_a_proven_item_with_no_caveat_is_signed(proven):
    d = D.decide(proven, money)
    (item,) = d.items
    assert (item.action, item.offer, item.tier, item.gpus, item.status) == (
        "reserve", "coreweave-h200-sxm", "reserved-1y", 16, "sign")
    assert item.caveats == () and item.heading == "Sign"
    assert item.cost_over_term == proven.new_commitments[0].total_committed
    assert item.monthly == proven.new_commitments[0].monthly and item.start == "2027-01-01"
    assert d.provisional is None
    rows = d.rows()
    assert [r.what for r in rows] == ["Sign", "Spend", "Binds", "Hourly"]
    assert [r.topic for r in rows] == ["reserve", "spend", "binds", "hourly"]
    assert rows[0].text.startswith("16 GPUs of coreweave-h200-sxm reserved-1y at $4.73/GPU-hour")
    assert rows[0].caveats == () and rows[0].status == "sign"


def test_an_estimated_price_is_named_and_holds_the_signature_back(proven):
    (item,) = D.decide(estimated_price(proven), money).items
    assert [c.kind for c in item.caveats] == ["estimated_price"]
    assert item.status == "sign" and item.heading == "Check"
    assert item.caveats[0].text == "price is an estimate: no published reserved-1y price for coreweave-h200-sxm " \
                                   "(the catalog derives it)"


def test_an_unvalidated_estimate_names_the_workloads_on_that_capacity_only(proven):
    # chat runs on the H200 reservation; code-assistant runs on H100: not named under the H200 item
    (item,) = D.decide(uncalibrated(proven, "chat", "code-assistant"), money).items
    (c,) = item.caveats
    assert c.kind == "unvalidated_estimate" and c.workloads == ("chat",) and c.offer == "coreweave-h200-sxm"
    assert c.text == ("rests on an unvalidated estimate: chat on coreweave-h200-sxm (h200-sxm · fp8 · tp1, no "
                      "published result calibrates its generation and datatype)")
    assert item.heading == "Check"
    # a calibrated plan: nothing to name
    assert D.decide(uncalibrated(proven, "code-assistant"), money).items[0].caveats == ()


def test_the_validation_of_a_row_decides(proven):
    base = replace(proven.workload("chat"), offer="aws-trn2", kind="interactive", goodput_source="estimated")
    row = replace(base, validation=Validation("estimated", "trainium2/bf16/neuron/dense", "neuron", 0, None, None,
                                              False))
    assert D._unvalidated(row) == (True, "trainium2/bf16/neuron/dense", 0)
    row = replace(base, validation=Validation("estimated", "g", None, 14, -0.1, 0.1, True))
    assert D._unvalidated(row) == (False, None, None)
    assert D._unvalidated(replace(base, validation=UNVALIDATED)) == (True, None, None)
    # a measured config and an API-only workload rest on no estimate
    measured = Validation("measured", "g", None, 0, None, None, True)
    assert D._unvalidated(replace(base, goodput_source="measured", validation=measured))[0] is False
    assert D._unvalidated(replace(base, validation=UNVALIDATED, offer=None))[0] is False
    text = D.UnvalidatedEstimate(("llama-70b",), "aws-trn2", "trainium2/bf16/neuron/dense", 0).text
    assert text == "rests on an unvalidated estimate: llama-70b on aws-trn2 (trainium2/bf16/neuron/dense, 0 published points)"


def test_an_unproven_plan_is_provisional_everywhere_with_the_rerun(proven):
    r = unproven(uncalibrated(proven, "chat"))
    d = D.decide(r, money)
    (item,) = d.items
    assert item.status == "provisional" and item.heading == "Provisional"
    assert [c.kind for c in item.caveats] == ["provisional", "unvalidated_estimate"]
    text = item.caveats[0].text
    assert text.startswith("provisional: the search stopped at 23.20% of the bound (target 0.10%); rerun with ")
    assert "`planopt solve plans/q1-with-commitments.yaml --time-limit 300`" in text and text.endswith(" before signing")
    assert not any(row.what in ("Sign", "Buy", "Check") for row in d.rows())
    # no bound proven at all is unproven too; a gap at the target is proven
    assert "with no proven bound" in D.decide(unproven(proven, gap=None), money).items[0].caveats[0].text
    assert D.decide(unproven(proven, gap=0.001, status="optimal"), money).items[0].status == "sign"
    assert D.decide(unproven(proven, gap=0.001, status="feasible"), money).items[0].status == "sign"


def test_a_plan_that_reserves_nothing_is_not_signed_while_unproven(proven):
    none = replace(proven, new_commitments=[])
    first = D.decide(none, money).rows()[0]
    assert (first.what, first.text, first.caveats) == ("Sign", "no new reservation", ())
    row = D.decide(unproven(none), money).rows()[0]
    assert (row.what, row.status) == ("Provisional", "provisional")
    assert row.caveats[0].startswith("provisional: the search stopped at 23.20%")


def test_the_work_limit_is_named_in_the_rerun_when_the_policy_has_one(proven):
    r = unproven(replace(proven, policy={**proven.policy, "work_limit": 1000}))
    assert "policy.work_limit" in D.decide(r, money).provisional.text


def _bought(r, *, estimated: bool = False):
    b = BoughtRow("hgx-h200-buy", "h200-sxm", 2, 16, 8, "2027-01-01", "2027-02-15", 45, 600_000.0, 50_000.0,
                  40_000.0, 8_000.0, 2_000.0, 5_000.0, 0.7, 14.0, "coreweave-h200-sxm reserved-1y",
                  "order 2 × 8-GPU H200 nodes now (2027-01-01), delivered 2027-02-15; $600,000 at delivery")
    own = OwnResult([b], [], [], FacilityUse(None, 20.0, None, 2, False, 1.3), 600_000.0, 1.0, 0.0)
    offers = {**r.offers, "hgx-h200-buy": {"provider": "own", "estimated": {"buy": estimated}}}
    return replace(r, own=own, offers=offers)


def test_servers_bought_are_items_with_the_same_caveats(proven):
    d = D.decide(_bought(proven), money)
    buy = [x for x in d.items if x.action == "buy"]
    assert [(x.offer, x.gpus, x.nodes, x.cost_over_term, x.start, x.heading) for x in buy] == [
        ("hgx-h200-buy", 16, 2, 600_000.0, "2027-02-15", "Buy")]
    assert [(r.what, r.topic) for r in d.rows()][:2] == [("Sign", "reserve"), ("Buy", "buy")]
    (buy,) = [x for x in D.decide(_bought(proven, estimated=True), money).items if x.action == "buy"]
    assert [c.kind for c in buy.caveats] == ["estimated_price"] and buy.heading == "Check"
    (buy,) = [x for x in D.decide(unproven(_bought(proven)), money).items if x.action == "buy"]
    assert buy.heading == "Provisional"
    # a workload on the servers bought (its GPU-hours under buy) rests on them; one on reserved capacity does not
    chat = proven.workload("chat")
    on_servers = replace(chat, name="chat-owned", offer="hgx-h200-buy", gpu_hours_by_tier={"buy": 100.0},
                         validation=UNVALIDATED)
    r = replace(_bought(proven), workloads=[*proven.workloads, on_servers])
    (buy,) = [x for x in D.decide(r, money).items if x.action == "buy"]
    assert [(c.kind, c.workloads) for c in buy.caveats] == [("unvalidated_estimate", ("chat-owned",))]
    on_reserved = replace(on_servers, gpu_hours_by_tier={"reserved": 100.0, "on_demand": 5.0})
    r = replace(_bought(proven), workloads=[*proven.workloads, on_reserved])
    assert [x for x in D.decide(r, money).items if x.action == "buy"][0].caveats == ()


def test_reservation_use_informs_and_asks_for_a_check_only_below_break_even(proven):
    """Its use alone informs; against its break-even (price ÷ on-demand price) it asks for a check below it,
    and says when the offer's on-demand cap binds (on demand could not serve those hours)."""
    def with_use(utilization, break_even, binding=()):
        return replace(proven, binding=list(binding), new_commitments=[
            replace(n, utilization=utilization, break_even_utilization=break_even) for n in proven.new_commitments])

    (item,) = D.decide(with_use(0.59, None), money).items
    assert [(c.kind, c.text) for c in item.caveats] == [("reservation_use", "runs at 59% use over the horizon")]
    assert item.heading == "Sign"
    (item,) = D.decide(with_use(0.59, 0.5), money).items
    assert [c.text for c in item.caveats] == ["runs at 59% use; break-even 50%"] and item.heading == "Sign"
    (item,) = D.decide(with_use(0.59, 0.62), money).items
    assert [c.text for c in item.caveats] == [
        "runs at 59% use; break-even 62% — on demand would cost less for the hours it serves"]
    assert item.heading == "Check"
    offer = proven.new_commitments[0].offer
    cap = Binding("cap_on_demand", f"{offer} on-demand", "32 of 32 GPUs in use")
    (item,) = D.decide(with_use(0.59, 0.62, [cap]), money).items
    assert [c.text for c in item.caveats] == [
        "runs at 59% use; break-even 62% — its on-demand cap binds, so on demand cannot serve those hours"]


def test_provisional_is_written_read_back_and_absent_in_older_files_reads_false(proven, tmp_path):
    assert all(n.provisional is False for n in proven.new_commitments)  # an older file: no such key
    marked = D.marked(unproven(_bought(proven)))
    assert [n.provisional for n in marked.new_commitments] == [True]
    assert [b.provisional for b in marked.own.bought] == [True]
    d = json.loads(dumps(marked))
    assert [n["provisional"] for n in d["new_commitments"]] == [True]
    assert [b["provisional"] for b in d["own"]["bought"]] == [True]
    again = from_dict(d)
    assert again.new_commitments[0].provisional is True and again.own.bought[0].provisional is True
    # a proven result clears the flag; the same result marks the same way every time
    assert D.marked(replace(marked, solver=proven.solver, status="optimal")).new_commitments[0].provisional is False
    assert dumps(D.marked(unproven(proven))) == dumps(D.marked(unproven(proven)))


def test_the_same_result_gives_the_same_decision(proven):
    r = unproven(estimated_price(uncalibrated(proven, "chat")))
    assert D.decide(r, money) == D.decide(r, money)
