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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from repro import _subprocess
from repro.atomic import atomic_write_text, write_text
from repro.backends.registry import spack_key_packages
from repro.digests import sha256_file
from repro.environments.base import (
    CaptureContext,
    CapturePlan,
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    verified_lock,
)
from repro.environments.spack import SpackEnvironment, compose, tool
from repro.environments.spack import mirror as mirror_of
from repro.environments.spack.layer import install_layer, provided
from repro.errors import EnvironmentSetupError, SpecError
from repro.formats.spack.lockfile import read_spack_lock
from repro.formats.spack.pins import (
    lock_pins,
    pins_from_files,
    pins_view,
    require_consistent,
)
from repro.spec.sections import EnvironmentSpecBase
from repro.spec.spack_pins import LOCK_NAME, MANIFEST_NAME, SpackPins

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

#: seconds the first installation may take (LLVM and TVM build from source: hours)
REALIZE_TIMEOUT_S = 12 * 3600
MARKER = ".repro-complete"
#: activate the environment (dir $2) with Spack ($1), put repro's source and the lock's wheels
#: ($3, colon-separated) first on PYTHONPATH, run the view's python
ACTIVATE = (
    'spack="$1"; d="$2"; path="$3"; shift 3; '
    'activate="$("$spack" env activate --sh -d "$d")" || exit 3; eval "$activate" || exit 3; '
    'export PYTHONPATH="$path${PYTHONPATH:+:$PYTHONPATH}"; exec python "$@"'
)


def pin_builtin_commit(pins: dict[str, Any], report: Callable[[str], None]) -> None:
    """Add the commit of the builtin repository this Spack uses to `pins`, unless the manifest
    names one: a git checkout's HEAD or `REPRO_SPACK_BUILTIN_COMMIT`; said when neither is."""
    if "builtin_commit" in pins:
        return
    _, commit = tool.builtin_repository()
    if commit is not None:
        pins["builtin_commit"] = commit
    else:
        report(
            "spack: the builtin repository here is not a git checkout and "
            "REPRO_SPACK_BUILTIN_COMMIT is not set: its commit is not pinned (the lock's "
            "recipe hashes are)"
        )


def _check_externals(manifest: Path) -> None:
    """Every external the manifest names is still on this machine: a prefix that is gone
    (the Debian package removed, another machine) is refused before Spack installs anything,
    naming the package and its prefix."""
    for name, entries in compose.externals(manifest).items():
        for entry in entries:
            prefix = entry.get("prefix")
            if prefix and not Path(prefix).is_dir():
                raise EnvironmentSetupError(
                    f"{manifest}: $.spack.packages.{name}: the external {entry.get('spec')} "
                    f"has no prefix {prefix} on this machine",
                    hint=f"install it (the package that provides {name}), or capture again "
                    "here so that Spack finds this machine's externals",
                )


class SpackManager(EnvironmentManager):
    """Creates (or reuses) the pinned Spack environment and runs the worker in it."""

    name: ClassVar[str] = "spack"
    spec_model = SpackEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        spack = tool.find_spack()
        if spack is None:
            return False, f"`spack` is not on PATH and SPACK_ROOT is not set ({tool.INSTALL_HINT})"
        return True, f"spack at {spack}"

    def preflight_capture(self, plan: CapturePlan) -> None:
        """lockfiles/<name>/spack.yaml is there, or Spack is here to write and concretize it,
        before anything is locked."""
        if not (plan.lock_dir / MANIFEST_NAME).is_file() and not self.available()[0]:
            _manifest_of(plan.lock_dir)  # names the missing manifest

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        """The pins of lockfiles/<name>/spack.yaml (written for the backend's native stack
        when there is none, `compose.py`), concretized by Spack first when there is no
        spack.lock yet."""
        lock_dir = ctx.lockfiles_dir / ctx.name
        if not (lock_dir / MANIFEST_NAME).is_file():
            compose.write_environment(
                lock_dir,
                name=ctx.name,
                specs=ctx.backend.spack_specs,
                repro_repo=repro_source_root() / "spack-repo" / "spack_repo" / "repro",
                externals=ctx.backend.spack_externals,
                report=ctx.report,
            )
        manifest = _manifest_of(lock_dir)
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
        pins = pins_from_files(manifest, ctx.spec_dir, spack_key_packages())
        if self.available()[0]:
            pin_builtin_commit(pins, ctx.report)
        env: dict[str, Any] = {"manager": self.name, "spack": pins}
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
        manifest, lock = self._pinned_files(pins, spec_path)
        spack = tool.require_spack()
        _check_externals(manifest)
        here = self._check_version(lock)
        # one environment per lock, manifest and checkout (its repo paths are made absolute)
        key = hashlib.sha256(
            f"{pins.spack_yaml.sha256}:{pins.spack_lock.sha256 if pins.spack_lock else '-'}:"
            f"{manifest.parent.resolve()}".encode()
        ).hexdigest()
        target = workdir / f"spack-{key[:16]}"
        reused = (target / MARKER).is_file() and (target / MARKER).read_text().strip() == key
        mirror = self._mirror(workdir)
        if not reused:
            self._build(target, manifest, lock, mirror)
        realized = self._realized_lock(target)
        if pins.roots:
            self._check_roots(pins, realized.roots, target)
        path, probe = self._worker_path(spec, spec_path, spack, target, realized, workdir)
        if not reused:
            atomic_write_text(target / MARKER, key + "\n")
        return self._realized(pins, target, reused, probe, realized, here, mirror, path, spack)

    def _pinned_files(self, pins: SpackPins, spec_path: Path) -> tuple[Path, Path | None]:
        """The pinned manifest and lock, their bytes checked, the lock made from the manifest."""
        hint = f"restore the file the spec was pinned with, or `repro spack pin {spec_path}`"
        manifest = verified_lock(pins.spack_yaml, spec_path, hint=hint)
        lock = (
            verified_lock(pins.spack_lock, spec_path, hint=hint)
            if pins.spack_lock is not None
            else None
        )
        if lock is not None:
            require_consistent(manifest, read_spack_lock(lock))
        return manifest, lock

    @staticmethod
    def _check_version(lock: Path | None) -> str | None:
        """This Spack's version; a lock written by a newer Spack (its format or release) is
        refused, both versions named: an older Spack may misread it."""
        try:
            here = tool.spack_version()
        except EnvironmentSetupError:
            return None  # a Spack that does not say its version: the install will tell
        pinned = read_spack_lock(lock).spack_version if lock is not None else None
        if pinned and tool.version_tuple(pinned)[:2] > tool.version_tuple(here)[:2]:
            raise EnvironmentSetupError(
                f"{lock}: written by Spack {pinned}, newer than the Spack here ({here})",
                hint=f"use Spack {pinned} or newer, or concretize again with this one "
                "(`repro spack pin SPEC --concretize`)",
            )
        return here

    def _mirror(self, workdir: Path) -> Path | None:
        """The source mirror to install from: the replay's (a package's), else
        $REPRO_SPACK_MIRROR, else the cache's (`repro spack mirror` writes it there)."""
        given = self.options.get("spack_mirror") or os.environ.get("REPRO_SPACK_MIRROR")
        if given:
            return Path(given)
        default = workdir.parent / "spack-mirror"
        return default if default.is_dir() else None

    def _build(self, target: Path, manifest: Path, lock: Path | None, mirror: Path | None) -> None:
        """The environment at `target`, installed: made anew (an unfinished earlier attempt
        is never used), concretized when no lock is pinned, installed from the mirror."""
        self._create(target, manifest, lock, mirror)
        if lock is None:
            self.report(f"spack: concretizing {manifest} (no spack.lock is pinned)")
            tool.concretize(target)
        if mirror is not None:
            lacking = mirror_of.missing_from(mirror, mirror_of.sources(target))
            if lacking:
                raise EnvironmentSetupError(
                    f"the source mirror {mirror} lacks "
                    + ", ".join(f"{s.name}@{s.version}" for s in lacking[:8]),
                    hint="make it where PyPI is reachable: `repro spack mirror SPEC -o DIR`",
                )
        log = target / "install.log"
        self.report(f"spack: installing the environment ({target}; Spack's output: {log})")
        status, tail = tool.run_logged(
            ["-e", str(target), "install", "--fail-fast"],
            log=log,
            report=self.report,
            timeout_s=REALIZE_TIMEOUT_S,
        )
        if status != 0:
            raise EnvironmentSetupError(
                f"`spack install` failed (exit {status}): {_failed_package(tail)}; its whole "
                f"output: {log}",
                hint="a first install fetches sources and builds: offline, install from a "
                "mirror (`repro spack mirror SPEC` where PyPI is reachable)",
            )

    @staticmethod
    def _realized_lock(target: Path) -> Any:
        try:
            return read_spack_lock(target / LOCK_NAME)
        except SpecError as exc:  # Spack's own output, in the cache: a failure, not bad input
            raise EnvironmentSetupError(
                f"the environment Spack realized is unreadable: {exc.message}",
                hint=f"delete {target} and replay again",
            ) from None

    def _worker_path(
        self,
        spec: ExperimentSpec,
        spec_path: Path,
        spack: str,
        target: Path,
        realized: Any,
        workdir: Path,
    ) -> tuple[str, str]:
        """PYTHONPATH of the worker (repro's source, then the lock's wheels where the view
        lacks them) and the interpreter it runs: the view's python must import the worker's
        packages, or the spec's Python lock is installed beside the view (`layer.py`)."""
        path = str(repro_source_root())
        probe = self._probe(spec, spack, target, path)
        if probe.returncode != 0 and spec.environment.python_lock is not None:
            lock = verified_lock(spec.environment.python_lock, spec_path, hint="restore it")
            names = [n.name for n in realized.nodes.values()]
            wheels = self.options.get("wheels")
            layer = install_layer(
                lock,
                provided(names),
                workdir,
                wheels=Path(wheels) if wheels else None,
                report=self.report,
            )
            path = f"{path}:{layer}"
            probe = self._probe(spec, spack, target, path)
        if probe.returncode != 0:
            tail = (probe.stderr or probe.stdout).strip()[-800:] or "no output"
            raise EnvironmentSetupError(
                f"the Spack environment {target} cannot run the worker: {tail}",
                hint="its specs need python and py-mlcommons-loadgen, the spec a Python lock "
                "for the rest (lockfiles/<name>/)",
            )
        return path, probe.stdout.strip().splitlines()[-1]

    @staticmethod
    def _probe(spec: ExperimentSpec, spack: str, target: Path, path: str) -> Any:
        from repro.backends.registry import get_backend

        engine = get_backend(spec.backend.name).engine.split(":")[0]
        code = (
            f"import sys, mlperf_loadgen, importlib; importlib.import_module({engine!r}); "
            "print(sys.executable)"
        )
        return _subprocess.run(
            ["bash", "-c", ACTIVATE, "repro-spack", spack, str(target), path, "-c", code],
            env=tool.spack_env(),
            timeout_s=600,
        )

    def _realized(
        self,
        pins: SpackPins,
        target: Path,
        reused: bool,
        python: str,
        realized: Any,
        here: str | None,
        mirror: Path | None,
        path: str,
        spack: str,
    ) -> RealizedEnvironment:
        pinned = "pinned by " + (
            f"{pins.spack_lock.path} (sha256 {pins.spack_lock.sha256[:12]})"
            if pins.spack_lock is not None
            else f"nothing: {pins.spack_yaml.path} was concretized here, not pinned"
        )
        return RealizedEnvironment(
            manager=self.name,
            python=["bash", "-c", ACTIVATE, "repro-spack", spack, str(target), path],
            env=tool.spack_env(),
            reason=f"spack environment {target} ({'reused' if reused else 'created'}), {pinned}",
            details={
                "spack_env": str(target),
                "spack_yaml": pins.spack_yaml.path,
                "spack_yaml_sha256": pins.spack_yaml.sha256,
                "spack_lock": pins.spack_lock.path if pins.spack_lock else None,
                "spack_lock_sha256": pins.spack_lock.sha256 if pins.spack_lock else None,
                "realized_lock_sha256": sha256_file(target / LOCK_NAME),
                "locked": pins.spack_lock is not None,
                "python": python,
                "spack_version_here": here,
                "builtin_commit": pins.builtin_commit,
                "mirror": str(mirror) if mirror is not None else None,
                "python_layer": path.split(":", 1)[1] if ":" in path else None,
                "concrete_specs": [
                    {"name": n.name, "version": n.version, "hash": h}
                    for h, n in sorted(realized.nodes.items(), key=lambda kv: kv[1].name)
                ],
                **lock_pins(realized, spack_key_packages()),
            },
        )

    # --- steps ----------------------------------------------------------------------------

    @staticmethod
    def _create(target: Path, manifest: Path, lock: Path | None, mirror: Path | None) -> None:
        """An independent environment: the manifest (relative repo paths made absolute, so
        they resolve from here; the source mirror added) and the lock, byte for byte."""
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
        if mirror is not None:
            data["spack"].setdefault("mirrors", {})["repro"] = mirror.resolve().as_uri()
        write_text(target / MANIFEST_NAME, yaml.safe_dump(data, sort_keys=False))
        if lock is not None:
            shutil.copyfile(lock, target / LOCK_NAME)

    def concretize(self, folder: Path) -> None:
        """`spack -e FOLDER concretize --fresh`: FOLDER/spack.lock from FOLDER/spack.yaml (a
        manifest that does not concretize is bad input, clingo's message named)."""
        tool.concretize(folder)

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


def pinned_environment(
    manager: SpackManager, spec: ExperimentSpec, spec_path: Path, target: Path
) -> Path:
    """A Spack environment folder holding the spec's pinned manifest and lock (nothing
    installed): what Spack reads to say what the lock needs (`repro spack mirror`)."""
    pins = spec.environment.spack
    if pins is None or pins.spack_lock is None:
        raise SpecError(
            f"{spec_path}: $.environment.spack.spack_lock: the spec pins no spack.lock",
            hint=f"concretize and pin it first: `repro spack pin {spec_path} --concretize`",
        )
    manifest, lock = manager._pinned_files(pins, spec_path)
    manager._create(target, manifest, lock, None)
    return target


def _failed_package(tail: list[str]) -> str:
    """The package whose build failed, from Spack's last lines (its `Error:` line)."""
    errors = [ln.strip() for ln in tail if "Error" in ln]
    return (errors or [ln.strip() for ln in tail if ln.strip()] or ["no output"])[0][:600]
