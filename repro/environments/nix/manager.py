"""The `nix` environment: the worker runs inside `nix develop <flake>#<shell> --command python`.

The flake's lock file is verified against the spec's pin before anything runs, and Nix is told
never to rewrite it (`--no-update-lock-file`), so the stack that runs is the one that was pinned.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from repro import _subprocess
from repro.atomic import write_text
from repro.digests import sha256_file
from repro.environments.base import (
    CaptureContext,
    CapturePlan,
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    verified_lock,
    worker_environment,
)
from repro.environments.nix import NixEnvironment
from repro.errors import EnvironmentSetupError, SpecError
from repro.formats.nix.flakelock import read_flake_lock
from repro.spec.paths import resolve_path
from repro.spec.sections import EnvironmentSpecBase

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

NIX_FEATURES = ["--extra-experimental-features", "nix-command flakes"]
#: seconds the first realization may take (downloads and builds on a networked machine)
REALIZE_TIMEOUT_S = 4 * 3600


def nix_base_command() -> list[str]:
    """`nix` with flakes enabled and without the global registry (no network lookups)."""
    registry = Path(tempfile.gettempdir()) / "repro-empty-flake-registry.json"
    if not registry.is_file():
        write_text(registry, json.dumps({"flakes": [], "version": 2}))
    return ["nix", *NIX_FEATURES, "--option", "flake-registry", str(registry)]


def flake_ref(flake: str, spec_dir: Path) -> str:
    """`path:REL` is relative to the spec's folder; other references pass through."""
    if flake.startswith("path:"):
        target = Path(flake[len("path:") :])
        return f"path:{(target if target.is_absolute() else spec_dir / target).resolve()}"
    return flake


class NixManager(EnvironmentManager):
    """Realizes the pinned devShell and runs the worker inside it."""

    name: ClassVar[str] = "nix"
    spec_model = NixEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which("nix") is None:
            return False, "`nix` is not on PATH (Debian: apt-get install nix-bin)"
        return True, "nix on PATH"

    def preflight_capture(self, plan: CapturePlan) -> None:
        """The flake whose lock pins the environment is there, before anything is locked."""
        _flake_lock_of(plan.flake_dir)

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        """The flake's reference, its lock's hash and every locked input."""
        lock_path = _flake_lock_of(ctx.flake_dir)
        env: dict[str, Any] = {
            "manager": self.name,
            "flake": "path:" + ctx.relative(ctx.flake_dir),
            "shell": ctx.backend.nix_shell,
            "flake_lock": {"path": ctx.relative(lock_path), "sha256": sha256_file(lock_path)},
            "inputs": [i.pin() for i in read_flake_lock(lock_path).inputs()],
        }
        if ctx.python_lock is not None:
            env["python_lock"] = ctx.python_lock
        return env

    def pins_view(self, env: EnvironmentSpecBase, spec_dir: Path) -> dict[str, Any]:
        """Every input the spec pins (as captured from its flake.lock), as type:source@rev
        narHash; a spec without them, from its flake.lock where that is the pinned file."""
        assert isinstance(env, NixEnvironment)
        if env.inputs:
            return {f"nix.{i.name}": _pin_text(i.model_dump()) for i in env.inputs}
        lock_path = resolve_path(env.flake_lock.path, spec_dir)
        if not lock_path.is_file() or sha256_file(lock_path) != env.flake_lock.sha256:
            return {}
        return flake_pins(lock_path)

    def usable_for(self, spec: ExperimentSpec, spec_path: Path) -> tuple[bool, str]:
        """`auto`'s question, answered once per process and flake, in seconds: nix is on PATH
        and can enter the pinned shell without waiting on downloads (see `quick_check`)."""
        ok, why = self.available()
        if not ok or not isinstance(spec.environment, NixEnvironment):
            return ok, why
        try:
            env_spec = _pinned(spec, spec_path)
        except EnvironmentSetupError as exc:
            return False, exc.message
        checked = quick_check(_shell_ref(env_spec, spec_path), env_spec.flake_lock.sha256)
        return checked.ok, checked.why

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        env_spec = _pinned(spec, spec_path)
        ref = _shell_ref(env_spec, spec_path)
        develop = _develop(ref)
        env = worker_environment({"PYTHONPATH": str(repro_source_root())})
        checked = _CHECKED.get((ref, env_spec.flake_lock.sha256))
        if checked is not None and checked.output is not None:
            output = checked.output  # the quick check entered the shell already
        else:
            output = _enter(ref, develop, env)
        executable, prefix = output.strip().splitlines()[-2:]
        details: dict[str, Any] = {
            "flake": ref,
            "flake_lock": env_spec.flake_lock.path,
            "flake_lock_sha256": env_spec.flake_lock.sha256,
            "store_paths": sorted({_store_path(executable), _store_path(prefix)} - {None}),
            "python": executable,
        }
        return RealizedEnvironment(
            manager=self.name,
            python=[*develop, "python"],
            env=env,
            reason=f"nix develop {ref} (flake.lock sha256 {env_spec.flake_lock.sha256[:12]})",
            details=details,
        )


def _pinned(spec: ExperimentSpec, spec_path: Path) -> NixEnvironment:
    """The spec's Nix section, its flake.lock verified against the pin."""
    env_spec = spec.environment
    if not isinstance(env_spec, NixEnvironment):
        raise EnvironmentSetupError(
            f"{spec_path}: $.environment.manager is {env_spec.manager!r}: the spec has no "
            "flake to realize",
            hint="capture with --env-manager nix, or use --env venv",
        )
    verified_lock(
        env_spec.flake_lock, spec_path, hint="restore the flake.lock the spec was captured with"
    )
    return env_spec


def _shell_ref(env_spec: NixEnvironment, spec_path: Path) -> str:
    return f"{flake_ref(env_spec.flake, spec_path.parent)}#{env_spec.shell}"


def _develop(ref: str, *options: str) -> list[str]:
    """`nix ... develop REF --no-update-lock-file --command`, the lock never rewritten."""
    return [*nix_base_command(), *options, "develop", ref, "--no-update-lock-file", "--command"]


def _enter(ref: str, develop: list[str], env: dict[str, str]) -> str:
    """Realize the shell (downloads and builds as needed) and return what PROBE printed."""
    probe = _subprocess.run([*develop, *PROBE], env=env, timeout_s=REALIZE_TIMEOUT_S)
    if probe.returncode != 0:
        raise EnvironmentSetupError(
            f"`nix develop {ref}` failed: {_last_error(probe)}",
            hint="the first realization fetches nixpkgs and builds the shell (network); "
            "air-gapped: pre-seed the store as docs/nix.md says, or use --env venv",
        )
    return probe.stdout


def _last_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    return (errors or lines or ["no output"])[-1][:600]


@dataclass(frozen=True)
class QuickCheck:
    """Whether `auto` takes nix for a flake, and why; `output` is PROBE's when the check
    entered the shell (the realization then reuses it)."""

    ok: bool
    why: str
    output: str | None = None


def quick_check(ref: str, lock_sha256: str) -> QuickCheck:
    """Enter the shell once with one download attempt and a short connect timeout, within
    QUICK_CHECK_S: an offline machine fails at once (Nix's own retries took ~9.5 s on every
    command), a store that holds the shell enters it, and a machine still fetching or building
    at the bound is one with a network, realized in full. Cached for the process."""
    key = (ref, lock_sha256)
    if key not in _CHECKED:
        _CHECKED[key] = _run_quick_check(ref)
    return _CHECKED[key]


def _run_quick_check(ref: str) -> QuickCheck:
    env = worker_environment({"PYTHONPATH": str(repro_source_root())})
    develop = _develop(ref, *QUICK_OPTIONS)
    try:
        proc = _subprocess.run([*develop, *PROBE], env=env, timeout_s=QUICK_CHECK_S)
    except subprocess.TimeoutExpired:
        return QuickCheck(
            True,
            f"nix on PATH, still fetching or building {ref} after {QUICK_CHECK_S:.0f} s "
            "(a network answers): realized in full",
        )
    if proc.returncode == 0:
        return QuickCheck(True, f"nix on PATH, entered {ref}", proc.stdout)
    return QuickCheck(
        False,
        f"a quick check of nix (`nix develop {ref}` with one download attempt, "
        f"{CONNECT_TIMEOUT_S} s to connect) failed: {_last_error(proc)} (offline? pre-seed the "
        "store as docs/nix.md says, or --env nix to wait for Nix's own retries)",
    )


#: what the worker's interpreter in the shell prints: its executable and prefix
PROBE = ["python", "-c", "import sys, mlperf_loadgen; print(sys.executable); print(sys.prefix)"]
#: auto's quick check: one download attempt, a few seconds to connect, a bound on the whole
CONNECT_TIMEOUT_S = 3
QUICK_OPTIONS = (
    "--option",
    "download-attempts",
    "1",
    "--option",
    "connect-timeout",
    str(CONNECT_TIMEOUT_S),
)
QUICK_CHECK_S = 20.0
_CHECKED: dict[tuple[str, str], QuickCheck] = {}


def _flake_lock_of(flake_dir: Path) -> Path:
    """`flake_dir/flake.lock`, when flake.nix is beside it; else a SpecError naming both."""
    lock_path = flake_dir / "flake.lock"
    if not (flake_dir / "flake.nix").is_file() or not lock_path.is_file():
        raise SpecError(
            f"{flake_dir.resolve()}: needs flake.nix and flake.lock (the flake whose lock pins "
            "the environment)",
            hint="name the flake's folder with --flake-dir; `nix flake lock` (on a networked "
            "machine) writes flake.lock",
        )
    return lock_path


def _store_path(path: str) -> str | None:
    """`/nix/store/<hash>-<name>` of a path inside the store."""
    parts = Path(os.path.realpath(path)).parts
    if len(parts) > 3 and parts[1:3] == ("nix", "store"):
        return "/" + "/".join(parts[1:4])
    return None


def flake_pins(lock_path: Path) -> dict[str, Any]:
    """`nix.<input>` -> `type:source@rev narHash` of every input of a flake.lock."""
    return {f"nix.{i.name}": _pin_text(i.pin()) for i in read_flake_lock(lock_path).inputs()}


def _pin_text(pin: dict[str, Any]) -> str:
    """An input's pin (`LockedInput.pin`, a spec's NixInput) as type:source@rev narHash."""
    owner, repo = pin.get("owner"), pin.get("repo")
    where = pin.get("url") or pin.get("path") or (f"{owner}/{repo}" if owner else None)
    return f"{pin.get('type')}:{where}@{pin.get('rev') or '-'} {pin.get('nar_hash')}"
