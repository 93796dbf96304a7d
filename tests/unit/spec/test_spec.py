"""The spec models: ids, defaults, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.errors import SpecError
from repro.spec.io import dump_spec, load_spec, parse_spec, spec_id, with_id, write_spec


def _raw(root: Path) -> dict:
    return json.loads((root / "specs" / "ort-digits.json").read_text())


def test_id_is_sha256_of_canonical_json_and_stable(root: Path) -> None:
    spec = parse_spec(_raw(root), source="x")
    assert spec_id(spec) == spec_id(parse_spec(_raw(root), source="y"))
    assert len(spec_id(spec)) == 64


def test_explicit_defaults_give_the_same_id(root: Path) -> None:
    raw = _raw(root)
    explicit = json.loads(json.dumps(raw))
    explicit["workload"]["inputs_key"] = "inputs"  # the default, written out
    explicit["hardware"] = {}
    assert spec_id(parse_spec(raw, source="a")) == spec_id(parse_spec(explicit, source="b"))


def test_id_changes_with_what_runs_but_not_with_the_observed_original(root: Path) -> None:
    raw = _raw(root)
    base = spec_id(parse_spec(raw, source="a"))
    observed = dict(raw, original={"path": "x", "metrics": {"Offline": {"samples_per_second": 1}}})
    assert spec_id(parse_spec(observed, source="b")) == base
    changed = json.loads(json.dumps(raw))
    changed["workload"]["batch_size"] = 16
    assert spec_id(parse_spec(changed, source="c")) != base


def test_write_then_load_round_trips_with_id(root: Path, tmp_path: Path) -> None:
    spec = parse_spec(_raw(root), source="x")
    written = write_spec(spec, tmp_path / "s.json")
    loaded = load_spec(tmp_path / "s.json")
    assert loaded == written
    assert loaded.id == spec_id(spec)
    assert dump_spec(loaded) == (tmp_path / "s.json").read_text()


def test_edited_spec_with_old_id_is_refused(root: Path, tmp_path: Path) -> None:
    spec = with_id(parse_spec(_raw(root), source="x"))
    data = json.loads(dump_spec(spec))
    data["workload"]["batch_size"] = 3
    (tmp_path / "s.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match=r"\$\.id"):
        load_spec(tmp_path / "s.json")
