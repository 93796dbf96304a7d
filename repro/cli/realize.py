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
    """The environment `env_name` realized for the spec (a session), and a Replayer of it."""
    from repro.replay import ReplaySession

    session = ReplaySession.open(
        env_name, spec, spec_path, cache, report=note, progress=TimedBar, options=opts.env_options
    )
    return session.replayer(spec, opts)
