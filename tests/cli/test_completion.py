"""Shell completion as a shell asks for it: a fresh `planopt` process with the variables bash's completion
function sets, not a completer called with a made-up context."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
Q4_WORKLOADS = {"chat", "code-assistant", "agents-moe", "support-bot", "guardrail", "autocomplete",
                "nightly-summaries", "doc-extraction", "research"}


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def complete(line: str) -> list[str]:
    """What `planopt` offers for the last word of `line` (an empty word when the line ends in a space), asked
    the way the script of `planopt --show-completion bash` asks: COMP_WORDS, COMP_CWORD, _PLANOPT_COMPLETE."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    proc = subprocess.run([sys.executable, "-m", "optimizer.cli"], cwd=ROOT, capture_output=True, text=True,
                          timeout=180, env=_env(_PLANOPT_COMPLETE="complete_bash", COMP_WORDS=line,
                                               COMP_CWORD=str(cword)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_workload_names_complete_while_the_option_value_is_empty():
    assert set(complete("planopt explain plans/q4.yaml -w ")) == Q4_WORKLOADS
    assert set(complete("planopt explain plans/q4.yaml --workload ")) == Q4_WORKLOADS


def test_workload_names_complete_a_prefix_and_after_other_options():
    assert complete("planopt explain plans/q4.yaml -w doc") == ["doc-extraction"]
    assert set(complete("planopt explain --top 3 plans/q4.yaml --workload c")) == {"chat", "code-assistant"}
    assert set(complete("planopt calibrate plans/q4.yaml --usage-workload ")) == Q4_WORKLOADS
    assert complete("planopt forecast plans/q4.yaml --months 2 --usage-workload agents") == ["agents-moe"]


def test_no_plan_or_a_plan_that_does_not_load_completes_nothing():
    assert complete("planopt explain -w ") == []
    assert complete("planopt explain plans/no-such-plan.yaml -w ") == []


def test_catalog_ids_complete_for_fit():
    models = complete("planopt fit --model llama-3")
    assert "llama-3.1-70b" in models and all(m.startswith("llama-3") for m in models)
    assert "h100-sxm" in complete("planopt fit --model llama-3.1-70b --accelerator h1")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_completion_script_fills_compreply(tmp_path):
    """The script `planopt --show-completion bash` prints, sourced in bash and called as bash calls it on TAB."""
    shim = tmp_path / "planopt"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m optimizer.cli "$@"\n')
    shim.chmod(0o755)
    env = _env(PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    script = subprocess.run([str(shim), "--show-completion", "bash"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=180).stdout
    assert "_planopt_completion" in script
    call = ('COMP_WORDS=(planopt explain plans/q4.yaml -w ""); COMP_CWORD=4; '
            '_planopt_completion planopt "" -w; printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"{script}\n{call}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert set(proc.stdout.split()) == Q4_WORKLOADS
