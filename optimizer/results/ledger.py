"""The commitment ledger from quarter to quarter: `planopt solve NEXT.yaml --carry LAST.json`.

LAST's new reservations and the signed contracts still running on NEXT's first day join NEXT's
`commitments` at the price they were signed at, except those NEXT already lists (same offer, tier,
GPUs, start and end). A contract on an offer NEXT does not know is an error: it is still being paid
for, so dropping it silently would understate committed spend.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from optimizer import formatting
from optimizer.errors import Collector, unknown_id_fix
from optimizer.inputs.loading import LoadedPlan
from optimizer.inputs.schema.plan import Commitment, SpendCommitment
from optimizer.optimize.calendar import horizon_end
from optimizer.results.contracts import CarriedContract, CarryInfo, contract_price
from optimizer.results.jsonio import read_result
from optimizer.results.types import PlanResult

__all__ = ["carry_commitments", "with_carry"]


def _entries(last: PlanResult) -> list[CarriedContract]:
    """LAST's signed contracts, then its new reservations, as ledger entries (dates may be missing)."""
    out = [CarriedContract(f"commitments[{i}]", c.offer, c.tier, c.gpus, c.start, c.end, c.price_per_gpu_hour)
           for i, c in enumerate(last.commitments)]
    out += [CarriedContract(f"new_commitments[{i}]", n.offer, n.tier, n.gpus, n.start or "", n.end or "",
                            n.price_per_gpu_hour) for i, n in enumerate(last.new_commitments)]
    return out


def _contract(e: CarriedContract, shown: str, errors: Collector) -> Commitment | None:
    try:
        return Commitment(offer=e.offer, tier=e.tier, gpus=e.gpus, start=dt.date.fromisoformat(e.start),  # type: ignore[arg-type]
                          end=dt.date.fromisoformat(e.end), price_per_gpu_hour=e.price_per_gpu_hour)
    except (ValidationError, ValueError, TypeError) as exc:
        what = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        errors.add(f"not a contract planopt can carry ({what})",
                   "give the JSON `planopt solve` wrote, unedited, or list the contract under the plan's commitments",
                   file=shown, path=e.entry)
        return None


def _label(e: CarriedContract) -> str:
    return f"{e.entry} ({e.offer} {e.tier}, {formatting.plural(e.gpus, 'GPU')}, {e.start} to {e.end})"


def carry_commitments(loaded: LoadedPlan, last: PlanResult | Path | str) -> tuple[LoadedPlan, CarryInfo]:
    """NEXT (`loaded`) with LAST's contracts still running on its first day added to its commitments.

    `last` is a result JSON written by `planopt solve` (or a PlanResult). Raises PlanError naming the
    file and the entry when LAST cannot be carried: not a result, no start_date (its reservations have
    no dates), a plan starting on NEXT's first day or later, or a contract on an offer NEXT does not know.
    """
    if isinstance(last, PlanResult):
        shown = f"the result of {last.file or last.plan}"
    else:
        shown = str(last)
        last = read_result(last, what="last result")
    plan = loaded.plan
    errors = Collector()
    start = plan.start_date
    if start is None:
        errors.add("the plan has no start_date, and carried contracts have dates",
                   "add start_date: YYYY-MM-DD (the horizon's first day)", file=loaded.file)
    if last.start_date is None:
        errors.add("its plan has no start_date, so its reservations have no dates to carry",
                   "add start_date: YYYY-MM-DD to that plan and solve it again, or list its contracts under "
                   "this plan's commitments", file=shown)
    elif start is not None and dt.date.fromisoformat(last.start_date) > start:
        errors.add(f"it is the plan from {last.start_date}, after this plan's first day {start}",
                   "--carry takes the result of the plan before this one", file=shown)
    elif start is not None and dt.date.fromisoformat(last.start_date) == start:
        # the same quarter twice: this plan's own new reservations would come back as contracts already signed
        errors.add(f"it starts on {last.start_date}, the same day as this plan (start_date {start}): it is this "
                   f"quarter's result ('{last.plan}'), not the last quarter's, and its new reservations would be "
                   "counted as contracts already signed",
                   "--carry takes the result of the plan before this one (a start_date before "
                   f"{start}); to keep this quarter's choices, use --baseline", file=shown, path="start_date")
    errors.raise_if_any()
    assert start is not None
    end = horizon_end(plan)
    offers = loaded.catalog.offers
    listed = list(enumerate(plan.commitments))
    carried: list[tuple[CarriedContract, Commitment]] = []
    skipped: list[CarriedContract] = []
    notes: list[str] = []
    for e in _entries(last):
        c = _contract(e, shown, errors)
        if c is None:
            continue
        if c.end < start:
            skipped.append(replace(e, reason=f"ended on {c.end}, before {start}"))
            continue
        if end is not None and c.start > end:
            skipped.append(replace(e, reason=f"starts on {c.start}, after this plan's last day {end}"))
            continue
        if c.offer not in offers:
            errors.add(f"offer '{c.offer}' of this contract ({c.tier}, {formatting.plural(c.gpus, 'GPU')}, {c.start} to "
                       f"{c.end}) is not in {loaded.file}'s offers or catalogs",
                       f"add the offer to {loaded.file} (offers: or a catalog), or list the contract under its "
                       f"commitments with the offer it runs on now; {unknown_id_fix('offers', c.offer, list(offers))}",
                       file=shown, path=e.entry)
            continue
        same = next((j for j, m in listed if (m.offer, m.tier, m.gpus, m.start, m.end)
                     == (c.offer, c.tier, c.gpus, c.start, c.end)), None)
        if same is not None:
            listed = [(j, m) for j, m in listed if j != same]  # one listed contract absorbs one carried
            m = plan.commitments[same]
            ours = contract_price(m, offers.get(m.offer))
            price = "" if abs(ours - e.price_per_gpu_hour) < 5e-7 else \
                f"; its price {ours:g} is kept, not {e.price_per_gpu_hour:g}"
            skipped.append(replace(e, reason=f"already listed: the plan's commitments[{same}]{_at(loaded, same)}{price}"))
            continue
        near = [j for j, m in enumerate(plan.commitments) if (m.offer, m.tier, m.start) == (c.offer, c.tier, c.start)]
        if near:
            m = plan.commitments[near[0]]
            notes.append(f"{shown}: {_label(e)} and commitments[{near[0]}]{_at(loaded, near[0])} "
                         f"({formatting.plural(m.gpus, 'GPU')}, to {m.end}) are on the same offer and tier from the same "
                         "day: both are counted — if they are one contract, list it once with its GPUs and last day")
        carried.append((e, c))
    spend, spend_notes = _carry_spend(loaded, last, shown, errors)
    errors.raise_if_any()
    new_plan = plan.model_copy(update={"commitments": list(plan.commitments) + [c for _e, c in carried],
                                       "spend_commitments": list(plan.spend_commitments) + spend})
    info = CarryInfo(shown, last.plan, [e for e, _c in carried], skipped, [])
    return replace(loaded, plan=new_plan), replace(info, notes=_notes(info) + notes + spend_notes)


def _carry_spend(loaded: LoadedPlan, last: PlanResult, shown: str,
                 errors: Collector) -> tuple[list[SpendCommitment], list[str]]:
    """LAST's spend commitments (signed and new) still running on NEXT's first day, as NEXT's signed ones, but
    those NEXT already lists (same provider, $/hour, discount, start and end); a provider NEXT does not sell is
    an error (it is still being paid for)."""
    plan = loaded.plan
    start, end = plan.start_date, horizon_end(plan)
    assert start is not None
    providers = {o.provider for o in loaded.catalog.offers.values()}
    entries = [(f"spend_commitments[{i}]", c.provider, c.usd_per_hour, c.term, c.discount, c.start, c.end)
               for i, c in enumerate(last.spend_commitments)]
    entries += [(f"new_spend_commitments[{i}]", n.provider, n.usd_per_hour, n.term, n.discount, n.start, n.end)
                for i, n in enumerate(last.new_spend_commitments) if n.start and n.end]
    out: list[SpendCommitment] = []
    said = []
    for entry, provider, u, term, discount, first, last_day in entries:
        try:
            c = SpendCommitment(provider=provider, usd_per_hour=u, term=term,  # type: ignore[arg-type]
                                discount=discount, start=dt.date.fromisoformat(first),
                                end=dt.date.fromisoformat(last_day))
        except (ValidationError, ValueError, TypeError) as exc:
            what = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            errors.add(f"not a spend commitment planopt can carry ({what})",
                       "give the JSON `planopt solve` wrote, unedited, or list it under the plan's spend_commitments",
                       file=shown, path=entry)
            continue
        text = f"{provider} {formatting.money(u, plan.currency, 2)}/hour {term} {c.start} to {c.end}"
        if c.end < start or (end is not None and c.start > end):
            said.append(f"{text} (skipped: it does not run in this horizon)")
            continue
        if provider not in providers:
            errors.add(f"provider '{provider}' of this spend commitment ({text}) sells no offer in {loaded.file}",
                       f"add that provider's offers, or list the commitment under spend_commitments; "
                       f"{unknown_id_fix('providers', provider, sorted(providers))}", file=shown, path=entry)
            continue
        if any((m.provider, round(m.usd_per_hour, 6), m.discount, m.start, m.end)
               == (provider, round(u, 6), discount, c.start, c.end) for m in plan.spend_commitments):
            said.append(f"{text} (skipped: already listed under spend_commitments)")
            continue
        out.append(c)
        said.append(text)
    if not said:
        return out, []
    return out, [f"spend commitments from {shown} ({last.plan}) carried into spend_commitments: " + "; ".join(said)]


def _at(loaded: LoadedPlan, j: int) -> str:
    line = loaded.doc.line(("commitments", j))
    return f" at {loaded.file}:{line}" if line else ""


def _notes(info: CarryInfo) -> list[str]:
    """How many were carried and skipped, and which: what `solve` says and the JSON keeps."""
    new = sum(e.entry.startswith("new_") for e in info.carried)
    kinds = [formatting.plural(new, "new reservation") if new else "",
             formatting.plural(len(info.carried) - new, "signed contract") if len(info.carried) > new else ""]
    head = (f"carried {formatting.plural(len(info.carried), 'contract')} from {info.file} ({info.plan}) into the "
            f"commitments")
    if info.carried:
        head += (f" ({' and '.join(k for k in kinds if k)}): "
                 + "; ".join(f"{e.offer} {e.tier} {formatting.plural(e.gpus, 'GPU')} {e.start} to {e.end}"
                             for e in info.carried))
    if info.skipped:
        head += f"; skipped {len(info.skipped)}: " + "; ".join(
            f"{e.offer} {e.tier} {formatting.plural(e.gpus, 'GPU')} {e.start} to {e.end} ({e.reason})" for e in info.skipped)
    return [head]


def with_carry(result: PlanResult, info: CarryInfo | None) -> PlanResult:
    """The solved result with the ledger's record and notes."""
    if info is None:
        return result
    return replace(result, carried=info, notes=info.notes + result.notes)
