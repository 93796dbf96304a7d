"""Where paired rounds' tests run, with the real harness: pinned (--cpus) and duet (--duet)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.runs.store import load_run
from tests.helpers import portable_spec

CPUS = sorted(os.sched_getaffinity(0))


def _aa(root: Path, tmp_path: Path, *extra: str, spec: Path | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(spec or root / "specs" / "ort-digits.json"),
            "--env",
            "native",
            "--against",
            "self",
            "--scenario",
            "SingleStream",
            "--scenario",
            "Offline",
            "--mode",
            "performance",
            "--min-duration-ms",
            "200",
            "--max-rounds",
            "2",
            "--order-seed",
            "4",
            "--run-id",
            "aa",
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ],
    )
    return result.exit_code, result.output


def test_pinned_rounds_run_every_test_on_the_cpus_given(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cpu = CPUS[-1]
    code, output = _aa(root, tmp_path, "--cpus", str(cpu))
    assert code in (0, 1), output
    for side in ("replay", "baseline"):
        record = load_run(tmp_path / "results" / "ort-digits" / f"aa-{side}")
        assert record.interleave is not None
        assert record.interleave.placement == {"mode": "sequential", "cpus": [[cpu]]}
        # what the worker itself read back: the kernel kept it there
        assert {tuple(t.cpus or ()) for t in record.tests} == {(cpu,)}
        assert all(t.cpu is not None and t.cpu.process_s > 0 for t in record.tests)
    report = json.loads((tmp_path / "reports" / "ort-digits" / "report.json").read_text())
    assert any(f"every test pinned to CPUs {cpu}" in n for n in report["notes"])


def _ready_unix(timings: dict[str, float]) -> float:
    """When a worker was ready at its gate: started, its model and data loaded, warmed up."""
    return timings["started_unix"] + timings["load_s"] + timings["dataset_s"] + timings["warm_up_s"]


@pytest.mark.skipif(len(CPUS) < 2, reason="duet rounds need two CPUs, one a side")
def test_duet_rounds_start_both_sides_together_on_their_own_cpus(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # an expected QPS far above this machine's: each 200 ms Offline test's query is sized from
    # a warm-up, the first round's on both sides at once
    spec = portable_spec(root, "ort-digits")
    for sc in spec["workload"]["scenarios"]:
        if sc["scenario"] == "Offline":
            sc["settings"]["offline_expected_qps"] = 1e7
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    code, output = _aa(root, tmp_path, "--duet", spec=path)
    assert code in (0, 1), output
    a = load_run(tmp_path / "results" / "ort-digits" / "aa-replay")
    b = load_run(tmp_path / "results" / "ort-digits" / "aa-baseline")
    assert a.interleave is not None
    assert a.interleave.placement["mode"] == "duet"
    orders = a.interleave.orders
    sets = [tuple(s) for s in a.interleave.placement["cpus"]]
    for ta, tb in zip(a.tests, b.tests, strict=True):
        assert (ta.scenario, ta.repeat) == (tb.scenario, tb.repeat)
        # each side on its own CPU, the round's first side on the first set
        first = orders[ta.repeat - 1][0]
        assert tuple(ta.cpus or ()) == (sets[0] if first == "a" else sets[1])
        assert tuple(tb.cpus or ()) == (sets[1] if first == "a" else sets[0])
        # LoadGen started on neither side before the other was ready (the gate), whatever the
        # loading took: an order of events, not a time bound a busy machine can break
        start_a, start_b = ta.timings_s["loadgen_start_unix"], tb.timings_s["loadgen_start_unix"]
        assert start_a >= _ready_unix(tb.timings_s) - 0.01
        assert start_b >= _ready_unix(ta.timings_s) - 0.01
        assert ta.probe_after == tb.probe_after  # one probe after both tests, for both
    # the short Offline query sized once for both sides, from the faster warm-up: no round is
    # left out for settings that differ (each side sized its own, and round 1 never counted)
    offline = [
        (ta, tb) for ta, tb in zip(a.tests, b.tests, strict=True) if ta.scenario == "Offline"
    ]
    assert offline
    for ta, tb in offline:
        qps_a, qps_b = (t.changed_settings["offline_expected_qps"].used for t in (ta, tb))
        assert qps_a == qps_b, (ta.repeat, qps_a, qps_b)
    assert "left out" not in output, output
