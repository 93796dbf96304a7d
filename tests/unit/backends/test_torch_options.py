"""The torch backend's settings: refused before anything runs, naming the setting; a device
that is not there is never replaced by the CPU (device counts faked)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from repro.backends.torch import TorchBackend, TorchOptions
from repro.errors import SpecError


def test_fp16_on_the_cpu_is_refused_by_the_spec() -> None:
    with pytest.raises(ValidationError, match=r'precision "fp16" needs a GPU'):
        TorchBackend.model_validate(
            {"name": "torch", "options": {"device": "cpu", "precision": "fp16"}}
        )


@pytest.mark.parametrize("device", ["gpu", "cuda", "cuda:-1", "cuda:01", "CPU", "mps"])
def test_a_device_outside_cpu_or_cuda_n_is_refused(device: str) -> None:
    with pytest.raises(ValidationError, match="device"):
        TorchOptions.model_validate({"device": device})


def test_a_refused_device_is_said_in_words_not_only_as_a_pattern(root: Path) -> None:
    # `"device": "gpu"` was answered with the regular expression alone
    from repro.spec.io import parse_spec
    from tests.helpers import portable_spec

    raw = portable_spec(root, "torch-resnet50")
    raw["backend"]["options"]["device"] = "gpu"
    with pytest.raises(SpecError, match=r'accepted: "cpu" or "cuda:N"'):
        parse_spec(raw, source="spec.json")


def test_the_defaults_are_eager_fp32_on_the_cpu() -> None:
    opts = TorchOptions()
    assert (opts.device, opts.precision, opts.mode) == ("cpu", "fp32", "eager")


def _cuda(count: int, *, bf16: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        is_available=lambda: count > 0,
        device_count=lambda: count,
        is_bf16_supported=lambda: bf16,
        get_device_name=lambda i: "Fake GPU",
    )


def test_cuda_3_on_a_one_gpu_machine_names_the_device() -> None:
    engine = pytest.importorskip("repro.backends.torch.engine", reason="torch is not installed")
    with pytest.raises(
        SpecError,
        match=r"\$\.backend\.options\.device: 'cuda:3', but this "
        r"machine has 1 CUDA device \(cuda:0 to cuda:0\)",
    ):
        engine.resolve_device(TorchOptions(device="cuda:3"), cuda=_cuda(1))
    assert str(engine.resolve_device(TorchOptions(device="cuda:0"), cuda=_cuda(1))) == "cuda:0"


def test_cuda_without_a_gpu_fails_instead_of_falling_back() -> None:
    engine = pytest.importorskip("repro.backends.torch.engine", reason="torch is not installed")
    with pytest.raises(SpecError, match=r"sees no CUDA device.*nothing falls back to the CPU"):
        engine.resolve_device(TorchOptions(device="cuda:0"), cuda=_cuda(0))


def test_bf16_on_a_gpu_without_it_names_the_precision() -> None:
    engine = pytest.importorskip("repro.backends.torch.engine", reason="torch is not installed")
    with pytest.raises(SpecError, match=r"\$\.backend\.options\.precision: \"bf16\""):
        engine.resolve_device(
            TorchOptions(device="cuda:0", precision="bf16"), cuda=_cuda(1, bf16=False)
        )
