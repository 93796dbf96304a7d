"""The onnxruntime engine (worker only): session options from the spec, recorded as they ran."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort

from repro.backends.base import check_io_names
from repro.backends.onnxruntime import OnnxRuntimeOptions
from repro.profiles.model import LayerCall

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
        self._session: Callable[[ort.SessionOptions], ort.InferenceSession] | None = None
        self._session_options: Callable[[], ort.SessionOptions] | None = None

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

        def session_options() -> ort.SessionOptions:
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
            return so

        providers = options.providers()
        source = model_bytes if model_bytes is not None else str(model)

        def session(so: ort.SessionOptions) -> ort.InferenceSession:
            with warnings.catch_warnings():
                # onnxruntime warns, then quietly runs on what it has; we decide below instead
                warnings.simplefilter("ignore", UserWarning)
                return ort.InferenceSession(source, sess_options=so, providers=providers)

        self.session = session(session_options())
        self._session, self._session_options = session, session_options
        used = self.session.get_providers()
        if used[0] != providers[0] and len(providers) == 1:
            raise RuntimeError(
                f"execution provider {providers[0]} is not available here (onnxruntime "
                f"{ort.__version__} has {ort.get_available_providers()}); onnxruntime would "
                f"silently run on {used[0]} instead, which is another experiment. To allow "
                f'that, list the fallback: "execution_provider": ["{providers[0]}", "{used[0]}"]'
            )
        self.options = options
        inputs = [i.name for i in self.session.get_inputs()]
        outputs = [o.name for o in self.session.get_outputs()]
        check_io_names(inputs, outputs, input_name, output_name)
        self.input_name = input_name or inputs[0]
        self.output_name = output_name or outputs[0]
        run = self.session.run
        names = [self.output_name]
        feed_name = self.input_name

        def predict(batch: np.ndarray) -> np.ndarray:
            out: np.ndarray = run(names, {feed_name: batch})[0]
            return out

        self.predict = predict  # type: ignore[method-assign]

    def predict(self, batch: np.ndarray) -> np.ndarray:  # replaced by load()
        raise RuntimeError("load() first")

    def profiler(self, out_dir: Path) -> OnnxRuntimeProfiler:
        """A second session of the same model and options with onnxruntime's profiler on."""
        assert self._session is not None, "load() first"
        assert self._session_options is not None
        so = self._session_options()
        so.enable_profiling = True
        so.profile_file_prefix = str(out_dir / "onnxruntime_profile")
        return OnnxRuntimeProfiler(self._session(so), self.input_name, self.output_name, out_dir)

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


# The kind of each onnxruntime operator type, so that a layer lines up with another backend's
# (a convolution with its bias and ReLU fused in is a convolution): see repro.profiles.diff.
_ORT_KINDS = {
    "conv": ("Conv", "FusedConv", "NhwcFusedConv", "QLinearConv", "ConvInteger"),
    "matmul": ("MatMul", "Gemm", "FusedGemm", "FusedMatMul", "MatMulInteger", "QLinearMatMul"),
    "pool": ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"),
    "softmax": ("Softmax", "LogSoftmax"),
    "norm": ("LayerNormalization", "BatchNormalization", "GroupNormalization"),
    "reduce": ("ReduceMean", "ReduceSum", "ReduceProd"),
    "argmax": ("ArgMax",),
    "concat": ("Concat",),
    "transpose": ("Transpose",),
    "reshape": ("Reshape", "Flatten", "Squeeze", "Unsqueeze"),
    "relu": ("Relu",),
    "add": ("Add", "Sum"),
    "multiply": ("Mul",),
}
_BY_ORT_TYPE = {t: kind for kind, types in _ORT_KINDS.items() for t in types}


def ort_kind(op_type: str) -> str:
    """The kind of an onnxruntime node from its operator type (`FusedConv` -> `conv`)."""
    return _BY_ORT_TYPE.get(op_type, op_type.lower())


#: the raw trace's name in the profile folder
ORT_TRACE = "onnxruntime_profile.json"


class OnnxRuntimeProfiler:
    """onnxruntime's session profiler: one `Node` event per kernel call, in microseconds from
    the session's profiling start (wall clock, nanoseconds)."""

    source = "onnxruntime session profiler (SessionOptions.enable_profiling)"

    def __init__(
        self, session: ort.InferenceSession, input_name: str, output_name: str, out_dir: Path
    ) -> None:
        self.session = session
        self.out_dir = out_dir
        self._names = [output_name]
        self._feed = input_name

    def predict(self, batch: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.session.run(self._names, {self._feed: batch})[0]
        return out

    def finish(self) -> tuple[list[LayerCall], str | None]:
        start_ns = int(self.session.get_profiling_start_time_ns())
        written = Path(self.session.end_profiling())
        raw = self.out_dir / ORT_TRACE
        written.replace(raw)
        return node_calls(json.loads(raw.read_bytes()), start_ns), ORT_TRACE


def node_calls(events: list[dict[str, Any]], start_ns: int) -> list[LayerCall]:
    """The kernel calls of an onnxruntime profile (`<node>_kernel_time` events)."""
    calls = []
    for e in events:
        name = str(e.get("name", ""))
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        op_type = str(e.get("args", {}).get("op_name", "?"))
        calls.append(
            LayerCall(
                name=name.removesuffix("_kernel_time"),
                op_type=op_type,
                kind=ort_kind(op_type),
                start_ns=start_ns + int(e["ts"]) * 1000,
                dur_ns=int(e["dur"]) * 1000,
                out_elems=_elements(e["args"].get("output_type_shape")),
                thread=int(e.get("tid", 0)),
            )
        )
    return calls


def _elements(shapes: Any) -> int | None:
    """Elements of the first output in `output_type_shape` ([{"float": [1, 64]}, ...])."""
    try:
        dims = next(iter(shapes[0].values()))
        return int(np.prod([int(d) for d in dims])) if dims is not None else None
    except (TypeError, ValueError, IndexError, KeyError, StopIteration, AttributeError):
        return None
