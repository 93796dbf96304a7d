"""What `repro profile` prints for a person: its notes before the table, not inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.cli.profile_cmd import print_profile
from repro.profiles.model import LayerRow, Profile


def test_notes_come_before_the_tables_header(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    row = LayerRow.model_validate(
        {
            "name": "/fc1/MatMul",
            "op_type": "MatMul",
            "kind": "matmul",
            "position": 0,
            "calls": 4,
            "total_ns": 4000,
            "median_ns": 1000,
            "per_sample_ns": 125.0,
            "share": 0.5,
        }
    )
    prof = Profile(
        backend="onnxruntime",
        profiler="onnxruntime session profiler",
        scenario="Offline",
        queries=1,
        inferences=4,
        samples=32,
        inference_ns=8000,
        layers_ns=4000,
        outside_ns=4000,
        rows=[row],
        notes=["the first inference was left out (warm-up)"],
    )
    print_profile(prof, tmp_path, top=5)
    out = capsys.readouterr().out.splitlines()
    header = next(k for k, line in enumerate(out) if "share" in line and "layer" in line)
    note = next(k for k, line in enumerate(out) if line.startswith("note:"))
    assert note < header
    assert out[header + 1].strip().startswith("50.0%")
    assert out[0].startswith("Offline: 4 inferences (32 samples in all)")
