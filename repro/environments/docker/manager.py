"""The `docker` environment: the worker runs in a container of an image built from the spec.

The image (see `repro.containers.image`) holds a venv installed from the spec's hashed Python
lock and repro itself; it is pinned in the spec by its id (`sha256:...`, the digest of its
configuration, which names every layer). Before a replay the local image is checked against the
pin: another id under the pinned name is refused (exit 3) unless `--rebuild` builds it again
from the spec, and then the run records both ids. A spec captured with another manager gets an
image built from its Python lock (cached by the lock's hash), and the run says it was not
pinned. The worker runs through `repro.containers.launch` (no network, the CPU set and memory
limit of the spec or of the command line, artifacts mounted read-only).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from repro import _subprocess
from repro.containers import image as images
from repro.containers.launch import LaunchError, check_mount
from repro.environments.base import (
    CaptureContext,
    CapturePlan,
    EnvironmentManager,
    RealizedEnvironment,
    repro_source_root,
    verified_lock,
    worker_environment,
)
from repro.environments.docker import CPUSET, FACE, MEMORY, DockerEnvironment
from repro.errors import EnvironmentSetupError, ReproError, SpecError, UsageError
from repro.runs.placement import parse_cpus
from repro.spec.io import spec_id
from repro.spec.paths import resolve_path
from repro.spec.sections import EnvironmentSpecBase

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

MIN_MEMORY = 6 << 20


def default_tag(name: str, lock_sha256: str) -> str:
    """`repro/<name>:lock-<lock hash>-src-<repro source hash>`: one image per lock and repro."""
    return (
        f"repro/{images.repository_name(name)}:lock-{lock_sha256[:12]}"
        f"-src-{images.source_digest()[:8]}"
    )


def _hashes_complete(spec: ExperimentSpec) -> bool:
    """Whether the spec's Python lock has every wheel's hash (venv and docker record it)."""
    value = getattr(spec.environment, "hashes_complete", True)
    return bool(value)


def check_limits(
    cpuset: str | None, memory: str | None, *, cpuset_from: str, memory_from: str
) -> None:
    """A CPU set of CPUs this machine has and a memory limit Docker accepts, or bad input
    (said as coming from `cpuset_from` and `memory_from`: a flag, or the spec's field)."""
    import os
    import re

    if cpuset is not None:
        if not re.match(CPUSET, cpuset):
            raise SpecError(f"{cpuset_from} {cpuset!r}: expected CPUs like 0-3,6")
        last = (os.cpu_count() or 1) - 1
        for part in cpuset.split(","):
            lo, _, hi = part.partition("-")
            if int(lo) > int(hi or lo):
                raise SpecError(f"{cpuset_from} {cpuset!r}: {part!r} is not a range of CPUs")
            if int(hi or lo) > last:
                raise SpecError(f"{cpuset_from} {cpuset!r}: this machine has CPUs 0-{last}")
    if memory is not None:
        if not re.match(MEMORY, memory):
            raise SpecError(f"{memory_from} {memory!r}: expected bytes like 512m or 4g")
        unit = memory[-1].lower() if memory[-1].isalpha() else "b"
        size = int(memory.rstrip("bkmgBKMG")) << {"b": 0, "k": 10, "m": 20, "g": 30}[unit]
        if size < MIN_MEMORY:
            raise SpecError(f"{memory_from} {memory!r}: Docker needs at least 6m")


class DockerManager(EnvironmentManager):
    """Verifies (or builds) the image and runs each worker in a fresh container of it."""

    name: ClassVar[str] = "docker"
    spec_model = DockerEnvironment

    @classmethod
    def available(cls) -> tuple[bool, str]:
        if _subprocess.which("docker") is None:
            return False, "`docker` is not on PATH (Debian: apt-get install docker.io)"
        try:
            with images.client():
                pass
        except ReproError as exc:
            return False, exc.message
        return True, "a Docker daemon answers"

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """--container-cpuset and --container-memory: not empty, CPUs this machine has, a
        memory limit Docker takes."""
        for name in ("cpuset", "memory"):
            value = options.get(name)
            if value is not None and not str(value).strip():
                raise UsageError(f"{FACE.flag(name)}: empty")
        check_limits(
            options.get("cpuset"),
            options.get("memory"),
            cpuset_from=FACE.flag("cpuset"),
            memory_from=FACE.flag("memory"),
        )

    @classmethod
    def with_cpus(cls, options: Mapping[str, Any], cpus: list[int]) -> dict[str, Any]:
        """The container's CPU set (`docker run --cpuset-cpus`) holds the CPUs the tests are
        pinned to; one given (--container-cpuset) must hold them."""
        given = options.get("cpuset")
        if given is None:
            return {**options, "cpuset": ",".join(map(str, cpus))}
        outside = sorted(set(cpus) - set(parse_cpus(str(given), option=FACE.flag("cpuset"))))
        if outside:
            raise UsageError(
                f"--container-cpuset {given}: the rounds pin tests to CPUs {cpus}, and "
                f"{outside} are outside it",
                hint="give --cpus within the container's CPU set, or widen --container-cpuset",
            )
        return dict(options)

    def capture(self, ctx: CaptureContext) -> dict[str, Any]:
        """Build the image from the Python lock just written and pin its id."""
        if ctx.python_lock is None:
            raise EnvironmentSetupError("--env-manager docker needs the spec's Python lock")
        lock = resolve_path(ctx.python_lock["path"], ctx.spec_dir)
        base = str(ctx.options.get("docker_base") or images.DEFAULT_BASE)
        bake: dict[str, Path] = dict(ctx.options.get("docker_bake") or {})
        built = self._build(
            lock,
            ctx.python_lock["sha256"],
            ctx.hashes_complete,
            base,
            ctx.name,
            "",
            ctx.report,
            artifacts=bake,
            tag=default_tag(ctx.name, ctx.python_lock["sha256"]) + ("-baked" if bake else ""),
        )
        env: dict[str, Any] = {
            "manager": self.name,
            "python_lock": ctx.python_lock,
            "hashes_complete": ctx.hashes_complete,
            "image": built.tag,
            "image_id": built.image_id,
            "base": built.base,
            "base_id": built.base_id,
        }
        if built.baked:
            env["baked_artifacts"] = list(built.baked)
        return env

    def preflight_capture(self, plan: CapturePlan) -> None:
        """Before the Python lock is written: a daemon answers and the base image is here."""
        base = images.check_reference(
            str(plan.options.get("docker_base") or images.DEFAULT_BASE), what="--docker-base"
        )
        with images.client() as c:
            if images.image_id(c, base) is None:
                raise SpecError(
                    f"--docker-base: base image {base!r} is not on this Docker daemon",
                    hint="build it from Debian's packages as docs/docker.md says",
                )

    def pins_view(self, env: EnvironmentSpecBase, spec_dir: Path) -> dict[str, Any]:
        assert isinstance(env, DockerEnvironment)
        return {"docker.image_id": env.image_id, "docker.base_id": env.base_id}

    def realize(self, spec: ExperimentSpec, spec_path: Path, workdir: Path) -> RealizedEnvironment:
        with images.client() as c:
            return self._realize(c, spec, spec_path)

    def _realize(self, c: Any, spec: ExperimentSpec, spec_path: Path) -> RealizedEnvironment:

        env_spec = spec.environment
        rebuild = bool(self.options.get("rebuild"))
        pinned = env_spec if isinstance(env_spec, DockerEnvironment) else None
        cpuset = self.options.get("cpuset") or (pinned.cpuset if pinned else None)
        memory = self.options.get("memory") or (pinned.memory if pinned else None)
        given = self.options.get
        check_limits(
            cpuset,
            memory,
            cpuset_from=FACE.flag("cpuset") if given("cpuset") else "$.environment.cpuset",
            memory_from=FACE.flag("memory") if given("memory") else "$.environment.memory",
        )
        for flag, path in self.options.get("mounts", {}).items():
            try:
                check_mount(str(path))
            except LaunchError as exc:
                raise SpecError(f"{flag}: {exc}", hint="choose a folder without ','") from None
        details: dict[str, Any] = {}
        archive = self.options.get("image_archive")
        if (
            pinned is not None
            and pinned.image_id is not None
            and archive
            and images.image_id(c, pinned.image_id) != pinned.image_id
        ):
            # a package's image (`docker save`), for an offline replay
            self.report(f"loading the package's image {pinned.image_id[:19]}")
            with Path(archive).open("rb") as fh:
                c.images.load(fh.read())
        if pinned is not None and pinned.image_id is not None:
            if images.image_id(c, pinned.image_id) == pinned.image_id:
                # the pinned content is here: run it by id, wherever its name points now
                run_id, reason = pinned.image_id, f"pinned image {pinned.image_id[:19]}"
            elif not rebuild:
                current = images.image_id(c, pinned.image)
                found = f"{pinned.image} is {current}" if current else "it is not here"
                raise EnvironmentSetupError(
                    f"{spec_path}: $.environment.image_id: the spec pins {pinned.image_id}; "
                    f"{found} (this Docker daemon has no image of the pinned id)",
                    hint="--rebuild builds the image again from the spec (the run records both "
                    "ids), or restore the pinned image (docker load)",
                )
            else:
                built = self._from_lock(spec, spec_path, pinned.base, tag=pinned.image)
                run_id = built.image_id
                reason = f"rebuilt {pinned.image}: pinned {pinned.image_id[:19]}, ran {run_id[:19]}"
                if pinned.baked_artifacts:
                    reason += "; its artifacts are mounted, not baked"
                details.update(pinned_image_id=pinned.image_id, rebuilt=True)
            details.update(image=pinned.image, base=pinned.base, base_id=pinned.base_id)
        else:
            base = pinned.base if pinned is not None and pinned.base else None
            built = self._from_lock(spec, spec_path, base, tag=None, reuse=not rebuild)
            run_id = built.image_id
            reason = f"image {built.tag} built from the Python lock ({run_id[:19]}), not pinned"
            details.update(image=built.tag, base=built.base, base_id=built.base_id)
        rebuilt = bool(details.get("rebuilt"))
        baked = list(pinned.baked_artifacts) if pinned is not None and not rebuilt else []
        self._check_labels(c, run_id, spec, baked, spec_path)
        launcher = [sys.executable, "-m", "repro.containers.launch", f"--image={run_id}"]
        if cpuset:
            launcher.append(f"--cpuset={cpuset}")
        if memory:
            launcher.append(f"--memory={memory}")
        if baked:
            launcher.append(f"--baked={','.join(baked)}")
        details.update(
            image_id=run_id,
            cpuset=cpuset,
            memory=memory,
            network="none",
            baked_artifacts=baked or None,
        )
        return RealizedEnvironment(
            manager=self.name,
            python=[*launcher, "--"],
            env=worker_environment({"PYTHONPATH": str(repro_source_root())}),
            reason=reason,
            details={k: v for k, v in details.items() if v is not None},
            workers_are_children=False,  # the daemon starts the container's processes
        )

    @staticmethod
    def _check_labels(
        c: Any, image_id: str, spec: ExperimentSpec, baked: list[str], spec_path: Path
    ) -> None:
        """The image is one repro built for this Python lock, with the artifacts the spec says
        are baked in: else the replay would fail in every container."""
        found = images.labels(c, image_id)
        where = f"{spec_path}: $.environment.image_id {image_id[:19]}"
        if f"{images.LABEL}.python-lock-sha256" not in found:
            raise EnvironmentSetupError(
                f"{where}: not an image `repro image` built (it has no {images.LABEL} labels)",
                hint="build one with `repro image` or `repro capture --env-manager docker`",
            )
        lock = spec.environment.python_lock
        if lock is not None and found[f"{images.LABEL}.python-lock-sha256"] != lock.sha256:
            raise EnvironmentSetupError(
                f"{where}: built for Python lock "
                f"{found[f'{images.LABEL}.python-lock-sha256'][:12]}, the spec pins "
                f"{lock.sha256[:12]}",
                hint="--rebuild, or pin the image built for this lock",
            )
        inside = set(filter(None, found.get(f"{images.LABEL}.baked-artifacts", "").split(",")))
        missing = sorted(set(baked) - inside)
        if missing:
            raise EnvironmentSetupError(
                f"{where}: the spec says artifacts {', '.join(m[:12] for m in missing)} are baked "
                "in, the image does not have them",
                hint="capture again with --docker-bake-artifacts, or drop $.environment."
                "baked_artifacts",
            )

    # --- building -------------------------------------------------------------------------

    @staticmethod
    def _lock_path(spec: ExperimentSpec, spec_path: Path) -> Path:
        """The spec's Python lock, verified against its pin."""
        lock = spec.environment.python_lock
        if lock is None:
            raise EnvironmentSetupError(
                f"{spec_path}: $.environment.python_lock: no Python lock to build an image from",
                hint="capture one (repro capture --from SPEC --no-run), or use --env native",
            )
        return verified_lock(lock, spec_path, hint="restore the lock file or re-capture it")

    def _from_lock(
        self,
        spec: ExperimentSpec,
        spec_path: Path,
        base: str | None,
        *,
        tag: str | None,
        reuse: bool = False,
    ) -> images.BuiltImage:
        """The image of the spec's Python lock: reused by its tag when `reuse`, else built."""

        lock_path = self._lock_path(spec, spec_path)
        lock = spec.environment.python_lock
        assert lock is not None
        tag = tag or default_tag(spec.name, lock.sha256)
        base = base or str(self.options.get("docker_base") or images.DEFAULT_BASE)
        if reuse:
            with images.client() as c:
                existing = images.image_id(c, tag)
                base_id = images.image_id(c, base)
                built_on = (
                    images.labels(c, tag).get(f"{images.LABEL}.base-id") if existing else None
                )
            if existing is not None and base_id is not None and built_on == base_id:
                return images.BuiltImage(tag=tag, image_id=existing, base=base, base_id=base_id)
        hashes = _hashes_complete(spec)
        return self._build(
            lock_path, lock.sha256, hashes, base, spec.name, spec_id(spec), self.report, tag=tag
        )

    def build_for_spec(
        self,
        spec: ExperimentSpec,
        spec_path: Path,
        *,
        base: str | None,
        tag: str | None,
        artifacts: dict[str, Path],
    ) -> images.BuiltImage:
        """`repro image`: the spec's image, with `artifacts` (sha256 -> file) baked in; the
        base is --base, else the spec's pinned one, else the default."""
        env = spec.environment
        base = base or (env.base if isinstance(env, DockerEnvironment) else None)
        if not artifacts:
            return self._from_lock(spec, spec_path, base, tag=tag)

        lock_path = self._lock_path(spec, spec_path)
        lock = spec.environment.python_lock
        assert lock is not None  # _lock_path said so
        return self._build(
            lock_path,
            lock.sha256,
            _hashes_complete(spec),
            base or str(self.options.get("docker_base") or images.DEFAULT_BASE),
            spec.name,
            spec_id(spec),
            self.report,
            tag=tag or default_tag(spec.name, lock.sha256) + "-baked",
            artifacts=artifacts,
        )

    @staticmethod
    def _build(
        lock: Path,
        lock_sha256: str,
        require_hashes: bool,
        base: str,
        name: str,
        spec_id: str,
        report: Any,
        *,
        tag: str | None = None,
        artifacts: dict[str, Path] | None = None,
    ) -> images.BuiltImage:
        tag = tag or default_tag(name, lock_sha256)
        inside = f", {len(artifacts)} artifact(s) inside" if artifacts else ""
        report(f"building image {tag} from {base}{inside}")
        with (
            images.client() as c,
            images.build_context(
                lock=lock,
                lock_sha256=lock_sha256,
                require_hashes=require_hashes,
                base=base,
                spec_name=name,
                spec_id=spec_id,
                artifacts=artifacts or {},
                report=report,
            ) as ctx,
        ):
            baked = tuple(sorted(artifacts or {}))
            return images.build(c, ctx, tag=tag, base=base, report=report, baked=baked)
