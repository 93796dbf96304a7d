"""The sha256 of a file, read in chunks: what the cache, the locks, the records, the packages
and the attestations check files by (a ground module: it imports nothing of repro)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

#: bytes read at a time
CHUNK: Final = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def tree_files(folder: Path) -> dict[str, str]:
    """relative POSIX path -> sha256 of every regular file below `folder`, sorted; a link or
    anything else that is not a plain file or folder is refused (ValueError)."""
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise ValueError(f"{path}: not a plain file or folder")
        if path.is_file():
            out[path.relative_to(folder).as_posix()] = sha256_file(path)
    return out


def tree_digest(files: dict[str, str]) -> str:
    """The digest of a folder: sha256 of its files' `path<TAB>sha256` lines, sorted by path
    (the same files, the same digest; a file renamed, added or changed, another)."""
    lines = "".join(f"{name}\t{files[name]}\n" for name in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()
