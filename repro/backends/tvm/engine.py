"""The Apache TVM engine (worker and `repro tune` only): ONNX -> Relax, compiled, Relax VM.

Compiled modules are cached as shared libraries keyed by (model sha256, tuning-database sha256,
TVM version, target, opt level, batch size): a warm replay loads instead of compiling. Without a
MetaSchedule database the module is untuned, which on a CPU is ~90x slower than onnxruntime;
the backend says so in its description and on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from repro.artifacts.cache import read_verified
from repro.atomic import atomic_path
from repro.backends.base import check_io_names
from repro.backends.tvm import COMPILE_CACHE, TvmOptions, TvmRuntime
from repro.profiles.model import LayerCall

CACHE_FORMAT = 1


def target_dict(target: dict[str, Any] | str, *, threads: int = 0) -> dict[str, Any] | str:
    """The effective target: "host" is the CPU LLVM reports here; an LLVM target gets the
    `num-cores` MetaSchedule requires (the spec's threads, else this machine's CPUs), the same
    for tuning and compiling so that database records match."""
    if target == "host":
        import tvm

        target = {"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu()}
    if target == "llvm":
        target = {"kind": "llvm"}
    if isinstance(target, dict) and target.get("kind") == "llvm" and "num-cores" not in target:
        target = {**target, "num-cores": threads or os.cpu_count() or 1}
    return target


def module_key(
    *,
    model_sha256: str,
    db_sha256: str | None,
    tvm_version: str,
    target: dict[str, Any] | str,
    opt_level: int,
    batch: int,
) -> str:
    """The compiled-module cache key: everything that changes the compiled code."""
    doc = {
        "format": CACHE_FORMAT,
        "model": model_sha256,
        "db": db_sha256,
        "tvm": tvm_version,
        "target": target,
        "opt_level": opt_level,
        "batch": batch,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def unpack_database(path: Path, work_dir: Path, *, sha256: str | None = None) -> tuple[Path, Path]:
    """The two JSON-lines files of a MetaSchedule database from repro's one-file form; with
    `sha256`, the bytes read are checked against the pin first."""

    data = read_verified(path, sha256, what="tuning database") if sha256 else path.read_bytes()
    doc = json.loads(data)
    if doc.get("format") != "repro.tvm-meta-schedule-db/v1":
        raise ValueError(f"{path}: not a repro MetaSchedule database")
    workload = work_dir / "database_workload.json"
    records = work_dir / "database_tuning_record.json"
    workload.write_text(doc["workload"])
    records.write_text(doc["tuning_record"])
    return workload, records


def pack_database(work_dir: Path, out: Path, meta: dict[str, Any]) -> None:
    """MetaSchedule's JSON database folder as one deterministic file (an artifact)."""
    doc = {
        "format": "repro.tvm-meta-schedule-db/v1",
        "meta": meta,
        "workload": (work_dir / "database_workload.json").read_text(),
        "tuning_record": (work_dir / "database_tuning_record.json").read_text(),
    }
    out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")


@dataclass(frozen=True)
class OnnxModel:
    """An ONNX model read once: the proto, its first real input and its output names."""

    proto: Any
    input_name: str
    dims: list[int | str]  # symbolic dimensions by name
    outputs: list[str]

    @classmethod
    def read(cls, model: Path) -> OnnxModel:
        import onnx

        return cls.from_proto(onnx.load(str(model)))

    @classmethod
    def from_bytes(cls, data: bytes) -> OnnxModel:
        """The model parsed from bytes already in memory (the worker's verified bytes)."""
        import onnx

        return cls.from_proto(onnx.load_from_string(data))

    @classmethod
    def from_proto(cls, proto: Any) -> OnnxModel:
        graph = proto.graph
        inits = {i.name for i in graph.initializer}
        inp = next(i for i in graph.input if i.name not in inits)
        dims: list[int | str] = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or "N")
            for d in inp.type.tensor_type.shape.dim
        ]
        return cls(proto, inp.name, dims, [o.name for o in graph.output])

    def shape(self, batch: int) -> list[int]:
        """The input shape with every symbolic dimension set to `batch`."""
        return [batch if isinstance(d, str) else d for d in self.dims]

    def to_relax(self, batch: int, input_name: str | None = None) -> Any:
        from tvm.relax.frontend.onnx import from_onnx

        return from_onnx(self.proto, shape_dict={input_name or self.input_name: self.shape(batch)})


def prepare_for_tuning(mod: Any, target: Any) -> Any:
    """Legalize and fuse as `compile_relax` does before it applies a database, so that the
    tuned workloads are the ones compilation later looks up."""
    import tvm
    from tvm import relax
    from tvm.relax import pipeline

    try:
        dispatch = list(pipeline.library_dispatch_passes(target))
    except (ValueError, AttributeError):
        dispatch = []
    seq = tvm.transform.Sequential(
        [
            *dispatch,
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
    )
    with tvm.transform.PassContext(opt_level=3):
        return seq(mod)


class TvmEngine:
    """Compiles (or loads from the cache) one module per batch size, runs it with the VM."""

    name: ClassVar[str] = "tvm"

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}
        self.vms: dict[int, Any] = {}
        self.libs: dict[int, Any] = {}
        self.max_batch = 1

    def load(
        self,
        model: Path,
        options: TvmOptions,
        *,
        runtime: Mapping[str, Any],
        input_name: str | None,
        output_name: str | None,
        model_bytes: bytes | None = None,
    ) -> None:
        """Compile (or load from the cache) the model from `model_bytes` (the worker's verified
        bytes) or else `model`."""
        rt = TvmRuntime.model_validate(runtime)
        threads = options.threads
        if threads:
            # Read by TVM's thread pool when it starts: set before the first import of tvm.
            os.environ["TVM_NUM_THREADS"] = str(threads)
        import tvm

        onnx_model = (
            OnnxModel.from_bytes(model_bytes) if model_bytes is not None else OnnxModel.read(model)
        )
        inputs = [i.name for i in onnx_model.proto.graph.input]
        check_io_names(inputs, onnx_model.outputs, input_name, output_name)
        self.input_name = input_name or onnx_model.input_name
        self.output_index = onnx_model.outputs.index(output_name) if output_name else 0
        target = target_dict(options.target, threads=threads)
        db_path = rt.tuning_database_path
        db_sha = rt.tuning_database_sha256
        self.max_batch = rt.batch_size
        cache = Path(rt.cache_dir or tempfile.gettempdir()) / COMPILE_CACHE
        cache.mkdir(parents=True, exist_ok=True)
        compile_s: dict[str, float] = {}
        cached: dict[str, bool] = {}
        for batch in sorted({1, self.max_batch}):
            key = module_key(
                model_sha256=rt.model_sha256,
                db_sha256=db_sha,
                tvm_version=tvm.__version__,
                target=target,
                opt_level=options.opt_level,
                batch=batch,
            )
            lib_path = cache / f"{key}.so"
            t = time.perf_counter()
            if not lib_path.is_file():
                exe = self._compile(
                    onnx_model.to_relax(batch, self.input_name),
                    target,
                    options.opt_level,
                    Path(db_path) if db_path else None,
                    db_sha,
                )
                with atomic_path(lib_path, suffix=".so") as tmp:
                    exe.export_library(str(tmp))
                cached[str(batch)] = False
            else:
                cached[str(batch)] = True
            lib = tvm.runtime.load_module(str(lib_path))
            self.libs[batch] = lib
            self.vms[batch] = tvm.relax.VirtualMachine(lib, tvm.cpu())
            compile_s[str(batch)] = round(time.perf_counter() - t, 3)
        if not db_path:
            print(
                "repro: WARNING: TVM module is UNTUNED (no MetaSchedule database): expect it "
                "to be ~90x slower than onnxruntime on a CPU; `repro tune SPEC` makes one",
                file=sys.stderr,
            )
        libinfo = {k: str(v) for k, v in dict(tvm.support.libinfo()).items()}
        self.info = {
            "name": self.name,
            "version": tvm.__version__,
            "tvm_ffi_version": _version("apache-tvm-ffi"),
            "target": target,
            "host_cpu": tvm.target.codegen.llvm_get_system_cpu(),
            "options": {
                **options.model_dump(mode="json"),
                "model_sha256": rt.model_sha256,
                "tuning_database_sha256": db_sha,
                "batch_size": rt.batch_size,
            },
            "tuned": bool(db_path),
            "tuning_database_sha256": db_sha,
            "compile_or_load_s": compile_s,
            "module_cache_hit": cached,
            "libinfo": libinfo,
            "dnnl": libinfo.get("USE_DNNL", "OFF") not in ("OFF", "", "NOT-FOUND"),
            "dnnl_note": "this TVM build has no DNNL/oneDNN inside (apache-tvm wheels on PyPI "
            "do not); a Spack build with +dnnl provides it"
            if libinfo.get("USE_DNNL", "OFF") in ("OFF", "", "NOT-FOUND")
            else "DNNL built in",
            "input_name": self.input_name,
            "output_index": self.output_index,
        }

    @staticmethod
    def _compile(
        mod: Any,
        target: dict[str, Any] | str,
        opt_level: int,
        db_path: Path | None,
        db_sha256: str | None = None,
    ) -> Any:
        import tvm

        tgt = tvm.target.Target(target)
        if db_path is None:
            with tvm.transform.PassContext(opt_level=opt_level):
                return tvm.compile(mod, target=tgt)
        from tvm.s_tir import meta_schedule as ms
        from tvm.s_tir.meta_schedule.relax_integration import compile_relax

        with tempfile.TemporaryDirectory() as work:
            workload, records = unpack_database(db_path, Path(work), sha256=db_sha256)
            database = ms.database.JSONDatabase(str(workload), str(records))
            with tvm.transform.PassContext(opt_level=opt_level):
                exe = compile_relax(database, mod, tgt, params=None)
        return exe

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return run_batches(self.vms, self.max_batch, self.output_index, batch)

    def profiler(self, out_dir: Path) -> TvmProfiler:
        """VMs of the same compiled modules with an instrument that times every call."""
        return TvmProfiler(self.libs, self.max_batch, self.output_index, out_dir)

    def describe(self) -> dict[str, Any]:
        return self.info


def run_batches(
    vms: Mapping[int, Any], max_batch: int, output_index: int, batch: np.ndarray
) -> np.ndarray:
    """Outputs of `batch` on the VMs compiled for batch 1 and `max_batch`: larger batches are
    split, smaller ones padded."""
    n = batch.shape[0]
    if n == 1 or n == max_batch:
        return _run(vms[n], output_index, batch)
    if n > max_batch:
        return np.concatenate(
            [
                run_batches(vms, max_batch, output_index, batch[i : i + max_batch])
                for i in range(0, n, max_batch)
            ]
        )
    padded = np.zeros((max_batch, *batch.shape[1:]), dtype=batch.dtype)
    padded[:n] = batch
    return _run(vms[max_batch], output_index, padded)[:n]


def _run(vm: Any, output_index: int, batch: np.ndarray) -> np.ndarray:
    import tvm

    out = vm["main"](tvm.runtime.tensor(np.ascontiguousarray(batch)))
    if isinstance(out, tvm.runtime.Tensor):
        return np.asarray(out.numpy())
    return np.asarray(out[output_index].numpy())


# The kind of a compiled kernel from the Relax operators fused into it, so that it lines up with
# another backend's layer: see repro.profiles.diff.
#: heaviest first: a fused kernel takes the kind of the first of these it contains
_TVM_KINDS = (
    ("conv", ("conv1d", "conv2d", "conv3d", "conv")),
    ("matmul", ("matmul", "dense", "gemm")),
    ("pool", ("pool",)),
    ("softmax", ("softmax",)),
    ("norm", ("layer_norm", "batch_norm", "group_norm", "rms_norm")),
    ("reduce", ("mean", "sum", "prod")),
    ("argmax", ("argmax",)),
    ("concat", ("concat",)),
    ("transpose", ("transpose",)),
    ("reshape", ("reshape", "squeeze", "expand_dims", "flatten")),
    ("relu", ("relu",)),
    ("add", ("add",)),
    ("multiply", ("multiply",)),
)

_TRAILING_INDEX = re.compile(r"\d+$")


def tvm_op_type(symbol: str) -> str:
    """A TVM kernel's operators: `fused_conv2d_add_relu3` -> `conv2d_add_relu`."""
    name = symbol.removeprefix("fused_")
    return _TRAILING_INDEX.sub("", name) or name


def tvm_kind(op_type: str) -> str:
    """The kind of a TVM kernel from its operators (`conv2d_add_relu` -> `conv`)."""
    for kind, words in _TVM_KINDS:
        if any(w in op_type for w in words):
            return kind
    return op_type


#: the raw record of a TVM profile in the profile folder
TVM_TRACE = "tvm_calls.json"


class TvmProfiler:
    """The Relax VM's instrument (`VirtualMachine.set_instrument`, TVM 0.27 has no `profile`
    method): called before and after every Call instruction, it records each compiled kernel's
    wall time. VM built-ins (allocation, shape matching) are not layers: their time is the
    inference time outside the layers. The instrument's own Python call (~0.5 us a call) is
    inside the measured times; the overhead measurement says how much."""

    source = "TVM Relax VM instrument (VirtualMachine.set_instrument)"

    def __init__(self, libs: Mapping[int, Any], max_batch: int, output_index: int, out_dir: Path):
        import tvm

        self.out_dir = out_dir
        self.max_batch = max_batch
        self.output_index = output_index
        self.records: list[tuple[str, int, int, int | None]] = []
        clock = time.time_ns
        record = self.records.append
        started: list[int] = []

        def instrument(func: Any, symbol: str, before_run: bool, ret: Any, *args: Any) -> int:
            if before_run:
                started.append(clock())
                return 0  # VMInstrumentReturnKind.NO_OP
            t1 = clock()
            t0 = started.pop()
            name = str(symbol)
            if name.startswith("vm.builtin."):
                return 0  # allocation, shape matching: the VM's time, outside the layers
            # a kernel writes into its last argument (destination-passing style)
            shape = getattr(args[-1], "shape", None) if args else None
            record((name, t0, t1 - t0, int(np.prod(shape)) if shape is not None else None))
            return 0

        self.vms = {}
        for batch, lib in libs.items():
            vm = tvm.relax.VirtualMachine(lib, tvm.cpu())
            vm.set_instrument(instrument)
            self.vms[batch] = vm

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return run_batches(self.vms, self.max_batch, self.output_index, batch)

    def finish(self) -> tuple[list[LayerCall], str | None]:
        raw = self.out_dir / TVM_TRACE
        raw.write_text(json.dumps({"format": "repro.tvm-calls/v1", "calls": self.records}) + "\n")
        calls = [
            LayerCall(
                name=symbol,
                op_type=tvm_op_type(symbol),
                kind=tvm_kind(tvm_op_type(symbol)),
                start_ns=t0,
                dur_ns=dur,
                out_elems=elems,
            )
            for symbol, t0, dur, elems in self.records
        ]
        return calls, TVM_TRACE


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
