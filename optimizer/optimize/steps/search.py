"""Step 3, search: the whole integer program from step 2's plan, bounded to cheaper plans."""

from __future__ import annotations

import time

from optimizer.optimize.cuts import add_cuts, cut_rows_left
from optimizer.optimize.diagnosis import diagnose
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program, bounds_within
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.solver import solve
from optimizer.optimize.steps.run import Run, _gap, _rows, settings


def search(run: Run, relaxed: SolveInfo, reduced: dict) -> tuple[SolveInfo | None, float]:
    """Step 3: the whole integer program, with the valid inequalities in (_cuts_for_search), started from step
    2's plan when it is near the bound, and bounded to plans cheaper than it (program.bounds_within). Returns the
    search's solve (None when it did not run, or found nothing cheaper within the tightened bounds) and the
    seconds handing the program to the solver and back were taken to need (reported, not a limit). It runs while
    the search has nodes left — or, with no plan in hand, on its last node — within the safety cap."""
    prog, incumbent, bound = run.prog, run.incumbent, run.bound
    full = None
    handover = relaxed.overhead_s
    if (run.has_work("search") or incumbent is None) and not run.capped():
        rows = _rows(prog)
        _cuts_for_search(prog, run.policy)
        # handing the program over (PuLP to the solver and back) grows with the rows: the relaxation's, scaled
        handover = relaxed.overhead_s * _rows(prog) / max(1, rows)
        t_full = time.perf_counter() - run.started

        def searching(t: float, inc: float | None, bnd: float | None) -> None:
            if run.options.progress is not None:
                best = [b for b in (bound, bnd) if b is not None]
                run.options.progress("search", t_full + t, inc if inc is not None else incumbent,
                                     max(best) if best else None)

        # step 2's plan starts the search unless it is far from the bound (run.policy.warm_start_gap); the
        # strategy keeps it either way
        gap = _gap(incumbent, bound)
        start = run.values if gap is not None and gap <= run.policy.warm_start_gap else None
        # only plans cheaper than step 2's are sought: the relaxation's reduced costs bound how far
        # each integer variable may leave its bound in them (program.bounds_within)
        slack = incumbent - relaxed.objective if incumbent is not None and relaxed.objective is not None \
            else -1.0
        with bounds_within(prog.prob, reduced, slack) as tightened:
            full = solve(prog.prob, run.solver, mip_gap=run.gap_target, warm_start=start, **run.limits("search"),
                         progress=searching if run.options.progress is not None else None)
        if full.status == "infeasible" and tightened:
            full = None  # nothing cheaper than step 2's plan within the tightened bounds: it stands
        elif full.status == "infeasible":
            raise diagnose(run.loaded, run.cands, run.segments, *settings(run.loaded, run.options)[:2])
    return full, handover


def _cuts_for_search(prog: Program, policy: SolvePolicy = DEFAULT_POLICY) -> None:
    """Before a branch and bound: every valid inequality in, when they add at most POLICY.full_cuts_rows times the
    program's rows; otherwise only those separated so far (a valid program either way)."""
    if cut_rows_left(prog) <= policy.full_cuts_rows * _rows(prog):
        add_cuts(prog)
