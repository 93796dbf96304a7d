"""The PyTorch engine (worker only): the model on one device, in one precision, eager or compiled.

On CUDA each batch goes to the device from a page-locked host buffer and the result comes back
after `torch.cuda.synchronize()`, inside `predict`: LoadGen's latencies are the GPU's, not the
time to queue kernels. A device that is not there is the spec's error, never a CPU fallback.
"""

from __future__ import annotations

import io
import json
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx
import torch

from repro.backends.base import check_io_names
from repro.backends.torch import TorchOptions
from repro.backends.torch.convert import CONVERTED_OPS, UnsupportedModelError, build
from repro.errors import SpecError

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
#: the extra file of a TorchScript program that names its input and outputs (optional)
PROGRAM_META = "repro.json"


class ProgramLoadError(RuntimeError):
    """The model artifact is neither a TorchScript program torch can load nor an ONNX model."""


def resolve_device(options: TorchOptions, *, cuda: Any = None) -> torch.device:
    """The spec's device, checked against this machine: a missing GPU, or one index too many,
    is the spec's error (exit 2) naming the setting. `cuda` stands in for `torch.cuda`."""
    cuda = cuda if cuda is not None else torch.cuda
    where = "$.backend.options.device"
    if options.device == "cpu":
        if options.precision == "fp16":
            raise SpecError(
                f'{where}: precision "fp16" on "cpu": use "bf16" or "fp32", or a "cuda:N" device'
            )
        return torch.device("cpu")
    index = int(options.device.split(":")[1])
    if not cuda.is_available():
        raise SpecError(
            f"{where}: {options.device!r}, but torch {torch.__version__} sees no CUDA device "
            f"(CUDA build: {torch.version.cuda or 'none, a CPU build'}); run on a machine with "
            'an NVIDIA GPU and a CUDA build of torch, or set "device": "cpu" (nothing falls '
            "back to the CPU by itself)"
        )
    count = int(cuda.device_count())
    if index >= count:
        raise SpecError(
            f"{where}: {options.device!r}, but this machine has {count} CUDA device"
            f"{'s' if count != 1 else ''} (cuda:0 to cuda:{count - 1}); name one of them"
        )
    if options.precision == "bf16" and not cuda.is_bf16_supported():
        raise SpecError(
            f'$.backend.options.precision: "bf16" is not supported on {options.device} '
            f'({cuda.get_device_name(index)}); use "fp16" or "fp32"'
        )
    return torch.device(options.device)


def load_program(data: bytes, where: Path) -> tuple[torch.nn.Module, dict[str, Any]]:
    """A TorchScript program from its bytes, with the names its `repro.json` extra file gives."""
    extra = {PROGRAM_META: ""}
    try:
        with warnings.catch_warnings():
            # torch 2.13 deprecates TorchScript; the program is the user's artifact, and runs
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(  # type: ignore[no-untyped-call]
                io.BytesIO(data), map_location="cpu", _extra_files=extra
            )
    except Exception as exc:  # torch raises RuntimeError and others from its C++ reader
        raise ProgramLoadError(
            f"{where}: the torch program does not load ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); the model artifact must be a "
            "TorchScript program written by torch.jit.save, or an ONNX model"
        ) from None
    meta = json.loads(extra[PROGRAM_META]) if extra[PROGRAM_META] else {}
    return module, meta


class TorchEngine:
    """One module on one device; `predict` copies in, runs, synchronizes and copies out."""

    name: ClassVar[str] = "torch"

    def __init__(self) -> None:
        self.options = TorchOptions()
        self.info: dict[str, Any] = {}
        self.device = torch.device("cpu")

    def load(
        self,
        model: Path,
        options: TorchOptions,
        *,
        runtime: Mapping[str, Any],
        input_name: str | None,
        output_name: str | None,
        model_bytes: bytes | None = None,
    ) -> None:
        """The module from `model_bytes` (the worker's verified bytes) or else `model`."""
        self.options = options
        self.device = resolve_device(options)
        if options.threads:
            torch.set_num_threads(options.threads)
        if options.interop_threads:
            torch.set_num_interop_threads(options.interop_threads)
        torch.backends.cudnn.benchmark = options.cudnn_benchmark
        data = model_bytes if model_bytes is not None else model.read_bytes()
        t = time.perf_counter()
        module, sample_shape = self._module(data, model, input_name, output_name)
        dtype = _DTYPES[options.precision]
        module = module.to(self.device).to(dtype).eval()
        self.info["convert_s"] = round(time.perf_counter() - t, 6)
        if options.mode == "compile":
            if self.info["model_format"] == "torchscript":
                raise SpecError(
                    '$.backend.options.mode: "compile" takes an ONNX model (converted to a torch '
                    'module); a TorchScript program runs "eager"'
                )
            with warnings.catch_warnings():
                # torch 2.13's own dynamo import uses the deprecated torch.jit.script_method
                warnings.filterwarnings("ignore", "`torch.jit", DeprecationWarning)
                module = torch.compile(module, mode=options.compile_mode)  # type: ignore[assignment]
            # recorded in the run (tests[].backend.compile); it compiles in the first warm-up
            # call of each shape, whose time `warm_up` keeps (`first_s`)
            self.info["compile"] = {"mode": options.compile_mode, "backend": "inductor"}
        self.module = module
        self.predict = self._predictor(module, dtype)  # type: ignore[method-assign]
        batch = int(runtime.get("batch_size", 1))
        self.info["warm_up"] = self._warm_up(sample_shape, batch) if sample_shape else None

    def _module(
        self, data: bytes, model: Path, input_name: str | None, output_name: str | None
    ) -> tuple[torch.nn.Module, list[int] | None]:
        if data[:2] == b"PK":  # a zip: a TorchScript program
            module, meta = load_program(data, model)
            outputs = list(meta.get("outputs", []))
            inputs = list(meta.get("inputs", []))
            if inputs and outputs:
                check_io_names(inputs, outputs, input_name, output_name)
            self.info.update(
                model_format="torchscript",
                input_name=input_name or (inputs[0] if inputs else None),
                output_name=output_name or (outputs[0] if outputs else None),
            )
            return module, meta.get("sample_shape")
        try:
            proto = onnx.load_from_string(data)
        except Exception as exc:  # protobuf's DecodeError and onnx's own share no base
            raise ProgramLoadError(
                f"{model}: the torch program does not load: neither a TorchScript program nor an "
                f"ONNX model ({type(exc).__name__})"
            ) from None
        inits = {i.name for i in proto.graph.initializer}
        inputs = [i.name for i in proto.graph.input if i.name not in inits]
        outputs = [o.name for o in proto.graph.output]
        check_io_names(inputs, outputs, input_name, output_name)
        output = output_name or outputs[0]
        try:
            module = build(proto, output)
        except UnsupportedModelError as exc:
            raise SpecError(f"{model}: {exc}") from None
        first = next(i for i in proto.graph.input if i.name not in inits)
        dims = [
            d.dim_value if d.HasField("dim_value") else 0 for d in first.type.tensor_type.shape.dim
        ]
        self.info.update(
            model_format="onnx, converted to a torch module in the worker",
            converted_ops=sorted({n.op_type for n in proto.graph.node} & set(CONVERTED_OPS)),
            input_name=module.input_name,
            output_name=output,
        )
        return module, (dims[1:] if all(dims[1:]) else None)

    def _predictor(self, module: torch.nn.Module, dtype: torch.dtype) -> Any:
        cuda = self.device.type == "cuda"
        device = self.device
        pinned: dict[tuple[int, ...], torch.Tensor] = {}
        pin = self.options.pin_memory and cuda
        cast = dtype != torch.float32

        @torch.inference_mode()
        def predict(batch: np.ndarray) -> np.ndarray:
            host = torch.from_numpy(batch)
            if pin:
                buf = pinned.get(batch.shape)
                if buf is None:
                    buf = pinned[batch.shape] = torch.empty(
                        batch.shape, dtype=host.dtype, pin_memory=True
                    )
                buf.copy_(host)
                host = buf
            x = host.to(device, non_blocking=pin) if cuda else host
            if cast and x.is_floating_point():
                x = x.to(dtype)
            out = module(x)
            if out.is_floating_point() and out.dtype != torch.float32:
                out = out.float()
            if cuda:
                torch.cuda.synchronize(device)
                out = out.cpu()
            result: np.ndarray = out.numpy()
            return result

        return predict

    def predict(self, batch: np.ndarray) -> np.ndarray:  # replaced by load()
        raise RuntimeError("load() first")

    def _warm_up(self, sample_shape: list[int], batch: int) -> dict[str, Any]:
        """`warm_up_runs` inferences at batch 1 and the batch size, each timed (a compiled
        module compiles in its first call): the record of what ran before the test."""
        shapes: dict[str, Any] = {}
        for n in sorted({1, batch}):
            x = np.zeros([n, *sample_shape], dtype=np.float32)
            times = []
            for _ in range(self.options.warm_up_runs):
                t = time.perf_counter()
                self.predict(x)
                times.append(round(time.perf_counter() - t, 6))
            shapes[str(n)] = {"runs": len(times), "first_s": times[0], "last_s": times[-1]}
        return shapes

    def describe(self) -> dict[str, Any]:
        cuda = self.device.type == "cuda"
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None  # type: ignore[no-untyped-call]
        return {
            "name": self.name,
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": cudnn,
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if cuda else "cpu",
            "options": self.options.model_dump(mode="json"),
            "threads_in_effect": torch.get_num_threads(),
            "synchronized_timing": cuda,
            **self.info,
        }
