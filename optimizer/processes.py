"""Worker processes that do not outlive the planopt that started them."""

from __future__ import annotations

import gc
import os
import threading
import time
from contextlib import contextmanager
from typing import Iterator

PARENT_CHECK_S = 1.0
"""How often a worker looks for its parent."""


def watch_parent() -> None:
    """In a worker process (a pool's initializer): exit once the process that started it is gone — killed by
    SIGKILL, the OOM killer or a CI runner's cancel — instead of solving on for no one."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="planopt-parent-watch").start()


WORKER_NICENESS = 10
"""Worker processes run below the planopt that started them: its own solve, beside them, keeps its core."""


def background_worker() -> None:
    """A worker process's initializer: it exits with its parent (watch_parent) and runs below it."""
    watch_parent()
    if hasattr(os, "nice"):
        os.nice(WORKER_NICENESS)


def stop_workers(executor: object) -> None:
    """Stop a process pool's workers now (an interrupted run): the solves they hold are not waited for."""
    for process in list(getattr(executor, "_processes", {}).values()):
        if process.is_alive():
            process.terminate()


@contextmanager
def collection_paused() -> Iterator[None]:
    """Run a bulk build (a plan's configs, its integer program) with the cyclic garbage collector paused
    (reference counting still frees what is dropped). Building creates millions of small tuples and
    dicts that all stay alive: the collector's passes over them find nothing to free and, on a large
    plan, take a large share of the build. Nested uses keep it paused until the outermost ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
