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
    dt = np.dtype(dtype)
    for e in entries:
        values = np.frombuffer(bytes.fromhex(e["data"]), dtype=dt)
        if shape:
            values = values.reshape(shape)
            pred = int(np.argmax(values))
        else:
            pred = int(values[0])
        by_index[int(e["qsl_idx"])] = pred
    idx = np.array(sorted(by_index), dtype=np.int64)
    top1 = np.array([by_index[i] for i in idx.tolist()], dtype=np.int64)
    return Predictions(idx, top1)


def score(
    preds: Predictions, reference: np.ndarray, *, class_offset: int = 0
) -> dict[str, float | int]:
    """Fraction of predictions (plus offset) equal to the reference at the same index."""
    got = preds.top1 + class_offset
    want = reference[preds.indices]
    correct = int(np.sum(got == want))
    total = len(preds.indices)
    return {"value": correct / total if total else 0.0, "correct": correct, "total": total}
