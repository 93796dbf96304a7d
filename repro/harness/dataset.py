"""Data-set access for the QSL: arrays of an .npz mapped, never read from disk per query."""

from __future__ import annotations

import threading
import zipfile
from pathlib import Path

import numpy as np

_LOCAL_HEADER = 30


def open_npz_array(path: Path, key: str) -> np.ndarray:
    """The array `key` of an .npz: memory-mapped when stored uncompressed, else loaded."""
    member = f"{key}.npy"
    with zipfile.ZipFile(path) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError:
            names = [n.removesuffix(".npy") for n in zf.namelist()]
            raise KeyError(f"{path.name} has no array {key!r} (has {names})") from None
        if info.compress_type != zipfile.ZIP_STORED:
            with zf.open(info) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
    with path.open("rb") as fh:
        fh.seek(info.header_offset + 26)
        name_len = int.from_bytes(fh.read(2), "little")
        extra_len = int.from_bytes(fh.read(2), "little")
        fh.seek(info.header_offset + _LOCAL_HEADER + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        offset = fh.tell()
    return np.memmap(
        path, dtype=dtype, mode="r", shape=shape, order="F" if fortran else "C", offset=offset
    )


class SampleStore:
    """Samples loaded by LoadGen's QSL callbacks into one contiguous in-memory array."""

    def __init__(self, source: np.ndarray) -> None:
        self.source = source
        self.loaded = np.empty((0, *source.shape[1:]), dtype=source.dtype)
        self.position = np.full(source.shape[0], -1, dtype=np.int64)
        # Batch buffers reused across calls: a fresh multi-MB array per batch costs page faults.
        # Safe because inference is synchronous and one batch is in flight per thread.
        self._buffers: dict[tuple[int, int], np.ndarray] = {}

    def load(self, indices: list[int]) -> None:
        idx = np.asarray(indices, dtype=np.int64)
        self.loaded = np.ascontiguousarray(self.source[np.sort(idx)])
        self.position[:] = -1
        self.position[np.sort(idx)] = np.arange(len(idx))

    def unload(self, indices: list[int]) -> None:
        self.position[np.asarray(indices, dtype=np.int64)] = -1

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
