"""Who wrote a report and when, and where its prices come from: the footer of the HTML, rows on Assumptions."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass

from optimizer import __version__
from optimizer.errors import PlanError, Problem
from optimizer.results.types import PlanResult

NOT_STATED = "not stated"
NOT_KEPT = "not kept in this result"  # written by a planopt that did not keep sources


@dataclass(frozen=True)
class Provenance:
    version: str
    """planopt's version."""
    generated: dt.datetime
    """When the report was written (UTC, whole seconds): SOURCE_DATE_EPOCH when it is set."""
    pinned: bool
    """True: the time is SOURCE_DATE_EPOCH's, not the clock's."""

    @property
    def generated_text(self) -> str:
        return self.generated.strftime("%Y-%m-%d %H:%M:%S UTC")


def provenance(environ: Mapping[str, str] = os.environ) -> Provenance:
    """planopt's version and the time now, or SOURCE_DATE_EPOCH's when set.

    Reports are otherwise a function of the result alone: with SOURCE_DATE_EPOCH set, the same result
    gives the same bytes (https://reproducible-builds.org/specs/source-date-epoch/). Without it, the
    clock's time makes two renders of one result differ in that one line.
    """
    raw = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return Provenance(__version__, dt.datetime.now(dt.timezone.utc).replace(microsecond=0), False)
    try:
        seconds = int(raw)
        if seconds < 0:
            raise ValueError(raw)
        when = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise PlanError(Problem(f"SOURCE_DATE_EPOCH={raw!r} is not a time planopt can write",
                                "set it to whole seconds since 1970-01-01 UTC (e.g. `date +%s`), or unset it")) from None
    return Provenance(__version__, when, True)


@dataclass(frozen=True)
class PriceSource:
    offer: str
    source: str
    as_of: str


def price_sources(result: PlanResult) -> list[PriceSource]:
    """Per offer the result used, where its prices come from and when they were checked."""
    def said(info: dict, key: str) -> str:
        return NOT_KEPT if key not in info else str(info[key] or NOT_STATED)

    return [PriceSource(o, said(info, "source"), said(info, "as_of")) for o, info in result.offers.items()]
