"""A fake pynvml: the NVML calls repro makes, for one or more fake GPUs (fingerprint, energy,
power sampling and GPU probe tests)."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any


class FakeNvml(ModuleType):
    """pynvml's calls that repro makes, for one or more fake GPUs."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_ERROR_NO_PERMISSION = 4

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(f"NVML error {value}")
            self.value = value

    def __init__(
        self,
        *,
        name: str = "NVIDIA H200",
        driver: str = "580.65",
        count: int = 1,
        sm_max: int = 1980,
        refuse: bool = False,
    ) -> None:
        super().__init__("pynvml")
        self.name, self.driver, self.count, self.sm_max = name, driver, count, sm_max
        self.refuse = refuse
        self.energy_mj = 1_000_000
        self.power_mw = 120_000
        self.power_reads = 0

    def nvmlInit(self) -> None:
        if self.refuse:
            raise self.NVMLError(self.NVML_ERROR_NO_PERMISSION)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 13000

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return self.name.encode()

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-secret-{h}"

    def nvmlDeviceGetVbiosVersion(self, h: int) -> str:
        return "96.00.AF.00.01"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=150_000_000_000)

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return self.sm_max if kind == 1 else 3201

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return 1755 if kind == 1 else 3201

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> int:
        return 700_000

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return 1

    def nvmlDeviceGetEccMode(self, h: int) -> tuple[int, int]:
        return (1, 1)

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:
        raise self.NVMLError(3)  # not supported: recorded as None

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 41

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        self.power_reads += 1
        return self.power_mw

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return self.energy_mj
