"""Registry of backends, imported lazily so `repro --help` never imports onnxruntime or TVM."""

from __future__ import annotations

import importlib
from typing import Final, get_args

from repro.backends.base import Backend
from repro.errors import BackendUnavailableError, SpecError
from repro.spec.models import BackendName

BACKENDS: Final[dict[str, str]] = {
    "onnxruntime": "repro.backends.onnxruntime:OnnxRuntimeBackend",
    "tvm": "repro.backends.tvm:TvmBackend",
}
INSTALL_HINTS: Final[dict[str, str]] = {
    "onnxruntime": "pip install onnxruntime",
    "tvm": "pip install 'repro[tvm]'  (apache-tvm 0.27 with apache-tvm-ffi==0.1.14.post0)",
}
assert set(get_args(BackendName)) == set(BACKENDS)


def get_backend(name: str) -> type[Backend]:
    """The backend class; a missing package becomes BackendUnavailableError with a hint."""
    if name not in BACKENDS:
        raise SpecError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}")
    module_name, cls_name = BACKENDS[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailableError(
            f"backend {name!r} is not available: {exc}", hint=INSTALL_HINTS[name]
        ) from exc
    cls: type[Backend] = getattr(module, cls_name)
    return cls
