"""Each malformed spec gets exit 2 and one message naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli

CASES = [
    ("bad-json-syntax.json", "invalid JSON at line"),
    ("bad-wrong-type.json", "$.workload.batch_size: Input should be a valid integer"),
    ("bad-unknown-field.json", "$.workload.bacth_size: unknown field; did you mean 'batch_size'?"),
    ("bad-missing-field.json", "$.workload.seeds: required field is missing"),
    ("bad-schema-version.json", "$.schema: unsupported schema version 'repro.experiment/v9'"),
    ("bad-sha256.json", "$.artifacts.dataset.sha256"),
    (
        "bad-negative-duration.json",
        "$.workload.scenarios[0].settings.min_duration_ms: "
        "Input should be greater than or equal to 0",
    ),
    (
        "bad-unknown-scenario.json",
        "$.workload.scenarios[1].scenario: Input should be 'SingleStream'",
    ),
    ("bad-two-sources.json", "$.artifacts.dataset: give exactly one source"),
    (
        "bad-foreign-setting.json",
        "$.workload.scenarios[3].settings.server_target_qps: "
        "does not apply to the Offline scenario",
    ),
    ("bad-missing-artifact-ref.json", "$.workload.model: names artifact 'weights'"),
    ("bad-missing-lock.json", "$.environment.python_lock.path: lock file nonexistent.lock"),
    ("bad-stale-id.json", "$.id: 1111"),
    ("bad-perf-count.json", "performance_sample_count must be <= total_sample_count"),
    # the model is at hand (a path artifact): its graph has no input 'pixels'
    ("bad-input-name.json", "$.workload.input_name: 'pixels' is not an input of the model"),
]


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_bad_spec_exits_2_with_file_and_field(data_dir: Path, name: str, expected: str) -> None:
    path = data_dir / "specs" / name
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert str(path) in result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_sha256_error_says_what_a_sha256_is(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(data_dir / "specs" / "bad-sha256.json")])
    assert "64 lowercase hex digits" in result.stderr


def test_valid_spec_exits_0(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(data_dir / "specs" / "valid-digits.json")])
    assert result.exit_code == 0, result.stderr
    assert "ok (ort-digits" in result.stdout


def test_several_specs_report_each_and_exit_2(data_dir: Path) -> None:
    specs = data_dir / "specs"
    result = CliRunner().invoke(
        cli, ["validate", str(specs / "valid-digits.json"), str(specs / "bad-sha256.json")]
    )
    assert result.exit_code == 2
    assert "1 of 2 spec(s) invalid" in result.stderr


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_fix_id_rewrites_a_stale_id(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    target.write_text((data_dir / "specs" / "bad-stale-id.json").read_text())
    # the spec's relative model path must still resolve: point it at the real file
    text = target.read_text().replace("../../../artifacts", str(data_dir.parents[1] / "artifacts"))
    target.write_text(text)
    assert CliRunner().invoke(cli, ["validate", "--fix-id", str(target)]).exit_code == 0
    assert CliRunner().invoke(cli, ["validate", str(target)]).exit_code == 0


def test_a_truncated_spec_says_so(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{"schema":')
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2
    assert "the file ends early: truncated?" in result.output


def test_a_field_of_another_kind_of_section_is_not_suggested_as_its_own_spelling(
    root: Path,
) -> None:
    # a nix environment switched to venv said "$.environment.flake_lock: unknown field; did you
    # mean 'flake_lock'?"
    from repro.errors import SpecError
    from repro.spec.io import parse_spec
    from tests.helpers import portable_spec

    raw = portable_spec(root, "ort-digits")
    raw["environment"]["manager"] = "venv"
    with pytest.raises(SpecError) as info:
        parse_spec(raw, source="spec.json")
    text = str(info.value)
    assert "did you mean 'flake_lock'" not in text
    assert "$.environment.flake_lock: unknown field in this section" in text


def test_fix_id_through_a_link_resolves_from_the_specs_own_folder(
    root: Path, tmp_path: Path
) -> None:
    """`--fix-id` through a link resolved the spec's relative paths from the link's folder
    (every lock "does not exist") and rewrote the id before failing."""
    import json
    import shutil

    project = tmp_path / "project"
    for rel in ("artifacts/digits-mlp.onnx", "nix/flake.lock"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, project / rel)
    shutil.copytree(root / "lockfiles" / "ort-digits", project / "lockfiles" / "ort-digits")
    spec = json.loads((root / "specs" / "ort-digits.json").read_text())
    spec["description"] = "edited: its id is stale"
    real = project / "specs" / "ort-digits.json"
    real.parent.mkdir()
    real.write_text(json.dumps(spec))
    link = tmp_path / "elsewhere" / "current.json"
    link.parent.mkdir()
    link.symlink_to(real)
    result = CliRunner().invoke(cli, ["validate", "--fix-id", str(link)])
    assert result.exit_code == 0, result.output
    assert "does not exist" not in result.output
    assert "id set to" in result.stderr
    assert link.is_symlink()  # written through the link, the link kept
    assert CliRunner().invoke(cli, ["validate", str(link)]).exit_code == 0

    broken = json.loads(real.read_text())
    broken["description"] = "edited again"
    broken["workload"]["model"] = "nope"
    real.write_text(json.dumps(broken))
    before = real.read_text()
    result = CliRunner().invoke(cli, ["validate", "--fix-id", str(link)])
    assert result.exit_code == 2
    assert "id not rewritten" in result.stderr
    assert real.read_text() == before
