"""What every command shares: the typer app, the two consoles, common options, and the one place
that turns planopt's errors into messages and exit codes."""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import sys
import threading
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from rich.console import Console

from optimizer.errors import InfeasiblePlan, PlanError, Problem, SolverError

app = typer.Typer(
    name="planopt",
    help="Capacity planner for self-hosted LLM inference: does it fit, how many, how to pay.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from optimizer import __version__

        print(f"planopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print planopt's version and exit.")] = False) -> None:
    """Capacity planner for self-hosted LLM inference: does it fit, how many, how to pay."""


CONSOLE_WIDTH = 140
"""The narrowest console a terminal gets: a wider terminal gets its own width, so long offer names in the tables
are not cut."""

PIPED_WIDTH = 1000
"""The console's width when piped or captured and COLUMNS is not set: wider than anything planopt prints, so
each table is as wide as its content and no offer id or sentence is cut or wrapped (what `grep` and a log file
want), and the text is the same on every machine."""


def _width() -> int:
    """COLUMNS when set (piped or not: the user's word, as for any Unix tool), else the terminal's width, else
    PIPED_WIDTH."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return PIPED_WIDTH
    return max(CONSOLE_WIDTH, shutil.get_terminal_size((CONSOLE_WIDTH, 24)).columns)


out = Console(highlight=False, soft_wrap=False, width=_width(), emoji=False)


err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


CatalogOpt = Annotated[Optional[list[Path]], typer.Option(
    "--catalog", help="Extra catalog YAML (repeatable); same ids override the built-in entries.")]


DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]


class SolverName(str, Enum):
    highs = "highs"
    cbc = "cbc"


def run(fn: Callable[[], int | None], debug: bool) -> None:
    """Run a command body; map planopt's errors to messages and exit codes, never tracebacks. A SIGTERM (a
    `timeout`, a CI runner's cancel) stops it as Ctrl-C does: what is finished stays, nothing half-written."""
    before = _terminate_as_interrupt()
    try:
        code = fn() or 0
    except PlanError as exc:
        for p in exc.problems:
            err.print(f"[red]error:[/red] {escape(str(p))}")
        n = len(exc.problems)
        if n > 1:
            err.print(f"{n} problems; nothing was written")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(2) from None
    except InfeasiblePlan as exc:
        err.print("[red]no plan meets the constraints:[/red]")
        for r in exc.reasons:
            err.print(f"  - {escape(r)}")
        err.print(escape(exc.fix) if exc.fix else
                  "raise the caps (available_gpus), allow more offers or tiers, or allow API overflow")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(1) from None
    except SolverError as exc:
        err.print(f"[red]solver failure:[/red] {escape(str(exc))}")
        if debug:
            err.print(traceback.format_exc())
        raise typer.Exit(3) from None
    except KeyboardInterrupt:
        err.print("interrupted; nothing was written")
        raise typer.Exit(130) from None
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)
    raise typer.Exit(code)


def _terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt in the main thread; returns the handler it replaced (None: not set)."""
    def interrupt(_signum, _frame) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, interrupt)


READ_BACK_FAILURES = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, IndexError)
"""What rendering a saved result can raise when the file was edited into something no solve writes."""


def not_as_written(path: Path | str, exc: Exception) -> PlanError:
    """A saved result that passed its checks but does not hold together (edited by hand): exit 2, no traceback."""
    return PlanError(Problem(f"the result does not hold together ({type(exc).__name__}: {exc}) — was it edited?",
                             "give the file as `planopt solve` wrote it, or solve the plan again (--debug shows "
                             "where it failed)", file=str(path)))


def escape(s: str) -> str:
    from rich.markup import escape

    return escape(s)


def problem_dict(p: Problem) -> dict:
    """One input problem as `validate --json` and `solve --json` print it."""
    return {"file": p.file, "line": p.line, "key": p.path, "message": p.message, "fix": p.fix}


def failure_json(plan_path: Path, exc: Exception) -> dict:
    """What `solve --json` prints when no plan is returned (exit 1, 2 or 3): the contract's object with status
    "infeasible" or "error", the reasons in words, and for bad input each problem as `validate --json` gives it."""
    name, currency, horizon = plan_path.stem, "USD", None
    if not isinstance(exc, PlanError):
        try:
            from optimizer.inputs.loading import load_plan

            loaded = load_plan(plan_path)
            name, currency, horizon = loaded.plan.plan, loaded.plan.currency, loaded.plan.horizon_days
        except PlanError:
            pass
    infeasible = isinstance(exc, InfeasiblePlan)
    out = {"plan": name, "status": "infeasible" if infeasible else "error", "currency": currency,
           "horizon_days": horizon, "cost": None, "workloads": [], "purchases": [], "solver": None,
           "reasons": exc.reasons if infeasible else  # type: ignore[attr-defined]
           [str(p) for p in exc.problems] if isinstance(exc, PlanError) else [str(exc)]}
    if isinstance(exc, PlanError):
        out["problems"] = [problem_dict(p) for p in exc.problems]
    return out


def slug(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-") or "plan"


def check_writable(paths: list[Path], option: str) -> None:
    """Refuse outputs that cannot be written before any work (exit 2, nothing written): a folder where a
    file goes, a file where a folder goes, a folder without write permission."""
    from optimizer.atomic import unwritable

    for path in paths:
        blocked = unwritable(path, folder=False)
        if blocked:
            said = blocked[len(f"{path} "):] if blocked.startswith(f"{path} ") else f"cannot write it: {blocked}"
            raise PlanError(Problem(said, f"choose a writable {option}, or move what is in the way", file=str(path)))


def write_failed(exc: OSError, where: Path, option: str) -> PlanError:
    """A write the checks could not foresee failed (permissions, a full disk): exit 2 naming the file."""
    return PlanError(Problem(f"cannot write: {exc.strerror or exc}", f"choose a writable {option}", file=str(where)))


def write_reports(result, outdir: Path, name: str, json_text: str | None) -> list[Path]:
    from optimizer.report.files import report_paths, write_reports

    check_writable(report_paths(outdir, name, json_text is not None), "--outdir")
    try:
        return write_reports(result, outdir, name, json_text)
    except OSError as exc:
        raise write_failed(exc, outdir, "--outdir") from None


def solve_options(solver: "SolverName | None", time_limit: float | None, **extra):
    """SolveOptions from the command line's --solver, --time-limit and --work-limit (PlanError, exit 2, for a
    limit ≤ 0)."""
    from optimizer.pipeline import SolveOptions

    problems = []
    if time_limit is not None and not 0 < time_limit < math.inf:  # nan too: the solver would stop at once
        problems.append(Problem("--time-limit must be > 0", "give seconds, e.g. --time-limit 60"))
    factor = extra.get("work_limit")
    if factor is not None and not 0 < factor <= 1000:
        problems.append(Problem("--work-limit must be > 0 and at most 1000",
                                "give a factor of policy.work_limit, e.g. --work-limit 4"))
    if problems:
        raise PlanError(problems)
    return SolveOptions(solver=solver.value if solver else None, time_limit_s=time_limit, **extra)
