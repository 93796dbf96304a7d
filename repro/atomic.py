"""Writing files so that a reader never sees half of one: write a temporary name, then rename.

The temporary file lives in the target's folder (a rename is atomic only within a file system)
and is removed when the writer fails or is interrupted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from repro.errors import UsageError


@contextlib.contextmanager
def atomic_path(target: Path, *, suffix: str = ".tmp") -> Iterator[Path]:
    """A fresh temporary path beside `target`; renamed over it when the block succeeds.

    `suffix` keeps a file type a tool insists on (e.g. ".so" for a shared library).
    """
    if target.is_symlink():
        target = target.resolve()  # write where the link points, keep the link
    if target.exists() and not target.is_file():
        raise UsageError(
            f"{target}: exists and is not a regular file (a folder, device or pipe); repro "
            "writes a whole new file and would replace it",
            hint="choose a file name",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    except OSError as exc:  # a folder no file can be made in (/proc, read-only): the target's
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    # mkstemp makes the file private (0600); the result gets the usual mode under the umask
    os.fchmod(fd, 0o666 & ~umask())
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        tmp.replace(target)
    except OSError as exc:
        # the temporary name is ours, not the user's: a failure of it is said of the target (a
        # full disk names no file at all)
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT) and exc.filename is None
        if full or exc.filename == name or exc.filename2 == name:
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def writing(target: Path) -> Iterator[None]:
    """A block that writes `target`: a full disk is said of `target` (Python's write calls
    name no file, and a copy names its source)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) and exc.filename != str(target):
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise


def write_text(path: Path, text: str) -> None:
    """`path.write_text(text)`, whose full disk is said of `path` (not of "a file")."""
    with writing(path):
        path.write_text(text)


def write_bytes(path: Path, data: bytes) -> None:
    """`path.write_bytes(data)`, whose full disk is said of `path` (not of "a file")."""
    with writing(path):
        path.write_bytes(data)


def atomic_write_text(path: Path, text: str) -> None:
    """Write text to `path` atomically (UTF-8; a lone surrogate, from a file name that is not
    UTF-8, is written as its escape `\\udcff`, never an error)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")


def umask() -> int:
    """This process's umask (reading it means setting it; set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def folder_lock(folder: Path, *, busy: str, hint: str) -> Iterator[None]:
    """An exclusive lock on a folder for as long as the block runs (the process's death
    releases it; a rename of the folder keeps it); a folder already locked is a UsageError
    saying `busy`."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(busy, hint=hint) from None
        yield
    finally:
        os.close(fd)
