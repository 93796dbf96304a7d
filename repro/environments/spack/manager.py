"""The `spack` environment: the worker runs in a Spack environment pinned by its spack.lock.

Realizing it makes an independent Spack environment (a directory holding spack.yaml and
spack.lock, https://spack.readthedocs.io/en/latest/environments.html) under the cache, keyed
by the lock's sha256 and reused while that lock is pinned: the manifest with its relative
`repos` paths made absolute (so `spack-repo/` is found from the cache), the lock copied byte
for byte. `spack -e DIR install` builds what is missing, its progress shown; the realized
roots must have the pinned DAG hashes, or Spack re-concretized and the replay is refused.

The worker starts through `spack env activate --sh -d DIR` in a shell, then `python`: the
environment's own interpreter from its view. (`spack python` is Spack's interpreter, not the
environment's, so it cannot run the worker.)

A spec whose Spack pins have no lock yet (the manifest was never concretized where Spack is)
is concretized at replay; the run records the realized lock, and the reason says it was not
pinned.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from repro import _subprocess
from repro.artifacts.cache import sha256_file
from repro.atomic import atomic_write_text
from repro.environments.base import (
    CaptureContext,
    CapturePlan,
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    verified_lock,
    worker_environment,
)
from repro.environments.section import EnvironmentSpecBase
from repro.environments.spack import SpackEnvironment
from repro.errors import EnvironmentSetupError, SpecError
from repro.spack.lockfile import read_spack_lock
from repro.spack.pins import (
    lock_pins,
    pins_from_files,
    pins_view,
    require_consistent,
)
from repro.spack.section import LOCK_NAME, MANIFEST_NAME, SpackPins

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

#: seconds the first installation may take (LLVM and TVM build from source: hours)
REALIZE_TIMEOUT_S = 12 * 3600
MARKER = ".repro-complete"
INSTALL_HINT = (
    "Spack is installed from git: git clone --depth=2 https://github.com/spack/spack.git && "
    ". spack/share/spack/setup-env.sh"
)
#: activate the environment (dir $1), put repro's source ($2) first on PYTHONPATH, run python
ACTIVATE = (
    'd="$1"; src="$2"; shift 2; '
    'activate="$(spack env activate --sh -d "$d")" || exit 3; eval "$activate" || exit 3; '
    'export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"; exec python "$@"'
)


class SpackManager(EnvironmentManager):
    """Creates (or reuses) the pinned Spack environment and runs the worker in it."""

    name: ClassVar[str] = "spack"
    spec_model = SpackEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which("spack") is None:
            return False, f"`spack` is not on PATH ({INSTALL_HINT})"
        return True, "spack on PATH"

    def preflight_capture(self, plan: CapturePlan) -> None:
        """lockfiles/<name>/spack.yaml is there, before anything is locked."""
        _manifest_of(plan.lock_dir)

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        """The pins of lockfiles/<name>/spack.yaml; concretized first when Spack is here and
        there is no spack.lock yet."""
        manifest = _manifest_of(ctx.lockfiles_dir / ctx.name)
        if not (manifest.parent / LOCK_NAME).is_file():
            if self.available()[0]:
                ctx.report(f"concretizing {manifest} (spack -e {manifest.parent} concretize)")
                self.concretize(manifest.parent)
            else:
                ctx.report(
                    f"no {LOCK_NAME} beside {manifest} and no Spack here: the environment is "
                    "pinned by its manifest only until `spack -e "
                    f"{manifest.parent} concretize` runs where Spack is"
                )
        env: dict[str, Any] = {
            "manager": self.name,
            "spack": pins_from_files(manifest, ctx.spec_dir),
        }
        if ctx.python_lock is not None:
            env["python_lock"] = ctx.python_lock
        return env

    def pins_view(self, env: EnvironmentSpecBase, spec_dir: Path) -> dict[str, Any]:
        return pins_view(env.spack) if env.spack is not None else {}

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        pins = spec.environment.spack
        if pins is None:
            raise EnvironmentSetupError(
                f"{spec_path}: $.environment.spack: the spec has no Spack environment to realize",
                hint=f"write lockfiles/{spec.name}/spack.yaml and run `repro spack pin "
                f"{spec_path}`, or replay with --env venv",
            )
        hint = f"restore the file the spec was pinned with, or `repro spack pin {spec_path}`"
        manifest = verified_lock(pins.spack_yaml, spec_path, hint=hint)
        lock = (
            verified_lock(pins.spack_lock, spec_path, hint=hint)
            if pins.spack_lock is not None
            else None
        )
        if lock is not None:
            require_consistent(manifest, read_spack_lock(lock))
        # one environment per lock, manifest and checkout (its repo paths are made absolute)
        key = hashlib.sha256(
            f"{pins.spack_yaml.sha256}:{pins.spack_lock.sha256 if pins.spack_lock else '-'}:"
            f"{manifest.parent.resolve()}".encode()
        ).hexdigest()
        target = workdir / f"spack-{key[:16]}"
        reused = (target / MARKER).is_file() and (target / MARKER).read_text().strip() == key
        if not reused:
            self._create(target, manifest, lock)
            if lock is None:
                self.report(f"spack: concretizing {manifest} (no spack.lock is pinned)")
                self._spack(["-e", str(target), "concretize"], what="concretize")
            self.report(f"spack: installing the environment ({target})")
            self._spack(["-e", str(target), "install", "--fail-fast"], what="install")
        try:
            realized = read_spack_lock(target / LOCK_NAME)
        except SpecError as exc:  # Spack's own output, in the cache: a failure, not bad input
            raise EnvironmentSetupError(
                f"the environment Spack realized is unreadable: {exc.message}",
                hint=f"delete {target} and replay again",
            ) from None
        if pins.roots:
            self._check_roots(pins, realized.roots, target)
        python = ["bash", "-c", ACTIVATE, "repro-spack", str(target), str(repro_source_root())]
        env = worker_environment()
        probe = _subprocess.run(
            [*python, "-c", "import sys, mlperf_loadgen; print(sys.executable)"],
            env=env,
            timeout_s=600,
        )
        if probe.returncode != 0:
            tail = (probe.stderr or probe.stdout).strip()[-800:] or "no output"
            raise EnvironmentSetupError(
                f"the Spack environment {target} cannot run the worker: {tail}",
                hint="its specs need python and py-mlcommons-loadgen (see lockfiles/*/spack.yaml)",
            )
        if not reused:
            atomic_write_text(target / MARKER, key + "\n")
        pinned = "pinned by " + (
            f"{pins.spack_lock.path} (sha256 {key[:12]})"
            if pins.spack_lock is not None
            else f"nothing: {pins.spack_yaml.path} was concretized here, not pinned"
        )
        return RealizedEnvironment(
            manager=self.name,
            python=python,
            env=env,
            reason=f"spack environment {target} ({'reused' if reused else 'created'}), {pinned}",
            details={
                "spack_env": str(target),
                "spack_yaml": pins.spack_yaml.path,
                "spack_yaml_sha256": pins.spack_yaml.sha256,
                "spack_lock": pins.spack_lock.path if pins.spack_lock else None,
                "spack_lock_sha256": pins.spack_lock.sha256 if pins.spack_lock else None,
                "realized_lock_sha256": sha256_file(target / LOCK_NAME),
                "locked": pins.spack_lock is not None,
                "python": probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else None,
                **lock_pins(realized),
            },
        )

    # --- steps ----------------------------------------------------------------------------

    @staticmethod
    def _create(target: Path, manifest: Path, lock: Path | None) -> None:
        """An independent environment: the manifest (relative repo paths made absolute, so
        they resolve from here) and the lock, byte for byte."""
        import yaml

        if target.exists():
            shutil.rmtree(target)  # an unfinished earlier attempt
        target.mkdir(parents=True)
        data = yaml.safe_load(manifest.read_text())
        repos = data["spack"].get("repos")
        base = manifest.parent.resolve()

        def absolute(p: str) -> str:
            return p if p.startswith(("/", "$", "~")) else os.path.normpath(base / p)

        if isinstance(repos, list):
            data["spack"]["repos"] = [absolute(p) for p in repos]
        elif isinstance(repos, dict):
            data["spack"]["repos"] = {
                k: absolute(v) if isinstance(v, str) else v for k, v in repos.items()
            }
        (target / MANIFEST_NAME).write_text(yaml.safe_dump(data, sort_keys=False))
        if lock is not None:
            shutil.copyfile(lock, target / LOCK_NAME)

    def concretize(self, folder: Path) -> None:
        """`spack -e FOLDER concretize`: writes FOLDER/spack.lock from FOLDER/spack.yaml."""
        self._spack(["-e", str(folder), "concretize"], what="concretize")

    def _spack(self, args: list[str], *, what: str) -> None:
        status, tail = _subprocess.run_streaming(
            ["spack", *args],
            env=worker_environment(),
            timeout_s=REALIZE_TIMEOUT_S,
            echo=lambda line: self.report(f"  spack: {line}"),
        )
        if status != 0:
            errors = [ln for ln in tail if "error" in ln.lower()]
            raise EnvironmentSetupError(
                f"`spack {' '.join(args)}` failed (exit {status}): "
                + ((errors or tail or ["no output"])[-1])[:600],
                hint=f"a first {what} fetches sources (network) and builds; air-gapped: "
                "`spack mirror create` on a networked machine, then `spack mirror add`",
            )

    @staticmethod
    def _check_roots(pins: SpackPins, realized: Any, target: Path) -> None:
        want = {r.spec: r.hash for r in pins.roots}
        have = {r.spec: r.hash for r in realized}
        changed = sorted(s for s in want if have.get(s) != want[s])
        if changed:
            raise EnvironmentSetupError(
                f"{target}/{LOCK_NAME}: Spack re-concretized: the roots "
                + ", ".join(f"{s} ({want[s][:7]} -> {str(have.get(s))[:7]})" for s in changed)
                + " are not the pinned DAG hashes",
                hint="the pinned lock and the manifest disagree; re-pin with `repro spack pin`",
            )


def _manifest_of(lock_dir: Path) -> Path:
    """`lockfiles/<name>/spack.yaml`; a SpecError when it is missing."""
    manifest = lock_dir / MANIFEST_NAME
    if not manifest.is_file():
        raise SpecError(
            f"{manifest}: missing: a Spack capture pins the environment this manifest describes",
            hint="write it (lockfiles/ort-digits/spack.yaml is an example), then capture",
        )
    return manifest
