"""A dispatched replay on different machines: reported per node, the hardware first in the
drift, and performance not comparable when a node differs from the original's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from repro.compare.build import build_report
from repro.mlperf.sides import open_run
from repro.spec.models import Tolerances
from tests.helpers import FINGERPRINT, make_run


def _part(run: Path, index: int, *, cpu: str, throughput: float) -> dict[str, object]:
    fp = copy.deepcopy(FINGERPRINT)
    fp["hardware"]["cpu"]["model"] = cpu
    make_run(run / "parts" / str(index), throughput=[throughput], fingerprint=fp)
    return {"index": index, "dir": f"parts/{index}", "status": "complete", "node": f"n{index}"}


def _dispatched(tmp_path: Path, cpus: list[str]) -> Path:
    run = tmp_path / "replay"
    parts = [_part(run, k, cpu=c, throughput=100.0 + k) for k, c in enumerate(cpus)]
    tests = []
    for k in range(len(cpus)):
        part_doc = json.loads((run / "parts" / str(k) / "run.json").read_text())
        for t in part_doc["tests"]:
            t["dir"] = f"parts/{k}/{t['dir']}"
            t["part"] = k
            t["repeat"] = k + 1
            tests.append(t)
    top = json.loads((run / "parts" / "0" / "run.json").read_text())
    top.update(run_id="replay", tests=tests, parts=parts, dispatch={"executor": "slurm"})
    (run / "run.json").write_text(json.dumps(top))
    return run


def test_nodes_of_different_hardware_are_reported_each_and_first_in_the_drift(
    tmp_path: Path,
) -> None:
    original = make_run(tmp_path / "original", throughput=[100.0, 101.0])
    replay = _dispatched(tmp_path, ["Test CPU", "Other CPU"])
    report = build_report(open_run(original), [open_run(replay)], tolerances=Tolerances())
    assert [(n.node, n.cpu_model) for n in report.nodes] == [
        ("n0", "Test CPU"),
        ("n1", "Other CPU"),
    ]
    assert report.nodes[0].hardware_vs_original == []
    assert report.nodes[1].hardware_vs_original == ["CPU: Test CPU vs Other CPU"]
    assert report.drift[0].key.startswith("nodes")
    assert "n1: Other CPU" in str(report.drift[0].replay)
    assert report.different_hardware == ["n1: CPU: Test CPU vs Other CPU"]
    offline = next(s for s in report.scenarios if s.scenario == "Offline")
    assert offline.verdict == "not comparable: different hardware"


def test_nodes_of_one_kind_change_nothing_but_the_table(tmp_path: Path) -> None:
    original = make_run(tmp_path / "original", throughput=[100.0, 101.0])
    replay = _dispatched(tmp_path, ["Test CPU", "Test CPU"])
    report = build_report(open_run(original), [open_run(replay)], tolerances=Tolerances())
    assert len(report.nodes) == 2
    assert not report.different_hardware
    assert not report.drift or not report.drift[0].key.startswith("nodes")
    assert all(n.metrics for n in report.nodes)
