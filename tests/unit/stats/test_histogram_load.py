"""A damaged latency histogram file is bad input naming the file, not a numpy or zip error."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from repro.errors import SpecError
from repro.npz import write_npz
from repro.stats.histogram import RATIO, LatencyHistogram

GOOD: dict[str, np.ndarray] = {
    "bins": np.array([10, 20, 30], dtype=np.int32),
    "counts": np.array([1, 5, 2], dtype=np.int64),
    "ratio": np.array([RATIO]),
}


def _arrays(**changes: np.ndarray | None) -> Callable[[Path], None]:
    """Writes the good arrays with some replaced (or, given None, left out)."""

    def write(path: Path) -> None:
        arrays: dict[str, np.ndarray | None] = {**GOOD, **changes}
        write_npz(path, {k: v for k, v in arrays.items() if v is not None})

    return write


def _truncated(path: Path) -> None:
    write_npz(path, GOOD)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flipped(path: Path) -> None:
    """A byte of the counts' data changed: the zip's CRC no longer matches."""
    write_npz(path, GOOD)
    data = bytearray(path.read_bytes())
    i = data.index(np.array([1, 5, 2], dtype=np.int64).tobytes())
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _bare_npy(path: Path) -> None:
    with path.open("wb") as fh:
        np.save(fh, GOOD["counts"])


def _members(**members: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with zipfile.ZipFile(path, "w") as zf:
            for name, arr in GOOD.items():
                buf = io.BytesIO()
                np.save(buf, arr)
                zf.writestr(f"{name}.npy", members.get(name, buf.getvalue()))

    return write


def _pickled(path: Path) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([10, "x", None], dtype=object), allow_pickle=True)
    _members(bins=buf.getvalue())(path)


def _text(path: Path) -> None:
    path.write_text("not a histogram\n")


def _empty(path: Path) -> None:
    path.write_bytes(b"")


CASES: list[tuple[str, Callable[[Path], None], str]] = [
    ("text", _text, "not an .npz"),
    ("empty-file", _empty, "not an .npz"),
    ("bare-npy", _bare_npy, "not an .npz"),
    ("truncated", _truncated, "truncated"),
    ("bad-crc", _flipped, "cannot read its arrays"),
    ("garbage-member", _members(counts=b"\x00garbage"), "counts is not an array"),
    ("bad-npy-header", _members(counts=b"\x93NUMPY\x01\x00garbage"), "cannot read its arrays"),
    ("pickled-member", _pickled, "cannot read its arrays"),
    ("missing-counts", _arrays(counts=None), "array(s) counts missing"),
    ("missing-all", _arrays(bins=None, counts=None, ratio=None), "bins, counts, ratio missing"),
    ("length-mismatch", _arrays(counts=np.array([1, 2], dtype=np.int64)), "3 bins but 2 counts"),
    ("negative-count", _arrays(counts=np.array([1, -5, 2], dtype=np.int64)), "negative counts"),
    ("zero-counts", _arrays(counts=np.zeros(3, dtype=np.int64)), "holds no queries"),
    (
        "no-bins",
        _arrays(bins=np.array([], dtype=np.int32), counts=np.array([], dtype=np.int64)),
        "no bins",
    ),
    ("float-bins", _arrays(bins=np.array([1.5, 2.5, 3.5])), "expected 1-d integers"),
    ("2d-counts", _arrays(counts=np.ones((3, 2), dtype=np.int64)), "shape (3, 2)"),
    ("unsorted-bins", _arrays(bins=np.array([30, 10, 20], dtype=np.int32)), "not strictly"),
    ("repeated-bins", _arrays(bins=np.array([10, 10, 20], dtype=np.int32)), "not strictly"),
    ("bin-out-of-range", _arrays(bins=np.array([1, 2, 2**40])), "bin index is outside"),
    ("negative-bin", _arrays(bins=np.array([-1, 2, 3], dtype=np.int32)), "bin index is outside"),
    ("huge-counts", _arrays(counts=np.full(3, 2**62, dtype=np.int64)), "counts too large"),
    ("other-ratio", _arrays(ratio=np.array([1.01])), "bin ratio [1.01]"),
    ("no-ratio-value", _arrays(ratio=np.array([], dtype=np.float64)), "bin ratio []"),
]


@pytest.mark.parametrize(("name", "write", "expected"), CASES, ids=[c[0] for c in CASES])
def test_damaged_histogram_is_a_spec_error_naming_the_file(
    tmp_path: Path, name: str, write: Callable[[Path], None], expected: str
) -> None:
    path = tmp_path / name / "latency_hist.npz"
    path.parent.mkdir()
    write(path)
    with pytest.raises(SpecError) as info:
        LatencyHistogram.load(path)
    assert info.value.message.startswith(f"damaged latency histogram {path}: ")
    assert expected in info.value.message
    assert info.value.hint is not None
    assert "re-run the replay" in info.value.hint
    assert info.value.exit_code == 2


def test_missing_histogram_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "latency_hist.npz"
    with pytest.raises(SpecError, match="no such file"):
        LatencyHistogram.load(path)


def test_histogram_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    hist = LatencyHistogram.from_latencies(rng.lognormal(np.log(1e6), 0.3, 10_000))
    path = tmp_path / "latency_hist.npz"
    hist.save(path)
    back = LatencyHistogram.load(path)
    assert back.bins.dtype == np.int32
    assert back.counts.dtype == np.int64
    np.testing.assert_array_equal(back.bins, hist.bins)
    np.testing.assert_array_equal(back.counts, hist.counts)
    assert back.percentile(99) == hist.percentile(99)


def test_arrays_written_with_other_integer_types_still_load(tmp_path: Path) -> None:
    path = tmp_path / "latency_hist.npz"
    _arrays(bins=np.array([10, 20, 30], dtype=np.int64), counts=np.array([1, 5, 2], np.uint32))(
        path
    )
    back = LatencyHistogram.load(path)
    assert back.total == 8
