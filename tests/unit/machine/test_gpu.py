"""The GPU through NVML, with a fake pynvml: facts in the fingerprint, drift ranked, another GPU
model is other hardware, energy per sample, and a refused permission said clearly."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from repro.compare.envdiff import diff_views, view_from_fingerprint
from repro.machine import fingerprint, gpu
from repro.runs.alignment import hardware_compared, hardware_differences, known_hardware
from tests.fakes_nvml import FakeNvml


def test_the_gpus_facts_with_the_uuid_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "torch_versions", lambda: {"torch": "2.11.0", "cuda": "13.0"})
    facts = gpu.collect(FakeNvml())
    assert facts is not None
    assert (facts["driver"], facts["cuda_driver"], facts["count"]) == ("580.65", "13.0", 1)
    dev = facts["devices"]["0"]
    assert dev["name"] == "NVIDIA H200"
    assert dev["uuid_sha256"] == hashlib.sha256(b"GPU-secret-0").hexdigest()
    assert "GPU-secret" not in str(facts)
    assert (dev["sm_clock_max_mhz"], dev["mem_clock_max_mhz"]) == (1980, 3201)
    assert (dev["power_limit_w"], dev["persistence_mode"], dev["ecc_mode"]) == (700, 1, 1)
    assert dev["mig_mode"] is None  # not supported: unknown, not guessed
    assert (dev["pcie_gen"], dev["pcie_width"]) == (5, 16)
    assert dev["now"]["temperature_c"] == 41
    assert facts["torch"] == {"torch": "2.11.0", "cuda": "13.0"}


def test_no_permission_is_recorded_in_the_fingerprint_and_fails_a_gpu_run() -> None:
    facts = gpu.collect(FakeNvml(refuse=True))
    assert facts is not None
    assert "NVML refused access" in facts["nvml_error"]
    with pytest.raises(gpu.NvmlAccessError, match="NVML refused access") as exc:
        gpu.EnergyMeter.for_device("cuda:0", FakeNvml(refuse=True))
    assert exc.value.exit_code == 3
    assert exc.value.hint is not None
    assert "nvidia-ml-py" in exc.value.hint


_COLLECT = gpu.collect


def _fingerprint(monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml) -> dict[str, Any]:
    monkeypatch.setattr(gpu, "torch_versions", lambda: None)
    monkeypatch.setattr(fingerprint, "_gpus", lambda: None)
    monkeypatch.setattr(fingerprint.gpu, "collect", lambda: _COLLECT(nvml))
    return fingerprint.collect()


def test_a_driver_or_clock_change_ranks_high_and_another_model_is_other_hardware(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = _fingerprint(monkeypatch, FakeNvml())
    b = _fingerprint(monkeypatch, FakeNvml(driver="575.10", sm_max=1500))
    assert a["hardware"]["gpu_models"] == ["NVIDIA H200"]
    changes = {c.key: c for c in diff_views(view_from_fingerprint(a), view_from_fingerprint(b))}
    assert changes["nvml.driver"].level == "high"
    assert changes["nvml.devices.0.sm_clock_max_mhz"].level == "high"
    assert hardware_differences(a, b) == []  # same GPU model: the same hardware, drifted
    c = _fingerprint(monkeypatch, FakeNvml(name="NVIDIA A100-SXM4-80GB"))
    assert hardware_differences(a, c) == ["GPU models: NVIDIA H200 vs NVIDIA A100-SXM4-80GB"]


def test_energy_per_sample_from_the_counter() -> None:
    nvml = FakeNvml()
    meter = gpu.EnergyMeter.for_device("cuda:0", nvml)
    assert meter is not None
    meter.start()
    nvml.energy_mj += 50_000  # 50 J
    energy = meter.stop(samples=100)
    assert energy is not None
    assert energy["joules"] == 50.0
    assert energy["joules_per_sample"] == 0.5
    assert energy["average_watts"] is not None
    assert energy["average_watts"] > 0


def test_energy_is_absent_on_the_cpu_or_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gpu.EnergyMeter.for_device("cpu", FakeNvml()) is None
    monkeypatch.setattr(gpu, "load_nvml", lambda module=None: None)
    assert gpu.EnergyMeter.for_device("cuda:0") is None


def test_an_older_fingerprint_compares_on_its_gpus_names() -> None:
    """Before `gpu_models`, a fingerprint had only nvidia-smi's rows (`hardware.gpus`): their
    names stand in for the models, so an older run is still told apart by its GPUs."""
    old_h200 = {"hardware": {"gpus": [{"name": "NVIDIA H200", "driver": "570.1"}]}}
    old_a100 = {"hardware": {"gpus": [{"name": "NVIDIA A100-SXM4-80GB"}]}}
    new_h200 = {"hardware": {"gpu_models": ["NVIDIA H200"], "gpus": [{"name": "NVIDIA H200"}]}}
    assert hardware_differences(old_h200, new_h200) == []
    assert hardware_differences(old_h200, old_a100) == [
        "GPU models: NVIDIA H200 vs NVIDIA A100-SXM4-80GB"
    ]
    assert hardware_differences(old_a100, new_h200) == [
        "GPU models: NVIDIA A100-SXM4-80GB vs NVIDIA H200"
    ]
    assert known_hardware(old_h200) == ["GPU models"]
    assert hardware_compared(old_h200, new_h200)
    assert not hardware_compared(old_h200, {"hardware": {"gpus": []}})


def test_a_published_gpu_system_against_a_machine_without_one_names_both() -> None:
    """8x H200 against this CPU-only machine was never said: a probed machine without a GPU
    was "unknown" where it is "none"."""
    from repro.mlperf.tree import fingerprint_from_system
    from tests.helpers import FINGERPRINT

    h200 = fingerprint_from_system(
        {
            "host_processor_model_name": "Test CPU",
            "accelerator_model_name": "NVIDIA H200",
            "accelerators_per_node": "8",
        }
    )
    cpu_only = fingerprint_from_system(
        {
            "host_processor_model_name": "Test CPU",
            "accelerator_model_name": "N/A",
            "accelerators_per_node": "0",
        }
    )
    assert hardware_differences(h200, FINGERPRINT) == ["accelerators: 8x NVIDIA H200 vs none"]
    assert hardware_differences(FINGERPRINT, h200) == ["accelerators: none vs 8x NVIDIA H200"]
    assert hardware_differences(cpu_only, FINGERPRINT) == []
    unknown = fingerprint_from_system({"host_processor_model_name": "Test CPU"})
    assert hardware_differences(unknown, FINGERPRINT) == []  # not said: not known
