"""Imports flow one way: the layers below the use cases never import a use case or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "repro"
LOWER = (
    "spec", "reports", "runs", "stats", "profiles", "attest", "packaging/archive.py",
    "packaging/paths.py",
    "verdicts.py", "atomic.py", "errors.py", "workflow.py",
)  # fmt: skip
FORBIDDEN = (
    "repro.capture",
    "repro.replay",
    "repro.compare",
    "repro.cli",
    "repro.backends.tvm.tuning",
    "repro.rounds",
    "repro.published",
    "repro.importing",
    "repro.sweep",
    "repro.profiling",
    "repro.dispatch",
    "repro.submission",
    "repro.packaging.pack",
)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def _modules() -> list[Path]:
    out: list[Path] = []
    for part in LOWER:
        target = PACKAGE / part
        out += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return out


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_lower_layers_import_no_use_case_and_no_cli(path: Path) -> None:
    bad = {m for m in _imports(path) if m.startswith(FORBIDDEN)}
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from repro.compare import build_report\n")
    assert "repro.compare" in _imports(module)
