"""`ReplaySession`: where a replay's environment is realized and its engine built, and the only
place either is.

A session is one realized environment and what every replay in it shares: the artifact cache,
the reporter, the progress bar, the worker runner and the probes (each use case's, or a test's
fakes). `ReplaySession.open(spec, spec_path, plan, ...)` realizes the environment the plan names
for the spec (its cache under the artifact cache's `envs/`; the folders a container must mount:
the run's and the cache's); `session.replayer(spec, plan)` is the engine of one run of a spec
(or of a variant of it: a claim's side, a sweep's point, a submission's run) in that
environment, and `session.test(...)` one test of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from repro.artifacts.cache import ArtifactCache
from repro.environments.base import RealizedEnvironment
from repro.environments.registry import FACES, MANAGERS
from repro.environments.registry import realize as realize_env
from repro.errors import UsageError
from repro.harness.runner import WorkerRunner
from repro.replay.replayer import Replayer
from repro.replay.settings import ProbeSource, ProgressFactory, Reporter
from repro.runs.plan import ReplayPlan
from repro.spec.models import ExperimentSpec

#: the folder under the artifact cache where realized environments are kept
ENVS: Final = "envs"


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
        spec: ExperimentSpec,
        spec_path: Path,
        plan: ReplayPlan,
        *,
        report: Reporter,
        progress: ProgressFactory,
        cache: ArtifactCache | None = None,
        given: Mapping[str, Any] | None = None,
        reason: str | None = None,
        runner: WorkerRunner | None = None,
        probes: ProbeSource | None = None,
        realize: Callable[..., RealizedEnvironment] | None = None,
    ) -> ReplaySession:
        """The environment `plan.env` realized for `spec`, said, and a session in it.

        `given`: what the environment is given besides the plan's own options (a package's
        wheels, image and mirror); `reason`: why this environment, said over the manager's
        words; `realize`: the registry's, or a test's."""
        cache = cache or ArtifactCache(plan.cache_dir)
        folders = {"--results-dir": plan.results_dir.absolute(), "--cache-dir": cache.root}
        options = {
            **check_options(plan.env_options),
            **(given or {}),
            "mounts": {flag: str(path) for flag, path in folders.items()},
        }
        if realize is None:
            realize = realize_env
        env = realize(plan.env, spec, spec_path, cache.root / ENVS, report=report, options=options)
        if reason is not None:
            env.reason = reason
        report(f"environment: {env.manager} ({env.reason})")
        for face in FACES.values():
            unused = [o.flag for o in face.options if o.name in plan.env_options]
            if unused and env.manager != face.name:
                report(
                    f"{', '.join(unused)}: unused ({face.name}'s option), as --env {plan.env} "
                    f"chose {env.manager}"
                )
        return cls(spec_path, env, cache, report, progress, runner, probes)

    def replayer(self, spec: ExperimentSpec, plan: ReplayPlan) -> Replayer:
        """The engine of one run of `spec` (the session's, or a variant of it) here."""
        return Replayer(
            spec,
            self.spec_path,
            self.env,
            cache=self.cache,
            plan=plan,
            report=self.report,
            progress=self.progress,
            runner=self.runner,
            probes=self.probes,
        )


def check_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """The managers' own options, each checked by the manager that declares it; an option no
    manager declares is refused."""
    known = {o.name: face for face in FACES.values() for o in face.options}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise UsageError(
            f"unknown environment option(s) {unknown}: the managers' own are {sorted(known)}"
        )
    for face in FACES.values():
        if {o.name for o in face.options} & given.keys():
            MANAGERS[face.name].check_options(given)
    return dict(given)
