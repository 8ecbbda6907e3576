"""Console views (rich) of a PlanResult and of sizing results. Renders; never decides exit codes."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from optimizer import formatting, vocab
from optimizer.formatting import plural
from optimizer.report import labels as L
from optimizer.results.types import PlanResult

NAME_COLUMNS = frozenset({"workload", "pool", "choice", "offer", "accelerator", "provider", "region", "tier",
                          "scenario", "from", "to", "buy offer", "against", "config", "option", "id"})
"""Columns of names and ids. A console too narrow for a table folds them onto a second line instead of cutting
them with an ellipsis: a cut offer id names no offer."""


DECISION_STYLES = {"provisional": "bold red", "check": "bold yellow"}
"""A decision's heading, by its row's status: a provisional or caveated item stands out from a plain Sign."""


def overflow(column: str) -> str:
    """How a cell of this column gives way on a console too narrow for the table."""
    return "fold" if column in NAME_COLUMNS else "ellipsis"


def render_result(result: PlanResult) -> Group:
    cur = result.currency
    head = Text()
    head.append(f"{result.plan}\n", style="bold")
    if result.cost_committed:
        head.append(f"{formatting.money(result.cost_all_in, cur)} all-in over {result.horizon_days} days", style="bold green")
        head.append(f"  =  {formatting.money(result.cost_total, cur)} new spend + {formatting.money(result.cost_committed, cur)} "
                    "already committed\n")
        head.append(f"{formatting.money(result.cost_per_day, cur)} new spend per day")
    else:
        head.append(f"{formatting.money(result.cost_per_day, cur)} per day", style="bold green")
        head.append(f"  ·  {formatting.money(result.cost_total, cur)} over {result.horizon_days} days")
    if result.risk is not None:
        head.append(f"  ({L.risk_name(result)} over {plural(len(result.scenarios), 'scenario')})")
    gap = result.solver.gap
    gap_txt = "gap unknown" if gap is None else f"gap {gap:.2%}"
    head.append(f"\nstatus {result.status} ({result.solver.name}, {result.solver.seconds:.1f} s, {gap_txt})",
                style="dim")
    if result.commitments:
        head.append("\ncommitted: contracts signed before this plan, for the days they overlap the horizon (sunk: the "
                    "optimizer uses them first and does not count them as new spend)", style="dim")
    for note in result.notes:
        head.append(f"\nnote: {note}", style="yellow")

    decision = Table(title="Decision", title_justify="left", show_edge=False, show_header=False)
    decision.add_column("", style="bold")
    decision.add_column("")
    for row in L.decision_rows(result, lambda v, nd=0: formatting.money(v, cur, nd)):
        decision.add_row(Text(row.what, style=DECISION_STYLES.get(row.status, "")), row.text)
        for caveat in row.caveats:  # under the item, so nobody signs it without reading them
            decision.add_row("", Text(f"· {caveat}", style="red" if row.status == "provisional" else "yellow"))

    tiers = Table(title="Cost by tier", title_justify="left", show_edge=False)
    tiers.add_column("tier")
    tiers.add_column("horizon", justify="right")
    tiers.add_column("per day", justify="right")
    tiers.add_column("share", justify="right")
    tiers_total = L.tiers_total(result)
    if result.risk is not None and result.risk.measure != "expected":
        tiers.title = "Cost by tier (expected)"
    for k, v in result.cost_by_tier.items():
        share = v / tiers_total if tiers_total else 0.0
        tiers.add_row(vocab.COST_LABELS[k], formatting.money(v, cur), formatting.money(v / result.horizon_days, cur), f"{share:.0%}")

    wl = Table(title="Workloads (replicas and GPUs at each workload's own peak hour)", title_justify="left",
               show_edge=False)
    committed = bool(result.commitments)
    cols = ("workload", "pool", "choice", "goodput tok/s", "source", "base", "spare", "roll", "total",
            "GPUs at peak", "new spend/day") + (("committed/day",) if committed else ())
    for col in cols:
        wl.add_column(col, overflow=overflow(col),
                      justify="right" if col not in ("workload", "pool", "choice", "source") else "left")
    for w in result.workloads:
        choice = vocab.choice_label(w.offer, w.precision, w.tp, w.mig, w.kind, gpus=w.gpus_at_peak,
                                    api_share=w.api_share, layout=w.layout, engine=vocab.shown_engine(w.engine),
                                    shared=w.shared)
        if w.split:
            choice = L.split_words(w)
        r = w.replicas
        wl.add_row(w.name, w.pool, choice,
                   f"{w.goodput_output_tokens_per_s:,.0f}" if w.goodput_output_tokens_per_s and not w.split else "–",
                   (w.goodput_source + (f", {w.bound}-bound" if w.bound else "")) if w.kind != "reserve" else "–",
                   f"{r.base:,}", f"{r.spares:,}", f"{r.rollout:,}",
                   f"{r.total:,}", f"{w.gpus_at_peak:,}", formatting.money(w.cost / result.horizon_days, cur),
                   *((formatting.money(w.committed_cost / result.horizon_days, cur),) if committed else ()))
        for x in L.config_changes(w):  # a workload that moves: its config from each day it changes
            wl.add_row("", "", f"↳ from {x.start or x.period}: {x.config}", *([""] * (len(cols) - 3)), style="dim")
        if w.split and w.size_classes:  # split: by_size — the size classes the shares below are of
            wl.add_row("", "", "size classes (requests · input→output tokens): " + L.size_classes_text(w),
                       *([""] * (len(cols) - 3)), style="dim")
        for label, shares in w.split.items():  # each config that serves and its share of each size class
            x = w.split_configs.get(label)
            goodput = " / ".join(f"{g:,.0f}" for g in w.split_goodput.get(label, []))
            reps = (f"{x.replicas.base:,}", f"{x.replicas.spares:,}", f"{x.replicas.rollout:,}",
                    f"{x.replicas.total:,}") if x is not None else ("",) * 4
            wl.add_row("", "", f"↳ {label}: " + " / ".join(f"{z:.0%}" for z in shares) + " of each size class",
                       goodput, "", *reps, f"{w.split_gpus_at_peak.get(label, 0):,}",
                       formatting.money(x.cost / result.horizon_days, cur) if x is not None else "",
                       *(("",) if committed else ()), style="dim")
    if result.cost_idle > 0.005 or result.cost_idle_committed > 0.005:
        wl.add_row("bought, used by none", "", "GPU-hours no workload used at that hour", "", "", "", "", "", "", "",
                   formatting.money(result.cost_idle / result.horizon_days, cur),
                   *((formatting.money(result.cost_idle_committed / result.horizon_days, cur),) if committed else ()),
                   style="dim")

    pur = Table(title="Purchases", title_justify="left", show_edge=False)
    numeric = ("GPUs held", "GPUs at the busiest hour", "GPU-hours", "price/GPU-h", "horizon cost")
    for col in ("offer", "accelerator", "tier") + numeric:
        pur.add_column(col, overflow=overflow(col), justify="right" if col in numeric else "left")
    for p in result.purchases:
        est = "*" if p.price_estimated else ""
        held = p.tier.startswith("reserved") or p.tier == "buy"
        pur.add_row(p.offer, p.accelerator, p.tier, f"{p.gpus:,}" if held else "–", "–" if held else f"{p.gpus:,}",
                    f"{p.gpu_hours:,.0f}", f"{L.price_paid(result, p):,.2f}{est}", formatting.money(p.cost, cur))
    parts: list = [head, Text(""), decision, Text(""), tiers, *_scenarios(result), Text(""), wl, _peaks_note(result),
                   *_shared(result), Text(""), pur]
    if not result.purchases:
        parts.append(Text("  nothing to buy: every workload is served by an API or by capacity already committed",
                          style="dim"))
    if any(p.price_estimated for p in result.purchases):
        parts.append(Text("* estimated price (published discount policy), see the catalog", style="dim"))
    parts += _commitments(result)
    parts += _moves(result)
    parts += _own(result)
    parts += _changes(result)
    caps = L.caps_that_bind(result)  # goodput limits: the workload rows
    binds, full = L.facility_binds(result, lambda v, nd=0: formatting.money(v, cur, nd))
    if caps or binds or full:  # the Decision's Binds lines, in detail (results.decision.what_binds)
        parts.append(Text(""))
        parts.append(Text("What binds", style="bold"))
        for b in caps:
            parts.append(Text(f"  {b.family}: {b.what} — {b.detail}"))
        for line in binds + full:
            parts.append(Text(f"  {line}"))
    parts.append(Text(f"\n{plural(len(result.candidates), 'candidate config')} ({result.pruned} dominated pruned), "
                      f"{plural(len(result.dropped), 'option')} dropped; "
                      "`planopt explain PLAN --workload NAME` shows why", style="dim"))
    return Group(*parts)


def _shared(result: PlanResult) -> list:
    """Groups of workloads sharing GPUs (policy.share_pools), a line each."""
    if not result.shared_gpus:
        return []
    return [Text(""), Text("Shared GPUs (each GPU holds one replica of every workload of its group)", style="bold"),
            *(Text(f"  {line}") for line in L.shared_lines(result))]


def _scenarios(result: PlanResult) -> list:
    """Each scenario's cost had it come true, its hourly part and exposure, its regret; the risk measure and VSS."""
    if result.risk is None or not result.scenarios:
        return []
    cur = result.currency
    t = Table(title="Scenarios (reservations and servers bought are decided once; hourly capacity per scenario)",
              title_justify="left", show_edge=False)
    for col in ("scenario", "weight", "cost if it came true", "hourly part", "GPU-hours on hourly tiers", "regret"):
        t.add_column(col, overflow=overflow(col), justify="left" if col == "scenario" else "right")
    for row in result.scenarios:
        t.add_row(row.name, f"{row.weight:.0%}", formatting.money(row.cost_total, cur), formatting.money(row.cost_hourly, cur),
                  f"{row.shortfall_gpu_hours:,.0f}", L.regret_text(result, row.name, lambda v: formatting.money(v, cur)))
    lines = [Text(f"  {line}", style="dim") for line in L.risk_lines(result, lambda v, nd=0: formatting.money(v, cur, nd))]
    return [Text(""), t, *lines]


def _peaks_note(result: PlanResult) -> Text:
    """Why the Workloads GPUs do not add up to the Purchases: each workload peaks at its own hour."""
    at_peaks = sum(w.gpus_at_peak for w in result.workloads)
    by_hour: dict[tuple[str, str, int], int] = {}
    for p, s in L.by_period(result):
        by_hour[(p, s.day_type, s.hour)] = by_hour.get((p, s.day_type, s.hour), 0) + s.demand_gpus
    if not by_hour or len(result.workloads) < 2:
        return Text("")
    (_period, day, hour), busiest = max(by_hour.items(), key=lambda kv: (kv[1], kv[0]))
    if busiest == at_peaks:
        return Text("")
    return Text(f"  the workloads' own peaks add up to {plural(at_peaks, 'GPU')}; at the fleet's busiest hour "
                f"({day} {hour:02d}:00) they need {plural(busiest, 'GPU')} at once", style="dim")


def _commitments(result: PlanResult) -> list:
    """Committed vs new spend: contracts already signed, new reservations over their full term, expiries."""
    cur = result.currency
    parts: list = []
    if result.commitments:
        t = Table(title="Contracts already signed (sunk: used first, not in the plan's cost)", title_justify="left",
                  show_edge=False)
        for col in ("offer", "tier", "GPUs", "from", "to", "days in horizon", "spend in horizon", "used"):
            t.add_column(col, overflow=overflow(col),
                         justify="right" if col in ("GPUs", "days in horizon", "spend in horizon", "used") else "left")
        for c in result.commitments:
            used = c.gpu_hours_used / c.gpu_hours_in_horizon if c.gpu_hours_in_horizon else 0.0
            t.add_row(c.offer, c.tier, str(c.gpus), c.start, c.end, str(c.days_in_horizon),
                      formatting.money(c.spend_in_horizon, cur), f"{used:.0%}")
        parts += [Text(""), t]
    if result.new_commitments:
        t = Table(title="New reservations over their full term (the plan's cost counts this horizon's share)",
                  title_justify="left", show_edge=False)
        numeric = ("GPUs", "total committed", "per month", "this horizon", "used", "break-even", "covers",
                   "saving vs on-demand (horizon / term)")
        paid = any(n.payment not in (None, "no_upfront") for n in result.new_commitments)  # upfront options
        for col in ("offer", "tier", "GPUs", "term", "from", "last day", *(("payment",) if paid else ()),
                    "total committed", "per month", "this horizon", "used", "break-even", "covers",
                    "saving vs on-demand (horizon / term)"):
            t.add_column(col, overflow=overflow(col), justify="right" if col in numeric else "left")
        for n in result.new_commitments:
            pay = ((n.payment or "no_upfront").replace("_", " ")
                   + (f", {formatting.money(n.upfront, cur)} up front" if n.upfront else ""),) if paid else ()
            t.add_row(n.offer, n.tier, str(n.gpus), f"{n.term_days} days", n.start or "plan start", n.end_text, *pay,
                      formatting.money(n.total_committed, cur), formatting.money(n.monthly, cur),
                      formatting.money(n.horizon_share, cur), *_use(n, cur))
        parts += [Text(""), t]
        bases = list(dict.fromkeys(n.saving_basis for n in result.new_commitments if n.saving_basis))
        if bases:
            parts.append(Text("Saving and break-even against " + "; ".join(bases) + " (the full term at the "
                              "horizon's use)", style="dim"))
    parts += _spend_commitments(result)
    ending = [e for e in result.expiry if e.committed_gpus_ending or e.new_gpus_ending]
    if ending:
        line = Text("Reserved GPUs ending: ", style="dim")
        line.append("; ".join(f"{e.quarter} {e.committed_gpus_ending + e.new_gpus_ending} "
                              f"({formatting.money(e.monthly_ending, cur)}/month)" for e in ending), style="dim")
        parts.append(line)
    return parts


def _spend_commitments(result: PlanResult) -> list:
    """Spend commitments (Savings Plans, committed-use discounts): signed ones and new ones over their full term."""
    cur, parts = result.currency, []
    if result.spend_commitments:
        t = Table(title="Spend commitments already signed (sunk: cover on-demand use at their discount)",
                  title_justify="left", show_edge=False)
        numeric = ("per hour", "discount", "days in horizon", "spend in horizon", "on-demand covered", "used")
        for col in ("provider", "per hour", "term", "discount", "from", "to", "days in horizon", "spend in horizon",
                    "on-demand covered", "used"):
            t.add_column(col, overflow=overflow(col), justify="right" if col in numeric else "left")
        for c in result.spend_commitments:
            t.add_row(c.provider, formatting.money(c.usd_per_hour, cur, 2), c.term, f"{c.discount:.0%}", c.start, c.end,
                      str(c.days_in_horizon), formatting.money(c.spend_in_horizon, cur),
                      formatting.money(c.covered_on_demand, cur), f"{c.utilization:.0%}")
        parts += [Text(""), t]
    if result.new_spend_commitments:
        t = Table(title="New spend commitments over their full term (Savings Plans: $/hour of discounted spend; the "
                        "plan's cost counts this horizon's share)", title_justify="left", show_edge=False)
        numeric = ("per hour", "discount", "total committed", "per month", "this horizon", "on-demand covered", "used",
                   "break-even", "covers", "saving vs on-demand (horizon / term)")
        for col in ("provider", "per hour", "term", "discount", "from", "last day", "total committed", "per month",
                    "this horizon", "on-demand covered", "used", "break-even", "covers",
                    "saving vs on-demand (horizon / term)"):
            t.add_column(col, overflow=overflow(col), justify="right" if col in numeric else "left")
        for n in result.new_spend_commitments:
            t.add_row(n.provider, formatting.money(n.usd_per_hour, cur, 2), n.term, f"{n.discount:.0%}",
                      n.start or "plan start", n.end or f"after {n.term_days:,} days",
                      formatting.money(n.total_committed, cur), formatting.money(n.monthly, cur),
                      formatting.money(n.horizon_share, cur), formatting.money(n.covered_on_demand, cur), *_use(n, cur))
        parts += [Text(""), t]
    return parts


def _moves(result: PlanResult) -> list:
    """Each workload's move at a contract period's boundary (policy.moves), with its saving."""
    if not result.moves:
        return []
    t = Table(title="Moves (a workload changes offer or config where a contract period starts)", title_justify="left",
              show_edge=False)
    for col in ("workload", "from", "to", "date", "saving"):
        t.add_column(col, overflow=overflow(col), justify="right" if col == "saving" else "left")
    for m in result.moves:
        t.add_row(m.workload, m.from_config, m.to_config, m.date or m.period,
                  formatting.money(m.saving, result.currency))
    note = ("  saving: the GPU-hours after the move at the old offer's on-demand price, less what the plan pays for "
            "them where it moved (list prices, not a re-solve)")
    return [Text(""), t, Text(note, style="dim")]


def _use(n, cur: str) -> tuple[str, str, str, str]:
    """A new reservation's use, break-even, coverage and saving against on demand ("–" where the result has none)."""
    pct = lambda v: "–" if v is None else f"{v:.0%}"  # noqa: E731
    s = n.saving_vs_on_demand
    saving = "–" if not s else (f"{formatting.money(s['horizon'], cur)} / {formatting.money(s['full_term'], cur)}")
    return pct(n.utilization), pct(n.break_even_utilization), pct(n.coverage), saving


def _changes(result: PlanResult) -> list:
    b = result.baseline
    if b is None:
        return []
    cur = result.currency
    title = f"Changes against the baseline {b.file} (threshold {b.change_threshold:.1%} of a workload's cost)"
    if not b.changes:
        return [Text(""), Text(f"{title}: none; {plural(len(b.kept), 'workload')} kept {'its' if len(b.kept) == 1 else 'their'} choice", style="bold")]
    t = Table(title=title, title_justify="left", show_edge=False)
    for col in ("workload", "from", "to", "cost before", "cost after", "saving", "why"):
        t.add_column(col, overflow=overflow(col),
                     justify="right" if col in ("cost before", "cost after", "saving") else "left")
    for c in b.changes:
        saving = ("-" if c.saving < -0.5 else "") + formatting.money(abs(c.saving), cur)
        t.add_row(c.workload, c.from_label, c.to_label, formatting.money(c.cost_before, cur), formatting.money(c.cost_after, cur),
                  saving, c.reason)
    return [Text(""), t, Text(f"{plural(len(b.kept), 'workload')} kept {'its' if len(b.kept) == 1 else 'their'} choice", style="dim")]


def print_result(result: PlanResult, console: Console) -> None:
    console.print(render_result(result))


def _own(result: PlanResult) -> list:
    """Servers owned and bought: use, running cost, and where owning beats renting."""
    own = result.own
    if own is None:
        return []
    cur = result.currency
    out: list = []
    if own.owned or own.bought:
        t = Table(title="Servers of your own", title_justify="left", show_edge=False)
        for col in ("offer", "status", "units", "GPUs", "from", "use", "ownership", "energy and space"):
            t.add_column(col, overflow=overflow(col), justify="left" if col in ("offer", "status", "from") else "right")
        for r in own.owned:
            t.add_row(r.offer, "owned", str(r.nodes), str(r.gpus), f"day {r.in_service_day + 1}" if r.in_service_day
                      else "start", f"{r.utilization:.0%}", "sunk", formatting.money(r.running_in_horizon, cur))
        for b in own.bought:
            t.add_row(b.offer, "bought", str(b.nodes), str(b.gpus), b.delivery_date or f"day {b.delivery_day + 1}",
                      f"{b.utilization:.0%}", formatting.money(b.ownership_in_horizon, cur),
                      formatting.money(b.running_in_horizon, cur))
        out += [Text(""), t]
        book = L.book_line(result, lambda v, nd=0: formatting.money(v, cur, nd))
        if book:
            out.append(Text(f"  {book}", style="dim"))
        for b in own.bought:
            if b.npv_per_unit is not None:
                out.append(Text(f"  {b.offer}: NPV per unit over its life against {b.alternative} "
                                f"{formatting.money(b.npv_per_unit, cur)} at {b.utilization:.0%} use", style="dim"))
    if own.break_even:
        t = Table(title="Break-even: owning against renting at this plan's prices", title_justify="left",
                  show_edge=False)
        for col in ("buy offer", "own/GPU-h", "against", "price/GPU-h", "owning wins at use"):
            t.add_column(col, overflow=overflow(col),
                         justify="right" if col in ("own/GPU-h", "price/GPU-h") else "left")
        for b in own.break_even:
            t.add_row(b.offer, f"{b.fixed_per_gpu_hour:,.2f} + {b.serving_energy_per_gpu_hour:,.2f}/used",
                      f"{b.against} {b.tier}", f"{b.price_per_gpu_hour:,.2f}", break_even_text(b))
        out += [Text(""), t]
    return out


def break_even_text(b) -> str:
    if b.wins_from is None:
        return "never"
    if b.wins_from <= 0 and b.wins_to >= 1:
        return "any"
    if b.wins_from <= 0:
        return f"up to {b.wins_to:.0%}"
    return f"from {b.wins_from:.0%}"
