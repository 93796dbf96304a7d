"""The submission's rules on synthetic inputs: truncation, compliance verification, the
rounds' rules, the structural check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.errors import SpecError, UsageError
from repro.mlperf.compliance_tests import verify_accuracy, verify_performance
from repro.mlperf.round_rules import (
    MEANINGFUL_FIELDS,
    SYSTEM_FIELDS,
    checker_model,
    default_round,
    round_of_loadgen,
    round_rules,
)
from repro.mlperf.submission_check import check_tree
from repro.mlperf.submission_runs import length_settings, round_spec
from repro.mlperf.submission_tree import SubmissionTree
from repro.mlperf.system_description import missing_fields, require_fields
from repro.mlperf.truncation import accuracy_text, truncate_log
from repro.runs.record import RunRecord, TestRecord
from repro.spec.io import load_spec


def _test(scenario: str, validity: str = "VALID", **metrics: float) -> TestRecord:
    return TestRecord(
        scenario=scenario,
        mode="performance",
        dir="d",
        status="valid",
        metrics={"validity": validity, **metrics},
    )


def test_an_accuracy_log_keeps_its_first_and_last_4096_bytes_and_the_full_hash(
    tmp_path: Path,
) -> None:
    src, dest = tmp_path / "log.json", tmp_path / "out.json"
    src.write_bytes(bytes(range(256)) * 100)
    digest = truncate_log(src, dest)
    data = dest.read_bytes()
    assert data == src.read_bytes()[:4096] + b"\n\n...\n\n" + src.read_bytes()[-4096:]
    import hashlib

    assert digest == hashlib.sha256(src.read_bytes()).hexdigest()
    src.write_bytes(b"[]\n")  # small logs stay whole
    truncate_log(src, dest)
    assert dest.read_bytes() == b"[]\n"


def test_compliance_performance_rules() -> None:
    ref = _test("Offline", samples_per_second=1000.0)
    assert "TEST PASS" in verify_performance(
        "TEST01", ref, _test("Offline", samples_per_second=1050.0)
    )
    assert "TEST FAIL" in verify_performance(
        "TEST01", ref, _test("Offline", samples_per_second=800.0)
    )
    # TEST04 repeats one sample: much faster means results are cached
    assert "TEST FAIL" in verify_performance(
        "TEST04", ref, _test("Offline", samples_per_second=1300.0)
    )
    assert "TEST PASS" in verify_performance(
        "TEST04", ref, _test("Offline", samples_per_second=700.0)
    )
    lat = _test("SingleStream", latency_p90_ns=1_000_000.0)
    assert "TEST FAIL" in verify_performance(
        "TEST04", lat, _test("SingleStream", latency_p90_ns=500_000.0)
    )
    # a µs-scale SingleStream gets the compliance scripts' 20 %
    tiny = _test("SingleStream", latency_p90_ns=10_000.0)
    assert "TEST PASS" in verify_performance(
        "TEST01", tiny, _test("SingleStream", latency_p90_ns=8_500.0)
    )
    invalid = _test("Offline", "INVALID", samples_per_second=1000.0)
    assert "TEST FAIL" in verify_performance("TEST01", ref, invalid)


def test_sampled_responses_must_equal_the_accuracy_runs(tmp_path: Path) -> None:
    acc, sampled = tmp_path / "acc.json", tmp_path / "s.json"
    acc.write_text(json.dumps([{"seq_id": i, "qsl_idx": i, "data": f"{i:02x}"} for i in range(10)]))
    sampled.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 3, "data": "03"}]))
    assert "TEST PASS" in verify_accuracy(sampled, acc)
    sampled.write_text(json.dumps([{"seq_id": 0, "qsl_idx": 3, "data": "ff"}]))
    assert "TEST FAIL" in verify_accuracy(sampled, acc)
    assert "TEST FAIL" in verify_accuracy(tmp_path / "missing.json", acc)


def test_accuracy_txt_ends_with_the_hash_line_the_tool_appends() -> None:
    assert accuracy_text("accuracy=76.000%, good=38, total=50", "ab12") == (
        "accuracy=76.000%, good=38, total=50\n\nhash=ab12\n"
    )
    assert accuracy_text("", "ab12") == "hash=ab12\n"


def test_each_round_has_its_seeds_layout_and_code_folder() -> None:
    v51, v60, v61 = round_rules("v5.1"), round_rules("6.0"), round_rules("v6.1")
    assert v60.name == "v6.0"
    assert len({tuple(r.seeds.values()) for r in (v51, v60, v61)}) == 3
    assert v51.layout.code == "code"
    assert not v51.layout.measurements_in_results
    assert v60.layout.code == "src"
    assert v60.layout.compliance_in_results
    assert v60.loadgen == (6, 0)
    assert round_of_loadgen("6.0.17 @ d6147c7eb7") == "v6.0"
    assert round_of_loadgen("unknown") is None
    with pytest.raises(UsageError, match=r"--round v4\.1: repro knows .*v5\.0"):
        round_rules("v4.1")


def test_the_default_round_is_the_installed_loadgens_and_says_so() -> None:
    name, said = default_round()
    assert name in ("v5.0", "v5.1", "v6.0", "v6.1")
    assert f"round {name}" in said
    assert "installed LoadGen" in said
    assert "--round" in said


def test_benchmark_names_resolve_as_the_checkers_resolve_them() -> None:
    rules = round_rules("v6.0")
    assert checker_model(rules, "resnet", {}) == "resnet"
    assert checker_model(rules, "resnet50", {}) == "resnet"  # the round's alias
    assert checker_model(rules, "ort-digits", {}) == "ort-digits"  # unknown: as it is
    assert checker_model(rules, "ort-digits", {"ort-digits": "resnet"}) == "resnet"  # open
    assert checker_model(rules, "ort-resnet50", {}) == "resnet"  # the checkers' guess


def _system() -> dict[str, Any]:
    return dict.fromkeys(SYSTEM_FIELDS, "x")


def test_a_system_description_missing_a_field_is_refused_naming_field_and_rule() -> None:
    doc = _system()
    measured = {
        "measurements": dict.fromkeys(
            ("input_data_types", "weight_data_types", "retraining", "weight_transformations"), "x"
        )
    }
    require_fields(doc, measured)  # complete: no error
    del doc["cooling"]
    doc["hw_notes"] = ""  # may be empty
    doc["accelerators_per_node"] = ""  # must not
    assert "hw_notes" not in MEANINGFUL_FIELDS
    assert missing_fields(doc) == ["accelerators_per_node", "cooling"]
    with pytest.raises(SpecError) as err:
        require_fields(doc, {})
    text = str(err.value)
    assert "lacks accelerators_per_node, cooling" in text
    assert "rule system.field: SystemCheck.required_fields_check" in text
    assert "rule measurements.field" in text
    assert "retraining" in text
    assert err.value.hint is not None
    assert "--template" in err.value.hint


def test_the_check_names_a_folder_that_is_no_submission_tree(tmp_path: Path) -> None:
    found = check_tree(tmp_path, round_rules("v6.0"))
    assert [v.rule for v in found.violations] == ["layout.results"]


def test_the_check_lists_a_missing_system_file_and_fields(tmp_path: Path) -> None:
    rules = round_rules("v5.1")
    tree = SubmissionTree.at(tmp_path, "open", "Org", rules)
    (tree.results() / "sys").mkdir(parents=True)
    found = check_tree(tmp_path, rules)
    assert ("system.missing", "open/Org/systems/sys.json") in {
        (v.rule, v.where) for v in found.violations
    }
    tree.systems().mkdir()
    doc = _system()
    doc.update(division="open", submitter="Org", status="available", system_type="edge")
    del doc["host_storage_type"]
    tree.system_json("sys").write_text(json.dumps(doc))
    found = check_tree(tmp_path, rules)
    assert [(v.rule, v.why) for v in found.violations if v.rule.startswith("system")] == [
        ("system.field", "field host_storage_type is missing")
    ]


def test_a_link_out_of_the_tree_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    rules = round_rules("v5.1")
    top = tmp_path / "sub"
    tree = SubmissionTree.at(top, "open", "Org", rules)
    tree.systems().mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(_system()))
    tree.system_json("sys").symlink_to(outside)
    with pytest.raises(
        SpecError, match=r"sys\.json: a symbolic link to .*elsewhere\.json, outside"
    ):
        check_tree(top, rules)
    tree.system_json("sys").unlink()
    (tree.systems() / "inside.json").write_text("{}")
    tree.system_json("sys").symlink_to(tree.systems() / "inside.json")  # inside: read as usual
    assert check_tree(top, rules).violations


def test_full_length_runs_take_mlperfs_durations_query_counts_and_the_rounds_seeds(
    root: Path,
) -> None:
    rules = round_rules("v6.0")
    bench = rules.benchmarks["resnet"]
    record = RunRecord(
        run_id="r",
        spec_name="s",
        spec_id="a" * 64,
        spec_path="",
        status="complete",
        started_utc="2026-01-01T00:00:00+00:00",
        repro_version="0",
        overrides={"min_duration_ms": 300},
    )
    assert length_settings(record, "Offline", bench, full_length=False)["min_duration_ms"] == 300
    full = length_settings(record, "Offline", bench, full_length=True)
    assert full == {"min_duration_ms": 600_000, "min_query_count": 24_576, "max_duration_ms": None}
    spec = load_spec(root / "specs" / "ort-resnet50.json")
    made, notes = round_spec(spec, rules, bench, full_length=True)
    assert made.workload.seeds.qsl_rng_seed == rules.seeds["qsl_rng_seed"]
    # 64 synthetic images: as many as the data set has, and said
    assert made.workload.performance_sample_count == spec.workload.total_sample_count == 64
    assert any("the data set has 64 samples" in n for n in notes)
    short, notes = round_spec(spec, rules, bench, full_length=False)
    assert short.workload.performance_sample_count == spec.workload.performance_sample_count
    assert notes == ()
