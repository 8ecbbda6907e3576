"""SkyPilot's published catalog (vms.csv, schema v5+: InstanceType, vCPUs, MemoryGiB, AcceleratorName,
AcceleratorCount, GPUInfo, Region, AvailabilityZone, Price, SpotPrice; https://github.com/skypilot-org/skypilot-catalog)
→ plan-local offers with per-GPU on-demand and spot prices, their source and as_of (`planopt catalog import-prices`).

Price and SpotPrice are per instance-hour; an offer's price is per GPU-hour (÷ AcceleratorCount). The CSV carries
on-demand and spot prices only (no reservations, no capacity) and no date, so the caller gives as_of.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.errors import PlanError, Problem
from optimizer.inputs.schema.catalog import ID_PATTERN

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
MAX_FILE_BYTES = 200_000_000

# SkyPilot accelerator name (lower case) → the catalog ids it may be; more than one: the instance type settles it
_NAMES: dict[str, tuple[str, ...]] = {
    "a100": ("a100-40gb",), "a100-80gb": ("a100-80gb",), "a10g": ("a10g",), "l4": ("l4",), "l40s": ("l40s",),
    "h100": ("h100-sxm", "h100-pcie", "h100-nvl"), "h100-mega": ("h100-sxm",), "h100-80gb": ("h100-sxm", "h100-pcie"),
    "h200": ("h200-sxm", "h200-nvl"), "h20": ("h20",), "gh200": ("gh200",), "b200": ("b200",), "b300": ("b300",),
    "gb200": ("gb200",), "gb300": ("gb300",), "mi300x": ("mi300x",), "mi325x": ("mi325x",), "mi350x": ("mi350x",),
    "mi355x": ("mi355x",), "rtxpro6000": ("rtx-pro-6000",), "rtx-pro-6000": ("rtx-pro-6000",),
}

# instance-type patterns that settle the variant (the clouds' published instance families)
_VARIANT = [
    (re.compile(r"sxm", re.I), "sxm"),
    (re.compile(r"pcie", re.I), "pcie"),
    (re.compile(r"nvl", re.I), "nvl"),
    (re.compile(r"^p5(e|en)?\.", re.I), "sxm"),              # AWS P5 / P5e / P5en: HGX H100 / H200 (SXM)
    (re.compile(r"^a3-(high|mega|ultra|edge)gpu", re.I), "sxm"),  # GCP A3: HGX H100 / H200 (SXM)
    (re.compile(r"^Standard_ND\d+is?r_H[12]00_v5$", re.I), "sxm"),  # Azure ND H100 / H200 v5: HGX (SXM)
    (re.compile(r"^Standard_NC\d+ads_H100_v5$", re.I), "nvl"),      # Azure NC H100 v5: H100 NVL
]


@dataclass
class Imported:
    offers: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    rows: int = 0


def parse_map(items: list[str] | tuple[str, ...], accelerators: set[str]) -> tuple[dict[str, str], list[Problem]]:
    out: dict[str, str] = {}
    problems = []
    for item in items:
        name, sep, ident = item.partition("=")
        if not sep or not name.strip() or not ident.strip():
            problems.append(Problem(f"--map {item}: not NAME=ID", "write --map H100=h100-sxm (the CSV's "
                                    "AcceleratorName = a catalog accelerator id)"))
            continue
        if ident.strip() not in accelerators:
            problems.append(Problem(f"--map {item}: {ident.strip()} is not a catalog accelerator",
                                    "see `planopt catalog accelerators` for the ids"))
            continue
        out[name.strip().lower()] = ident.strip()
    return out, problems


def check_as_of(as_of: str) -> str:
    text = as_of.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}", text):
            dt.date.fromisoformat(text + "-01")
        elif re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            dt.date.fromisoformat(text)
        else:
            raise ValueError
    except ValueError:
        raise PlanError(Problem(f"--as-of {as_of}: not a date", "give the day the CSV was downloaded: "
                                "--as-of YYYY-MM-DD (or YYYY-MM)")) from None
    return text


def check_provider(provider: str) -> str:
    p = provider.strip().lower()
    if not ID_PATTERN.match(p):
        raise PlanError(Problem(f"--provider {provider}: not an id", "lower-case and hyphenated, e.g. aws, gcp, "
                                "lambda"))
    return p


def _variant(candidates: tuple[str, ...], instance: str) -> str | None:
    if len(candidates) == 1:
        return candidates[0]
    for pattern, variant in _VARIANT:
        if pattern.search(instance):
            hit = [c for c in candidates if c.endswith("-" + variant)]
            if len(hit) == 1:
                return hit[0]
    return None


def _number(text: str) -> float | None:
    t = text.strip()
    if t == "":
        return None
    v = float(t)  # ValueError: the caller says where
    if not math.isfinite(v):
        raise ValueError(t)
    return v


def import_prices(path: Path | str, provider: str, as_of: str, maps: dict[str, str],
                  accelerators: set[str]) -> Imported:
    """Offers from a SkyPilot catalog CSV; PlanError listing every bad row (file:line) and every accelerator name
    whose variant the instance type does not settle, at once."""
    path = Path(path)
    shown = str(path)
    if not path.is_file():
        raise PlanError(Problem("CSV file not found" if not path.exists() else "not a file", "give the SkyPilot "
                                "catalog CSV (e.g. catalogs/v7/aws/vms.csv of skypilot-catalog)", file=shown))
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PlanError(Problem(f"the CSV is over {MAX_FILE_BYTES // 1_000_000} MB", "give one cloud's vms.csv",
                                file=shown))
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PlanError(Problem("the CSV is not UTF-8 text", "save it as UTF-8", file=shown,
                                line=raw[:exc.start].count(b"\n") + 1)) from None
    if not text.strip():
        raise PlanError(Problem("the CSV is empty", "give the SkyPilot catalog CSV with its header row",
                                file=shown, line=1))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as exc:
        raise PlanError(Problem(f"not CSV: {exc}", "give the SkyPilot catalog CSV", file=shown, line=1)) from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise PlanError(Problem(f"no column {', '.join(missing)} (the header has {', '.join(header) or 'nothing'})",
                                "give a SkyPilot catalog CSV (vms.csv): its header names " + ", ".join(REQUIRED),
                                file=shown, line=1))
    col = {c: header.index(c) for c in header}
    problems: list[Problem] = []
    ambiguous: dict[str, set[str]] = {}
    unknown: dict[str, int] = {}
    fractional: dict[tuple[str, str], int] = {}
    no_price = 0
    no_gpu = 0
    rows = 0
    # (instance type, region) → [accelerator, count, on-demand prices, spot prices, first line]
    found: dict[tuple[str, str], list[Any]] = {}
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            rows += 1
            if len(row) != len(header):
                problems.append(Problem(f"{len(row)} fields where the header has {len(header)}",
                                        "each row has one field per header column (quote fields holding commas)",
                                        file=shown, line=line))
                continue
            get = lambda c: row[col[c]].strip()  # noqa: E731
            name = get("AcceleratorName")
            if not name:
                no_gpu += 1
                continue
            bad = []
            values: dict[str, float | None] = {}
            for c in ("AcceleratorCount", "Price", "SpotPrice"):
                try:
                    values[c] = _number(get(c))
                except ValueError:
                    bad.append(f"{c} '{get(c)}' is not a number")
            for c in ("Price", "SpotPrice"):
                if values.get(c) is not None and values[c] < 0:
                    bad.append(f"{c} {values[c]:g} is negative")
            count = values.get("AcceleratorCount")
            if "AcceleratorCount" not in [b.split(" ")[0] for b in bad] and (count is None or count <= 0):
                bad.append(f"AcceleratorCount '{get('AcceleratorCount')}' is not a positive number")
            for c in ("InstanceType", "Region"):
                if not get(c):
                    bad.append(f"{c} is empty")
            if bad:
                problems.append(Problem("; ".join(bad), "fix the row, or leave it out", file=shown, line=line))
                continue
            instance, region = get("InstanceType"), get("Region")
            assert count is not None
            if not float(count).is_integer():
                fractional[(name, instance)] = fractional.get((name, instance), 0) + 1
                continue
            key_name = name.lower()
            acc = maps.get(key_name)
            if acc is None:
                cands = _NAMES.get(key_name)
                if cands is None:
                    unknown[name] = unknown.get(name, 0) + 1
                    continue
                acc = _variant(cands, instance)
                if acc is None:
                    ambiguous.setdefault(name, set()).add(instance)
                    continue
                if acc not in accelerators:
                    unknown[name] = unknown.get(name, 0) + 1
                    continue
            if values["Price"] is None and values["SpotPrice"] is None:
                no_price += 1
                continue
            entry = found.setdefault((instance, region), [acc, int(count), [], [], line])
            if values["Price"] is not None:
                entry[2].append(values["Price"])
            if values["SpotPrice"] is not None:
                entry[3].append(values["SpotPrice"])
    except csv.Error as exc:
        problems.append(Problem(f"not CSV: {exc}", "fix the quoting", file=shown, line=reader.line_num))
    for name, instances in sorted(ambiguous.items()):
        problems.append(Problem(
            f"{name} on {', '.join(sorted(instances))}: the instance type does not say which {name} "
            f"({' or '.join(_NAMES[name.lower()])})",
            f"say it: --map {name}={_NAMES[name.lower()][0]} (or another of them)", file=shown))
    if problems:
        raise PlanError(problems)
    offers = []
    ids: dict[str, tuple[str, str]] = {}
    for (instance, region), (acc, count, od, spot, _line) in sorted(found.items()):
        oid = _offer_id(provider, instance, region)
        if oid in ids:  # two instance types that slug alike: keep both, told apart
            oid = f"{oid}-{len(ids)}"
        ids[oid] = (instance, region)
        prices: dict[str, float] = {}
        if od:
            prices["on-demand"] = round(min(od) / count, 6)
        if spot:
            prices["spot"] = round(min(spot) / count, 6)
        offers.append({
            "id": oid, "accelerator": acc, "provider": provider, "region": region, "gpus_per_node": count,
            "unit": "node", "price_per_gpu_hour": prices,
            "source": f"SkyPilot catalog {path.name}: {instance} in {region}, Price and SpotPrice per "
                      f"instance-hour ÷ {count} GPU{'s' if count > 1 else ''}" + (" (spot: the cheapest zone)" if len(spot) > 1 else ""),
            "as_of": as_of,
        })
    notes = []
    if unknown:
        notes.append("not imported, no catalog accelerator by that name: " + ", ".join(
            f"{n} ({k} row{'s' if k > 1 else ''})" for n, k in sorted(unknown.items()))
            + " — --map NAME=ID imports one the catalog has under another id")
    if fractional:
        notes.append("skipped, fractional GPU counts (a share of one GPU, which an offer cannot sell): " + ", ".join(
            f"{n} on {i}" for n, i in sorted(fractional)))
    if no_price:
        notes.append(f"skipped {no_price} row{'s' if no_price > 1 else ''} with neither Price nor SpotPrice")
    if no_gpu:
        notes.append(f"{no_gpu} row{'s' if no_gpu > 1 else ''} without accelerators left out")
    return Imported(offers, notes, rows)


def _offer_id(provider: str, instance: str, region: str) -> str:
    s = re.sub(r"[^a-z0-9.]+", "-", f"{provider}-{instance}-{region}".lower()).strip("-.")
    return re.sub(r"-{2,}", "-", s)


def offers_yaml(imported: Imported, source_file: str, provider: str, as_of: str) -> str:
    """The offers as a catalog file a plan loads with --catalog (or lists under `catalogs:`)."""
    import yaml

    head = (f"# Offers imported by `planopt catalog import-prices` from {source_file} (SkyPilot catalog format),\n"
            f"# provider {provider}, prices as of {as_of}: on-demand and spot per GPU-hour (the CSV's per-instance\n"
            "# prices divided by its accelerator count). The CSV has no reserved prices and no capacity caps.\n")
    body = yaml.safe_dump({"offers": imported.offers}, sort_keys=False, allow_unicode=True, width=120)
    return head + body
