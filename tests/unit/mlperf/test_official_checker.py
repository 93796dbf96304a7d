"""The official checkers' output read back as repro's rules (lines as the pinned checkers print
them), lined up with repro's findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.mlperf.official_checker import (
    CheckerRun,
    parse_errors,
    result_key,
    side_by_side,
    tools_folder,
)
from repro.mlperf.submission_findings import CHECKER, CHECKER_OLD, OLD, Findings

TOP = Path("/tmp/sub")
RES = "open/Repro/results/vm2c/ort-resnet50/Offline"
NEW_OUTPUT = f"""\
[2026-12-02 02:50:11,932 performance_check.py:202 ERROR] {TOP}/{RES}/performance/run_1/mlperf_log_detail.txt performance_sample_count, found 64, needs to be >= 1024
[2026-12-02 02:50:11,932 performance_check.py:381 ERROR] {TOP}/{RES}/performance/run_1/mlperf_log_detail.txt Test duration less than 600s in user config. expected=600000, found=300
[2026-12-02 02:50:11,932 base.py:58 ERROR] Some performance checks Checks failed for: {TOP}/{RES}/performance/run_1/mlperf_log_detail.txt
[2026-12-02 02:50:11,933 main.py:236 ERROR] NoResults {TOP}/{RES}/performance/run_1/mlperf_log_detail.txt
[2026-12-02 02:50:11,934 main.py:300 ERROR] something repro has never seen in {TOP}/{RES}
[2026-12-02 02:50:11,934 main.py:361 ERROR] SUMMARY: submission has errors
"""  # noqa: E501
OLD_OUTPUT = f"""\
[2026-12-02 02:50:12,151 submission_checker_old.py:1912 ERROR] {RES}/accuracy accurcy run does not cover all dataset, accuracy samples: 64, dataset size: 50000
[2026-12-02 02:50:12,157 submission_checker_old.py:2069 ERROR] {RES}/performance/run_1/mlperf_log_detail.txt performance_sample_count, found 64, needs to be >= 1024
[2026-12-02 02:50:12,158 submission_checker_old.py:3221 ERROR] {RES}/performance/run_1 has issues
[2026-12-02 02:50:12,158 submission_checker_old.py:3974 ERROR] SUMMARY: submission has errors
"""  # noqa: E501
KEY = "open/Repro/vm2c/ort-resnet50/Offline"


def test_each_error_line_is_read_as_a_rule_at_a_result_and_summaries_kept_apart() -> None:
    errors, rollups = parse_errors(NEW_OUTPUT, TOP)
    assert [(e.rule, e.where) for e in errors] == [
        ("performance_sample_count", KEY),
        ("min_duration", KEY),
        (None, KEY),  # a line no pattern knows: a rule repro does not mirror
    ]
    assert len(rollups) == 3
    assert rollups[-1] == "SUMMARY: submission has errors"
    errors, _ = parse_errors(OLD_OUTPUT, TOP)
    assert [e.rule for e in errors] == ["accuracy.dataset", "performance_sample_count"]


def test_paths_of_both_layouts_are_one_result() -> None:
    assert result_key(f"{RES}/performance/run_1") == KEY
    assert result_key("open/Repro/measurements/vm2c/ort-resnet50/Offline/user.conf") == KEY
    compliance = "open/Repro/compliance/vm2c/ort-resnet50/Offline/TEST01/verify_accuracy.txt"
    assert result_key(compliance) == f"{KEY}/TEST01"
    assert result_key(f"{RES}/TEST01/performance/run_1") == f"{KEY}/TEST01"
    assert result_key("open/Repro/systems/vm2c.json") == "open/Repro/systems/vm2c"


def test_side_by_side_shows_who_lists_each_rule() -> None:
    found = Findings("v5.1")
    found.add("min_duration", f"{RES}/performance/run_1", "Test duration less than 600s")
    found.add("accuracy.dataset", f"{RES}/accuracy", "does not cover", checkers=OLD)
    runs = []
    for name, output in ((CHECKER, NEW_OUTPUT), (CHECKER_OLD, OLD_OUTPUT)):
        run = CheckerRun(name, [], 1, output)
        run.errors, run.rollups = parse_errors(output, TOP)
        runs.append(run)
    rows = {
        (r.rule, r.repro, r.checkers[CHECKER], r.checkers[CHECKER_OLD])
        for r in side_by_side(found, runs)
    }
    assert rows == {
        ("min_duration", True, True, False),
        ("accuracy.dataset", True, False, True),
        ("performance_sample_count", False, True, True),
        ("?", False, True, False),
    }


def test_a_folder_without_the_checkers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no submission_checker/main\.py"):
        tools_folder(tmp_path)
