"""The one executor: a function run over tasks serially, on local worker processes or as Ray tasks.

Every process pool planopt starts comes from here (`process_pool`): spawned, not forked, because the caller
may hold threads (a progress bar, a timer) that a fork would copy mid-state; its workers exit with the planopt
that started them and, when they work beside its own solve, run below it. `workers` hands tasks to an engine
and hears each result as it finishes (a sweep schedules its next points from those); `run_all` maps a function
over a list and returns the results in the tasks' order, whatever order they finished in.

It sits in the base layer so that optimize/ (explain's re-solves) and the studies above it share it.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import socket
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal, Protocol, Sequence

from optimizer.errors import PlanError, Problem
from optimizer.processes import background_worker, stop_workers, watch_parent

Engine = Literal["serial", "processes", "ray"]
ENGINES: tuple[Engine, ...] = ("serial", "processes", "ray")

RAY_CONNECT_S = 5.0
"""How long a Ray address gets to answer before planopt gives up on it (Ray itself would retry for minutes)."""


def spawn_context() -> Any:
    """The multiprocessing context of every pool: shared values (multiprocessing.Value) come from it too."""
    return multiprocessing.get_context("spawn")


def _start_worker(below: bool, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    if below:
        background_worker()
    else:
        watch_parent()
    if initializer is not None:
        initializer(*initargs)


def process_pool(workers: int, *, below: bool = False, initializer: Callable[..., None] | None = None,
                 initargs: tuple = ()) -> cf.ProcessPoolExecutor:
    """A pool of `workers` spawned processes that exit with this one; `below`: they run at a lower priority
    (work beside this process's own solve, which keeps its core); `initializer(*initargs)` runs once in each.
    Raises OSError where no process can be started."""
    return cf.ProcessPoolExecutor(workers, mp_context=spawn_context(), initializer=_start_worker,
                                  initargs=(below, initializer, initargs))


def close_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a pool now: its running tasks are not waited for, its queued ones are dropped."""
    stop_workers(pool)
    pool.shutdown(wait=False, cancel_futures=True)


class Workers(Protocol):
    """Tasks running on an engine: submit one, hear the next to finish."""

    slots: int
    """How many run at once."""

    def submit(self, *args: Any) -> int:
        """Start fn(*shared, *args); returns the task's ticket."""
        ...

    def next(self) -> tuple[int, Any]:
        """Wait for the next task to finish: (its ticket, its result). Its exception is raised here."""
        ...


def _bad(message: str, fix: str) -> PlanError:
    return PlanError(Problem(message, fix))


@contextmanager
def workers(fn: Callable[..., Any], shared: Sequence[Any] = (), *, engine: Engine = "processes",
            count: int | None = None, tasks: int | None = None, address: str | None = None) -> Iterator[Workers]:
    """Run `fn(*shared, *args)` for each submitted `args` on `engine`: in this process, one at a time (serial);
    on `count` local processes (default the CPU count, never more than `tasks`); or as Ray tasks on the cluster
    at `address` (or the one this process joined, or a local one), with `shared` put in its object store once.
    Leaving the block by an exception (Ctrl-C, SIGTERM) stops the processes at once; tasks not heard are
    cancelled. PlanError when Ray is missing or nothing answers at `address`."""
    if engine == "serial":
        yield _Serial(fn, shared)
    elif engine == "processes":
        n = max(1, min(count or os.cpu_count() or 1, tasks or count or os.cpu_count() or 1))
        with process_pool(n) as pool:
            local = _Local(pool, fn, shared, n)
            try:
                yield local
            except BaseException:  # interrupted: what finished so far is the caller's
                stop_workers(pool)
                raise
            finally:
                for f in local.futures:
                    f.cancel()
    elif engine == "ray":
        with _ray_workers(fn, shared, address) as remote:
            yield remote
    else:
        raise _bad(f"unknown engine '{engine}'", f"use one of {', '.join(ENGINES)}")


def run_all(fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], shared: Sequence[Any] = (), *,
            engine: Engine = "processes", count: int | None = None, address: str | None = None,
            on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """fn(*shared, *task) for every task, `count` at a time; the results in the tasks' order (the same list
    whichever engine and whichever finished first); `on_result(i, result)` as task i finishes."""
    out: list[Any] = [None] * len(tasks)
    if not tasks:
        return out
    with workers(fn, shared, engine=engine, count=count, tasks=len(tasks), address=address) as run:
        queue = deque(range(len(tasks)))
        at: dict[int, int] = {}
        while queue and len(at) < run.slots:
            i = queue.popleft()
            at[run.submit(*tasks[i])] = i
        while at:
            ticket, result = run.next()
            i = at.pop(ticket)
            out[i] = result
            if on_result is not None:
                on_result(i, result)
            if queue:
                j = queue.popleft()
                at[run.submit(*tasks[j])] = j
    return out


class _Serial:
    slots = 1

    def __init__(self, fn: Callable[..., Any], shared: Sequence[Any]) -> None:
        self._fn, self._shared = fn, tuple(shared)
        self._queue: deque[tuple[int, tuple]] = deque()
        self._tickets = 0

    def submit(self, *args: Any) -> int:
        self._tickets += 1
        self._queue.append((self._tickets, args))
        return self._tickets

    def next(self) -> tuple[int, Any]:
        ticket, args = self._queue.popleft()
        return ticket, self._fn(*self._shared, *args)


class _Local:
    def __init__(self, pool: cf.ProcessPoolExecutor, fn: Callable[..., Any], shared: Sequence[Any], n: int) -> None:
        self._pool, self._fn, self._shared = pool, fn, tuple(shared)
        self.slots = n
        self.futures: dict[cf.Future, int] = {}
        self._tickets = 0

    def submit(self, *args: Any) -> int:
        self._tickets += 1
        self.futures[self._pool.submit(self._fn, *self._shared, *args)] = self._tickets
        return self._tickets

    def next(self) -> tuple[int, Any]:
        done, _ = cf.wait(self.futures, return_when=cf.FIRST_COMPLETED)
        f = next(iter(done))
        return self.futures.pop(f), f.result()


def _unreachable(address: str | None) -> str | None:
    """Why nothing answers at a Ray address (host:port or ray://host:port), or None when something does (or the
    address is not one to check: none, auto, local)."""
    if address is None or address in ("auto", "local"):
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return None  # Ray says what is wrong with it
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_S):
            return None
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or type(exc).__name__})"


def ray_module() -> Any:
    """Ray, or PlanError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise _bad("--engine ray needs Ray, which is not installed",
                   "pip install '.[ray]' in planopt's checkout (pip install 'planopt[ray]' where planopt came from a "
                   "package index), or use the local process pool: --engine process") from None
    return ray


@contextmanager
def _ray_workers(fn: Callable[..., Any], shared: Sequence[Any], address: str | None) -> Iterator[Workers]:
    ray = ray_module()
    started = False
    if not ray.is_initialized():
        unreachable = _unreachable(address)
        if unreachable:
            raise _bad(f"cannot join the Ray cluster at {address}: {unreachable}",
                       "check --address (host:port of the head node, or ray://host:10001) and `ray status` "
                       "there; without --address a local Ray is started")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise _bad(f"cannot join the Ray cluster at {address or 'this machine'}: {exc}",
                       "check --address (host:port of the head node, or ray://host:10001) and `ray status`; "
                       "without --address a local Ray is started") from None
        started = True
    pending: dict[Any, int] = {}
    try:
        task = ray.remote(num_cpus=1)(fn)
        refs = [ray.put(x) for x in shared]  # once in the object store, not once per task
        tickets = [0]

        class Remote:
            slots = max(1, int(ray.cluster_resources().get("CPU", 1)))

            def submit(self, *args: Any) -> int:
                tickets[0] += 1
                pending[task.remote(*refs, *args)] = tickets[0]
                return tickets[0]

            def next(self) -> tuple[int, Any]:
                done, _rest = ray.wait(list(pending), num_returns=1)
                return pending.pop(done[0]), ray.get(done[0])

        yield Remote()
    finally:
        for r in pending:
            ray.cancel(r)
        if started:
            ray.shutdown()
