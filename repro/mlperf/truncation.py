"""An accuracy log as a published tree keeps it, by MLPerf's `truncate_accuracy_log.py`.

The tool hashes the whole log (sha256) into `accuracy.txt` (a `hash=<sha256>` line after what
the accuracy script printed) and keeps a log of 4096 bytes or more as its first and last 4096
bytes joined by `\\n\\n...\\n\\n`; a shorter log stays whole. The checkers then take a log of at
most 10 KiB whose accuracy.txt has the hash.
"""

from __future__ import annotations

from pathlib import Path

from repro.atomic import writing
from repro.digests import sha256_file
from repro.mlperf.round_rules import TRUNCATE_BYTES, TRUNCATE_MARKER


def truncate_log(src: Path, dest: Path) -> str:
    """Write `src` truncated to `dest`; the full log's sha256 (read in chunks)."""
    digest = sha256_file(src)
    size = src.stat().st_size
    with src.open("rb") as fh:
        if size < TRUNCATE_BYTES:
            data = fh.read()
        else:
            head = fh.read(TRUNCATE_BYTES)
            fh.seek(size - TRUNCATE_BYTES)
            data = head + TRUNCATE_MARKER + fh.read(TRUNCATE_BYTES)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with writing(dest):
        dest.write_bytes(data)
    return digest


def accuracy_text(printed: str, digest: str) -> str:
    """accuracy.txt: what the accuracy script printed, then the line the tool appends."""
    return f"{printed.rstrip()}\n\nhash={digest}\n" if printed.strip() else f"hash={digest}\n"
