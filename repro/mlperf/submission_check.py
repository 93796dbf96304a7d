"""repro's check of an MLPerf submission tree (one it wrote or any other), by the rules of a
round's official checkers (`repro.mlperf.round_rules`): the tree's layout and names, the
systems, the benchmarks and their scenarios, then every result folder
(`repro.mlperf.submission_results`). Every violation is listed with the checker's wording, the
rule it breaks (`submission_findings.RULES`) and which checker flags it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from repro.errors import SpecError
from repro.mlperf.round_rules import (
    AVAILABILITIES,
    DIVISIONS,
    MAX_FILE_BYTES,
    MEANINGFUL_FIELDS,
    SCENARIOS,
    SYSTEM_FIELDS,
    SYSTEM_TYPES,
    RoundRules,
    checker_model,
)
from repro.mlperf.submission_findings import NEW, OLD, Findings
from repro.mlperf.submission_results import Result, check_result
from repro.mlperf.submission_tree import SubmissionTree, submitter_roots

#: the scenario a folder stands for: its name, or its lower-case spelling (SCENARIO_MAPPING)
_SCENARIO_NAMES = {
    **{s: s for s in (*SCENARIOS, "Interactive")},
    **{s.lower(): s for s in (*SCENARIOS, "Interactive")},
}


def check_tree(top: Path, rules: RoundRules) -> Findings:
    """Every violation of the round's rules in the tree under `top` (the folder holding
    closed/ open/ network/, or one submitter's folder)."""
    _refuse_links_out(top)
    found = Findings(rules.name)
    roots = submitter_roots(top)
    one = roots == [top]  # one submitter's folder: the tree's top is two levels up
    base = top.parent.parent if one else top
    if not one:
        _top_level(base, found)
    if not roots:
        found.add(
            "layout.results",
            str(top),
            "no <division>/<submitter>/results/ here: not a submission tree",
        )
    for root in roots:
        _submitter(SubmissionTree(root, rules), base, found)
    return found


def _refuse_links_out(top: Path) -> None:
    """A symlink in the tree that leads outside it is refused before anything is read: the
    check would judge (and show) a file that is not part of the submission."""
    inside = top.resolve()
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            link = Path(folder) / name
            if not link.is_symlink():
                continue
            target = link.resolve()
            if target != inside and inside not in target.parents:
                raise SpecError(
                    f"{link}: a symbolic link to {link.readlink()}, outside the tree {top}",
                    hint="a submission holds its own files: copy the file into the tree or "
                    "remove the link",
                )


def _rel(path: Path, top: Path) -> str:
    try:
        return path.relative_to(top).as_posix() or "."
    except ValueError:
        return str(path)


def _top_level(top: Path, found: Findings) -> None:
    if not top.is_dir():
        return
    for entry in sorted(top.iterdir()):
        if (
            entry.is_dir()
            and entry.name not in DIVISIONS
            and entry.name not in (".git", ".github", "assets")
        ):
            found.add("layout.division", entry.name, "invalid division in input dir", checkers=OLD)
        elif entry.is_file() and not entry.name.endswith((".md", ".pdf")):
            found.add(
                "layout.files",
                entry.name,
                "Root contains files outside division folder",
                checkers=OLD,
            )
    for division in DIVISIONS:
        for entry in sorted((top / division).glob("*")):
            if entry.is_file():
                found.add(
                    "layout.files",
                    _rel(entry, top),
                    f"{division} contains files outside submitter folder",
                    checkers=OLD,
                )


def _submitter(tree: SubmissionTree, top: Path, found: Findings) -> None:
    _walk_files(tree.root, top, found)
    results = tree.results()
    if not results.is_dir():
        found.add("layout.results", _rel(tree.root, top), "has no results/ folder")
        return
    systems = {p.name for p in results.iterdir() if p.is_dir()}
    for path in sorted(tree.systems().glob("*.json")):
        if path.stem not in systems:
            found.add(
                "layout.unused_system",
                _rel(path, top),
                "systems has the following files with no results",
                checkers=OLD,
            )
    if (
        tree.division != "open"
        and tree.rules.calibration
        and not (
            tree.calibration().is_file()
            or (tree.root / "documentation" / "calibration.md").is_file()
        )
    ):
        found.add(
            "calibration",
            _rel(tree.root, top),
            "has not calibration file. One of calibration.md or documentation/"
            "calibration.md is required",
            checkers=OLD,
        )
    mapping = _model_mapping(tree, top, found)
    for system in sorted(systems):
        doc = _system(tree, system, top, found)
        for bench in sorted(p for p in (results / system).iterdir() if p.is_dir()):
            _benchmark(tree, system, bench.name, doc, mapping, top, found)


def _walk_files(root: Path, top: Path, found: Findings) -> None:
    """The single-file checker's folder checks: broken links, files over 50 MB, names starting
    with a dot or holding a space, __pycache__, empty folders."""
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        if not dirs and not files:
            found.add("layout.empty", _rel(here, top), "empty directory", checkers=OLD)
        if here.name == "__pycache__":
            found.add("layout.names", _rel(here, top), "a __pycache__ directory", checkers=OLD)
        for name in [*dirs, *files]:
            path = here / name
            if name.startswith(".") or " " in name:
                found.add(
                    "layout.names",
                    _rel(path, top),
                    "a git unfriendly name (starts with a dot) or a space",
                    checkers=OLD,
                )
        for name in files:
            path = here / name
            if path.is_symlink() and not path.exists():
                found.add("layout.symlink", _rel(path, top), "a broken symbolic link", checkers=OLD)
            elif path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
                found.add("layout.size", _rel(path, top), "a file greater than 50 MB", checkers=OLD)


def _model_mapping(tree: SubmissionTree, top: Path, found: Findings) -> dict[str, str]:
    path = tree.model_mapping()
    if tree.division != "open" or not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
        found.add("benchmark", _rel(path, top), "not a JSON object of names (the checkers stop)")
        return {}
    return {str(k): str(v) for k, v in doc.items()}


def _system(tree: SubmissionTree, system: str, top: Path, found: Findings) -> dict[str, Any]:
    path = tree.system_json(system)
    where = _rel(path, top)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        found.add("system.missing", where, "system json file not found")
        return {}
    except (OSError, ValueError) as exc:
        found.add("system.missing", where, f"not JSON ({exc})")
        return {}
    if not isinstance(doc, dict):
        found.add("system.missing", where, "not a JSON object")
        return {}
    _system_fields(doc, tree, where, found)
    return doc


def _system_fields(doc: dict[str, Any], tree: SubmissionTree, where: str, found: Findings) -> None:
    if str(doc.get("status", "")).lower() not in AVAILABILITIES:
        found.add("system.status", where, f"has invalid status ({doc.get('status')})")
    if doc.get("system_type") not in SYSTEM_TYPES:
        found.add("system.type", where, f"has invalid system type ({doc.get('system_type')})")
    for key in SYSTEM_FIELDS:
        if key not in doc:
            found.add("system.field", where, f"field {key} is missing")
        elif key in MEANINGFUL_FIELDS and not doc[key]:
            found.add(
                "system.empty", where, f"field {key} requires a meaningful response but is empty"
            )
    if str(doc.get("submitter", "")).lower() != tree.submitter.lower():
        found.add(
            "system.submitter",
            where,
            f"has submitter {doc.get('submitter')}, directory has {tree.submitter}",
        )
    if str(doc.get("division", "")).lower() != tree.division:
        found.add(
            "system.division",
            where,
            f"has division {doc.get('division')}, directory has {tree.division}",
        )
    network = str(doc.get("is_network", "false")).lower() == "true"
    if tree.division in ("closed", "network") and network != (tree.division == "network"):
        found.add(
            "system.network",
            where,
            f"incorrect network mode(={network}) for division {tree.division}",
        )


def _benchmark(
    tree: SubmissionTree,
    system: str,
    bench: str,
    doc: dict[str, Any],
    mapping: dict[str, str],
    top: Path,
    found: Findings,
) -> None:
    rules = tree.rules
    folder = tree.results() / system / bench
    where = _rel(folder, top)
    model = checker_model(rules, bench, mapping)
    closed = tree.division != "open"
    if model not in rules.models:
        found.add(
            "benchmark",
            where,
            f"{bench!r} is not a benchmark of round {rules.name}"
            + (
                " (the new checker stops with a TypeError on it)"
                if closed
                else ": map it in model_mapping.json to the benchmark whose task it performs"
            ),
        )
        return
    kind = doc.get("system_type")
    system_type = kind if isinstance(kind, str) else None
    bench_rules = rules.benchmarks.get(model)
    if bench_rules is None:
        found.note(
            f"{bench}: repro holds the numeric rules of resnet only (sample counts, data "
            "set size, accuracy target): those of this benchmark are not checked"
        )
    scenarios = sorted(p.name for p in folder.iterdir() if p.is_dir())
    if bench_rules is not None and system_type is not None and system_type in bench_rules.required:
        _scenarios(
            bench_rules.required[system_type], scenarios, closed, where, model, system_type, found
        )
    for name in scenarios:
        fixed = _SCENARIO_NAMES.get(name, name)
        res = Result(tree, top, system, bench, name, fixed, bench_rules, system_type)
        check_result(res, found)


def _scenarios(
    required: tuple[str, ...] | None,
    scenarios: list[str],
    closed: bool,
    where: str,
    model: str,
    system_type: str,
    found: Findings,
) -> None:
    if required is None:
        found.add(
            "benchmark.system_type",
            where,
            f"has an invalid model {model}, system_type={system_type}: not a benchmark of "
            "that system type",
            checkers=OLD | (NEW if closed else frozenset()),
        )
        return
    if not closed:
        return
    have = {_SCENARIO_NAMES.get(s, s) for s in scenarios}
    if missing := sorted(set(required) - have):
        found.add(
            "scenarios.missing", where, f"does not have all required scenarios, missing {missing}"
        )
    if unknown := sorted(have - set(required)):
        found.add(
            "scenarios.unknown",
            where,
            f"ignoring scenario {unknown} (neither required nor optional for a "
            f"{system_type} system)",
        )
