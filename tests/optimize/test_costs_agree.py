"""Costs exist once (optimize.costs): on random small plans, and on a plan with servers bought and owned, the
solved program's objective, the extracted costs (total and by tier) and the workbook's totals agree.

The program is rebuilt whole (no config priced apart) and its variables set to the solve's values, so each
objective term is evaluated at the plan the result reports."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pulp
import pytest

from optimizer.candidates.build import build_candidates
from optimizer.errors import InfeasiblePlan
from optimizer.inputs.loading import load_plan
from optimizer.optimize.model import build_model
from optimizer.optimize.program import Program
from optimizer.optimize.solution import Solution
from optimizer.optimize.strategy import SolveOptions, solve_candidates
from optimizer.pipeline import as_solved
from optimizer.report.xlsx import workbook as excel
from optimizer.results.extract import extract
from optimizer.results.types import PlanResult
from tests.helpers.bruteforce import random_plan

ROOT = Path(__file__).resolve().parents[2]
SEEDS = list(range(12))
TIERS = ("reserved", "on_demand", "spot", "api", "buy", "facility")


def _set_values(prog: Program, sol: Solution) -> None:
    """The program's variables at the solution: whole numbers rounded, as results.extract reads them."""
    for w in prog.plan.workloads:
        for c in prog.cands.by_workload[w.name]:
            x = prog.choice[c.key]
            if isinstance(x, pulp.LpVariable):
                x.varValue = 1.0 if sol.chosen[w.name] == c.key else 0.0
    for table, values in ((prog.reserved, sol.reserved_nodes), (prog.on_demand, sol.on_demand_nodes),
                          (prog.spot, sol.spot_nodes), (prog.committed_split, sol.committed_split)):
        for k, v in table.items():
            v.varValue = float(round(values.get(k, 0.0)))
    for k, v in prog.lent.items():
        v.varValue = sol.lent.get(k, 0.0)
    for k, v in prog.batch_replicas.items():
        v.varValue = sol.batch_replica_hours.get(k, 0.0)
    by_name = {w.name: w for w in prog.plan.workloads}
    for (key, s), y in prog.batch_api.items():
        c = next(c for c in prog.cands.all() if c.key == key)
        w = by_name[c.workload]
        chosen = sol.chosen[w.name] == key
        y.varValue = sol.api_volume.get((w.name, s), 0.0) / w.batch.output_tokens_per_day if chosen else 0.0
    # a workload that may move (policy.moves): its config in each contract period, and the moves onto one
    for w, cs in prog.movers.items():
        n = 1 + max((pi for (_k, pi) in prog.moves), default=0)
        keys = sol.moves.get(w, (sol.chosen[w],) * n)
        for c in cs:
            for pi in range(1, n):
                prog.moves[(c.key, pi)].varValue = 1.0 if keys[pi] == c.key else 0.0
                v = prog.move_overlap.get((c.key, pi))
                if v is not None:
                    v.varValue = 1.0 if keys[pi] == c.key and keys[pi - 1] != c.key else 0.0
    for table, values in ((prog.spend_new, sol.spend_new), (prog.spend_covered, sol.spend_covered)):
        for k, v in table.items():
            v.varValue = values.get(k, 0.0)
    for v in (*prog.cap_excess.values(), *prog.racks.values()):
        v.varValue = 0.0


def _solved(path: Path) -> tuple[PlanResult, float, dict[str, float], float | None]:
    """The result, the objective at its plan, each objective term there, and the solver's objective."""
    loaded = as_solved(load_plan(path))
    cands = build_candidates(loaded)
    sol, info = solve_candidates(loaded, cands, SolveOptions())
    result = extract(loaded.plan, cands, sol, info, loaded.catalog.offers, loaded.file)
    prog = build_model(loaded, cands, sol.segments)
    _set_values(prog, sol)
    terms = {k: float(pulp.value(e) or 0.0) for k, e in prog.cost_terms.items()}
    return result, float(pulp.value(prog.prob.objective) or 0.0), terms, info.objective


def _name_cell(wb, name: str):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


def _agree(result: PlanResult, objective: float, terms: dict[str, float], solver_objective: float | None,
           book: Path) -> None:
    close = dict(rel=1e-9, abs=1e-6)
    assert result.cost_total == pytest.approx(objective, **close)
    assert result.cost_total == pytest.approx(sum(result.cost_by_tier.values()), **close)
    assert terms.get("sole_tenant", 0.0) == 0.0
    for tier in TIERS:
        assert result.cost_by_tier.get(tier, 0.0) == pytest.approx(terms.get(tier, 0.0), **close), tier
    if solver_objective is not None:  # the solver's own account, within its tolerance
        assert solver_objective == pytest.approx(objective, rel=1e-6, abs=1e-4)
    excel.write_workbook(result, book)
    wb = openpyxl.load_workbook(book, data_only=True)  # the values the writer stores with its formulas
    assert _name_cell(wb, "total_cost").value == pytest.approx(result.cost_total, **close)
    for tier in TIERS:
        if tier in result.cost_by_tier:
            assert _name_cell(wb, f"cost_{tier}").value == pytest.approx(result.cost_by_tier[tier], **close), tier


def test_objective_extract_and_workbook_agree_on_random_plans(tmp_path):
    solved = 0
    for seed in SEEDS:
        path = tmp_path / f"plan{seed}.yaml"
        path.write_text(json.dumps(random_plan(seed), indent=1), encoding="utf-8")  # JSON is YAML 1.2
        try:
            result, objective, terms, solver_objective = _solved(path)
        except InfeasiblePlan:
            continue  # caps no purchase meets: nothing to cost
        _agree(result, objective, terms, solver_objective, tmp_path / f"plan{seed}.xlsx")
        solved += 1
    assert solved >= len(SEEDS) // 2, f"only {solved} of {len(SEEDS)} random plans solved"


def test_objective_extract_and_workbook_agree_with_servers_bought_and_owned(tmp_path):
    result, objective, terms, solver_objective = _solved(ROOT / "plans" / "owned-cluster.yaml")
    assert {"buy", "facility"} <= set(result.cost_by_tier) and result.cost_by_tier["facility"] > 0
    _agree(result, objective, terms, solver_objective, tmp_path / "owned-cluster.xlsx")
