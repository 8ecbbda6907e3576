"""Numbers in words, as every report and message says them: money, percentages, plurals, latencies, lists.

No third-party imports and no I/O: the lowest layer of the package.
"""

from __future__ import annotations

from typing import Iterable


def duration_ms(ms: float) -> str:
    """A latency as people say it: '850 ms', '7.7 s'."""
    if ms < 10:
        return f"{ms:.2g} ms"  # a target written in seconds (1.5) must not read as "2 ms"
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


def plural(n: float, one: str, many: str | None = None) -> str:
    """'1 workload', '3 workloads', '1,024 GPUs'."""
    word = one if n == 1 else (many or one + "s")
    number = f"{n:,}" if isinstance(n, int) else f"{n:,g}"
    return f"{number} {word}"


def money(x: float, currency: str = "USD", decimals: int = 0) -> str:
    """'$1,234', '-$5', '1,234 EUR'; no minus sign on an amount that rounds to zero."""
    s = f"{abs(x):,.{decimals}f}"
    sign = "-" if x < 0 and round(abs(x), decimals) else ""
    return f"{sign}${s}" if currency == "USD" else f"{sign}{s} {currency}"


def percent(x: float) -> str:
    """'25%', '2.5%', '0.1%': one decimal below 10% so a small share does not read as 0%."""
    return f"{x:.0%}" if x == 0 or abs(x) >= 0.1 else f"{x:.1%}"


def days_text(n: int) -> str:
    return plural(n, "day")


def join_words(items: Iterable[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]
