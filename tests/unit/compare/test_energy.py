"""Energy per sample: power sampled during a test, the metrics a test records, the report's
verdict with its own tolerance, "not measured" where a side has none, and the sweep's
objective."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.machine import gpu
from repro.spec.io import spec_id
from repro.spec.models import ExperimentSpec
from repro.spec.types import ENERGY_REL_DEFAULT, Tolerances
from repro.sweep import METRICS, Objective
from tests.fakes_nvml import FakeNvml
from tests.helpers import make_run

BASE = [100.0, 101.0, 99.0, 100.5, 99.5]
JOULES = [3.00, 3.02, 2.98, 3.01, 2.99]


def test_power_is_sampled_during_the_test() -> None:
    nvml = FakeNvml()
    meter = gpu.EnergyMeter.for_device("cuda:0", nvml)
    assert meter is not None
    meter.start()
    assert meter._sampler is not None
    meter._sampler.watts.append(300.0)  # a reading the thread took at full load
    nvml.energy_mj += 50_000
    energy = meter.stop(samples=100, queries=25)
    assert energy is not None
    assert energy["power_max_w"] == 300.0
    assert 120.0 < energy["power_mean_w"] < 300.0
    assert energy["power_samples"] >= 3  # at start, the one above, at stop
    assert energy["power_hz"] == gpu.POWER_HZ
    assert energy["joules_per_query"] == 2.0
    assert gpu.energy_metrics(energy) == {
        "energy_per_sample_j": 0.5,
        "energy_per_query_j": 2.0,
        "power_w": energy["power_mean_w"],
    }


def test_no_energy_no_metrics() -> None:
    assert gpu.energy_metrics(None) == {}
    assert gpu.energy_metrics({"joules_per_sample": None}) == {}


def _report(tmp_path: Path) -> tuple[int, dict[str, Any]]:
    sides = [str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")]
    result = CliRunner().invoke(cli, ["report", "-o", str(tmp_path / "out"), "--compare", *sides])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads((tmp_path / "out" / "report.json").read_text())


def _energy_row(data: dict[str, Any]) -> dict[str, Any]:
    scenario = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    return next(m for m in scenario["metrics"] if m["metric"] == "energy_per_sample_j")


@pytest.mark.parametrize(
    ("factor", "tolerances", "verdict"),
    [
        (1.0, None, "reproduced"),
        (1.07, None, "reproduced"),  # inside the energy's default 10 %
        (1.07, {"energy_rel": 0.02}, "not reproduced"),  # its own tolerance, not throughput's
        (1.25, None, "not reproduced"),
    ],
)
def test_energy_is_judged_with_its_own_tolerance(
    tmp_path: Path, factor: float, tolerances: dict[str, float] | None, verdict: str
) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, energy=JOULES)
    make_run(
        tmp_path / "r" / "replay",
        throughput=BASE,
        seed=2,
        energy=[j * factor for j in JOULES],
        tolerances=tolerances,
    )
    _, data = _report(tmp_path)
    row = _energy_row(data)
    assert row["judged"] is True
    assert row["tolerance"] == (tolerances or {}).get("energy_rel", ENERGY_REL_DEFAULT)
    assert row["verdict"] == verdict
    assert row.get("adjusted") is None  # the probes measure speed, not power


def test_a_side_without_energy_says_not_measured_and_is_not_judged(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, energy=JOULES)
    make_run(tmp_path / "r" / "replay", throughput=BASE, seed=2)
    code, data = _report(tmp_path)
    row = _energy_row(data)
    assert row["replay_value"] == "not measured"
    assert row["judged"] is False
    assert "not measured on the replay" in row["reason"]
    assert code == 0  # the rest reproduced; a missing figure is no failure and no zero
    assert "not measured" in (tmp_path / "out" / "report.md").read_text()


def test_no_energy_on_either_side_has_no_row(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1)
    make_run(tmp_path / "r" / "replay", throughput=BASE, seed=2)
    _, data = _report(tmp_path)
    scenario = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    assert not [m for m in scenario["metrics"] if m["metric"].startswith("energy")]


def test_the_sweep_minimizes_energy() -> None:
    objective = Objective.parse("min:Offline.energy")
    assert (objective.maximize, objective.scenario, objective.metric) == (
        False,
        "Offline",
        "energy",
    )
    assert METRICS["energy"] == "energy_per_sample_j"


def test_the_energy_tolerance_unset_leaves_every_spec_id_as_it_was() -> None:
    raw = json.loads((Path("specs") / "ort-digits.json").read_text())
    spec = ExperimentSpec.model_validate(raw)
    assert spec_id(spec) == raw["id"]
    raw["tolerances"] = {**raw.get("tolerances", {}), "energy_rel": 0.2}
    assert spec_id(ExperimentSpec.model_validate(raw)) != raw["id"]
    assert Tolerances(energy_rel=0.2).energy == 0.2
    assert Tolerances().energy == ENERGY_REL_DEFAULT
