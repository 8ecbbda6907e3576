"""Moves over time: a workload's config chosen per contract period (policy.moves), the families `move_choice`,
`move_hardware` and `move_overlap` (optimize.families states them).

A contract period's boundary is a day the capacity an offer holds changes: servers bought are delivered, a signed
contract starts or ends, a new reservation may start (policy.reservation_starts) — and, in a month plan (demand by
month, without scenarios), each month's first day (calendar.month_days). There a workload may move:
with `same_hardware` (the default) to another offer of its config's hardware (accelerator, precision,
parallelism, engine, API ceiling: where it runs, not how), with `any` to any of its configs. x[c] stays the
config of the first period (so every reader of a workload's config reads its first); x[c,π] is the config of
each later period π. A workload that cannot move — no boundary in the horizon, one offer per hardware, moves:
never — has no x[c,π], and the program is the one without moves, row for row.

explain's (and solve's) alternatives force a config on a workload that may move for every period
(Program.choices_fixed `held`): the price of that config for the horizon. --baseline reads a last plan that
moved as a schedule of keys (calendar.schedule_key) and compares period by period (family baseline_moves;
fix_schedule holds it).

Not moved (for now): batch and reserve workloads, split workloads (split: by_size, any: their shares are fixed
over the horizon), plans with scenarios (their second-stage costs read x[c] over the horizon), and plans that
size commitments at the low end of the estimates (commit_low reads x[c] for the horizon).
"""

from __future__ import annotations

import pulp

from optimizer.candidates.types import Candidate, CandidateSet
from optimizer.inputs import prices
from optimizer.inputs.scenarios import scenario_days
from optimizer.inputs.schema.plan import Plan, Workload
from optimizer.optimize.calendar import key_at
from optimizer.optimize.program import Program, config_id, workload_id


def hardware(c: Candidate) -> tuple:
    """What a config runs on and how, its offer aside: a move that keeps it changes only where replicas run."""
    return (c.kind, c.accelerator, c.precision, c.tp, c.pp, c.ep, c.mig, c.gpu_fraction, c.family, c.layout,
            c.engine, c.ceiling_replicas)


def may_move(plan: Plan, w: Workload) -> bool:
    """Whether policy.moves lets w change config over the horizon at all (see the module docstring)."""
    pol = plan.policy
    return (pol.moves != "never" and w.kind == "interactive" and w.split_mode(pol) == "none"
            and pol.size_commitments_at != "low" and scenario_days(plan) is None)


def movable_configs(plan: Plan, cs: list[Candidate]) -> list[Candidate]:
    """The configs a workload may move among (in its candidates' order): with `any` all of them (when several);
    with `same_hardware` those whose hardware another offer also has. The rest are held for the horizon."""
    if len(cs) < 2:
        return []
    if plan.policy.moves == "any":
        return list(cs)
    offers: dict[tuple, set[str]] = {}
    for c in cs:
        if c.offer:
            offers.setdefault(hardware(c), set()).add(c.offer)
    return [c for c in cs if c.offer and len(offers[hardware(c)]) > 1]


def moving_offers(plan: Plan, cands: CandidateSet) -> set[str]:
    """Offers some workload may move to or from: their supply is planned per contract period (calendar.segment)."""
    out: set[str] = set()
    for w in plan.workloads:
        if may_move(plan, w):
            out |= {c.offer for c in movable_configs(plan, cands.by_workload[w.name]) if c.offer}
    return out


def movers(prog: Program) -> dict[str, list[Candidate]]:
    """Workload → the configs it may move among in this program: the horizon has several contract periods and
    every such config's offer is planned per period (segments cut by calendar.segment's `moving`)."""
    cal = prog.segments.calendar
    if cal is None or not cal.split:
        return {}
    out = {}
    for w in prog.plan.workloads:
        if not may_move(prog.plan, w):
            continue
        cs = [c for c in movable_configs(prog.plan, prog.cands.by_workload[w.name]) if c.key not in prog.sole_tenant]
        if len(cs) > 1 and all(c.offer is None or c.offer in prog.segments.offer_segments for c in cs):
            out[w.name] = cs
    return out


def move_variables(prog: Program, w: Workload) -> None:
    """x[c,π] for each movable config c and period π after the first, and each config's GPUs in the supply rows:
    G[c,d(s),h] times the choice of its segment's period (x[c] in the first)."""
    n = len(prog.segments.calendar.periods)  # type: ignore[union-attr]
    for c in prog.movers[w.name]:
        for pi in range(1, n):
            prog.moves[(c.key, pi)] = prog.prob.add_variable(prog.names("x", config_id(prog, c), f"p{pi + 1}"),
                                                             cat=pulp.LpBinary)
    moving = {c.key for c in prog.movers[w.name]}
    for c in prog.cands.by_workload[w.name]:
        if c.kind == "api" or c.key in prog.sole_tenant:
            continue
        x = prog.choice[c.key]
        var = x if isinstance(x, pulp.LpVariable) else None
        if c.key not in moving and c.offer not in prog.segments.offer_segments:
            prog.gpu_demand[c.key] = {dh: (g, var) for dh, g in c.gpus.items() if g}
            continue
        prog.gpu_demand[c.key] = {(s, h): (c.gpus[(d, h)], prog.choice_at(c.key, s))
                                  for s, d in prog.segments.of_offer(c.offer) for h in range(24) if c.gpus[(d, h)]}


def define_moves(prog: Program) -> None:
    """Rows of families `move_choice` (one config per later period), `move_hardware` (same_hardware: a later
    period's config keeps the first's hardware) and `move_overlap` (a config entered at a boundary)."""
    if not prog.movers:
        return
    n = len(prog.segments.calendar.periods)  # type: ignore[union-attr]
    same = prog.plan.policy.moves == "same_hardware"
    for wn, cs in prog.movers.items():
        wid, moving = workload_id(prog, wn), {c.key for c in cs}
        held = [x for c in prog.cands.by_workload[wn] if c.key not in moving
                and isinstance(x := prog.choice[c.key], pulp.LpVariable)]
        for pi in range(1, n):
            prog.add("move_choice", pulp.lpSum([prog.moves[(c.key, pi)] for c in cs] + held) == 1,
                     prog.names("move_choice", wid, f"p{pi + 1}"))
        if same:
            for c in cs:
                same_hw = pulp.lpSum(prog.choice[k.key] for k in cs if hardware(k) == hardware(c))
                for pi in range(1, n):
                    prog.add("move_hardware", prog.moves[(c.key, pi)] <= same_hw,
                             prog.names("move_hardware", config_id(prog, c), f"p{pi + 1}"))
    # v[c,π]: every move is charged (MOVE_TIE without a move_cost), so a move that saves nothing is not made
    for wn, cs in prog.movers.items():
        for c in cs:
            for pi in range(1, n):
                v = prog.prob.add_variable(prog.names("moved", config_id(prog, c), f"p{pi + 1}"), lowBound=0)
                prog.move_overlap[(c.key, pi)] = v
                entered = prog.choice_at_period(c.key, pi) - prog.choice_at_period(c.key, pi - 1)
                prog.add("move_overlap", v >= entered, prog.names("move_overlap", config_id(prog, c), f"p{pi + 1}"))


MOVE_TIE = 0.01
"""What a move costs in the objective without policy.move_cost: a cent, so that of two plans of equal cost the one
that keeps the workload where it is is the optimum (a move the plan lists saves something)."""


def move_cost_per_move(prog: Program, c: Candidate) -> float:
    """What moving a workload onto config c at a boundary costs: policy.move_cost GPU-hours for each of c's
    replicas at its busiest hour, at c's offer's on-demand price per GPU-hour (else the same accelerator's
    cheapest on-demand price among the program's offers; 0 without one) — at least MOVE_TIE."""
    if prog.plan.policy.move_cost <= 0 or c.offer is None:
        return MOVE_TIE
    replicas = max((r.total for r in c.replicas.values()), default=0)
    price = prices.gpu_hour(prog.offers[c.offer], "on-demand") or min(
        (p for o in prog.offers.values() if o.accelerator == prog.offers[c.offer].accelerator
         and (p := prices.gpu_hour(o, "on-demand")) > 0), default=0.0)
    return max(MOVE_TIE, prog.plan.policy.move_cost * replicas * price)


def move_terms(prog: Program) -> pulp.LpAffineExpression:
    """The objective term `moves`: the overlap each move costs (MOVE_TIE unless policy.move_cost)."""
    return pulp.lpSum(move_cost_per_move(prog, c) * v for (key, _pi), v in prog.move_overlap.items()
                      for c in (prog.candidate(key),))


def api_cost_terms(prog: Program, c: Candidate) -> list:
    """A movable config's API overflow cost, period by period at that period's choice (its api_cost spread over
    the periods by their days of each day type); [] for any other config (its api_cost · x[c] stands)."""
    wn = c.workload
    if not c.api_cost or wn not in prog.movers or c.key not in {k.key for k in prog.movers[wn]}:
        return []
    cal = prog.segments.calendar
    price = prices.api_output_token(next(w for w in prog.plan.workloads if w.name == wn))
    out = []
    for per in cal.periods:  # type: ignore[union-attr]
        cost = sum(n * c.api_output_tokens_per_day.get(d, 0.0) for d, n in per.day_types.items()) * price
        if cost:
            out.append(cost * prog.choice_at_period(c.key, per.index))
    return out


def moved(prog: Program, c: Candidate) -> bool:
    """Whether c is one of a moving workload's configs (its API cost is then per period: api_cost_terms)."""
    return c.workload in prog.movers and any(k.key == c.key for k in prog.movers[c.workload])


def period_keys(prog: Program, w: str, key: str) -> list[str]:
    """The config a (schedule) key holds in each contract period of the program, in order: for a workload that
    may move, the one in force on each period's first day; for any other, the one in force on the horizon's
    first day, for its one choice."""
    cal = prog.segments.calendar
    if w not in prog.movers or cal is None or not cal.split:
        return [key_at(key, prog.plan.start_date)]
    return [key_at(key, per.start) for per in cal.periods]


def fix_schedule(prog: Program, w: str, key: str) -> None:
    """Hold a workload on a (schedule) key (a baseline kept, family fixed_choice): a workload that may move on
    the key's config in force on each contract period's first day, any other on the one on the horizon's first
    day (Program.fix_choice)."""
    keys = period_keys(prog, w, key)
    prog.fix_choice(w, keys[0])
    fixed = {id(prog.choice.get(keys[0]))}
    for pi, k in enumerate(keys[1:], start=1):
        x = prog.choice_at_period(k, pi)
        if isinstance(x, pulp.LpVariable) and id(x) not in fixed:
            fixed.add(id(x))
            prog.add("fixed_choice", x == 1, f"fixed_choice_w{prog.workload_index[w]}_p{pi + 1}")
