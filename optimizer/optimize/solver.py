"""The solver is a name: highs (in-process, default) or cbc (bundled with PuLP); status → planopt's enum."""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pulp

from optimizer.errors import SolverError
from optimizer.optimize import work
from optimizer.optimize.solution import SolveInfo, Status, StopReason

SOLVERS = ("highs", "cbc")
THREADS = 1
"""One thread (SolvePolicy.threads): with one, HiGHS and CBC walk the same tree in the same order on every machine,
and HiGHS fixes its thread count per process anyway."""
DETERMINISTIC: dict[str, Any] = {"parallel": "off", "random_seed": 0, "mip_pool_soft_limit": 10_000}
"""HiGHS options every call sets, so a call's path depends on its program and limits alone: no parallel simplex or
parallel tree search, the seed and the solution pool's size at HiGHS 1.16's defaults, stated so a changed default
cannot change an answer unseen (highspy is pinned in pyproject.toml for the same reason)."""


def available_solvers() -> list[str]:
    out = []
    if _highs_available():
        out.append("highs")
    if _cbc_cmd().available():
        out.append("cbc")
    return out


def _highs_available() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return pulp.HiGHS().available()


def _cbc_cmd(**kwargs) -> pulp.LpSolver:
    from pulp.apis import coin_api

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pulp.COIN_CMD(path=coin_api.pulp_cbc_path, **kwargs)


@contextmanager
def quiet_stdout(msg: bool) -> Iterator[None]:
    """HiGHS prints its banner to the C-level stdout even with msg=False: keep `--json` clean.

    With msg the solver log goes to stderr; without, to /dev/null.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    target = os.dup(2) if msg else os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(target, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(target)


@dataclass
class Basis:
    """A solved relaxation's simplex basis, each variable's and row's status by name (HiGHS only).

    Handed to the next relaxation of the same program with rows added (the valid inequalities of a
    cut round), the rows it does not know start basic — their slacks — and the dual simplex goes on
    from the last optimum rather than from scratch: a few pivots for the rows added, not the whole
    relaxation again. Only the starting point changes, never the optimum.
    """

    cols: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, Any] = field(default_factory=dict)


def solve(prob: pulp.LpProblem, solver: str = "highs", *, time_limit_s: float | None = 60,
          mip_gap: float = 0.001, msg: bool = False, relax: bool = False,
          warm_start: dict[str, float] | None = None, node_limit: int | None = None,
          progress: Callable[[float, float | None, float | None], None] | None = None,
          first_plan: bool = False, basis: Basis | None = None, highs: dict[str, Any] | None = None,
          iteration_limit: int | None = None, threads: int = THREADS, cap_needs_plan: bool = False) -> SolveInfo:
    """Solve in place; HiGHS falls back to CBC (with a note) when it is not installed.

    `node_limit` stops an integer program's branch and bound after that many nodes (HiGHS mip_max_nodes, CBC
    maxNodes) and `iteration_limit` a relaxation's simplex after that many iterations (HiGHS
    simplex_iteration_limit, CBC maxIterations; neither solver bounds an integer program's LP iterations by it):
    limits that, unlike `time_limit_s`, give the same answer on every machine — the time limit is the safety
    cap, and a call it stops reports "safety cap" (work.record); None (or inf): no cap, the call stops on its
    limits alone. With `cap_needs_plan` (a call a first plan rests on, steps/run.py) the cap stops the call only
    once it has a plan: HiGHS is interrupted at its first node past the cap with a plan in hand (reported as
    "safety cap"), and a relaxation, or CBC, which cannot be stopped that way, runs to its work limits.
    `progress(seconds, incumbent,
    bound)` hears HiGHS's branch and bound: each improving plan, and the bound about once a second.
    `first_plan` stops HiGHS at the first feasible plan it finds (CBC runs to its time limit). `highs` are
    further HiGHS options (CBC ignores them).

    Each call's simplex iterations, nodes and what stopped it go to the solve's tally (work.record).

    `relax` solves the LP relaxation (integer variables taken as continuous) and, solved to optimality,
    leaves each variable's reduced cost in its `dj` (HiGHS: None otherwise); `warm_start`
    maps variable names to a feasible solution the solver starts from. With `relax` and HiGHS, `basis`
    starts the simplex from the basis it holds (when it has one) and receives the solved relaxation's.
    """
    note = None
    if solver == "highs" and not _highs_available():
        note = "HiGHS is not available (pip install highspy); solved with CBC instead"
        solver = "cbc"
    if solver not in SOLVERS:
        raise SolverError(f"unknown solver '{solver}'; choose one of {', '.join(SOLVERS)}")
    if solver == "cbc" and not _cbc_cmd().available():
        raise SolverError("CBC is not available; install PuLP with its bundled CBC or use --solver highs")
    started = time.perf_counter()
    if time_limit_s is not None and math.isinf(time_limit_s):
        time_limit_s = None
    if time_limit_s is not None:
        time_limit_s = max(time_limit_s, 0.01)
    plan_cap = None  # HiGHS: the cap, heeded only with a plan in hand
    if cap_needs_plan:
        plan_cap = time_limit_s if solver == "highs" and not relax else None
        time_limit_s = None

    def run(limit: float | None, warm: dict[str, float] | None):
        t0 = time.perf_counter()
        if solver == "highs":
            out = _solve_highs(prob, limit, mip_gap, msg, relax, warm, node_limit, progress, first_plan,
                               basis if relax else None, highs, iteration_limit, threads,
                               None if plan_cap is None else plan_cap - (time.perf_counter() - started))
        else:
            out = _solve_cbc(prob, limit, mip_gap, msg, relax, warm, node_limit, iteration_limit, threads)
        work.record(*out[5])
        return out[:4], max(0.0, time.perf_counter() - t0 - out[4])

    info, overhead = run(time_limit_s, warm_start)
    if warm_start and info[0] in ("optimal", "feasible") and not _objective_agrees(prob, info[2]):
        # A solver handed a start can report an objective (and a bound to match) that its own returned
        # plan does not have — HiGHS 1.16 can (a plan costing 45,061 reported "optimal" at 43,920, the
        # start's API-only config's cost missing). The plan and its proof are then not to be trusted:
        # solve again, without the start.
        info, overhead = run(None if time_limit_s is None
                             else max(0.01, time_limit_s - (time.perf_counter() - started)), None)
    seconds = time.perf_counter() - started
    return SolveInfo(solver, info[0], seconds, info[1], info[2], info[3], note, overhead)


class _WarmHiGHS(pulp.HiGHS):  # type: ignore[misc,valid-type]
    """PuLP's in-process HiGHS, handing the program over in bulk and a starting solution before it runs.

    PuLP's own hand-over adds one column and one row at a time and walks every constraint again for
    the variables each time it needs them (three times a solve); on the generated 1,000-workload plan
    (392k variables) that was a third of each solve's time. Here the variables are collected once and
    the columns, integrality and rows go to HiGHS as arrays — the same program in the same order, so
    HiGHS solves exactly what PuLP would have handed it.
    """

    warm: dict[str, float] | None = None
    basis: Basis | None = None
    """A relaxation's basis to start from and to keep the solved one in (solve's `basis`)."""
    columns: list = []
    """The program's variables in column order (set by actualSolve)."""

    def actualSolve(self, lp):  # noqa: N802 - PuLP's name
        self.columns = lp.variables()
        self.createAndConfigureSolver(lp)
        self.buildSolverModel(lp)
        self.callSolver(lp)
        status, sol_status = self.findSolutionValues(lp)
        for var in self.columns:
            var.modified = False
        for constraint in lp._constraints.values():
            constraint.modifier = False
        lp.assignStatus(status, sol_status)
        return status

    def buildSolverModel(self, lp):  # noqa: N802 - PuLP's name
        import highspy
        import numpy as np

        inf = highspy.kHighsInf
        cols, h = self.columns, lp.solverModel
        sense = -1 if lp.sense == pulp.LpMaximize else 1
        n = len(cols)
        for i, var in enumerate(cols):
            var.index = i
        objective = lp.objective or {}  # a program without one is a feasibility question
        cost = np.fromiter((sense * objective.get(v, 0.0) for v in cols), dtype=np.float64, count=n)
        lower = np.fromiter((-inf if v.lowBound is None else v.lowBound for v in cols), dtype=np.float64, count=n)
        upper = np.fromiter((inf if v.upBound is None else v.upBound for v in cols), dtype=np.float64, count=n)
        none = np.zeros(0, dtype=np.int32)
        h.addCols(n, cost, lower, upper, 0, none, none, np.zeros(0))
        if self.mip:
            whole = np.fromiter((i for i, v in enumerate(cols) if v.cat == pulp.LpInteger), dtype=np.int32)
            if len(whole):
                h.changeColsIntegrality(len(whole), whole, np.full(len(whole), 1, dtype=np.uint8))  # kInteger
        rows = list(lp._constraints.values())
        if not rows:
            return
        counts, index, value, lo, up = [], [], [], [], []
        for i, con in enumerate(rows):
            con.index = i
            counts.append(len(con))
            index.extend(v.index for v in con)
            value.extend(con.values())
            lb, ub = con.getLb(), con.getUb()
            lo.append(-inf if lb is None else lb)
            up.append(inf if ub is None else ub)
        coef = np.asarray(value, dtype=np.float64)
        kept = coef != 0  # PuLP hands no zero coefficients over
        row_of = np.repeat(np.arange(len(rows)), counts)[kept]
        starts = np.concatenate(([0], np.cumsum(np.bincount(row_of, minlength=len(rows)))[:-1])).astype(np.int32)
        h.addRows(len(rows), np.asarray(lo, dtype=np.float64), np.asarray(up, dtype=np.float64), int(kept.sum()),
                  starts, np.asarray(index, dtype=np.int32)[kept], coef[kept])

    def callSolver(self, lp):  # noqa: N802 - PuLP's name
        if self.warm:
            import highspy

            sol = highspy.HighsSolution()
            sol.col_value = [float(self.warm.get(v.name, 0.0)) for v in self.columns]
            sol.value_valid = True
            lp.solverModel.setSolution(sol)
        if self.basis is not None and self.basis.cols:
            self._set_basis(lp)
        super().callSolver(lp)
        if self.basis is not None:
            self._keep_basis(lp)

    def _set_basis(self, lp) -> None:
        """Start from the kept basis: known variables and rows as they were, new rows basic (their
        slacks), new variables at a bound. A basis that no longer fits (rows gone) is not used."""
        import highspy

        kinds = highspy.HighsBasisStatus
        basis = self.basis
        assert basis is not None
        cols = [basis.cols.get(v.name) for v in self.columns]
        cols = [s if s is not None else kinds.kLower if v.lowBound is not None else
                kinds.kUpper if v.upBound is not None else kinds.kZero for s, v in zip(cols, self.columns)]
        rows = [basis.rows.get(name, kinds.kBasic) for name in lp._constraints]
        if sum(s == kinds.kBasic for s in cols) + sum(s == kinds.kBasic for s in rows) != len(rows):
            return
        start = highspy.HighsBasis()
        start.col_status, start.row_status, start.valid = cols, rows, True
        lp.solverModel.setBasis(start)

    def _keep_basis(self, lp) -> None:
        import highspy

        model, basis = lp.solverModel, self.basis
        assert basis is not None
        if model.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return
        solved = model.getBasis()
        if not solved.valid:
            return
        basis.cols = dict(zip((v.name for v in self.columns), solved.col_status))
        basis.rows = dict(zip(lp._constraints, solved.row_status))

    def findSolutionValues(self, lp):  # noqa: N802 - PuLP's name
        """Every variable's value (None when HiGHS has none), a solved relaxation's reduced costs, and
        PuLP's status for HiGHS's; planopt reads the status, objective and bound from HiGHS itself
        (_solve_highs), and no row's dual or slack."""
        import highspy

        model = lp.solverModel
        solution = model.getSolution()
        values = list(solution.col_value)
        for var in self.columns:
            var.varValue = values[var.index] if values else None
        status = model.getModelStatus()
        kinds = highspy.HighsModelStatus
        if not self.mip:  # a relaxation's reduced costs, where PuLP keeps them (model.reduced_costs)
            solved = status == kinds.kOptimal and solution.dual_valid
            duals = solution.col_dual if solved else [None] * len(self.columns)
            for var, dj in zip(self.columns, duals):
                var.dj = dj
        if status == kinds.kOptimal:
            return pulp.LpStatusOptimal, pulp.LpSolutionOptimal
        if status in (kinds.kInfeasible, kinds.kUnboundedOrInfeasible):
            return pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible
        if status == kinds.kUnbounded:
            return pulp.LpStatusUnbounded, pulp.LpSolutionUnbounded
        has = model.getInfo().primal_solution_status == 2
        return pulp.LpStatusNotSolved, pulp.LpSolutionIntegerFeasible if has else pulp.LpSolutionNoSolutionFound


def _progress_callback(progress: Callable[[float, float | None, float | None], None] | None,
                       plan_cap: float | None = None):
    """HiGHS callbacks → progress(seconds, incumbent, bound): every improving plan, the bound at most
    once a second; and, with `plan_cap`, the run interrupted at the first node past that many seconds with a
    plan in hand (the interrupt callback runs at every node; otherwise it never interrupts)."""
    import highspy

    kinds = highspy.cb.HighsCallbackType
    last = [-1.0]

    def finite(x: float) -> float | None:
        return x if x == x and abs(x) != float("inf") else None

    def cb(kind, _message, data, data_in, _user) -> None:
        t = data.running_time
        if plan_cap is not None and t >= plan_cap and finite(data.mip_primal_bound) is not None:
            data_in.user_interrupt = True
        if progress is not None and (kind == kinds.kCallbackMipImprovingSolution or t - last[0] >= 1.0):
            last[0] = t
            progress(t, finite(data.mip_primal_bound), finite(data.mip_dual_bound))

    return {"callbackTuple": (cb, None),
            "callbacksToActivate": [kinds.kCallbackMipImprovingSolution, kinds.kCallbackMipInterrupt]}


Work = tuple[int | None, int | None, StopReason]
"""A solver call's simplex iterations, branch-and-bound nodes and what stopped it (work.record)."""


def _solve_highs(prob, time_limit_s, mip_gap, msg, relax=False, warm=None, node_limit=None, progress=None,
                 first_plan=False, basis: Basis | None = None, options: dict[str, Any] | None = None,
                 iteration_limit: int | None = None, threads: int = THREADS, plan_cap: float | None = None
                 ) -> tuple[Status, float | None, float | None, float | None, float, Work]:
    """(status, gap, objective, bound, seconds HiGHS itself ran, its work); `plan_cap`: the safety cap's seconds,
    heeded only with a plan in hand (solve's cap_needs_plan)."""
    extra: dict = {**DETERMINISTIC, **(options or {})}
    if node_limit is not None and not relax:
        extra["mip_max_nodes"] = int(node_limit)
    if iteration_limit is not None and relax:
        extra["simplex_iteration_limit"] = int(iteration_limit)
    if first_plan:
        extra["mip_max_improving_sols"] = 1
    if (progress is not None or plan_cap is not None) and not relax:
        extra.update(_progress_callback(progress, None if plan_cap is None else max(0.0, plan_cap)))
    cmd = _WarmHiGHS(msg=msg, timeLimit=time_limit_s, gapRel=mip_gap, threads=threads, mip=not relax, **extra)
    cmd.warm = warm
    cmd.basis = basis
    with quiet_stdout(msg):
        try:
            prob.solve(cmd)
        except Exception as exc:  # anything from the solver or PuLP reading it back is a solver failure
            raise SolverError(f"HiGHS failed: {type(exc).__name__}: {exc}") from None
    model = getattr(prob, "solverModel", None)
    if model is None:
        return (*_from_pulp_status(prob), 0.0, (None, None, "error"))
    ran = float(model.getRunTime())
    info = model.getInfo()
    status_text = model.modelStatusToString(model.getModelStatus())
    mip = not relax and any(v.cat == pulp.LpInteger for v in cmd.columns)
    nodes = int(info.mip_node_count) if mip else 0
    done = (int(info.simplex_iteration_count), nodes,
            _highs_stop(model.getModelStatus(), node_limit is not None and not relax and nodes >= node_limit))
    # HiGHS is handed the objective without PuLP's constant term (owned servers' fixed costs): add it back
    offset = float(getattr(prob.objective, "constant", 0.0) or 0.0)
    obj = info.objective_function_value + offset
    if mip:
        bound, gap = info.mip_dual_bound + offset, info.mip_gap
    else:
        bound, gap = obj, 0.0
    if "Infeasible" in status_text:
        return "infeasible", None, None, None, ran, done
    has_solution = info.primal_solution_status == 2
    if status_text == "Optimal" and has_solution:
        gap = _clean_gap(gap, obj, bound)
        return "optimal", gap, obj, bound, ran, (*done[:2], "gap" if gap else "optimal")
    if has_solution and not relax:
        return "feasible", _clean_gap(gap, obj, bound), obj, bound, ran, done
    return "error", None, None, None, ran, (done if done[2] in ("safety cap", "iterations", "nodes") else
                                            (*done[:2], "error"))


def _highs_stop(status, at_node_limit: bool) -> StopReason:
    """What HiGHS's model status says stopped it (an optimal one is told apart from a gap by the caller)."""
    import highspy

    kinds = highspy.HighsModelStatus
    if status == kinds.kOptimal:
        return "optimal"
    if status in (kinds.kInfeasible, kinds.kUnboundedOrInfeasible):
        return "infeasible"
    if status == kinds.kSolutionLimit:  # mip_max_nodes, mip_max_leaves or mip_max_improving_sols
        return "nodes" if at_node_limit else "solutions"
    # an interrupt is the safety cap reached with a plan in hand (_progress_callback's plan_cap)
    limits: dict[Any, StopReason] = {kinds.kTimeLimit: "safety cap", kinds.kInterrupt: "safety cap",
                                     kinds.kIterationLimit: "iterations"}
    return limits.get(status, "error")


def _objective_agrees(prob: pulp.LpProblem, reported: float | None) -> bool:
    """The solver's reported objective is the objective of the values it returned (to 1e-6 relative)."""
    value = pulp.value(prob.objective)
    if reported is None or value is None:
        return True
    return abs(float(value) - reported) <= 1e-6 * max(1.0, abs(float(value)))


def _clean_gap(gap: float | None, obj: float | None, bound: float | None) -> float | None:
    if obj is not None and bound is not None and abs(obj) > 1e-9:
        return max(0.0, (obj - bound) / abs(obj))
    if gap is None or gap != gap or gap == float("inf"):
        return 0.0 if obj is not None and bound is not None and abs(obj - bound) < 1e-9 else None
    return max(0.0, gap)


def _solve_cbc(prob, time_limit_s, mip_gap, msg, relax=False, warm=None, node_limit=None, iteration_limit=None,
               threads: int = THREADS) -> tuple[Status, float | None, float | None, float | None, float, Work]:
    """(status, gap, objective, bound, seconds CBC itself ran: its log's wallclock, its work)."""
    tmp = Path(tempfile.mkdtemp(prefix="planopt-cbc-"))
    log = tmp / "cbc.log"
    if warm:
        for v in prob.variables():
            if v.name in warm:
                v.setInitialValue(warm[v.name])
    try:
        cmd = _cbc_cmd(msg=msg, timeLimit=time_limit_s, gapRel=mip_gap, threads=threads, logPath=str(log),
                       mip=not relax, warmStart=bool(warm), options=_cbc_options(prob, relax, warm, iteration_limit),
                       maxNodes=None if relax or node_limit is None else int(node_limit))
        cmd.tmpDir = str(tmp)
        with quiet_stdout(msg):
            try:
                prob.solve(cmd)
            except Exception as exc:  # anything from the solver or PuLP reading it back is a solver failure
                raise SolverError(f"CBC failed: {type(exc).__name__}: {exc}") from None
        text = log.read_text(errors="replace") if log.exists() else ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ran = _parse_float(r"Wallclock seconds\):\s*([0-9.eE+]+)", text) or 0.0
    iterations = _parse_float(r"Total iterations:\s*([0-9]+)", text) or _parse_float(r"- ([0-9]+) iterations", text)
    nodes = _parse_float(r"Enumerated nodes:\s*([0-9]+)", text)
    counts = (None if iterations is None else int(iterations), None if nodes is None else int(nodes))
    # CBC's log: "Stopped on time limit", "... node limit" (also a relaxation's iteration limit), "... iterations",
    # "... solutions"
    found = re.search(r"Stopped on (time|iteration|node|solution)", text)
    stop: StopReason | None = None if found is None else {  # type: ignore[assignment]
        "time": "safety cap", "iteration": "iterations", "node": "iterations" if relax else "nodes",
        "solution": "solutions"}[found.group(1)]
    status = pulp.LpStatus.get(prob.status, "Undefined")
    if status == "Infeasible":
        return "infeasible", None, None, None, ran, (*counts, "infeasible")
    if status not in ("Optimal",):
        if status == "Not Solved" or prob.sol_status not in (1, 2):
            return "error", None, None, None, ran, (*counts, stop or "error")  # type: ignore[misc]
    obj = pulp.value(prob.objective)
    if relax and stop is not None:  # a relaxation cut short is no bound (PuLP reads it as optimal)
        return "error", None, None, None, ran, (*counts, stop)
    if relax:
        return "optimal", 0.0, obj, obj, ran, (*counts, "optimal")
    stopped = prob.sol_status == 2 or stop is not None
    bound = _parse_float(r"Lower bound:\s*([-0-9.eE+]+)", text)
    if stopped:
        gap = _clean_gap(None, obj, bound) if bound is not None else None
        return "feasible", gap, obj, bound, ran, (*counts, stop or "safety cap")  # type: ignore[misc]
    if bound is None:
        bound = obj
    gap = _clean_gap(None, obj, bound)
    return "optimal", gap, obj, bound, ran, (*counts, "gap" if gap else "optimal")


CBC_LARGE_COLUMNS = 100_000
"""A program of more variables is large for CBC: work it does outside its time limit grows with the program —
its clean-up of a plan after stopping on time (preprocessing undone, the program's LP solved again) can take
longer than the search did, and a short pass (the tie-break pass; CBC has no node limit) runs many times its limit. Below it
(the generated 100-workload plan, q1-forecast) CBC stays within its limits (benchmarks/SOLVER.md)."""


def large_for(solver: str, prob) -> bool:
    """The solver runs far past a time limit of a few seconds on this program (CBC above CBC_LARGE_COLUMNS):
    a pass that is only worth its few seconds (strategy.break_ties) is not tried."""
    return solver == "cbc" and len(prob.variables()) > CBC_LARGE_COLUMNS


def _cbc_options(prob, relax: bool, warm: dict[str, float] | None, iteration_limit: int | None = None) -> list[str]:
    """CBC's options beyond PuLP's: a relaxation's simplex iteration limit; started from a plan, no feasibility
    pump (not needed for a first plan, and it does not heed the time limit: on a large program its first pass runs
    several times the limit), and no preprocessing on a large program (large_for), whose clean-up it would do past
    its limit."""
    if relax:
        return [] if iteration_limit is None else [f"maxIterations {int(iteration_limit)}"]
    out = ["feas off"] if warm else []
    if large_for("cbc", prob):
        out.append("preprocess off")
    return out


def _parse_float(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    if not m:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def _from_pulp_status(prob) -> tuple[Status, float | None, float | None, float | None]:
    status = pulp.LpStatus.get(prob.status, "Undefined")
    if status == "Optimal":
        obj = pulp.value(prob.objective)
        return ("feasible" if prob.sol_status == 2 else "optimal"), None, obj, None
    if status == "Infeasible":
        return "infeasible", None, None, None
    return "error", None, None, None
