"""Fakes for orchestration tests: an in-process engine and runner, a fake environment manager.

They stand in for LoadGen, onnxruntime and a worker process so that `Replayer` (selection,
settings, status collection, interruption) and `auto` are unit-tested in milliseconds; the
real things have their own integration tests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from repro.backends.onnxruntime import OnnxRuntimePlugin
from repro.environments.base import EnvironmentManager, RealizedEnvironment
from repro.errors import EnvironmentSetupError
from repro.harness.request import WorkerRequest, WorkerResult
from repro.harness.worker import load_backend
from repro.npz import read_npz
from repro.probes import Probe
from repro.runs import layout
from repro.runs.record import CpuTime, SettingChange
from repro.spec.models import ExperimentSpec


class EchoEngine:
    """Predicts `sample.sum() mod 10` for each sample: deterministic, instant, no library."""

    name: ClassVar[str] = "echo"

    def load(
        self,
        model: Path,
        options: Any,
        *,
        runtime: Mapping[str, Any],
        input_name: str | None,
        output_name: str | None,
        model_bytes: bytes | None = None,
    ) -> None:
        self.options = options

    def predict(self, batch: np.ndarray) -> np.ndarray:
        flat = batch.reshape(len(batch), -1)
        return (np.abs(flat.sum(axis=1)).astype(np.int64) % 10).astype(np.int64)

    def describe(self) -> dict[str, Any]:
        return {"name": "echo", "options": self.options.model_dump(mode="json")}


class EchoPlugin(OnnxRuntimePlugin):
    """The onnxruntime section of a spec, served by the in-process EchoEngine."""

    engine = "tests.fakes:EchoEngine"


SUMMARY = """================================================
MLPerf Results Summary
================================================
SUT name : FakeSUT
Scenario : {scenario}
Mode     : {mode}
Samples per second: {sps}
Result is : {validity}
50.00 percentile latency (ns)   : {p50}
90.00 percentile latency (ns)   : {p90}
99.00 percentile latency (ns)   : {p99}

No warnings encountered during test.

No errors encountered during test.
"""


class InProcessRunner:
    """Runs each test in this process: the registry's engine over the data set, LoadGen-shaped
    logs written by hand. `behaviour` maps "Scenario/mode" to "invalid", "fail", "crash",
    "killed" (SIGKILL from outside, e.g. `docker kill`) or "interrupt" to script what a worker
    does."""

    def __init__(
        self,
        behaviour: dict[str, str] | None = None,
        speed: Callable[[WorkerRequest], float] | None = None,
        cpu: Callable[[WorkerRequest], float] | None = None,
        sizing: Callable[[WorkerRequest], dict[str, SettingChange]] | None = None,
    ) -> None:
        """`cpu`: the samples per CPU second a test reports (none without it); `sizing`: the
        settings a test says it needed (`changed_settings`, as an Offline query resized)."""
        self.behaviour = behaviour or {}
        self.speed = speed or (lambda req: 1000.0)
        self.cpu = cpu
        self.sizing = sizing
        self.requests: list[WorkerRequest] = []

    def fingerprint(self, env: RealizedEnvironment) -> dict[str, Any]:
        return {"schema": "repro.machine.fingerprint/v1", "hardware": {"machine": "fake"}}

    def run(
        self, env: RealizedEnvironment, request: Path, out_dir: Path, *, timeout_s: float
    ) -> int:
        req = WorkerRequest.model_validate_json(request.read_text())
        self.requests.append(req)
        what = self.behaviour.get(f"{req.scenario}/{req.mode}", "")
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "crash":
            (out_dir / layout.WORKER_LOG).write_text("Segmentation fault\n")
            return -11
        if what == "killed":
            return 137
        if what == "fail":
            result = WorkerResult(status="failed", error="RuntimeError: scripted failure")
            (out_dir / layout.WORKER_RESULT).write_text(result.model_dump_json())
            return 3
        engine = load_backend(req)
        inputs = read_npz(Path(req.dataset_path))[req.inputs_key][: req.total_sample_count]
        preds = engine.predict(inputs)
        (out_dir / layout.SUMMARY).write_text(
            SUMMARY.format(
                scenario=req.scenario,
                mode="PerformanceOnly" if req.mode == "performance" else "AccuracyOnly",
                sps=self.speed(req),
                validity="INVALID" if what == "invalid" else "VALID",
                p50=int(1e6 / self.speed(req)),
                p90=int(1.2e6 / self.speed(req)),
                p99=int(1.5e6 / self.speed(req)),
            )
        )
        if req.mode == "accuracy":
            entries = [
                {"qsl_idx": i, "data": np.asarray([p], dtype="<i8").tobytes().hex()}
                for i, p in enumerate(preds.tolist())
            ]
            (out_dir / layout.ACCURACY_LOG).write_text(json.dumps(entries))
        rate = self.cpu(req) if self.cpu is not None else None
        cpu = None
        if rate is not None:
            cpu = CpuTime(
                process_s=1.0, user_s=1.0, system_s=0.0, wall_s=1.0, samples_per_cpu_second=rate
            )
        result = WorkerResult(
            status="complete",
            backend=engine.describe(),
            queries_completed=len(preds),
            samples_completed=len(preds),
            output_dtype="<i8",
            output_shape=[],
            cpu=cpu,
            changed_settings=self.sizing(req) if self.sizing is not None else req.changed_settings,
        )
        (out_dir / layout.WORKER_RESULT).write_text(result.model_dump_json())
        return 0


class FakeManager(EnvironmentManager):
    """A manager whose availability and realization a test scripts."""

    name: ClassVar[str] = "fake"
    usable: ClassVar[bool] = True
    fails: ClassVar[bool] = False
    realized: ClassVar[list[str]] = []

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return cls.usable, "scripted" if cls.usable else "fake tool is missing"

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        if self.fails:
            raise EnvironmentSetupError(f"{self.name}: scripted failure to realize")
        FakeManager.realized.append(self.name)
        return RealizedEnvironment(manager=self.name, python=[sys.executable], env={})


class FakeProbes:
    """Machine probes that report a scripted speed (GFLOP/s), one value per call, cycling, and
    (with `others`) the share of the CPU time other work took, likewise."""

    def __init__(self, speeds: list[float] | None = None, others: list[float] | None = None):
        self.speeds = speeds or [100.0]
        self.others = others
        self.calls = 0

    def measure(self) -> Probe:
        speed = self.speeds[self.calls % len(self.speeds)]
        others = self.others[self.calls % len(self.others)] if self.others else None
        self.calls += 1
        return Probe(
            t_utc=float(self.calls),
            compute_gflops=speed,
            compute_large_gflops=speed,
            memory_gbps=10.0,
            others_cpu_frac=others,
        )


# --- an orchestration fake of the `spack` executable ----------------------------------------

FAKE_SPACK = '''#!{python}
"""FAKE spack, for orchestration tests only: records its argv, writes a lock on `concretize`,
makes a view whose `python` is the test's interpreter on `install`, prints activation code."""
import hashlib, json, pathlib, sys
LOG, PYTHON, FAIL_INSTALL = {log!r}, {python!r}, {fail_install!r}
args = sys.argv[1:]
with open(LOG, "a") as f:
    f.write(json.dumps(args) + "\\n")
env = None
if args[:1] == ["-e"]:
    env, args = pathlib.Path(args[1]), args[2:]
if env is not None and args[:1] == ["concretize"]:
    import yaml
    specs = yaml.safe_load((env / "spack.yaml").read_text())["spack"]["specs"]
    nodes, roots = {{}}, []
    for s in specs:
        name = s.split("@")[0].split()[0].split("+")[0]
        version = s.split("@")[1].split()[0] if "@" in s else "1.0"
        h = hashlib.sha256(s.encode()).hexdigest()[:32]
        nodes[h] = {{"name": name, "version": version, "hash": h, "namespace": "builtin",
                    "arch": {{"platform": "linux", "platform_os": "debian12", "target": "x86_64"}},
                    "parameters": {{}}, "dependencies": []}}
        roots.append({{"hash": h, "spec": s}})
    meta = {{"file-type": "spack-lockfile", "lockfile-version": 6, "specfile-version": 5}}
    lock = {{"_meta": meta,
            "spack": {{"version": "1.1.0-fake", "type": "git", "commit": "f" * 40}},
            "roots": roots, "concrete_specs": nodes}}
    (env / "spack.lock").write_text(json.dumps(lock))
    print("==> Concretized", len(roots), "specs")
elif env is not None and args[:1] == ["install"]:
    for h in json.loads((env / "spack.lock").read_text())["concrete_specs"]:
        print("==> Installing", h)
    if FAIL_INSTALL:
        print("==> Error: py-onnxruntime-1.22.2-abc: build failed (fake)")
        sys.exit(1)
    view = env / ".spack-env" / "view" / "bin"
    view.mkdir(parents=True, exist_ok=True)
    (view / "python").write_text("#!/bin/sh\\nexec " + PYTHON + ' "$@"\\n')
    (view / "python").chmod(0o755)
    print("==> Installed the environment")
elif args == ["--version"]:
    print("1.1.0-fake")
elif args[:3] == ["env", "activate", "--sh"] and args[3] == "-d":
    view = pathlib.Path(args[4]) / ".spack-env" / "view" / "bin"
    print(f"export PATH={{view}}:$PATH;")
    print(f"export SPACK_ENV={{args[4]}};")
else:
    print("fake spack: unsupported", args, file=sys.stderr)
    sys.exit(2)
'''


def write_fake_spack(bin_dir: Path, log: Path, *, fail_install: bool = False) -> Path:
    """An executable `spack` in `bin_dir` (put it first on PATH) that logs to `log`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "spack"
    script.write_text(
        FAKE_SPACK.format(python=sys.executable, log=str(log), fail_install=fail_install)
    )
    script.chmod(0o755)
    return script


def fake_spack_calls(log: Path) -> list[list[str]]:
    """The argv of every call the fake received, in order."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]
