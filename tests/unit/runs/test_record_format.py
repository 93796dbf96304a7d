"""The run record's format is versioned a step per change: earlier formats load, a later one is
refused with the version that wrote it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.runs import layout
from repro.runs.record import FORMAT, FORMATS, RunRecord, inferred_format, record_digest
from repro.runs.store import load_run
from tests.helpers import make_run

ROOT = Path(__file__).resolve().parents[3]


def _rewrite(run: Path, **fields: object) -> Path:
    """The run's record with `fields` changed, its digest made to match (as a later repro
    would write it)."""
    path = layout.record_file(run)
    raw = json.loads(path.read_text()) | fields
    raw["record_sha256"] = record_digest(raw)
    path.write_text(json.dumps(raw))
    return path


def test_the_format_history_has_a_step_for_every_version() -> None:
    assert sorted(FORMATS) == list(range(1, FORMAT + 1))


def test_a_new_record_is_written_with_the_current_format() -> None:
    record = RunRecord(
        run_id="r",
        spec_name="s",
        spec_id="a" * 64,
        spec_path="s.json",
        status="complete",
        started_utc="2026-12-06T00:00:00+00:00",
        repro_version="0",
    )
    written = json.loads(record.dump())
    assert written["format"] == FORMAT
    assert RunRecord.model_validate(written).format == FORMAT


def test_every_shipped_record_loads_with_the_format_its_fields_show() -> None:
    shipped = subprocess.run(
        ["git", "ls-files", "results/*/run.json", "results/*/*/run.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert shipped, "no shipped run records"
    for rel in shipped:
        path = ROOT / rel
        raw = json.loads(path.read_text())
        record = load_run(path.parent)
        assert record.format == raw.get("format", inferred_format(raw)), rel
        assert 2 <= record.format <= FORMAT, rel


def test_a_record_of_before_the_format_field_gets_the_format_of_its_fields() -> None:
    assert inferred_format({"schema": "repro.run/v1"}) == 1
    assert inferred_format({"schema": "repro.run/v2", "tests": []}) == 2
    assert inferred_format({"schema": "repro.run/v2", "parts": [{}]}) == 3
    assert inferred_format({"schema": "repro.run/v2", "record_sha256": "0" * 64}) == 4
    changed = {"tests": [{"changed_settings": {"offline_expected_qps": {}}}]}
    assert inferred_format({"schema": "repro.run/v2"} | changed) == 5
    assert inferred_format({"schema": "repro.run/v2", "tests": [{"cpus": [1]}]}) == 6


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"format": FORMAT + 1}, f"format {FORMAT + 1}"),
        ({"schema": "repro.run/v3"}, "schema 'repro.run/v3'"),
    ],
)
def test_a_record_of_a_later_format_is_refused_with_the_repro_that_wrote_it(
    tmp_path: Path, fields: dict[str, object], said: str
) -> None:
    run = make_run(tmp_path / "run", throughput=[100.0])
    path = _rewrite(run, repro_version="9.0.0", **fields)
    with pytest.raises(SpecError) as caught:
        load_run(run)
    text = str(caught.value)
    assert str(path) in text
    assert said in text
    assert "repro 9.0.0" in text
    assert f"reads formats up to {FORMAT}" in text
    assert "at least as new" in (caught.value.hint or "")
