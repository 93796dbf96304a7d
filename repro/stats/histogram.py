"""Per-query latencies as a sparse log-spaced histogram: 0.1 % wide bins, any number of queries.

A run of a million queries keeps a few thousand (bin, count) pairs instead of 8 MB, percentiles
stay within 0.1 %, and the report bootstraps by resampling counts (multinomial), which is the
sample bootstrap at bin resolution.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.artifacts.npz import read_npz, write_npz

RATIO = 1.001
_LOG_RATIO = float(np.log(RATIO))
HIST_FILE = "latency_hist.npz"


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
        data = read_npz(path)
        if float(data["ratio"][0]) != RATIO:
            raise ValueError(f"{path}: histogram ratio {data['ratio'][0]} is not {RATIO}")
        return cls(data["bins"].astype(np.int32), data["counts"].astype(np.int64))
