"""Committing a run: the one way a run.json is written (a replay, a dispatched replay and its
provisional record, an imported original, a profile added to a run).

The record goes to a temporary name beside run.json, is flushed to the disk (fsync) and renamed
over run.json, and the folder is synced so that the rename lasts too; a run built under its
partial name is then given its final one. A reader sees the record before or the record after,
whole, never half of one, even after a power cut. The record carries its digest
(`record_sha256`, made by `RunRecord.dump`), so an edit of it shows when it is read.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from repro.atomic import atomic_path
from repro.outputs import written
from repro.runs import layout
from repro.runs.record import RunRecord


def commit_run(folder: Path, record: RunRecord, *, final: Path | None = None) -> Path:
    """Write `record` as the run.json of `folder`, durably; with `final`, rename `folder` to it
    (a run under its partial name takes its final one). The folder the run is in now."""
    target = layout.record_file(folder)
    text = record.dump()
    with atomic_path(target) as tmp, tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    _sync_folder(folder)
    if final is None:
        written.note("runs", folder)
        return folder
    folder.replace(final)
    _sync_folder(final.parent)
    written.note("runs", final)
    return final


def _sync_folder(folder: Path) -> None:
    """The folder's entries (a rename) on the disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # NOTE: some file systems (network ones) cannot sync a folder; the rename stands as they
        # keep it
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
