"""Which probe figure is the speed index: the large kernel only where every probe has it."""

from __future__ import annotations

from typing import Any

import pytest

from repro.reports.fmt import SPEED_INDEX_NAMES
from repro.stats import speed_adjust as machine
from repro.stats.speed_adjust import PROBE_REL_ERROR, SPEED_KEYS, speed_key

V1 = {"compute_gflops": 150.0}
V2 = {"compute_gflops": 150.0, "compute_large_gflops": 300.0}


@pytest.mark.parametrize(
    ("probes", "want"),
    [
        ([V2, V2, None], "compute_large_gflops"),  # a missing probe is left out
        ([V2, V1, V2], "compute_gflops"),  # one v1 probe: both sides by the small kernel
        ([], "compute_gflops"),
        ([None, None], "compute_gflops"),
        ([V2, {**V2, "compute_large_gflops": 0.0}], "compute_gflops"),
        ([V2, {**V2, "compute_large_gflops": True}], "compute_gflops"),
        ([V2, {**V2, "compute_large_gflops": None}], "compute_gflops"),
    ],
)
def test_the_large_kernel_only_where_every_probe_has_it(
    probes: list[dict[str, Any] | None], want: str
) -> None:
    assert speed_key(probes) == want


def test_a_test_s_speed_is_the_mean_of_its_probes_with_their_error() -> None:
    before = {**V2, "compute_large_gflops": 290.0}
    after = {**V2, "compute_large_gflops": 310.0}
    speed = machine.test_speed(before, after, key="compute_large_gflops")
    assert speed is not None
    assert speed.index == pytest.approx(310.0)  # the faster: a probe only reads low by accident
    assert speed.rel_error == pytest.approx(10 / 300)
    small = machine.test_speed(before, after, key="compute_gflops")
    assert small is not None
    assert small.index == 150.0
    assert small.rel_error == PROBE_REL_ERROR  # identical probes: the floor
    assert machine.test_speed(V1, V2, key="compute_large_gflops") is None
    assert machine.test_speed(None, V2, key="compute_gflops") is None


def test_every_speed_index_has_a_name_in_reports() -> None:
    assert set(SPEED_INDEX_NAMES) == set(SPEED_KEYS)


GPU = {**V2, "gpu_matmul_tflops": 600.0, "gpu": {"device": "cuda:0"}}
UNPROBED_GPU = {**V2, "gpu": {"device": "cuda:0", "unmeasured": "torch here has no CUDA"}}


@pytest.mark.parametrize(
    ("probes", "want"),
    [
        ([GPU, GPU], "gpu_matmul_tflops"),
        # a GPU run is adjusted by its GPU or not at all: never by the CPU kernels
        ([GPU, UNPROBED_GPU], "gpu_matmul_tflops"),
        ([UNPROBED_GPU], "gpu_matmul_tflops"),
        ([V2, {**V2, "gpu_matmul_tflops": 600.0}], "compute_large_gflops"),  # no GPU run
    ],
)
def test_a_gpu_run_is_measured_by_its_gpu(probes: list[dict[str, Any]], want: str) -> None:
    assert speed_key(probes) == want
    if want == "gpu_matmul_tflops" and UNPROBED_GPU in probes:
        assert machine.test_speed(UNPROBED_GPU, UNPROBED_GPU, key=want) is None
