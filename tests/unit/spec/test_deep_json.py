"""Deeply nested JSON is bad input (exit 2, the file named), never a RecursionError (exit 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.jsonio import read_json
from repro.spec.io import MAX_SPEC_DEPTH, parse_spec

TOO_DEEP = "[" * 200_000 + "]" * 200_000


def _nested(levels: int) -> Any:
    """A value of `levels` nested objects (0: a plain number)."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def _valid_spec(data_dir: Path) -> dict[str, Any]:
    """The valid example spec, made to stand anywhere: absolute artifact path, no id."""
    src = data_dir / "specs" / "valid-digits.json"
    raw: dict[str, Any] = json.loads(src.read_text())
    raw.pop("id")
    model = raw["artifacts"]["model"]
    model["path"] = str((src.parent / model["path"]).resolve())
    return raw


def _tvm_spec(data_dir: Path, target_levels: int) -> dict[str, Any]:
    """A valid spec whose TVM target (any JSON) nests `target_levels` objects.

    The target sits 3 levels down ($.backend.options.target), so the document nests
    3 + target_levels levels of objects.
    """
    raw = _valid_spec(data_dir)
    raw["backend"] = {"name": "tvm", "options": {"target": _nested(target_levels)}}
    return raw


def _validate(path: Path) -> Any:
    return CliRunner().invoke(cli, ["validate", str(path)])


def test_read_json_names_the_file_of_json_too_deep_to_parse(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(TOO_DEEP)
    with pytest.raises(SpecError, match="JSON nested too deeply") as info:
        read_json(path)
    assert info.value.message.startswith(f"{path}: ")
    assert info.value.hint


@pytest.mark.parametrize("text", [TOO_DEEP, '{"a": ' * 100_000 + "1" + "}" * 100_000])
def test_validate_exits_2_naming_the_file_of_json_too_deep_to_parse(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(text)
    result = _validate(path)
    assert result.exit_code == 2, result.output
    assert f"{path}: JSON nested too deeply" in result.stderr
    assert "internal error" not in result.stderr


def test_validate_exits_2_on_parseable_json_nested_too_deep_for_a_spec(
    tmp_path: Path, data_dir: Path
) -> None:
    # NOTE: json.loads reads it, but pydantic refuses to serialize it (for the spec id)
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(_tvm_spec(data_dir, 300)))
    result = _validate(path)
    assert result.exit_code == 2, result.output
    assert f"{path}: JSON nested too deeply: $.backend.options.target.a" in result.stderr
    assert f"more than {MAX_SPEC_DEPTH} levels" in result.stderr
    assert "internal error" not in result.stderr


def test_nesting_up_to_the_limit_is_a_valid_spec(tmp_path: Path, data_dir: Path) -> None:
    ok, deep = tmp_path / "ok.json", tmp_path / "deep.json"
    ok.write_text(json.dumps(_tvm_spec(data_dir, MAX_SPEC_DEPTH - 3)))
    deep.write_text(json.dumps(_tvm_spec(data_dir, MAX_SPEC_DEPTH - 2)))
    assert _validate(ok).exit_code == 0, _validate(ok).output
    result = _validate(deep)
    assert result.exit_code == 2, result.output
    assert "JSON nested too deeply" in result.stderr


def test_deep_arrays_count_as_levels_too() -> None:
    raw = {"schema": "repro.experiment/v1", "tags": json.loads("[" * 100 + "]" * 100)}
    with pytest.raises(SpecError, match=r"^src: JSON nested too deeply: \$\.tags\[0\]\[0\]"):
        parse_spec(raw, source="src")


def test_recursion_while_validating_is_a_spec_error(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    def recurse(raw: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("repro.spec.io.ExperimentSpec.model_validate", recurse)
    with pytest.raises(SpecError, match=r"^src\.json: JSON nested too deeply to validate"):
        parse_spec(_valid_spec(data_dir), source="src.json")
