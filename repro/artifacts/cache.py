"""The content-addressed artifact cache: files stored under their sha256, written atomically."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from repro.atomic import writing
from repro.errors import ArtifactError

CACHE_ENV = "REPRO_CACHE_DIR"


def default_cache_dir() -> Path:
    """$REPRO_CACHE_DIR, else $XDG_CACHE_HOME/repro, else ~/.cache/repro."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "repro"


def read_verified(path: Path, sha256: str, *, what: str) -> bytes:
    """The bytes of `path`, read once and checked against `sha256` before anyone uses them.

    Whoever loads an artifact loads these bytes, not the file again: what was hashed is what
    runs, even if the file changes afterwards (a verified fetch says nothing about later reads).
    """
    with path.open("rb") as fh:
        data = fh.read()
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise ArtifactError(
            f"{what} {path}: sha256 mismatch when loaded: expected {sha256}, got {got}; "
            "the file changed after it was fetched and verified",
            hint=f"do not trust this run; delete the file (`rm -f {path}`) and run "
            "`repro fetch SPEC` to produce it again",
        )
    return data


class ArtifactCache:
    """Files named by content: `<root>/sha256/<first two hex>/<hex>`."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or default_cache_dir()).expanduser().absolute()

    def path_for(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256[:2] / sha256

    def folder_for(self, sha256: str) -> Path:
        """Where a folder artifact is kept (read-only), by its digest."""
        return self.root / "trees" / sha256[:2] / sha256

    @contextmanager
    def staging_folder(self, sha256: str) -> Iterator[Path]:
        """A new temporary folder beside the final one; removed unless the caller renamed it."""
        final = self.folder_for(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{sha256[:12]}.", suffix=".partial", dir=final.parent))
        try:
            with writing(final):
                yield tmp / "folder"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def commit_folder(self, staged: Path, sha256: str) -> Path:
        """Move a verified staged folder to its final name, its files read-only."""
        final = self.folder_for(sha256)
        for path in staged.rglob("*"):
            path.chmod(0o555 if path.is_dir() else 0o444)
        staged.replace(final)
        return final

    @contextmanager
    def staging(self, sha256: str) -> Iterator[Path]:
        """A temporary path beside the final one; removed unless the caller renamed it."""
        final = self.path_for(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{sha256[:12]}.", suffix=".partial", dir=final.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            with writing(final):
                yield tmp_path
        finally:
            tmp_path.unlink(missing_ok=True)

    def commit(self, staged: Path, sha256: str) -> Path:
        """Move a verified staged file to its final, read-only name."""
        final = self.path_for(sha256)
        staged.chmod(0o444)
        staged.replace(final)
        return final
