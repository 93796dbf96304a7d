"""The backend plug-in interface: what repro knows of a backend, and its engine in the worker.

A backend is one package under `repro/backends/` holding a `BackendPlugin` (light: importable
anywhere, it imports no inference library) and an engine module that the worker imports.
The plug-in owns every fact about its backend: the spec's `backend` section for it, the
packages its worker needs, how to install them, which artifacts its options name, what its
worker request carries besides the spec, and its build information.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from repro.errors import BackendUnavailableError, SpecError
from repro.profiles.model import LayerCall
from repro.runs.facts import BackendFacts
from repro.spec.sections import BackendSpecBase
from repro.spec.types import SpecModel

if TYPE_CHECKING:
    import numpy as np  # the engines' arrays: the plug-ins are read without numpy

    from repro.spec.models import ExperimentSpec


class Engine(Protocol):
    """An inference engine as the harness sees it; imported only inside the worker process."""

    name: ClassVar[str]

    def load(
        self,
        model: Path,
        options: Any,
        *,
        runtime: Mapping[str, Any],
        input_name: str | None,
        output_name: str | None,
        model_bytes: bytes | None = None,
    ) -> None:
        """Prepare the model with the spec's (typed) options and the request's runtime facts;
        `model_bytes` are the model's bytes as the worker read and verified them."""

    def predict(self, batch: np.ndarray) -> np.ndarray:
        """Outputs of the selected output for a batch (first axis = samples)."""

    def describe(self) -> dict[str, Any]:
        """Versions, providers, options in effect: recorded in the run."""


class GenerativeEngine(Protocol):
    """A causal LM as the generation harness sees it (worker only): `slots` requests decoded
    together, each with its KV cache; `decoder` offers `prefill(slot, prompt) -> token` and
    `step(tokens, positions) -> tokens` over all slots (`repro.backends.torch.lm.SlotDecoder`)."""

    name: ClassVar[str]
    decoder: Any
    config: Any  # vocab_size, context (and the rest of the architecture)

    def load(self, model: Path, options: Any, *, slots: int, model_bytes: bytes) -> None:
        """Prepare the model with the spec's options and `slots` KV caches."""

    def describe(self) -> dict[str, Any]:
        """Versions, options in effect, the architecture: recorded in the run."""


class Profiler(Protocol):
    """An engine's profiled twin: the same model and options, every kernel call recorded by
    the backend's own profiler. An engine that has one offers `profiler(out_dir)`."""

    #: which profiler measures, for the record ("onnxruntime session profiler", ...)
    source: str

    def predict(self, batch: np.ndarray) -> np.ndarray:
        """As the engine's predict, profiled."""

    def finish(self) -> tuple[list[LayerCall], str | None]:
        """Stop profiling: every kernel call on the wall clock (`time.time_ns`), and the name of
        the profiler's raw output written into `out_dir` (None when it has none)."""


class BackendPlugin:
    """What repro knows about one backend without importing it."""

    name: ClassVar[str]
    #: the spec's `backend` section for this backend (a BackendSpecBase with a Literal name)
    spec_model: ClassVar[type[BackendSpecBase]]
    #: "module:Class" of the Engine, imported in the worker only
    engine: ClassVar[str]
    #: what its engine's `describe()` records of a test, typed (`TestRecord.backend_facts()`)
    facts: ClassVar[type[BackendFacts]] = BackendFacts
    #: distributions the worker imports (locked by `repro capture`; repro itself is a path)
    worker_packages: ClassVar[tuple[str, ...]]
    #: how to get the worker packages when they are missing
    install_hint: ClassVar[str]
    #: the devShell of nix/flake.nix that provides this backend
    nix_shell: ClassVar[str] = "default"
    #: the worker's native stack as Spack builds it (roots of the spack.yaml `repro capture
    #: --env-manager spack` writes); the backend's Python wheels come from the hashed lock
    spack_specs: ClassVar[tuple[str, ...]] = ("py-mlcommons-loadgen@6.0.17",)
    #: native libraries the stack pins as externals of this machine (`spack external find`)
    spack_externals: ClassVar[tuple[str, ...]] = ()
    #: distributions whose version changes results (ranked high in the drift)
    key_packages: ClassVar[tuple[str, ...]] = ()
    #: the Spack packages whose version, variants, compiler or target change its results (a
    #: spec pins their versions from spack.lock; the drift ranks them high)
    spack_key_packages: ClassVar[tuple[str, ...]] = ()
    #: environment variables of its library that change results or speed, by exact name: a
    #: fingerprint records them, the worker and its container get them (`repro.privacy`)
    result_variables: ClassVar[frozenset[str]] = frozenset()
    #: the folder under the artifact cache its engine writes compiled modules to (a container
    #: mounts it writable, the rest of the cache read-only); None: it writes none
    compile_cache: ClassVar[str | None] = None
    #: the profiler its engine's `profiler(out_dir)` uses, if it has one (`repro profile`)
    profiler: ClassVar[str | None] = None
    #: "module:Class" of its GenerativeEngine (a `task: "generation"` workload), if it has one
    generator: ClassVar[str | None] = None
    #: it drives a server over HTTP (the spec's `server` section) instead of running a model
    served: ClassVar[bool] = False

    def artifact_refs(self, options: SpecModel) -> dict[str, str]:
        """JSON path -> artifact name, for every option that names an artifact."""
        return {}

    def runtime(
        self, spec: ExperimentSpec, artifacts: Mapping[str, Path], cache_root: Path
    ) -> dict[str, Any]:
        """What the worker needs besides the spec: resolved artifact paths, caches, digests."""
        return {}

    def threads(self, options: SpecModel) -> int:
        """The threads the engine computes with (0: the library's choice); machine probes
        measure at the same count."""
        return 0

    def device(self, options: SpecModel) -> str:
        """Where the engine computes: "cpu", or "cuda:N" (the machine probes then measure that
        GPU too, `repro.probes.gpu`)."""
        return "cpu"

    def model_io_names(self, model: Path) -> tuple[list[str], list[str]] | None:
        """The model file's input and output names, read without the backend (in the
        orchestrator, before anything runs); None: this backend cannot tell."""
        return None

    def build_info(self) -> dict[str, Any] | None:
        """The installed build (imports the backend; for `repro env show --deep`), or None."""
        return None

    def load_engine(self) -> type[Engine]:
        """The engine class; a missing package becomes BackendUnavailableError with a hint."""
        cls: type[Engine] = self._import(self.engine)
        return cls

    def load_generator(self) -> type[GenerativeEngine]:
        """The generative engine class; a backend without one is the spec's error."""
        if self.generator is None:
            raise SpecError(
                f"$.backend.name: {self.name!r} has no generative engine for task "
                '"generation"; use a backend that has one',
            )
        cls: type[GenerativeEngine] = self._import(self.generator)
        return cls

    def _import(self, target: str) -> Any:
        """`module:Class` imported; a missing package becomes BackendUnavailableError."""
        module_name, cls_name = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise BackendUnavailableError(
                f"backend {self.name!r} is not available: {exc}", hint=self.install_hint
            ) from exc
        return getattr(module, cls_name)


def io_name_problems(
    inputs: list[str], outputs: list[str], input_name: str | None, output_name: str | None
) -> list[tuple[str, str]]:
    """(JSON path, message) for each of the workload's input and output names the model lacks."""
    problems = []
    for field, name, names in (
        ("input_name", input_name, inputs),
        ("output_name", output_name, outputs),
    ):
        kind = field.split("_")[0]
        if name is not None and name not in names:
            problems.append(
                (
                    f"$.workload.{field}",
                    f"{name!r} is not an {kind} of the model (it has {names}): name one of "
                    f"the model's {kind}s, or leave it out",
                )
            )
    return problems


def check_io_names(
    inputs: list[str], outputs: list[str], input_name: str | None, output_name: str | None
) -> None:
    """The workload's input and output names are the model's: a name it lacks is the spec's
    error (exit 2, naming the field), not a failure deep in the backend."""
    for where, message in io_name_problems(inputs, outputs, input_name, output_name)[:1]:
        raise SpecError(f"{where}: {message}")


def onnx_io_names(model: Path) -> tuple[list[str], list[str]]:
    """The graph inputs that are not initializers, and the outputs, of an ONNX model (read with
    the `onnx` package, without the weights' external data and without a backend)."""
    import onnx

    try:
        graph = onnx.load(str(model), load_external_data=False).graph
    except Exception as exc:  # protobuf's DecodeError and onnx's own errors share no base
        raise SpecError(f"{model}: not an ONNX model: {exc}") from None
    inits = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in inits], [o.name for o in graph.output]
