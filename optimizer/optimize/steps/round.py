"""Step 2, round: a plan from the relaxation — its configs held, or configs chosen whole — the node counts solved
whole."""

from __future__ import annotations

import math
from typing import Any, Callable

from optimizer.optimize.cuts import define_pooled_rounding
from optimizer.optimize.policy import DEFAULT_POLICY, SolvePolicy
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Solution, SolveInfo
from optimizer.optimize.solver import solve
from optimizer.optimize.steps.run import Run, _gap, _rows
from optimizer.optimize.steps.search import _cuts_for_search


def round_plan(run: Run, relaxed: SolveInfo, on_relaxed: Callable[[Program], None] | None = None
               ) -> tuple[Solution, SolveInfo] | None:
    """Step 2: a plan from the relaxation — its configs held and the node counts solved whole; or, when they
    cannot all be held or their plan is far from the bound on a large program, configs chosen whole
    (_choices_solved, then _rounded_in_rounds); or, failing that, the solver's first plan with only the
    configs the relaxation is sure of held. Sets the run's bound, incumbent and values; returns the solution
    when that plan is proven within the gap (nothing more to do), else None."""
    prog, solver, gap_target = run.prog, run.solver, run.gap_target

    def limits(share: float = 1.0) -> dict[str, Any]:
        return run.limits("round", share)

    if relaxed.status != "optimal":
        return None
    bound = relaxed.objective
    run.bound = bound
    run.tell("bound", None, bound)
    if on_relaxed is not None:
        on_relaxed(prog)
    largest = prog.largest_choices()
    unsure = any(value < run.policy.decided for value, _key in largest.values())
    # the configs the relaxation is sure of, when it is unsure of some (step 2's last fallback holds them)
    decided = {w: key for w, (value, key) in largest.items() if value >= run.policy.decided} if unsure else {}
    with prog.choices_fixed_to_relaxation():
        rounded = solve(prog.prob, solver, mip_gap=gap_target, **limits())
    holds = rounded.status in ("optimal", "feasible")  # the relaxation's configs held make a plan
    run.planned = run.planned or holds  # from here the safety cap may stop a call (Run.planned)
    far = holds and solver in run.policy.pooled_solvers and _rows(prog) >= run.policy.choice_min_rows \
        and (_gap(rounded.objective, bound) or 0.0) > run.policy.far_from_bound
    choice_bound = None
    if ((unsure and not holds) or far) and run.has_work("round"):
        # The relaxation's configs cannot all be held (caps, usually: it spread workloads over offers
        # fractionally), or their plan is far from the bound on a program whose search is long: choose whole
        # configs with the capacity still fractional, then hold them (a bound; where the held configs gave a
        # plan, the cheaper of the two is kept); _rounded_in_rounds rounds the pools' whole nodes at them below
        kept = (rounded, prog.values()) if holds else None
        rounded, choice_bound = _choices_solved(prog, solver, limits, gap_target, run.policy)
        if choice_bound is not None and choice_bound > bound:
            bound = choice_bound
            run.bound = bound
            run.tell("bound", None, bound)
        if kept is not None and not (rounded.status in ("optimal", "feasible") and rounded.objective is not None
                                     and rounded.objective < (kept[0].objective or math.inf)):
            rounded = kept[0]
            prog.restore(kept[1])
    if rounded.status not in ("optimal", "feasible") and decided and run.has_work("round"):
        # Nor could configs chosen whole be held, in their time: hold only those the relaxation was sure
        # of and take the first plan the solver finds with the rest free — a start for step 3
        with prog.choices_fixed(decided):
            rounded = solve(prog.prob, solver, mip_gap=gap_target, first_plan=True,
                            **limits(run.policy.first_plan_share))
        run.planned = run.planned or rounded.status in ("optimal", "feasible")
        if rounded.status in ("optimal", "feasible") and run.has_work("round"):
            # that first plan's configs held, its hourly capacity solved properly (it is only a first plan)
            first, first_values = rounded, prog.values()
            with prog.choices_fixed({w: key for w, (_v, key) in prog.largest_choices().items()}):
                held = solve(prog.prob, solver, mip_gap=gap_target, **limits(run.policy.first_plan_share),
                             warm_start={k: v for k, v in first_values.items() if v is not None})
            if held.status in ("optimal", "feasible") and held.objective is not None \
                    and first.objective is not None and held.objective < first.objective:
                rounded = held
            else:
                rounded = first
                prog.restore(first_values)
    if rounded.status in ("optimal", "feasible"):
        run.planned = True
        incumbent = rounded.objective
        values = prog.values()
        run.incumbent, run.values = incumbent, values
        run.tell("plan", incumbent, bound)
        gap = _gap(incumbent, bound)
        if gap is not None and gap <= gap_target + 1e-12:
            return prog.solution(), run.info("optimal", gap, incumbent, bound, relaxed.overhead_s)
        if choice_bound is not None and solver in run.policy.pooled_solvers:
            incumbent, values, bound = _rounded_in_rounds(prog, solver, limits, lambda: run.has_work("round"),
                                                          gap_target, incumbent, values, bound, run.tell, run.policy)
            run.incumbent, run.values, run.bound = incumbent, values, bound
            gap = _gap(incumbent, bound)
            if gap is not None and gap <= gap_target + 1e-12:
                return prog.solution(), run.info("optimal", gap, incumbent, bound, relaxed.overhead_s)
    return None

def _choices_solved(prog: Program, solver: str, limits: Callable[[float], dict[str, Any]], gap_target: float,
                    policy: SolvePolicy = DEFAULT_POLICY) -> tuple[SolveInfo, float | None]:
    """Step 2 when the relaxation's configs cannot all be held: the program with only the decisions made once
    whole — configs, reserved levels, committed splits — and its hourly node counts continuous
    (Program.hours_relaxed) picks a set of configs that fit the caps together — the relaxation spreads
    workloads over several offers to fill their sunk committed GPUs, which no plan can. It is a relaxation
    of the plan, so its best bound is a lower bound on every plan's cost (at least the LP's); HiGHS solves it
    without restarts (policy.no_restart). Its configs held — with HiGHS, given the rows that round their pools' GPUs
    to whole nodes together first — the capacity is solved whole.
    `limits(share)` are solver.solve's limits for that share of the step's work left (Run.limits).
    Returns that solve (a plan, or not) and the bound (None when the choice program found no plan)."""
    with prog.hours_relaxed():
        chosen = solve(prog.prob, solver, mip_gap=policy.choice_gap * gap_target, highs=policy.no_restart,
                       **limits(policy.choice_share))
    if chosen.status not in ("optimal", "feasible"):
        return chosen, None
    configs = {w: key for w, (_v, key) in prog.largest_choices().items()}
    if solver in policy.pooled_solvers:
        # the rows that round each pool's GPUs to whole nodes together at these configs: with them the held
        # configs' hours solve many times faster (to the same plan), and _rounded_in_rounds uses them
        define_pooled_rounding(prog, configs)
    with prog.choices_fixed(configs):
        held = solve(prog.prob, solver, mip_gap=gap_target, **limits(policy.first_plan_share))
    return held, chosen.bound


def _rounded_in_rounds(prog: Program, solver: str, limits: Callable[[float], dict[str, Any]],
                       more: Callable[[], bool], gap_target: float, incumbent: float, values: dict[str, float | None], bound: float,
                       tell: Callable[[str, float | None, float | None], None],
                       policy: SolvePolicy = DEFAULT_POLICY) -> tuple[float, dict[str, float | None], float]:
    """Step 2 again, after _choices_solved, while its plan is not proven: the program with only its choices whole
    is given the rows that round each pool's GPUs — and each offer's, where pools share reserved nodes — up to
    whole nodes together at the plan's configs (cuts.define_pooled_rounding: valid at every config, tight at
    these), and solved again. Its bound then counts the whole nodes those configs need, so it is higher, or
    it moves to other configs: those are held and their hours solved whole (a plan, kept if cheaper), and the
    rows are added at them in turn (an integer L-shaped loop over config sets), for at most policy.pooled_rounds.

    The gap it closes is the hours' whole nodes, which neither the choice program nor a search over every config
    bounds well; given the rows at the plan's configs, its bound comes within the gap target of that plan
    (benchmarks/SOLVER.md has the numbers on plans/q1-forecast.yaml).
    Each round's solves take step 2's work left (`limits(share)`, Run.limits); the rounds end when `more()` says
    none is left. Returns the incumbent, its values (restored in the program) and the bound."""
    _cuts_for_search(prog, policy)  # each workload's own whole nodes too: without them the rows above prove less
    solved: list[dict[str, str]] = []
    for _ in range(policy.pooled_rounds):
        prog.restore(values)
        configs = {w: key for w, (_v, key) in prog.largest_choices().items()}
        if not more() or configs in solved:
            break  # no work left, or solved with these configs' rows already: the last bound is as high as they lift it
        define_pooled_rounding(prog, configs)  # (none when _choices_solved added them for its plan)
        solved.append(configs)
        with prog.hours_relaxed():  # from the plan: its configs and reservations are a solution of this program
            again = solve(prog.prob, solver, mip_gap=policy.pooled_gap * gap_target, **limits(1.0),
                          warm_start={k: v for k, v in values.items() if v is not None}, highs=policy.bound_only)
        if again.bound is not None and again.bound > bound:
            bound = again.bound
            tell("bound", incumbent, bound)
        if again.status not in ("optimal", "feasible") or not more():
            break
        moved = {w: key for w, (_v, key) in prog.largest_choices().items()}
        if moved != configs:
            with prog.choices_fixed(moved):
                held = solve(prog.prob, solver, mip_gap=gap_target, **limits(policy.first_plan_share))
            if held.status in ("optimal", "feasible") and held.objective is not None and held.objective < incumbent:
                incumbent, values = held.objective, prog.values()
                tell("plan", incumbent, bound)
        gap = _gap(incumbent, bound)
        if gap is not None and gap <= gap_target + 1e-12:
            break
    prog.restore(values)
    return incumbent, values, bound
