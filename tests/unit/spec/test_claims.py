"""Claims in the spec: their model, their variants, and the bad input refused with the claim and
the field named, before anything runs; a claim is no part of the spec's id."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from repro.errors import SpecError
from repro.spec.claims import metric_names, parse_metric
from repro.spec.io import load_spec, parse_spec, spec_id
from repro.spec.variants import VariantError, variant_specs
from repro.validate import check
from tests.helpers import portable_spec

THREADS: dict[str, Any] = {
    "id": "threads",
    "statement": "2 threads give 1.8x the Offline throughput of 1",
    "metric": "Offline.throughput",
    "baseline": {"overrides": {"backend.options.intra_op_threads": 1}},
    "candidate": {"overrides": {"backend.options.intra_op_threads": 2}},
    "relation": ">=",
    "bound": 1.6,
}


def _with(root: Path, *claims: dict[str, Any]) -> dict[str, Any]:
    raw = portable_spec(root, "ort-digits")
    raw["claims"] = [copy.deepcopy(c) for c in claims]
    return raw


def _claim(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(THREADS), **changes}


def test_the_committed_specs_keep_their_ids(root: Path) -> None:
    """Claims came after the specs were published: each committed spec's id is the one it
    has always had, whether it states claims or not."""
    ids = {
        "ort-digits": "ba25d3dcd6b32c41b4ca7ee8caf6fcad4b905d4f1d2dc356cfca7bd7724f019f",
        "ort-resnet50": "8bd6aae68cbe9aac6b9590f791d43632c6f910a30b4a2de01605093bfe9b6f81",
        "tvm-resnet50": "9ac8c66307c2e7dc7a25265c2a8d9e84a016a9e4ea841bd3b34fe9c3b1db969a",
    }
    for name, want in ids.items():
        spec = load_spec(root / "specs" / f"{name}.json")
        assert spec.id == want == spec_id(spec)


def test_a_claim_and_its_evidence_are_no_part_of_the_id(root: Path) -> None:
    raw = portable_spec(root, "ort-digits")
    bare = spec_id(parse_spec(raw, source="bare"))
    claimed = _with(root, _claim())
    assert spec_id(parse_spec(claimed, source="claimed")) == bare
    claimed["claims"][0]["statement"] = "reworded"
    assert spec_id(parse_spec(claimed, source="reworded")) == bare


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"bound": 0}, "bound", "greater than 0"),
        ({"bound": -1.5}, "bound", "greater than 0"),
        ({"bound": float("inf")}, "bound", "finite number"),
        ({"bound": float("nan")}, "bound", "finite number"),
        ({"bound": "2"}, "bound", "number"),
        ({"metric": "Offline.latency_p90"}, "metric", "Offline does not measure 'latency_p90'"),
        ({"metric": "Offline.speed"}, "metric", "it measures throughput"),
        ({"metric": "Batch.throughput"}, "metric", "is not a metric"),
        ({"relation": "=="}, "relation", "'<=' or '>='"),
        ({"quantity": "drop"}, "claims[0]", "quantity 'drop' is for accuracy"),
        ({"id": "Bad Id"}, "id", "lowercase"),
        ({"statement": ""}, "statement", "at least 1 character"),
        (
            {"candidate": {"overrides": {"name": "other"}}},
            "candidate",
            "a path under artifacts, backend, workload, environment",
        ),
    ],
)
def test_a_bad_claim_is_refused_naming_the_claim_and_the_field(
    root: Path, change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(_with(root, _claim(**change)), source="s.json")
    assert "s.json" in err.value.message
    assert field in err.value.message
    assert "(claim " in err.value.message or "Bad Id" in json.dumps(change)
    assert message in err.value.message


def test_two_claims_with_one_id_are_refused(root: Path) -> None:
    with pytest.raises(SpecError, match="claim id 'threads' is given twice"):
        parse_spec(_with(root, _claim(), _claim()), source="s.json")


def test_every_metric_name_parses_and_says_what_it_runs() -> None:
    for name in metric_names():
        parse_metric(name)
    server = parse_metric("Server.max_valid_qps")
    assert server.scenarios() == {"baseline": "Offline", "candidate": "Server"}
    assert server.record_key == "latency_p99_ns"
    assert parse_metric("accuracy").is_accuracy
    assert parse_metric("SingleStream.latency_p90").kind == "latency"


def test_each_variant_is_the_spec_with_its_overrides_and_its_own_id(root: Path) -> None:
    spec = parse_spec(_with(root, _claim()), source="s.json")
    assert spec.claims is not None
    sides = variant_specs(spec, spec.claims[0], source="s.json")
    assert sides["baseline"].backend.options.intra_op_threads == 1  # type: ignore[attr-defined]
    assert sides["candidate"].backend.options.intra_op_threads == 2  # type: ignore[attr-defined]
    assert sides["baseline"].claims is None  # a variant states nothing
    assert sides["baseline"].original == spec.original  # its reference predictions score
    # ort-digits runs 1 thread: its baseline is the experiment itself, the candidate another
    assert spec_id(sides["baseline"]) == spec_id(spec) != spec_id(sides["candidate"])


def test_a_scenario_setting_is_named_by_its_scenario(root: Path) -> None:
    path = "workload.scenarios.Server.settings.server_target_qps"
    claim = _claim(candidate={"overrides": {path: 123.0}})
    spec = parse_spec(_with(root, claim), source="s.json")
    assert spec.claims is not None
    server = next(
        s
        for s in variant_specs(spec, spec.claims[0], source="s")["candidate"].workload.scenarios
        if s.scenario == "Server"
    )
    assert server.settings.server_target_qps == 123.0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"backend.options.intra_op_threads": -3}, "greater than or equal to 0"),
        ({"backend.options.intra_opthreads": 3}, "did you mean 'intra_op_threads'"),
        ({"workload.nothing.x": 1}, "the spec has no 'workload.nothing'"),
        ({"workload.scenarios.Batch.settings.x": 1}, "the spec runs no Batch scenario"),
        ({"workload.batch_size": 0}, "greater than or equal to 1"),
    ],
)
def test_an_override_that_does_not_validate_names_the_claim_and_the_field(
    root: Path, overrides: dict[str, Any], message: str
) -> None:
    spec = parse_spec(_with(root, _claim(candidate={"overrides": overrides})), source="s.json")
    assert spec.claims is not None
    with pytest.raises(VariantError) as err:
        variant_specs(spec, spec.claims[0], source="s.json")
    assert err.value.where.startswith("$.claims[0] (claim 'threads').candidate")
    assert "the candidate variant does not validate" in err.value.message
    assert message in err.value.message


def test_two_variants_that_are_one_experiment_are_refused(root: Path) -> None:
    same = _claim(baseline={"overrides": {"backend.options.intra_op_threads": 2}})
    spec = parse_spec(_with(root, same), source="s.json")
    assert spec.claims is not None
    with pytest.raises(VariantError, match="the same experiment"):
        variant_specs(spec, spec.claims[0], source="s.json")


def test_a_feasibility_claim_runs_two_scenarios_of_one_experiment(root: Path) -> None:
    claim = _claim(metric="Server.max_valid_qps", baseline={}, candidate={}, bound=0.5)
    spec = parse_spec(_with(root, claim), source="s.json")
    assert spec.claims is not None
    sides = variant_specs(spec, spec.claims[0], source="s.json")
    assert spec_id(sides["baseline"]) == spec_id(sides["candidate"])


def _problems(root: Path, tmp_path: Path, claim: dict[str, Any]) -> list[str]:
    raw = _with(root, claim)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(raw))
    spec = parse_spec(raw, source=str(path))
    return [f"{p.where}: {p.message}" for p in check(spec, path) if p.severity == "error"]


def test_validate_names_a_metric_the_scenarios_do_not_measure(root: Path, tmp_path: Path) -> None:
    only_offline = {
        "workload.scenarios": [
            {"scenario": "Offline", "settings": {"offline_expected_qps": 1000.0}}
        ]
    }
    claim = _claim(metric="SingleStream.latency_p90", candidate={"overrides": only_offline})
    found = _problems(root, tmp_path, claim)
    assert any(
        "$.claims[0] (claim 'threads').metric" in p
        and "the candidate variant runs no SingleStream scenario" in p
        for p in found
    ), found


def test_validate_names_an_accuracy_claim_without_an_accuracy_mode(
    root: Path, tmp_path: Path
) -> None:
    claim = _claim(
        metric="accuracy",
        quantity="drop",
        relation="<=",
        bound=0.01,
        candidate={"overrides": {"workload.modes": ["performance"]}},
    )
    found = _problems(root, tmp_path, claim)
    assert any("the candidate variant runs no accuracy mode" in p for p in found), found


def test_a_valid_claim_adds_no_problem(root: Path, tmp_path: Path) -> None:
    assert _problems(root, tmp_path, _claim()) == []


def test_the_reference_specs_claims_are_valid(root: Path) -> None:
    for name in ("ort-resnet50", "tvm-resnet50"):
        path = root / "specs" / f"{name}.json"
        spec = load_spec(path)
        assert spec.claims, name
        claim_problems = [p for p in check(spec, path) if p.where.startswith("$.claims")]
        assert claim_problems == [], claim_problems


@pytest.mark.parametrize("ci", [[1.0], [1.0, 2.0, 3.0], [2.0, 1.0], []])
def test_an_evidence_interval_is_two_ordered_numbers(ci: list[float]) -> None:
    # a hand-edited `ci: [1.0]` passed validation, then `repro claim list` died (exit 4,
    # IndexError) formatting it
    from repro.spec.claims import ClaimEvidence

    evidence = {
        "value": 1.5,
        "ci": ci,
        "confidence": 0.95,
        "verdict": "holds",
        "reason": "r",
        "rounds": 2,
        "stopped": "s",
        "baseline": [1.0, 1.0],
        "candidate": [1.5, 1.5],
        "elapsed_s": 1.0,
        "measured_utc": "2026-12-02T00:00:00+00:00",
        "repro_version": "0",
        "variants": {},
        "runs": {},
    }
    with pytest.raises(ValueError, match="ci"):
        ClaimEvidence.model_validate(evidence)
