"""The published JSON Schema: committed, current, and accepting every shipped spec."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.spec.schema import COMMITTED_PATH, json_schema, schema_text

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted((ROOT / "specs").glob("*.json")) + sorted(
    (ROOT / "tests" / "data" / "specs").glob("valid-*.json")
)


def test_committed_schema_is_current(root: Path) -> None:
    committed = (root / COMMITTED_PATH).read_text()
    assert committed == schema_text(), "stale schema: run `repro schema > " + COMMITTED_PATH + "`"


def test_repro_schema_prints_the_committed_schema(root: Path) -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    assert result.stdout == (root / COMMITTED_PATH).read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_specs_validate_against_the_schema(path: Path) -> None:
    jsonschema.Draft202012Validator(json_schema()).validate(json.loads(path.read_text()))


def test_schema_rejects_an_unknown_field() -> None:
    raw = json.loads((ROOT / "specs" / "ort-digits.json").read_text())
    raw["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(json_schema()).validate(raw)


def test_committed_report_schema_is_current(root: Path) -> None:
    from repro.reports.model import REPORT_SCHEMA_PATH, report_schema_text

    assert (root / REPORT_SCHEMA_PATH).read_text() == report_schema_text()


def test_a_report_validates_against_its_schema(tmp_path: Path) -> None:
    from repro.reports.model import report_schema_text
    from tests.helpers import make_run

    make_run(tmp_path / "r" / "original", throughput=[100, 101])
    make_run(tmp_path / "r" / "b", throughput=[100, 99])
    result = CliRunner().invoke(
        cli, ["report", "--compare", str(tmp_path / "r"), "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    jsonschema.Draft202012Validator(json.loads(report_schema_text())).validate(report)
