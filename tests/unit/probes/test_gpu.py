"""The GPU probe: its arithmetic, its orchestration on a CPU build of torch whose CUDA device
functions are faked (events that report scripted times), NVML's state from a fake pynvml, and
its figures absent (never zero) where there is no GPU."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from repro.probes import ProbeSet
from repro.probes import gpu as gpu_probes
from repro.probes.gpu import GpuProbe, UnmeasuredGpu, copy_gbps, gpu_probe_for, matmul_tflops
from tests.fakes_nvml import FakeNvml


def test_the_arithmetic() -> None:
    # an 8192^3 fp16 product (1.0995 TFLOP) in 2 ms: 549.8 TFLOP/s
    assert matmul_tflops(8192, 0.002) == pytest.approx(2 * 8192**3 / 0.002 / 1e12)
    assert matmul_tflops(8192, 0.002) == pytest.approx(549.76, abs=0.01)
    # 512 MiB read and written in 0.25 ms: 4295 GB/s
    assert copy_gbps(512 * 2**20, 0.25e-3) == pytest.approx(4294.97, abs=0.01)


class FakeEvent:
    """A CUDA event whose elapsed time is the next of a script (ms)."""

    script: Iterator[float] = iter(())

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing

    def record(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return next(FakeEvent.script)


def test_a_kernel_is_timed_by_cuda_events_best_of_its_runs() -> None:
    torch = SimpleNamespace(cuda=SimpleNamespace(Event=FakeEvent))
    FakeEvent.script = iter([3.0, 2.0, 2.5, 4.0])
    calls: list[int] = []
    times = gpu_probes.time_kernel(
        torch,  # type: ignore[arg-type]
        lambda: calls.append(1),
        min_runs=4,
        window_s=0.0,
    )
    assert times == [0.003, 0.002, 0.0025, 0.004]
    assert len(calls) == 4


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The CPU build of torch with its CUDA device functions faked: one device, tensors on the
    CPU, every kernel run timed at 2 ms by its events."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda index=None: None)
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(gpu_probes, "_tensor_device", lambda index: "cpu")

    def forever() -> Iterator[float]:
        while True:
            yield 2.0

    FakeEvent.script = forever()
    return torch


def test_a_gpu_run_s_probe_has_the_gpu_s_figures_and_state(fake_cuda: ModuleType) -> None:
    nvml = FakeNvml()
    source = gpu_probe_for("cuda:0", nvml=nvml)
    assert isinstance(source, GpuProbe)
    source.n, source.copy_bytes = 256, 4096  # a small kernel: the CPU runs it
    probe = ProbeSet(1, gpu=source).measure(repeats=3).as_dict()
    assert probe["gpu_matmul_tflops"] == pytest.approx(matmul_tflops(256, 0.002), rel=1e-3)
    assert probe["gpu_copy_gbps"] == pytest.approx(copy_gbps(4096, 0.002), rel=1e-4)
    info = probe["gpu"]
    assert info["device"] == "cuda:0"
    assert info["matmul"] == "256x256 float16"
    assert info["matmul_runs"] >= gpu_probes.GPU_MIN_RUNS
    state = info["state"]
    assert (state["sm_clock_mhz"], state["mem_clock_mhz"]) == (1755, 3201)
    assert (state["temperature_c"], state["throttle_reasons"]) == (41, 0)
    assert state["power_w"] == 120.0
    assert probe["compute_gflops"] > 0  # the CPU kernels still run beside it


def test_the_state_is_left_out_without_nvml(fake_cuda: ModuleType) -> None:
    source = GpuProbe(0, torch=fake_cuda, nvml=None, n=32, copy_bytes=1024, window_s=0.0)
    fields = source.measure()
    assert "state" not in fields["gpu"]
    assert fields["gpu_matmul_tflops"] > 0


def test_a_device_torch_does_not_see_is_unmeasured(fake_cuda: ModuleType) -> None:
    source = gpu_probe_for("cuda:3", nvml=FakeNvml())
    assert isinstance(source, UnmeasuredGpu)
    assert source.measure() == {
        "gpu": {"device": "cuda:3", "unmeasured": "torch here sees 1 CUDA device(s)"}
    }


def test_no_gpu_figures_on_the_cpu_or_without_cuda() -> None:
    assert gpu_probe_for("cpu") is None
    cpu = ProbeSet(1).measure(repeats=3).as_dict()
    assert not [k for k in cpu if k.startswith("gpu")]  # absent, never zero
    pytest.importorskip("torch")
    source = gpu_probe_for("cuda:0", nvml=FakeNvml())
    assert isinstance(source, UnmeasuredGpu)  # this machine's torch is a CPU build
    probe: dict[str, Any] = ProbeSet(1, gpu=source).measure(repeats=3).as_dict()
    assert "gpu_matmul_tflops" not in probe
    assert "gpu_copy_gbps" not in probe
    assert "no CUDA device" in probe["gpu"]["unmeasured"]
