"""Workloads: the choice, memory per replica, and the replica arithmetic as formulas."""

from __future__ import annotations

from dataclasses import dataclass, replace

from xlsxwriter.utility import xl_col_to_name

from optimizer.report import labels as L
from optimizer.report.xlsx.cells import (
    Sheet,
    ceil_clean,
    ceil_formula,
    cell,
    excel_round,
    ref,
    rng,
)
from optimizer.report.xlsx.refs import Refs
from optimizer.results.types import PlanResult
from optimizer.vocab import RESERVED_TIERS

W_HEAD = ["Workload", "Pool", "Kind", "Model", "Offer", "Accelerator", "Precision", "Config", "GPUs per replica",
          "Goodput (output tok/s per replica)", "Goodput source", "Goodput bound by",
          "Memory", "Weights", "KV per sequence (every GPU's copy)", "Reserve", "Free for KV", "Sequences that fit",
          "Sequences needed",
          "Peak hour", "Peak demand (output tok/s)", "Sent to API at the peak (tok/s)", "Base replicas", "Spares",
          "Rollout", "Total replicas", "GPUs needed at its peak", "GPUs in the fleet at its peak",
          "GPU-hours of work", "… on reserved", "… on on-demand",
          "… on spot (paid: with the hours interruptions take, so above its work)", "… on contracts signed before",
          "Share of its output tokens sent to the API", "Cost over the horizon (tiers it used + API)", "Cost per day",
          "Committed spend it used (sunk)", "Note"]
OWN_HEAD = ["… on servers bought", "… on servers owned"]
"""After "… on contracts signed before", when the plan has servers of its own."""

KEYS = ["name", "pool", "kind", "model", "offer", "acc", "prec", "config", "gpr", "goodput", "source", "bound", "mem",
        "weights", "kv", "reserve", "free", "fit", "need", "peak_at", "peak", "api", "base", "spares", "rollout",
        "total", "gpus", "fleet", "gh", "gh_res", "gh_od", "gh_spot", "gh_com", "share", "cost", "per_day",
        "committed", "note"]
WIDTHS = [18, 10, 9, 15, 20, 9, 8, 11, 8, 10, 9, 10, 7, 7, 7, 7, 7, 8, 8, 14, 11, 11, 8, 7, 7, 8, 8, 9, 12, 11, 11,
          11, 11, 9, 14, 11, 13, 44]


def _layout(own: bool) -> tuple[list[str], list[str], list[float]]:
    """The sheet's column keys, headers and widths: with servers of your own, two more GPU-hour columns."""
    if not own:
        return KEYS, W_HEAD, WIDTHS
    i = KEYS.index("gh_com") + 1
    return KEYS[:i] + ["gh_buy", "gh_own"] + KEYS[i:], W_HEAD[:i] + OWN_HEAD + W_HEAD[i:], WIDTHS[:i] + [11, 11] + WIDTHS[i:]


C = {name: i for i, name in enumerate(KEYS)}
"""Column of each key; write_workloads sets it for the result being written."""


def _groups() -> list[tuple[int, int, str]]:
    return [(0, C["bound"], "Choice"), (C["mem"], C["need"], "Memory per replica (GB)"),
            (C["peak_at"], C["fleet"], "Sizing at the peak hour: base = ⌈(peak − API) ÷ (goodput × occupancy)⌉"),
            (C["gh"], C["note"], "Over the horizon: each GPU-hour it used at the rate of its tier")]


def _col(key: str, row: int) -> str:
    return f"{xl_col_to_name(C[key])}{row + 1}"


def write_workloads(sh: Sheet, result: PlanResult, refs: Refs) -> None:
    ws = sh.ws
    keys, heads, widths = _layout(result.own is not None)
    C.clear()
    C.update({k: i for i, k in enumerate(keys)})
    sh.widths(widths)
    sh.text(0, 0, "Workloads: what each one runs on, why it fits, and how many replicas", "title")
    sh.intro(1, "Replicas at each workload's peak hour: base = ⌈(peak − sent to API) ÷ (goodput × occupancy)⌉, "
                  "rollout = ⌈rollout share × (base + spares)⌉ (quotients rounded to 4 decimals first). They "
                  "follow occupancy, spares and rollout on Assumptions; the fleet's GPUs (grey) do not. Cost: hour by "
                  "hour a pool's GPUs are served by contracts signed before, then reserved, then spot, then "
                  "on-demand, shared by GPUs; each GPU-hour a workload used is charged its tier's rate (reserved: "
                  "the offer's reservations over the GPU-hours they hold), plus its API cost. GPUs bought and "
                  "used by no workload at that hour are their own line.", 18, 3)
    for a, b, label in _groups():
        ws.merge_range(2, a, 2, b, "", sh.fmt("group"))
        sh.text(2, a, label, "group")
    head = 3
    sh.header(head, 0, heads)
    ws.set_row(head, 45)
    daily = _daily_columns(result, refs, len(keys))
    if daily:  # the solve's GPU-hours a day of each day type, beside the table: what the GPU-hour formulas read
        a, b = min(daily.values()), max(daily.values())
        if a < b:
            ws.merge_range(2, a, 2, b, "", sh.fmt("group"))
        sh.text(2, a, "GPU-hours a day by day type (the solve's): × the days on Assumptions = the GPU-hours", "group")
        for (t, d), c in daily.items():
            sh.text(head, c, f"{DAILY_LABEL[t]} a day: {d}", "head")
            ws.set_column(c, c, 12)
    occ, spares, roll = refs.policy["occupancy"], refs.policy["spares"], refs.policy["rollout_fraction"]
    pol = result.policy
    first = head + 1
    last = head + max(len(result.workloads), 1)
    P = refs.purchases
    offers = {w.offer for w in result.workloads if w.offer} \
        | {x.offer for w in result.workloads for x in w.split_configs.values() if x.offer}
    reserved_rate = {o: _reserved_rate(refs.purchase_rows, o) for o in offers}
    total_cost = 0.0
    r = head
    blocks = _split_blocks(result, last + 2)  # split workloads' configs, below the Total row
    end, split_values = _write_split_blocks(sh, result, refs, blocks, heads, reserved_rate, first, daily)
    for w in result.workloads:
        r += 1
        block = blocks.get(w.name)
        if block is None:
            value, com_v, _gh = _row(sh, result, refs, r, w, reserved_rate, daily=daily)
        else:
            value, com_v = _split_row(sh, result, refs, r, w, block, split_values[w.name])
        total_cost += value
        refs.workload_cells[w.name] = ((ref(sh.name, r, C["cost"]), value),
                                       (ref(sh.name, r, C["committed"]), com_v) if com_v else ("0", 0.0))
    # GPU-hours bought that no workload used at that hour have no workload to be charged to: show them.
    r += 1
    idle_v = sum(refs.tier_cost.values()) + (refs.api_total[1] if refs.api_total else 0.0) - total_cost
    sh.text(r, 0, "Not used by any workload")
    rows = [(first, last)] + [(b.config_rows[0], b.config_rows[-1]) for b in blocks.values()]  # split: its configs
    computed = None if result.own is not None else _idle_formula(result, refs, rows)
    if computed is not None:  # tier by tier at each offer: GPU-hours bought − used, at the rate paid
        sh.calc(r, C["cost"], computed[0], computed[1], num="money0")
        idle_v = computed[1]
    else:  # servers of your own: their idle energy and space have no GPU-hour column to be computed from
        sh.calc(r, C["cost"], f"{refs.tiers_name}-SUM({rng(sh.name, first, last, C['cost'])})", idle_v,
                num="money0")
    sh.calc(r, C["per_day"], f"{_col('cost', r)}/{refs.horizon}", idle_v / refs.horizon_days, num="money0")
    sh.text(r, C["note"], "GPU-hours bought that no workload used at that hour: reserved GPUs off-peak, the rest of "
                          "whole on-demand and spot nodes, spot bought as insurance against interruption", "note")
    com_idle = 0.0
    if result.commitments:
        com_idle = result.cost_committed - sum(
            w.gpu_hours_by_tier.get("committed", 0.0) * refs.committed_rate.get(w.offer or "", 0.0)
            for w in result.workloads if w.offer)
        S, W = refs.signed, rng(sh.name, first, last, C["offer"])
        gh_com = rng(sh.name, first, last, C["gh_com"])
        parts = []
        for o in sorted({c.offer for c in result.commitments}):  # each offer's signed GPU-hours nobody used
            held = f'SUMIFS({S["gh"]},{S["offer"]},"{o}")'
            parts.append(f'IF({held}=0,0,({held}-SUMIFS({gh_com},{W},"{o}"))*SUMIFS({S["spend"]},{S["offer"]},"{o}")'
                         f'/{held})')
        sh.calc(r, C["committed"], "+".join(parts), com_idle, num="money0")
    refs.workload_cells[""] = ((ref(sh.name, r, C["cost"]), idle_v),
                               (ref(sh.name, r, C["committed"]), com_idle) if result.commitments else ("0", 0.0))
    total_cost += idle_v
    r += 1
    sh.text(r, 0, "Total", "total")
    for c in range(1, C["cost"]):
        sh.text(r, c, "", "total")
    sh.calc(r, C["cost"], f"SUM({rng(sh.name, first, r - 1, C['cost'])})", total_cost, "total", num="money0")
    sh.calc(r, C["per_day"], f"{_col('cost', r)}/{refs.horizon}", total_cost / refs.horizon_days, "total",
            num="money0")
    if result.commitments:
        sh.calc(r, C["committed"], f"SUM({rng(sh.name, first, r - 1, C['committed'])})",
                refs.committed[1] if refs.committed else 0.0, "total", num="money0")
    else:
        sh.text(r, C["committed"], "", "total")
    # an edited occupancy, spare or rollout that needs more GPUs than the fleet holds turns red
    needed, fleet = rng(sh.name, first, last, C["gpus"]), rng(sh.name, first, last, C["fleet"])
    refs.sizing = {"needed": needed, "fleet": fleet}
    ws.conditional_format(first, C["gpus"], last, C["gpus"], {
        "type": "formula", "criteria": f"=AND(ISNUMBER({_col('gpus', first)}),{_col('gpus', first)}>"
                                       f"{_col('fleet', first)})",
        "format": sh.fmt("short")})
    ws.freeze_panes(head + 1, 1)
    sh.page(max(r, end), C["note"], header_rows=(2, head))
    # two pages wide: the choice and memory, then the sizing and cost, each with the workload names
    ws.fit_to_pages(0, 0)
    ws.set_print_scale(52)
    ws.set_v_pagebreaks([C["peak_at"]])
    ws.repeat_columns(0, 0)


def _idle_formula(result: PlanResult, refs: Refs, rows: list[tuple[int, int]]) -> tuple[str, float] | None:
    """What no workload used, computed: at each offer and rented tier, (GPU-hours bought on Purchases − the
    workloads' GPU-hours on it) × what the tier costs per GPU-hour bought (reservations of an offer pooled, as
    their rate is). `rows`: the row ranges that use GPU-hours — the workloads', and each split workload's
    config rows (its own row says "N configs"). None when there is nothing bought to compute from."""
    P = refs.purchases
    used_by: dict[str, list] = {}  # offer → what uses GPU-hours there: a workload, or a split workload's config
    for w in result.workloads:
        for x in (w.split_configs.values() if w.split and w.split_configs else (w,) if w.offer else ()):
            used_by.setdefault(x.offer, []).append(x)
    parts, value = [], 0.0
    groups = (("gh_res", RESERVED_TIERS), ("gh_od", ("on-demand",)), ("gh_spot", ("spot",)))
    for o in sorted({p["offer"] for p in refs.purchase_rows}):
        for col, tiers in groups:
            mine = [p for p in refs.purchase_rows if p["offer"] == o and p["tier"] in tiers]
            if not mine:
                continue
            cost_f = "+".join(f'SUMIFS({P["cost"]},{P["offer"]},"{o}",{P["tier"]},"{t}")' for t in tiers)
            held_f = "+".join(f'SUMIFS({P["gpu_hours"]},{P["offer"]},"{o}",{P["tier"]},"{t}")' for t in tiers)
            used_f = "+".join(f'SUMIFS({rng("Workloads", a, b, C[col])},{rng("Workloads", a, b, C["offer"])},"{o}")'
                              for a, b in rows)
            parts.append(f"IF(({held_f})=0,0,(({held_f})-({used_f}))*({cost_f})/({held_f}))")
            held = sum(p["gh_value"] for p in mine)
            cost = sum(p["cost_value"] for p in mine)
            tier = {"gh_res": "reserved", "gh_od": "on_demand", "gh_spot": "spot"}[col]
            used = sum(x.gpu_hours_by_tier.get(tier, 0.0) for x in used_by.get(o, []))
            value += (held - used) * cost / held if held else 0.0
    if not parts:
        return None
    return "+".join(parts), value


def _row(sh: Sheet, result: PlanResult, refs: Refs, r: int, w, reserved_rate: dict[str, float],
         peak: tuple[str, float] | None = None, goodput: tuple[str, float] | None = None,
         config: bool = False, daily: dict[tuple[str, str], int] | None = None
         ) -> tuple[float, float, dict[str, float]]:
    """One workload's row (or, `config`, one config of a split workload, its peak and goodput given as
    formulas): the choice, memory, replica arithmetic and cost; returns its cost, committed spend and GPU-hours
    by tier (as its cells compute them)."""
    occ, spares, roll = refs.policy["occupancy"], refs.policy["spares"], refs.policy["rollout_fraction"]
    pol = result.policy
    P = refs.purchases
    sized = w.kind == "interactive" and w.offer is not None and w.goodput_output_tokens_per_s > 0
    texts = {"name": w.name, "pool": w.pool, "kind": w.kind, "model": w.model or "–", "offer": w.offer or "",
             "acc": w.accelerator or "–", "prec": w.precision or "–", "config": L.config_label(w),
             "source": w.goodput_source if w.kind != "reserve" else "–", "bound": w.bound or "–",
             "peak_at": f"{w.peak_day_type} {w.peak_hour:02d}:00" if sized else "–"}
    for k, v in texts.items():
        sh.text(r, C[k], v)
    sh.num(r, C["gpr"], w.gpus_per_replica, num="dec2")
    has_mem = w.offer is not None and w.kind != "reserve" and not config
    if goodput is not None:  # a split workload's config: its goodput over the traffic it serves (size classes)
        sh.calc(r, C["goodput"], goodput[0], goodput[1], num="int")
    else:
        sh.num(r, C["goodput"], w.goodput_output_tokens_per_s if has_mem else None, num="int")
    for k, v, nf in (("mem", w.total_gb, "dec1"), ("weights", w.weights_gb, "dec1"), ("kv", w.kv_gb_per_seq, "dec3"),
                     ("reserve", w.reserve_gb, "dec1"), ("free", w.free_gb, "dec1"),
                     ("fit", w.kv_concurrency, "int"), ("need", w.needed_concurrency, "int")):
        sh.num(r, C[k], v if has_mem else None, num=nf)
    note = L.sizing_note(w)
    api_peak = 0.0
    if sized:
        api_peak = excel_round(w.hourly_api_tokens_per_s.get(w.peak_day_type, [0.0] * 24)[w.peak_hour], 3) \
            if w.hourly_api_tokens_per_s else 0.0
        if peak is not None:  # a split workload's config: the workload's peak × its share of the output tokens
            sh.calc(r, C["peak"], peak[0], peak[1], num="int")
        else:
            _peak(sh, r, w, refs)
        sh.num(r, C["api"], api_peak, num="int")
        said, needed_v = _replica_formulas(sh, r, w, api_peak, float(pol.get("occupancy", 1.0)),
                                           int(pol.get("spares", 0)), float(pol.get("rollout_fraction", 0.0)),
                                           occ, spares, roll)
        note = said or note
    else:
        sh.num(r, C["peak"], None)
        sh.num(r, C["api"], None)
        for k, v in (("base", w.replicas.base), ("spares", w.replicas.spares), ("rollout", w.replicas.rollout),
                     ("total", w.replicas.total)):
            sh.num(r, C[k], v if w.offer else None, num="int")
        needed_v = w.gpus_at_peak if w.offer else None
        sh.num(r, C["gpus"], needed_v, num="int")
    sh.num(r, C["fleet"], w.gpus_at_peak, num="int")
    if not config:  # a split workload's row counts its configs' GPUs
        refs.sizing_values.append((needed_v, w.gpus_at_peak))
    sh.num(r, C["gh"], w.gpu_hours, num="int")
    sh.num(r, C["share"], w.api_share, num="pct")
    # cost: each tier's GPU-hours at its rate, + the workload's API cost
    gh = dict(w.gpu_hours_by_tier)
    for k, t in (("gh_res", "reserved"), ("gh_od", "on_demand"), ("gh_spot", "spot"), ("gh_com", "committed"),
                 ("gh_buy", "buy"), ("gh_own", "owned")):
        if k not in C:
            continue
        live = (_by_days(result, refs, w.gpu_hours_by_day_type.get(t), sh, r, t, daily or {})
                if w.offer and t in SCALED else None)
        if live is not None:  # each day type's GPU-hours × its days on Assumptions ÷ the days solved
            formula, gh[t] = live
            sh.calc(r, C[k], formula, gh[t], num="int")
        else:
            sh.num(r, C[k], gh.get(t, 0.0) if w.offer else None, num="int")
    parts, value = [], 0.0
    if w.offer:
        o = _col("offer", r)
        if gh.get("reserved"):
            sums = [(f'SUMIFS({P["cost"]},{P["offer"]},"="&{o},{P["tier"]},"{t}")',
                     f'SUMIFS({P["gpu_hours"]},{P["offer"]},"="&{o},{P["tier"]},"{t}")') for t in RESERVED_TIERS]
            cost_f, gh_f = "+".join(c for c, _ in sums), "+".join(g for _, g in sums)
            parts.append(f'IF(({gh_f})=0,0,{_col("gh_res", r)}*({cost_f})/({gh_f}))')
            value += gh["reserved"] * reserved_rate[w.offer]
        for k, t, tier in (("gh_od", "on_demand", "on-demand"), ("gh_spot", "spot", "spot")):
            if gh.get(t):
                price = refs.price.get((w.offer, tier))
                v = _price(result, w.offer, tier)
                factor = refs.price_factor.get((w.offer, tier), 1.0)
                if factor != 1.0:  # scenarios that move the price: the offer's blend of them (Purchases)
                    parts.append(f'{_col(k, r)}*{price or repr(v)}*{factor!r}')
                    value += gh[t] * v * factor
                else:
                    parts.append(f'{_col(k, r)}*{price or repr(v)}')
                    value += gh[t] * v
    if w.offer and result.own is not None:
        own_parts, own_v = _own_cost(result, w, r, refs)
        parts += own_parts
        value += own_v
    if w.name in refs.api_cost and not config:
        cell, v = refs.api_cost[w.name]
        parts.append(cell)
        value += v
    sh.calc(r, C["cost"], "+".join(parts) or "0", value, num="money0")
    sh.calc(r, C["per_day"], f'{_col("cost", r)}/{refs.horizon}', value / refs.horizon_days, num="money0")
    com_v = gh.get("committed", 0.0) * refs.committed_rate.get(w.offer or "", 0.0)
    if com_v:
        S = refs.signed
        held = f'SUMIFS({S["gh"]},{S["offer"]},"="&{_col("offer", r)})'
        sh.calc(r, C["committed"], f'IF({held}=0,0,{_col("gh_com", r)}*SUMIFS({S["spend"]},{S["offer"]},"="&'
                                   f'{_col("offer", r)})/{held})', com_v, num="money0")
    else:
        sh.num(r, C["committed"], 0.0 if result.commitments else None, num="money0")
    sh.text(r, C["note"], note, "note")
    sh.fit_row(r, note, 44)
    return value, com_v, gh


# --- split workloads: each config's row, and the size classes its share of the traffic follows -----------------


@dataclass
class _Block:
    """Where a split workload's config rows and size-class table go on the sheet."""

    labels: list[str]
    config_rows: list[int]
    class_title: int
    """The class table's title row; its header follows, then one row per class, then the totals row."""
    classes: int

    @property
    def sums(self) -> int:
        return self.class_title + 2 + self.classes


def _split_blocks(result: PlanResult, total_row: int) -> dict[str, _Block]:
    """The rows each split workload's configs take below the Total row (a title and a header first), then
    each one's size-class table."""
    split = [w for w in result.workloads if w.split_configs and w.size_classes]
    if not split:
        return {}
    r = total_row + 3  # a blank row, the block's title, its header
    out: dict[str, _Block] = {}
    for w in split:
        labels = [k for k in w.split if k in w.split_configs]
        out[w.name] = _Block(labels, list(range(r, r + len(labels))), 0, len(w.size_classes))
        r += len(labels)
    for w in split:
        out[w.name].class_title = r + 1
        r = out[w.name].sums + 1
    return out


def _class_cols(j: int) -> tuple[int, int, int]:
    """A config's columns in a size-class table: its share of the class's requests, its goodput at the class's
    sizes, and the replica-seconds an output token of the class takes on it."""
    return 5 + 3 * j, 6 + 3 * j, 7 + 3 * j


def _split_row(sh: Sheet, result: PlanResult, refs: Refs, r: int, w, block: _Block,
               values: list[dict]) -> tuple[float, float]:
    """A split workload's row: its peak, and its replicas, GPUs, GPU-hours and cost as the sums of its configs'
    rows below the Total row."""
    for k, v in {"name": w.name, "pool": w.pool, "kind": w.kind, "model": w.model or "–",
                 "offer": f"{len(block.labels)} configs (below)", "acc": "–", "prec": "–",
                 "config": "split by size", "source": w.goodput_source, "bound": "–",
                 "peak_at": f"{w.peak_day_type} {w.peak_hour:02d}:00"}.items():
        sh.text(r, C[k], v)
    for k in ("gpr", "goodput", "mem", "weights", "kv", "reserve", "free", "fit", "need", "api"):
        sh.num(r, C[k], None)
    _peak(sh, r, w, refs)
    first, last = block.config_rows[0], block.config_rows[-1]
    configs = [w.split_configs[k] for k in block.labels]

    def total(key: str, value: float, num: str) -> None:
        sh.calc(r, C[key], f"SUM({_col(key, first)}:{_col(key, last)})", value, num=num)

    total("base", sum(x.replicas.base for x in configs), "int")
    total("spares", sum(x.replicas.spares for x in configs), "int")
    total("rollout", sum(x.replicas.rollout for x in configs), "int")
    total("total", sum(x.replicas.total for x in configs), "int")
    needed = sum(_config_gpus(result, w, k) for k in block.labels)
    total("gpus", needed, "int")
    sh.num(r, C["fleet"], w.gpus_at_peak, num="int")
    refs.sizing_values.append((needed, w.gpus_at_peak))
    sh.num(r, C["gh"], w.gpu_hours, num="int")
    sh.num(r, C["share"], w.api_share, num="pct")
    for key, t in (("gh_res", "reserved"), ("gh_od", "on_demand"), ("gh_spot", "spot"), ("gh_com", "committed"),
                   ("gh_buy", "buy"), ("gh_own", "owned")):
        if key in C:
            total(key, sum(v["gh"].get(t, 0.0) for v in values), "int")
    value = sum(v["cost"] for v in values)
    cost_f = f'SUM({_col("cost", first)}:{_col("cost", last)})'
    if w.name in refs.api_cost:
        cell, v = refs.api_cost[w.name]
        cost_f += f"+{cell}"
        value += v
    sh.calc(r, C["cost"], cost_f, value, num="money0")
    sh.calc(r, C["per_day"], f'{_col("cost", r)}/{refs.horizon}', value / refs.horizon_days, num="money0")
    com_v = sum(v["committed"] for v in values)
    if result.commitments:
        total("committed", com_v, "money0")
    else:
        sh.num(r, C["committed"], None, num="money0")
    note = (L.split_words(w) + ": each config's row is below the Total, "
            "sized on its share of each size class's traffic (the table under it)")
    sh.text(r, C["note"], note, "note")
    sh.fit_row(r, note, 44)
    return value, com_v


def _config_gpus(result: PlanResult, w, label: str) -> int:
    """The GPUs a config of a split workload needs at the workload's peak (its replicas × GPUs per replica)."""
    x = w.split_configs[label]
    return ceil_clean(x.replicas.total * x.gpus_per_replica)


def _view(w, label: str, peak: float, goodput: float):
    """A split workload's config as a workload row of its own: its offer, replicas, GPU-hours and cost, the
    traffic it serves (`peak`) and its goodput over that traffic."""
    x = w.split_configs[label]
    return replace(w, offer=x.offer, accelerator=x.accelerator, precision=x.precision, tp=x.tp, mig=None,
                   layout=None, gpus_per_replica=x.gpus_per_replica, goodput_output_tokens_per_s=goodput,
                   peak_output_tokens_per_s=peak, replicas=x.replicas,
                   gpus_at_peak=w.split_gpus_at_peak.get(label, 0), gpu_hours=x.gpu_hours,
                   gpu_hours_by_tier=x.gpu_hours_by_tier, gpu_hours_by_day_type=x.gpu_hours_by_day_type,
                   cost_by_tier=x.cost_by_tier, cost=x.cost, api_share=0.0, api_cost=0.0,
                   hourly_api_tokens_per_s={}, bound=None, split={}, split_configs={}, size_classes=[])


def _class_values(w, label: str) -> tuple[list[float], float, float]:
    """The classes' shares of the output tokens σ_b, and a config's share of the output tokens Σ σ_b·z_b and
    replica-seconds per output token Σ σ_b·z_b ÷ g_b: the values the class table's formulas give."""
    out = [k.share * k.output for k in w.size_classes]
    whole = 0.0
    for v in out:
        whole += v
    sigma = [v / whole if whole else 0.0 for v in out]
    z, g = w.split[label], w.split_goodput.get(label, [])
    share = load = 0.0
    for b, s in enumerate(sigma):
        share += s * z[b]
        load += s * z[b] * (1.0 / g[b] if b < len(g) and g[b] else 0.0)
    return sigma, share, load


def _write_split_blocks(sh: Sheet, result: PlanResult, refs: Refs, blocks: dict[str, _Block], heads: list[str],
                        reserved_rate: dict[str, float], first_row: int, daily: dict[tuple[str, str], int]
                        ) -> tuple[int, dict[str, list[dict]]]:
    """Each split workload's config rows (the Workloads columns, their cost live as any workload's) and its
    size-class table; returns the last row written, and each config row's cost, committed spend and GPU-hours
    by tier (the workload's row adds them up)."""
    values: dict[str, list[dict]] = {}
    if not blocks:
        return 0, values
    first = min(b.config_rows[0] for b in blocks.values())
    sh.text(first - 2, 0, "Configs of split workloads: each sized on its share of the traffic "
                          "(goodput = its share of the output tokens ÷ the replica-seconds they take on it)", "h2")
    sh.header(first - 1, 0, heads)
    end = 0
    by_name = {w.name: w for w in result.workloads}
    for name, b in blocks.items():
        w = by_name[name]
        row = next(i for i, x in enumerate(result.workloads) if x.name == name)
        peak_cell = _col("peak", first_row + row)
        values[name] = []
        for j, (label, r) in enumerate(zip(b.labels, b.config_rows)):
            _sigma, share, load = _class_values(w, label)
            share_c, _g, load_c = _class_cols(j)
            s_ref, l_ref = cell(b.sums, share_c), cell(b.sums, load_c)
            goodput = share / load if load else 0.0
            view = _view(w, label, w.peak_output_tokens_per_s * share, goodput)
            cost, com, gh = _row(sh, result, refs, r, view, reserved_rate,
                                 peak=(f"{peak_cell}*{s_ref}", w.peak_output_tokens_per_s * share),
                                 goodput=(f"IF({l_ref}=0,0,{s_ref}/{l_ref})", goodput), config=True, daily=daily)
            sh.text(r, C["config"], label)
            values[name].append({"cost": cost, "committed": com, "gh": gh})
        end = max(end, _class_table(sh, w, b))
    return end, values


def _class_table(sh: Sheet, w, b: _Block) -> int:
    """A split workload's size classes: each one's share of the requests and sizes, its share of the output
    tokens (σ = share × output ÷ Σ share × output), and for each config the share of the class's requests it
    serves (z, the solver's), its goodput at the class's sizes (g) and 1 ÷ g; the totals row gives each config's
    share of the output tokens Σ σ·z and replica-seconds per output token Σ σ·z ÷ g. Returns its last row."""
    t = b.class_title
    sh.text(t, 0, f"{w.name}: its request-size classes and the share of each that each config serves", "h2")
    heads = ["Size class", "Share of requests", "Input tokens", "Output tokens", "Share of output tokens"]
    for label in b.labels:
        heads += [f"{label}: share of the class's requests", f"{label}: goodput (output tok/s per replica)",
                  f"{label}: replica-seconds per output token"]
    sh.header(t + 1, 0, heads)
    rows = range(t + 2, t + 2 + b.classes)
    r0, r1 = rows[0], rows[-1]
    shares, outputs = f"{cell(r0, 1)}:{cell(r1, 1)}", f"{cell(r0, 3)}:{cell(r1, 3)}"
    sigma_rng = f"{cell(r0, 4)}:{cell(r1, 4)}"
    sigma0 = _class_values(w, b.labels[0])[0]
    for i, (r, k) in enumerate(zip(rows, w.size_classes)):
        sh.text(r, 0, f"{i + 1}: {k.input:,.0f} → {k.output:,.0f} tokens")
        sh.num(r, 1, k.share, num="pct")
        sh.num(r, 2, k.input, num="int")
        sh.num(r, 3, k.output, num="int")
        sh.calc(r, 4, f"{cell(r, 1)}*{cell(r, 3)}/SUMPRODUCT({shares},{outputs})", sigma0[i], num="pct")
        for j, label in enumerate(b.labels):
            zc, gc, ic = _class_cols(j)
            g = w.split_goodput.get(label, [])
            gv = g[i] if i < len(g) else 0.0
            sh.num(r, zc, w.split[label][i], num="pct")
            sh.num(r, gc, gv, num="int")
            sh.calc(r, ic, f"IF({cell(r, gc)}=0,0,1/{cell(r, gc)})", 1.0 / gv if gv else 0.0, num="0.000000")
    s = b.sums
    sh.text(s, 0, "Each config: its share of the output tokens (Σ σ·z) and replica-seconds per output token "
                  "(Σ σ·z ÷ g)", "total")
    for j, label in enumerate(b.labels):
        zc, _gc, ic = _class_cols(j)
        _sigma, share, load = _class_values(w, label)
        sh.calc(s, zc, f"SUMPRODUCT({sigma_rng},{cell(r0, zc)}:{cell(r1, zc)})", share, "total", num="pct")
        sh.calc(s, ic, f"SUMPRODUCT({sigma_rng},{cell(r0, zc)}:{cell(r1, zc)},{cell(r0, ic)}:{cell(r1, ic)})",
                load, "total", num="0.000000")
    return s



SCALED = ("reserved", "on_demand", "spot")
"""Tiers whose GPU-hours follow the days on Assumptions (as Purchases' do); contracts signed before and
servers of your own keep theirs (their days are the contracts' and the servers' own)."""


DAILY_LABEL = {"reserved": "GPU-hours on reserved", "on_demand": "GPU-hours on on-demand", "spot": "GPU-hours on spot"}


def _live_days(result: PlanResult, refs: Refs, days: dict[str, float] | None) -> bool:
    return bool(days) and all(d in refs.days and result.day_types.get(d) for d in days)  # type: ignore[union-attr]


def _daily_columns(result: PlanResult, refs: Refs, start: int) -> dict[tuple[str, str], int]:
    """(tier, day type) → its column right of the table, for each a workload used GPU-hours of and whose days
    are on Assumptions, in tier then day-type order."""
    used = {(t, d) for w in result.workloads if w.offer for t in SCALED
            if _live_days(result, refs, w.gpu_hours_by_day_type.get(t))
            for d, v in w.gpu_hours_by_day_type[t].items() if v}
    order = [(t, d) for t in SCALED for d in result.day_types if (t, d) in used]
    return {k: start + i for i, k in enumerate(order)}


def _by_days(result: PlanResult, refs: Refs, days: dict[str, float] | None, sh: Sheet, r: int, tier: str,
             daily: dict[tuple[str, str], int]) -> tuple[str, float] | None:
    """A tier's GPU-hours as Σ over day types of (its GPU-hours a day of that type × the type's days on
    Assumptions), with the value that formula gives: the GPU-hours a day are written in the row's daily columns
    (the solve's GPU-hours on the type ÷ the days solved), so the formula holds names and cells, no constant.
    None when the result does not break them down (results written before)."""
    if not _live_days(result, refs, days):
        return None
    assert days is not None
    parts = []
    for d, v in days.items():
        if not v:
            continue
        n = float(result.day_types[d])
        col = daily[(tier, d)]
        sh.num(r, col, v / n, num="dec2")
        parts.append((f"{xl_col_to_name(col)}{r + 1}", refs.days[d], v / n, n))
    if not parts:
        return None
    return "+".join(f"{cell}*{days_cell}" for cell, days_cell, _a, _n in parts), sum(a * n for _c, _d, a, n in parts)


def _own_cost(result: PlanResult, w, r: int, refs: Refs) -> tuple[list[str], float]:
    """A workload's cost on servers of your own, as formulas and their value: the GPU-hours it used on servers
    bought × the offer's ownership share per GPU-hour held (Purchases' buy row), and its share of the offer's
    energy and space (Own hardware; the share the result gives it: the hours it held those servers, and
    the energy of the GPU-hours it served)."""
    P = refs.purchases
    parts, value = [], 0.0
    gh = w.gpu_hours_by_tier
    o = _col("offer", r)
    if gh.get("buy"):
        cost_f = f'SUMIFS({P["cost"]},{P["offer"]},"="&{o},{P["tier"]},"buy")'
        held_f = f'SUMIFS({P["gpu_hours"]},{P["offer"]},"="&{o},{P["tier"]},"buy")'
        parts.append(f'IF({held_f}=0,0,{_col("gh_buy", r)}*{cost_f}/{held_f})')
        cost = sum(p["cost_value"] for p in refs.purchase_rows if p["offer"] == w.offer and p["tier"] == "buy")
        held = sum(p["gh_value"] for p in refs.purchase_rows if p["offer"] == w.offer and p["tier"] == "buy")
        value += gh["buy"] * cost / held if held else 0.0
    fac = w.cost_by_tier.get("facility", 0.0)
    cells = refs.own_offer.get(w.offer or "")
    whole = _offer_facility(result, w.offer or "")
    used_key = "gh_buy" if gh.get("buy") else "gh_own"
    used = gh.get("buy") or gh.get("owned") or 0.0
    if fac and cells is not None and "fixed" in cells and cells["held"][1]:
        # the offer's fixed costs (idle energy, space, owned servers' support) by the GPU-hours it held the
        # servers, and its share of their serving energy (the energy of the GPU-hours it served): each part
        # follows the Own hardware inputs
        (fixed_f, fixed_v), (serve_f, serve_v), (held_f, held_v) = cells["fixed"], cells["serving"], cells["held"]
        energy = max(0.0, fac - used * fixed_v / held_v)
        share = energy / serve_v if serve_v else 0.0
        if used and used_key in C:
            parts.append(f"IF(({held_f})=0,0,{_col(used_key, r)}*({fixed_f})/({held_f}))")
            value += used * fixed_v / held_v
        if share:
            parts.append(f"{share!r}*{serve_f}")
            value += share * serve_v
    elif fac and cells is not None and whole:
        share = fac / whole
        cell, v = cells["facility"]
        parts.append(f"{share!r}*{cell}")
        value += share * v
    elif fac:
        parts.append(repr(fac))
        value += fac
    return parts, value


def _offer_facility(result: PlanResult, offer: str) -> float:
    """The result's energy and space (and owned servers' support) at one offer of your own."""
    own = result.own
    if own is None:
        return 0.0
    return sum(b.running_in_horizon for b in own.bought if b.offer == offer) \
        + sum(o.running_in_horizon for o in own.owned if o.offer == offer)


def _peak(sh: Sheet, r: int, w, refs: Refs) -> None:
    """The peak hour's demand: a number, or, for a peak from business numbers, their peak on Assumptions
    × the profile's value at that hour."""
    if w.name not in refs.peak:
        sh.num(r, C["peak"], w.peak_output_tokens_per_s, num="int")
        return
    cell, peak = refs.peak[w.name]
    share = round(w.peak_output_tokens_per_s / peak, 9)  # the profile's value (a saved result rounds the peak)
    if share == 1:
        sh.calc(r, C["peak"], cell, peak, num="int")
    else:
        sh.calc(r, C["peak"], f"{cell}*{share!r}", peak * share, num="int")


def _reserved_rate(rows: list[dict], offer: str) -> float:
    """What an offer's reservations cost per GPU-hour they hold (the formula's quotient, same order)."""
    cost = sum(sum(p["cost_value"] for p in rows if p["offer"] == offer and p["tier"] == t) for t in RESERVED_TIERS)
    held = sum(sum(p["gh_value"] for p in rows if p["offer"] == offer and p["tier"] == t) for t in RESERVED_TIERS)
    return cost / held if held else 0.0


def _price(result: PlanResult, offer: str, tier: str) -> float:
    return float(result.offers.get(offer, {}).get("prices", {}).get(tier, 0.0) or 0.0)


def _replica_formulas(sh: Sheet, r: int, w, api_peak: float, occ_v: float, spares_v: int, roll_v: float,
                      occ: str, spares: str, roll: str) -> tuple[str, int]:
    """Write base, spares, rollout, total and GPUs needed as formulas; values computed the same way.

    Returns a note when planopt's counts differ from the arithmetic (then its counts are written),
    and the GPUs needed at the peak.
    """
    base = ceil_clean((w.peak_output_tokens_per_s - api_peak) / (w.goodput_output_tokens_per_s * occ_v))
    rollout = ceil_clean(roll_v * (base + spares_v))
    total = base + spares_v + rollout
    gpus = ceil_clean(total * w.gpus_per_replica)
    rep = w.replicas
    if (base, spares_v, rollout, total) != (rep.base, rep.spares, rep.rollout, rep.total):
        for k, v in (("base", rep.base), ("spares", rep.spares), ("rollout", rep.rollout), ("total", rep.total),
                     ("gpus", w.gpus_at_peak)):
            sh.num(r, C[k], v, num="int")
        return (f"planopt's counts at the peak: the solver chose {rep.base} base replicas where the arithmetic "
                f"gives {base}; written as values"), w.gpus_at_peak
    sh.calc(r, C["base"], ceil_formula(f'({_col("peak", r)}-{_col("api", r)})/({_col("goodput", r)}*{occ})'),
            base, num="int")
    sh.calc(r, C["spares"], spares, spares_v, num="int")
    sh.calc(r, C["rollout"], ceil_formula(f'{roll}*({_col("base", r)}+{_col("spares", r)})'), rollout, num="int")
    sh.calc(r, C["total"], f'{_col("base", r)}+{_col("spares", r)}+{_col("rollout", r)}', total, num="int")
    sh.calc(r, C["gpus"], ceil_formula(f'{_col("total", r)}*{_col("gpr", r)}'), gpus, num="int")
    if api_peak > 0:
        return f"{api_peak:,.0f} output tok/s of the peak go to the API", gpus
    return "", gpus
