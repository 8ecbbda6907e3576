"""Write a result's files together: OUTDIR/<name>.json, .xlsx and .html."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from optimizer.atomic import atomic_write
from optimizer.results.jsonio import as_written
from optimizer.results.types import PlanResult


def report_paths(outdir: Path, name: str, json: bool = True) -> list[Path]:
    """The files write_reports writes: OUTDIR/<name>.json (with `json`), .xlsx and .html."""
    return [Path(outdir) / f"{name}.{ext}" for ext in (("json",) if json else ()) + ("xlsx", "html")]


def write_reports(result: PlanResult, outdir: Path, name: str, json_text: str | None = None) -> list[Path]:
    """Render everything to temporary files beside the targets, then rename them into place.

    A failure while rendering leaves no partial file and no new file at all (earlier versions of
    the files stay as they were). Each file is replaced by an atomic rename; the three renames
    follow one another at the very end, so only a kill in that instant can leave a new JSON
    beside an old workbook. Temporary files a killed run left behind are removed first.
    """
    from optimizer.report.html import render_html
    from optimizer.report.provenance import provenance
    from optimizer.report.xlsx.workbook import build_workbook

    outdir = Path(outdir)
    for ext in ("json", "xlsx", "html"):
        for stale in outdir.glob(f".{name}.{ext}.*.tmp"):
            stale.unlink(missing_ok=True)
    made = provenance()  # one time for both files
    result = as_written(result)  # one conversion for both files
    html_text = render_html(result, made)
    targets = report_paths(outdir, name, json_text is not None)
    with ExitStack() as stack:
        if json_text is not None:
            stack.enter_context(atomic_write(targets[0])).write_text(json_text, encoding="utf-8")
        build_workbook(result, stack.enter_context(atomic_write(targets[-2])), made)
        stack.enter_context(atomic_write(targets[-1])).write_text(html_text, encoding="utf-8")
    return targets
