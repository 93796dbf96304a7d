"""The worker loads the model and the data set from bytes it read once and checked by sha256."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from repro.artifacts.cache import read_verified
from repro.backends import registry
from repro.backends.onnxruntime import OnnxRuntimePlugin
from repro.errors import ArtifactError
from repro.harness.dataset import npz_array_from_bytes
from repro.harness.request import WorkerRequest, WorkerResult
from repro.harness.worker import load_backend, load_dataset, main
from repro.npz import write_npz
from repro.runs.layout import WORKER_RESULT
from repro.spec.io import parse_spec
from repro.spec.models import LoadGenSettings
from tests.helpers import portable_spec


class RecordingEngine:
    """Keeps what the worker handed it: the path and the bytes."""

    name: ClassVar[str] = "recording"
    loaded: ClassVar[list[tuple[Path, bytes | None]]] = []

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
        RecordingEngine.loaded.append((model, model_bytes))

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return np.zeros(len(batch), dtype=np.int64)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class RecordingPlugin(OnnxRuntimePlugin):
    """The onnxruntime section of a spec, served by the RecordingEngine."""

    engine = "tests.unit.harness.test_worker_integrity:RecordingEngine"


@pytest.fixture(autouse=True)
def _recording_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", RecordingPlugin())
    RecordingEngine.loaded.clear()
    yield
    RecordingEngine.loaded.clear()


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file opened (by pathlib, zipfile, numpy or plain open); a test clears it after
    its setup."""
    seen: list[str] = []
    real = io.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | Path):
            seen.append(str(Path(file).resolve()))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    return seen


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _request(root: Path, tmp_path: Path) -> WorkerRequest:
    """A digits request whose model is a copy of the committed one and whose data set is a
    small .npz of our own, each with its real digest."""
    model = tmp_path / "model.onnx"
    shutil.copyfile(root / "artifacts" / "digits-mlp.onnx", model)
    dataset = tmp_path / "data.npz"
    write_npz(dataset, {"inputs": np.arange(12, dtype=np.float32).reshape(3, 4)})
    raw = portable_spec(root, "ort-digits")
    spec = parse_spec(raw, source="ort-digits.json")
    req = WorkerRequest.from_spec(
        spec,
        spec_id="t",
        scenario="Offline",
        mode="performance",
        settings=LoadGenSettings(),
        artifacts={"model": model, "dataset": dataset},
        cache_root=tmp_path / "cache",
        output_dir=tmp_path / "out",
    )
    return req.model_copy(update={"dataset_sha256": _sha(dataset.read_bytes())})


def test_request_carries_the_specs_pinned_digests(root: Path, tmp_path: Path) -> None:
    raw = portable_spec(root, "ort-digits")
    req = _request(root, tmp_path)
    assert req.model_sha256 == raw["artifacts"]["model"]["sha256"]
    assert req.model_sha256 == _sha((root / "artifacts" / "digits-mlp.onnx").read_bytes())
    assert "dataset_sha256" in WorkerRequest.model_json_schema()["required"]


def test_read_verified_returns_the_bytes_of_one_read(tmp_path: Path, opened: list[str]) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"weights")
    opened.clear()
    assert read_verified(path, _sha(b"weights"), what="model") == b"weights"
    assert opened.count(str(path.resolve())) == 1


def test_read_verified_refuses_other_bytes_naming_both_digests(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"tampered")
    pinned = _sha(b"weights")
    with pytest.raises(ArtifactError) as info:
        read_verified(path, pinned, what="model")
    msg = info.value.message
    assert "model" in msg
    assert str(path) in msg
    assert pinned in msg
    assert _sha(b"tampered") in msg
    assert info.value.hint is not None
    assert f"rm -f {path}" in info.value.hint


def test_engine_gets_the_verified_bytes_and_the_model_is_read_once(
    root: Path, tmp_path: Path, opened: list[str]
) -> None:
    req = _request(root, tmp_path)
    opened.clear()
    load_backend(req)
    ((path, data),) = RecordingEngine.loaded
    assert path == Path(req.model_path)
    assert data == (root / "artifacts" / "digits-mlp.onnx").read_bytes()
    assert opened.count(str(Path(req.model_path).resolve())) == 1


def test_a_rewritten_model_never_reaches_the_engine(root: Path, tmp_path: Path) -> None:
    req = _request(root, tmp_path)
    Path(req.model_path).write_bytes(b"not the pinned model")
    with pytest.raises(ArtifactError) as info:
        load_backend(req)
    assert req.model_sha256 in info.value.message
    assert _sha(b"not the pinned model") in info.value.message
    assert RecordingEngine.loaded == []


def test_dataset_is_read_once_and_served_from_memory(
    root: Path, tmp_path: Path, opened: list[str]
) -> None:
    req = _request(root, tmp_path)
    opened.clear()
    source = load_dataset(req)
    np.testing.assert_array_equal(source, np.arange(12, dtype=np.float32).reshape(3, 4))
    assert not isinstance(source, np.memmap)
    assert opened.count(str(Path(req.dataset_path).resolve())) == 1


def test_a_rewritten_dataset_is_refused(root: Path, tmp_path: Path) -> None:
    req = _request(root, tmp_path)
    write_npz(Path(req.dataset_path), {"inputs": np.ones((3, 4), dtype=np.float32)})
    got = _sha(Path(req.dataset_path).read_bytes())
    with pytest.raises(ArtifactError) as info:
        load_dataset(req)
    msg = info.value.message
    assert msg.startswith(f"dataset {req.dataset_path}:")
    assert req.dataset_sha256 in msg
    assert got in msg


def test_npz_from_bytes_reads_stored_compressed_and_fortran_arrays(tmp_path: Path) -> None:
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    buf = io.BytesIO()
    np.savez_compressed(buf, packed=a, fortran=np.asfortranarray(a))
    np.testing.assert_array_equal(npz_array_from_bytes(buf.getvalue(), "packed", name="x"), a)
    np.testing.assert_array_equal(npz_array_from_bytes(buf.getvalue(), "fortran", name="x"), a)
    stored = tmp_path / "s.npz"
    np.savez(stored, fortran=np.asfortranarray(a))
    view = npz_array_from_bytes(stored.read_bytes(), "fortran", name="s.npz")
    np.testing.assert_array_equal(view, a)
    assert not view.flags.writeable
    with zipfile.ZipFile(stored) as zf:
        assert zf.getinfo("fortran.npy").compress_type == zipfile.ZIP_STORED


def test_npz_from_bytes_names_the_arrays_it_has() -> None:
    buf = io.BytesIO()
    np.savez(buf, inputs=np.zeros(2))
    with pytest.raises(KeyError, match=r"data\.npz has no array 'labels'.*inputs"):
        npz_array_from_bytes(buf.getvalue(), "labels", name="data.npz")


def test_worker_fails_with_exit_3_and_a_failed_result_naming_the_digests(
    root: Path, tmp_path: Path
) -> None:
    req = _request(root, tmp_path)
    Path(req.model_path).write_bytes(b"rewritten during the replay")
    request = tmp_path / "request.json"
    request.write_text(req.model_dump_json())
    assert main([str(request)]) == 3
    result = WorkerResult.model_validate(
        json.loads((Path(req.output_dir) / WORKER_RESULT).read_text())
    )
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith(f"ArtifactError: model {req.model_path}: sha256 mismatch")
    assert req.model_sha256 in result.error
    assert _sha(b"rewritten during the replay") in result.error
    assert "repro fetch" in result.error
