"""Another harness's served results as a side of a comparison: AIPerf's summary (and the
folder of a multi-run profile), GuideLLM's and `vllm bench serve`'s JSON, or a folder of such
files (repeats of one load are the side's rounds). Read by `repro.formats.served`; the record
says plainly that the server's stack is not pinned."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Final

from repro.errors import SpecError
from repro.formats.served.aiperf import SUMMARY as AIPERF_SUMMARY
from repro.formats.served.aiperf import read_aiperf
from repro.formats.served.files import json_documents
from repro.formats.served.guidellm import is_guidellm, read_guidellm
from repro.formats.served.toolrun import ToolRun, as_record
from repro.formats.served.vllm_bench import is_vllm_bench, read_vllm_bench
from repro.runs.store import LoadedRun

#: how deep a folder is searched for AIPerf's summaries (a multi-run profile keeps them at
#: profile_runs/run_NNNN/) and how many JSON files of a folder are looked into
MAX_DEPTH: Final = 4
MAX_FILES: Final = 500


def harness_side(path: Path) -> LoadedRun | None:
    """The runs of another harness that `path` names, as one side; None when `path` is not
    such a result (a repro run, a published MLPerf tree: read elsewhere)."""
    runs = _runs(path)
    if not runs:
        return None
    tools = sorted({r.tool for r in runs})
    if len(tools) > 1:
        raise SpecError(
            f"{path}: holds the results of {' and '.join(r.name for r in _first_of(runs))}",
            hint="one side is one harness's runs: name a folder or file of one of them",
        )
    by_scenario: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        by_scenario[r.scenario].add(r.load)
    mixed = {s: loads for s, loads in by_scenario.items() if len(loads) > 1}
    if mixed:
        scenario, loads = next(iter(mixed.items()))
        raise SpecError(
            f"{path}: {runs[0].name} ran {len(loads)} loads that are each the nearest to LoadGen's "
            f"{scenario} ({'; '.join(sorted(loads))}): a comparison takes one load at a time",
            hint="keep the runs of one load in the folder you name (a sweep's benchmarks are "
            "different loads, not rounds)",
        )
    root = path if path.is_dir() else path.parent
    requests: dict[tuple[str, int], Any] = {}
    repeat: dict[tuple[str, str], int] = defaultdict(int)
    for r in runs:
        repeat[(r.scenario, r.load)] += 1
        if r.requests is not None:
            requests[(r.scenario, repeat[(r.scenario, r.load)])] = r.requests
    return LoadedRun(path, "tool", as_record(runs, root), requests)


def _first_of(runs: list[ToolRun]) -> list[ToolRun]:
    seen: dict[str, ToolRun] = {}
    for r in runs:
        seen.setdefault(r.tool, r)
    return list(seen.values())


def _runs(path: Path) -> list[ToolRun]:
    if path.is_file():
        return _file_runs(path)
    if not path.is_dir():
        return []
    summaries = sorted(_aiperf_summaries(path))
    if summaries:
        return [read_aiperf(p) for p in summaries]
    runs: list[ToolRun] = []
    files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
    for p in files[:MAX_FILES]:
        runs += _file_runs(p, quiet=True)
    return runs


def _file_runs(path: Path, *, quiet: bool = False) -> list[ToolRun]:
    """The runs of one result file; a JSON file of none of the harnesses is not theirs (None,
    or with `quiet` False and a harness's name, the reader's error)."""
    if path.name == AIPERF_SUMMARY:
        return [read_aiperf(path)]
    if path.suffix not in (".json", ".jsonl") or path.name.startswith("."):
        return []
    try:
        docs = json_documents(path, "the harness")
    except SpecError:
        if quiet:
            return []
        raise
    if len(docs) == 1 and is_guidellm(docs[0]):
        return read_guidellm(path, docs[0])
    if all(is_vllm_bench(doc) for doc in docs):
        return read_vllm_bench(path, docs)
    return []


def _aiperf_summaries(root: Path) -> list[Path]:
    """AIPerf's summaries below `root` (a multi-run profile's runs), links not followed."""
    found = []
    top = str(root).count(os.sep)
    for folder, dirs, files in os.walk(root):
        if AIPERF_SUMMARY in files:
            found.append(Path(folder, AIPERF_SUMMARY))
        if folder.count(os.sep) - top >= MAX_DEPTH:
            dirs.clear()
        dirs[:] = [d for d in dirs if not d.startswith(".")]
    return found
