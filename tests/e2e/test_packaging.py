"""The built wheel carries the catalogs and templates: an installed planopt works outside a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT



@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
                         capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        if os.environ.get("CI") != "true" and "hatchling" in res.stderr and "Could not" in res.stderr:
            pytest.skip("cannot fetch the build backend here")
        raise AssertionError(res.stderr)
    wheels = list(out.glob("planopt-*.whl"))
    assert len(wheels) == 1, wheels
    site = out / "site"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(site)
    return site


@pytest.mark.slow
def test_wheel_contains_catalogs_and_templates(unpacked_wheel: Path):
    data = unpacked_wheel / "optimizer" / "_data"
    for name in ("accelerators.yaml", "models.yaml", "precisions.yaml", "offers.yaml", "systems.yaml",
                 "estimator.yaml"):
        assert (data / "catalogs" / name).is_file(), name
    assert (data / "templates" / "report.html.j2").is_file()
    for name in ("startup.yaml", "enterprise.yaml", "seed.yaml"):
        assert (data / "templates" / "plans" / name).is_file(), name


def test_installed_package_starts_a_plan_from_another_directory(unpacked_wheel: Path, tmp_path: Path):
    """`planopt init` and `validate` work from the wheel: templates and catalogs ship inside it."""
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    for args in (["init", "--template", "enterprise", "-o", "p.yaml"], ["validate", "p.yaml"]):
        code = f"import sys; from optimizer.cli import app; sys.argv = ['planopt'] + {args!r}; app()"
        res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=360)
        assert res.returncode == 0, res.stderr + res.stdout
    assert (tmp_path / "plan.schema.json").is_file()
    assert "valid" in res.stdout


def test_installed_package_lists_the_catalog_from_another_directory(unpacked_wheel: Path, tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    code = ("import json, sys; from optimizer.resources import catalogs_dir; print(catalogs_dir()); "
            "from optimizer.cli import app; sys.argv = ['planopt', 'catalog', 'accelerators', '--json']; app()")
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=360)
    assert res.returncode == 0, res.stderr
    first, rest = res.stdout.split("\n", 1)
    assert Path(first).is_relative_to(unpacked_wheel), first  # not the checkout's catalogs/
    ids = {row["id"] for row in json.loads(rest)}
    assert {"h100-sxm", "b200", "mi300x"} <= ids


def _readme_commands() -> list[str]:
    """The indented block the README opens with (what .ci/run runs in a brand-new environment)."""
    out: list[str] = []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("    ") and line.strip():
            out.append(line.strip())
        elif out:
            break
    return out


def test_the_readme_opens_with_install_and_main_job_then_install_and_tests():
    first, second = _readme_commands()
    assert first.startswith("pip install . && planopt solve "), first
    assert second == "pip install '.[test]' && python -m pytest -q", second
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv" in ci and "README.md" in ci


def _declared() -> set[str]:
    import re
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = list(meta["dependencies"]) + [d for ds in meta.get("optional-dependencies", {}).values() for d in ds]
    return {re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~\[;]", d, maxsplit=1)[0]).lower() for d in deps}


def test_every_import_is_declared_in_pyproject():
    """A fresh virtual environment has only what pyproject.toml declares (the fresh-machine rule)."""
    import ast
    import re
    from importlib.metadata import packages_distributions

    local = {p.stem for d in ("optimizer", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")}
    local |= {"optimizer", "tests", "benchmarks"}
    dists = packages_distributions()
    declared = _declared()
    missing = {}
    for d in ("optimizer", "tests", "benchmarks"):
        for path in (ROOT / d).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in local or top == "__future__":
                        continue
                    provided = {re.sub(r"[-_.]+", "-", x).lower() for x in dists.get(top, [top])}
                    if not provided & declared:
                        missing.setdefault(top, str(path.relative_to(ROOT)))
    assert missing == {}, f"imported but not declared in pyproject.toml: {missing}"
