"""Byte-for-byte reproducible .npz files (numpy's own savez stamps the current time), and
the shapes of an .npz's arrays read from their headers."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write arrays as an uncompressed .npz with fixed timestamps, members in sorted order."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Load every array of an .npz into memory (no pickles)."""
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def npz_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """The shape of every array of an .npz, from the members' headers (nothing is loaded)."""
    shapes = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shapes[info.filename.removesuffix(".npy")] = read(fh)[0]
    return shapes
