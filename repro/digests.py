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
