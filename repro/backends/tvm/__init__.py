"""The Apache TVM backend: its spec section, tuning database, worker packages and build info.

The engine (`engine.py`: ONNX -> Relax, compiled, run with the Relax VM) and MetaSchedule tuning
(`tuning.py`, `repro tune`) import TVM; this module does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal

from pydantic import Field

from repro.backends.base import BackendPlugin, onnx_io_names
from repro.runs.facts import BackendFacts
from repro.spec.sections import BackendSpecBase
from repro.spec.types import Accepts, SpecModel, Threads

if TYPE_CHECKING:
    from repro.spec.models import ExperimentSpec


#: the folder under the artifact cache TVM's compiled modules are kept in
COMPILE_CACHE: Final = "tvm"


class TvmOptions(SpecModel):
    """How TVM compiles and runs the model."""

    target: dict[str, Any] | str = Field(
        "llvm", description='a target as a JSON dict, e.g. {"kind": "llvm", "mcpu": "znver5"}'
    )
    opt_level: Annotated[
        int, Field(ge=0, le=4), Accepts("0 to 4", about="opt_level of TVM's PassContext")
    ] = 3
    threads: Threads = Field(0, description="TVM_NUM_THREADS: 0 (TVM chooses) to 1024")
    tuning_database: str | None = Field(
        None, description="name of the artifact holding the MetaSchedule database"
    )
    record_output_digests: bool = Field(
        False, description="record the sha256 of every sample's output in accuracy mode"
    )


class TvmBackend(BackendSpecBase):
    """`"backend": {"name": "tvm", "options": {...}}`."""

    name: Literal["tvm"] = Field(description="the backend's plug-in")
    options: TvmOptions = Field(default_factory=TvmOptions)


class TvmRuntime(SpecModel):
    """What a TVM worker needs besides the spec: the database's path and the cache keys."""

    model_sha256: str
    tuning_database_path: str | None = None
    tuning_database_sha256: str | None = None
    cache_dir: str
    batch_size: int = 1


class TvmFacts(BackendFacts):
    """What a TVM test records of its build and compiled module (`TvmEngine.describe()`)."""

    identity: ClassVar[tuple[str, ...]] = (*BackendFacts.identity, "target")

    target: dict[str, Any] | str | None = Field(
        None, description="the target compiled for, as TVM exports it (a JSON object)"
    )
    tvm_ffi_version: str | None = None
    host_cpu: str | None = Field(None, description="LLVM's name for this machine's CPU")
    tuned: bool | None = Field(None, description="compiled with a MetaSchedule database")
    tuning_database_sha256: str | None = None

    def on_cpu(self) -> bool | None:
        """TVM records no device: its target's kind says (LLVM and C compile for the CPU)."""
        kind = self.target.get("kind") if isinstance(self.target, dict) else self.target
        if not isinstance(kind, str):
            return super().on_cpu()
        return kind.split()[0] in ("llvm", "c")


class TvmPlugin(BackendPlugin):
    """apache-tvm from PyPI (LLVM inside, no DNNL), with a pinned MetaSchedule database."""

    name: ClassVar[str] = "tvm"
    spec_model = TvmBackend
    engine = "repro.backends.tvm.engine:TvmEngine"
    facts = TvmFacts
    worker_packages = (
        "mlcommons-loadgen",
        "numpy",
        "pydantic",
        "onnx",
        "apache-tvm",
        "apache-tvm-ffi",
        "psutil",
        "cloudpickle",
    )
    install_hint = "pip install 'repro[tvm]'  (apache-tvm 0.27 with apache-tvm-ffi==0.1.14.post0)"
    nix_shell = "tvm"
    compile_cache = COMPILE_CACHE
    # TVM's native stack, pinned as this machine's LLVM and oneDNN (Debian's llvm-*-dev,
    # libdnnl-dev); the apache-tvm wheel links its own LLVM and has no DNNL (docs/spack.md)
    spack_specs = ("py-mlcommons-loadgen@6.0.17", "llvm", "onednn")
    spack_externals = ("llvm", "onednn")
    key_packages = ("apache-tvm", "apache-tvm-ffi", "tvm", "onnx")
    spack_key_packages = ("apache-tvm", "py-apache-tvm-ffi", "llvm", "onednn")
    result_variables = frozenset({"TVM_NUM_THREADS", "TVM_BIND_THREADS", "TVM_EXCLUDE_WORKER0"})
    profiler = "the Relax VM's instrument"

    def model_io_names(self, model: Path) -> tuple[list[str], list[str]]:
        return onnx_io_names(model)

    def artifact_refs(self, options: SpecModel) -> dict[str, str]:
        assert isinstance(options, TvmOptions)
        db = options.tuning_database
        return {"$.backend.options.tuning_database": db} if db is not None else {}

    def runtime(
        self, spec: ExperimentSpec, artifacts: Mapping[str, Path], cache_root: Path
    ) -> dict[str, Any]:
        options = spec.backend.options
        assert isinstance(options, TvmOptions)
        db = options.tuning_database
        return TvmRuntime(
            model_sha256=spec.artifacts[spec.workload.model].sha256,
            tuning_database_path=str(artifacts[db]) if db else None,
            tuning_database_sha256=spec.artifacts[db].sha256 if db else None,
            cache_dir=str(cache_root),
            batch_size=spec.workload.batch_size,
        ).model_dump()

    def threads(self, options: SpecModel) -> int:
        assert isinstance(options, TvmOptions)
        return options.threads

    def build_info(self) -> dict[str, Any] | None:
        try:
            import tvm
        except ImportError:
            return None
        info = tvm.support.libinfo()
        return {"version": tvm.__version__, "libinfo": {k: str(v) for k, v in dict(info).items()}}


PLUGIN = TvmPlugin()
