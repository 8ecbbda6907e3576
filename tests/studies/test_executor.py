"""optimizer.parallel, the one executor: every engine gives the same results in the tasks' order, whichever
task finishes first, and the studies and explain's re-solves start their processes through it."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from optimizer import parallel
from optimizer.errors import PlanError

PACKAGE = Path(__file__).resolve().parents[2] / "optimizer"


def slow_square(x: int, delay: float = 0.0) -> int:
    time.sleep(delay)
    return x * x


def offset_square(offset: int, x: int) -> int:
    return offset + x * x


def test_serial_and_processes_give_the_tasks_results_in_their_order():
    tasks = [(3, 0.3), (1, 0.0), (2, 0.1)]  # the first finishes last on two processes
    heard: list[int] = []
    serial = parallel.run_all(slow_square, tasks, engine="serial")
    local = parallel.run_all(slow_square, tasks, engine="processes", count=2, on_result=lambda i, r: heard.append(i))
    assert serial == local == [9, 1, 4]
    assert sorted(heard) == [0, 1, 2]


def test_shared_arguments_come_first():
    assert parallel.run_all(offset_square, [(1,), (2,)], shared=(10,), engine="serial") == [11, 14]
    assert parallel.run_all(offset_square, [(1,), (2,)], shared=(10,), engine="processes", count=2) == [11, 14]


def test_no_tasks_starts_nothing():
    assert parallel.run_all(slow_square, [], engine="processes") == []


def test_workers_hand_back_each_ticket_once():
    with parallel.workers(offset_square, (100,), engine="serial") as run:
        tickets = {run.submit(x): x for x in (1, 2, 3)}
        heard = dict(run.next() for _ in tickets)
    assert heard == {t: 100 + x * x for t, x in tickets.items()}


def test_an_unknown_engine_is_a_plan_error():
    with pytest.raises(PlanError, match="unknown engine 'threads'"):
        parallel.run_all(slow_square, [(1,)], engine="threads")  # type: ignore[arg-type]


def test_an_unreachable_ray_address_is_named_before_ray_retries():
    assert parallel._unreachable(None) is None and parallel._unreachable("auto") is None
    assert "nothing answers at 127.0.0.1:1" in (parallel._unreachable("127.0.0.1:1") or "")


def test_every_process_pool_of_the_studies_and_the_optimizer_comes_from_the_executor():
    """Only optimizer/parallel.py builds a ProcessPoolExecutor or imports Ray, outside candidates/ (whose
    sizing pool has its own fallback test)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("parallel.py",) or rel.startswith("candidates/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", "")) == "ProcessPoolExecutor":
                offenders.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "ray" for a in node.names):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == [], offenders
