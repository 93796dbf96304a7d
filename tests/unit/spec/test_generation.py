"""The generation task in the spec (schema v1, additive): what it needs, and the bad inputs
`repro validate` refuses with exit 2 naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.spec.io import parse_spec, spec_id

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "specs" / "torch-tinylm.json"


def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(SPEC.read_text())
    raw.pop("id", None)
    raw.pop("original", None)
    raw["environment"] = {"manager": "venv", "python": "3.11", "hashes_complete": False}
    return raw


def _validate(tmp_path: Path, raw: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(raw))
    result = CliRunner().invoke(cli, ["validate", str(path)])
    return result.exit_code, result.output + (result.stderr or "")


def _server(raw: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = next(
        s for s in raw["workload"]["scenarios"] if s["scenario"] == "Server"
    )["settings"]
    return settings


def test_the_reference_spec_is_a_generation_with_token_latencies() -> None:
    spec = parse_spec(_raw(), source=str(SPEC))
    assert spec.workload.task == "generation"
    assert spec.workload.generation is not None
    assert spec.workload.generation.max_new_tokens >= 1
    assert all(s.settings.use_token_latencies for s in spec.workload.scenarios)


def test_max_new_tokens_zero_is_refused_naming_the_field(tmp_path: Path) -> None:
    raw = _raw()
    raw["workload"]["generation"]["max_new_tokens"] = 0
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "$.workload.generation.max_new_tokens" in out


def test_a_server_without_token_latency_bounds_is_refused(tmp_path: Path) -> None:
    raw = _raw()
    server = _server(raw)
    del server["ttft_latency"], server["tpot_latency"]
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "ttft_latency" in out
    assert "tpot_latency" in out


def test_a_server_without_token_latencies_is_refused(tmp_path: Path) -> None:
    raw = _raw()
    server = _server(raw)
    for key in ("use_token_latencies", "ttft_latency", "tpot_latency"):
        del server[key]
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "settings.use_token_latencies" in out
    assert "ttft_latency" in out


def test_single_stream_is_not_a_generation_scenario(tmp_path: Path) -> None:
    raw = _raw()
    raw["workload"]["scenarios"].append(
        {"scenario": "SingleStream", "settings": {"single_stream_expected_latency_ns": 1000}}
    )
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "scenarios[" in out
    assert "Offline or Server" in out


def test_a_generation_needs_its_section_and_a_classification_refuses_it(tmp_path: Path) -> None:
    raw = _raw()
    del raw["workload"]["generation"]
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "generation" in out
    digits: dict[str, Any] = json.loads((ROOT / "specs" / "ort-digits.json").read_text())
    digits["workload"]["generation"] = {"max_new_tokens": 4}
    code, out = _validate(tmp_path, digits)
    assert code == 2
    assert "only for task" in out


def test_rouge_scores_generations_only(tmp_path: Path) -> None:
    raw = _raw()
    raw["workload"]["accuracy"] = {"metric": "rouge"}
    spec = parse_spec(raw, source="test")
    assert spec.workload.accuracy.references_key == "reference_texts"
    assert spec.workload.accuracy.vocabulary_key == "vocabulary"
    digits: dict[str, Any] = json.loads((ROOT / "specs" / "ort-digits.json").read_text())
    digits["workload"]["accuracy"] = {"metric": "rouge"}
    code, out = _validate(tmp_path, digits)
    assert code == 2
    assert "accuracy.metric" in out
    assert 'task "generation"' in out


def test_the_rouge_keys_are_part_of_the_id_only_under_rouge() -> None:
    raw = _raw()
    before = spec_id(parse_spec(raw, source="test"))
    raw["workload"]["accuracy"]["references_key"] = "other"
    assert spec_id(parse_spec(raw, source="test")) == before  # agreement does not read it
    raw["workload"]["accuracy"]["metric"] = "rouge"
    rouge = spec_id(parse_spec(raw, source="test"))
    raw["workload"]["accuracy"]["references_key"] = "reference_texts"
    assert spec_id(parse_spec(raw, source="test")) not in (before, rouge)


def test_a_backend_without_a_generative_engine_is_refused(tmp_path: Path) -> None:
    raw = _raw()
    raw["backend"] = {"name": "onnxruntime", "options": {}}
    code, out = _validate(tmp_path, raw)
    assert code == 2
    assert "$.backend.name" in out
    assert "torch" in out


@pytest.mark.parametrize(
    ("name", "before"),
    [
        ("ort-digits", "ba25d3dcd6b3"),
        ("ort-resnet50", "8bd6aae68cbe"),
        ("torch-resnet50", "23cc1555dba4"),  # its hashed lock (issue 36) changed it
        ("tvm-resnet50", "9ac8c66307c2"),
        ("torch-tinylm", "ca4c173dfad3"),  # before accuracy gained references_key
    ],
)
def test_earlier_specs_keep_their_ids(name: str, before: str) -> None:
    """A spec without a generation section has the id it had before v1 gained the field (the
    ids `repro validate` printed before the change)."""
    raw = json.loads((ROOT / "specs" / f"{name}.json").read_text())
    spec = parse_spec(raw, source=name)
    assert spec.workload.generation is None or name == "torch-tinylm"
    assert spec_id(spec).startswith(before)
