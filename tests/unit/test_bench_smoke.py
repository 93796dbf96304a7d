"""Every benchmark has a `--smoke` run, and bench/smoke.py (CI's step) runs every benchmark.

Cheap: the sources are read, no benchmark is run (bench/smoke.py itself runs them in CI).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _smoke_module() -> ModuleType:
    # bench/ is a folder of scripts, not a package: the runner is loaded from its file
    spec = importlib.util.spec_from_file_location("bench_smoke", BENCH / "smoke.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scripts() -> list[Path]:
    """bench/*.py with a `__main__` block, read here by plain text (not by the runner's code)."""
    return [
        p
        for p in sorted(BENCH.glob("*.py"))
        if p.name != "smoke.py" and 'if __name__ == "__main__":' in p.read_text()
    ]


def _options(path: Path) -> set[str]:
    """The option strings of every `add_argument(...)` call in the file."""
    found: set[object] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_runner_runs_every_benchmark_and_no_helper() -> None:
    names = [p.name for p in _smoke_module().benchmarks()]
    assert names == [p.name for p in _scripts()]
    assert "harness_overhead.py" in names
    assert "workloads.py" not in names  # imported by the verdict benchmarks, not run
    assert "smoke.py" not in names


def test_a_module_without_a_main_block_is_a_helper(tmp_path: Path) -> None:
    smoke = _smoke_module()
    (tmp_path / "helper.py").write_text('"""Imported."""\n\nX = 1\n')
    (tmp_path / "bench_a.py").write_text('if __name__ == "__main__":\n    print("ran")\n')
    (tmp_path / "smoke.py").write_text('if __name__ == "__main__":\n    pass\n')
    assert [p.name for p in smoke.benchmarks(tmp_path)] == ["bench_a.py"]


@pytest.mark.parametrize("path", _scripts(), ids=lambda p: p.stem)
def test_every_benchmark_has_a_smoke_run(path: Path) -> None:
    assert "--smoke" in _options(path), f"{path.name} has no --smoke option"
    usage = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "--smoke" in usage, f"{path.name}'s docstring does not show --smoke in its usage"
