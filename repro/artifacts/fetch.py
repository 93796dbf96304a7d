"""Materialize artifacts in the cache from a URL, a local path or a recipe, verified by sha256."""

from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.recipes import get_recipe
from repro.digests import CHUNK, sha256_file, tree_files
from repro.errors import ArtifactError, SpecError
from repro.spec.paths import resolve_path
from repro.spec.types import Artifact

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Materialized:
    """An artifact's verified file in the cache, and how it got there."""

    name: str
    path: Path
    sha256: str
    size_bytes: int
    origin: str  # "cache" | "url" | "path" | "recipe"


def download(url: str, dest: Path, *, retries: int = 3, timeout_s: float = 60.0) -> None:
    """Stream a URL to `dest`, retrying transient failures with backoff."""
    last: Exception | None = None
    for attempt in range(retries):
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as resp, dest.open("wb") as fh:
                shutil.copyfileobj(resp, fh, CHUNK)
            return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise ArtifactError(f"download of {url} failed: HTTP {exc.code}") from exc
            last = exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            last = exc
        if url.startswith("file://"):
            break
        time.sleep(0.5 * 2**attempt)
    raise ArtifactError(
        f"download of {url} failed after {retries} attempt(s): {last}",
        hint="check the URL and the network, or put the file in the cache with `repro fetch`",
    )


def _copy_file(src: Path, dest: Path) -> None:
    with src.open("rb") as fin, dest.open("wb") as fout:
        shutil.copyfileobj(fin, fout, CHUNK)


def materialize(
    name: str,
    artifact: Artifact,
    *,
    base_dir: Path,
    cache: ArtifactCache,
    progress: Progress | None = None,
) -> Materialized:
    """Return the artifact's verified file in the cache, producing it first if needed.

    The bytes are produced under a temporary name, hashed, and renamed to the content address
    only when the sha256 matches; a mismatch leaves nothing under the expected name. A cache
    entry whose bytes no longer match its name is an error, never silently produced again:
    something changed a verified, read-only file, and the user should know.
    """
    if artifact.files is not None:
        return _materialize_folder(
            name, artifact, base_dir=base_dir, cache=cache, progress=progress
        )
    final = cache.path_for(artifact.sha256)
    if final.exists():
        got = sha256_file(final)
        if got != artifact.sha256:
            raise ArtifactError(
                f"artifact {name!r}: the cache entry {final} is corrupt: its name pins sha256 "
                f"{artifact.sha256}, its bytes have sha256 {got}",
                hint=f"delete it (`rm -f {final}`) and run `repro fetch` on the spec to produce "
                "it again; the cache's files are read-only, so find out what rewrote it",
            )
        return Materialized(name, final, got, final.stat().st_size, "cache")
    with cache.staging(artifact.sha256) as staged:
        if artifact.url is not None:
            origin = "url"
            if progress:
                progress(f"downloading {name} from {artifact.url}")
            download(artifact.url, staged)
        elif artifact.path is not None:
            origin = "path"
            src = resolve_path(artifact.path, base_dir)
            if not src.is_file():
                what = "is not a regular file" if src.exists() else "does not exist"
                raise SpecError(
                    f"artifact {name!r}: path {artifact.path} {what} (looked at {src})",
                    hint="paths are relative to the spec's folder",
                )
            _copy_file(src, staged)
        else:
            origin = "recipe"
            assert artifact.recipe is not None
            recipe = get_recipe(artifact.recipe, where=f"artifacts.{name}.recipe")
            if progress:
                progress(f"generating {name} with recipe {artifact.recipe}")
            recipe.generate(staged, artifact.params)
        got = sha256_file(staged)
        if got != artifact.sha256:
            raise ArtifactError(
                f"artifact {name!r}: sha256 mismatch: expected {artifact.sha256}, got {got}",
                hint="the source changed or the spec pins the wrong hash; a wrong hash is never "
                "accepted. If the new bytes are right, update artifacts."
                f"{name}.sha256 in the spec",
            )
        size = staged.stat().st_size
        path = cache.commit(staged, got)
    return Materialized(name, path, got, size, origin)


def _materialize_folder(
    name: str,
    artifact: Artifact,
    *,
    base_dir: Path,
    cache: ArtifactCache,
    progress: Progress | None,
) -> Materialized:
    """A folder artifact in the cache, every file verified against the spec's `files`."""
    assert artifact.files is not None
    final = cache.folder_for(artifact.sha256)
    if final.exists():
        _check_folder(name, final, artifact.files, corrupt=True)
        return Materialized(name, final, artifact.sha256, _folder_size(final), "cache")
    with cache.staging_folder(artifact.sha256) as staged:
        if artifact.path is not None:
            origin = "path"
            src = resolve_path(artifact.path, base_dir)
            if not src.is_dir():
                what = "is not a folder" if src.exists() else "does not exist"
                raise SpecError(
                    f"artifact {name!r}: path {artifact.path} {what} (looked at {src}); its "
                    "`files` make it a folder",
                    hint="paths are relative to the spec's folder",
                )
            shutil.copytree(src, staged, symlinks=True)
        else:
            origin = "recipe"
            assert artifact.recipe is not None
            recipe = get_recipe(artifact.recipe, where=f"artifacts.{name}.recipe")
            if progress:
                progress(f"generating {name} with recipe {artifact.recipe}")
            recipe.generate(staged, artifact.params)
        _check_folder(name, staged, artifact.files, corrupt=False)
        path = cache.commit_folder(staged, artifact.sha256)
    return Materialized(name, path, artifact.sha256, _folder_size(path), origin)


def _check_folder(name: str, folder: Path, want: dict[str, str], *, corrupt: bool) -> None:
    """The folder holds exactly the pinned files with their sha256; the first difference is
    named (a cache entry that differs was changed after it was verified)."""
    try:
        got = tree_files(folder)
    except ValueError as exc:
        raise ArtifactError(f"artifact {name!r}: {exc}") from None
    changed = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
    missing, extra = sorted(want.keys() - got.keys()), sorted(got.keys() - want.keys())
    if not (changed or missing or extra):
        return
    said = "; ".join(
        part
        for part in (
            f"{changed[0]} has sha256 {got[changed[0]]}, the spec pins {want[changed[0]]}"
            if changed
            else "",
            f"missing {', '.join(missing[:3])}" if missing else "",
            f"not pinned: {', '.join(extra[:3])}" if extra else "",
        )
        if part
    )
    if corrupt:
        raise ArtifactError(
            f"artifact {name!r}: the cache entry {folder} is corrupt: {said}",
            hint=f"delete it (`rm -rf {folder}`) and run `repro fetch` on the spec to produce it "
            "again; the cache's files are read-only, so find out what rewrote it",
        )
    raise ArtifactError(
        f"artifact {name!r}: the folder's files are not the pinned ones: {said}",
        hint="the source changed or the spec pins the wrong files; a wrong hash is never "
        f"accepted. If the new files are right, update artifacts.{name}.files and .sha256",
    )


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
