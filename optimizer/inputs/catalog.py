"""Catalogs merged from files and plan-local entries, with lookups by id and 'did you mean'."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ruamel.yaml import YAML

from optimizer.errors import Collector, PlanError, Problem, unknown_id_fix
from optimizer.inputs.document import Document, load_yaml, validate
from optimizer.inputs.schema.catalog import (
    Accelerator,
    CatalogFile,
    Model,
    Offer,
    Precision,
    System,
)
from optimizer.inputs.schema.engines import CatalogFileWithEngines, Engine
from optimizer.inputs.schema.estimator import EstimatorParams
from optimizer.resources import catalogs_dir

SECTIONS = ("accelerators", "models", "precisions", "offers", "systems", "engines")
BUILTIN_FILES = ("precisions.yaml", "accelerators.yaml", "models.yaml", "offers.yaml", "systems.yaml", "engines.yaml")


@dataclass(frozen=True)
class Origin:
    file: str
    line: int | None


@dataclass
class Catalog:
    """Every known accelerator, model, precision, offer and system to buy, by id (later entries override)."""

    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    precisions: dict[str, Precision] = field(default_factory=dict)
    offers: dict[str, Offer] = field(default_factory=dict)
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    """Precision aliases (nvfp4 -> fp4)."""
    estimator: EstimatorParams = field(default_factory=EstimatorParams)
    """The goodput estimator's efficiencies (catalogs/estimator.yaml)."""
    systems: dict[str, System] = field(default_factory=dict)
    """Servers and racks to buy (catalogs/systems.yaml and catalog files; never plan-inline)."""
    engines: dict[str, Engine] = field(default_factory=dict)
    """Serving engines, in catalog order (catalogs/engines.yaml and catalog files; never plan-inline)."""

    def add(self, section: str, entry: Any, origin: Origin) -> None:
        getattr(self, section)[entry.id] = entry
        self.origins[(section, entry.id)] = origin
        if section == "precisions":
            for alias in entry.aliases:
                self.aliases[alias] = entry.id

    def engine_id(self, name: str) -> str | None:
        """The engine a name or alias means ('TensorRT-LLM', 'tensorrt_llm' → 'trtllm'); None when unknown."""
        key = name.strip().lower()
        for e in self.engines.values():
            if key == e.id or key in (a.lower() for a in e.aliases) or key == (e.name or "").lower():
                return e.id
        return None

    def precision_id(self, name: str) -> str:
        return self.aliases.get(name, name)

    def get(self, section: str, name: str) -> Any:
        """Look up by id; raise PlanError with 'did you mean' when unknown."""
        table = getattr(self, section)
        key = self.precision_id(name) if section == "precisions" else name
        if key in table:
            return table[key]
        raise PlanError(Problem(f"unknown {section[:-1]} '{name}'",
                                unknown_id_fix(section, name, list(table))))

    def accelerator(self, name: str) -> Accelerator:
        return self.get("accelerators", name)

    def model(self, name: str) -> Model:
        return self.get("models", name)

    def precision(self, name: str) -> Precision:
        return self.get("precisions", name)

    def offer(self, name: str) -> Offer:
        return self.get("offers", name)

    def system(self, name: str) -> System:
        return self.get("systems", name)

    def copy(self) -> "Catalog":
        return Catalog(dict(self.accelerators), dict(self.models), dict(self.precisions),
                       dict(self.offers), dict(self.origins), dict(self.aliases), self.estimator,
                       dict(self.systems), dict(self.engines))

    def check_references(self, errors: Collector) -> None:
        """Every offer and system names a known accelerator."""
        for section in ("offers", "systems"):
            table = getattr(self, section)
            for eid in sorted(table):
                entry = table[eid]
                if entry.accelerator not in self.accelerators:
                    origin = self.origins.get((section, eid), Origin("catalog", None))
                    errors.add(f"{section[:-1]} '{eid}' names unknown accelerator '{entry.accelerator}'",
                               unknown_id_fix("accelerators", entry.accelerator, list(self.accelerators)),
                               file=origin.file, line=origin.line, path=f"{section}.{eid}.accelerator")
        known = set(self.precisions) | set(self.aliases)
        for eid, engine in self.engines.items():
            for gen, on in engine.runs_on.items():
                for p in on.precisions or []:
                    if p not in known:
                        origin = self.origins.get(("engines", eid), Origin("catalog", None))
                        errors.add(f"engine '{eid}' names unknown precision '{p}' on {gen}",
                                   unknown_id_fix("precisions", p, list(self.precisions)),
                                   file=origin.file, line=origin.line, path=f"engines.{eid}.runs_on.{gen}.precisions")


def load_catalog_file(path: Path, shown_as: str | None = None, errors: Collector | None = None,
                      *, only: Iterable[str] = SECTIONS) -> tuple[Document, CatalogFile | None]:
    doc = load_yaml(path, shown_as=shown_as, what="catalog file")
    own = errors is None
    errors = errors if errors is not None else Collector()
    data = doc.data
    if not isinstance(data, dict):
        lc = getattr(doc.tree, "lc", None)
        errors.add("a catalog file is a mapping with accelerators:, models:, precisions:, offers:, systems: or engines:",
                   "start the file with e.g. `accelerators:`", file=doc.file,
                   line=lc.line + 1 if lc is not None and lc.line is not None else 1)
        if own:
            errors.raise_if_any()
        return doc, None
    data = {k: v for k, v in data.items() if k in set(only) or k not in SECTIONS}
    cat, problems = validate(doc, CatalogFileWithEngines, data)
    errors.extend(problems)
    if cat is not None:
        _check_unique(doc, cat, errors)
    if own:
        errors.raise_if_any()
    return doc, cat


def _check_unique(doc: Document, cat: CatalogFile, errors: Collector) -> None:
    for section in SECTIONS:
        seen: dict[str, int] = {}
        for i, entry in enumerate(getattr(cat, section, ())):
            if entry.id in seen:
                errors.extend([doc.problem((section, i, "id"),
                                           f"duplicate id '{entry.id}' (also {section}[{seen[entry.id]}])",
                                           "give each entry its own id")])
            seen.setdefault(entry.id, i)


def merge_file(catalog: Catalog, doc: Document, cat: CatalogFile,
               lines: dict[tuple[str, int], int] | None = None) -> None:
    for section in SECTIONS:
        for i, entry in enumerate(getattr(cat, section, ())):
            line = lines.get((section, i)) if lines is not None else doc.line((section, i))
            catalog.add(section, entry, Origin(doc.file, line))


@functools.lru_cache(maxsize=None)
def _builtin_file(path: Path, shown: str, mtime_ns: int) -> tuple[Document, CatalogFile, dict[tuple[str, int], int]]:
    """A shipped catalog file, read fast: the C YAML parser where ruamel.yaml.clib is installed (no
    line marks), each entry's line found by a scan of its `- ` item marks. The shipped files are
    plain data checked by the tests (tests/inputs/test_catalogs.py compares this with the careful reader)."""
    text = path.read_text(encoding="utf-8-sig")
    data = YAML(typ="safe", pure=False).load(text)
    doc = Document(shown, path, None, data)
    cat, problems = validate(doc, CatalogFileWithEngines, data)
    if cat is None:
        raise PlanError(problems)
    return doc, cat, entry_lines(text)


def entry_lines(text: str) -> dict[tuple[str, int], int]:
    """(section, index) → 1-based line of each list item under a top-level `section:` key."""
    out: dict[tuple[str, int], int] = {}
    section, indent, index = None, None, 0
    for n, line in enumerate(text.splitlines(), start=1):
        top = re.match(r"^([A-Za-z_][\w-]*):", line)
        if top:
            section, indent, index = top.group(1), None, 0
            continue
        item = re.match(r"^(\s*)- ", line)
        if section and item and (indent is None or len(item.group(1)) == indent):
            indent = len(item.group(1))
            out[(section, index)] = n
            index += 1
    return out


def builtin_catalog(*, include_data: bool = True) -> Catalog:
    """The shipped catalogs (precisions and serving engines always: the vocabulary plans use; accelerators,
    models, offers and systems when asked)."""
    catalog = Catalog()
    errors = Collector()
    root = catalogs_dir()
    files = BUILTIN_FILES if include_data else ("precisions.yaml", "engines.yaml")
    for name in files:
        path = root / name
        if not path.exists():
            continue
        doc, cat, lines = _builtin_file(path, f"<builtin>/{name}", path.stat().st_mtime_ns)
        merge_file(catalog, doc, cat, lines)
    errors.raise_if_any()
    estimator = root / "estimator.yaml"
    if estimator.exists():
        catalog.estimator = load_estimator_params(estimator)
    return catalog


def load_catalog(extra: Iterable[Path | str] = (), *, builtin: bool = True) -> Catalog:
    """Built-in catalogs, then each extra file in order (same id overrides)."""
    catalog = builtin_catalog(include_data=builtin)
    errors = Collector()
    for p in extra:
        doc, cat = load_catalog_file(Path(p), shown_as=str(p), errors=errors)
        if cat is not None:
            merge_file(catalog, doc, cat)
    catalog.check_references(errors)
    errors.raise_if_any()
    return catalog


def load_estimator_params(path: str | Path | None = None) -> EstimatorParams:
    """EstimatorParams from `path` (default: the built-in catalogs/estimator.yaml)."""
    file = Path(path) if path is not None else catalogs_dir() / "estimator.yaml"
    data = YAML(typ="safe").load(file.read_text(encoding="utf-8-sig"))
    if not isinstance(data, dict) or "estimator" not in data:
        raise ValueError(f"{file}: expected a top-level 'estimator:' mapping")
    return EstimatorParams.model_validate(data["estimator"])
