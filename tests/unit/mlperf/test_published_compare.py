"""Published results against repro replays and other trees: hardware nobody describes, a
folder per pair, and levels above the benchmark (issue 30 items 6, 7, 9)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import make_run, published_result, write_record

INTEL_V41 = Path("mlperf/inference_results_v4.1/closed/Intel")
GATE_V50 = Path("mlperf/mlperf_inference_submissions_v5.0/closed/GATEOverflow")
GATE_SYSTEM = "RTX4090x1-nvidia-gpu-TensorRT-default_config"
#: the shipped ort-resnet50 original, whose spec names benchmark resnet50 by a tag
SHIPPED = Path(__file__).resolve().parents[3] / "results" / "ort-resnet50" / "original"


def _report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


def _resnet_run(path: Path, *, throughput: list[float], accuracy: float = 0.9) -> Path:
    """A synthetic repro run of a spec that stands in for ResNet-50 (tagged `resnet50`, as
    ort-resnet50 is), on a 2-CPU machine."""
    from repro.spec.io import spec_id
    from repro.spec.models import ExperimentSpec

    spec = json.loads((SHIPPED / "run.json").read_text())["spec"]
    make_run(
        path,
        throughput=throughput,
        accuracy=accuracy,
        spec_id=spec_id(ExperimentSpec.model_validate(spec)),
    )
    doc: dict[str, Any] = json.loads((path / "run.json").read_text())
    doc["spec_name"] = spec["name"]
    doc["spec"] = spec
    write_record(path / "run.json", doc)
    return path


def _judged(data: dict[str, Any], scenario: str) -> dict[str, str]:
    """metric -> verdict of the judged rows of a scenario."""
    found = next(s for s in data["scenarios"] if s["scenario"] == scenario)
    return {m["metric"]: m["verdict"] for m in found["metrics"] if m["judged"]}


# item 6: a result folder without a system description is no machine anyone knows


@pytest.mark.parametrize("published_first", [True, False])
def test_a_copied_out_result_is_hardware_unknown_and_its_accuracy_still_judged(
    tmp_path: Path, published_first: bool
) -> None:
    """Copied out of its tree, a result has no systems/<system>.json: its 100 samples/s
    against a 2-vCPU replay's 20 said NOT REPRODUCED (exit 1), a verdict about a machine
    nobody described."""
    bench = published_result(tmp_path / "tree", sps=100.0).parent
    copied = tmp_path / "copied" / "resnet50"
    shutil.copytree(bench, copied)
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[20.0, 21.0, 19.0], accuracy=0.76)
    sides = [str(copied), str(run)] if published_first else [str(run), str(copied)]
    out_dir = tmp_path / "out"
    code, out = _report("-o", str(out_dir), "--compare", *sides)
    assert code == 0, out
    data = json.loads((out_dir / "report.json").read_text())
    assert data["verdict"] == "not comparable: hardware unknown"
    judged = _judged(data, "Offline")
    assert judged["samples_per_second"] == "not comparable: hardware unknown"
    assert judged["validity"] == "not comparable: hardware unknown"
    which = "original" if published_first else "replay"
    assert data["unknown_hardware"] == [
        f"the {which} is a published result without its system description (systems/<system>.json)"
    ]
    assert "hardware unknown: performance is shown for information" in data["summary"]
    assert "hardware unknown: the " in out
    assert judged["accuracy"] == "reproduced"  # 76 % top1 on both sides
    code, out = _report("-o", str(out_dir), "--compare", *sides, "--strict")
    assert code == 1, out  # not comparable is no success under --strict


def test_accuracy_is_judged_when_the_hardware_is_unknown(tmp_path: Path) -> None:
    bench = published_result(tmp_path / "tree", sps=100.0).parent
    copied = tmp_path / "copied" / "resnet50"
    shutil.copytree(bench, copied)
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[100.0, 101.0, 99.0], accuracy=0.5)
    code, out = _report("-o", str(tmp_path / "out"), "--compare", str(copied), str(run))
    assert code == 1, out
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert _judged(data, "Offline")["accuracy"] == "not reproduced"


def test_a_described_result_is_still_judged_on_the_same_hardware(tmp_path: Path) -> None:
    """A system description that names the replay's CPU: speed is judged as before."""
    bench = published_result(tmp_path / "tree", sps=100.0).parent
    desc = bench.parents[2] / "systems" / "box.json"
    desc.write_text(json.dumps({"host_processor_model_name": "Test CPU"}))
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[20.0, 21.0, 19.0])
    code, out = _report("-o", str(tmp_path / "out"), "--compare", str(bench), str(run))
    assert code == 1, out
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["unknown_hardware"] == []
    assert _judged(data, "Offline")["samples_per_second"] == "not reproduced"


def test_a_compliance_test04_folder_is_its_benchmark_and_hardware_unknown(
    tmp_path: Path,
) -> None:
    """A TEST04 run beside results/ (the v4.x layout): its benchmark is the folder two levels
    up (it was taken for a benchmark named 'offline' and refused), and no system description
    is found from there."""
    sdir = published_result(tmp_path / "tree", sps=100.0)
    sub = tmp_path / "tree" / "closed" / "Acme"
    test04 = sub / "compliance" / "box" / "resnet50" / "offline" / "TEST04"
    shutil.copytree(sdir / "performance", test04 / "performance")
    (test04 / "verify_performance.txt").write_text("reference score = 1\nTEST PASS\n")
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[20.0, 21.0, 19.0])
    code, out = _report("-o", str(tmp_path / "out"), "--compare", str(test04), str(run))
    assert code == 0, out
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["spec_name"] == "resnet50"
    assert data["verdict"] == "not comparable: hardware unknown"


def test_real_copied_out_and_test04_results_against_the_resnet50_original(
    root: Path, shared_fixtures: Path, tmp_path: Path
) -> None:
    """The issue's cases on published data: Intel's v4.1 ResNet-50 result copied out of its
    tree, and GATEOverflow's v5.0 TEST04 folder, against the shipped 2-vCPU original."""
    original = root / "results" / "ort-resnet50" / "original"
    copied = tmp_path / "resnet50"
    shutil.copytree(
        shared_fixtures / INTEL_V41 / "results" / "1-node-2S-EMR-PyTorch" / "resnet50", copied
    )
    test04 = (
        shared_fixtures / GATE_V50 / "compliance" / GATE_SYSTEM / "resnet50" / "offline" / "TEST04"
    )
    for i, published in enumerate((copied, test04)):
        out_dir = tmp_path / f"out{i}"
        code, out = _report("-o", str(out_dir), "--compare", str(published), str(original))
        assert code == 0, out
        data = json.loads((out_dir / "report.json").read_text())
        assert data["verdict"] == "not comparable: hardware unknown", out
        assert _judged(data, "Offline")["samples_per_second"] == (
            "not comparable: hardware unknown"
        )
    # in its tree, the same result is different hardware (its CPU is named)
    intact = shared_fixtures / INTEL_V41 / "results" / "1-node-2S-EMR-PyTorch" / "resnet50"
    code, out = _report("-o", str(tmp_path / "out"), "--compare", str(intact), str(original))
    assert code == 0, out
    assert "different hardware: CPU: INTEL(R) XEON(R) PLATINUM 8592+" in out


# item 7: several pairs under -o DIR: a folder each, and the paths printed are the real ones

BENCHMARKS = ("resnet50", "retinanet", "bert-99", "3d-unet-99.9")


def _written(out: str) -> list[Path]:
    """The report folders the command says it wrote."""
    return [
        Path(line.split("report written to ", 1)[1].rsplit("/report.", 1)[0])
        for line in out.splitlines()
        if "report written to " in line
    ]


def test_several_pairs_under_one_output_folder_keep_a_folder_each(tmp_path: Path) -> None:
    """One system's four benchmarks in two rounds: the four pairs share every label, and all
    four reports went to DIR/closed-Acme-box-vs-closed-Acme-box/ (4 printed, 1 left)."""
    for root, sps in ((tmp_path / "v4.1", 100.0), (tmp_path / "v5.0", 101.0)):
        for bench in BENCHMARKS:
            published_result(root, benchmark=bench, sps=sps, accuracy=None)
    out_dir = tmp_path / "out"
    code, out = _report(
        "-o", str(out_dir), "--compare", str(tmp_path / "v4.1"), str(tmp_path / "v5.0")
    )
    assert code == 0, out
    written = _written(out)
    assert len(written) == len(BENCHMARKS)
    assert len(set(written)) == len(BENCHMARKS)
    for folder in written:
        assert folder.parent.parent == out_dir
        report = json.loads((folder / "report.json").read_text())
        assert report["spec_name"] == folder.parent.name  # each folder holds its own pair
    assert sorted(p.parent.name for p in written) == sorted(BENCHMARKS)
    assert {p.name for p in written} == {"closed-Acme-box-vs-closed-Acme-box"}


def test_pair_folders_are_unique_and_safe(tmp_path: Path) -> None:
    from repro.compare.inputs import report_folders
    from repro.mlperf.sides import open_sides
    from repro.spec.types import FOLDER_NAME_MAX

    long_a, long_b = "x" * 150 + "-a", "x" * 150 + "-b"
    for system in ("Box", "box", long_a, long_b):
        published_result(tmp_path / "t", system=system, submitter="Ac me")
    sides = {s.record.environment["system"]: s for s in open_sides(tmp_path / "t")}
    pairs = [
        (sides[a], [sides[b]])
        for a, b in (
            ("Box", "box"),
            ("box", "Box"),
            ("box", "Box"),
            (long_a, long_b),
            (long_b, long_a),
        )
    ]
    folders = [f for f in report_folders(pairs, tmp_path / "out") if f is not None]
    assert len(folders) == len(pairs)
    assert len({str(f).lower() for f in folders}) == len(pairs)  # apart on any file system
    assert folders[0].name == "closed-Ac_me-Box-vs-closed-Ac_me-box"
    # the same names but for their case, then the same names: apart, in pair order
    assert folders[1].name == "closed-Ac_me-box-vs-closed-Ac_me-Box-2"
    assert folders[2].name == "closed-Ac_me-box-vs-closed-Ac_me-Box-3"
    for f in folders:
        assert f.parent == tmp_path / "out" / "resnet50"
        assert len(f.name) <= FOLDER_NAME_MAX
    assert folders[3] != folders[4]
    # one pair: the output folder itself, as ever
    assert report_folders(pairs[:1], tmp_path / "out") == [tmp_path / "out"]


# item 9: a level above the benchmark against a repro run picks the run's benchmark


def _submitter(root: Path, *, big_resnet50: float | None = None) -> Path:
    """Acme's closed submission: box ran resnet50 and bert-99, big ran retinanet (and
    resnet50 at `big_resnet50` samples/s); both on the CPU of `make_run`'s machine."""
    published_result(root, system="box", benchmark="resnet50", sps=100.0)
    published_result(root, system="box", benchmark="bert-99", accuracy=None)
    published_result(root, system="big", benchmark="retinanet", accuracy=None)
    if big_resnet50 is not None:
        published_result(root, system="big", benchmark="resnet50", sps=big_resnet50)
    level = root / "closed" / "Acme"
    for desc in (level / "systems").glob("*.json"):
        desc.write_text(json.dumps({"host_processor_model_name": "Test CPU"}))
    return level


@pytest.mark.parametrize("level_first", [True, False])
def test_a_submitter_against_a_run_picks_the_runs_benchmark_and_says_which(
    tmp_path: Path, level_first: bool
) -> None:
    """`repro report --compare v4.1/closed/Intel results/ort-resnet50/<run>` found no partner
    (the run's benchmark is its spec's name, ort-resnet50, never a tree's) and refused."""
    level = _submitter(tmp_path / "tree")
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[100.0, 101.0, 99.0], accuracy=0.76)
    sides = [str(level), str(run)] if level_first else [str(run), str(level)]
    out_dir = tmp_path / "out"
    code, out = _report("-o", str(out_dir), "--compare", *sides)
    assert code == 0, out
    assert "holds 3 published result(s); compared: the 1 of benchmark resnet50" in out
    assert "not compared, other benchmarks: bert-99 (1), retinanet (1)" in out
    data = json.loads((out_dir / "report.json").read_text())
    published = data["original"] if level_first else data["replays"][0]
    assert published["path"] == str(level / "results" / "box" / "resnet50")
    assert any("compared: the 1 of benchmark resnet50" in n for n in data["notes"])
    judged = _judged(data, "Offline")
    assert judged["samples_per_second"] == "reproduced"  # the same CPU ("Test CPU")


def test_several_systems_of_the_benchmark_get_a_report_each(tmp_path: Path) -> None:
    level = _submitter(tmp_path / "tree", big_resnet50=400.0)
    run = _resnet_run(tmp_path / "r" / "run1", throughput=[100.0, 101.0, 99.0], accuracy=0.76)
    out_dir = tmp_path / "out"
    code, out = _report("-o", str(out_dir), "--compare", str(level), str(run))
    assert code == 1, out  # big's 400 samples/s on the same CPU is not reproduced
    assert "compared: the 2 of benchmark resnet50" in out
    assert "one report each" in out
    written = _written(out)
    assert {p.relative_to(out_dir) for p in written} == {
        Path("resnet50/closed-Acme-box-vs-run1"),
        Path("resnet50/closed-Acme-big-vs-run1"),
    }
    verdicts = {p.name: json.loads((p / "report.json").read_text())["verdict"] for p in written}
    assert verdicts == {
        "closed-Acme-box-vs-run1": "reproduced",
        "closed-Acme-big-vs-run1": "not reproduced",
    }


def test_a_level_without_the_runs_benchmark_is_refused_naming_both(tmp_path: Path) -> None:
    level = _submitter(tmp_path / "tree")
    run = make_run(tmp_path / "r" / "run1", throughput=[100.0])  # spec "synthetic", no tags
    code, out = _report("-o", str(tmp_path / "out"), "--compare", str(level), str(run))
    assert code == 2, out
    assert "holds 3 published results, of benchmark(s) bert-99 (1), resnet50 (1), retinanet" in out
    assert "repro run of spec 'synthetic'" in out
    assert not (tmp_path / "out").exists()


def test_a_real_round_against_the_resnet50_original_picks_its_resnet50_results(
    root: Path, shared_fixtures: Path, tmp_path: Path
) -> None:
    """GATEOverflow's v5.0 submissions (closed and open) against the shipped original."""
    round_dir = shared_fixtures / "mlperf" / "mlperf_inference_submissions_v5.0"
    original = root / "results" / "ort-resnet50" / "original"
    out_dir = tmp_path / "out"
    code, out = _report("-o", str(out_dir), "--compare", str(round_dir), str(original))
    assert code == 0, out
    assert "compared: the 2 of benchmark resnet50" in out
    written = _written(out)
    assert sorted(p.name for p in written) == [
        f"closed-GATEOverflow-{GATE_SYSTEM}-vs-original",
        "open-GATEOverflow-Asus_Tuf-reference-cpu-onnxruntime_v1.20.1-default_config-vs-original",
    ]
    for folder in written:
        data = json.loads((folder / "report.json").read_text())
        assert data["verdict"] == "not comparable: different hardware"
