"""Data-set access for the QSL: arrays of an .npz in memory, never read from disk per query."""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np

_LOCAL_HEADER = 30


class _StoredArray(NamedTuple):
    """Where an uncompressed .npy member's data starts in its .npz, and how to read it."""

    offset: int
    shape: tuple[int, ...]
    fortran: bool
    dtype: np.dtype


def _stored_array(fh: IO[bytes], info: zipfile.ZipInfo) -> _StoredArray:
    fh.seek(info.header_offset + 26)
    name_len = int.from_bytes(fh.read(2), "little")
    extra_len = int.from_bytes(fh.read(2), "little")
    fh.seek(info.header_offset + _LOCAL_HEADER + name_len + extra_len)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    return _StoredArray(fh.tell(), shape, fortran, dtype)


def _member(zf: zipfile.ZipFile, key: str, name: str) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(f"{key}.npy")
    except KeyError:
        names = [n.removesuffix(".npy") for n in zf.namelist()]
        raise KeyError(f"{name} has no array {key!r} (has {names})") from None


def open_npz_array(path: Path, key: str) -> np.ndarray:
    """The array `key` of an .npz: memory-mapped when stored uncompressed, else loaded."""
    with zipfile.ZipFile(path) as zf:
        info = _member(zf, key, path.name)
        if info.compress_type != zipfile.ZIP_STORED:
            with zf.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
    with path.open("rb") as fh:
        at = _stored_array(fh, info)
    return np.memmap(
        path,
        dtype=at.dtype,
        mode="r",
        shape=at.shape,
        order="F" if at.fortran else "C",
        offset=at.offset,
    )


def npz_array_from_bytes(data: bytes, key: str, *, name: str) -> np.ndarray:
    """The array `key` of an .npz held in memory (bytes already verified): a read-only view
    of `data` when stored uncompressed, else decompressed. `name` labels errors."""
    buf = io.BytesIO(data)
    with zipfile.ZipFile(buf) as zf:
        info = _member(zf, key, name)
        if info.compress_type != zipfile.ZIP_STORED:
            with zf.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
    at = _stored_array(buf, info)
    count = int(np.prod(at.shape, dtype=np.int64))
    flat = np.frombuffer(data, dtype=at.dtype, count=count, offset=at.offset)
    return flat.reshape(at.shape, order="F" if at.fortran else "C")


#: up to this many loaded samples, each gets a ready batch-of-one view (see SampleStore.views)
MAX_VIEWS = 100_000


class SampleStore:
    """Samples loaded by LoadGen's QSL callbacks into one contiguous in-memory array."""

    def __init__(self, source: np.ndarray) -> None:
        self.source = source
        self.loaded = np.empty((0, *source.shape[1:]), dtype=source.dtype)
        self.position = np.full(source.shape[0], -1, dtype=np.int64)
        # Batch buffers reused across calls: a fresh multi-MB array per batch costs page faults.
        # Safe because inference is synchronous and one batch is in flight per thread.
        self._buffers: dict[tuple[int, int], np.ndarray] = {}
        # Batch-of-one views of the loaded samples by index, made when they load: SingleStream
        # looks a sample up with one dict access instead of numpy indexing, which costs ~25 us
        # right after a large inference (measured). Filled in place: callers keep the dict.
        self.views: dict[int, np.ndarray] = {}

    def load(self, indices: list[int]) -> None:
        idx = np.sort(np.asarray(indices, dtype=np.int64))
        self.loaded = np.ascontiguousarray(self.source[idx])
        self.position[:] = -1
        self.position[idx] = np.arange(len(idx))
        self.views.clear()
        if len(idx) <= MAX_VIEWS:
            self.views.update((int(i), self.loaded[p : p + 1]) for p, i in enumerate(idx))

    def unload(self, indices: list[int]) -> None:
        self.position[np.asarray(indices, dtype=np.int64)] = -1
        for i in indices:
            self.views.pop(i, None)

    def one(self, index: int) -> np.ndarray:
        """A batch-of-one view of a loaded sample (no copy)."""
        p = self.position[index]
        return self.loaded[p : p + 1]

    def batch(self, indices: list[int] | np.ndarray) -> np.ndarray:
        """A contiguous batch of loaded samples, gathered into a reused per-thread buffer."""
        rows = self.position[np.asarray(indices, dtype=np.int64)]
        key = (threading.get_ident(), len(rows))
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = np.empty(
                (len(rows), *self.loaded.shape[1:]), dtype=self.loaded.dtype
            )
        np.take(self.loaded, rows, axis=0, out=buf)
        return buf
