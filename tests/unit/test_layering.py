"""Imports flow one way, and the folders are the layers: the folders and top-level modules of
`repro/` form no import cycle among themselves, so each is one layer of a stack read from the
tree; CONTRIBUTING.md draws that stack and this test keeps the drawing true."""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "repro"


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


def _unit(module: str) -> str:
    """A module's folder (`repro.replay`) or, for a module at the top of `repro/`, the module."""
    return ".".join(module.split(".")[:2])


def _unit_graph(edges: dict[str, set[str]]) -> dict[str, dict[str, tuple[str, str]]]:
    """Folder -> folder it imports -> one module import that makes it so (the witness)."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for a, targets in sorted(edges.items()):
        out.setdefault(_unit(a), {})
        for b in sorted(targets):
            if _unit(a) != _unit(b):
                out[_unit(a)].setdefault(_unit(b), (a, b))
    return out


def _first_cycle(edges: dict[str, set[str]] | dict[str, dict[str, tuple[str, str]]]) -> list[str]:
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
            return cycle
    return []


def _layers(units: dict[str, dict[str, tuple[str, str]]]) -> dict[int, list[str]]:
    """Each folder's layer: one above the highest it imports (0: it imports no other)."""

    @cache
    def layer(unit: str) -> int:
        return 1 + max(map(layer, units[unit]), default=-1)

    out: dict[int, list[str]] = {}
    for unit in sorted(units):
        out.setdefault(layer(unit), []).append(unit)
    return out


def _drawing(layers: dict[int, list[str]]) -> str:
    """The stack as CONTRIBUTING draws it: the top layer first, a folder with its slash."""

    name = _unit_name
    width = len(str(max(layers)))
    rows = []
    for k in sorted(layers, reverse=True):
        names = " ".join(name(u) for u in layers[k])
        wrapped = textwrap.wrap(names, 100 - width - 2, break_on_hyphens=False) or [""]
        rows += [f"{k:>{width}}  {wrapped[0]}", *(" " * (width + 2) + w for w in wrapped[1:])]
    return "\n".join(rows)


#: the tiers the folders and top-level modules sit in, lowest first: a unit imports units of its
#: own tier or of the tiers below it, never above (CONTRIBUTING.md lists them)
TIERS: dict[str, tuple[str, ...]] = {
    "ground": (
        "__init__.py",
        "_subprocess.py",
        "atomic.py",
        "digests.py",
        "errors.py",
        "estimates.py",
        "jsonio.py",
        "lifeline.py",
        "npz.py",
        "outputs.py",
        "privacy.py",
        "signals.py",
        "workflow.py",
        "stats/",
    ),
    "formats": (
        "spec/",
        "artifacts/",
        "formats/",
        "profiles/",
        "runs/",
        "reports/",
        "sweep_artifacts.py",
    ),
    "plug-ins": (
        "backends/",
        "dispatch/",
        "environments/",
        "containers/",
        "machine/",
        "probes/",
        "servers/",
    ),
    "core": (
        "harness/",
        "attest/",
        "packaging/",
        "duet.py",
        "forecast.py",
        "profiling.py",
        "validate.py",
        "capture_checks.py",
        "mlperf/",
        "compare/",
        "replay/",
    ),
    "features": ("capture.py", "sweep.py", "catalog/"),
    "cli": ("cli/", "_entry.py", "__main__.py"),
}


def _unit_name(unit: str) -> str:
    """A unit as CONTRIBUTING names it: `replay/`, `capture.py`, `__init__.py`."""
    if unit == "repro":
        return "__init__.py"
    rest = unit.removeprefix("repro.")
    return f"{rest}/" if (PACKAGE / rest).is_dir() else f"{rest}.py"


def test_every_folder_sits_in_its_tier_and_imports_none_above() -> None:
    units = _unit_graph(_graph())
    tier_of = {name: k for k, (_, names) in enumerate(TIERS.items()) for name in names}
    assert {_unit_name(u) for u in units} == set(tier_of), "a unit without a tier, or a stale one"
    tiers = list(TIERS)
    up = [
        f"{_unit_name(a)} ({tiers[tier_of[_unit_name(a)]]}) imports {_unit_name(b)} "
        f"({tiers[tier_of[_unit_name(b)]]}): {' imports '.join(units[a][b])}"
        for a in sorted(units)
        for b in sorted(units[a])
        if tier_of[_unit_name(b)] > tier_of[_unit_name(a)]
    ]
    assert up == []


def test_contributing_names_the_tiers() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    listed = re.search(r"<!-- tiers -->\n```\n(.*?)\n```", text, re.S)
    assert listed, "CONTRIBUTING.md has no `<!-- tiers -->` list"
    rows = []
    for tier, names in reversed(TIERS.items()):
        wrapped = textwrap.wrap(" ".join(names), 100 - 10, break_on_hyphens=False)
        rows += [f"{tier:<9} {wrapped[0]}", *(" " * 10 + w for w in wrapped[1:])]
    want = "\n".join(rows)
    assert listed.group(1) == want, f"CONTRIBUTING.md's tiers are stale; the test's:\n{want}"


def test_the_folders_form_no_cycle() -> None:
    units = _unit_graph(_graph())
    cycle = _first_cycle(units)
    steps = [f"{a} -> {b} ({' imports '.join(units[a][b])})" for a, b in itertools.pairwise(cycle)]
    assert steps == [], "the folders import each other in a ring: " + "; ".join(steps)


def test_contributing_draws_the_layers_the_tree_has() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    drawn = re.search(r"<!-- layers -->\n```\n(.*?)\n```", text, re.S)
    assert drawn, "CONTRIBUTING.md has no `<!-- layers -->` drawing"
    want = _drawing(_layers(_unit_graph(_graph())))
    assert drawn.group(1) == want, f"CONTRIBUTING.md's layers are stale; the tree's:\n{want}"


def test_only_the_entry_points_import_the_cli() -> None:
    users = {a for a, targets in _graph().items() for b in targets if _unit(b) == "repro.cli"}
    assert {u for u in users if _unit(u) != "repro.cli"} == {"repro._entry"}


def test_the_import_graph_has_no_cycle() -> None:
    cycle = _first_cycle(_graph())
    assert cycle == [], "import cycle: " + " -> ".join(cycle)


def test_the_checks_see_a_hidden_import_and_a_ring() -> None:
    visitor = _RuntimeImports()
    visitor.visit(
        ast.parse(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import repro.cli\n"
            "def f():\n    from repro.replay import Replayer\n"
        )
    )
    assert visitor.found == {"repro.replay"}
    ring = {"repro.a.x": {"repro.b.y"}, "repro.b.y": {"repro.a.z"}, "repro.a.z": set()}
    assert _first_cycle(_unit_graph(ring)) == ["repro.a", "repro.b", "repro.a"]
    assert _layers(_unit_graph({"repro.a.x": {"repro.b"}, "repro.b": set()})) == {
        0: ["repro.b"],
        1: ["repro.a"],
    }


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


def _called(tree: ast.AST) -> list[tuple[str, int]]:
    """The name and line of every call of a function or method (`f(...)`, `x.f(...)`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            found.append((name, node.lineno))
    return found


def _calls(name: str) -> list[str]:
    """Every call in repro/ of a function or method named `name`, as `path:line`."""
    return [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for called, line in _called(ast.parse(path.read_text()))
        if called == name
    ]


def test_only_the_session_realizes_an_environment_for_a_replay() -> None:
    """Four use cases realized the environment before opening a session (a dispatched part, a
    submission's runs, the dispatched warm-up, capture): the session does, for every one."""
    where = [c.split(":")[0] for c in _calls("realize") + _calls("realize_env")]
    outside = [w for w in where if not w.startswith("environments/")]
    assert outside == ["replay/session.py"], where


def test_only_the_replays_engine_builds_a_tests_worker_request() -> None:
    """The profiled pass built its request itself: the engine (the session's Replayer) makes
    every worker request of a replay, a test's and a profiled pass's."""
    builders = [c.split(":")[0] for c in _calls("from_spec") + _calls("WorkerRequest")]
    assert set(builders) == {"replay/replayer.py"}, builders


def test_the_check_of_calls_sees_a_method_and_a_function() -> None:
    tree = ast.parse("env = registry.realize(a)" + chr(10) + "realize(b)" + chr(10))
    assert _called(tree) == [("realize", 1), ("realize", 2)]


@pytest.mark.parametrize(
    ("folder", "never"),
    [
        ("runs", "repro.mlperf"),  # the run store opened published trees: mlperf's adapter does
        ("stats", "repro.reports"),  # statistics do not format tables
        ("mlperf", "repro.replay"),  # a submission's runs are made by the engine's RunMaker
    ],
)
def test_a_low_folder_never_reaches_up(folder: str, never: str) -> None:
    bad = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        visitor = _RuntimeImports()
        visitor.visit(ast.parse(path.read_text()))
        bad += [
            f"{path.relative_to(PACKAGE)}: {m}"
            for m in sorted(visitor.found)
            if m.startswith(never)
        ]
    assert bad == []
