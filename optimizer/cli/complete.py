"""Shell completion: workload names from the plan on the command line, ids from the catalogs.

`planopt --install-completion` installs it for the current shell. A completion never fails: a plan
that does not parse completes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import typer


def _plan_argument(ctx: typer.Context) -> str | None:
    """The command's PLAN argument as the shell has typed it so far.

    While an option's value is being completed (`explain q4.yaml -w <TAB>`) the option has no value yet, so
    click's lenient parse of the command line stops there and binds no parameter: the plan is then not in
    `ctx.params` but among the words it left unparsed (`ctx.args`), the first that is not an option. Every
    command that completes workload names takes the plan as its first positional argument."""
    plan = (getattr(ctx, "params", None) or {}).get("plan")
    if plan:
        return str(plan)
    for word in getattr(ctx, "args", None) or []:
        if not word.startswith("-"):
            return word
    return None


def workload_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """The workloads of the plan given as the command's PLAN argument."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    plan = _plan_argument(ctx)
    if not plan:
        return []
    try:
        data = YAML(typ="safe").load(Path(plan).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError):
        return []
    workloads = data.get("workloads") if isinstance(data, dict) else None
    names = [w["name"] for w in workloads or [] if isinstance(w, dict) and isinstance(w.get("name"), str)]
    return [n for n in names if n.startswith(incomplete)]


def catalog_ids(section: str) -> Callable[[typer.Context, str], list[str]]:
    """Ids of one section of the built-in catalogs: accelerators, models, precisions or offers."""

    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        from optimizer.errors import PlanError
        from optimizer.inputs.catalog import builtin_catalog

        try:
            ids = getattr(builtin_catalog(), section)
        except PlanError:
            return []
        return sorted(i for i in ids if i.startswith(incomplete))

    return complete
