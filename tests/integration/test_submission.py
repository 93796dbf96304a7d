"""An MLPerf submission tree from a short ort-digits run: compliance TEST01/TEST04 run with
LoadGen's audit.config, the structural check names only what a full-length run would meet,
and import-mlperf reads the tree back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import write_record


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    root = Path(__file__).resolve().parents[2]
    out = tmp_path_factory.mktemp("results")
    result = CliRunner().invoke(
        cli,
        ["replay", str(root / "specs" / "ort-digits.json"), "--env", "native", "-s",
         "SingleStream", "-s", "Offline", "--min-duration-ms", "300", "--results-dir", str(out),
         "--cache-dir", str(shared_cache), "--run-id", "s1"],
    )  # fmt: skip
    assert result.exit_code in (0, 3), result.output
    return out / "ort-digits" / "s1"


def _submit(run: Path, out: Path, root: Path, cache: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        cli,
        ["submission", str(run), "--submitter", "Repro", "--system-name", "vm2c", "-o", str(out),
         "--env", "native", "--spec", str(root / "specs" / "ort-digits.json"),
         "--cache-dir", str(cache), "--json", *extra],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_the_tree_passes_the_check_but_for_what_needs_full_length_runs(
    short_run: Path, tmp_path: Path, root: Path, shared_cache: Path
) -> None:
    system = tmp_path / "system.json"
    system.write_text(
        json.dumps(
            {
                "status": "available",
                "system_type": "edge",
                "host_processors_per_node": 1,
                "measurements": {
                    "input_data_types": "fp32",
                    "weight_data_types": "fp32",
                    "retraining": "no",
                    "weight_transformations": "none",
                },
            }
        )
    )
    code, doc = _submit(
        short_run, tmp_path / "sub", root, shared_cache, "--system-json", str(system)
    )
    violations = doc["violations"]
    assert code == 1  # a 300 ms run is not a closed-division result
    assert {v["rule"] for v in violations if v["needs_full_run"]} <= {
        "min duration",
        "min queries",
        "early stopping",
    }
    assert any(v["rule"] == "min duration" for v in violations)
    # ort-digits is not one of MLPerf's benchmarks: said for each scenario
    assert len([v for v in violations if v["rule"] == "benchmark"]) == 2
    # the reference spec keeps the seeds it was captured with, not LoadGen 6.0's round's
    seeds = [v for v in violations if v["rule"] == "seeds"]
    assert len(seeds) == 2  # SingleStream and Offline
    assert "2085463073848966840" in seeds[0]["why"]
    others = [
        v for v in violations if not v["needs_full_run"] and v["rule"] not in ("seeds", "benchmark")
    ]
    # compliance performance is within 10 % of a 300 ms run or not, as load has it; the rest holds
    assert all(v["rule"] == "compliance" and "TEST FAIL" in v["why"] for v in others), others
    sub = tmp_path / "sub" / "closed" / "Repro"
    for scenario in ("SingleStream", "Offline"):
        comp = sub / "compliance" / "vm2c" / "ort-digits" / scenario
        assert "TEST PASS" in (comp / "TEST01" / "verify_accuracy.txt").read_text()
        assert (
            "Found Audit Config"
            in (comp / "TEST04" / "performance/run_1/mlperf_log_detail.txt").read_text()
        )
        acc = sub / "results" / "vm2c" / "ort-digits" / scenario / "accuracy"
        assert (acc / "mlperf_log_accuracy.json").stat().st_size == 4096 + 7 + 4096
        full = load_run(short_run).accuracy_test(scenario)
        assert full is not None
        import hashlib

        digest = hashlib.sha256(
            (short_run / full.dir / "mlperf_log_accuracy.json").read_bytes()
        ).hexdigest()
        assert f"hash={digest}" in (acc / "accuracy.txt").read_text()
    systems = json.loads((sub / "systems" / "vm2c.json").read_text())
    assert systems["framework"].startswith("onnxruntime")
    # the tree reads back as published results
    result = CliRunner().invoke(cli, ["results", str(tmp_path / "sub"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["scenario"] for r in rows} == {"SingleStream", "Offline"}
    assert all(r["submitter"] == "Repro" and r["system"] == "vm2c" for r in rows)
    result = CliRunner().invoke(
        cli,
        ["import-mlperf", str(tmp_path / "sub"), "--base", str(root / "specs" / "ort-digits.json"),
         "--specs-dir", str(tmp_path / "specs"), "--results-dir", str(tmp_path / "results"),
         "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (imported,) = json.loads(result.stdout)
    original = load_run(Path(imported["original"]))
    assert sorted({t.scenario for t in original.tests}) == ["Offline", "SingleStream"]


def test_fields_only_the_submitter_knows_are_listed_never_invented(
    short_run: Path, tmp_path: Path, root: Path, shared_cache: Path
) -> None:
    code, doc = _submit(short_run, tmp_path / "sub", root, shared_cache, "--no-compliance")
    assert code == 1
    missing = {v["why"].split("'")[1] for v in doc["violations"] if v["rule"] == "systems"}
    assert missing == {"status", "system_type", "host_processors_per_node"}
    unsaid = {v["why"].split("'")[1] for v in doc["violations"] if v["rule"] == "measurements"}
    assert unsaid == {
        "input_data_types",
        "retraining",
        "weight_data_types",
        "weight_transformations",
    }
    systems = json.loads((tmp_path / "sub/closed/Repro/systems/vm2c.json").read_text())
    assert "status" not in systems
    assert any(v["rule"] == "compliance" and v["why"] == "not run" for v in doc["violations"])


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
    bad = tmp_path / "bad" / "r"
    shutil.copytree(short_run, bad)
    doc = json.loads((bad / "run.json").read_text())
    doc["spec_name"] = "../../../escaped"
    write_record(bad / "run.json", doc)  # an attacker recomputes the digest
    assert "cannot name a folder" in _refused([str(bad), *base, "-o", str(tmp_path / "o1")])
    assert not (tmp_path / "escaped").exists()
    # a run whose files are not the ones it recorded
    tampered = tmp_path / "tampered" / "r"
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
    for doc_ in ({"measurements": "oops"}, {"submitter": "Evil"}, {"status": "bogus"},
                 {"host_processors_per_node": "two"}):  # fmt: skip
        system = tmp_path / "system.json"
        system.write_text(json.dumps(doc_))
        _refused([str(short_run), *base, "--system-json", str(system), "-o", str(tmp_path / "o5")])
    # --spec that is not the run's spec
    assert "not the spec" in _refused(
        [str(short_run), *base, "--spec", str(root / "specs" / "ort-resnet50.json"), "-o",
         str(tmp_path / "o6")]
    )  # fmt: skip
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("o", ".o"))]
