"""A replay's environment realized and its Replayer made: shared by `repro replay`, `repro
profile` and `repro claim`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from repro.artifacts.cache import ArtifactCache
from repro.cli.progress import TimedBar, note

if TYPE_CHECKING:
    from repro.replay import Replayer, ReplayOptions
    from repro.spec.models import ExperimentSpec


def realized_replayer(
    spec: ExperimentSpec, spec_path: Path, env_name: str, opts: ReplayOptions, cache: ArtifactCache
) -> Replayer:
    """The environment `env_name` realized for the spec, and a Replayer of it there."""
    from repro.environments.registry import realize
    from repro.replay import Replayer

    env = realize(
        env_name, spec, spec_path, cache.root / "envs", report=note, options=opts.env_options
    )
    note(f"environment: {env.manager} ({env.reason})")
    return Replayer(spec, spec_path, env, cache=cache, opts=opts, report=note, progress=TimedBar)
