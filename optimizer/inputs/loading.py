"""Load a plan file: validate it, resolve its catalogs, check every cross-reference."""

from __future__ import annotations

import copy
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from optimizer.errors import Collector, PlanError, Problem, did_you_mean, unknown_id_fix
from optimizer.inputs import own
from optimizer.inputs.catalog import (
    Catalog,
    Origin,
    builtin_catalog,
    load_catalog_file,
    merge_file,
)
from optimizer.inputs.derived import ProgramInput, peak_derivation, program_input
from optimizer.inputs.document import Document, _is_branch_label, format_loc, line_of, load_yaml, validate
from optimizer.inputs.schema.catalog import Offer, PaymentPrices
from optimizer.inputs.schema.plan import MAX_TOKENS_PER_S, MIN_TOKENS_PER_S, Plan
from optimizer.vocab import PAYMENT_OPTIONS, TIERS


@dataclass(frozen=True)
class LoadedPlan:
    plan: Plan
    catalog: Catalog
    doc: Document

    @property
    def file(self) -> str:
        return self.doc.file

    @property
    def program_input(self) -> ProgramInput:
        """What the plan carries beyond its fields once prepared for the program (inputs.derived)."""
        return program_input(self.plan)


def load_plan(path: Path | str, extra_catalogs: list[Path | str] = ()) -> LoadedPlan:
    """Read and validate a plan; raise PlanError listing every problem at once."""
    doc = load_yaml(path, what="plan file")
    errors = Collector()
    if not isinstance(doc.data, dict):
        lc = getattr(doc.tree, "lc", None)
        line = lc.line + 1 if lc is not None and lc.line is not None else 1
        raise PlanError(Problem("a plan is a mapping of keys (plan:, horizon_days:, workloads:, …)",
                                "`planopt init` writes a commented plan to start from", file=doc.file, line=line))
    other = _another_kind(doc.data)
    if other is not None:  # one line for what the file is, not one per key it has that a plan does not
        raise PlanError(Problem(other[0], other[1], file=doc.file, line=1))
    plan, problems = validate(doc, Plan)
    errors.extend(problems)
    if plan is None:
        # every problem in one round: the references of the parts that validated are checked too
        plan, doc = _partial(doc)
        if plan is None:
            errors.raise_if_any()
    assert plan is not None
    catalog = _resolve_catalogs(plan, doc, list(extra_catalogs), errors)
    _allowed_payments(plan, catalog)
    own.resolve(plan, catalog, lambda loc, msg, fix=None: errors.extend([doc.problem(loc, msg, fix)]),
                doc.line, doc.file)
    _check_plan(plan, doc, catalog, errors)
    if errors and isinstance(doc, _PartialDocument):
        exc = PlanError(errors.problems)
        exc.partial = (LoadedPlan(plan, catalog, doc), errors.problems[len(problems):])  # type: ignore[attr-defined]
        raise exc
    errors.raise_if_any()
    return LoadedPlan(plan, catalog, doc)


def sound_part(exc: PlanError) -> LoadedPlan | None:
    """The part of a plan that did not load whose physics can still be checked (`validate` reports it in the
    same round): its workloads without a problem, when every problem found is a workload's or an unknown key
    (a policy value, a commitment or a scenario left out would change the rest); None otherwise."""
    partial = getattr(exc, "partial", None)
    if partial is None:
        return None
    loaded, _found = partial
    doc = loaded.doc
    assert isinstance(doc, _PartialDocument)
    bad = set()
    for p in exc.problems:
        m = _WORKLOAD.match(p.path or "")
        if m is not None:
            bad.add(int(m.group(1)))
        elif not p.message.startswith("unknown key"):  # a key left out changes nothing; a value left out would
            return None
    kept = [w for k, w in enumerate(loaded.plan.workloads) if doc.original(("workloads", k))[1] not in bad]
    if not kept:
        return None
    marked = copy.deepcopy(doc.marked)
    for k in range(len(loaded.plan.workloads)):
        if doc.original(("workloads", k))[1] in bad:
            _mark_gone(marked, ("workloads", doc.original(("workloads", k))[1]))
    narrow = _PartialDocument(doc.file, doc.path, doc.tree, doc.data, marked)
    return LoadedPlan(loaded.plan.model_copy(update={"workloads": kept}), loaded.catalog, narrow)


_WORKLOAD = re.compile(r"workloads\[(\d+)\]")


class _Gone:
    """A key or list item left out of a partial plan (it did not validate): one object, copies included."""

    def __deepcopy__(self, memo: dict) -> _Gone:
        return self


_GONE = _Gone()
PARTIAL_ROUNDS = 4
"""Times a plan that did not validate is pruned and validated again before its references go unchecked: a value
left out, then (when its key is required) the entry holding it, then that entry's own holder."""


@dataclass(frozen=True)
class _PartialDocument(Document):
    """The document of a plan with its invalid parts left out: a key path of the partial plan is shown as the
    file's own (workloads[1] of the partial plan is the file's workloads[2] when workloads[0] was left out)."""

    marked: Any = None

    def original(self, loc: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
        return _original(self.marked, tuple(loc))

    def line(self, loc: tuple[Any, ...] | list[Any]) -> int | None:
        return line_of(self.tree, self.original(loc))

    def problem(self, loc: tuple[Any, ...] | list[Any], message: str, fix: str | None = None) -> Problem:
        full = self.original(loc)
        return Problem(message, fix, file=self.file, line=line_of(self.tree, full), path=format_loc(full))


def _partial(doc: Document) -> tuple[Plan | None, Document]:
    """The plan without the keys and list entries that did not validate (None when no such plan validates: a
    required top-level key is wrong), and a document that shows its key paths as the file's."""
    from pydantic import ValidationError

    marked = copy.deepcopy(doc.data)
    for _round in range(PARTIAL_ROUNDS):
        data = _without_gone(marked)
        try:
            plan = Plan.model_validate(data)
        except ValidationError as exc:
            targets = []
            for e in exc.errors(include_url=False):
                loc = tuple(p for p in e["loc"] if not _is_branch_label(p) and p != "[key]")
                if e["type"] == "missing":
                    loc = loc[:-1]
                if len(loc) < 2:  # a top-level key: the plan cannot stand without it
                    return None, doc
                targets.append(_original(marked, loc))
            for loc in sorted(set(targets), key=len, reverse=True):
                _mark_gone(marked, loc)
            continue
        except (ValueError, TypeError, RecursionError):
            return None, doc
        return plan, _PartialDocument(doc.file, doc.path, doc.tree, doc.data, marked)
    return None, doc


def _without_gone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_gone(v) for k, v in value.items() if v is not _GONE}
    if isinstance(value, list):
        return [_without_gone(v) for v in value if v is not _GONE]
    return value


def _original(marked: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A key path of the pruned data as a key path of the file (list indices counted over the items kept)."""
    out: list[Any] = []
    node = marked
    for part in loc:
        if isinstance(node, list) and isinstance(part, int):
            kept = [i for i, v in enumerate(node) if v is not _GONE]
            if not 0 <= part < len(kept):
                return tuple(out) + (part,) + loc[len(out) + 1:]
            out.append(kept[part])
            node = node[kept[part]]
        elif isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        else:
            return tuple(out) + loc[len(out):]
    return tuple(out)


def _mark_gone(marked: Any, loc: tuple[Any, ...]) -> None:
    node = marked
    for part in loc[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return
    try:
        if isinstance(node, (dict, list)):
            node[loc[-1]] = _GONE
    except (KeyError, IndexError, TypeError):
        pass


RESULT_KEYS = frozenset({"status", "cost", "solver", "purchases"})
"""Keys every result planopt writes has, and a plan never."""
LOAD_TEST_KEYS = frozenset({"output_throughput", "request_throughput", "mean_ttft_ms", "median_ttft_ms",
                            "completed", "input_config", "total_input_tokens"})
"""Keys of the load-test summaries calibrate --bench reads (vLLM's benchmark_serving, GenAI-Perf, AIPerf)."""


def _another_kind(data: dict) -> tuple[str, str] | None:
    """(what the file is, what to do) when a mapping is a planopt result or a load test's summary, not a plan."""
    keys = set(data)
    if RESULT_KEYS <= keys:
        return ("this is a planopt result (what `planopt solve` writes), not a plan",
                "give the plan YAML it was solved from; `planopt report` and `planopt compare` read results")
    if len(keys & LOAD_TEST_KEYS) >= 2 and "workloads" not in keys:
        return ("this is a load test's results, not a plan",
                "give the plan YAML; a load test goes to `planopt calibrate PLAN --bench FILE`")
    return None


def _resolve_catalogs(plan: Plan, doc: Document, extra: list[Path | str], errors: Collector) -> Catalog:
    names = list(plan.catalogs)
    catalog = builtin_catalog(include_data="builtin" in names)
    plan_dir = doc.path.resolve().parent
    cwd = Path.cwd().resolve()
    for i, name in enumerate(names):
        if name == "builtin":
            continue
        raw = Path(name)
        if raw.is_absolute():
            path = raw
        else:
            path = (plan_dir / raw).resolve()
            if not (_inside(path, plan_dir) or _inside(path, cwd)):
                errors.extend([doc.problem(("catalogs", i),
                                           f"catalog path '{name}' leaves the plan's folder and the current folder",
                                           "keep catalogs beside the plan, or give an absolute path")])
                continue
        if not path.exists():
            guess = _sibling_guess(path, name)
            errors.extend([doc.problem(("catalogs", i), f"catalog file '{name}' does not exist",
                                       f"did you mean '{guess}'?" if guess else
                                       f"looked for {path}; fix the path or write `builtin`")])
            continue
        if path.is_dir():
            errors.extend([doc.problem(("catalogs", i), f"catalog path '{name}' is a folder",
                                       "name a .yaml file in it, or write `builtin`")])
            continue
        try:
            cdoc, cat = load_catalog_file(path, shown_as=_shown(path), errors=errors)
        except PlanError as exc:
            errors.extend(exc.problems)
            continue
        if cat is not None:
            merge_file(catalog, cdoc, cat)
    for p in extra:
        try:
            cdoc, cat = load_catalog_file(Path(p), shown_as=str(p), errors=errors)
        except PlanError as exc:
            errors.extend(exc.problems)
            continue
        if cat is not None:
            merge_file(catalog, cdoc, cat)
    # Plan-local entries come last and override.
    for section in ("accelerators", "models", "offers"):
        seen: dict[str, int] = {}
        for i, entry in enumerate(getattr(plan, section)):
            if entry.id in seen:
                errors.extend([doc.problem((section, i, "id"), f"duplicate id '{entry.id}'",
                                           f"{section}[{seen[entry.id]}] has the same id; rename one")])
            seen.setdefault(entry.id, i)
            if section == "offers" and entry.id in catalog.offers:
                entry = over_catalog_offer(catalog.offers[entry.id], entry)
            catalog.add(section, entry, Origin(doc.file, doc.line((section, i))))
    return catalog


def _allowed_payments(plan: Plan, catalog: Catalog) -> None:
    """Offers' payment options narrowed to policy.payment (an offer's price is then the cheapest option left);
    a reserved tier with none left is not sold. A single price is the no_upfront one."""
    allowed = set(plan.policy.payment)
    if allowed == set(PAYMENT_OPTIONS):
        return
    for oid, offer in list(catalog.offers.items()):
        prices: dict = {}
        for tier, p in offer.price_per_gpu_hour.items():
            if isinstance(p, PaymentPrices):
                kept = {o: v for o, v in p.options().items() if o in allowed}
                if kept:
                    prices[tier] = PaymentPrices(**kept)
            elif not tier.startswith("reserved") or "no_upfront" in allowed:
                prices[tier] = p
        if prices != offer.price_per_gpu_hour:
            catalog.offers[oid] = offer.model_copy(update={"price_per_gpu_hour": prices})


KEPT_FROM_CATALOG = ("region", "unit", "scale_up_gpus", "scale_out_gb_s", "max_gpus_per_instance", "available_gpus",
                     "spot_interruption", "buy")
"""What a plan's offer with a catalog offer's id keeps from the catalog when it does not write it: the machine and
its terms. Not the prices (written by the plan: every tier it lists, and no other is sold), nor source, as_of and
notes (they speak of the catalog's figures)."""


def over_catalog_offer(catalog_offer: Offer, plan_offer: Offer) -> Offer:
    """The catalog's offer with the fields the plan's entry writes (same id): a plan that restates an offer to
    give its negotiated prices and caps keeps the catalog's spot interruption rate, region and machine (they had
    fallen to their defaults: spot never interrupted, a plan 5% too cheap). An entry for another accelerator or
    machine size is another offer under the same id: it keeps nothing."""
    if (plan_offer.accelerator, plan_offer.gpus_per_node) != (catalog_offer.accelerator, catalog_offer.gpus_per_node):
        return plan_offer
    kept = {k: getattr(catalog_offer, k) for k in KEPT_FROM_CATALOG if k not in plan_offer.model_fields_set}
    return plan_offer.model_copy(update=kept)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _shown(path: Path) -> str:
    """A catalog's path in messages: relative when it is under the current folder, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _sibling_guess(path: Path, name: str) -> str | None:
    """A file beside the missing one with a close name ('extra.yml' for 'extra.yaml')."""
    try:
        names = [p.name for p in path.parent.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()]
    except OSError:
        return None
    guess = did_you_mean(path.name, names)
    return str(Path(name).with_name(guess)) if guess else None


def _check_plan(plan: Plan, doc: Document, catalog: Catalog, errors: Collector) -> None:
    def err(loc: tuple, msg: str, fix: str | None = None) -> None:
        errors.extend([doc.problem(loc, msg, fix)])

    days = plan.day_type_days()
    if plan.day_types and sum(days.values()) != plan.horizon_days:
        err(("day_types",), f"day types add up to {sum(days.values())} days, horizon_days is {plan.horizon_days}",
            "make the days of the day types add up to horizon_days")

    catalog.check_references(errors)
    names: dict[str, int] = {}
    pools = sorted({w.pool for w in plan.workloads})
    for i, w in enumerate(plan.workloads):
        base = ("workloads", i)
        if w.name in names:
            err(base + ("name",), f"duplicate workload name '{w.name}'",
                f"workloads[{names[w.name]}] has the same name; names are unique")
        names.setdefault(w.name, i)
        if w.model is not None and w.model not in catalog.models:
            err(base + ("model",), f"unknown model '{w.model}'",
                unknown_id_fix("models", w.model, list(catalog.models)))
        draft = w.speculative.draft_model if w.speculative is not None else None
        if draft is not None and draft not in catalog.models:
            err(base + ("speculative", "draft_model"), f"unknown model '{draft}'",
                unknown_id_fix("models", draft, list(catalog.models)))
        for j, p in enumerate(w.precisions):
            if catalog.precision_id(p) not in catalog.precisions:
                err(base + ("precisions", j), f"precision '{p}' is not in the catalog",
                    unknown_id_fix("precisions", p, list(catalog.precisions)))
        for j, a in enumerate(w.accelerators or []):
            if a not in catalog.accelerators:
                err(base + ("accelerators", j), f"unknown accelerator '{a}'",
                    unknown_id_fix("accelerators", a, list(catalog.accelerators)))
        for j, o in enumerate(w.offers or []):
            if o not in catalog.offers:
                err(base + ("offers", j), f"unknown offer '{o}'", unknown_id_fix("offers", o, list(catalog.offers)))
        regions = sorted({o.region for o in catalog.offers.values()} - {"any"})
        for j, r in enumerate(w.regions or []):
            if r not in regions:
                err(base + ("regions", j), f"no offer is in region '{r}'", unknown_id_fix("regions", r, regions))
        for j, m in enumerate(w.measured):
            loc = base + ("measured", j)
            if m.accelerator not in catalog.accelerators:
                err(loc + ("accelerator",), f"unknown accelerator '{m.accelerator}'",
                    unknown_id_fix("accelerators", m.accelerator, list(catalog.accelerators)))
            if catalog.precision_id(m.precision) not in catalog.precisions:
                err(loc + ("precision",), f"unknown precision '{m.precision}'",
                    unknown_id_fix("precisions", m.precision, list(catalog.precisions)))
            elif catalog.precision_id(m.precision) not in w.precisions:
                err(loc + ("precision",), f"measured at {m.precision}, which the workload does not accept",
                    f"add {m.precision} to workloads[{i}].precisions or remove this measurement")
            if m.mig is not None and m.accelerator in catalog.accelerators:
                profiles = [p.name for p in catalog.accelerators[m.accelerator].mig_profiles]
                if m.mig not in profiles:
                    err(loc + ("mig",), f"{m.accelerator} has no MIG profile '{m.mig}'",
                        unknown_id_fix("MIG profiles", m.mig, profiles))
        if w.reserve_gpus is not None:
            for j, a in enumerate(w.reserve_gpus.accelerators or []):
                if a not in catalog.accelerators:
                    err(base + ("reserve_gpus", "accelerators", j), f"unknown accelerator '{a}'",
                        unknown_id_fix("accelerators", a, list(catalog.accelerators)))
        if isinstance(w.demand and w.demand.profile, dict):
            unknown = [d for d in w.demand.profile if d not in days]  # type: ignore[union-attr]
            for dt_name in unknown:
                fix = ("the plan has no day_types: add day_types: {weekday: …, weekend: …} (days adding up "
                       "to horizon_days), or give one plain list of 24 values" if not plan.day_types
                       else unknown_id_fix("day types", dt_name, list(days)))
                err(base + ("demand", "profile", dt_name), f"unknown day type '{dt_name}'", fix)
            missing = [d for d in days if d not in w.demand.profile]  # type: ignore[union-attr,operator]
            if missing and not (unknown and not plan.day_types):
                err(base + ("demand", "profile"), f"no profile for day type {', '.join(missing)}",
                    "give a 24-value profile for every day type, or one plain list for all")
        derived = peak_derivation(plan, w)
        if derived is not None and derived.peak_output_tokens_per_s > MAX_TOKENS_PER_S:
            err(base + ("demand",), f"the business numbers give a peak of {derived.peak_output_tokens_per_s:.3g} "
                f"output tokens/s, beyond the limit of {MAX_TOKENS_PER_S:.0e}",
                "check users, requests per active user and tokens.output, and their units (a share is 0.3, not 30)")
        if derived is not None and derived.peak_output_tokens_per_s < MIN_TOKENS_PER_S:
            err(base + ("demand",), f"the business numbers give a peak of {derived.peak_output_tokens_per_s:.3g} "
                f"output tokens/s, below the least planopt plans ({MIN_TOKENS_PER_S:g})",
                "check users, active_share, requests per active user and tokens.output, and their units")
        by_month = w.demand.peak_by_month if w.demand is not None else None
        if by_month:
            if plan.start_date is None:
                err(base + ("demand", "peak_by_month"), "peaks by month need the horizon's dates; the plan has no "
                    "start_date", "add start_date: YYYY-MM-DD (the horizon's first day)")
            else:
                months = set(_horizon_months(plan))
                for m in by_month:
                    if m not in months:
                        err(base + ("demand", "peak_by_month", m), f"month {m} is outside the horizon "
                            f"({min(months)} to {max(months)})", "list only months the horizon covers, or move "
                            "start_date / horizon_days")
        model = catalog.models.get(w.model) if w.model is not None else None
        if model is not None and model.max_context and w.tokens is not None and w.context > model.max_context:
            held = (f"context_tokens {w.context_tokens:,}" if w.context_tokens is not None else
                    f"{w.context:,} tokens (input {w.tokens.input:,g} + output {w.tokens.output:,g})")
            err(base + (("context_tokens",) if w.context_tokens is not None else ("tokens",)),
                f"{w.model} supports {model.max_context:,} tokens of context; this workload's sequences hold {held}",
                "shorten the requests, pick a model with a longer context, or — if you serve it with RoPE scaling "
                "(YaRN) — give the model's max_context in a plan catalog entry")
        if w.tokens is not None and w.context_tokens is not None and w.context_tokens < w.tokens.input:
            err(base + ("context_tokens",), f"context_tokens {w.context_tokens} is below the mean input "
                f"{w.tokens.input:g}", "the working context is at least input + output tokens")
    for j, pool in enumerate(plan.policy.spot_pools):
        if pool not in pools and pool not in ("batch", "experiments"):
            guess = did_you_mean(pool, pools)
            err(("policy", "spot_pools", j), f"no workload is in pool '{pool}'",
                f"did you mean '{guess}'?" if guess else f"pools in this plan: {', '.join(pools)}")
    for j, pool in enumerate(plan.policy.share_pools):
        if pool not in pools:
            guess = did_you_mean(pool, pools)
            err(("policy", "share_pools", j), f"no workload is in pool '{pool}': nothing there can share a GPU",
                f"did you mean '{guess}'?" if guess else f"pools in this plan: {', '.join(pools)}")
    providers = sorted({o.provider for o in catalog.offers.values()})
    for j, prov in enumerate(plan.policy.providers or []):
        if prov not in providers:
            err(("policy", "providers", j), f"no offer is from provider '{prov}'",
                unknown_id_fix("providers", prov, providers))
    for j, c in enumerate(plan.commitments):
        if c.offer not in catalog.offers:
            err(("commitments", j, "offer"), f"unknown offer '{c.offer}'",
                unknown_id_fix("offers", c.offer, list(catalog.offers)))
        elif catalog.offers[c.offer].provider == "own":
            err(("commitments", j, "offer"), f"'{c.offer}' is your own servers (owned:), not an offer to sign a "
                "contract on", "give the rented offer the contract is with; servers you own are listed under "
                "owned: and cost no contract")
        elif c.price_per_gpu_hour is None and catalog.offers[c.offer].price(c.tier) is None:
            err(("commitments", j, "tier"), f"offer '{c.offer}' has no {c.tier} price to cost this contract",
                f"give the contract's price: price_per_gpu_hour: … (per GPU-hour, {plan.currency})")
    if plan.commitments and plan.start_date is None:
        err(("commitments",), "commitments have dates, the plan has no start_date",
            "add start_date: YYYY-MM-DD (the horizon's first day)")
    _check_spend(plan, catalog, err)
    _check_split(plan, err)
    _check_scenarios(plan, catalog, err)
    _check_engines(plan, catalog, err)
    _check_currency(plan, catalog, err)
    unknown_tiers = [t for t in plan.policy.tiers if t not in TIERS]
    if unknown_tiers:
        err(("policy", "tiers"), f"unknown tier {unknown_tiers[0]}", f"tiers are {', '.join(TIERS)}")


def _check_spend(plan: Plan, catalog: Catalog, err) -> None:
    """Savings plans and signed spend commitments name a provider that sells on demand, and offers of it."""
    rented = sorted({o.provider for o in catalog.offers.values() if o.provider != "own"})
    for key, entries in (("savings_plans", plan.savings_plans), ("spend_commitments", plan.spend_commitments)):
        for j, sp in enumerate(entries):
            if sp.provider not in rented:
                err((key, j, "provider"), f"no offer is from provider '{sp.provider}'",
                    unknown_id_fix("providers", sp.provider, rented))
                continue
            for i, o in enumerate(sp.offers or []):
                offer = catalog.offers.get(o)
                if offer is None:
                    err((key, j, "offers", i), f"unknown offer '{o}'", unknown_id_fix("offers", o, list(catalog.offers)))
                elif offer.provider != sp.provider:
                    err((key, j, "offers", i), f"offer '{o}' is from {offer.provider}, not {sp.provider}",
                        f"list only {sp.provider}'s offers, or give another savings plan for {offer.provider}")
    if plan.spend_commitments and plan.start_date is None:
        err(("spend_commitments",), "spend commitments have dates, the plan has no start_date",
            "add start_date: YYYY-MM-DD (the horizon's first day)")


def _check_split(plan: Plan, err) -> None:
    """split: by_size and any are planned for interactive workloads with occupancy, spares, rollout and whole
    replicas; the combinations they do not plan are refused rather than ignored."""
    for i, w in enumerate(plan.workloads):
        mode = w.split_mode(plan.policy)
        if mode == "none":
            continue
        loc = ("workloads", i, "split") if w.split is not None else ("policy", "split")
        if w.kind != "interactive":
            err(loc, f"workload '{w.name}' is a {w.kind} workload; split: {mode} divides interactive traffic",
                "set split: none on it")
        elif plan.policy.size_commitments_at == "low":
            err(loc, f"workload '{w.name}': split: {mode} does not plan policy.size_commitments_at: low yet",
                "set size_commitments_at: estimate, or split: none")


def _check_engines(plan: Plan, catalog: Catalog, err) -> None:
    """Every engine a plan names is a catalog engine id; a workload's engine and its measured points' engines are
    among the engines the policy allows."""
    def unknown(loc: tuple, name: str) -> bool:
        if name in catalog.engines:
            return False
        alias, guess = catalog.engine_id(name), did_you_mean(name, list(catalog.engines))
        known = f"known engines: {', '.join(catalog.engines) or 'none (no catalog has an engines: section)'}"
        fix = (f"write '{alias}', that engine's id" if alias else
               f"did you mean '{guess}'? ({known})" if guess else known)
        err(loc, f"unknown engine '{name}'", fix)
        return True

    allowed = plan.policy.engines
    shown = f"policy.engines ([{', '.join(allowed or [])}])"
    for j, e in enumerate(allowed or []):
        if not unknown(("policy", "engines", j), e) and e in allowed[:j]:  # type: ignore[index]
            err(("policy", "engines", j), f"lists engine '{e}' twice", "list each engine once")
    for i, w in enumerate(plan.workloads):
        base = ("workloads", i)
        if w.engine is not None and not unknown(base + ("engine",), w.engine) and allowed and w.engine not in allowed:
            err(base + ("engine",), f"workload '{w.name}' runs on {w.engine}, which {shown} does not allow",
                f"add {w.engine} to policy.engines, or give the workload an engine listed there")
        for j, m in enumerate(w.measured):
            loc = base + ("measured", j, "engine")
            if m.engine is None or unknown(loc, m.engine):
                continue
            if w.engine is not None and m.engine != w.engine:
                err(loc, f"measured on {m.engine}, but the workload runs on {w.engine}",
                    f"give this point's engine as {w.engine}, or remove the workload's engine: to let both compete")
            elif allowed and m.engine not in allowed:
                err(loc, f"measured on {m.engine}, which {shown} does not allow",
                    f"add {m.engine} to policy.engines, or remove this measurement")


def _check_currency(plan: Plan, catalog: Catalog, err) -> None:
    """Built-in offers are priced in USD and planopt converts no currency: a plan in another currency may
    use only offers it prices itself."""
    if plan.currency.upper() == "USD":
        return

    def serves(w, o) -> bool:
        if w.reserve_gpus is not None:
            return w.reserve_gpus.accelerators is None or o.accelerator in w.reserve_gpus.accelerators
        return (w.offers is None or o.id in w.offers) and (w.accelerators is None or o.accelerator in w.accelerators)

    usable = sorted(o.id for o in catalog.offers.values()
                    if catalog.origins[("offers", o.id)].file.startswith("<builtin>") and o.provider != "own"
                    and (plan.policy.providers is None or o.provider in plan.policy.providers)
                    and any(serves(w, o) for w in plan.workloads))
    usable += sorted(o.id for o in catalog.offers.values() if o.buy is not None and o.buy.system is not None
                     and o.buy.price_per_node is None and any(serves(w, o) for w in plan.workloads))
    if usable:
        more = f" and {len(usable) - 2} more" if len(usable) > 2 else ""
        err(("currency",), f"{plan.currency}, but the built-in prices this plan may use ({', '.join(usable[:2])}"
            f"{more}) are in USD — planopt converts no currency",
            f"write currency: USD, or price the offers yourself in {plan.currency} (offers: in the plan or a catalog "
            f"file; buy: with price_per_node) and keep workloads to them (policy.providers or each workload's offers:)")


def _horizon_months(plan: Plan) -> list[str]:
    assert plan.start_date is not None
    return sorted({(plan.start_date + dt.timedelta(days=k)).strftime("%Y-%m") for k in range(plan.horizon_days)})


def _check_scenarios(plan: Plan, catalog: Catalog, err) -> None:
    """Scenario weights add up to 1, names are unique, and what they scale exists."""
    if not plan.scenarios:
        if plan.policy.risk.measure != "expected" and plan.policy.estimate_error != "scenarios":
            err(("policy", "risk"), f"risk measure {plan.policy.risk.measure} weighs scenarios, and the plan has none",
                "add scenarios: [{name: …, weight: …, demand: {all: …}}, …], set policy.estimate_error: scenarios, "
                "or remove policy.risk")
        return
    total = sum(s.weight for s in plan.scenarios)
    if abs(total - 1.0) > 1e-6:
        err(("scenarios",), f"scenario weights add up to {total:.6g}, not 1",
            "give each scenario its probability; the weights add up to 1")
    seen: dict[str, int] = {}
    targets = {w.name for w in plan.workloads} | {w.pool for w in plan.workloads} | {"all"}
    keys = {"on-demand", "spot"} | {o.provider for o in catalog.offers.values()}
    for i, s in enumerate(plan.scenarios):
        if s.name in seen:
            err(("scenarios", i, "name"), f"duplicate scenario name '{s.name}'",
                f"scenarios[{seen[s.name]}] has the same name; names are unique")
        seen.setdefault(s.name, i)
        for k in s.demand:
            if k not in targets:
                err(("scenarios", i, "demand", k), f"'{k}' is not a workload, a pool or all",
                    unknown_id_fix("workloads or pools", k, sorted(targets)))
        for k in s.prices:
            if k not in keys:
                why = (" (reserved and bought capacity is bought before the scenario is known, at today's prices)"
                       if k in TIERS else "")
                err(("scenarios", i, "prices", k), f"'{k}' is not an hourly tier or a provider{why}",
                    unknown_id_fix("tiers or providers", k, sorted(keys)))
