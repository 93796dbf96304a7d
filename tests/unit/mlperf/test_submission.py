"""Writing a submission tree: built aside, renamed into place, readable as any folder is."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from repro.mlperf.submission import _commit, _scratch_beside, _user_conf
from repro.runs.record import SettingChange, TestRecord


def test_the_tree_renamed_into_place_has_the_umasks_mode_not_mkdtemps_private_one(
    tmp_path: Path,
) -> None:
    # the tree was built in a mkdtemp folder (0700) and renamed: `-o sub/` came out private,
    # unreadable to the group and others who are to upload or check it
    old = os.umask(0o022)
    try:
        out = tmp_path / "sub"
        work = _scratch_beside(out)
        (work / "open").mkdir()
        _commit(work, out, force=False)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_user_conf_has_the_settings_the_run_used_not_only_the_spec_s() -> None:
    test = TestRecord(
        scenario="Offline",
        mode="performance",
        dir="Offline/performance/run_1",
        status="valid",
        settings={"offline_expected_qps": 100.0, "min_duration_ms": 600000},
        changed_settings={
            "offline_expected_qps": SettingChange(spec=100.0, used=1.5e6, why="too short")
        },
    )
    conf = _user_conf(test, "resnet50")
    assert "resnet50.Offline.target_qps = 1.5e+06" in conf
    assert "resnet50.Offline.min_duration = 600000" in conf
    assert "target_qps = 100" not in conf


def _submission(tmp_path: Path, doc: dict[str, object], *extra: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from repro.cli import cli

    system_json = tmp_path / "system.json"
    system_json.write_text(json.dumps(doc))
    result = CliRunner().invoke(
        cli,
        [
            "submission",
            str(tmp_path / "some-run"),
            "--submitter",
            "Org",
            "--system-json",
            str(system_json),
            "-o",
            str(tmp_path / "sub"),
            "--round",
            "v6.0",
            *extra,
        ],
    )
    return result.exit_code, result.stderr


def test_an_unfilled_template_is_refused_naming_its_fields(tmp_path: Path) -> None:
    """`--template`'s text went through up to its system name."""
    from repro.mlperf.system_description import TEMPLATE_NAME, template

    code, err = _submission(tmp_path, {**template(), "system_name": TEMPLATE_NAME})
    assert code == 2, err
    assert "still hold the template's text" in err
    assert "$.status ('available | preview | rdi')" in err
    assert not (tmp_path / "sub").exists()


def test_a_bad_system_name_from_the_file_is_said_of_the_file(tmp_path: Path) -> None:
    """The error blamed --system-name, which was not given."""
    code, err = _submission(tmp_path, {"system_name": "my box!"})
    assert code == 2, err
    assert f"{tmp_path / 'system.json'}: $.system_name 'my box!' is not a plain folder name" in err
    assert "--system-name" not in err.split("hint")[0]


@pytest.mark.parametrize(
    ("backend", "package"),
    [("torch", "torch 2.13.0"), ("onnxruntime", "onnxruntime 1.32.0"), ("tvm", "apache-tvm 0.27")],
)
def test_the_software_stack_names_the_backends_own_packages(backend: str, package: str) -> None:
    """A torch run's other_software_stack omitted torch: the packages came from a central list
    the torch plug-in was not on; they come from the plug-in's key packages now."""
    from repro.mlperf.system_description import derived_fields
    from repro.runs.record import RunRecord, TestRecord

    packages = {
        "torch": "2.13.0",
        "onnxruntime": "1.32.0",
        "apache-tvm": "0.27",
        "mlcommons-loadgen": "6.0.17",
        "numpy": "2.4.6",
        "requests": "2.32",
    }
    record = RunRecord(
        run_id="r",
        spec_name="s",
        spec_id="a" * 64,
        spec_path="",
        status="complete",
        started_utc="",
        repro_version="t",
        fingerprint={
            "hardware": {"cpu": {"model": "X"}},
            "packages": packages,
            "python": {"version": "3.11.7"},
        },
        tests=[
            TestRecord(
                scenario="Offline",
                mode="performance",
                dir="d",
                status="valid",
                backend={"name": backend, "device": "CPU"},
            )
        ],
    )
    stack = derived_fields(record)["other_software_stack"]
    assert package in stack
    assert "mlcommons-loadgen 6.0.17" in stack
    assert "requests" not in stack  # not a package that changes results
