"""The onnxruntime backend: its spec section, worker packages and build information."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from repro.backends.base import BackendPlugin, onnx_io_names
from repro.runs.facts import BackendFacts
from repro.spec.sections import BackendSpecBase
from repro.spec.types import SpecModel, Threads


class OnnxRuntimeOptions(SpecModel):
    """Session options that change onnxruntime's results or speed; all are recorded."""

    intra_op_threads: Threads = Field(0, description="0 (onnxruntime chooses) to 1024")
    inter_op_threads: Threads = Field(0, description="0 (onnxruntime chooses) to 1024")
    allow_spinning: bool = Field(
        True, description="session.intra_op.allow_spinning; spinning starves Server on few cores"
    )
    graph_optimization_level: Literal["disable", "basic", "extended", "all"] = Field(
        "all", description="onnxruntime's graph optimizations (fusions change the arithmetic)"
    )
    execution_mode: Literal["sequential", "parallel"] = Field(
        "sequential", description="run the graph's operators one after another, or in parallel"
    )
    execution_provider: str | Annotated[list[str], Field(min_length=1, max_length=8)] = Field(
        "CPUExecutionProvider",
        description="the provider to run on; a missing one fails the run. A list names an "
        'explicit fallback, e.g. ["CUDAExecutionProvider", "CPUExecutionProvider"], and the '
        "provider actually used is recorded (and shows in a report's drift)",
    )

    def providers(self) -> list[str]:
        """The providers in the order onnxruntime should try them."""
        ep = self.execution_provider
        return [ep] if isinstance(ep, str) else list(ep)


class OnnxRuntimeBackend(BackendSpecBase):
    """`"backend": {"name": "onnxruntime", "options": {...}}`."""

    name: Literal["onnxruntime"] = Field(description="the backend's plug-in")
    options: OnnxRuntimeOptions = Field(default_factory=OnnxRuntimeOptions)


class OnnxRuntimeFacts(BackendFacts):
    """What an onnxruntime test records of its session (`OnnxRuntimeEngine.describe()`)."""

    identity: ClassVar[tuple[str, ...]] = (*BackendFacts.identity, "providers_used")

    providers_used: list[str] | None = Field(None, description="the session's, in order")
    providers_available: list[str] | None = None
    input_name: str | None = None
    output_name: str | None = None


class OnnxRuntimePlugin(BackendPlugin):
    """onnxruntime from PyPI, one InferenceSession per worker."""

    name: ClassVar[str] = "onnxruntime"
    spec_model = OnnxRuntimeBackend
    engine = "repro.backends.onnxruntime.engine:OnnxRuntimeEngine"
    facts = OnnxRuntimeFacts
    worker_packages = ("mlcommons-loadgen", "numpy", "pydantic", "onnxruntime")
    install_hint = "pip install onnxruntime"
    nix_shell = "ort"
    key_packages = ("onnxruntime", "onnx")
    spack_key_packages = ("py-onnxruntime",)
    result_variables = frozenset({"ORT_DISABLE_CPU_EP_FALLBACK"})
    profiler = "onnxruntime's session profiler"

    def model_io_names(self, model: Path) -> tuple[list[str], list[str]]:
        return onnx_io_names(model)

    def threads(self, options: SpecModel) -> int:
        assert isinstance(options, OnnxRuntimeOptions)
        return options.intra_op_threads

    def build_info(self) -> dict[str, Any] | None:
        try:
            import onnxruntime as ort
        except ImportError:
            return None
        return {
            "version": ort.__version__,
            "providers": ort.get_available_providers(),
            "device": ort.get_device(),
        }


PLUGIN = OnnxRuntimePlugin()
