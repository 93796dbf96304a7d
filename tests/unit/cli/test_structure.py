"""The command line's code stays in small functions, and its modules keep their privates."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "repro"
CLI = PACKAGE / "cli"
#: the longest a function of a command's module may be, from `def` to its last line
LIMIT = 60


def function_lengths(path: Path) -> dict[str, int]:
    """Every function of a module (nested ones too) and its lines, decorators left out."""
    lengths: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lengths[node.name] = max(lengths.get(node.name, 0), _lines(node))
    return lengths


def _lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def private_imports(path: Path, *, package: Path = PACKAGE) -> list[str]:
    """`module._name` for each private name the module takes from another module of repro.cli:
    `from repro.cli.x import _name`, or `_name` read off a module of repro.cli it imported."""
    here = ".".join(path.relative_to(package.parent).with_suffix("").parts)
    tree = ast.parse(path.read_text())
    found: list[str] = []
    aliases: dict[str, str] = {}  # a local name -> the repro.cli module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _in_cli(node.module):
            for alias in node.names:
                if _private(alias.name) and node.module != here:
                    found.append(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _in_cli(alias.name) and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
            and aliases[node.value.id] != here
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return found


def _in_cli(module: str) -> bool:
    return module == "repro.cli" or module.startswith("repro.cli.")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_function_of_replay_cmd_is_over_the_limit() -> None:
    lengths = function_lengths(CLI / "replay_cmd.py")
    too_long = {name: n for name, n in lengths.items() if n > LIMIT}
    assert lengths, "replay_cmd.py has no function: the check reads the wrong file"
    assert not too_long, (
        f"over {LIMIT} lines: {too_long}; make them engine steps (repro/replay/steps.py)"
    )


def test_no_module_imports_a_private_name_of_a_cli_module() -> None:
    found = {
        str(path.relative_to(PACKAGE)): bad
        for path in sorted(PACKAGE.rglob("*.py"))
        if (bad := private_imports(path))
    }
    assert not found, f"private names of repro.cli taken from outside their module: {found}"


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    module.write_text(f"@decorated\ndef long() -> None:\n{body}\n\ndef short() -> None:\n    pass")
    assert function_lengths(module) == {"long": LIMIT + 1, "short": 2}


def test_the_private_check_sees_both_ways_of_taking_a_name(tmp_path: Path) -> None:
    (tmp_path / "repro" / "cli").mkdir(parents=True)
    module = tmp_path / "repro" / "cli" / "m.py"
    module.write_text(
        "from repro.cli.replay_cmd import _replayer, replay\n"
        "from repro.cli import replay_steps as step\n"
        "import repro.cli.run_output as out\n"
        "from repro.cli.m import _mine\n"
        "step._from_package(); step.load_spec; out._hidden; out.__name__\n"
    )
    assert sorted(private_imports(module, package=tmp_path / "repro")) == [
        "repro.cli.replay_cmd._replayer",
        "repro.cli.replay_steps._from_package",
        "repro.cli.run_output._hidden",
    ]
