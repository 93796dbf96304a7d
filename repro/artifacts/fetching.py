"""Use case: materialize every artifact of a spec in the cache."""

from __future__ import annotations

from pathlib import Path

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import Materialized, Progress, materialize
from repro.spec.models import ExperimentSpec


def fetch_all(
    spec: ExperimentSpec,
    spec_path: Path,
    *,
    cache: ArtifactCache,
    progress: Progress | None = None,
) -> dict[str, Materialized]:
    """Every artifact of the spec, verified, in the spec's order."""
    return {
        name: materialize(name, art, base_dir=spec_path.parent, cache=cache, progress=progress)
        for name, art in spec.artifacts.items()
    }
