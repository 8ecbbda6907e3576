"""The pipeline's layers (STYLE.md): which modules may import the solver, the report libraries, or print."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "optimizer"

SOLVER_MODULES = {"model.py", "solve.py", "results.py"}
REPORT_LIBS = {"openpyxl", "xlsxwriter", "jinja2", "matplotlib"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_only_the_model_solve_and_results_modules_import_pulp():
    offenders = [name for name, tree in _modules() if "pulp" in _imports(tree) and name not in SOLVER_MODULES]
    assert offenders == [], f"PuLP imported outside {sorted(SOLVER_MODULES)}: {offenders}"


def test_only_report_modules_import_the_report_libraries():
    offenders = [(name, sorted(_imports(tree) & REPORT_LIBS)) for name, tree in _modules()
                 if _imports(tree) & REPORT_LIBS and not name.startswith("report/")]
    assert offenders == [], offenders


def test_sizing_is_pure():
    """sizing.py: physics only — no solver, no files, no printing."""
    tree = dict(_modules())["sizing.py"]
    assert not _imports(tree) & {"pulp", "ruamel", "pathlib", "os", "io", "rich", "typer"}
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & {"print", "open"}


def test_only_the_cli_prints():
    offenders = []
    for name, tree in _modules():
        if name == "cli.py" or name.startswith("report/"):
            continue  # report/console.py renders for the CLI to print
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == [], offenders
