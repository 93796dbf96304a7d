"""The `venv` environment: a virtual environment built from the spec's hashed Python lock.

Built once per lock hash under `<cache>/envs/venv-<hash>`, reused afterwards; replays that
want the same venv at once take turns on a lock file beside it (`venv-<hash>.lock`): one builds,
the others wait and use what it built. repro itself is
made importable through PYTHONPATH, set to this checkout for every worker: the venv is shared by
every checkout with the same lock, so it must never pin one of them (a `.pth` written by the
first checkout would run that checkout's harness, or fail once it is deleted).
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from repro.atomic import write_text
from repro import _subprocess
from repro.environments.base import (
    CaptureContext,
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    verified_lock,
    worker_environment,
)
from repro.environments.pylock import read_pins
from repro.spec.sections import EnvironmentSpecBase
from repro.environments.venv import VenvEnvironment
from repro.errors import EnvironmentSetupError

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

MARKER = ".repro-complete"


#: the lines of pip's output that say how far an install is
_PIP_STEP = re.compile(r"^(Collecting|Processing|Installing collected packages)\s*:?\s*(\S*)")


class VenvManager(EnvironmentManager):
    """Creates (or reuses) a venv keyed by the lock's sha256 and runs the worker in it."""

    name: ClassVar[str] = "venv"
    spec_model = VenvEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            import ensurepip  # noqa: F401
            import venv  # noqa: F401
        except ImportError:
            return False, "this Python has no venv/ensurepip (Debian: apt-get install python3-venv)"
        return True, "python -m venv"

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        return {
            "manager": self.name,
            "python": ctx.python,
            "python_lock": ctx.python_lock,
            "hashes_complete": ctx.hashes_complete,
        }

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        lock = spec.environment.python_lock
        if lock is None:
            raise EnvironmentSetupError(
                f"{spec_path}: $.environment.python_lock: the spec has no Python lock to build "
                "a venv from",
                hint="capture one with `repro capture --from SPEC --no-run`, or replay with "
                "--env native",
            )
        lock_path = verified_lock(
            lock, spec_path, hint="restore the lock file or re-capture the environment"
        )
        tag = f"py{sys.version_info.major}{sys.version_info.minor}"
        target = workdir / f"venv-{lock.sha256[:16]}-{tag}"
        hashes = bool(getattr(spec.environment, "hashes_complete", True))
        wheels = self.options.get("wheels")
        if not (target / MARKER).is_file():
            with self._building(target):
                if not (target / MARKER).is_file():  # else another replay built it meanwhile
                    self._build(
                        target,
                        lock_path,
                        require_hashes=hashes,
                        wheels=Path(wheels) if wheels else None,
                    )
        python = target / "bin" / "python"
        return RealizedEnvironment(
            manager=self.name,
            python=[str(python)],
            env=worker_environment(
                {"VIRTUAL_ENV": str(target), "PYTHONPATH": str(repro_source_root())}
            ),
            reason=f"venv from {lock.path} (sha256 {lock.sha256[:12]}), cached at {target}",
            details={
                "venv": str(target),
                "python_lock": lock.path,
                "python_lock_sha256": lock.sha256,
                "require_hashes": hashes,
            },
        )

    @contextlib.contextmanager
    def _building(self, target: Path) -> Iterator[None]:
        """Held while `target` is built: one replay builds a venv, another one that wants the
        same venv waits for it (an exclusive flock on `<target>.lock` beside it, released by
        the kernel however the holder ends) and then uses it."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with (target.parent / f"{target.name}.lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.report(f"waiting for another replay that is building {target}")
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _build(
        self, target: Path, lock_path: Path, *, require_hashes: bool, wheels: Path | None = None
    ) -> None:
        """The venv from the lock: from a package index, or only from the folder `wheels`
        (a package's: no network needed)."""
        if target.exists():
            shutil.rmtree(target)  # an unfinished earlier build
        target.parent.mkdir(parents=True, exist_ok=True)
        total = len(read_pins(lock_path.read_text(errors="replace")))
        self.report(f"building the venv {target.name}: {total} pinned package(s) from {lock_path}")
        steps = [
            [sys.executable, "-m", "venv", str(target)],
            [
                str(target / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--progress-bar",
                "off",
                "--no-deps",
                "--disable-pip-version-check",
                *(["--require-hashes"] if require_hashes else []),
                *(["--no-index", "--find-links", str(wheels)] if wheels else []),
                "-r",
                str(lock_path),
            ],
        ]
        hints = [
            f"`{sys.executable} -m venv` must work (Debian: apt-get install python3-venv) and "
            f"{target.parent} must be writable with space to spare",
            f"the package's wheels ({wheels}) do not cover the lock"
            if wheels
            else "a package index must be reachable to build a venv the first time",
        ]
        seen = [0]

        def progress(line: str) -> None:
            """pip's lines, as how far the build is (a first build takes minutes: never
            silent)."""
            found = _PIP_STEP.match(line)
            if found is None:
                return
            if found.group(1) in ("Collecting", "Processing"):
                seen[0] += 1
                self.report(f"  venv: {seen[0]}/{total} {found.group(2)}")
            else:
                self.report(f"  venv: installing {total} package(s) (unpacking the wheels)")

        for i, (cmd, hint) in enumerate(zip(steps, hints, strict=True)):
            if i == 0:  # `python -m venv`: a few seconds, nothing to say meanwhile
                proc = _subprocess.run(cmd, timeout_s=1800)
                code, said = proc.returncode, (proc.stderr or proc.stdout)
            else:  # pip: minutes on a first build, each package said as it comes
                code, tail = _subprocess.run_streaming(cmd, timeout_s=1800, echo=progress)
                said = "\n".join(tail)
            if code != 0:
                shutil.rmtree(target, ignore_errors=True)
                raise EnvironmentSetupError(
                    f"building the venv failed at `{' '.join(cmd[:4])} ...`: "
                    f"{said.strip()[-1500:]}",
                    hint=hint,
                )
        write_text(target / MARKER, str(lock_path) + "\n")
