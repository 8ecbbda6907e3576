"""`planopt`: the command line. The only package that prints and picks exit codes.

Exit codes: 0 done; 1 no plan meets the constraints; 2 invalid input; 3 solver failure.

    common      the app, the consoles, the error → exit-code mapping
    start       init, validate, schema: a plan to start from, checked before any solve
    planning    solve, report, explain
    sizing      fit, estimate, catalog
    loop        calibrate, forecast, compare
    sweep       sweep: one plan over a range of its inputs
    deploy      deploy: a solved plan as engine launch commands and Kubernetes manifests
"""

from __future__ import annotations

import signal

from optimizer.cli import deploy, loop, planning, sizing, start, sweep  # noqa: F401,I001  (each module registers its commands, in help order)
from optimizer.cli.common import app


def main() -> None:  # pragma: no cover - console script entry
    """`planopt`: as a Unix filter, a reader that stops early (`planopt solve … | head -1`) ends it quietly by
    SIGPIPE (the shell's 141), not with exit 1, which says no plan meets the constraints. Files are written
    atomically before the console output, so they are whole either way.

    The program is named `planopt` however it is started, so `python -m optimizer.cli` answers shell completion
    (`_PLANOPT_COMPLETE`) and prints usage under the same name as the installed command."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    app(prog_name="planopt")


__all__ = ["app", "main"]
