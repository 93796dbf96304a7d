"""An MLPerf submission tree from a short ort-digits run: refused for the closed division (not a
benchmark of the round), mapped to resnet's task in the open one; compliance TEST01/TEST04 run
with LoadGen's audit.config, the check names only what the run's length and data cause, and
import-mlperf reads the tree back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import SUBMISSION_SYSTEM, write_record


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    root = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("results")
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "-s",
            "SingleStream",
            "-s",
            "Offline",
            "--min-duration-ms",
            "300",
            "--results-dir",
            str(out),
            "--cache-dir",
            str(shared_cache),
            "--run-id",
            "s1",
        ],
    )
    assert result.exit_code in (0, 3), result.output
    return out / "ort-digits" / "s1"


def _submit(run: Path, out: Path, root: Path, cache: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            str(run),
            "--submitter",
            "Repro",
            "--system-name",
            "vm2c",
            "-o",
            str(out),
            "--env",
            "native",
            "--spec",
            str(root / "specs" / "ort-digits.json"),
            "--cache-dir",
            str(cache),
            "--json",
            *extra,
        ],
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def system_json(tmp_path: Path) -> Path:
    path = tmp_path / "system.json"
    path.write_text(json.dumps(SUBMISSION_SYSTEM))
    return path


def test_a_benchmark_the_round_does_not_know_is_refused_for_the_closed_division(
    short_run: Path, tmp_path: Path, root: Path, system_json: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            str(short_run),
            "--round",
            "v6.0",
            "--submitter",
            "Repro",
            "--system-name",
            "vm2c",
            "--system-json",
            str(system_json),
            "-o",
            str(tmp_path / "o"),
            "--env",
            "native",
            "--spec",
            str(root / "specs" / "ort-digits.json"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "'ort-digits' is not a benchmark of round v6.0" in result.stderr
    assert "--division open" in result.stderr  # the fix
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()
    assert not list(tmp_path.glob(".o.*"))


def test_the_open_division_maps_it_to_the_benchmark_of_its_task(
    short_run: Path, tmp_path: Path, root: Path, shared_cache: Path, system_json: Path
) -> None:
    code, doc = _submit(
        short_run,
        tmp_path / "sub",
        root,
        shared_cache,
        "--system-json",
        str(system_json),
        "--division",
        "open",
        "--round",
        "v6.0",
    )
    assert code == 1  # a 300 ms run on 1797 digits is not a full result
    sub = tmp_path / "sub" / "open" / "Repro"
    # the submitter's own model, performing resnet's task (image classification)
    assert json.loads((sub / "model_mapping.json").read_text()) == {"ort-digits": "resnet"}
    # the round's performance runs were made anew, and the tree says why
    assert sorted(doc["made"])[0].startswith(
        "Offline performance, made anew: the run's LoadGen seeds are not round v6.0's (they are"
    ), doc["made"]
    # what remains is the run's length and its data set, nothing else
    assert {v["cause"] for v in doc["violations"]} <= {"length", "data"}
    assert {v["rule"] for v in doc["violations"]} >= {"min_duration", "accuracy.dataset"}
    for scenario in ("SingleStream", "Offline"):
        result = sub / "results" / "vm2c" / "ort-digits" / scenario
        # round v6.0: the compliance tests in the result folder, run with LoadGen's audit.config
        assert "TEST PASS" in (result / "TEST01" / "verify_accuracy.txt").read_text()
        assert (
            "Found Audit Config"
            in (result / "TEST04" / "performance/run_1/mlperf_log_detail.txt").read_text()
        )
        assert (result / "measurements.json").is_file()
        acc = result / "accuracy"
        assert (acc / "mlperf_log_accuracy.json").stat().st_size == 4096 + 7 + 4096
        full = load_run(short_run).accuracy_test(scenario)
        assert full is not None
        digest = hashlib.sha256(
            (short_run / full.dir / "mlperf_log_accuracy.json").read_bytes()
        ).hexdigest()
        assert f"hash={digest}" in (acc / "accuracy.txt").read_text()
    systems = json.loads((sub / "systems" / "vm2c.json").read_text())
    assert systems["framework"].startswith("onnxruntime")
    assert systems["cooling"] == "air"  # the submitter's, from --system-json
    # the tree reads back as published results
    result = CliRunner().invoke(cli, ["results", str(tmp_path / "sub"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["scenario"] for r in rows} == {"SingleStream", "Offline"}
    assert all(r["submitter"] == "Repro" and r["system"] == "vm2c" for r in rows)
    result = CliRunner().invoke(
        cli,
        [
            "import-mlperf",
            str(tmp_path / "sub"),
            "--base",
            str(root / "specs" / "ort-digits.json"),
            "--specs-dir",
            str(tmp_path / "specs"),
            "--results-dir",
            str(tmp_path / "results"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (imported,) = json.loads(result.stdout)
    original = load_run(Path(imported["original"]))
    assert sorted({t.scenario for t in original.tests}) == ["Offline", "SingleStream"]


def test_fields_only_the_submitter_knows_are_asked_for_never_invented(
    short_run: Path, tmp_path: Path, root: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            str(short_run),
            "--division",
            "open",
            "--submitter",
            "Repro",
            "--system-name",
            "vm2c",
            "-o",
            str(tmp_path / "o"),
            "--env",
            "native",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "the system description lacks status" in result.stderr
    assert "system_type" in result.stderr
    assert "$.measurements lacks input_data_types" in result.stderr
    assert "--template" in result.stderr
    assert not (tmp_path / "o").exists()


def _refused(args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["submission", *args])
    assert result.exit_code == 2, result.output
    return result.stderr


def test_runs_and_fields_that_would_make_a_wrong_tree_are_refused(
    short_run: Path, tmp_path: Path, root: Path
) -> None:
    import shutil

    base = ["--submitter", "Repro", "--system-name", "vm2c", "--no-compliance"]
    # a run.json whose spec name would put files outside the tree
    bad = tmp_path / "bad" / short_run.name  # a run is kept in a folder of its id
    shutil.copytree(short_run, bad)
    doc = json.loads((bad / "run.json").read_text())
    doc["spec_name"] = "../../../escaped"
    write_record(bad / "run.json", doc)  # an attacker recomputes the digest
    refused = _refused([str(bad), *base, "-o", str(tmp_path / "o1")])
    assert "$.spec_name is '../../../escaped'" in refused
    assert not (tmp_path / "escaped").exists()
    # a run whose files are not the ones it recorded
    tampered = tmp_path / "tampered" / short_run.name
    shutil.copytree(short_run, tampered)
    log = next(tampered.rglob("mlperf_log_accuracy.json"))
    log.write_text(log.read_text() + " ")
    assert "not the ones it recorded" in _refused(
        [str(tampered), *base, "-o", str(tmp_path / "o2")]
    )
    # two runs holding the same scenario, or one run twice
    assert "both hold" in _refused(
        [str(short_run), str(tampered), *base, "-o", str(tmp_path / "o3")]
    )
    assert "given twice" in _refused(
        [str(short_run), str(short_run), *base, "-o", str(tmp_path / "o4")]
    )
    # --system-json fields of the wrong shape, or contradicting the command line
    for doc_ in (
        {"measurements": "oops"},
        {"submitter": "Evil"},
        {"status": "bogus"},
        {"host_processors_per_node": "two"},
    ):
        system = tmp_path / "system.json"
        system.write_text(json.dumps(doc_))
        _refused([str(short_run), *base, "--system-json", str(system), "-o", str(tmp_path / "o5")])
    # --spec that is not the run's spec
    assert "not the spec" in _refused(
        [
            str(short_run),
            *base,
            "--spec",
            str(root / "specs" / "ort-resnet50.json"),
            "-o",
            str(tmp_path / "o6"),
        ]
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("o", ".o"))]


def test_check_reads_a_tree_repro_did_not_write(shared_fixtures: Path) -> None:
    tree = shared_fixtures / "mlperf" / "mlperf_inference_test_submissions_v5.0"
    result = CliRunner().invoke(cli, ["submission", "--check", str(tree), "--round", "v5.0"])
    # MLCommons' own test submission, trimmed for the fixtures: its files are missing, and its
    # runs have another round's seeds; each violation names its rule
    assert result.exit_code == 2, result.output
    assert "[seeds]" in result.output
    assert "qsl_rng_seed is wrong, expected=6023615788873153749" in result.output
    assert "[min_duration] (needs a full-length run)" in result.output
    assert "Traceback" not in result.output
