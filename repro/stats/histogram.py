"""Per-query latencies as a sparse log-spaced histogram: 0.1 % wide bins, any number of queries.

A run of a million queries keeps a few thousand (bin, count) pairs instead of 8 MB, percentiles
stay within 0.1 %, and the report bootstraps by resampling counts (multinomial), which is the
sample bootstrap at bin resolution.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.errors import SpecError
from repro.npz import read_npz, write_npz

RATIO = 1.001
_LOG_RATIO = float(np.log(RATIO))


@dataclass(frozen=True)
class LatencyHistogram:
    """Counts of latencies per bin; bin k holds [RATIO**k, RATIO**(k+1)) ns."""

    bins: np.ndarray  # int32, sorted
    counts: np.ndarray  # int64

    @classmethod
    def from_latencies(cls, latencies_ns: np.ndarray) -> LatencyHistogram:
        lat = np.maximum(np.asarray(latencies_ns, dtype=np.float64), 1.0)
        idx = np.floor(np.log(lat) / _LOG_RATIO).astype(np.int32)
        bins, counts = np.unique(idx, return_counts=True)
        return cls(bins.astype(np.int32), counts.astype(np.int64))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def values(self) -> np.ndarray:
        """The geometric centre of each bin, in ns."""
        return np.asarray(RATIO ** (self.bins.astype(np.float64) + 0.5))

    def percentile(self, q: float, counts: np.ndarray | None = None) -> float:
        """The q-th percentile (0..100), lower-nearest-rank on the binned values."""
        c = self.counts if counts is None else counts
        cum = np.cumsum(c)
        rank = max(int(np.ceil(q / 100.0 * cum[-1])), 1)
        return float(self.values()[np.searchsorted(cum, rank)])

    def percentiles_of(self, counts: np.ndarray, q: float) -> np.ndarray:
        """The q-th percentile of many resampled count vectors at once (rows of `counts`)."""
        cum = np.cumsum(counts, axis=1)
        ranks = np.maximum(np.ceil(q / 100.0 * cum[:, -1]), 1)
        pos = np.array([np.searchsorted(row, r) for row, r in zip(cum, ranks, strict=True)])
        return np.asarray(self.values()[pos])

    def save(self, path: Path) -> None:
        write_npz(path, {"bins": self.bins, "counts": self.counts, "ratio": np.array([RATIO])})

    @classmethod
    def load(cls, path: Path) -> LatencyHistogram:
        """Read a histogram written by `save`; a damaged file is a SpecError naming it."""
        bins, counts = _read_checked(path)
        return cls(bins, counts)


#: bin k's centre is RATIO**(k + 0.5) ns; past this it is no longer a finite float64
_MAX_BIN = int(np.log(np.finfo(np.float64).max) / _LOG_RATIO) - 1
_ARRAYS = {"bins": "iu", "counts": "iu", "ratio": "iuf"}  # name -> allowed dtype kinds


def _damaged(path: Path, what: str) -> SpecError:
    return SpecError(
        f"damaged latency histogram {path}: {what}",
        hint="re-run the replay, or delete the run that holds it",
    )


def _read_checked(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The bins (int32) and counts (int64) of a histogram file, after checking every array."""
    if not path.is_file():
        raise _damaged(path, "no such file")
    # NOTE: np.load takes what is not a zip for a pickle or a bare .npy, so check first; a
    # truncated zip has lost its central directory, which is at the end.
    if not zipfile.is_zipfile(path):
        raise _damaged(path, "not an .npz (zip) archive, or a truncated one")
    try:
        data = read_npz(path)
    except (
        OSError,
        EOFError,
        ValueError,
        MemoryError,
        NotImplementedError,
        zipfile.BadZipFile,
        zlib.error,
    ) as exc:
        raise _damaged(path, f"cannot read its arrays ({type(exc).__name__}: {exc})") from exc
    missing = [name for name in _ARRAYS if name not in data]
    if missing:
        raise _damaged(path, f"array(s) {', '.join(missing)} missing")
    for name, kinds in _ARRAYS.items():
        arr = data[name]
        if not isinstance(arr, np.ndarray):
            raise _damaged(path, f"{name} is not an array")
        if arr.ndim != 1 or arr.dtype.kind not in kinds:
            want = "numbers" if "f" in kinds else "integers"
            raise _damaged(
                path, f"{name} is a {arr.dtype} array of shape {arr.shape}, expected 1-d {want}"
            )
    ratio, bins, counts = data["ratio"], data["bins"], data["counts"]
    if ratio.size != 1 or float(ratio[0]) != RATIO:
        raise _damaged(path, f"bin ratio {ratio.tolist()} is not [{RATIO}]")
    if bins.size != counts.size:
        raise _damaged(path, f"{bins.size} bins but {counts.size} counts")
    if bins.size == 0:
        raise _damaged(path, "no bins: it holds no queries")
    if int(bins.min()) < 0 or int(bins.max()) > _MAX_BIN:
        raise _damaged(path, f"a bin index is outside 0..{_MAX_BIN}")
    if np.any(np.diff(bins.astype(np.int64)) <= 0):
        raise _damaged(path, "bins are not strictly increasing")
    if int(counts.min()) < 0:
        raise _damaged(path, "negative counts")
    if float(counts.sum(dtype=np.float64)) >= 2.0**62:
        raise _damaged(path, "counts too large")
    if int(counts.sum()) == 0:
        raise _damaged(path, "every count is 0: it holds no queries")
    return bins.astype(np.int32), counts.astype(np.int64)
