"""No name from the command line or a run record can make repro write outside its folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.errors import SpecError
from repro.runs import layout
from tests.helpers import make_run

BAD = ["..", "../evil", "a/b", "/abs", ".hidden", "x/../../y", "a..b", "", "white space"]


@pytest.mark.parametrize("name", BAD)
def test_unsafe_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is not a plain folder name"):
        layout.run_dir(tmp_path, "spec", name)
    with pytest.raises(SpecError, match="is not a plain folder name"):
        layout.spec_results(tmp_path, name)


@pytest.mark.parametrize("name", ["original", "20261129T171502Z-3fa2c1", "run_1", "v1.0+cpu"])
def test_safe_names_pass(name: str, tmp_path: Path) -> None:
    assert layout.run_dir(tmp_path, "spec", name) == tmp_path / "spec" / name


@pytest.mark.parametrize("run_id", ["../../escaped", "a/b", ".."])
def test_replay_refuses_a_traversing_run_id_before_doing_anything(
    run_id: str, root: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(root / "specs" / "ort-digits.json"),
            "--results-dir",
            str(tmp_path / "results"),
            "--run-id",
            run_id,
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--run-id" in result.output
    assert not (tmp_path / "results").exists()


def test_a_crafted_spec_name_in_a_run_record_cannot_place_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, seed in (("original", 1), ("replay", 2)):
        run = make_run(tmp_path / "r" / name, throughput=[100, 101, 99], seed=seed)
        record = json.loads((run / "run.json").read_text())
        record["spec_name"] = ".."
        (run / "run.json").write_text(json.dumps(record))
    work = tmp_path / "work"
    (work / "reports").mkdir(parents=True)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(
        cli,
        ["report", "--compare", str(tmp_path / "r" / "original"), str(tmp_path / "r" / "replay")],
    )
    assert result.exit_code == 2, result.output
    # refused where the record is read (the report's folder is never reached)
    assert "$.spec_name is '..': not a spec's name" in result.output
    assert not list(work.rglob("report.*"))


def test_the_root_of_the_file_system_is_refused_at_once(root: Path) -> None:
    import time

    from click.testing import CliRunner

    from repro.cli import cli

    t0 = time.monotonic()
    result = CliRunner().invoke(
        cli, ["report", "--compare", "/", str(root / "results" / "ort-digits" / "original")]
    )
    assert result.exit_code == 2, result.output
    assert "the root of the file system is not a published tree" in result.stderr
    assert time.monotonic() - t0 < 30  # refused, not walked (a walk of / takes minutes)


def test_a_search_past_its_bounds_says_how_far_it_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro.errors import SpecError
    from repro.mlperf import tree as mlperf

    for i in range(30):
        (tmp_path / f"d{i}" / "sub").mkdir(parents=True)
    monkeypatch.setattr(mlperf, "MAX_SEARCH_FOLDERS", 20)
    with pytest.raises(SpecError, match=r"searched 20 folders .*found 0 LoadGen summaries"):
        mlperf.find_results(tmp_path)


def test_a_tree_reached_through_a_link_is_found_and_a_loop_is_not_followed(
    tmp_path: Path,
) -> None:
    from repro.mlperf import tree as mlperf
    from tests.helpers import published_result

    bench = published_result(tmp_path / "real")
    (tmp_path / "view").mkdir()
    (tmp_path / "view" / "tree").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real")
    found = mlperf.find_results(tmp_path / "view")
    assert [p.name for p in found] == [bench.parent.name]


NAMES = ["a...", "a..b", "a.", "a.b", "ab", "a_b-c.1", "1", "x" * 64, "x" * 65, "-a", ".a", "A"]


@pytest.mark.parametrize("name", NAMES)
def test_a_spec_name_validate_accepts_is_one_replay_can_write(name: str, root: Path) -> None:
    """One name rule: a spec `repro validate` accepts gets its results folder at replay and its
    spec file at capture (`a...` used to pass the spec's pattern and fail at replay)."""
    from pydantic import TypeAdapter, ValidationError

    from repro.spec.types import Name

    try:
        TypeAdapter(Name).validate_python(name)
    except ValidationError:
        accepted = False
    else:
        accepted = True
    try:
        layout.spec_results(root, name)
    except SpecError:
        writable = False
    else:
        writable = True
    assert accepted <= writable, f"{name!r}: validate accepts it, replay refuses it"
    if ".." in name:
        assert not accepted


def test_validate_refuses_a_name_with_two_dots_in_a_row(data_dir: Path, tmp_path: Path) -> None:
    spec = json.loads((data_dir / "specs" / "valid-digits.json").read_text())
    spec["name"] = "a..."
    spec.pop("id")
    for art in spec["artifacts"].values():
        if "path" in art:
            art["path"] = str((data_dir / "specs" / art["path"]).resolve())
    env = spec["environment"]
    for key in ("python_lock", "flake_lock"):
        if key in env:
            env[key]["path"] = str((data_dir / "specs" / env[key]["path"]).resolve())
    (tmp_path / "s.json").write_text(json.dumps(spec))
    result = CliRunner().invoke(cli, ["validate", "--fix-id", str(tmp_path / "s.json")])
    assert result.exit_code == 2, result.output
    assert "$.name" in result.stderr
