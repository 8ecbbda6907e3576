"""The calibrated plan as text: the input plan's YAML, round-tripped, with the new numbers put in.

Comments, key order, quoting and indentation of the input are kept (ruamel.yaml round trip);
only demand, token means, measured points (and catalog paths, when the output lives in another
folder) change, each with a comment that says where the number came from.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from optimizer.calibrate.types import (
    Calibration,
    Change,
    WorkloadCalibration,
    pword,
    sig,
)
from optimizer.inputs.schema.plan import BUSINESS_KEYS, MAX_TOKENS_PER_REQUEST
from optimizer.vocab import PRECISION_ALIASES

if TYPE_CHECKING:
    from optimizer.inputs.loading import LoadedPlan

WIDTH = 100


def rewrite(loaded: "LoadedPlan", cal: "Calibration", out_path: Path) -> tuple[str, list["Change"]]:

    raw = loaded.doc.path.read_bytes()
    text = raw.decode("utf-8-sig")
    y = _yaml(text)
    tree = y.load(text)
    changes: list[Change] = []
    plan = loaded.plan
    types = list(plan.day_type_days())
    q = pword(cal.peak_percentile)
    for i, w in enumerate(plan.workloads):
        node = tree["workloads"][i]
        wc = cal.workloads[i]
        tail = _pop_tail(node)
        _edit_workload(node, w, wc, cal, types, q, changes)
        for p in cal.points:
            if p.workload == w.name:
                changes.append(_put_point(node, p))
        _push_tail(node, tail)
    if "catalogs" in tree and isinstance(tree["catalogs"], list):
        new = out_dir_catalogs([str(c) for c in tree["catalogs"]], loaded.doc.path.parent, out_path.parent)
        for j, (a, b) in enumerate(zip(list(tree["catalogs"]), new)):
            if str(a) != b:
                tree["catalogs"][j] = b
                changes.append(Change("(plan)", "catalog path", str(a), b))
    buf = io.StringIO()
    y.dump(tree, buf)
    return _tidy(buf.getvalue()), changes


def _edit_workload(node: CommentedMap, w, wc: "WorkloadCalibration", cal: "Calibration", types: list[str], q: str,
                   changes: list["Change"]) -> None:

    notes: dict[str, list[str]] = {}
    """Comments for the workload's own keys (a flow-style map cannot hold comments inside)."""

    def note(parent: CommentedMap, parent_key: str, key: str, text: str) -> None:
        if parent.fa.flow_style():
            notes.setdefault(parent_key, []).append(text)
        else:
            _eol(parent, key, text)

    if w.demand is not None and (wc.new_peak is not None or wc.new_profile is not None):
        demand = node["demand"]
        if wc.new_profile is not None and demand.fa.flow_style():
            demand.fa.set_block_style()  # a 24-hour profile per day type does not fit on one line
        if wc.new_peak is not None:
            # measured usage replaces the business numbers the peak was derived from (one way or the other)
            business = [k for k in BUSINESS_KEYS if k in demand]
            at = list(demand).index(business[0]) if business else None
            for k in business:
                del demand[k]
            if at is not None:
                demand.insert(at, "peak_output_tokens_per_s", _num(wc.new_peak))
            else:
                demand["peak_output_tokens_per_s"] = _num(wc.new_peak)
            top = wc.peak_day_type
            if wc.peak_kept:
                why = f"kept: the plan's {top} busiest hour ({top} is not in the usage log)"
            elif top in wc.scaled:
                why = f"calibrated (--allow-partial): the plan's {top} curve fitted to {wc.scaled[top][0]} of the log"
            else:
                why = f"calibrated: {q} over {wc.peak_days} {top} days of each day's busiest hour"
            note(demand, "demand", "peak_output_tokens_per_s",
                 why + (f"; replaces the business numbers (peak {_fmt(wc.old_peak)})" if business else "")
                 + ("; monthly_growth not applied (planopt forecast writes peak_by_month)"
                    if "monthly_growth" in business else ""))
            if not (wc.peak_kept and wc.old_peak == wc.new_peak):
                changes.append(Change(w.name, "peak output tok/s", _fmt(wc.old_peak), _fmt(wc.new_peak),
                                      _ratio(wc.old_peak, wc.new_peak)))
        if wc.new_profile is not None:
            single = len(types) == 1 and not isinstance(w.demand.profile, dict)
            value: Any = (_flow(wc.new_profile[types[0]]) if single
                          else _profile_map(demand.get("profile"), wc.new_profile))
            demand["profile"] = value
            period = f"{cal.period[0]} to {cal.period[1]}" if cal.period else ""
            kept = f"; {', '.join(wc.kept)} kept from the plan in tok/s (not in the log)" if wc.kept else ""
            note(demand, "demand", "profile",
                 f"calibrated: {q} of each hour ÷ peak; log {period} ({cal.timezone}){kept}")
            for t in types:
                old, new = wc.old_profile.get(t), wc.new_profile[t]
                if old is not None and any(abs(a - b) > 5e-4 for a, b in zip(old, new)):
                    how = _shape(new)
                    if t in wc.kept:
                        how += " (the plan's tok/s; not in the log)"
                    elif t in wc.scaled:
                        amount, k = wc.scaled[t]
                        how += f" ({amount} from the log, the rest the plan's" + (f" × {k:.3g})" if k else ")")
                    changes.append(Change(w.name, f"profile {t}", _shape(old), how))
    if w.batch is not None and wc.new_batch is not None:
        node["batch"]["output_tokens_per_day"] = _num(wc.new_batch)
        note(node["batch"], "batch", "output_tokens_per_day", f"calibrated: {q} of {wc.peak_days} full days")
        changes.append(Change(w.name, "output tokens/day", _fmt(wc.old_batch), _fmt(wc.new_batch),
                              _ratio(wc.old_batch, wc.new_batch)))
    if wc.tenants and (w.demand is not None or w.batch is not None):
        shown = ", ".join(f"{t} {s:.0%}" for t, s, _ in wc.tenants[:6])
        more = f", {len(wc.tenants) - 6} more" if len(wc.tenants) > 6 else ""
        notes.setdefault("demand" if w.demand is not None else "batch", []).insert(
            0, f"tenants by output tokens: {shown}{more}")
        node["tenants"] = _tenant_map(wc.tenants)  # the showback splits the workload's spend by these
        changes.append(Change(w.name, "tenants", f"{len(w.tenants)} teams" if w.tenants else "–",
                              f"{len(node['tenants'])} teams by output tokens"))
    if w.tokens is not None and wc.new_tokens is not None:
        tok = node["tokens"]
        for j, key in enumerate(("input", "output")):
            old_v, new_v = wc.old_tokens[j] if wc.old_tokens else None, wc.new_tokens[j]
            if wc.new_mix is None:
                tok[key] = _num(new_v)
            elif key in tok:  # a mix's means follow from its classes
                del tok[key]
            if old_v is not None and not sig_equal(old_v, new_v):
                changes.append(Change(w.name, f"mean {key} tokens", _fmt(old_v), _fmt(new_v), _ratio(old_v, new_v)))
        if wc.new_mix is not None:
            _put_mix(tok, wc, w.name, changes)
            notes.setdefault("tokens", []).append(f"calibrated: {len(wc.new_mix)} size classes of {wc.requests:,} "
                                                  f"requests ({wc.mix_note})")
        else:
            if "mix" in tok:
                del tok["mix"]
                changes.append(Change(w.name, "size classes", f"{len(wc.old_mix or ())} classes", "one (the means)"))
            said = f"calibrated: mean of {wc.requests:,} requests" + (f" ({wc.mix_note})" if wc.mix_note else "")
            if tok.fa.flow_style() or "output" not in tok:
                notes.setdefault("tokens", []).append(said)
            else:
                _eol(tok, "output", said)
        ctx = w.context_tokens
        largest = max([wc.new_tokens[0] + wc.new_tokens[1]] + [i + o for _s, i, o in wc.new_mix or ()])
        if ctx is not None and ctx < largest:
            new_ctx = min(int(math.ceil(largest / 1024.0) * 1024),
                          MAX_TOKENS_PER_REQUEST)  # usage rows stop there (usage.PROBLEMS "…-huge")
            node["context_tokens"] = new_ctx
            changes.append(Change(w.name, "context tokens", f"{ctx:,}", f"{new_ctx:,}", _ratio(ctx, new_ctx)))
            wc.notes.append(f"context_tokens raised to {new_ctx:,}: the "
                            + ("largest size class" if wc.new_mix else "mean request") + " no longer fitted")
    for key, texts in notes.items():
        _eol(node, key, "; ".join(texts), keep_user=key in ("demand", "batch"))


def _put_mix(tok: CommentedMap, wc: "WorkloadCalibration", name: str, changes: list["Change"]) -> None:
    """tokens.mix: one flow mapping {share, input, output} per class, on a line each."""
    assert wc.new_mix is not None
    seq = CommentedSeq()
    for share, i, o in wc.new_mix:
        row = CommentedMap([("share", _num(share)), ("input", _num(i)), ("output", _num(o))])
        row.fa.set_flow_style()
        seq.append(row)
    if tok.fa.flow_style():
        tok.fa.set_block_style()
    tok["mix"] = seq
    old = f"{len(wc.old_mix)} classes" if wc.old_mix else "one (the means)"
    new = ", ".join(f"{s:.0%} at {_fmt(i)}/{_fmt(o)}" for s, i, o in wc.new_mix)
    changes.append(Change(name, "size classes", old, f"{len(wc.new_mix)} classes: {new}"))


# --- comments and the blank lines that hang on them ----------------------------------------------


def _token(text: str):
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    return CommentToken(text, CommentMark(0), None)


OURS = ("calibrated", "tenants by output tokens")


def _eol(node: CommentedMap, key: Any, text: str, keep_user: bool = False) -> None:
    """Set the end-of-line comment of `key`, keeping any blank lines or comments that followed it.

    `keep_user` keeps a comment the user wrote there (ours from an earlier calibration are replaced).
    """
    old = node.ca.items.get(key)
    tail = ""
    if old and len(old) > 2 and old[2] is not None:
        value = old[2].value
        cut = value.find("\n")
        tail = value[cut + 1:] if cut >= 0 else ""
        mine = (value[:cut] if cut >= 0 else value).strip().lstrip("#").strip()
        if keep_user and mine:
            kept = "; ".join(part for part in mine.split("; ") if not part.startswith(OURS))
            if kept:
                text = f"{kept}; {text}"
    node.yaml_add_eol_comment("# " + text, key, column=0)
    tok = node.ca.items[key][2]
    tok.value = " " + tok.value.lstrip(" ").rstrip("\n") + "\n" + tail


def _last_slot(node: Any) -> tuple[Any, Any] | None:
    """The container and key of the last line of a block collection (where trailing blank lines hang)."""
    while True:
        if isinstance(node, CommentedMap) and len(node):
            key = list(node.keys())[-1]
        elif isinstance(node, CommentedSeq) and len(node):
            key = len(node) - 1
        else:
            return None
        value = node[key]
        if isinstance(value, (CommentedMap, CommentedSeq)) and len(value) and not value.fa.flow_style():
            node = value
            continue
        return node, key


def _pop_tail(node: Any) -> str:
    slot = _last_slot(node)
    if slot is None:
        return ""
    container, key = slot
    if isinstance(container, CommentedSeq) and container.ca.end:
        tail = "".join(t.value for t in container.ca.end if t is not None)
        container.ca.end = []
        return tail
    item = container.ca.items.get(key)
    if not item or len(item) < 3 or item[2] is None:
        return ""
    value = item[2].value
    cut = value.find("\n")
    if cut < 0:
        return ""
    head, tail = value[: cut + 1], value[cut + 1:]
    if head.strip():
        item[2].value = head
    else:
        item[2] = None
        tail = value[cut + 1:]
    return tail


def _push_tail(node: Any, tail: str) -> None:
    if not tail:
        return
    slot = _last_slot(node)
    if slot is None:
        return
    container, key = slot
    item = container.ca.items.get(key)
    if item and len(item) > 2 and item[2] is not None:
        item[2].value = item[2].value.rstrip("\n") + "\n" + tail
        return
    if isinstance(container, CommentedSeq):
        container.ca.end = [_token(tail)]
        return
    container.ca.items.setdefault(key, [None, None, None, None])
    container.ca.items[key][2] = _token("\n" + tail)


def sig_equal(a: float, b: float) -> bool:

    return sig(a) == sig(b)


def _put_point(node: CommentedMap, p) -> "Change":

    def norm(prec: Any) -> str:
        return PRECISION_ALIASES.get(str(prec), str(prec))

    seq = node.get("measured")
    label = f"measured {p.accelerator} {p.precision} tp{p.tp}" + (f" {p.engine}" if p.engine else "")
    value = _num(_sig(p.goodput_output_tokens_per_s))
    if seq is None:
        seq = CommentedSeq()
        keys = list(node.keys())
        anchor = next((k for k in ("demand", "batch", "slo") if k in node), keys[-1])
        node.insert(keys.index(anchor) + 1, "measured", seq)
    engine = p.engine
    same = [e for e in seq if isinstance(e, dict) and e.get("accelerator") == p.accelerator
            and norm(e.get("precision")) == p.precision and int(e.get("tp", 1)) == p.tp and e.get("mig") is None]
    # the point of this engine; else one that named no engine, which a run naming one replaces
    found = [e for e in same if e.get("engine") == engine] + [e for e in same if e.get("engine") is None]
    if found:
        entry = found[0]
        old = entry.get("goodput_output_tokens_per_s")
        entry["goodput_output_tokens_per_s"] = value
        entry["source"] = p.source
        if engine is not None:
            entry["engine"] = engine
        _put_latencies(entry, p)
        return Change(p.workload, label, _fmt(float(old)) if old is not None else "–", _fmt(value),
                      _ratio(float(old), float(value)) if old else None)
    entry = CommentedMap()
    entry["accelerator"] = p.accelerator
    entry["precision"] = p.precision
    entry["tp"] = p.tp
    entry["goodput_output_tokens_per_s"] = value
    entry["source"] = p.source
    if engine is not None:
        entry["engine"] = engine
    _put_latencies(entry, p)
    seq.append(entry)
    return Change(p.workload, label, "–", _fmt(value))


def _put_latencies(entry: CommentedMap, p) -> None:
    """The TPOT and TTFT the run achieved, beside its goodput (a run that reports none leaves no stale one)."""
    for key in ("tpot_ms", "ttft_ms"):
        v = getattr(p, key, None)
        if v is not None and v > 0:
            entry[key] = _num(_sig(v))
        elif key in entry:
            del entry[key]


def _sig(x: float) -> float | int:

    return sig(x)


def _tenant_map(tenants: list[tuple[str, float, int]], most: int = 20) -> CommentedMap:
    """Tenant shares for the plan: the largest `most` − 1 by name, the rest as "other", rounded to four
    decimals and adding up to 1 (the last share takes the rounding)."""
    top = tenants if len(tenants) <= most else tenants[:most - 1] + [("other", sum(s for _t, s, _n in tenants[most - 1:]), 0)]
    shares = [(str(t), round(s, 4)) for t, s, _n in top]
    if shares:
        shares[-1] = (shares[-1][0], round(1.0 - sum(v for _t, v in shares[:-1]), 4))
    out = CommentedMap(shares)
    out.fa.set_flow_style()
    return out


def _num(x: float | int) -> float | int:
    return int(x) if float(x).is_integer() else float(x)


def _fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _ratio(old: float | None, new: float | None) -> float | None:
    if old is None or new is None or old == 0:
        return None
    return new / old


def _shape(values: list[float]) -> str:
    top = max(range(24), key=lambda h: (values[h], -h))
    return f"max {values[top]:.2f} at {top:02d}:00, mean {sum(values) / 24:.2f}"


def _flow(values: list[float]) -> CommentedSeq:
    s = CommentedSeq([float(v) for v in values])
    s.fa.set_flow_style()
    return s


def _profile_map(old: Any, profile: dict[str, list[float]]) -> CommentedMap:
    out = old if isinstance(old, CommentedMap) else CommentedMap()
    for k in list(out.keys()):
        if k not in profile:
            del out[k]
    for k, v in profile.items():
        out[k] = _flow(v)
    return out


def _indents(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as the file writes them, so the output keeps its look."""
    mapping, offset = None, None
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for a, b in zip(lines, lines[1:]):
        ia = len(a) - len(a.lstrip(" "))
        ib = len(b) - len(b.lstrip(" "))
        head = a.strip()
        if not re.match(r"^(- )?[^\s#][^#]*:\s*(#.*)?$", head) or ib <= ia:
            continue
        if head.startswith("- "):
            ia += 2
        if b.strip().startswith("- "):
            if offset is None:
                offset = ib - ia
        elif mapping is None and ib > ia:
            mapping = ib - ia
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = 2 if offset is None else offset
    return mapping, offset + 2, offset


def _yaml(text: str) -> YAML:
    y = YAML(typ="rt")
    y.allow_duplicate_keys = False
    y.width = 4096
    y.preserve_quotes = True
    mapping, sequence, offset = _indents(text)
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    return y


_LIST = re.compile(r"^(?P<head>[^#\[{]*?:\s\[)(?P<body>[-+0-9.eE, ]+)\](?P<tail>.*)$")


def _tidy(text: str) -> str:
    """Wrap long lists of numbers in two even lines (as people write 24-hour profiles); trim line ends."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        m = _LIST.match(line)
        if m and len(line) > WIDTH and m["body"].count(",") >= 11:
            items = [s.strip() for s in m["body"].split(",")]
            half = (len(items) + 1) // 2
            pad = " " * len(m["head"])
            out.append(m["head"] + ", ".join(items[:half]) + ",")
            out.append(pad + ", ".join(items[half:]) + "]" + m["tail"])
        elif len(line) > WIDTH and (parts := _flow_items(line)) is not None:
            out.extend(_wrapped(*parts))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


_FLOW = re.compile(r"^(?P<head>\s*(?:- )?(?:[A-Za-z_][\w-]*: )?)\{(?P<body>.*)\}(?P<tail>\s*(?:#.*)?)$")


def _flow_items(line: str) -> tuple[str, list[str], str] | None:
    """A line holding one flow mapping (`- {id: …, price: {…}}`, as the round trip writes a mapping the input
    spread over lines): its head, its items split at the commas of its own level, its tail; None if it is not
    one (a quote or a bracket that does not close on the line)."""
    m = _FLOW.match(line)
    if m is None:
        return None
    items, depth, quote, start, body = [], 0, "", 0, m["body"]
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            items.append(body[start:i].strip())
            start = i + 1
    if quote or depth:
        return None
    items.append(body[start:].strip())
    return m["head"], items, m["tail"]


def _wrapped(head: str, items: list[str], tail: str) -> list[str]:
    """A flow mapping over lines of at most WIDTH where its items allow, each continuation under its first item."""
    pad = " " * (len(head) + 1)
    lines, cur, on_line = [], head + "{", 0
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "}")
        if on_line and len(cur) + 1 + len(piece) > WIDTH:
            lines.append(cur)
            cur, on_line = pad + piece, 1
        else:
            cur, on_line = cur + (" " if on_line else "") + piece, on_line + 1
    lines.append(cur + tail)
    return lines


def out_dir_catalogs(catalogs: list[str], plan_dir: Path, out_dir: Path) -> list[str]:
    """Relative catalog paths rewritten so they still resolve from the calibrated plan's folder."""
    if plan_dir.resolve() == out_dir.resolve():
        return list(catalogs)
    out = []
    for c in catalogs:
        if c == "builtin" or Path(c).is_absolute():
            out.append(c)
            continue
        target = (plan_dir / c).resolve()
        try:
            out.append(os.path.relpath(target, out_dir.resolve()))
        except ValueError:
            out.append(str(target))
    return out
