"""Where a file a spec names is: relative to the spec's folder, or absolute; never by `~`."""

from __future__ import annotations

from pathlib import Path

from repro.errors import SpecError


def resolve_path(artifact_path: str, base_dir: Path) -> Path:
    """A path source is relative to the spec's folder unless absolute; `~` (a home folder,
    another one on every machine) is refused."""
    if artifact_path.startswith("~"):
        raise SpecError(
            f"{artifact_path}: starts with '~' (a home folder, another one on every machine)",
            hint="write the path relative to the spec's folder",
        )
    p = Path(artifact_path)
    return p if p.is_absolute() else base_dir / p


def spec_file(path: Path) -> Path:
    """The spec file itself where `path` is a link to it: a spec's relative paths are written
    from its own folder, not from a link's (`specs/current.json -> ../exp/x.json` resolves
    `../lockfiles/...` from exp/)."""
    return path.resolve() if path.is_symlink() else path
