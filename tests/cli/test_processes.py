"""Worker processes do not outlive the planopt that started them (a sweep's or explain's pool under a SIGKILL,
the OOM killer or a CI runner's cancel)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

PARENT = """\
import concurrent.futures as cf, multiprocessing, os, sys, time
from optimizer.processes import watch_parent

if __name__ == "__main__":
    ex = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=watch_parent)
    print(ex.submit(os.getpid).result(), flush=True)
    ex.submit(time.sleep, 120)
    time.sleep(0.5)
    os._exit(0)  # gone without shutting the pool down, as under SIGKILL
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state  # a zombie has exited; only its entry waits for a reaper


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process states from /proc")
def test_a_worker_exits_once_its_parent_is_gone(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    worker = int(proc.stdout.readline())
    assert proc.wait(timeout=240) == 0
    deadline = time.monotonic() + 15
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    running = _running(worker)
    if running:
        os.kill(worker, 9)
    assert not running, "the worker kept running after its parent was gone"
