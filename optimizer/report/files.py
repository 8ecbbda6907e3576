"""Write a result's files together: OUTDIR/<name>.json, .xlsx and .html."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from optimizer.errors import PlanError, Problem
from optimizer.atomic import atomic_write
from optimizer.results.extract import PlanResult
from optimizer.results.jsonio import FORMAT_VERSION, from_dict


def write_reports(result: PlanResult, outdir: Path, name: str, json_text: str | None = None) -> list[Path]:
    """Render everything to temporary files beside the targets, then rename them into place.

    A failure while rendering leaves no partial file and no new file at all (earlier versions of
    the files stay as they were). Each file is replaced by an atomic rename; the three renames
    follow one another at the very end, so only a kill in that instant can leave a new JSON
    beside an old workbook. Temporary files a killed run left behind are removed first.
    """
    from optimizer.report.xlsx.workbook import build_workbook
    from optimizer.report.html import render_html

    outdir = Path(outdir)
    for ext in ("json", "xlsx", "html"):
        for stale in outdir.glob(f".{name}.{ext}.*.tmp"):
            stale.unlink(missing_ok=True)
    html_text = render_html(result)
    targets = []
    with ExitStack() as stack:
        if json_text is not None:
            path = outdir / f"{name}.json"
            tmp = stack.enter_context(atomic_write(path))
            tmp.write_text(json_text, encoding="utf-8")
            targets.append(path)
        path = outdir / f"{name}.xlsx"
        build_workbook(result, stack.enter_context(atomic_write(path)))
        targets.append(path)
        path = outdir / f"{name}.html"
        stack.enter_context(atomic_write(path)).write_text(html_text, encoding="utf-8")
        targets.append(path)
    return targets


def load_result(path: Path) -> PlanResult:
    """A saved result (`planopt solve` writes OUTDIR/<plan>.json) back as a PlanResult."""
    path = Path(path)
    fix = "give the .json file that `planopt solve` wrote"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(Problem("no such file", fix, file=str(path))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(Problem(f"cannot read it: {exc}", fix, file=str(path))) from None
    except json.JSONDecodeError as exc:
        raise PlanError(Problem(f"not JSON (line {exc.lineno}: {exc.msg})", fix, file=str(path))) from None
    if not isinstance(data, dict) or "plan" not in data or "workloads" not in data:
        raise PlanError(Problem("not a planopt result (no 'plan' and 'workloads')", fix, file=str(path)))
    version = data.get("format", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise PlanError(Problem(f"result format {version!r} is newer than this planopt reads ({FORMAT_VERSION})",
                                "upgrade planopt, or solve the plan again", file=str(path)))
    try:
        return from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(Problem(f"not a complete planopt result ({type(exc).__name__}: {exc})", fix,
                                file=str(path))) from None
