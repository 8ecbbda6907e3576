"""The plan file's JSON Schema and its reference page, both generated from the pydantic schema.

`plan_json_schema()` is what `planopt schema` writes (editors complete and check plans with it);
`plan_reference()` is docs/plan-reference.md: every key with its type, default, unit, allowed values,
description and an example taken from the shipped templates and catalogs. Neither can drift from
what the loader accepts: both are read off the same models (a test regenerates the page).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from optimizer.inputs.document import load_yaml
from optimizer.inputs.schema.plan import EXTENSION_PREFIX, Plan
from optimizer.resources import catalogs_dir, templates_dir

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FILE = "plan.schema.json"
"""The name `planopt init` writes beside a plan, and the templates' yaml-language-server comment names."""


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of a plan file, version 1 (additional keys refused, `x-…` keys allowed)."""
    schema = Plan.model_json_schema()
    return {"$schema": SCHEMA_DIALECT, "title": "planopt plan file, version 1",
            "description": "A capacity plan for LLM inference: workloads, candidate accelerators and offers, "
                           "policy. Reference: docs/plan-reference.md.",
            **{k: v for k, v in schema.items() if k not in ("title", "description")}}


def schema_text() -> str:
    return json.dumps(plan_json_schema(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


# --- the reference page -------------------------------------------------------------------------

_UNITS = [  # (name suffix or name, unit), first match wins
    ("users", "users"), ("active_share", "fraction of the users (0–1)"),
    ("requests_per_active_user_per_day", "requests per active user per day"),
    ("peak_hour_share", "fraction of the day's requests (0–1)"),
    ("peak_to_mean", "ratio of the busiest hour to the mean hour"), ("monthly_growth", "fraction per month (0–1)"),
    ("price_per_gpu_hour", "currency per GPU-hour"), ("usd_per_m_input", "USD per million input tokens"),
    ("usd_per_m_output", "USD per million output tokens"), ("_tb_s", "TB/s"), ("_gb_s", "GB/s"),
    ("_ms", "milliseconds"), ("time_limit_s", "seconds"), ("_per_s", "per second"), ("_per_day", "per day"),
    ("_days", "days"), ("days", "days"), ("_hours", "hours of the day (0–23)"), ("memory_bytes", "bytes"),
    ("_gb", "GB (10⁹ bytes)"), ("params_b", "billions of parameters"), ("_b", "billions"),
    ("_tokens", "tokens"), ("tokens", "tokens"), ("input", "tokens"), ("output", "tokens"),
    ("occupancy", "fraction of goodput (0–1)"), ("memory_reserve", "fraction of memory (0–1)"),
    ("max_share", "fraction of the workload's output tokens (0–1)"), ("spot_interruption", "fraction of capacity (0–1)"),
    ("rollout_fraction", "fraction of base + spare replicas"), ("change_threshold", "fraction of a workload's cost"),
    ("mip_gap", "fraction of the plan's cost"), ("memory_fraction", "fraction of the GPU's memory (0–1)"),
    ("percentile", "percent"), ("gpus", "GPUs"), ("count", "GPUs"), ("_gpus", "GPUs"),
]


def _unit(key: str) -> str | None:
    for suffix, unit in _UNITS:
        if key == suffix or (suffix.startswith("_") and key.endswith(suffix)):
            return unit
    return None


def _resolve(schema: dict, node: dict) -> dict:
    ref = node.get("$ref")
    if ref:
        return schema["$defs"][ref.split("/")[-1]]
    return node


_TITLES: dict[str, str] = {}
"""$defs name → the section that describes it (filled by _sections)."""


def _type(schema: dict, node: dict) -> str:
    if "$ref" in node:
        name = node["$ref"].split("/")[-1]
        return f"mapping (see `{_TITLES[name]}`)" if name in _TITLES else "mapping"
    if "anyOf" in node:
        kinds = [_type(schema, n) for n in node["anyOf"] if n.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    t = node.get("type")
    if t == "array":
        inner = _type(schema, node.get("items", {}))
        return "list of " + (inner.replace("mapping", "mappings", 1) if inner.startswith("mapping") else inner)
    if t == "object":
        inner = node.get("additionalProperties")
        return ("mapping of name → " + _type(schema, inner)) if isinstance(inner, dict) else "mapping"
    if node.get("format") == "date":
        return "date (YYYY-MM-DD)"
    return {"number": "number", "integer": "whole number", "string": "text", "boolean": "true or false"}.get(
        t or "", "any")


def _bounds(node: dict) -> str | None:
    parts = []
    for key, word in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"),
                      ("minLength", "length ≥"), ("minItems", "items ≥")):
        if key in node:
            parts.append(f"{word} {node[key]:,}" if isinstance(node[key], (int, float)) else f"{word} {node[key]}")
    for n in node.get("anyOf", []):
        b = _bounds(n)
        if b:
            parts.append(b)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        inner = _bounds(node["items"])
        if inner:
            parts.append("each " + inner)
    return ", ".join(parts) or None


def _sections(schema: dict) -> list[tuple[str, tuple[str, ...], dict]]:
    """(title, example path, object schema) for the top level and every nested mapping, in reading
    order; a mapping used in several places is described once, where it first appears."""
    out: list[tuple[str, tuple[str, ...], dict]] = []
    seen: set[str] = set()

    def refs(prop: dict, title: str, key: str, path: tuple[str, ...]) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        prefix = "" if title == "plan" else title + "."
        for variant in prop.get("anyOf", [prop]):
            if "$ref" in variant:
                yield variant["$ref"], f"{prefix}{key}", path + (key,)
            items = variant.get("items") if variant.get("type") == "array" else None
            for v in (items.get("anyOf", [items]) if isinstance(items, dict) else []):
                if "$ref" in v:
                    yield v["$ref"], f"{prefix}{key}[]", path + (key, "*")
            values = variant.get("additionalProperties") if variant.get("type") == "object" else None
            for v in (values.get("anyOf", [values]) if isinstance(values, dict) else []):
                if "$ref" in v:
                    yield v["$ref"], f"{prefix}{key}.<name>", path + (key, "*")

    def walk(title: str, path: tuple[str, ...], node: dict) -> None:
        out.append((title, path, node))
        for key, prop in node.get("properties", {}).items():
            for ref, sub_title, sub_path in refs(prop, title, key, path):
                name = ref.split("/")[-1]
                if name not in seen:
                    seen.add(name)
                    _TITLES[name] = sub_title
                    walk(sub_title, sub_path, schema["$defs"][name])

    walk("plan", (), schema)
    return out


def _example_sources() -> list[tuple[str, Any]]:
    """Shipped YAML that holds real values: the init templates, then the built-in catalogs."""
    out = []
    for folder in (templates_dir() / "plans", catalogs_dir()):
        for path in sorted(folder.glob("*.yaml")):
            out.append((path.name, load_yaml(path, what="example").data))
    return out


def _find(data: Any, path: tuple[str, ...]) -> Iterator[Any]:
    if not path:
        yield data
        return
    head, rest = path[0], path[1:]
    if head == "*":
        items = data if isinstance(data, list) else list(data.values()) if isinstance(data, dict) else []
        for item in items:
            yield from _find(item, rest)
    elif isinstance(data, dict) and head in data:
        yield from _find(data[head], rest)


def _flow(value: Any, limit: int = 70) -> str:
    """A value as YAML flow text, shortened."""
    if isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {_flow(v, limit)}" for k, v in value.items()) + "}"
    elif isinstance(value, list):
        text = "[" + ", ".join(_flow(v, limit) for v in value) + "]"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    else:
        text = str(value)
    if len(text) > limit and not isinstance(value, (dict, list)):
        return text[: limit - 1].rstrip() + "…"
    if len(text) > limit:
        cut = text[: limit - 2].rsplit(",", 1)[0]
        text = cut + ", …" + ("]" if text.startswith("[") else "}" if text.startswith("{") else "")
    return text


def _example(sources: list[tuple[str, Any]], path: tuple[str, ...], key: str, node: dict) -> str | None:
    """The first value the shipped YAML gives the key, else the schema's example or default. None for
    mappings and lists of mappings: their own section shows them."""
    shown = json.dumps(node)
    if '"$ref"' in shown and "additionalProperties" not in shown:
        return None
    for _name, data in sources:
        for holder in _find(data, path):
            if isinstance(holder, dict) and key in holder:
                return f"{key}: {_flow(holder[key])}"
    if node.get("examples"):
        return f"{key}: {_flow(node['examples'][0])}"
    if node.get("default") not in (None, [], {}):
        return f"{key}: {_flow(node['default'])}"
    if "enum" in node:
        return f"{key}: {node['enum'][0]}"
    return None


def _default(node: dict) -> str | None:
    if "default" not in node:
        return None
    d = node["default"]
    if d is None:
        return "none"
    return f"`{_flow(d)}`"


def plan_reference() -> str:
    """docs/plan-reference.md."""
    schema = plan_json_schema()
    sources = _example_sources()
    lines = [
        "# Plan file reference (version 1)",
        "",
        "Generated from planopt's schema by `planopt schema --reference -o docs/plan-reference.md`; do not",
        "edit by hand (a test regenerates it). The same schema as JSON Schema, for editors:",
        f"`planopt schema -o {SCHEMA_FILE}` (templates from `planopt init` point at it).",
        "",
        "Every key below is optional unless marked **required**. Unknown keys are errors with a",
        f"suggestion; keys starting with `{EXTENSION_PREFIX}` at the top level and in workloads are",
        "ignored — a home for YAML anchors (`x-curves: {weekday: &weekday [...]}`) that workloads reuse.",
        "Examples come from the templates (`planopt init --template …`) and the built-in catalogs.",
        "",
    ]
    for title, path, node in _sections(schema):
        required = set(node.get("required", []))
        lines += [f"## `{title}`", ""]
        desc = node.get("description")
        if desc and title != "plan":
            lines += [" ".join(desc.split()), ""]
        for key, prop in node.get("properties", {}).items():
            facts = [_type(schema, prop)]
            if key in required:
                facts.append("**required**")
            default = _default(prop)
            if default is not None and key not in required:
                facts.append(f"default {default}")
            bounds = _bounds(prop)
            if bounds:
                facts.append(bounds)
            unit = None if facts[0].startswith(("mapping", "list of mappings")) else _unit(key)
            if unit:
                facts.append(f"unit: {unit}")
            text = " ".join(prop.get("description", "").split())
            example = _example(sources, path, key, prop)
            entry = f"- **`{key}`** — {'; '.join(facts)}."
            if text:
                entry += f" {text}"
            if example:
                entry += f" Example: `{example}`"
            lines.append(entry)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def reference_keys() -> set[str]:
    """Every `section.key` the reference documents (the test walks the schema against it)."""
    schema = plan_json_schema()
    return {f"{title}.{key}" for title, _path, node in _sections(schema) for key in node.get("properties", {})}


