"""A new backend, environment manager or executor is one module and one registry line each.

The tests copy the package, add a toy backend, a toy manager and a toy executor the way a
contributor would (a module each, a line in each registry), and check in a fresh interpreter
that the spec, its schema, validation, the CLI's choices, the Python lock, the drift and the
fingerprint all know them, and that a replay dispatched through the toy executor is gathered
into one run, without any other file being touched.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from repro.runs.store import load_run
from tests.helpers import portable_spec

TOY_BACKEND = '''"""A toy backend: one module, nothing else touched."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from repro.backends.base import BackendPlugin
from repro.spec.sections import BackendSpecBase
from repro.spec.types import SpecModel


class ToyOptions(SpecModel):
    """Options of the toy backend."""

    weights: str | None = Field(None, description="an artifact holding extra weights")


class ToyBackend(BackendSpecBase):
    """`"backend": {"name": "toy"}`."""

    name: Literal["toy"]
    options: ToyOptions = Field(default_factory=ToyOptions)


class ToyPlugin(BackendPlugin):
    name: ClassVar[str] = "toy"
    spec_model = ToyBackend
    engine = "repro.backends.toy:ToyEngine"
    worker_packages = ("mlcommons-loadgen", "numpy", "toy-runtime")
    install_hint = "pip install toy-runtime"
    key_packages = ("toy-runtime",)

    def artifact_refs(self, options: SpecModel) -> dict[str, str]:
        assert isinstance(options, ToyOptions)
        return {"$.backend.options.weights": options.weights} if options.weights else {}

    def build_info(self) -> dict[str, Any] | None:
        return {"version": "0.0.1"}


PLUGIN = ToyPlugin()
'''

TOY_MANAGER = '''"""A toy environment manager: one module (face and work), nothing else touched."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar, Literal

from repro.environments.base import CaptureContext, EnvironmentManager, RealizedEnvironment
from repro.environments.section import EnvironmentFace
from repro.spec.sections import EnvironmentSpecBase
from repro.spec.types import LockFile


class ToyEnvironment(EnvironmentSpecBase):
    """`"environment": {"manager": "toyenv", ...}`."""

    manager: Literal["toyenv"]
    toy_lock: LockFile


class ToyManager(EnvironmentManager):
    name: ClassVar[str] = "toyenv"
    spec_model = ToyEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return True, "always"

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        return {"manager": self.name, "toy_lock": ctx.python_lock}

    def realize(self, spec: Any, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        return RealizedEnvironment(manager=self.name, python=[sys.executable], env={})


# both tiers in one module: a toy's work is as light as its face
FACE = EnvironmentFace(
    name="toyenv",
    spec_model=ToyEnvironment,
    manager="repro.environments.toyenv:ToyManager",
    can_capture=True,
)
'''

TOY_EXECUTOR = '''"""A toy executor: one module, nothing else touched. It runs every part as it
is submitted, one after the other, and says how each went in words of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, ClassVar

from repro.dispatch.executors.base import (
    PART_MODULE,
    ExecutorOptions,
    ExecutorPlugin,
    PartState,
)

_PHASES: Any = {"DONE": "completed", "BROKE": "failed", "WAITING": "pending"}


class ToyOptions(ExecutorOptions):
    """None."""


class ToyExecutor:
    name = "toy"

    def __init__(self, options: ExecutorOptions | None = None) -> None:
        self.options = options or ToyOptions()
        self.job: str | None = None
        self._states: dict[int, PartState] = {}

    def submit(self, plan: Any, plan_path: Path, indices: list[int]) -> str:
        self.job = "toy-1"
        for i in indices:
            cmd = [*plan.python, "-m", PART_MODULE, str(plan_path), str(i)]
            rc = subprocess.run(cmd, cwd=plan.run_dir, check=False).returncode
            self._states[i] = PLUGIN.state("DONE" if rc == 0 else "BROKE", "toy-node", f"toy-1.{i}")
        return self.job

    def poll(self) -> dict[int, PartState]:
        return dict(self._states)

    def cancel(self) -> None:
        pass

    def alive(self, jobs: list[str]) -> list[str]:
        return []

    def check(self) -> None:
        pass


class ToyPlugin(ExecutorPlugin):
    name: ClassVar[str] = "toy"
    where = "in a toy's hands"
    options_model = ToyOptions
    executor = "repro.dispatch.executors.toy:ToyExecutor"

    def state(self, word: str, node: str | None = None, job_id: str | None = None) -> PartState:
        return PartState(_PHASES.get(word, "failed"), word, node, job_id)


PLUGIN = ToyPlugin()
'''

DISPATCH = """
import json, sys
from pathlib import Path
from click.testing import CliRunner
from repro.cli import cli

spec, results, cache = sys.argv[1:4]
choices = {
    name: next(
        list(p.type.choices) for p in cli.get_command(None, name).params if p.name == "on"
    )
    for name in ("replay", "sweep")
}
result = CliRunner().invoke(cli, [
    "replay", spec, "--env", "native", "-s", "SingleStream", "-m", "performance",
    "--min-duration-ms", "200", "--min-query-count", "64", "--repeat", "2", "--run-id", "T",
    "--on", "toy", "--results-dir", results, "--cache-dir", cache,
])
print(json.dumps({"choices": choices, "exit_code": result.exit_code, "output": result.output}))
"""

CHECK = """
import json, sys
from pathlib import Path
from repro.spec.io import parse_spec
from repro.spec.schema import schema_text
from repro.validate import check
from repro.cli.capture_cmd import capture
from repro.cli.replay_cmd import replay
from repro.environments.pylock import top_level
from repro.compare.envdiff import key_packages
from repro.machine.fingerprint import collect
from repro.environments.registry import get_manager

raw = json.loads(Path(sys.argv[1]).read_text())
spec = parse_spec(raw, source=sys.argv[1])
problems = [(p.where, p.message) for p in check(spec, Path(sys.argv[1]))]
choices = {p.name: list(getattr(p.type, "choices", [])) for p in capture.params}
env_choices = next(list(p.type.choices) for p in replay.params if p.name == "env_name")
print(json.dumps({
    "backend": type(spec.backend).__name__,
    "environment": type(spec.environment).__name__,
    "problems": problems,
    "schema": "ToyBackend" in schema_text() and "ToyEnvironment" in schema_text(),
    "capture_backends": choices["backend"],
    "capture_managers": choices["env_manager"],
    "replay_envs": env_choices,
    "lock": top_level(__import__("repro.backends.registry", fromlist=["x"]).get_backend("toy"),
                      {"mlcommons-loadgen": "6", "numpy": "2", "toy-runtime": "1.0"}),
    "key_packages": "toy-runtime" in key_packages(),
    "build_info": collect(deep=True)["native"].get("toy"),
    "locks": sorted(get_manager("toyenv").locks(spec.environment)),
}))
"""


def _add_line(path: Path, after: str, line: str) -> None:
    text = path.read_text()
    assert after in text
    path.write_text(text.replace(after, after + line, 1))


def _copy(root: Path, tmp_path: Path) -> Path:
    """The package, copied to be added to."""
    pkg = tmp_path / "src" / "repro"
    shutil.copytree(root / "repro", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def _python(tmp_path: Path, script: str, *args: str) -> dict[str, Any]:
    """`script` in a fresh interpreter that imports the copy; what it printed, as JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return got


def test_a_backend_and_a_manager_are_one_module_and_one_line_each(
    root: Path, tmp_path: Path
) -> None:
    pkg = _copy(root, tmp_path)
    (pkg / "backends" / "toy").mkdir()
    (pkg / "backends" / "toy" / "__init__.py").write_text(TOY_BACKEND)
    registered = re.findall(
        r'    "repro\.backends\.\w+:PLUGIN",\n', (pkg / "spec" / "plugins.py").read_text()
    )
    _add_line(pkg / "spec" / "plugins.py", registered[-1], '    "repro.backends.toy:PLUGIN",\n')
    (pkg / "environments" / "toyenv.py").write_text(TOY_MANAGER)
    _add_line(
        pkg / "spec" / "plugins.py",
        '    "repro.environments.docker:FACE",\n',
        '    "repro.environments.toyenv:FACE",\n',
    )
    raw = portable_spec(root, "ort-digits")
    raw["backend"] = {"name": "toy", "options": {"weights": "extra"}}
    raw["environment"] = {"manager": "toyenv", "toy_lock": raw["environment"]["python_lock"]}
    spec_path = tmp_path / "toy.json"
    spec_path.write_text(json.dumps(raw))

    got = _python(tmp_path, CHECK, str(spec_path))
    assert got["backend"] == "ToyBackend"
    assert got["environment"] == "ToyEnvironment"
    assert got["problems"] == [
        ["$.backend.options.weights", "names artifact 'extra', which is not in $.artifacts"]
    ]
    assert got["schema"] is True
    assert got["capture_backends"][-1] == "toy"
    assert got["capture_managers"][-1] == "toyenv"
    assert got["replay_envs"][-1] == "toyenv"
    assert got["lock"] == ["mlcommons-loadgen==6", "numpy==2", "toy-runtime==1.0"]
    assert got["key_packages"] is True
    assert got["build_info"] == {"version": "0.0.1"}
    assert got["locks"] == ["toy_lock"]


def test_an_executor_is_one_module_and_one_line(
    root: Path, tmp_path: Path, shared_cache: Path
) -> None:
    pkg = _copy(root, tmp_path)
    (pkg / "dispatch" / "executors" / "toy.py").write_text(TOY_EXECUTOR)
    _add_line(
        pkg / "dispatch" / "executors" / "registry.py",
        '    "repro.dispatch.executors.slurm:PLUGIN",\n',
        '    "repro.dispatch.executors.toy:PLUGIN",\n',
    )
    spec_path = tmp_path / "ort-digits.json"
    spec_path.write_text(json.dumps(portable_spec(root, "ort-digits")))
    results = tmp_path / "results"

    got = _python(tmp_path, DISPATCH, str(spec_path), str(results), str(shared_cache))
    assert got["choices"] == {
        "replay": ["local", "slurm", "toy"],
        "sweep": ["local", "slurm", "toy"],
    }
    assert got["exit_code"] in (0, 3), got["output"]  # 3: LoadGen's latency verdict under load
    assert "submitted 2 part(s) to toy (job toy-1)" in got["output"]
    record = load_run(results / "ort-digits" / "T")
    assert record.dispatch is not None
    assert record.dispatch.executor == "toy"
    assert record.dispatch.jobs == ["toy-1"]
    assert [(p.state, p.node, p.job_id) for p in record.parts] == [
        ("DONE", "toy-node", "toy-1.0"),
        ("DONE", "toy-node", "toy-1.1"),
    ]
    assert [p.status in ("complete", "invalid") for p in record.parts] == [True, True]
    assert [t.part for t in record.performance("SingleStream")] == [0, 1]
