"""The demo's last line: one next command that fits the machine the demo ran on."""

from __future__ import annotations

from repro.cli.demo_next import next_step

SPEC = "specs/ort-digits.json"


def test_other_hardware_points_to_an_original_of_this_machine() -> None:
    speed = {
        "verdict": "not comparable: different hardware",
        "different_hardware": ["CPU: Intel Xeon vs AMD EPYC"],
    }
    said = next_step(speed, {"verdict": "reproduced"}, SPEC)
    assert "CPU: Intel Xeon vs AMD EPYC" in said
    assert f"repro capture --from {SPEC} --force" in said


def test_an_undecided_a_a_points_to_what_decides_it() -> None:
    said = next_step({"verdict": "reproduced"}, {"verdict": "inconclusive"}, SPEC)
    assert "quieter machine" in said


def test_all_decided_points_to_a_model_of_ones_own() -> None:
    said = next_step({"verdict": "reproduced"}, {"verdict": "reproduced"}, SPEC)
    assert "repro capture" in said
    assert "bring-your-own-model" in said
    assert next_step(None, None, SPEC) == said  # reports missing: the same, never a traceback
