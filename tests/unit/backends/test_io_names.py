"""The workload's input and output names against a model's: one check, before and in the worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.backends.base import check_io_names, onnx_io_names
from repro.backends.registry import get_backend
from repro.errors import SpecError


def test_a_name_the_model_lacks_is_the_specs_error_naming_the_field() -> None:
    check_io_names(["input"], ["predictions"], "input", None)
    with pytest.raises(SpecError, match=r"\$\.workload\.output_name: 'p' is not an output"):
        check_io_names(["input"], ["predictions"], None, "p")


def test_the_backends_read_an_onnx_models_names_without_running_it(root: Path) -> None:
    model = root / "artifacts" / "digits-mlp.onnx"
    assert onnx_io_names(model) == (["input"], ["predictions", "logits"])
    for name in ("onnxruntime", "tvm"):
        assert get_backend(name).model_io_names(model) == (["input"], ["predictions", "logits"])


def test_a_file_that_is_not_onnx_is_named(tmp_path: Path) -> None:
    junk = tmp_path / "model.onnx"
    junk.write_bytes(b"\xff\x00 not a protobuf")
    with pytest.raises(SpecError, match=r"model\.onnx: not an ONNX model"):
        onnx_io_names(junk)
