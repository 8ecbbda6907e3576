"""`explain` on a workload that may share GPUs (policy.share_pools): does sharing a whole GPU with other workloads
(MPS or time-slicing) beat a MIG slice, or a GPU of its own? Each way's best plan, priced in the whole program
(the chosen config at the plan's cost, the others re-solved with the config forced)."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer import formatting, vocab

WAYS = ("shared", "mig", "own")
"""The ways a small model can run on a GPU: shared with other workloads, on a MIG slice, on GPUs of its own."""

WAY_WORDS = {"shared": "sharing a GPU", "mig": "a MIG slice", "own": "GPUs of its own"}


def way_of(share: str | None, mig: str | None) -> str:
    """The way a config runs: shared, mig or own."""
    return "shared" if share else "mig" if mig else "own"


@dataclass(frozen=True)
class Priced:
    """A config and the whole plan's cost with it (None: no plan, or not re-solved)."""

    way: str
    label: str
    cost: float | None


def sharing_verdict(chosen: Priced, alternatives: list[Priced], currency: str, mode: str) -> str | None:
    """One sentence: what sharing the GPU costs against the best MIG slice and the best GPUs of its own, each the
    cheapest plan priced with that way (None when the workload has no shared config to compare)."""
    best: dict[str, Priced] = {chosen.way: chosen}
    for a in alternatives:
        if a.cost is None or a.way == chosen.way:
            continue
        if a.way not in best or a.cost < best[a.way].cost:  # type: ignore[operator]
            best[a.way] = a
    if "shared" not in best and chosen.way != "shared":
        return None
    how = vocab.SHARE_MODES.get(mode, mode)
    if "shared" not in best:
        return f"sharing a GPU ({how}) was not priced (raise --top to price it)"
    shared = best["shared"]
    parts = []
    for way in ("mig", "own"):
        other = best.get(way)
        if other is None:
            continue
        diff = other.cost - shared.cost  # type: ignore[operator]
        if abs(diff) < 0.005:
            parts.append(f"costs the same as {WAY_WORDS[way]} ({other.label})")
        elif diff > 0:
            parts.append(f"beats {WAY_WORDS[way]} ({other.label}) by {formatting.money(diff, currency)}")
        else:
            parts.append(f"costs {formatting.money(-diff, currency)} more than {WAY_WORDS[way]} ({other.label})")
    if not parts:
        return f"sharing a GPU ({how}): no MIG slice or GPU of its own was priced to compare"
    verdict = "chosen" if chosen.way == "shared" else "not chosen"
    return f"sharing a GPU ({how}) is {verdict}: it " + "; ".join(parts) + " over the horizon"


def first_of_each_way(keys: list[str], way: dict[str, str]) -> list[str]:
    """`keys` with the first of each way moved to the front (in their order), so that re-solving the first few
    prices sharing against a MIG slice and a GPU of its own."""
    firsts: dict[str, str] = {}
    for k in keys:
        firsts.setdefault(way[k], k)
    front = [k for k in keys if k in firsts.values()]
    return front + [k for k in keys if k not in front]
