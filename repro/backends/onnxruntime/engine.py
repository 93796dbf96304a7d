"""The onnxruntime engine (worker only): session options from the spec, recorded as they ran."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort

from repro.backends.onnxruntime import OnnxRuntimeOptions

_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


class OnnxRuntimeEngine:
    """One InferenceSession; `predict` is the bare `session.run` of one output."""

    name: ClassVar[str] = "onnxruntime"

    def __init__(self) -> None:
        self.session: ort.InferenceSession | None = None
        self.options = OnnxRuntimeOptions()
        self.input_name = ""
        self.output_name = ""

    def load(
        self,
        model: Path,
        options: OnnxRuntimeOptions,
        *,
        runtime: Mapping[str, Any],
        input_name: str | None,
        output_name: str | None,
        model_bytes: bytes | None = None,
    ) -> None:
        """Load the model from `model_bytes` (the worker's verified bytes) or else `model`."""
        so = ort.SessionOptions()
        so.intra_op_num_threads = options.intra_op_threads
        so.inter_op_num_threads = options.inter_op_threads
        so.graph_optimization_level = _OPT_LEVELS[options.graph_optimization_level]
        so.execution_mode = (
            ort.ExecutionMode.ORT_PARALLEL
            if options.execution_mode == "parallel"
            else ort.ExecutionMode.ORT_SEQUENTIAL
        )
        spinning = "1" if options.allow_spinning else "0"
        so.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        so.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        providers = options.providers()
        source = model_bytes if model_bytes is not None else str(model)
        with warnings.catch_warnings():
            # onnxruntime warns, then quietly runs on what it has; we decide below instead
            warnings.simplefilter("ignore", UserWarning)
            self.session = ort.InferenceSession(source, sess_options=so, providers=providers)
        used = self.session.get_providers()
        if used[0] != providers[0] and len(providers) == 1:
            raise RuntimeError(
                f"execution provider {providers[0]} is not available here (onnxruntime "
                f"{ort.__version__} has {ort.get_available_providers()}); onnxruntime would "
                f"silently run on {used[0]} instead, which is another experiment. To allow "
                f'that, list the fallback: "execution_provider": ["{providers[0]}", "{used[0]}"]'
            )
        self.options = options
        self.input_name = input_name or self.session.get_inputs()[0].name
        self.output_name = output_name or self.session.get_outputs()[0].name
        run = self.session.run
        names = [self.output_name]
        feed_name = self.input_name

        def predict(batch: np.ndarray) -> np.ndarray:
            out: np.ndarray = run(names, {feed_name: batch})[0]
            return out

        self.predict = predict  # type: ignore[method-assign]

    def predict(self, batch: np.ndarray) -> np.ndarray:  # replaced by load()
        raise RuntimeError("load() first")

    def describe(self) -> dict[str, Any]:
        assert self.session is not None
        return {
            "name": self.name,
            "version": ort.__version__,
            "providers_available": ort.get_available_providers(),
            "providers_used": self.session.get_providers(),
            "device": ort.get_device(),
            "options": self.options.model_dump(mode="json"),
            "input_name": self.input_name,
            "output_name": self.output_name,
        }
