"""Imports flow one way: the layers below the use cases never import a use case or the CLI."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "repro"
LOWER = (
    "spec", "reports", "runs", "stats", "profiles", "attest", "packaging/archive.py",
    "packaging/paths.py",
    "atomic.py", "errors.py", "workflow.py",
)  # fmt: skip
FORBIDDEN = (
    "repro.capture",
    "repro.replay",
    "repro.compare",
    "repro.cli",
    "repro.backends.tvm.tuning",
    "repro.rounds",
    "repro.mlperf.published",
    "repro.mlperf.importing",
    "repro.sweep",
    "repro.profiling",
    "repro.dispatch",
    "repro.mlperf.submission",
    "repro.packaging.pack",
    "repro.claim_rounds",
    "repro.duet",
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


# --- the whole import graph: no cycle, and no import from a lower layer to a higher one -----

#: the layers, lowest first: a module's layer is that of the longest prefix naming it
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("repro", "repro.errors", "repro.atomic", "repro.privacy", "repro._subprocess",
              "repro.digests",
              "repro.signals", "repro.jsonio", "repro.estimates", "repro.harness.lifeline",
              "repro.artifacts.cache", "repro.spec.limits", "repro.outputs")),
    ("formats", ("repro.spec.types", "repro.spec.paths", "repro.formats.nix", "repro.formats.spack",
                 "repro.artifacts.npz", "repro.profiles.model", "repro.stats.verdicts",
                 "repro.runs.layout")),
    ("spec", ("repro.spec", "repro.backends.base", "repro.backends.registry",
              "repro.environments.registry", "repro.environments.section")),
    ("library", ("repro.artifacts", "repro.runs", "repro.stats", "repro.profiles",
                 "repro.reports", "repro.attest", "repro.packaging.archive",
                 "repro.packaging.paths", "repro.harness", "repro.backends",
                 "repro.environments", "repro.containers", "repro.probes", "repro.compare",
                 "repro.machine", "repro.mlperf", "repro.forecast", "repro.dispatch",
                 "repro.catalog")),
    ("use case", ("repro.capture", "repro.capture_checks", "repro.claim_rounds", "repro.duet",
                  "repro.replay",
                  "repro.sweep", "repro.sweep_artifacts", "repro.rounds", "repro.mlperf.published",
                  "repro.mlperf.importing", "repro.mlperf.submission",
                  "repro.mlperf.submission_runs", "repro.profiling",
                  "repro.packaging", "repro.validate", "repro.artifacts.fetching",
                  "repro.workflow", "repro.dispatch.run", "repro.dispatch.part",
                  "repro.dispatch.__main__")),
    ("cli", ("repro.cli", "repro._entry", "repro.__main__")),
)  # fmt: skip
#: the environment managers' faces are spec-layer (the spec imports them); their work is not
_FACE = re.compile(r"^repro\.environments\.[a-z_]+$")


def _module_names() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _module_names()


class _RuntimeImports(ast.NodeVisitor):
    """The repro modules a module imports when it runs: at its top and inside functions, not
    under `if TYPE_CHECKING:` (those never run)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
        for child in node.orelse if name == "TYPE_CHECKING" else [*node.body, *node.orelse]:
            self.visit(child)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.startswith("repro"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                self.found.add(_owner(full if full in MODULES else node.module))

    def visit_Import(self, node: ast.Import) -> None:
        self.found.update(_owner(a.name) for a in node.names if a.name.startswith("repro"))


def _owner(name: str) -> str:
    """The module a dotted name lives in (a name imported from a module is the module)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _graph() -> dict[str, set[str]]:
    edges = {}
    for name, path in MODULES.items():
        visitor = _RuntimeImports()
        visitor.visit(ast.parse(path.read_text()))
        edges[name] = visitor.found - {name}
    return edges


def _layer(module: str) -> int:
    if _FACE.fullmatch(module) and MODULES[module].name == "__init__.py":
        return 2  # a manager's face (its package); its work (`.manager`) is library
    best = (-1, -1)
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[1]:
                best = (i, len(prefix))
    return best[0]


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if _layer(m) < 0] == []


def test_no_module_imports_a_higher_layer() -> None:
    bad = [
        f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
        for a, targets in _graph().items()
        for b in sorted(targets)
        if _layer(a) < _layer(b)
    ]
    assert bad == []


def test_the_import_graph_has_no_cycle() -> None:
    edges = _graph()
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_the_graph_check_sees_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    visitor = _RuntimeImports()
    visitor.visit(ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import repro.cli\n"
        "def f():\n    from repro.replay import Replayer\n"
    ))  # fmt: skip
    assert visitor.found == {"repro.replay"}
    assert _layer("repro.spec.types") < _layer("repro.replay")


def test_a_use_case_never_builds_the_replay_engine_itself() -> None:
    """Six places built a `Replayer` by hand (realize, replay steps, sweep, a dispatched part,
    a submission's runs, capture): a replay's engine is built by its session alone."""
    home = PACKAGE / "replay" / "session.py"
    builders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Replayer"
                and path != home
            ):
                builders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert builders == []


@pytest.mark.parametrize(
    ("folder", "never"),
    [
        ("runs", "repro.mlperf"),  # the run store opened published trees: mlperf's adapter does
        ("stats", "repro.reports"),  # statistics do not format tables
    ],
)
def test_a_low_folder_never_reaches_up(folder: str, never: str) -> None:
    bad = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        visitor = _RuntimeImports()
        visitor.visit(ast.parse(path.read_text()))
        bad += [f"{path.relative_to(PACKAGE)}: {m}" for m in sorted(visitor.found)
                if m.startswith(never)]  # fmt: skip
    assert bad == []
