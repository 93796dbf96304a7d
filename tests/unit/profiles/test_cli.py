"""`repro profile` refusals that cost nothing: checked before any environment is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.profiles.model import read_profile


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "run.json", "is not a trace repro wrote"),
        (lambda d: d, "is a directory"),
        (lambda d: d / "missing" / "t.json", "does not exist"),
    ],
)
def test_trace_paths_that_would_lose_data_are_refused_first(
    make: object, message: str, tmp_path: Path, root: Path
) -> None:
    (tmp_path / "run.json").write_text('{"schema": "repro.run/v2"}')
    target = make(tmp_path)  # type: ignore[operator]
    result = CliRunner().invoke(
        cli, ["profile", str(root / "specs" / "ort-digits.json"), "--trace", str(target)]
    )
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert (tmp_path / "run.json").read_text() == '{"schema": "repro.run/v2"}'


def test_profile_samples_without_profile_is_a_usage_error(root: Path) -> None:
    result = CliRunner().invoke(
        cli, ["replay", str(root / "specs" / "ort-digits.json"), "--profile-samples", "8"]
    )
    assert result.exit_code == 2
    assert "--profile-samples needs --profile" in result.stderr


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("inference_ns", 10**400, "$.inference_ns"),
        ("samples", 0, "$.samples"),
        ("scenario", "Bogus", "$.scenario"),
    ],
)
def test_a_tampered_profile_is_refused_with_the_field(
    field: str, value: object, where: str, tmp_path: Path
) -> None:
    doc = {
        "schema": "repro.profile/v1",
        "backend": "onnxruntime",
        "profiler": "p",
        "scenario": "SingleStream",
        "queries": 1,
        "inferences": 1,
        "samples": 1,
        "inference_ns": 1000,
        "layers_ns": 900,
        "outside_ns": 100,
        "rows": [],
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    read_profile(path)  # the untouched document reads
    doc[field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=rf"\{where}"):
        read_profile(path)
