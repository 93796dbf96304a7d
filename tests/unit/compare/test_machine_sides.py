"""Verdicts on a noisy machine, on synthetic series with known answers.

A pure phase shift of the machine (software unchanged) is reproduced after adjustment; a
software slowdown under the same shift is not reproduced; probes that move within a side make
an undecided metric "machine unstable"; different hardware makes speed not comparable while
accuracy is still judged.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.stats.verdicts import combine, decide_validity, exit_code, fisher_greater, roll_up
from tests.helpers import FINGERPRINT, make_run

BASE = [100.0, 101.0, 99.0, 100.5, 99.5]
FAST = [120.0, 121.0, 119.0, 120.5, 119.5]


def _report(tmp_path: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "-o",
            str(tmp_path / "out"),
            "--compare",
            str(tmp_path / "r" / "original"),
            str(tmp_path / "r" / "replay"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads((tmp_path / "out" / "report.json").read_text())


def _offline(data: dict[str, Any]) -> dict[str, Any]:
    scenario = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    return next(m for m in scenario["metrics"] if m["metric"] == "samples_per_second")


def test_a_pure_phase_shift_is_reproduced_after_adjustment(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST)
    # the whole machine is 25 % slower: the workload and the probe alike
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.75 for v in BASE],
        latency_scale=1 / 0.75,
        seed=2,
        speeds=[v * 0.75 for v in FAST],
    )
    code, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["raw_verdict"] == "not reproduced"
    assert tp["verdict"] == "reproduced after machine adjustment"
    assert tp["adjusted"]["machine_delta_rel"] == pytest.approx(-0.25)
    assert abs(tp["adjusted"]["delta_rel"]) < 0.01
    assert "the machine differed, not the software" in tp["reason"]
    assert code == 0
    assert data["verdict"] == "reproduced after machine adjustment"


@pytest.mark.parametrize(
    ("original_large", "small", "large", "want"),
    [
        # the machine is 25 % slower for large work; the small kernel, which waits on waking
        # its threads, reads 50 %: adjusted by it, the unchanged software would look faster
        (True, 0.5, 0.75, "compute_large_gflops"),
        # v1 probes have no large kernel: both sides are adjusted by the figure both have
        (False, 0.75, 0.5, "compute_gflops"),
    ],
)
def test_the_speed_index_is_the_large_kernel_where_both_sides_have_it(
    tmp_path: Path, original_large: bool, small: float, large: float, want: str
) -> None:
    make_run(
        tmp_path / "r" / "original",
        throughput=BASE,
        seed=1,
        speeds=FAST,
        large_speeds=FAST if original_large else None,
    )
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.75 for v in BASE],
        latency_scale=1 / 0.75,
        seed=2,
        speeds=[v * small for v in FAST],
        large_speeds=[v * large for v in FAST],
    )
    _, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["verdict"] == "reproduced after machine adjustment"
    assert tp["adjusted"]["speed_index"] == want
    assert tp["adjusted"]["machine_delta_rel"] == pytest.approx(-0.25)


def test_a_software_slowdown_under_a_phase_shift_is_not_reproduced(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST)
    # the machine is 25 % slower and the software another 27 %: together -45 %
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.55 for v in BASE],
        seed=2,
        speeds=[v * 0.75 for v in FAST],
    )
    code, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["verdict"] == "not reproduced"
    assert tp["adjusted"]["verdict"] == "not reproduced"
    assert tp["adjusted"]["delta_rel"] == pytest.approx(0.55 / 0.75 - 1, abs=0.01)
    assert "the software or its settings differ" in tp["reason"]
    assert code == 1


def test_a_speed_up_on_a_faster_machine_is_not_blamed_on_the_software(tmp_path: Path) -> None:
    # the compute probe says +17 %, the µs-scale workload ran +50 %: one speed index does not
    # scale every workload one to one
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 1.5 for v in BASE],
        latency_scale=1 / 1.5,
        seed=2,
        speeds=[v * 1.17 for v in FAST],
    )
    code, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["raw_verdict"] == "not reproduced"
    assert tp["adjusted"]["verdict"] == "not reproduced"
    assert tp["verdict"] == "inconclusive: machine unstable"
    assert "17.0% faster by the probes and the replay faster still" in tp["reason"]
    assert code == 0


def test_unstable_probes_make_an_undecided_metric_machine_unstable(tmp_path: Path) -> None:
    noisy = [100.0, 80.0, 115.0]  # the replay's machine moved 44 % within the side ...
    make_run(tmp_path / "r" / "original", throughput=[100, 101, 99], seed=1, speeds=[100] * 3)
    # ... and its throughput did not follow: neither view can decide
    make_run(tmp_path / "r" / "replay", throughput=[95, 108, 97], seed=2, speeds=noisy)
    _, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["verdict"] == "inconclusive: machine unstable"
    assert tp["adjusted"]["probe_spread_replay"] == pytest.approx(115 / 80 - 1)


def test_different_hardware_is_not_comparable_and_accuracy_is_still_judged(
    tmp_path: Path,
) -> None:
    other = copy.deepcopy(FINGERPRINT)
    other["hardware"]["cpu"]["model"] = "AMD EPYC 9B45"
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.6 for v in BASE],
        seed=2,
        speeds=FAST,
        fingerprint=other,
    )
    code, data = _report(tmp_path)
    assert data["different_hardware"] == ["CPU: Test CPU vs AMD EPYC 9B45"]
    assert _offline(data)["verdict"] == "not comparable: different hardware"
    offline = next(s for s in data["scenarios"] if s["scenario"] == "Offline")
    accuracy = next(m for m in offline["metrics"] if m["metric"] == "accuracy")
    assert accuracy["verdict"] == "reproduced"
    assert data["verdict"] == "not comparable: different hardware"
    assert code == 0


def test_different_hardware_with_an_accuracy_drop_is_not_reproduced(tmp_path: Path) -> None:
    other = copy.deepcopy(FINGERPRINT)
    other["hardware"]["cpu"]["logical_cpus"] = 64
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, accuracy=0.9)
    make_run(tmp_path / "r" / "replay", throughput=BASE, seed=2, accuracy=0.5, fingerprint=other)
    code, data = _report(tmp_path)
    assert data["verdict"] == "not reproduced"
    assert code == 1


@pytest.mark.parametrize(
    ("scale", "factor", "want"),
    [
        # µs-scale work (10 µs a sample): a session moves it by up to 2.3x, unseen by the probes
        (1e-2, 0.6, "inconclusive: machine unstable"),
        (1e-2, 1.6, "inconclusive: machine unstable"),
        (1e-2, 1 / 3, "not reproduced"),  # beyond any session
        (1e-2, 1 / 2.5, "not reproduced"),  # the bound itself
        (1.0, 0.6, "not reproduced"),  # work of 1 ms a sample is judged
        # 60 -> 150 µs a sample: the slower side is not µs-scale, the regression is judged
        (6e-2, 0.4, "not reproduced"),
    ],
)
def test_micro_scale_work_is_judged_between_sessions_only_beyond_their_moves(
    tmp_path: Path, scale: float, factor: float, want: str
) -> None:
    # the SingleStream p50 (a sample through the harness) is 1 ms x scale
    make_run(
        tmp_path / "r" / "original",
        throughput=[v / scale for v in BASE],
        latency_scale=scale,
        seed=1,
        speeds=[100.0] * 5,
    )
    make_run(
        tmp_path / "r" / "replay",
        throughput=[factor * v / scale for v in BASE],
        latency_scale=scale / factor,
        seed=2,
        speeds=[100.0] * 5,
    )
    _, data = _report(tmp_path)
    for metric in (_offline(data), _single_stream_p90(data)):
        assert (metric.get("raw_verdict") or metric["verdict"]) == "not reproduced"
        assert metric["verdict"] == want
        assert ("µs-scale work" in metric["reason"]) == (want != "not reproduced")


def test_micro_scale_work_is_judged_against_a_side_without_probes(tmp_path: Path) -> None:
    # a side without probes (a published result, an old run) gives no sample time to trust
    make_run(tmp_path / "r" / "original", throughput=[v * 100 for v in BASE], latency_scale=0.01)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 60 for v in BASE],
        latency_scale=0.01 / 0.6,
        seed=2,
        speeds=[100.0] * 5,
    )
    _, data = _report(tmp_path)
    assert _offline(data)["verdict"] == "not reproduced"


@pytest.mark.parametrize(
    ("factor", "want"), [(0.85, "inconclusive: machine unstable"), (0.6, "not reproduced")]
)
def test_a_difference_within_the_metric_s_own_drift_in_a_session_is_not_blamed_on_the_software(
    tmp_path: Path, factor: float, want: str
) -> None:
    # the original's runs moved 16 % within its session (a phase the probes did not see)
    phases = [100.0, 110.0, 95.0, 105.0, 100.0]
    make_run(tmp_path / "r" / "original", throughput=phases, seed=1, speeds=[100.0] * 5)
    # another session: 15 % lower and steady; 40 % lower is beyond any such drift
    replay = [factor * v for v in (102.0, 101.0, 102.5, 101.5, 102.0)]
    make_run(tmp_path / "r" / "replay", throughput=replay, seed=2, speeds=[100.0] * 5)
    code, data = _report(tmp_path)
    tp = _offline(data)
    assert (tp.get("raw_verdict") or tp["verdict"]) == "not reproduced"
    assert tp["verdict"] == want
    if want.startswith("inconclusive"):
        assert "moved by up to 16% within one session" in tp["reason"]
        assert "+/-21%" in tp["reason"]
        assert code == 0
    else:
        assert "the software or its settings differ" in tp["reason"]
        assert code == 1


def _single_stream_p90(data: dict[str, Any]) -> dict[str, Any]:
    scenario = next(s for s in data["scenarios"] if s["scenario"] == "SingleStream")
    return next(m for m in scenario["metrics"] if m["metric"] == "latency_p90_ns")


@pytest.mark.parametrize(
    ("busy", "replay_speed", "want"),
    [
        # the original shared its machine with other work; the quiet replay is faster
        ("original", 1.3, "inconclusive: machine unstable"),
        # ... but a replay slower than a busy original is slower for a reason of its own
        ("original", 0.7, "not reproduced"),
        # the replay ran beside other work and is the slower side
        ("replay", 0.7, "inconclusive: machine unstable"),
        # a busy replay that is faster anyway
        ("replay", 1.3, "not reproduced"),
        # nobody busy: the difference is the software's
        ("", 1.3, "not reproduced"),
    ],
)
def test_a_busy_machine_explains_only_the_slowness_of_its_own_side(
    tmp_path: Path, busy: str, replay_speed: float, want: str
) -> None:
    share = {"original": 0.01, "replay": 0.01, busy: 0.35}
    make_run(
        tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=BASE, others=share["original"]
    )
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * replay_speed for v in BASE],
        latency_scale=1 / replay_speed,
        seed=2,
        speeds=BASE,
        others=share["replay"],
    )
    code, data = _report(tmp_path)
    # throughput (Offline) and latency (SingleStream p90) alike
    for metric in (_offline(data), _single_stream_p90(data)):
        assert (metric.get("raw_verdict") or metric["verdict"]) == "not reproduced"
        assert metric["verdict"] == want
        if want.startswith("inconclusive"):
            assert f"machine busy: the {busy} was the slower side" in metric["reason"]
            assert "35% of the machine's CPU time" in metric["reason"]
            fix = "re-capture the original" if busy == "original" else "replay on a quiet"
            assert fix in metric["reason"]
    note = next(n for n in data["notes"] if n.startswith("machine: other processes used"))
    assert f"{share['original']:.0%} (original)" in note
    assert f"{share['replay']:.0%} (replay)" in note
    assert ("ran beside other work" in note) == bool(busy)
    assert code == (0 if want.startswith("inconclusive") else 1)


def test_a_busy_side_does_not_relabel_a_difference_it_cannot_explain(tmp_path: Path) -> None:
    # undecided (a noisy replay), its mean faster than a busy original: the busy original is
    # the slower side, so the label says so; a busy replay that is faster would not
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=BASE, others=0.01)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[104.0, 80.0, 130.0, 96.0, 112.0],
        seed=2,
        speeds=BASE,
        others=0.4,
    )
    _, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["verdict"] == "inconclusive"
    assert "slower side" not in tp["reason"]


def test_a_busy_side_slower_only_after_adjustment_is_said_so_with_the_row_s_figures(
    tmp_path: Path,
) -> None:
    # raw, the busy original is 2x faster; the replay's machine is 70 % slower by the probes,
    # so adjusted for it the original is the slower side: the text may not say the original
    # "was the slower side" beside a raw difference that says the opposite
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=BASE, others=0.35)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.5 for v in BASE],
        latency_scale=2.0,
        seed=2,
        speeds=[v * 0.3 for v in BASE],
        others=0.01,
    )
    _, data = _report(tmp_path)
    for metric in (_offline(data), _single_stream_p90(data)):
        raw, adjusted = metric["delta_rel"], metric["adjusted"]["delta_rel"]
        slower_raw = "replay" if (raw > 0) == metric["metric"].endswith("_ns") else "original"
        assert slower_raw == "replay"  # the figures of the row
        assert metric["verdict"] == "inconclusive: machine unstable"
        reason = metric["reason"]
        assert "the original was the slower side" not in reason
        assert (
            f"adjusted for the machine the difference is {adjusted:+.1%}, which makes the "
            "original the slower side" in reason
        )
        assert "35% of the machine's CPU time" in reason
        assert "re-capture the original on a quiet machine" in reason


def test_an_adjusted_row_that_disagrees_with_its_scenario_says_why_it_does_not_count(
    tmp_path: Path,
) -> None:
    # as measured the replay equals the original; its machine is 20 % faster by the probes, so
    # adjusted for it the replay is slower: raw decides (reproduced), the adjusted row does not
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=BASE)
    make_run(tmp_path / "r" / "replay", throughput=BASE, seed=2, speeds=[v * 1.2 for v in BASE])
    code, data = _report(tmp_path)
    assert code == 0
    for name in ("Offline", "SingleStream"):
        scenario = _scenario(data, name)
        assert scenario["verdict"] == "reproduced"
        for m in scenario["metrics"]:
            a = m.get("adjusted")
            if a is None:
                continue
            assert m["verdict"] == "reproduced"
            assert a["verdict"] == "not reproduced"
            assert a["note"].startswith("does not count: as measured")
    md = (tmp_path / "out" / "report.md").read_text()
    adjusted_rows = [line for line in md.splitlines() if line.startswith("| ↳ adjusted")]
    assert adjusted_rows
    for line in adjusted_rows:
        assert "does not count: as measured" in line
        assert "| not reproduced |" not in line
    html = (tmp_path / "out" / "report.html").read_text()
    for section in html.split("<h2>")[1:]:
        if "✓ reproduced</span></h2>" in section:
            assert "class='not-reproduced'" not in section
            assert "does not count: as measured" in section


def _scenario(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in data["scenarios"] if s["scenario"] == name)


@pytest.mark.parametrize(
    ("original_others", "replay_others", "want"),
    [
        # `make demo` beside a parallel `make test`: other processes took 54 % of the CPU time
        # during the replay, 2 of its 3 Server runs INVALID against 0 of the original's 5
        (0.01, 0.54, "inconclusive: machine unstable"),
        # the same INVALID runs on a quiet machine are a regression
        (0.01, 0.01, "not reproduced"),
        # ... and a busy original does not excuse a quiet replay's
        (0.54, 0.01, "not reproduced"),
    ],
)
def test_invalid_server_runs_of_a_busy_replay_are_the_machine_s_not_a_regression(
    tmp_path: Path, original_others: float, replay_others: float, want: str
) -> None:
    make_run(
        tmp_path / "r" / "original",
        throughput=BASE,
        seed=1,
        speeds=BASE,
        others=original_others,
        server=["VALID"] * 5,
    )
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.8 for v in BASE[:3]],
        latency_scale=1.25,
        seed=2,
        speeds=[v * 0.95 for v in BASE[:3]],
        others=replay_others,
        server=["INVALID", "VALID", "INVALID"],
    )
    code, data = _report(tmp_path)
    server = _scenario(data, "Server")
    validity = next(m for m in server["metrics"] if m["metric"] == "validity")
    assert (validity.get("raw_verdict") or validity["verdict"]) == "not reproduced"
    assert "2 of 3 replay run(s) INVALID, 0 of 5 original run(s)" in validity["reason"]
    # one piece of evidence, one verdict: every row of the scenario says the same
    assert {m["verdict"] for m in server["metrics"]} == {want}
    assert server["verdict"] == want
    assert data["verdict"] == want
    if want.startswith("inconclusive"):
        assert "machine busy" in validity["reason"]
        assert "54% of the machine's CPU time" in validity["reason"]
        assert "replay on a quiet machine" in validity["reason"]
        assert not data["summary"].startswith("NOT REPRODUCED")
    assert code == (0 if want.startswith("inconclusive") else 1)


@pytest.mark.parametrize(
    ("others", "want"), [(0.54, "inconclusive: machine unstable"), (0.01, "not reproduced")]
)
def test_invalid_server_runs_of_an_interleaved_pair_on_a_busy_machine_are_undecided(
    tmp_path: Path, others: float, want: str
) -> None:
    # the demo's A/A check (`--against self`) beside other work: both sides shared the load
    for name, validity, seed in (
        ("original", ["VALID"] * 3, 1),
        ("replay", ["INVALID", "VALID", "INVALID"], 2),
    ):
        run = make_run(
            tmp_path / "r" / name,
            throughput=BASE[:3],
            seed=seed,
            speeds=BASE[:3],
            others=others,
            server=validity,
        )
        record = json.loads((run / "run.json").read_text())
        record["interleave"] = {"id": "pair-1", "rounds": 3, "seed": 7}
        (run / "run.json").write_text(json.dumps(record))
    code, data = _report(tmp_path)
    assert any(n.startswith("paired:") for n in data["notes"])
    server = _scenario(data, "Server")
    validity = next(m for m in server["metrics"] if m["metric"] == "validity")
    assert validity["verdict"] == want
    assert server["verdict"] == want
    assert code == (0 if want.startswith("inconclusive") else 1)


@pytest.mark.parametrize(
    ("raw", "adjusted", "unstable", "want"),
    [
        ("reproduced", "not reproduced", True, "reproduced"),
        ("not reproduced", "reproduced", False, "reproduced after machine adjustment"),
        ("inconclusive", "not reproduced", True, "not reproduced"),
        ("inconclusive", "inconclusive", True, "inconclusive: machine unstable"),
        ("inconclusive", "inconclusive", False, "inconclusive"),
        ("inconclusive", None, True, "inconclusive: machine unstable"),
        ("not reproduced", None, True, "not reproduced"),
    ],
)
def test_combination_table(raw: Any, adjusted: Any, unstable: bool, want: str) -> None:
    assert combine(raw, adjusted, unstable=unstable) == want


def test_roll_up_and_exit_codes() -> None:
    assert roll_up(["reproduced", "reproduced after machine adjustment"]) == (
        "reproduced after machine adjustment"
    )
    assert roll_up(["not comparable: different hardware", "not reproduced"]) == "not reproduced"
    assert exit_code("reproduced after machine adjustment", strict=True) == 0
    assert exit_code("not comparable: different hardware", strict=False) == 0
    assert exit_code("not comparable: different hardware", strict=True) == 1
    assert exit_code("inconclusive: machine unstable", strict=True) == 1


@pytest.mark.parametrize(
    ("original", "replay", "verdict"),
    [
        (["VALID"], ["INVALID"], "not reproduced"),  # one run each: the replay's only run failed
        (["VALID"] * 10, ["VALID"] * 9 + ["INVALID"], "reproduced"),  # a sporadic flake
        (["VALID"] * 10, ["VALID"] * 6 + ["INVALID"] * 4, "not reproduced"),  # p = 0.043
        (["VALID"] * 10, ["VALID"] * 4 + ["INVALID"] * 6, "not reproduced"),  # most INVALID
        (["VALID"] * 8 + ["INVALID"] * 2, ["VALID"] * 8 + ["INVALID"] * 2, "reproduced"),
        (["INVALID"], ["INVALID"], "reproduced"),  # the original was not VALID either
        # half the original INVALID is not "most VALID": 2 of 2 against 1 of 2 is chance
        (["VALID", "INVALID"], ["INVALID", "INVALID"], "reproduced"),
    ],
)
def test_loadgen_validity_tells_a_flake_from_a_regression(
    original: list[str], replay: list[str], verdict: str
) -> None:
    assert decide_validity(original, replay)[0] == verdict


def test_fisher_tail_matches_the_hypergeometric_by_hand() -> None:
    # 4 of 10 bad vs 0 of 10: C(4,4) C(16,6) / C(20,10)
    assert fisher_greater(4, 10, 0, 10) == pytest.approx(8008 / 184756)
    assert fisher_greater(0, 10, 3, 10) == pytest.approx(1.0)


def test_a_gpu_run_is_adjusted_by_its_gpu_probe(tmp_path: Path) -> None:
    """The GPU ran 25 % slower (a lower clock) while the CPU kernels read the same: the GPU's
    fp16 product is the speed index, so the unchanged software reproduces after adjustment."""
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST, gpu_speeds=FAST)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.75 for v in BASE],
        latency_scale=1 / 0.75,
        seed=2,
        speeds=FAST,
        gpu_speeds=[v * 0.75 for v in FAST],
    )
    _, data = _report(tmp_path)
    tp = _offline(data)
    assert tp["adjusted"]["speed_index"] == "gpu_matmul_tflops"
    assert tp["adjusted"]["machine_delta_rel"] == pytest.approx(-0.25)
    assert tp["verdict"] == "reproduced after machine adjustment"
    assert "GPU's fp16 matrix product" in (tmp_path / "out" / "report.md").read_text()


def test_a_gpu_run_whose_gpu_was_not_probed_is_not_adjusted_by_the_cpu(tmp_path: Path) -> None:
    make_run(tmp_path / "r" / "original", throughput=BASE, seed=1, speeds=FAST, gpu_speeds=FAST)
    make_run(
        tmp_path / "r" / "replay",
        throughput=[v * 0.75 for v in BASE],
        seed=2,
        speeds=[v * 0.75 for v in FAST],  # the CPU moved along, but the work ran on the GPU
        gpu_speeds=[None] * len(BASE),
    )
    _, data = _report(tmp_path)
    tp = _offline(data)
    assert tp.get("adjusted") is None
    assert tp["verdict"] == "not reproduced"


def test_every_run_invalid_on_both_sides_is_said_not_just_reproduced() -> None:
    """ "Server reproduced" when every Server run on both sides was INVALID."""
    verdict, reason = decide_validity(["INVALID"] * 3, ["INVALID"] * 3, "Server")
    assert verdict == "reproduced"  # the same: the software did not change
    assert "every run INVALID (3 original, 3 replay)" in reason
    assert "raise server_target_latency_ns or lower server_target_qps" in reason


def test_the_console_line_of_such_a_scenario_says_it(tmp_path: Path) -> None:
    from repro.compare.build import build_report
    from repro.compare.inputs import resolve_inputs
    from repro.reports.text import render
    from repro.spec.models import Tolerances

    make_run(
        tmp_path / "r" / "original", throughput=[100, 101], seed=1, server=["INVALID", "INVALID"]
    )
    make_run(
        tmp_path / "r" / "replay", throughput=[100, 101], seed=2, server=["INVALID", "INVALID"]
    )
    orig, reps = resolve_inputs(tmp_path / "r" / "original", [tmp_path / "r" / "replay"])
    text = render(build_report(orig, reps, tolerances=Tolerances()))
    [line] = [x for x in text.splitlines() if x.strip().startswith("Server")]
    assert "every run INVALID" in line
