"""Purchases: GPUs and GPU-hours per offer and tier, costed by formulas over Hourly and Assumptions."""

from __future__ import annotations

import datetime as dt

from optimizer import vocab
from optimizer.report.xlsx.assumptions import api_table
from optimizer.report.xlsx.cells import Sheet, ref, rng
from optimizer.report.xlsx.hourly import hourly_rows, row_days
from optimizer.report.xlsx.own import ownership
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult


def write_purchases(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    """cost = GPU-hours × price; reserved GPU-hours = GPUs × 24 × horizon days, on-demand and spot
    GPU-hours = Σ Hourly (GPUs × days) for the offer."""
    ws = sh.ws
    sh.widths([28, 12, 12, 13, 12, 11, 10, 14, 13, 16, 40])
    sh.text(0, 0, "Purchases: GPUs per offer and tier, and what they cost", "title")
    sh.intro(1, "Reserved GPUs are held all horizon; on-demand and spot GPUs are the most in use at one "
                  "hour, paid by the GPU-hour (see Hourly). Prices come from Assumptions.", 10, 2)
    head = 3
    sh.header(head, 0, ["Offer", "Provider", "Region", "Accelerator", "Tier", "GPUs", "GPUs per node",
                        "GPU-hours", "Price per GPU-hour", "Cost over the horizon", "Note"])
    ws.set_row(head, 30)
    rows = _purchase_rows(result)
    r = head
    od_gh, sp_gh = refs.hourly["od_gh"], refs.hourly["spot_gh"]
    hourly_offer = refs.hourly["offer"]
    for p in rows:
        r += 1
        sh.text(r, 0, p["offer"])
        sh.text(r, 1, p["provider"])
        sh.text(r, 2, p["region"])
        sh.text(r, 3, p["accelerator"])
        sh.text(r, 4, p["tier"])
        sh.num(r, 5, p["gpus"], num="int")
        sh.num(r, 6, p["gpus_per_node"], num="int")
        a = f"A{r + 1}"
        if p["tier"] == "buy":  # held from delivery; priced so the row is the offer's ownership share
            gh, price = _buy_row(result, p)
            sh.num(r, 7, gh, num="int")  # formulas once the Own hardware sheet is written (link_own)
            sh.num(r, 8, price, num="money2")
            refs.buy_rows.append((r, p["offer"], gh, price))
            cost = gh * price
            sh.calc(r, 9, f"H{r + 1}*I{r + 1}", cost, num="money0")
            p["cost_value"] = cost
            p["gh_value"] = gh
            sh.text(r, 10, "servers bought: GPUs × 24 × days in service; price = ownership share ÷ GPU-hours "
                           "(Own hardware)", "hint")
            continue
        if p["tier"] in vocab.RESERVED_TIERS and p["from_day"]:  # a later start: held from then to the end
            gh = p["gpus"] * 24 * (refs.horizon_days - p["from_day"])
            sh.calc(r, 7, f"F{r + 1}*24*({refs.horizon}-{p['from_day']})", gh, num="int")
        elif p["tier"] in vocab.RESERVED_TIERS:
            gh = p["gpus"] * 24 * refs.horizon_days
            sh.calc(r, 7, f"F{r + 1}*24*{refs.horizon}", gh, num="int")
        else:
            col = od_gh if p["tier"] == "on-demand" else sp_gh
            gh = p["hourly_gpu_hours"]
            sh.calc(r, 7, f'SUMIFS({col},{hourly_offer},"="&{a})', gh, num="int")
        held = refs.purchase_gh.get((p["offer"], p["tier"]))  # reservations starting on several days: their sum
        refs.purchase_gh[(p["offer"], p["tier"])] = (ref(sh.name, r, 7), gh) if held is None else \
            (f"({held[0]}+{ref(sh.name, r, 7)})", held[1] + gh)
        price_ref = refs.price.get((p["offer"], p["tier"]))
        price = p["price"]
        factor = _factor(p, gh) if result.scenarios else 1.0
        if factor != 1.0:  # scenarios that move hourly prices: the price paid, blended over them
            refs.price_factor[(p["offer"], p["tier"])] = factor
            price = p["price"] * factor
            sh.calc(r, 8, f"{price_ref or repr(p['price'])}*{factor!r}", price, num="money2")
        elif price_ref:
            sh.calc(r, 8, price_ref, price, num="money2")
        else:
            sh.num(r, 8, price, num="money2")
        cost = gh * price
        sh.calc(r, 9, f"H{r + 1}*I{r + 1}", cost, num="money0")
        p["cost_value"] = cost
        p["gh_value"] = gh
        note = ["estimated price (published discount policy)"] if p["estimated"] else []
        if p["start"]:
            note.append(f"starts {p['start']} (policy.reservation_starts): held from then to the horizon's end")
        if factor != 1.0:
            note.append(f"× {factor:.4f}: the scenarios' price factors, weighted by GPU-hours")
        sh.text(r, 10, "; ".join(note), "hint")
    first, last = head + 1, max(r, head + 1)
    for key, col in (("offer", 0), ("accelerator", 3), ("tier", 4), ("gpus", 5), ("gpu_hours", 7),
                     ("cost", 9)):
        refs.purchases[key] = rng(sh.name, first, last, col)
    refs.purchase_rows = rows
    r += 1
    total = sum(p["cost_value"] for p in rows)
    sh.text(r, 0, "Total GPU cost", "total")
    for c in range(1, 9):
        sh.text(r, c, "", "total")
    sh.calc(r, 9, f"SUM({rng(sh.name, first, last, 9)})" if rows else "0", total, "total", num="money0")
    for t in vocab.TIERS:
        g = vocab.TIER_GROUP[t]
        refs.tier_cost[g] = refs.tier_cost.get(g, 0.0) + sum(p["cost_value"] for p in rows if p["tier"] == t)
    r = api_table(sh, result, refs, r + 3)
    ws.freeze_panes(head + 1, 1)
    ws.autofilter(head, 0, max(last, head + 1), 10)
    sh.page(r, 10, header_rows=(head, head))


def _factor(p: dict, gh: float) -> float:
    """The price paid ÷ the list price on an on-demand or spot row (1 unless scenarios move the price)."""
    if p["tier"] not in ("on-demand", "spot") or not gh or not p["price"]:
        return 1.0
    f = p["result_cost"] / (gh * p["price"])
    return 1.0 if abs(f - 1.0) < 1e-9 else f


def _buy_row(result: PlanResult, p: dict) -> tuple[float, float]:
    """GPU-hours a buy row holds (GPUs × 24 × days from delivery) and the price per GPU-hour that makes it the
    offer's ownership share, computed as the formulas link_own writes compute them."""
    own = result.own
    x = next((x for x in own.inputs if x.offer == p["offer"]), None) if own is not None else None
    if x is not None:
        days = x.service_days
        share = ownership(x)[2]
    else:  # a result written before the inputs were kept
        b = next((b for b in own.bought if b.offer == p["offer"]), None) if own is not None else None
        days = float(result.horizon_days - (b.delivery_day if b else 0))
        share = sum(q.cost for q in result.purchases if q.offer == p["offer"] and q.tier == "buy")
    gh = p["gpus"] * 24 * days
    return gh, (share / gh if gh else 0.0)


def link_own(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    """After the Own hardware sheet: buy rows' GPUs, GPU-hours and price as formulas over its cells (days in
    service, units × GPUs per unit, the offer's ownership share)."""
    for r, offer, gh, price in refs.buy_rows:
        cells = refs.own_offer.get(offer)
        if cells is None:
            continue
        n = r + 1
        gpus = next(p["gpus"] for p in refs.purchase_rows if p["offer"] == offer and p["tier"] == "buy")
        sh.calc(r, 5, cells["gpus"], gpus, num="int")
        sh.calc(r, 7, f"F{n}*24*{cells['days']}", gh, num="int")
        sh.calc(r, 8, f"IF(H{n}=0,0,{cells['ownership'][0]}/H{n})", price, num="money2")


def _purchase_rows(result: PlanResult) -> list[dict]:
    """One row per (offer, tier, start); reserved levels bought per pool add up."""
    rows: dict[tuple[str, str, str], dict] = {}
    first = dt.date.fromisoformat(result.start_date) if result.start_date else None
    for p in result.purchases:
        k = (p.offer, p.tier, p.start or "")
        if k in rows:
            rows[k]["gpus"] += p.gpus
            rows[k]["result_cost"] += p.cost
            continue
        price = result.offers.get(p.offer, {}).get("prices", {}).get(p.tier, p.price_per_gpu_hour)
        rows[k] = {"offer": p.offer, "provider": p.provider, "region": p.region, "accelerator": p.accelerator,
                   "tier": p.tier, "gpus": p.gpus, "gpus_per_node": p.gpus_per_node, "price": float(price),
                   "estimated": p.price_estimated, "hourly_gpu_hours": _sum_rows(result, p.offer, p.tier),
                   "result_cost": p.cost, "start": p.start,
                   "from_day": (dt.date.fromisoformat(p.start) - first).days if p.start and first else 0}
    order = {t: i for i, t in enumerate(vocab.TIERS)}
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], order.get(k[1], 9), k[2]))]


def _sum_rows(result: PlanResult, offer: str, tier: str) -> float:
    """GPU-hours as SUMIFS over Hourly adds them: row by row, in the sheet's order."""
    total = 0.0
    for h in hourly_rows(result):
        if h.offer == offer and tier != "buy":
            g = h.on_demand_gpus if tier == "on-demand" else h.spot_gpus
            total += g * row_days(result, h)
    return total
