"""planopt's errors: every user mistake carries file:line, what is wrong and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, printed as `FILE:LINE: path: what — fix`."""

    message: str
    fix: str | None = None
    file: str | None = None
    line: int | None = None
    path: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        key = f"{self.path}: " if self.path else ""
        fix = f" — {self.fix}" if self.fix else ""
        return f"{where}{key}{self.message}{fix}"


class PlanoptError(Exception):
    """Base of planopt's own errors."""


class PlanError(PlanoptError):
    """Invalid input (exit code 2). Holds every problem found, not only the first."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class InfeasiblePlan(PlanoptError):
    """Candidates exist but the constraints together cannot be met (exit code 1)."""

    def __init__(self, reasons: list[str], fix: str | None = None, problems: list[Problem] | None = None):
        self.reasons = list(reasons)
        self.fix = fix
        """What to change, when it is specific (default: the CLI's advice on caps, offers and tiers)."""
        self.problems = list(problems or [])
        """The reasons with the file and line they are about, where they have one."""
        super().__init__("\n".join(self.reasons) if self.reasons else "no plan meets the constraints")


class SolverError(PlanoptError):
    """The solver failed or hit its time limit without a feasible plan (exit code 3)."""


@dataclass
class Collector:
    """Gathers problems while validating, then raises them all at once."""

    problems: list[Problem] = field(default_factory=list)

    def add(self, message: str, fix: str | None = None, *, file: str | None = None,
            line: int | None = None, path: str | None = None) -> None:
        self.problems.append(Problem(message, fix, file, line, path))

    def extend(self, problems: list[Problem]) -> None:
        self.problems.extend(problems)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self) -> None:
        if self.problems:
            # Stable order: by file, then line, then text; duplicates removed.
            unique = sorted(set(self.problems),
                            key=lambda p: (p.file or "", p.line or 0, p.path or "", p.message))
            raise PlanError(unique)


def did_you_mean(name: str, known: list[str] | set[str]) -> str | None:
    """The closest known id to a misspelt one, or None when nothing is close."""
    import difflib

    known = sorted(known)
    if not name or not known:
        return None

    def squash(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    # Separators and case are the likeliest slips: 'h200sxm', 'H200_SXM', 'llama3.1-70b'.
    same = [k for k in known if squash(k) == squash(name)]
    if same:
        return same[0]
    low = name.lower()
    # A truncated id ('coreweave-h100' for 'coreweave-h100-sxm') is the likeliest slip; difflib
    # alone would prefer a same-length neighbour ('coreweave-gh200').
    prefixed = [k for k in known if k.lower().startswith(low) or low.startswith(k.lower())]
    if prefixed:
        return max(prefixed, key=lambda k: (difflib.SequenceMatcher(None, low, k.lower()).ratio(), -len(k), k))
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if not close:
        by_squash = {squash(k): k for k in known}
        close = difflib.get_close_matches(squash(name), list(by_squash), n=1, cutoff=0.75)
        close = [by_squash[c] for c in close]
    if not close:
        close = [k for k in known if low in k.lower() or k.lower() in low][:1]
    return close[0] if close else None


def unknown_id_fix(kind: str, name: str, known: list[str] | set[str]) -> str:
    guess = did_you_mean(name, known)
    if guess:
        return f"did you mean '{guess}'?"
    shown = ", ".join(sorted(known)[:12])
    more = " …" if len(known) > 12 else ""
    return f"known {kind}: {shown}{more}" if known else f"no {kind} defined yet; add one"
