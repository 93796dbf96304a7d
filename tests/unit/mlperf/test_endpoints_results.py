"""MLPerf v6.1's MLCommons endpoints results (config.yaml + performance/result_summary.json +
accuracy/accuracy_results.json, no LoadGen log), as published (tests/data/
inference_results_v6.1: NVIDIA's VR-NVL72 deepseek-r1 and qwen3-vl-235b-a22b), read as the
v6.1 checker reads them; and endpoints' files made hostile."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.formats.served.endpoints import read_result
from repro.mlperf.published import result_rows
from repro.mlperf.sides import open_sides

ROOT = Path(__file__).resolve().parents[3]
TREE = ROOT / "tests" / "data" / "inference_results_v6.1"
SYSTEM = TREE / "closed" / "NVIDIA" / "results" / "VR-NVL72_VR-288GB_aarch64x72_TRT"
CHECKER = ROOT.parent / "shared" / "tools" / "mlperf-submission-checker" / "tools" / "submission"

#: the v6.1 checker's performance metric of each result (its PerformanceCheck's
#: get_performance_metric_check on this tree, run at the pinned commit)
CHECKER_FIGURES = {
    ("deepseek-r1", "Server"): ("tokens_per_second", 1175890.2208168241),
    ("deepseek-r1", "Offline"): ("samples_per_second", 312.2314212203155),
    ("deepseek-r1-interactive", "Server"): ("samples_per_second", 168.44961107838623),
    ("qwen3-vl-235b-a22b", "Server"): ("samples_per_second", 2323.2698417825063),
    ("qwen3-vl-235b-a22b", "Offline"): ("samples_per_second", 2392.6979194587702),
}


def test_every_endpoints_result_is_a_row_by_the_checkers_metric() -> None:
    rows = result_rows([TREE])
    got = {(r["benchmark"], r["scenario"]): (r["metric"], r["value"]) for r in rows}
    assert got == CHECKER_FIGURES
    assert {r["round"] for r in rows} == {"v6.1"}
    assert all(r["accelerator"] == "NVIDIA Vera Rubin" for r in rows)


def test_results_and_its_levels_list_them(tmp_path: Path) -> None:
    runner = CliRunner()
    for level in (TREE, TREE / "closed" / "NVIDIA", SYSTEM / "deepseek-r1"):
        out = runner.invoke(cli, ["results", str(level), "--csv", str(tmp_path / "t.csv")])
        assert out.exit_code == 0, out.output
        assert "deepseek-r1" in (tmp_path / "t.csv").read_text()


@pytest.mark.skipif(not (CHECKER / "submission_checker").is_dir(), reason="no checker here")
def test_the_checkers_endpoints_parser_reads_the_same_figures() -> None:
    """The pinned v6.1 checker's own parser, called on each result: its QPS, tokens/s, TTFT
    and TPOT 99th percentiles (early-stopping estimates) are repro's."""
    code = (
        "import json, logging, sys; sys.path.insert(0, sys.argv[1]); logging.disable(50)\n"
        "from submission_checker.parsers.endpoints_parser import EndpointsParser\n"
        "keys = ['result_completed_samples_per_sec', 'result_completed_tokens_per_second',\n"
        "        'result_first_token_99.00_percentile_latency_ns',\n"
        "        'result_time_per_output_token_99.00_percentile_ns', 'num_errors']\n"
        "print(json.dumps({d: {k: EndpointsParser(d)[k] for k in keys} for d in sys.argv[2:]}))"
    )
    dirs = [str(p) for p in sorted(SYSTEM.glob("*/*")) if p.is_dir()]
    done = subprocess.run(
        [sys.executable, "-c", code, str(CHECKER), *dirs],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    theirs = json.loads(done.stdout)
    for folder, figures in theirs.items():
        mine = read_result(Path(folder)).metrics
        assert mine["samples_per_second"] == pytest.approx(
            figures["result_completed_samples_per_sec"]
        )
        assert mine["tokens_per_second"] == figures["result_completed_tokens_per_second"]
        assert mine["num_errors"] == figures["num_errors"]
        ttft = figures["result_first_token_99.00_percentile_latency_ns"]
        assert mine.get("ttft_early_stopping_p99_ns") == ttft
        tpot = figures["result_time_per_output_token_99.00_percentile_ns"]
        assert mine.get("tpot_early_stopping_p99_ns") == tpot


def test_a_result_is_a_side_of_a_report(tmp_path: Path) -> None:
    """A published endpoints result against a copy of itself: every figure reproduced, its
    definitions the same on both sides."""
    server = SYSTEM / "deepseek-r1" / "Server"
    [side] = open_sides(server)
    assert side.kind == "mlperf"
    assert side.record.environment["format"] == "endpoints"
    copy = _scenario_copy(tmp_path)
    out = CliRunner().invoke(
        cli,
        [
            "report",
            "--compare",
            str(server),
            str(copy),
            "--json",
            "--same-hardware",
            "-o",
            str(tmp_path / "rep"),
        ],
    )
    assert out.exit_code == 0, out.output
    report, _ = json.JSONDecoder().raw_decode(out.output[out.output.index("{") :])
    rows = {m["metric"]: m for s in report["scenarios"] for m in s["metrics"]}
    assert rows["tokens_per_second"]["judged"]
    assert rows["tokens_per_second"]["verdict"] == "reproduced"
    assert rows["ttft_p99_ns"]["original_value"] == rows["ttft_p99_ns"]["replay_value"]


def _scenario_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "closed" / "X" / "results" / "sys" / "deepseek-r1" / "Server"
    shutil.copytree(SYSTEM / "deepseek-r1" / "Server", dst)
    return dst


def _edit_summary(folder: Path, **changes: object) -> Path:
    path = folder / "performance" / "result_summary.json"
    raw = json.loads(path.read_text())
    raw.update(changes)
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"complete": False, "state": "interrupted"}, "$.complete: false"),
        ({"n_samples_completed": 10**9}, "$.n_samples_completed"),
        ({"duration_ns": -5}, "$.duration_ns"),
        ({"qps": float("nan")}, "NaN"),
        ({"tps": 1e300}, "$.tps"),
    ],
)
def test_hostile_summaries_are_errors_naming_file_and_field(
    tmp_path: Path, changes: dict[str, object], said: str
) -> None:
    folder = _scenario_copy(tmp_path)
    path = _edit_summary(folder, **changes)
    with pytest.raises(SpecError) as err:
        read_result(folder)
    assert str(path) in err.value.message
    assert said in err.value.message


def test_an_unreadable_result_is_a_row_that_says_why(tmp_path: Path) -> None:
    folder = _scenario_copy(tmp_path)
    _edit_summary(folder, complete=False)
    [row] = result_rows([tmp_path])
    assert row["validity"] == "unreadable"
    assert "complete: false" in row["notes"]


def test_a_yaml_bomb_is_refused(tmp_path: Path) -> None:
    folder = _scenario_copy(tmp_path)
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for k in range(1, 9):
        bomb += (
            f"b{k}: &b{k} [*{'a' if k == 1 else f'b{k - 1}'}"
            + f",*{'a' if k == 1 else f'b{k - 1}'}" * 8
            + "]\n"
        )
    (folder / "config.yaml").write_text(bomb)
    with pytest.raises(SpecError, match="anchors and aliases"):
        read_result(folder)


def test_a_link_out_of_the_result_is_refused(tmp_path: Path) -> None:
    folder = _scenario_copy(tmp_path)
    outside = tmp_path / "elsewhere.json"
    outside.write_text((folder / "performance" / "result_summary.json").read_text())
    (folder / "performance" / "result_summary.json").unlink()
    (folder / "performance" / "result_summary.json").symlink_to(outside)
    with pytest.raises(SpecError, match="a link out of"):
        read_result(folder)
