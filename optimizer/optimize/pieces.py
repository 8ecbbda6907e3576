"""The program in independent pieces once every config choice is held: what pricing an alternative re-solves.

With every workload held on one config (the choice columns x[c] fixed at 0 or 1), what is left to decide — reserved,
on-demand, spot and bought nodes, batch replicas, API overflow — falls apart into pieces that share no row: in
practice one per offer (its pools' supply rows, its caps, its reservations shared across pools), or larger where a
row spans offers (a facility's power, a scenario plan's worst case). Which columns join is read from the rows
themselves, so a row that spans offers joins their pieces and nothing is assumed.

Forcing one workload from config a onto config b changes only the rows that hold x[a] or x[b]: the pieces those rows
are in are solved again with the new constants, every other piece keeps its cost, and the price is the pieces'
difference plus the two configs' own costs — the same number the whole program's re-solve with the others kept
would give, each re-solve handed a piece of the program instead of the whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulp

from optimizer.optimize.program import Program


@dataclass
class _Row:
    con: pulp.LpConstraint
    free: dict[pulp.LpVariable, float]
    """The row's columns left to decide, with their coefficients."""
    held: list[tuple[str, float]]
    """(config key, coefficient) of the choice columns in the row."""


@dataclass
class Pieces:
    """A program's rows grouped into pieces that share no column left to decide, with every choice held."""

    sense: int
    """The program's: minimise (or maximise)."""
    rows: list[_Row]
    piece_of_row: list[int]
    """Each row's piece (−1: a row of held choices alone, a check on the configs)."""
    rows_of_piece: dict[int, list[int]]
    rows_of_key: dict[str, list[int]]
    """Config key → the rows its choice column is in."""
    cost: dict[pulp.LpVariable, float]
    """The objective's coefficients."""
    key_cost: dict[str, float]
    """Config key → its choice column's own coefficient in the objective."""
    solved: dict[tuple[int, ...], tuple[str, float | None]] = field(default_factory=dict)
    """Pieces solved together at the plan's configs → (status, objective), once solved."""

    @classmethod
    def of(cls, prog: Program) -> "Pieces":
        """The program's pieces with the choice columns of every workload that chooses one config held."""
        held: dict[str, str] = {}
        for w in prog.plan.workloads:
            if w.name in prog.split_workloads:  # a split workload's configs stay free: they join its pieces
                continue
            for c in prog.cands.by_workload[w.name]:
                x = prog.choice[c.key]
                if isinstance(x, pulp.LpVariable):
                    held[x.name] = c.key
        parent: dict[str, str] = {}

        def find(a: str) -> str:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        rows: list[_Row] = []
        for con in prog.prob.constraints():
            free: dict[pulp.LpVariable, float] = {}
            keys: list[tuple[str, float]] = []
            for v, coef in con.items():
                key = held.get(v.name)
                if key is not None:
                    keys.append((key, coef))
                else:
                    free[v] = coef
            first = None
            for v in free:
                root = find(parent.setdefault(v.name, v.name))
                if first is None:
                    first = root
                elif root != first:
                    parent[root] = first
            rows.append(_Row(con, free, keys))
        ids: dict[str, int] = {}
        piece_of_row, rows_of_piece, rows_of_key = [], {}, {}
        for i, row in enumerate(rows):
            piece = ids.setdefault(find(next(iter(row.free)).name), len(ids)) if row.free else -1
            piece_of_row.append(piece)
            rows_of_piece.setdefault(piece, []).append(i)
            for key, _coef in row.held:
                rows_of_key.setdefault(key, []).append(i)
        objective = prog.prob.objective or pulp.LpAffineExpression()
        cost = {v: coef for v, coef in objective.items() if v.name not in held}
        key_cost = {held[v.name]: coef for v, coef in objective.items() if v.name in held}
        return cls(prog.prob.sense, rows, piece_of_row, rows_of_piece, rows_of_key, cost, key_cost)

    def touched(self, keys: tuple[str, ...]) -> tuple[int, ...]:
        """The pieces holding any of `keys`' choice columns, in order (rows of held choices alone aside)."""
        return tuple(sorted({self.piece_of_row[i] for k in keys for i in self.rows_of_key.get(k, ())} - {-1}))

    def program(self, pieces: tuple[int, ...], on: set[str]) -> pulp.LpProblem:
        """The pieces `pieces` as one program of their own, every choice column at 1 for the configs in `on` and at
        0 else (they share no row: solved together, each is solved as alone)."""
        prob = pulp.LpProblem("pieces", self.sense)
        columns: dict[pulp.LpVariable, float] = {}
        for piece in pieces:
            for i in self.rows_of_piece[piece]:
                row = self.rows[i]
                constant = row.con.constant + sum(coef for key, coef in row.held if key in on)
                prob.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression(row.free, constant=constant),
                                                     row.con.sense), row.con.name)
                for v in row.free:
                    columns[v] = self.cost.get(v, 0.0)
        prob.setObjective(pulp.LpAffineExpression({v: c for v, c in columns.items() if c}))
        return prob

    def holds(self, on: set[str], keys: tuple[str, ...]) -> bool:
        """The rows of held choices alone that hold any of `keys` are met with the configs in `on`."""
        for i in sorted({i for k in keys for i in self.rows_of_key.get(k, ())}):
            if self.piece_of_row[i] != -1:
                continue
            row = self.rows[i]
            lhs = row.con.constant + sum(coef for key, coef in row.held if key in on)
            if (row.con.sense == pulp.LpConstraintLE and lhs > 1e-9) or \
                    (row.con.sense == pulp.LpConstraintGE and lhs < -1e-9) or \
                    (row.con.sense == pulp.LpConstraintEQ and abs(lhs) > 1e-9):
                return False
        return True
