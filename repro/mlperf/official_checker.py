"""MLCommons' official submission checkers, run on a tree as a submitter runs them, and their
errors read back beside repro's own check (`repro submission --official-checker PATH`).

PATH is a checkout of mlcommons/inference (or its `tools/submission/` folder). Both checkers
run from that folder: `python -m submission_checker.main` (`checker`) and
`python submission_checker_old.py` (`checker_old`), with `--input TREE --version ROUND` and
their CSV written to a temporary folder. They need PyYAML in the Python that runs them.

Each ERROR line they print is read as the rule of repro's check it states (the patterns below
follow the checkers' messages) and the result it concerns (`result_key`); lines that only sum
up others (`NoResults ...`, `Some ... checks failed`, `SUMMARY: ...`, `... has issues`) are kept
apart, and a line no pattern knows keeps rule None: it is an error repro's check does not
mirror.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from repro import _subprocess
from repro.errors import EnvironmentSetupError, UsageError
from repro.mlperf.submission_findings import CHECKER, CHECKER_OLD, Findings

_COMMANDS: Final = {
    CHECKER: ("-m", "submission_checker.main"),
    CHECKER_OLD: ("submission_checker_old.py",),
}
_ERROR_LINE = re.compile(r"^(?:\[[^\]]*\bERROR\]\s?|ERROR:[\w.]*:)(.*)$")
#: the lines that sum up other errors
_ROLLUP = re.compile(
    r"^(Some .* [Cc]hecks failed for|NoResults |SUMMARY: |.* has issues$|.*, accuracy not "
    r"valid$|.* is OK but accuracy has issues$|.* contains errors:$)"
)
#: (rule, pattern): the first match names the rule of a checker's message
_PATTERNS: Final = tuple(
    (rule, re.compile(p))
    for rule, p in (
        ("performance_sample_count", r"performance_sample_count, found"),
        ("seeds", r"(qsl|sample_index|schedule)_rng_seed is wrong"),
        ("min_duration", r"Test duration less than 600s"),
        (
            "early_stopping",
            r"Early stopping condition was not met|Not enough samples were processed",
        ),
        ("latency", r"Latency constraint (with early stopping )?not met"),
        ("min_queries", r"Required minimum Query Count not met"),
        ("min_samples_per_query", r"Required minimum samples per query not met"),
        ("accuracy.dataset", r"accurcy run does not cover all dataset"),
        ("accuracy.sample_count", r"accuracy_sample_count, found"),
        ("accuracy.hash", r"not hash value for"),
        (
            "accuracy.log",
            r"mlperf_log_accuracy\.json is (missing|not truncated)|"
            r"Max expected file size",
        ),
        ("accuracy.result", r"accuracy not met|has no accuracy\.txt"),
        (
            "compliance.missing",
            r"Missing TEST\d+ in compliance dir|Missing (accuracy|performance|"
            r"perfomance) file in compliance dir|no compliance dir for|"
            r"verify_\w+\.txt is missing in",
        ),
        (
            "compliance.performance",
            r"Compliance test performance check in .* failed|has no "
            r"performance/run_1 directory",
        ),
        (
            "compliance.accuracy",
            r"Compliance test accuracy check \(non-deterministic mode\)|has no "
            r"accuracy directory|TEST01/accuracy has file list mismatch",
        ),
        ("accuracy.files", r"/accuracy has file list mismatch"),
        ("performance.files", r"/performance/run_\d+ has file list mismatch"),
        ("accuracy.loadgen_errors", r"/accuracy(/mlperf_log_detail\.txt)? has loadgen errors"),
        ("performance.loadgen_errors", r"has loadgen errors"),
        ("performance.missing", r"Performance log missing|/performance/run_\d+ is missing"),
        ("performance.inferred", r"can not be inferred"),
        ("system.empty", r"requires a meaningful response but is empty"),
        ("system.status", r"has invalid status"),
        ("system.type", r"has invalid system type"),
        ("system.submitter", r"has submitter .*, directory has"),
        ("system.division", r"has division .*, (directory|division) has"),
        ("system.network", r"incorrect network mode"),
        ("system.missing", r"system json file not found|no system_desc for"),
        ("measurements.missing", r"measurements json file not found|is missing \S*\*\.json"),
        (
            "measurements.field",
            r"is missing meaningful value|(measurements\.json|/measurements/\S+"
            r"\.json|/results/[^/\s]+/[^/\s]+/[^/\s,]+), field \S+ is missing",
        ),
        ("system.field", r"field \S+ is missing$"),
        ("measurements.file", r"is missing (user\.conf|README\.md)$|is having empty"),
        ("code", r"src directory does not exist|is missing code_dir"),
        ("calibration", r"has not calibration file"),
        ("layout.unused_system", r"files with no results"),
        ("layout.files", r"files outside"),
        ("layout.names", r"git unfriendly name|spaces in their names|__pycache__"),
        ("layout.empty", r"empty directories"),
        ("layout.symlink", r"broken symbolic links"),
        ("layout.size", r"greater than 50 MB"),
        ("layout.division", r"invalid division in input dir"),
        ("benchmark.system_type", r"has an invalid model \S+, system_type="),
        ("benchmark", r"has an invalid model"),
        ("scenarios.missing", r"does not have all required scenarios"),
        ("scenarios.unknown", r"has all unknown scenarios|neither required nor optional"),
    )
)


@dataclass(frozen=True)
class CheckerError:
    """One error an official checker printed: the rule it states (None: one repro does not
    know), the result it concerns (`result_key`) and the line as printed."""

    rule: str | None
    where: str
    text: str


@dataclass
class CheckerRun:
    """What one official checker said of a tree."""

    checker: str
    command: list[str]
    returncode: int | None
    output: str
    errors: list[CheckerError] = field(default_factory=list)
    rollups: list[str] = field(default_factory=list)
    #: the exception that stopped it, when it stopped with a traceback
    crash: str | None = None

    @property
    def looks_ok(self) -> bool:
        return "SUMMARY: submission looks OK" in self.output and self.crash is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "checker": self.checker,
            "command": self.command,
            "returncode": self.returncode,
            "looks_ok": self.looks_ok,
            "crash": self.crash,
            "errors": [e.__dict__ for e in self.errors],
        }


def tools_folder(path: Path) -> Path:
    """The checkers' folder (`tools/submission`) of a checkout given as PATH."""
    for folder in (path, path / "tools" / "submission"):
        if (folder / "submission_checker" / "main.py").is_file() and (
            folder / "submission_checker_old.py"
        ).is_file():
            return folder
    raise UsageError(
        f"--official-checker {path}: no submission_checker/main.py and "
        "submission_checker_old.py there or under tools/submission/",
        hint="give a checkout of github.com/mlcommons/inference (or its tools/submission)",
    )


def run_checker(
    checker: str, tools: Path, top: Path, round_name: str, *, python: str, timeout_s: float = 900
) -> CheckerRun:
    """One official checker on the tree under `top`, by round `round_name`'s rules."""
    with tempfile.TemporaryDirectory(prefix="repro-checker-") as tmp:
        cmd = [
            python,
            *_COMMANDS[checker],
            "--input",
            str(top.resolve()),
            "--version",
            round_name,
            "--csv",
            str(Path(tmp) / "summary.csv"),
        ]
        try:
            proc = _subprocess.run(cmd, cwd=tools, timeout_s=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentSetupError(
                f"the official {checker} did not run ({' '.join(cmd)}): {exc}",
                hint="--checker-python: a Python with PyYAML (pip install pyyaml)",
            ) from exc
    output = proc.stdout + proc.stderr
    if "No module named 'yaml'" in output:
        raise EnvironmentSetupError(
            f"the official {checker} needs PyYAML, which {python} lacks",
            hint="pip install pyyaml into it, or give --checker-python PY",
        )
    run = CheckerRun(checker, cmd, proc.returncode, output)
    run.errors, run.rollups = parse_errors(output, top)
    run.crash = _crash(output)
    return run


def _crash(output: str) -> str | None:
    lines = output.rstrip().splitlines()
    if not any(ln.startswith("Traceback (most recent call last)") for ln in lines):
        return None
    return next((ln for ln in reversed(lines) if re.match(r"^\w+(Error|Exception)\b", ln)), "?")


def parse_errors(output: str, top: Path) -> tuple[list[CheckerError], list[str]]:
    """The checker's ERROR lines: errors (each with its rule and result) and roll-up lines.
    The lines that list a LoadGen log's errors after `... contains errors:` belong to the
    `has loadgen errors` line that follows them."""
    errors: list[CheckerError] = []
    rollups: list[str] = []
    in_listing = False
    for line in output.splitlines():
        m = _ERROR_LINE.match(line.strip())
        if not m:
            continue
        text = _relative(m.group(1).strip(), top)
        if text.endswith("contains errors:"):
            in_listing = True
        if _ROLLUP.match(text):
            rollups.append(text)
            continue
        rule = next((r for r, p in _PATTERNS if p.search(text)), None)
        if in_listing and rule is None:
            continue
        in_listing = False
        errors.append(CheckerError(rule, result_key(_first_path(text)), text))
    return errors, rollups


def _relative(text: str, top: Path) -> str:
    return text.replace(str(top.resolve()) + "/", "").replace(str(top) + "/", "")


def _first_path(text: str) -> str:
    m = re.search(r"((?:closed|open|network)/[^\s,()'\"\]]+)", text)
    return m.group(1).rstrip(".:") if m else ""


def result_key(path: str) -> str:
    """The result (or system, or folder) a path belongs to, for lining repro's findings up
    with a checker's: `<division>/<submitter>/<system>/<benchmark>/<scenario>` for anything in
    a result folder or in its measurements or compliance trees (`.../TEST01` for a compliance
    test's), `<division>/<submitter>/systems/<system>` for a system, else the path."""
    parts = path.strip("/").split("/")
    if len(parts) >= 3 and parts[2] in ("results", "measurements", "compliance"):
        head, rest = parts[:2], parts[3:]
        if parts[2] == "results" and len(rest) == 1:
            return "/".join([*head, "systems", rest[0]])
        if len(rest) >= 3:
            test = next((p for p in rest[3:] if re.fullmatch(r"TEST\d+", p)), None)
            return "/".join([*head, *rest[:3], *([test] if test else [])])
        return "/".join([*head, *rest])
    if len(parts) >= 4 and parts[2] == "systems":
        return "/".join([*parts[:2], "systems", parts[3].removesuffix(".json")])
    return path.strip("/")


def checker_pairs(errors: Iterable[CheckerError]) -> set[tuple[str, str | None]]:
    """(result, rule) of each error: what a comparison with repro's check lines up."""
    return {(e.where, e.rule) for e in errors}


@dataclass(frozen=True)
class Row:
    """One line of the side-by-side table: a rule at a result, and who lists it."""

    where: str
    rule: str
    repro: bool
    checkers: dict[str, bool]
    text: str


def side_by_side(found: Findings, runs: list[CheckerRun]) -> list[Row]:
    """Every (result, rule) that repro or a checker lists, with who lists it and one wording
    (the checker's where repro does not list it)."""
    texts: dict[tuple[str, str], str] = {}
    for v in found.violations:
        texts.setdefault((result_key(v.where), v.rule), v.why)
    theirs = {run.checker: checker_pairs(run.errors) for run in runs}
    for run in runs:
        for e in run.errors:
            texts.setdefault((e.where, e.rule or "?"), e.text)
    ours = {(result_key(v.where), v.rule) for v in found.violations}
    keys = sorted(ours | {(w, r or "?") for pairs in theirs.values() for w, r in pairs})
    return [
        Row(
            where,
            rule,
            (where, rule) in ours,
            {c: (where, None if rule == "?" else rule) in pairs for c, pairs in theirs.items()},
            texts.get((where, rule), ""),
        )
        for where, rule in keys
    ]
