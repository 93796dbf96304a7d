"""Scoring an accuracy test: what the worker predicted (LoadGen's accuracy log), scored by the
spec's metric: top-1 against the data set's labels or the original's predictions, agreement of
generated outputs with the original's, ROUGE of generated texts against the data set's."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from repro.artifacts.cache import read_verified
from repro.errors import RunError
from repro.harness.request import WorkerResult
from repro.runs import layout, rouge
from repro.runs.accuracy import (
    Predictions,
    decode_accuracy_log,
    save_predictions,
    score,
    score_outputs,
)
from repro.spec.models import ExperimentSpec


class Scorer:
    """Scores a spec's accuracy tests; the data set is read (and verified) when first needed."""

    def __init__(self, spec: ExperimentSpec, artifacts: dict[str, Path]) -> None:
        self.spec = spec
        self.artifacts = artifacts
        self._labels: np.ndarray | None = None

    def score(self, out_dir: Path, result: WorkerResult) -> dict[str, Any]:
        """The accuracy test's record: its predictions' digests, and its score by the spec's
        metric (the predictions are kept in `out_dir` for a later comparison)."""
        acc = self.spec.workload.accuracy
        preds = decode_accuracy_log(
            out_dir / layout.ACCURACY_LOG,
            dtype=result.output_dtype or "<i8",
            shape=tuple(result.output_shape),
        )
        out: dict[str, Any] = {
            "metric": acc.metric,
            "predictions_sha256": preds.digest(),
            "responses_sha256": preds.responses_sha256,
        }
        generation = self.spec.workload.task == "generation"
        if generation or getattr(self.spec.backend.options, "record_output_digests", False):
            out["output_digests"] = list(preds.output_digests)
        ref = self.spec.original.reference_predictions if self.spec.original else None
        if generation:
            out["tokens"] = result.tokens_completed
            if ref is not None and ref.outputs_sha256:
                agreement: dict[str, Any] = dict(score_outputs(preds, ref.outputs_sha256))
            else:
                agreement = {"value": None, "note": "no reference outputs in the spec"}
            if acc.metric == "rouge":
                out["agreement"] = agreement["value"]
                out.update(self._rouge(preds, np.dtype(result.output_dtype or "<i4")))
            else:
                out.update(agreement)
        elif acc.metric == "top1":
            labels = self._dataset_labels()
            out.update(score(preds, labels, class_offset=acc.class_offset))
        else:
            if ref is None:
                out.update({"value": None, "note": "no reference predictions in the spec"})
            else:
                out.update(score(preds, np.asarray(ref.top1, dtype=np.int64)))
        save_predictions(out_dir / layout.PREDICTIONS_FILE, preds)
        return out

    def _rouge(self, preds: Predictions, dtype: np.dtype[Any]) -> dict[str, Any]:
        """A generation's texts against the data set's reference texts (`repro.runs.rouge`)."""
        acc, gen = self.spec.workload.accuracy, self.spec.workload.generation
        data = self._dataset_arrays()
        for key, name in (
            (acc.references_key, "references_key"),
            (acc.vocabulary_key, "vocabulary_key"),
        ):
            if key not in data:
                raise RunError(
                    f"the data set has no {key!r} array for the rouge metric "
                    f"($.workload.accuracy.{name})"
                )
        references = data[acc.references_key]
        if len(preds.indices) and int(preds.indices.max()) >= len(references):
            raise RunError(
                f"the data set's {acc.references_key!r} holds {len(references)} texts, fewer "
                "than the prompts ($.workload.accuracy.references_key)"
            )
        eos = gen.eos_token_id if gen is not None else None
        skip = frozenset({0} if eos is None else {0, eos})
        tokens = [np.frombuffer(raw, dtype=dtype) for raw in preds.outputs]
        why = rouge.missing()
        if why is not None:
            raise RunError(f"the rouge metric cannot be scored: {why}", hint=rouge.INSTALL_HINT)
        return rouge.score_generations(
            tokens,
            preds.indices.tolist(),
            references=references,
            vocabulary=data[acc.vocabulary_key],
            skip=skip,
        )

    def _dataset_arrays(self) -> dict[str, np.ndarray]:
        name = self.spec.workload.dataset
        raw = read_verified(
            self.artifacts[name], self.spec.artifacts[name].sha256, what=f"artifact {name!r}"
        )
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}

    def _dataset_labels(self) -> np.ndarray:
        if self._labels is None:
            data = self._dataset_arrays()
            key = self.spec.workload.accuracy.labels_key
            if key not in data:
                raise RunError(f"dataset has no {key!r} array for the top1 metric")
            self._labels = data[key].astype(np.int64)
        return self._labels
