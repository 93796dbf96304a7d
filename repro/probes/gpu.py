"""The GPU probe: a pinned fp16 matrix product and a device-to-device copy on the experiment's
GPU (torch, CUDA events), and the GPU's state from NVML (clocks, temperature, power, throttle
reasons).

It runs in the orchestrator, beside the CPU kernels, before the first test and after each one,
for a backend whose device is `cuda:N` (`BackendPlugin.device`). Each kernel runs for
GPU_WINDOW_S (at least GPU_MIN_RUNS runs, after GPU_WARM_UP_RUNS unmeasured ones), each run
timed by a pair of CUDA events around it on the device's current stream; the figure is the
best run's (a probe reads low when disturbed, never high), the median is kept too. About 0.3 s
a probe on an H200 by the arithmetic (0.1 s a kernel plus the warm-up); not measured on a GPU
here (no GPU was lent to the session that wrote it).

Where torch in the orchestrator's interpreter has no CUDA, or not the device, the figures are
absent (never zero) and the probe says why (`gpu.unmeasured`): a GPU run is then not adjusted
for the machine at all, rather than by the CPU kernels (`repro.stats.speed_adjust.speed_key`).

NVML's device index is taken to be CUDA's, as `repro.machine.gpu.EnergyMeter` takes it (true
unless CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER reorders them).
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from repro.machine import gpu as nvml_facts

#: the matrix product: N x N by N x N in GPU_MATMUL_DTYPE (2 N^3 flops a run: 1.1 TFLOP, a
#: few ms on an H200's tensor cores)
GPU_MATMUL_N: Final = 8192
GPU_MATMUL_DTYPE: Final = "float16"
#: the copy: a buffer of this many bytes copied to another on the same device (read + write
#: counted, as the CPU memory probe counts them)
GPU_COPY_BYTES: Final = 512 * 2**20
#: each kernel runs this long (at least GPU_MIN_RUNS runs)
GPU_WINDOW_S: Final = 0.1
GPU_MIN_RUNS: Final = 5
GPU_WARM_UP_RUNS: Final = 2


def matmul_tflops(n: int, seconds: float) -> float:
    """TFLOP/s of one n x n by n x n product that took `seconds` (2 n^3 flops)."""
    return 2 * n**3 / seconds / 1e12


def copy_gbps(nbytes: int, seconds: float) -> float:
    """GB/s of a copy of `nbytes` that took `seconds` (each byte read and written)."""
    return 2 * nbytes / seconds / 1e9


def time_kernel(
    torch: ModuleType, fn: Callable[[], object], *, min_runs: int, window_s: float
) -> list[float]:
    """Seconds of each run of `fn`, each between two CUDA events: `min_runs` runs, more until
    `window_s` has passed."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < window_s:
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)  # ms
    return times


def _tensor_device(index: int) -> str:
    """Where the probe's tensors live (tests on a CPU build put them on the CPU)."""
    return f"cuda:{index}"


class GpuProbe:
    """The kernels on one GPU, built on first use and kept for the replay."""

    def __init__(
        self,
        index: int,
        *,
        torch: ModuleType,
        nvml: ModuleType | None = None,
        n: int = GPU_MATMUL_N,
        copy_bytes: int = GPU_COPY_BYTES,
        window_s: float = GPU_WINDOW_S,
        min_runs: int = GPU_MIN_RUNS,
    ) -> None:
        self.index = index
        self.torch = torch
        self.nvml = nvml
        self.n, self.copy_bytes = n, copy_bytes
        self.window_s, self.min_runs = window_s, min_runs
        self._tensors: dict[str, Any] = {}

    def _build(self) -> None:
        torch = self.torch
        torch.cuda.set_device(self.index)
        device = _tensor_device(self.index)
        gen = torch.Generator(device=device).manual_seed(20261130)
        dtype = getattr(torch, GPU_MATMUL_DTYPE)
        shape = (self.n, self.n)
        self._tensors = {
            "a": torch.randn(shape, generator=gen, device=device, dtype=dtype),
            "b": torch.randn(shape, generator=gen, device=device, dtype=dtype),
            "c": torch.empty(shape, device=device, dtype=dtype),
            "src": torch.ones(self.copy_bytes, device=device, dtype=torch.uint8),
            "dst": torch.empty(self.copy_bytes, device=device, dtype=torch.uint8),
        }

    def _matmul(self) -> None:
        t = self._tensors
        self.torch.matmul(t["a"], t["b"], out=t["c"])

    def _copy(self) -> None:
        t = self._tensors
        t["dst"].copy_(t["src"])

    def measure(self) -> dict[str, Any]:
        """The kernels' figures and the GPU's state, as the probe's `gpu_*` fields."""
        t0 = time.perf_counter()
        if not self._tensors:
            self._build()
        for _ in range(GPU_WARM_UP_RUNS):  # clocks up, kernels chosen
            self._matmul()
            self._copy()
        self.torch.cuda.synchronize(self.index)
        mm = time_kernel(self.torch, self._matmul, min_runs=self.min_runs, window_s=self.window_s)
        cp = time_kernel(self.torch, self._copy, min_runs=self.min_runs, window_s=self.window_s)
        info: dict[str, Any] = {
            "device": f"cuda:{self.index}",
            "matmul": f"{self.n}x{self.n} {GPU_MATMUL_DTYPE}",
            "matmul_runs": len(mm),
            "copy_bytes": self.copy_bytes,
            "copy_runs": len(cp),
        }
        if self.nvml is not None:
            info["state"] = nvml_facts.state(self.nvml, self.index)
        info["cost_s"] = round(time.perf_counter() - t0, 6)
        return {
            "gpu_matmul_tflops": matmul_tflops(self.n, min(mm)),
            "gpu_matmul_tflops_median": matmul_tflops(self.n, statistics.median(mm)),
            "gpu_copy_gbps": copy_gbps(self.copy_bytes, min(cp)),
            "gpu": info,
        }


class UnmeasuredGpu:
    """A GPU run whose GPU the orchestrator cannot probe: the figures are absent, and why."""

    def __init__(self, device: str, why: str) -> None:
        self.device, self.why = device, why

    def measure(self) -> dict[str, Any]:
        return {"gpu": {"device": self.device, "unmeasured": self.why}}


def gpu_probe_for(
    device: str, *, nvml: ModuleType | None = None
) -> GpuProbe | UnmeasuredGpu | None:
    """The probe of a backend's device: None on the CPU; a GpuProbe where torch in this
    interpreter has CUDA and the device; else an UnmeasuredGpu saying why. NVML (for the
    state) is optional; a refused permission raises `NvmlAccessError` (exit 3), as the
    worker's energy meter does."""
    if not device.startswith("cuda:"):
        return None
    index = int(device.split(":")[1])
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return UnmeasuredGpu(device, "torch is not installed in the orchestrator's interpreter")
    if not torch.cuda.is_available():
        return UnmeasuredGpu(device, f"torch {torch.__version__} here has no CUDA device")
    count = int(torch.cuda.device_count())
    if index >= count:
        return UnmeasuredGpu(device, f"torch here sees {count} CUDA device(s)")
    return GpuProbe(index, torch=torch, nvml=nvml_facts.load_nvml(nvml))
