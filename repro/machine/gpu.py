"""The GPUs through NVML (`nvidia-ml-py`, `import pynvml`; optional): facts and energy.

Facts go into the fingerprint (`hardware.nvml`): model, UUID (as a sha256, like every other
identifier repro records), driver and CUDA driver versions, VBIOS, memory, SM and memory clocks
(current and max), power limit, persistence, ECC and MIG modes, PCIe generation and width, and
torch's CUDA/cuDNN versions where torch is installed. A fact NVML cannot give is None. Without
pynvml, or without a GPU, the section is absent; where NVML refuses access, the fingerprint
says so (`nvml_error`) and a GPU run fails (`NvmlAccessError`, exit 3) instead of going on
without its GPU's facts.

Energy: `EnergyMeter` reads NVML's total-energy counter (mJ since the driver loaded) at the
start and end of a LoadGen test and gives joules and average watts; a `PowerSampler` thread
polls NVML's power reading at POWER_HZ meanwhile (mean and max W). `energy_metrics` turns a
test's energy into the metrics the report judges (`energy_per_sample_j`, ...).
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import time
from types import ModuleType
from typing import Any

from repro.errors import EnvironmentSetupError


class NvmlAccessError(EnvironmentSetupError):
    """NVML is installed and a GPU is there, but NVML refuses to read it (permission)."""


def load_nvml(module: ModuleType | None = None) -> ModuleType | None:
    """pynvml, initialized; None where it is not installed or no driver answers. `module`
    stands in for pynvml (tests). A refused permission raises NvmlAccessError."""
    if module is None:
        try:
            module = importlib.import_module("pynvml")
        except ImportError:
            return None
    try:
        module.nvmlInit()
    except module.NVMLError as exc:
        if _no_permission(module, exc):
            raise NvmlAccessError(
                f"NVML refused access to the GPU ({exc}): the GPU's facts and energy cannot be "
                "read",
                hint="run as a user who may read the GPU (`nvidia-smi -q` works for them), or "
                "uninstall nvidia-ml-py to run without the GPU's facts and energy figures",
            ) from None
        return None  # no driver, no GPU: nothing to read
    return module


def _no_permission(nvml: ModuleType, exc: Exception) -> bool:
    code = getattr(exc, "value", None)
    return code == getattr(nvml, "NVML_ERROR_NO_PERMISSION", 4)


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _safe(nvml: ModuleType, fn: str, *args: Any) -> Any:
    """One NVML call; None where the GPU does not support it (or the binding lacks it)."""
    call = getattr(nvml, fn, None)
    if call is None:
        return None
    try:
        return _text(call(*args))
    except nvml.NVMLError as exc:
        if _no_permission(nvml, exc):
            raise NvmlAccessError(
                f"NVML refused {fn} ({exc})",
                hint="run as a user who may read the GPU, or uninstall nvidia-ml-py",
            ) from None
        return None


def _mode(value: Any) -> Any:
    """(current, pending) modes as current; a bare value as it is."""
    return value[0] if isinstance(value, (tuple, list)) else value


def _cuda_version(value: Any) -> str | None:
    return None if value is None else f"{int(value) // 1000}.{int(value) % 1000 // 10}"


def device_facts(nvml: ModuleType, index: int) -> dict[str, Any]:
    """One GPU's facts (stable settings and, under `now`, its current clocks and state)."""
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    uuid = _safe(nvml, "nvmlDeviceGetUUID", h)
    memory = _safe(nvml, "nvmlDeviceGetMemoryInfo", h)
    sm, mem = getattr(nvml, "NVML_CLOCK_SM", 1), getattr(nvml, "NVML_CLOCK_MEM", 2)
    limit_mw = _safe(nvml, "nvmlDeviceGetPowerManagementLimit", h)
    return {
        "name": _safe(nvml, "nvmlDeviceGetName", h),
        "uuid_sha256": hashlib.sha256(uuid.encode()).hexdigest() if uuid else None,
        "vbios": _safe(nvml, "nvmlDeviceGetVbiosVersion", h),
        "memory_bytes": getattr(memory, "total", None),
        "sm_clock_max_mhz": _safe(nvml, "nvmlDeviceGetMaxClockInfo", h, sm),
        "mem_clock_max_mhz": _safe(nvml, "nvmlDeviceGetMaxClockInfo", h, mem),
        "power_limit_w": None if limit_mw is None else limit_mw / 1000,
        "persistence_mode": _safe(nvml, "nvmlDeviceGetPersistenceMode", h),
        "ecc_mode": _mode(_safe(nvml, "nvmlDeviceGetEccMode", h)),
        "mig_mode": _mode(_safe(nvml, "nvmlDeviceGetMigMode", h)),
        "pcie_gen": _safe(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", h),
        "pcie_width": _safe(nvml, "nvmlDeviceGetCurrPcieLinkWidth", h),
        "now": state(nvml, index),
    }


def state(nvml: ModuleType, index: int) -> dict[str, Any]:
    """A GPU's state now: clocks, temperature, power, throttle reasons (a bit mask)."""
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    sm, mem = getattr(nvml, "NVML_CLOCK_SM", 1), getattr(nvml, "NVML_CLOCK_MEM", 2)
    power_mw = _safe(nvml, "nvmlDeviceGetPowerUsage", h)
    reasons = _safe(nvml, "nvmlDeviceGetCurrentClocksEventReasons", h)
    if reasons is None:
        reasons = _safe(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
    return {
        "sm_clock_mhz": _safe(nvml, "nvmlDeviceGetClockInfo", h, sm),
        "mem_clock_mhz": _safe(nvml, "nvmlDeviceGetClockInfo", h, mem),
        "temperature_c": _safe(nvml, "nvmlDeviceGetTemperature", h, 0),
        "power_w": None if power_mw is None else power_mw / 1000,
        "throttle_reasons": reasons,
    }


def torch_versions() -> dict[str, Any] | None:
    """torch's own and its CUDA/cuDNN versions, where torch is installed (imports it)."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    cudnn = torch.backends.cudnn
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn.version() if cudnn.is_available() else None,
    }


def collect(module: ModuleType | None = None) -> dict[str, Any] | None:
    """The fingerprint's `hardware.nvml` section, or None without NVML or a GPU; a refused
    permission is recorded as `nvml_error` (the fingerprint never fails for it)."""
    try:
        nvml = load_nvml(module)
    except NvmlAccessError as exc:
        return {"nvml_error": exc.message}
    if nvml is None:
        return None
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if count == 0:
            return None
        return {
            "driver": _safe(nvml, "nvmlSystemGetDriverVersion"),
            "cuda_driver": _cuda_version(_safe(nvml, "nvmlSystemGetCudaDriverVersion_v2")),
            "count": count,
            "devices": {str(i): device_facts(nvml, i) for i in range(count)},
            "torch": torch_versions(),
        }
    except NvmlAccessError as exc:
        return {"nvml_error": exc.message}
    finally:
        _safe(nvml, "nvmlShutdown")


#: how often the power is sampled during a test (NVML updates it about every 20-100 ms)
POWER_HZ = 10.0


class PowerSampler:
    """NVML's power reading of one GPU, polled by a daemon thread from `start` to `stop`."""

    def __init__(self, nvml: ModuleType, handle: Any, *, hz: float = POWER_HZ) -> None:
        self.nvml, self.handle, self.period_s = nvml, handle, 1.0 / hz
        self.watts: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> None:
        mw = _safe(self.nvml, "nvmlDeviceGetPowerUsage", self.handle)
        if mw is not None:
            self.watts.append(float(mw) / 1000)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._read()

    def start(self) -> None:
        self._read()
        self._thread = threading.Thread(target=self._loop, name="repro-power", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        """mean and max W of the samples, and how many (none: the fields are absent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._read()
        if not self.watts:
            return {}
        return {
            "power_mean_w": round(sum(self.watts) / len(self.watts), 3),
            "power_max_w": round(max(self.watts), 3),
            "power_samples": len(self.watts),
            "power_hz": round(1.0 / self.period_s, 3),
        }


def energy_metrics(energy: dict[str, Any] | None) -> dict[str, float]:
    """The metrics of a test's energy, as the report compares them (`repro.compare.metrics`):
    joules per sample (per query too for SingleStream and MultiStream, as MLPerf gives their
    energy) and the average power. Empty without energy: absent, never zero."""
    if not energy or not energy.get("joules_per_sample"):
        return {}
    out = {"energy_per_sample_j": float(energy["joules_per_sample"])}
    if energy.get("joules_per_query"):
        out["energy_per_query_j"] = float(energy["joules_per_query"])
    watts = energy.get("power_mean_w") or energy.get("average_watts")
    if watts:
        out["power_w"] = float(watts)
    return out


class EnergyMeter:
    """NVML's total-energy counter of one GPU, read at the start and the end of a test."""

    def __init__(self, nvml: ModuleType, index: int) -> None:
        self.nvml = nvml
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.index = index
        self._start: tuple[float, int] | None = None
        self._sampler: PowerSampler | None = None

    @classmethod
    def for_device(cls, device: str, module: ModuleType | None = None) -> EnergyMeter | None:
        """The meter of `cuda:N`; None on the CPU or without NVML (the energy fields are then
        absent, never zero). A refused permission raises NvmlAccessError."""
        if not device.startswith("cuda"):
            return None
        nvml = load_nvml(module)
        if nvml is None:
            return None
        meter = cls(nvml, int(device.split(":")[1]))
        return meter if meter._read() is not None else None

    def _read(self) -> int | None:
        mj = _safe(self.nvml, "nvmlDeviceGetTotalEnergyConsumption", self.handle)
        return None if mj is None else int(mj)

    def start(self) -> None:
        mj = self._read()
        self._start = None if mj is None else (time.perf_counter(), int(mj))
        self._sampler = PowerSampler(self.nvml, self.handle)
        self._sampler.start()

    def stop(self, samples: int, queries: int | None = None) -> dict[str, Any] | None:
        """Joules, seconds, average watts, joules per sample (and per query) since `start`, and
        the sampled power's mean and max."""
        mj = self._read()
        power = self._sampler.stop() if self._sampler is not None else {}
        if self._start is None or mj is None:
            return None
        t0, mj0 = self._start
        seconds = time.perf_counter() - t0
        joules = (int(mj) - mj0) / 1000
        return {
            "device": f"cuda:{self.index}",
            "source": "nvmlDeviceGetTotalEnergyConsumption",
            "joules": round(joules, 3),
            "seconds": round(seconds, 6),
            "average_watts": round(joules / seconds, 3) if seconds > 0 else None,
            "samples": samples,
            "joules_per_sample": round(joules / samples, 6) if samples else None,
            **({"joules_per_query": round(joules / queries, 6)} if queries else {}),
            **power,
        }
