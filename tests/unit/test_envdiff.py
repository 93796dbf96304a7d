"""Environment drift: exactly what changed, likeliest causes first."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner

from repro.cli import cli
from repro.envdiff import diff_views, view_from_fingerprint
from tests.helpers import FINGERPRINT, make_run


def test_one_package_and_one_flag_are_exactly_the_changes(tmp_path: Path) -> None:
    a = copy.deepcopy(FINGERPRINT)
    b = copy.deepcopy(FINGERPRINT)
    b["packages"]["numpy"] = "2.0.0"
    b["hardware"]["cpu"]["flags"] = ["avx2", "avx512f"]
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    assert [(c["group"], c["key"], c["a"], c["b"]) for c in changes] == [
        ("packages", "numpy", "2.4.6", "2.0.0"),
        ("hardware", "cpu.flags.avx512f", False, True),
    ]


def test_identical_fingerprints_have_no_changes() -> None:
    assert diff_views(view_from_fingerprint(FINGERPRINT), view_from_fingerprint(FINGERPRINT)) == []


def test_hostname_and_interpreter_path_are_not_drift() -> None:
    a = copy.deepcopy(FINGERPRINT)
    b = copy.deepcopy(FINGERPRINT)
    a["os"]["hostname"], b["os"]["hostname"] = "one", "two"
    a["python"]["executable"], b["python"]["executable"] = "/a/python", "/b/python"
    assert diff_views(view_from_fingerprint(a), view_from_fingerprint(b)) == []


def test_run_dirs_rank_threads_before_cpu_and_packages(tmp_path: Path) -> None:
    b_fp = copy.deepcopy(FINGERPRINT)
    b_fp["hardware"]["cpu"]["model"] = "Other CPU"
    b_fp["packages"]["onnxruntime"] = "1.20.0"
    make_run(tmp_path / "a", throughput=[1.0], threads=2)
    make_run(tmp_path / "b", throughput=[1.0], threads=1, fingerprint=b_fp)
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]
    )
    keys = [c["key"] for c in json.loads(result.stdout)["changes"]]
    assert keys[:3] == ["options.intra_op_threads", "cpu.model", "onnxruntime"]


def test_env_diff_bad_input_exits_2(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema": "something/else"}')
    result = CliRunner().invoke(
        cli, ["env", "diff", str(tmp_path / "x.json"), str(tmp_path / "x.json")]
    )
    assert result.exit_code == 2
    assert "not a repro fingerprint" in result.stderr
