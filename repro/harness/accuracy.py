"""Decode mlperf_log_accuracy.json and score it: top-1 against labels or reference predictions."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Predictions:
    """Top-1 predictions per QSL index, as LoadGen logged the responses."""

    indices: np.ndarray  # int64, sorted
    top1: np.ndarray  # int64, aligned with indices
    responses_sha256: str = ""  # sha256 of every raw response in index order (bit for bit)
    output_digests: tuple[str, ...] = ()  # sha256 of each sample's raw response

    def digest(self) -> str:
        """sha256 of (index, prediction) pairs: equal for bit-identical predictions."""
        pairs = np.stack([self.indices, self.top1]).astype("<i8")
        return hashlib.sha256(pairs.tobytes()).hexdigest()


def decode_accuracy_log(path: Path, *, dtype: str, shape: tuple[int, ...]) -> Predictions:
    """Each entry's hex data is one response: a class id, or scores to take the argmax of."""
    entries = json.loads(path.read_text())
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a JSON list")
    by_index: dict[int, int] = {}
    raw: dict[int, bytes] = {}
    dt = np.dtype(dtype)
    for e in entries:
        data = bytes.fromhex(e["data"])
        raw[int(e["qsl_idx"])] = data
        values = np.frombuffer(data, dtype=dt)
        if shape:
            values = values.reshape(shape)
            pred = int(np.argmax(values))
        else:
            pred = int(values[0])
        by_index[int(e["qsl_idx"])] = pred
    idx = np.array(sorted(by_index), dtype=np.int64)
    top1 = np.array([by_index[i] for i in idx.tolist()], dtype=np.int64)
    ordered = [raw[i] for i in idx.tolist()]
    return Predictions(
        idx,
        top1,
        hashlib.sha256(b"".join(ordered)).hexdigest(),
        tuple(hashlib.sha256(r).hexdigest() for r in ordered),
    )


def score(
    preds: Predictions, reference: np.ndarray, *, class_offset: int = 0
) -> dict[str, float | int]:
    """Fraction of predictions (plus offset) equal to the reference at the same index."""
    got = preds.top1 + class_offset
    want = reference[preds.indices]
    correct = int(np.sum(got == want))
    total = len(preds.indices)
    return {"value": correct / total if total else 0.0, "correct": correct, "total": total}
