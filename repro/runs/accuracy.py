"""Decode mlperf_log_accuracy.json and score it: top-1 against labels or reference predictions."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.errors import SpecError

_HINT = "the run's accuracy log is damaged: re-run the replay in accuracy mode"


@dataclass(frozen=True)
class Predictions:
    """Top-1 predictions per QSL index, as LoadGen logged the responses."""

    indices: np.ndarray  # int64, sorted
    top1: np.ndarray  # int64, aligned with indices
    responses_sha256: str = ""  # sha256 of every raw response in index order (bit for bit)
    outputs: tuple[bytes, ...] = ()  # each sample's raw response, aligned with indices

    @functools.cached_property
    def output_digests(self) -> tuple[str, ...]:
        """sha256 of each sample's raw response."""
        return tuple(hashlib.sha256(r).hexdigest() for r in self.outputs)

    def digest(self) -> str:
        """sha256 of (index, prediction) pairs: equal for bit-identical predictions."""
        pairs = np.stack([self.indices, self.top1]).astype("<i8")
        return hashlib.sha256(pairs.tobytes()).hexdigest()


def decode_accuracy_log(path: Path, *, dtype: str, shape: tuple[int, ...]) -> Predictions:
    """Each entry's hex data is one response: a class id, or scores to take the argmax of.

    A damaged log (not JSON, truncated, entries without `qsl_idx`/`data`, responses of the
    wrong size) is a SpecError naming the file and the entry.
    """
    try:
        entries = json.loads(path.read_text(errors="replace"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such accuracy log") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError(f"{path}: not a LoadGen accuracy log ({exc})", hint=_HINT) from None
    if not isinstance(entries, list):
        raise SpecError(f"{path}: not a LoadGen accuracy log (expected a JSON list)", hint=_HINT)
    by_index: dict[int, int] = {}
    raw: dict[int, bytes] = {}
    dt = np.dtype(dtype)
    for i, e in enumerate(entries):
        try:
            data = bytes.fromhex(e["data"])
            index = int(e["qsl_idx"])
            values = np.frombuffer(data, dtype=dt)
            pred = int(np.argmax(values.reshape(shape))) if shape else int(values[0])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SpecError(
                f"{path}: entry {i} is not a {dtype} response of shape {list(shape)} "
                f"({type(exc).__name__}: {exc})",
                hint=_HINT,
            ) from None
        raw[index] = data
        by_index[index] = pred
    idx = np.array(sorted(by_index), dtype=np.int64)
    top1 = np.array([by_index[i] for i in idx.tolist()], dtype=np.int64)
    ordered = [raw[i] for i in idx.tolist()]
    return Predictions(
        idx,
        top1,
        hashlib.sha256(b"".join(ordered)).hexdigest(),
        tuple(ordered),
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


def load_predictions(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(QSL indices, top-1) of an accuracy run's predictions file; a damaged one is named."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such predictions file") from None
    except (OSError, ValueError, EOFError) as exc:
        raise SpecError(f"{path}: damaged predictions file ({exc})", hint=_HINT) from None
    if not isinstance(data, np.ndarray) or data.ndim != 2 or data.shape[0] != 2:
        raise SpecError(f"{path}: damaged predictions file (expected a 2 x N array)", hint=_HINT)
    return data[0].astype(np.int64), data[1].astype(np.int64)


def save_predictions(path: Path, preds: Predictions) -> None:
    """Write (QSL index, top-1) pairs beside the accuracy log."""
    np.save(path, np.stack([preds.indices, preds.top1]))


def score_outputs(preds: Predictions, reference: list[str]) -> dict[str, float | int]:
    """A generation's exact agreement: the share of prompts whose generated tokens (their raw
    response, bit for bit) have the sha256 the reference gives for that prompt."""
    total = len(preds.indices)
    correct = sum(
        1
        for index, digest in zip(preds.indices.tolist(), preds.output_digests, strict=True)
        if index < len(reference) and reference[index] == digest
    )
    return {"value": correct / total if total else 0.0, "correct": correct, "total": total}
