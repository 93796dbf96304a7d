"""A generation's accuracy: exact agreement of each prompt's tokens with the original's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from repro.runs.accuracy import decode_accuracy_log, score_outputs


def _log(path: Path, outputs: dict[int, list[int]]) -> Path:
    entries = [
        {"seq_id": k, "qsl_idx": i, "data": np.asarray(t, dtype="<i4").tobytes().hex().upper()}
        for k, (i, t) in enumerate(outputs.items())
    ]
    path.write_text(json.dumps(entries))
    return path


def _digest(tokens: list[int]) -> str:
    return hashlib.sha256(np.asarray(tokens, dtype="<i4").tobytes()).hexdigest()


def test_every_prompt_equal_is_full_agreement_and_one_token_off_is_not(tmp_path: Path) -> None:
    original = {0: [5, 6, 7], 1: [9, 9], 2: [1, 2, 3, 4]}
    reference = [_digest(original[i]) for i in range(3)]
    same = decode_accuracy_log(_log(tmp_path / "a.json", original), dtype="<i4", shape=())
    assert score_outputs(same, reference) == {"value": 1.0, "correct": 3, "total": 3}
    changed = {2: [1, 2, 3, 5], 0: [5, 6, 7], 1: [9, 9]}  # another order, one token differs
    other = decode_accuracy_log(_log(tmp_path / "b.json", changed), dtype="<i4", shape=())
    assert score_outputs(other, reference)["correct"] == 2
