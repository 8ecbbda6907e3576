"""The pipeline's layers (docs/design.md, "The layer rule"): imports point down only, no cycles, and each library stays in its layer.

    cli                      the only module that prints and picks exit codes
    (studies.sweep)          one plan solved at many points (sensitivity): each point a pipeline solve
    pipeline                 the Python API: plan → candidates → program → PlanResult
    studies                  value-of-information side solves (VSS, regret, facility) that the pipeline runs
    report                   views of PlanResult (console, HTML, workbook)
    deploy                   PlanResult as something to run: engine launch commands, Kubernetes manifests (beside report)
    calibrate                the planning loop beside the pipeline: usage, load tests, occupancy
    results                  PlanResult as plain data, its JSON, baselines, comparisons
    optimize                 calendar, integer program, solvers, strategy and its steps, Solution — the only PuLP
    candidates               configs per workload, dropped ones with reasons
    physics                  memory, KV, replicas, goodput — pure
    inputs, synth            YAML with line marks, schemas, catalogs, plans, unit prices (inputs.prices); synthetic data
    base                     errors, vocabulary, units, formatting, resources, atomic writes, worker processes, the one executor
                             (parallel: process pools and Ray, which optimize's re-solves use too)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

PACKAGE = ROOT / "optimizer"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("optimizer", "optimizer.errors", "optimizer.vocab", "optimizer.resources", "optimizer.atomic",
              "optimizer.processes", "optimizer.parallel", "optimizer.units", "optimizer.formatting")),
    ("inputs", ("optimizer.inputs", "optimizer.synth")),
    ("physics", ("optimizer.physics",)),
    ("candidates", ("optimizer.candidates",)),
    ("optimize", ("optimizer.optimize",)),
    ("results", ("optimizer.results",)),
    ("calibrate", ("optimizer.calibrate",)),
    ("report", ("optimizer.report",)),
    ("deploy", ("optimizer.deploy",)),
    ("studies", ("optimizer.studies",)),
    ("pipeline", ("optimizer.pipeline",)),
    ("sweep", ("optimizer.studies.sweep",)),
    ("cli", ("optimizer.cli",)),
]
SOLVER_LIBS = {"pulp", "highspy"}
REPORT_LIBS = {"openpyxl", "xlsxwriter", "jinja2", "matplotlib", "markupsafe"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, tuple[Path, ast.AST]]:
    return {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _layer(module: str) -> int:
    best, depth = -1, -1
    for i, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = i, len(prefix)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS in tests/e2e/test_layers.py"
    return best


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str) -> set[str]:
    """Every module this one imports, anywhere in it (function bodies and TYPE_CHECKING blocks too)."""
    path, tree = MODULES[module]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            for a in node.names:  # `from optimizer.report import labels` imports a module
                out.add(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target)
    return out


def _internal(module: str) -> set[str]:
    out = set()
    for target in _imports(module):
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target.startswith("optimizer") and target != module:
            out.add(target)
    return out


def _third_party(module: str) -> set[str]:
    return {t.split(".")[0] for t in _imports(module)} - {"optimizer"}


def test_every_module_is_in_a_layer():
    for module in MODULES:
        _layer(module)


def test_imports_point_down_only():
    upward = [f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
              for m in sorted(MODULES) for t in sorted(_internal(m))
              if _layer(t) > _layer(m) and not (m == "optimizer" or t == "optimizer")]
    assert upward == [], "\n".join(upward)


def test_no_import_cycles():
    graph = {m: _internal(m) - {"optimizer"} for m in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" → ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], "\n".join(cycles)


def test_only_the_optimize_layer_touches_the_solver():
    offenders = [m for m in MODULES if _third_party(m) & SOLVER_LIBS and not m.startswith("optimizer.optimize")]
    assert offenders == [], offenders


def test_only_report_modules_import_the_report_libraries():
    offenders = [(m, sorted(_third_party(m) & REPORT_LIBS)) for m in MODULES
                 if _third_party(m) & REPORT_LIBS and not m.startswith("optimizer.report")]
    assert offenders == [], offenders


def test_product_code_never_imports_the_synthetic_data():
    offenders = [m for m in MODULES if not m.startswith("optimizer.synth")
                 and any(t.startswith("optimizer.synth") for t in _internal(m))]
    assert offenders == [], offenders


def test_physics_is_pure():
    """physics/: no solver, no files, no printing."""
    for m in MODULES:
        if not m.startswith("optimizer.physics"):
            continue
        assert not _third_party(m) & {"pulp", "ruamel", "pathlib", "os", "io", "rich", "typer"}, m
        tree = MODULES[m][1]
        calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not calls & {"print", "open"}, m


def test_only_the_cli_prints():
    offenders = []
    for m, (path, tree) in MODULES.items():
        if m == "optimizer.cli" or m.startswith(("optimizer.cli.", "optimizer.report")):
            continue  # report/ renders rich objects for the CLI to print
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{m}:{node.lineno}")
    assert offenders == [], offenders


def test_reading_and_reporting_a_result_does_not_load_the_solver():
    """`planopt report`, `planopt deploy` and the JSON reader work without PuLP or HiGHS in memory."""
    mods = [m for m in MODULES if m.startswith(("optimizer.report", "optimizer.results", "optimizer.calibrate",
                                                "optimizer.deploy"))]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods)
            + "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pulp', 'highspy'))\n"
            + "print(','.join(bad))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"loaded: {proc.stdout.strip()}"
