"""MkDocs hook: the reference pages (docs/commands.md, docs/spec-fields.md) are the code's own.

The build fails when either is stale or when a command has no help text or a spec field no
description (`repro.cli.reference.check`): a command or field cannot be added without its
entry. `make reference` writes them again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError


def on_pre_build(config: Any) -> None:
    from repro.cli.reference import check

    problems = check(Path(config["docs_dir"]))
    if problems:
        raise PluginError("the reference pages do not hold:\n  " + "\n  ".join(problems))
