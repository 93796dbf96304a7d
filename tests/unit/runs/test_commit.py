"""One way to commit a run: `repro.runs.commit.commit_run` names, writes, fsyncs and renames;
every writer of run.json calls it, and nothing else in the package writes a run record."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from repro.runs import commit, layout
from repro.runs.commit import commit_run
from repro.runs.record import RunRecord, record_digest
from repro.runs.store import load_run

PACKAGE = Path(__file__).resolve().parents[3] / "repro"
#: the one module that writes run.json
COMMITTER = PACKAGE / "runs" / "commit.py"
#: every writer of run.json: a replay, a dispatched one (its provisional record and the
#: gathered one), an imported original, a profile added to a run
WRITERS = ("replay/replayer.py", "replay/dispatched.py", "mlperf/importing.py", "profiling.py")
#: `.dump()` calls of other models than RunRecord, by module and receiver
OTHER_DUMPS = {("harness/profiled_pass.py", "profile")}
#: calls that write, create or move the file or folder they are given
WRITE_CALLS = frozenset(
    {
        "atomic_write_text",
        "atomic_path",
        "write_text",
        "write_bytes",
        "open",
        "replace",
        "rename",
        "copyfile",
        "copy",
        "copy2",
        "move",
        "touch",
    }
)


def _record(**fields: object) -> RunRecord:
    return RunRecord.model_validate(
        {
            "run_id": "r1",
            "spec_name": "synthetic",
            "spec_id": "a" * 64,
            "spec_path": "",
            "status": "complete",
            "started_utc": "2026-11-30T00:00:00+00:00",
            "repro_version": "t",
            **fields,
        }
    )


def test_a_committed_run_is_the_record_with_its_digest_under_its_final_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(commit.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    final = tmp_path / "synthetic" / "r1"
    work = layout.partial_of(final)
    work.mkdir(parents=True)
    assert commit_run(work, _record(), final=final) == final
    assert not work.exists()
    assert [p.name for p in final.iterdir()] == [layout.RUN_FILE]  # no temporary left
    doc = json.loads(layout.record_file(final).read_text())
    assert doc["record_sha256"] == record_digest(doc)
    assert load_run(final).run_id == "r1"
    assert len(synced) == 3  # the file, the folder it is in, the folder it was renamed in


def test_a_commit_that_fails_leaves_the_record_before_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "r1"
    run.mkdir()
    commit_run(run, _record(message="before"))
    before = layout.record_file(run).read_bytes()

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(commit.os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        commit_run(run, _record(message="after"))
    assert layout.record_file(run).read_bytes() == before
    assert [p.name for p in run.iterdir()] == [layout.RUN_FILE]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _names_record_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _name(n) == "record_file" for n in ast.walk(node))


def test_no_module_but_the_committer_writes_a_run_record() -> None:
    found = []
    for path in _modules():
        if path == COMMITTER:
            continue
        rel = str(path.relative_to(PACKAGE))
        for call in _calls(path):
            name = _name(call)
            if name == "dump" and not call.args and isinstance(call.func, ast.Attribute):
                receiver = ast.unparse(call.func.value)
                if (rel, receiver) not in OTHER_DUMPS:
                    found.append(f"{rel}:{call.lineno}: {ast.unparse(call)}")
            elif name in WRITE_CALLS and _names_record_file(call):
                found.append(f"{rel}:{call.lineno}: {ast.unparse(call)}")
    assert not found, (
        "run.json is written by repro.runs.commit.commit_run only (a `.dump()` of another "
        f"model: add it to OTHER_DUMPS): {found}"
    )


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_of_a_run_commits_it_through_the_one_function(writer: str) -> None:
    calls = [c for c in _calls(PACKAGE / writer) if _name(c) == "commit_run"]
    assert calls, f"{writer} writes run.json: through commit_run"


def test_the_check_sees_a_record_written_another_way(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(run, record):\n"
        "    atomic_write_text(layout.record_file(run), record.dump())\n"
        "    layout.record_file(run).write_text('{}')\n"
    )
    calls = _calls(module)
    assert any(_name(c) == "dump" for c in calls)
    assert sum(_name(c) in WRITE_CALLS and _names_record_file(c) for c in calls) == 2
