"""The report command: verdicts, exit codes, drift ordering, outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.compare.build import build_report
from repro.compare.inputs import resolve_inputs
from repro.reports import markdown
from repro.reports.model import Report
from repro.spec.models import Tolerances
from tests.helpers import FINGERPRINT, make_run


def _report(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["report", "-o", str(tmp_path / "out"), *args])
    return result.exit_code, result.stdout, result.stderr


def test_two_equal_runs_are_reproduced_exit_0(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "run2", throughput=[100.5, 99.5, 100], seed=2)
    code, out, err = _report(tmp_path, "--compare", str(tmp_path / "r"))
    assert code == 0, out + err
    assert out.startswith("REPRODUCED")
    for fmt in ("md", "html", "json"):
        assert (tmp_path / "out" / f"report.{fmt}").is_file()
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["schema"] == "repro.report/v2"
    assert data["verdict"] == "reproduced"


def test_fewer_threads_is_not_reproduced_with_threads_named_first(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], threads=2, seed=1)
    make_run(
        tmp_path / "r" / "slow",
        throughput=[55, 56, 54],
        latency_scale=1.8,
        threads=1,
        seed=2,
        spec_id="b" * 64,
    )
    code, out, err = _report(
        tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "slow")
    )
    assert code == 2  # a changed spec is another experiment ...
    assert "--allow-different-specs" in err
    code, out, _ = _report(
        tmp_path,
        "--allow-different-specs",  # ... compared when asked
        "--compare",
        str(tmp_path / "r" / "original"),
        str(tmp_path / "r" / "slow"),
    )
    assert code == 1
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    offline = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    tp = next(m for m in offline["metrics"] if m["metric"] == "samples_per_second")
    assert tp["verdict"] == "not reproduced"
    assert data["drift"][0]["key"] == "options.intra_op_threads"
    assert "likeliest cause of drift: backend options.intra_op_threads: 2 -> 1" in out


def test_a_changed_model_is_named_before_the_machine(tmp_path: Path) -> None:
    """Two runs of specs whose models differ: the report said "see the settings and the
    drift" and the drift blamed the CPU; the changed artifact comes first."""
    model = {"path": "../artifacts/a.onnx", "sha256": "1" * 64}
    hardware = FINGERPRINT["hardware"]
    other_cpu = {
        **FINGERPRINT,
        "hardware": {**hardware, "cpu": {**hardware["cpu"], "model": "Another CPU"}},
    }
    make_run(
        tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1, artifacts={"model": model}
    )
    make_run(
        tmp_path / "r" / "other",
        throughput=[60, 61, 59],
        seed=2,
        spec_id="b" * 64,
        fingerprint=other_cpu,
        artifacts={"model": {"path": "../artifacts/b.onnx", "sha256": "2" * 64}},
    )
    sides = [str(tmp_path / "r" / "original"), str(tmp_path / "r" / "other")]
    code, _, _ = _report(tmp_path, "--allow-different-specs", "--compare", *sides)
    assert code in (0, 1)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [note] = [n for n in report["notes"] if "different spec id" in n]
    assert "model: sha256 111111111111 -> 222222222222 (path ../artifacts/a.onnx -> " in note
    assert "dataset" not in note
    assert (report["drift"][0]["group"], report["drift"][0]["key"]) == ("artifacts", "model.sha256")


def test_inconclusive_is_0_unless_strict(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 80], seed=1)
    make_run(tmp_path / "r" / "noisy", throughput=[115, 90], seed=1)
    args = ["--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "noisy")]
    code, out, _ = _report(tmp_path, *args)
    assert out.startswith("INCONCLUSIVE")
    assert code == 0
    code, _, _ = _report(tmp_path, "--strict", *args)
    assert code == 1


def test_accuracy_drop_is_not_reproduced(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100], accuracy=0.97, seed=1)
    make_run(tmp_path / "r" / "run2", throughput=[100], accuracy=0.90, seed=1)
    code, _, _ = _report(tmp_path, "--compare", str(tmp_path / "r"))
    assert code == 1


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such file or directory"),
        ("not_a_run", "not a repro run, a results/<name>/ folder, a published MLPerf tree"),
        ("no_replay", "no finished replay"),
        ("interrupted", "did not finish"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, setup: str, message: str) -> None:
    target = tmp_path / "r"
    if setup == "not_a_run":
        target.mkdir()
    elif setup == "no_replay":
        make_run(target / "original", throughput=[100])
    elif setup == "interrupted":
        make_run(target / "original", throughput=[100])
        make_run(target / "x", throughput=[100], status="interrupted")
        target = target / "original"
        code, _, err = _report(tmp_path, "--compare", str(target), str(tmp_path / "r" / "x"))
        assert code == 2
        assert message in err
        return
    code, _, err = _report(tmp_path, "--compare", str(target))
    assert code == 2, err
    assert message in err


def test_bad_format_is_usage_error(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100])
    make_run(tmp_path / "r" / "b", throughput=[100])
    code, _, err = _report(tmp_path, "--compare", str(tmp_path / "r"), "--format", "pdf")
    assert code == 2
    assert "--format" in err


def test_markdown_golden(tmp_path: Path, data_dir: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[90, 91, 89],
        seed=2,
        threads=1,
        settings={"min_duration_ms": 500},
    )
    _check_golden(tmp_path / "r", data_dir / "reports" / "threads-drop.md")


def test_markdown_golden_with_adjusted_rows_that_do_not_count(
    tmp_path: Path, data_dir: Path
) -> None:
    # as measured the replay equals the original on a machine 20 % faster by the probes: raw
    # decides (reproduced); each adjusted row says why its "not reproduced" does not count
    base = [100.0, 101.0, 99.0]
    make_run(tmp_path / "r" / "original", throughput=base, seed=1, speeds=base)
    make_run(tmp_path / "r" / "replay", throughput=base, seed=2, speeds=[v * 1.2 for v in base])
    _check_golden(tmp_path / "r", data_dir / "reports" / "adjusted-rows.md")


def _check_golden(runs: Path, golden: Path) -> None:
    """The Markdown report of runs/original against runs/replay is the golden file's text."""
    orig, reps = resolve_inputs(runs / "original", [runs / "replay"])
    report: Report = build_report(orig, reps, tolerances=Tolerances())
    report = report.model_copy(
        update={
            "generated_utc": "GENERATED",
            "original": report.original.model_copy(update={"path": "ORIGINAL"}),
            "replays": [r.model_copy(update={"path": "REPLAY"}) for r in report.replays],
        }
    )
    text = markdown.render(report)
    if os.environ.get("REPRO_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def test_tolerances_come_from_the_runs_wherever_and_whenever_the_report_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both runs were judged under a 30 % throughput tolerance; the spec file they name (relative
    # to the folder the replay ran in) says 5 %, and is edited afterwards: neither may matter.
    spec = tmp_path / "here" / "specs" / "synthetic.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"tolerances": {"throughput_rel": 0.05}}))
    wide = {"throughput_rel": 0.30, "latency_rel": 0.30}
    for name, tp, seed in (("original", [100, 101, 99], 1), ("replay", [80, 81, 79], 2)):
        make_run(
            tmp_path / "r" / name,
            throughput=tp,
            seed=seed,
            tolerances=wide,
            spec_path="specs/synthetic.json",
        )

    def verdicts(cwd: Path) -> tuple[int, dict[str, str]]:
        monkeypatch.chdir(cwd)
        code, _, _ = _report(
            tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")
        )
        data = json.loads((tmp_path / "out" / "report.json").read_text())
        assert data["tolerances"]["throughput_rel"] == 0.30
        assert any("as recorded by the original run" in n for n in data["notes"])
        return code, {s["scenario"]: s["verdict"] for s in data["scenarios"]}

    first = verdicts(tmp_path / "here")
    assert first[1]["Offline"] == "reproduced"  # -20 % is inside +/-30 %
    assert verdicts(tmp_path) == first
    spec.write_text(json.dumps({"tolerances": {"throughput_rel": 0.01}}))
    assert verdicts(tmp_path / "here") == first


def test_without_recorded_tolerances_the_report_says_it_uses_defaults(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[100, 101, 99], seed=2)
    _report(tmp_path, "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay"))
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any("MLPerf's defaults" in n for n in data["notes"])


def test_an_original_without_an_accuracy_figure_is_judged_by_its_predictions(
    tmp_path: Path,
) -> None:
    """TVM's report said "0 metric(s) reproduced" with no accuracy row, its predictions 100 %
    the original's: the original (captured without reference predictions) had no figure."""
    from tests.helpers import write_record

    original = make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1)
    make_run(tmp_path / "r" / "replay", throughput=[100.5, 99.5, 100], seed=2)
    doc = json.loads((original / "run.json").read_text())
    for test in doc["tests"]:
        if test["mode"] == "accuracy":
            test["accuracy"] = {"metric": "agreement", "value": None}
    write_record(original / "run.json", doc)
    code, out, err = _report(tmp_path, "--compare", str(tmp_path / "r"))
    assert code == 0, out + err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    offline = next(s for s in report["scenarios"] if s["scenario"] == "Offline")
    [row] = [m for m in offline["metrics"] if m["metric"] == "accuracy"]
    assert row["label"] == "prediction agreement with the original"
    assert row["verdict"] == "reproduced"
    assert row["replay_value"] == 1.0
    assert "the original recorded no accuracy figure" in row["reason"]
