"""Step 1, relax: the LP relaxation and rounds of the valid inequalities it violates — a lower bound."""

from __future__ import annotations

from optimizer.optimize import work
from optimizer.optimize.cuts import separate_cuts
from optimizer.optimize.diagnosis import diagnose
from optimizer.optimize.program import reduced_costs
from optimizer.optimize.solution import SolveInfo
from optimizer.optimize.solver import Basis, solve
from optimizer.optimize.steps.run import Run, settings


def relax(run: Run, rounds: bool = True) -> tuple[SolveInfo, dict]:
    """Step 1: the LP relaxation, a lower bound, then (with `rounds`) rounds of the valid inequalities it violates
    while they lift the bound (cut_rounds). Returns the last relaxation solved (its values in the program) and its
    reduced costs."""
    prog = run.prog
    run.basis = Basis()  # each cut round's relaxation starts from the last one's optimum
    before = work.spent("relax")[0]
    relaxed = solve(prog.prob, run.solver, relax=True, basis=run.basis, **run.limits("relax"))
    if work.spent("relax")[0] - before < run.policy.warm_lp_iterations:
        run.basis = None  # a relaxation this small is solved again from scratch: the same vertex, the same rows
    run.note = relaxed.fallback_note
    run.solver = relaxed.name
    if relaxed.status == "infeasible":
        raise diagnose(run.loaded, run.cands, run.segments, *settings(run.loaded, run.options)[:2])
    reduced = reduced_costs(prog.integer_variables()) if relaxed.status == "optimal" else {}
    return cut_rounds(run, relaxed, reduced) if rounds else (relaxed, reduced)


def cut_rounds(run: Run, relaxed: SolveInfo, reduced: dict) -> tuple[SolveInfo, dict]:
    """Rounds of the valid inequalities the relaxation `relaxed` violates, and the relaxation again (a higher
    bound, and configs that fit whole nodes better for step 2), while the bound rises (policy.cut_rounds,
    cut_round_gain). Returns the last relaxation solved (its values in the program) and its reduced costs."""
    prog = run.prog
    for _ in range(run.policy.cut_rounds):
        if relaxed.status != "optimal" or not run.has_work("relax") or not separate_cuts(prog):
            break
        before, before_values = relaxed, prog.values()
        relaxed = solve(prog.prob, run.solver, relax=True, basis=run.basis, **run.limits("relax"))
        if relaxed.status != "optimal":  # out of work: the last relaxation solved is still a bound
            relaxed = before
            prog.restore(before_values)
            break
        reduced = reduced_costs(prog.integer_variables())
        lifted = (relaxed.objective or 0.0) - (before.objective or 0.0)
        if lifted <= run.policy.cut_round_gain * max(1.0, abs(before.objective or 0.0)):
            break
    return relaxed, reduced
