"""A published result imported as an experiment, replayed for real, and reported on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import published_result

_SETTINGS = """samples_per_query : 4000
target_qps : 1000000
min_duration (ms): 400
min_query_count : 1
qsl_rng_seed : 11
sample_index_rng_seed : 22
schedule_rng_seed : 33
"""


def _tree(tmp_path: Path) -> Path:
    """A published digits Offline result, its settings in the summary as LoadGen writes them."""
    sdir = published_result(tmp_path / "v9", benchmark="digits", sps=4100.0, accuracy=None)
    summary = sdir / "performance" / "run_1" / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text() + _SETTINGS)
    return tmp_path / "v9"


def test_import_replay_report(
    root: Path, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "import-mlperf",
            str(tree),
            "--base",
            str(root / "specs" / "ort-digits.json"),
            "--scenario",
            "Offline",
        ],
    )
    assert result.exit_code == 0, result.output
    name = "mlperf-digits-closed-acme-box"
    spec = json.loads((tmp_path / "specs" / f"{name}.json").read_text())
    offline = spec["workload"]["scenarios"]
    assert [s["scenario"] for s in offline] == ["Offline"]
    assert offline[0]["settings"]["offline_expected_qps"] == 1000000
    assert offline[0]["settings"]["min_duration_ms"] == 400
    assert spec["workload"]["seeds"]["schedule_rng_seed"] == 33
    original = load_run(tmp_path / "results" / name / "original")
    assert original.environment["manager"] == "published"
    assert (
        tmp_path
        / "results"
        / name
        / "original"
        / "Offline"
        / "performance"
        / "run_1"
        / "mlperf_log_summary.txt"
    ).is_file()
    # the same import twice is refused, not overwritten
    again = runner.invoke(
        cli, ["import-mlperf", str(tree), "--base", str(root / "specs" / "ort-digits.json")]
    )
    assert again.exit_code == 2
    assert "imported before" in again.output

    replay = runner.invoke(
        cli,
        [
            "replay",
            f"specs/{name}.json",
            "--env",
            "native",
            "--mode",
            "performance",
            "--min-duration-ms",
            "300",
            "--run-id",
            "r1",
        ],
    )
    assert replay.exit_code in (0, 1), replay.output
    report = runner.invoke(cli, ["report", "--compare", f"results/{name}/", "--json"])
    assert report.exit_code in (0, 1), report.output
    data = json.loads(report.stdout)
    changed = {(s["scope"], s["key"]) for s in data["settings"]}
    assert ("Offline", "min_duration_ms") in changed  # 400 published, 300 replayed
    assert ("Offline", "offline_expected_qps") not in changed
    assert data["original"]["kind"] == "repro"


def test_a_long_name_is_cut_to_a_spec_name_and_stays_unique(tmp_path: Path) -> None:
    from repro.mlperf.importing import MAX_NAME, _name
    from repro.runs.record import RunRecord

    names = set()
    for system in ("a-very-long-system-name-" * 4 + "1", "a-very-long-system-name-" * 4 + "2"):
        record = RunRecord(
            run_id="x",
            spec_name="resnet50",
            spec_id="",
            spec_path="",
            status="complete",
            started_utc="",
            repro_version="",
            environment={"division": "closed", "submitter": "Acme", "system": system},
        )
        name = _name(record)
        assert len(name) <= MAX_NAME
        names.add(name)
    assert len(names) == 2


def test_json_lists_what_was_imported(root: Path, tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "import-mlperf",
            str(tree),
            "--base",
            str(root / "specs" / "ort-digits.json"),
            "--specs-dir",
            str(tmp_path / "s"),
            "--results-dir",
            str(tmp_path / "r"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    [done] = json.loads(result.stdout)
    assert done["name"] == "mlperf-digits-closed-acme-box"
    assert Path(done["spec"]).is_file()
    assert done["scenarios"] == ["Offline"]


def _import(root: Path, tree: Path, base: str, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["import-mlperf", str(tree), "--base", str(root / "specs" / base), *extra]
    )
    return result.exit_code, result.stdout, result.stderr


def test_an_imported_spec_validates_without_the_bases_claims(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SingleStream-only result imported onto ort-resnet50 kept its Offline and Server
    claims: `repro validate` refused the spec (5 errors) that the import said to replay."""
    from tests.mlperf_gen import Result, write_result

    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result(scenario="SingleStream", value=2.5e6, accuracy=None))
    monkeypatch.chdir(tmp_path)
    code, out, err = _import(root, tree, "ort-resnet50.json")
    assert code == 0, out + err
    [spec] = (tmp_path / "specs").glob("*.json")
    assert "claims" not in json.loads(spec.read_text())
    checked = CliRunner().invoke(cli, ["validate", str(spec)])
    assert checked.exit_code == 0, checked.output
    assert f"repro replay {spec.relative_to(tmp_path)}" in err  # the real name, no placeholder


def test_a_result_whose_settings_no_machine_can_plan_is_refused_naming_why(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An 8-GPU result's settings copied unscaled planned 3.6e8 samples (over the 1e8 cap)."""
    tree = _tree(tmp_path)
    summary = next(tree.rglob("mlperf_log_summary.txt"))
    text = summary.read_text().replace("target_qps : 1000000", "target_qps : 600000")
    summary.write_text(text.replace("min_duration (ms): 400", "min_duration (ms): 600000"))
    monkeypatch.chdir(tmp_path)
    code, out, err = _import(root, tree, "ort-digits.json")
    assert code == 2, out + err
    assert "the spec would not validate" in err
    assert "LoadGen would generate about 3.96e+08 samples" in err
    assert list((tmp_path / "specs").glob("*.json")) == []
    assert not (tmp_path / "results").exists()


def test_a_result_imported_onto_another_models_base_says_so(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An LLM result imported onto a ResNet-50 base replays ResNet-50; the report said only
    "different hardware (CPU ...)"."""
    from tests.mlperf_gen import Result, write_result

    tree = tmp_path / "inference_results_v4.1"
    write_result(tree, Result(benchmark="llama2-70b-99", llm=True, value=3000.0, accuracy=None))
    monkeypatch.chdir(tmp_path)
    code, out, err = _import(root, tree, "ort-resnet50.json")
    assert code == 0, out + err
    assert "the replay runs ort-resnet50's model (model, sha256" in err
    assert "not the published llama2-70b-99" in err
    [original] = (tmp_path / "results").glob("*/original")
    assert any("not the published llama2-70b-99" in n for n in load_run(original).notes)
