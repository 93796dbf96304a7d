"""The PyTorch backend: its spec section, worker packages and build information.

The model artifact is either the experiment's ONNX model, converted in the worker into a torch
module built from the ONNX initializers (`convert.py`: the ops of repro's ResNet-50 and digits
recipes), or a TorchScript program a user wrote with `torch.jit.save`; either is pinned by its
sha256. The engine (`engine.py`) imports torch; this module does not. A generative workload
(`task: "generation"`) runs `lm.py`'s causal LM instead: a `tinylm` recipe's .npz, or a
`torch.save` checkpoint of the same architecture (see `lm.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from repro.backends.base import BackendPlugin, onnx_io_names
from repro.runs.facts import BackendFacts
from repro.spec.sections import BackendSpecBase
from repro.spec.types import Accepts, SpecModel, Threads

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec

#: torch 2.13.0: the CPU build this project's machines install from a local file (a newer
#: release, or plain `torch`, is a CUDA build of several GB)
TORCH_PIN = "torch==2.13.0"
_DEVICE = re.compile(r"^(cpu|cuda:(0|[1-9][0-9]{0,2}))$")
Precision = Literal["fp32", "fp16", "bf16"]


class TorchOptions(SpecModel):
    """How torch runs the model; every option is recorded in the run."""

    device: Annotated[
        str,
        Field(pattern=_DEVICE.pattern),
        Accepts('"cpu" or "cuda:N", N the CUDA device\'s index from 0 to 999 ("cuda:0")'),
    ] = Field(
        "cpu",
        description='"cpu" or "cuda:N"; a device that is not there fails the run (never a '
        "silent fallback to the CPU)",
    )
    precision: Precision = Field(
        "fp32", description="weights and activations: fp32, fp16 (GPU only) or bf16"
    )
    mode: Literal["eager", "compile"] = Field(
        "eager", description="eager, or torch.compile (Inductor; compiled during the warm-up)"
    )
    compile_mode: Literal["default", "reduce-overhead", "max-autotune"] = Field(
        "default", description="torch.compile's mode (with mode compile)"
    )
    threads: Threads = Field(0, description="torch.set_num_threads: 0 (torch chooses) to 1024")
    interop_threads: Threads = Field(
        0, description="torch.set_num_interop_threads: 0 (torch chooses) to 1024"
    )
    pin_memory: bool = Field(
        True, description="on CUDA, copy each batch to the device from page-locked host memory"
    )
    cudnn_benchmark: bool = Field(
        False, description="torch.backends.cudnn.benchmark (cuDNN picks kernels by timing)"
    )
    warm_up_runs: int = Field(
        3, ge=1, le=1000, description="inferences per batch shape before the test (recorded)"
    )

    @model_validator(mode="after")
    def _device_precision(self) -> TorchOptions:
        if self.device == "cpu" and self.precision == "fp16":
            raise ValueError(
                'precision "fp16" needs a GPU (torch has no fast fp16 convolution on the CPU): '
                'use "bf16" or "fp32" on "cpu", or a "cuda:N" device'
            )
        return self


class TorchBackend(BackendSpecBase):
    """`"backend": {"name": "torch", "options": {...}}`."""

    name: Literal["torch"] = Field(description="the backend's plug-in")
    options: TorchOptions = Field(default_factory=TorchOptions)


class TorchFacts(BackendFacts):
    """What a torch test records of its build and model (`TorchEngine.describe()`, and the
    generator's)."""

    identity: ClassVar[tuple[str, ...]] = (*BackendFacts.identity, "cuda", "cudnn")

    cuda: str | None = Field(None, description="the CUDA torch was built with; None: a CPU build")
    cudnn: int | None = None
    device_name: str | None = None
    threads_in_effect: int | None = None
    model_format: str | None = None


class TorchPlugin(BackendPlugin):
    """PyTorch from PyPI (`repro[torch]`), one module per worker, on the CPU or one GPU."""

    name: ClassVar[str] = "torch"
    spec_model = TorchBackend
    engine = "repro.backends.torch.engine:TorchEngine"
    facts = TorchFacts
    generator = "repro.backends.torch.lm:TorchGenerator"
    worker_packages = ("mlcommons-loadgen", "numpy", "pydantic", "onnx", "torch")
    install_hint = f"pip install 'repro[torch]'  ({TORCH_PIN})"
    nix_shell = "default"
    key_packages = ("torch", "onnx", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13")
    spack_key_packages = ("py-torch",)
    result_variables = frozenset({"PYTORCH_CUDA_ALLOC_CONF", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"})

    def model_io_names(self, model: Path) -> tuple[list[str], list[str]] | None:
        with model.open("rb") as f:
            if f.read(2) == b"PK":  # a TorchScript program (a zip): its names are inside
                return None
        return onnx_io_names(model)

    def runtime(
        self, spec: ExperimentSpec, artifacts: Mapping[str, Path], cache_root: Path
    ) -> dict[str, Any]:
        # the engine warms up at batch 1 and at the batch size (recorded as `warm_up`)
        return {"batch_size": spec.workload.batch_size}

    def threads(self, options: SpecModel) -> int:
        assert isinstance(options, TorchOptions)
        return options.threads

    def device(self, options: SpecModel) -> str:
        assert isinstance(options, TorchOptions)
        return options.device

    def build_info(self) -> dict[str, Any] | None:
        try:
            import torch
        except ImportError:
            return None
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None  # type: ignore[no-untyped-call]
        return {
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": cudnn,
            "cuda_available": torch.cuda.is_available(),
            "devices": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        }


PLUGIN = TorchPlugin()
