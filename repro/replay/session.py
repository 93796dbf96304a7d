"""`ReplaySession`: where a replay's engine is built, and the only place that is.

A session is one realized environment and what every replay in it shares: the artifact cache,
the reporter, the progress bar, the worker runner and the probes (each use case's, or a test's
fakes). `ReplaySession.open` realizes the environment a command names (`--env`) for a spec;
`ReplaySession.of` takes one realized before (a dispatched part's, from its plan; capture's,
which realized it to lock it). `replayer(spec, opts)` is the engine of one run of a spec (or of
a variant of it: a claim's side, a sweep's point) in that environment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.artifacts.cache import ArtifactCache
from repro.environments.base import RealizedEnvironment
from repro.harness.runner import WorkerRunner
from repro.replay.options import ProbeSource, ProgressFactory, ReplayOptions, Reporter
from repro.replay.replayer import Replayer
from repro.spec.models import ExperimentSpec

#: a Replayer of a variant of a spec (a claim's side) with its options, each in a session of its own
ReplayerFactory = Callable[[ExperimentSpec, ReplayOptions], Replayer]


@dataclass
class ReplaySession:
    """One realized environment, and what the replays made in it share."""

    spec_path: Path
    env: RealizedEnvironment
    cache: ArtifactCache
    report: Reporter
    progress: ProgressFactory
    runner: WorkerRunner | None = None
    probes: ProbeSource | None = None

    @classmethod
    def open(
        cls,
        env_name: str,
        spec: ExperimentSpec,
        spec_path: Path,
        cache: ArtifactCache,
        *,
        report: Reporter,
        progress: ProgressFactory,
        options: dict[str, Any] | None = None,
        runner: WorkerRunner | None = None,
        probes: ProbeSource | None = None,
        realize: Callable[..., RealizedEnvironment] | None = None,
    ) -> ReplaySession:
        """The environment `env_name` realized for `spec` (its cache under the artifact
        cache's `envs/`), said, and a session in it. `realize`: the registry's, or a test's."""
        from repro.environments.registry import realize as realize_env

        env = (realize or realize_env)(
            env_name, spec, spec_path, cache.root / "envs", report=report, options=options or {}
        )
        report(f"environment: {env.manager} ({env.reason})")
        return cls(spec_path, env, cache, report, progress, runner, probes)

    @classmethod
    def of(
        cls,
        env: RealizedEnvironment,
        spec_path: Path,
        cache: ArtifactCache,
        *,
        report: Reporter,
        progress: ProgressFactory,
        runner: WorkerRunner | None = None,
        probes: ProbeSource | None = None,
    ) -> ReplaySession:
        """A session in an environment realized before."""
        return cls(spec_path, env, cache, report, progress, runner, probes)

    @classmethod
    def replayers(
        cls,
        env_name: str,
        spec_path: Path,
        cache: ArtifactCache,
        *,
        report: Reporter,
        progress: ProgressFactory,
    ) -> ReplayerFactory:
        """For variants of one spec (a claim's sides): each variant's environment realized in a
        session of its own, and the Replayer of its run there."""

        def make(variant: ExperimentSpec, opts: ReplayOptions) -> Replayer:
            session = cls.open(
                env_name,
                variant,
                spec_path,
                cache,
                report=report,
                progress=progress,
                options=opts.env_options,
            )
            return session.replayer(variant, opts)

        return make

    def replayer(self, spec: ExperimentSpec, opts: ReplayOptions) -> Replayer:
        """The engine of one run of `spec` (the session's, or a variant of it) here."""
        return Replayer(
            spec,
            self.spec_path,
            self.env,
            cache=self.cache,
            opts=opts,
            report=self.report,
            progress=self.progress,
            runner=self.runner,
            probes=self.probes,
        )
