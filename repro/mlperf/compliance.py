"""Compliance verdicts of a published MLPerf result, by the rules of its round's checker.

A scenario's compliance tests sit in `TESTxx/` folders, under the scenario folder or in the
sibling `compliance/<system>/<benchmark>/<scenario>/` tree, each with the verification scripts'
output: `verify_performance.txt` (TEST01, TEST04, TEST05), `verify_accuracy.txt` (TEST01,
TEST06, TEST07, TEST08), `verify_output_len.txt` (TEST09). How the checker (mlcommons/inference
`tools/submission`: `check_compliance_acc_dir` of the v4.1 checker, `ComplianceCheck` of the
new one) judges them, and so this module:

- a performance verification passes on its `TEST PASS` line and fails on `TEST FAIL`;
- TEST01's accuracy verification is deterministic first: `TEST PASS` passes. Otherwise the
  checker compares the accuracy of the sampled outputs, `accuracy/baseline_accuracy.txt` (the
  accuracy run) and `accuracy/compliance_accuracy.txt` (the compliance run), on every metric of
  the benchmark's accuracy target: |1 - baseline / compliance| x 100 at most 1 % (0.1 % for a
  99.9 % benchmark; stable-diffusion-xl CLIP 1 %, FID 2 %), a metric missing from a file failing;
- TEST06 (LLMs) has no `TEST PASS` line: it passes when `First token check pass: True` (or
  `Skipped`), `EOS check pass: True` and `Sample length check pass: True` are all printed.

A file with no verdict at all (truncated) is "unreadable", and only such a file. Which tests a
round requires of a benchmark comes from its checker (`_RULES`); a test the round does not
require, and any test of an open-division result (the checker checks closed and network
only), is reported but not counted against the result.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from repro.mlperf.accuracy_txt import parse_accuracy_text
from repro.mlperf.rules import round_number

Verdict = Literal["PASS", "FAIL", "unreadable"]

#: a compliance test's folder: TEST01, TEST04, and the halves of v1.x's TEST04 (TEST04-A/-B)
COMPLIANCE_TEST = re.compile(r"TEST\d+(?:-[A-Z])?", re.IGNORECASE)

#: the verification files a test folder may hold, by the kind of check each states
_VERIFY = {
    "accuracy": "verify_accuracy.txt",
    "performance": "verify_performance.txt",
    "output_len": "verify_output_len.txt",
}
_BASELINE, _COMPLIANCE = "baseline_accuracy.txt", "compliance_accuracy.txt"
#: the verification files the checker requires of each test's folder ("Missing accuracy file
#: in compliance dir", "Missing performance file ...", "Missing output length ...")
_REQUIRED = {
    "accuracy": ("TEST01", "TEST06", "TEST07", "TEST08"),
    "performance": ("TEST01", "TEST04"),
    "output_len": ("TEST09",),
}


@dataclass(frozen=True)
class Check:
    """One verification of one compliance test, and whether it counts for the result."""

    test: str  # TEST01
    kind: str  # accuracy, performance, output_len
    verdict: Verdict
    why: str = ""  # empty where the file's own verdict line says it all
    counted: bool = True

    def as_dict(self) -> dict[str, Any]:
        # every field is a str or a bool: no deep copy (dataclasses.asdict) needed
        return {
            "test": self.test,
            "kind": self.kind,
            "verdict": self.verdict,
            "why": self.why,
            "counted": self.counted,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Check:
        return cls(
            test=str(data["test"]),
            kind=str(data["kind"]),
            verdict=cast("Verdict", data["verdict"]),
            why=str(data.get("why", "")),
            counted=bool(data.get("counted", True)),
        )


# The tests each round's checker requires, by the checker's model name (each a list of names).
# v4.0 and v4.1: the lists of check_compliance_dir in the v4.1 checker (TEST01, TEST04, TEST05
# less its removals; TEST06 for the LLMs); from v5.0: `models_TEST0x` of
# submission_checker/constants.py. "models" is the round's list of benchmarks.
_V4 = "resnet retinanet rnnt bert-99 bert-99.9 dlrm-v2-99 dlrm-v2-99.9 3d-unet-99 3d-unet-99.9"
_V4_LLM = "gptj-99 gptj-99.9 llama2-70b-99 llama2-70b-99.9 stable-diffusion-xl mixtral-8x7b"
_V5 = (
    "resnet retinanet bert-99 bert-99.9 dlrm-v2-99 dlrm-v2-99.9 3d-unet-99 3d-unet-99.9 "
    "stable-diffusion-xl rgat pointpainting"
)
_LLAMA2 = "llama2-70b-99 llama2-70b-99.9 llama2-70b-interactive-99 llama2-70b-interactive-99.9"
_V51_TEST06 = (
    f"{_LLAMA2} llama3.1-405b llama3.1-8b llama3.1-8b-interactive llama3.1-405b-interactive "
    "mixtral-8x7b deepseek-r1"
)
_V6_MODELS = (
    "resnet bert-99 bert-99.9 3d-unet-99 3d-unet-99.9 llama3.1-8b llama3.1-8b-edge "
    "llama2-70b-99.9 stable-diffusion-xl rgat deepseek-r1 whisper gpt-oss-120b wan-2.2-t2v-a14b "
    "qwen3-vl-235b-a22b dlrm-v3 yolo-95 yolo-99"
)
_RULES: dict[str, dict[str, str]] = {
    "v4.0": {
        "models": f"{_V4} {_V4_LLM}",
        "TEST01": _V4,
        "TEST04": "resnet",
        "TEST05": _V4,
        "TEST06": "llama2-70b-99 llama2-70b-99.9 mixtral-8x7b",
    },
    "v4.1": {
        "models": f"{_V4} {_V4_LLM}",
        "TEST01": f"{_V4} stable-diffusion-xl",
        "TEST04": "resnet stable-diffusion-xl",
        "TEST05": _V4,
        "TEST06": "llama2-70b-99 llama2-70b-99.9 mixtral-8x7b",
    },
    "v5.0": {
        "models": f"{_V5} gptj-99 gptj-99.9 {_LLAMA2} mixtral-8x7b llama3.1-405b",
        "TEST01": _V5,
        "TEST04": "resnet stable-diffusion-xl pointpainting",
        "TEST06": f"{_LLAMA2} gptj-99 gptj-99.9 mixtral-8x7b",
    },
    "v5.1": {
        "models": f"{_V5} whisper llama3.1-8b llama3.1-8b-edge llama2-70b-99 llama2-70b-99.9 "
        "mixtral-8x7b llama3.1-405b deepseek-r1",
        "TEST01": f"{_V5} whisper",
        "TEST04": "resnet stable-diffusion-xl pointpainting",
        "TEST06": _V51_TEST06,
    },
    "v6.0": {
        "models": f"{_V6_MODELS} retinanet llama2-70b-99 mixtral-8x7b llama3.1-405b pointpainting",
        "TEST01": f"{_V5} whisper yolo-99 yolo-95",
        "TEST04": "resnet stable-diffusion-xl pointpainting wan-2.2-t2v-a14b",
        "TEST06": _V51_TEST06,
        "TEST07": "gpt-oss-120b",
        "TEST08": "dlrm-v3",
        "TEST09": "gpt-oss-120b",
    },
    "v6.1": {
        "models": f"{_V6_MODELS} qwen3.6-27b e2e-rag-qna e2e-rag-db",
        "TEST01": "resnet bert-99 bert-99.9 3d-unet-99 3d-unet-99.9 stable-diffusion-xl rgat "
        "whisper yolo-99 yolo-95",
        "TEST04": "resnet stable-diffusion-xl wan-2.2-t2v-a14b",
        "TEST06": "llama2-70b-99.9 llama2-70b-interactive-99 llama2-70b-interactive-99.9 "
        "llama3.1-8b llama3.1-8b-interactive deepseek-r1",
        "TEST07": "gpt-oss-120b",
        "TEST08": "dlrm-v3",
        "TEST09": "gpt-oss-120b e2e-rag-qna",
    },
}

#: TEST01's accuracy figures, as the accuracy scripts print them, per benchmark (the metrics of
#: the checker's accuracy target: acc, mAP, F1, AUC, DICE, CLIP_SCORE and FID_SCORE, WER's
#: `accuracy=`); a benchmark not listed is compared on its primary metric
_TEST01_FIGURES: dict[str, tuple[str, ...]] = {
    "resnet": ("accuracy",),
    "rgat": ("accuracy",),
    "whisper": ("accuracy",),
    "rnnt": ("accuracy",),
    "retinanet": ("mAP",),
    "ssd-small": ("mAP",),
    "ssd-large": ("mAP",),
    "yolo-95": ("mAP",),
    "yolo-99": ("mAP",),
    "pointpainting": ("mAP", "Total"),
    "bert-99": ("f1",),
    "bert-99.9": ("f1",),
    "dlrm-v2-99": ("AUC",),
    "dlrm-v2-99.9": ("AUC",),
    "3d-unet-99": ("DICE",),
    "3d-unet-99.9": ("DICE",),
    "stable-diffusion-xl": ("CLIP_SCORE", "FID_SCORE"),
}
#: the checker's `accuracy-delta-perc` (every round since v4.0), else 1 % or 0.1 % for 99.9
_DELTA_PERCENT: dict[str, dict[str, float]] = {
    "stable-diffusion-xl": {"CLIP_SCORE": 1.0, "FID_SCORE": 2.0},
}
#: the checker's `model_mapping` and its guesses for a folder named otherwise
_MODEL_NAMES = {
    "resnet50": "resnet",
    "mobilenet": "resnet",
    "ssd-resnet34": "retinanet",
    "ssd-mobilenet": "ssd-small",  # v0.5-v2.0; a mobilenet in name only: its figure is mAP
}


def checker_model(benchmark: str) -> str:
    """The checker's name of a benchmark folder (`resnet50` -> `resnet`; repro's
    `llama2-70b-99-interactive` -> `llama2-70b-interactive-99`; `llama3_1-8b` -> `llama3.1-8b`)."""
    name = benchmark.strip().lower().replace("llama3_1", "llama3.1")
    if name.endswith("-interactive") and (
        m := re.fullmatch(r"(.+?)(-99(?:\.9)?)-interactive", name)
    ):
        name = f"{m.group(1)}-interactive{m.group(2)}"
    if name in _MODEL_NAMES:
        return _MODEL_NAMES[name]
    if name.startswith("ssd-mobilenet"):
        return "ssd-small"
    if any(part in name for part in ("resnet50", "mobilenet", "efficientnet")):
        return "resnet"
    for bert in ("bert-99.9", "bert-99"):
        if bert in name:
            return bert
    return name


def required_tests(round_name: str | None, model: str) -> tuple[str, ...] | None:
    """The tests the round's checker requires of a benchmark (its checker name); None where the
    round, or the benchmark in that round, has no rule here."""
    rule = {name: models.split() for name, models in _RULES.get(round_name or "", {}).items()}
    if not any(model in models for models in rule.values()):
        return None
    return tuple(t for t, models in rule.items() if t != "models" and model in models)


def places(scenario_dir: Path) -> list[Path]:
    """Where a scenario's TESTxx folders may be: the scenario folder, and the sibling
    `compliance/<system>/<benchmark>/<scenario>/` tree (its scenario folder spelled in any case)."""
    found = [scenario_dir]
    parts = scenario_dir.parts
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        sibling = Path(*parts[:i], "compliance", *parts[i + 1 :])
        if not sibling.is_dir() and sibling.parent.is_dir():
            sibling = next(
                (p for p in sibling.parent.iterdir() if p.name.lower() == sibling.name.lower()),
                sibling,
            )
        found.append(sibling)
    return found


def _test_folders(scenario_dir: Path) -> dict[str, Path]:
    """Each compliance test's folder by its upper-case name; the first place that has it."""
    out: dict[str, Path] = {}
    for place in places(scenario_dir):
        try:
            with os.scandir(place) as entries:
                names = [
                    e.name for e in entries if COMPLIANCE_TEST.fullmatch(e.name) and e.is_dir()
                ]
        except OSError:  # no such folder, or not a folder
            continue
        for name in sorted(names):
            out.setdefault(name.upper(), place / name)
    return out


def read_compliance(
    scenario_dir: Path, *, round_name: str | None, benchmark: str, division: str | None
) -> list[Check]:
    """Every verification of the scenario's compliance tests, judged as the round's checker
    judges it, with whether it counts for the result."""
    model = checker_model(benchmark)
    required = required_tests(round_name, model)
    checks: list[Check] = []
    for test, folder in sorted(_test_folders(scenario_dir).items()):
        for kind, name in _VERIFY.items():
            path = folder / name
            if not path.is_file():
                if test not in _REQUIRED[kind]:
                    continue
                check = Check(test, kind, "FAIL", f"{name} is missing: the checker requires it")
            else:
                check = _judge(test, kind, path, model, round_name)
            if (division or "").lower() == "open":
                check = _uncounted(check, "open division, which the checker does not judge")
            elif required is not None and test.split("-")[0] not in required:
                check = _uncounted(check, f"not required of {model} in {round_name}")
            checks.append(check)
    return checks


def _uncounted(check: Check, why: str) -> Check:
    return Check(
        check.test,
        check.kind,
        check.verdict,
        _join(check.why, f"{why}: not counted"),
        counted=False,
    )


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _judge(test: str, kind: str, path: Path, model: str, round_name: str | None) -> Check:
    text = _read(path)
    if text is None:
        return Check(test, kind, "unreadable", f"{path.name} cannot be read")
    base = test.split("-")[0]
    if kind == "accuracy" and base == "TEST06":
        return _test06(test, text, path.name)
    verdict = _verdict_line(text)
    if kind == "accuracy" and base == "TEST01" and verdict != "PASS":
        if _files_only(round_name):
            return _test01_files(test, verdict, path.parent / "accuracy", round_name)
        return _test01_accuracy(test, verdict, path.parent / "accuracy", model)
    if verdict is None:
        return Check(test, kind, "unreadable", f"{path.name} has no TEST PASS or TEST FAIL line")
    return Check(test, kind, verdict)


def _files_only(round_name: str | None) -> bool:
    """Rounds before v2.0, whose checkers judged TEST01's accuracy by its files alone: a
    deterministic check that did not pass was logged, never compared (`check_compliance_acc_dir`
    of the v1.0 and v1.1 checkers; the comparison of the sampled outputs' accuracy came in v2.0)."""
    known = round_number(round_name)
    return known is not None and known < (2, 0)


def _test01_files(
    test: str, verdict: Literal["FAIL"] | None, folder: Path, round_name: str | None
) -> Check:
    """TEST01's accuracy by a v1.x checker: verify_accuracy.txt and an accuracy/ folder pass."""
    first = "deterministic: TEST FAIL" if verdict else "verify_accuracy.txt has no verdict line"
    if not folder.is_dir():
        return Check(test, "accuracy", "FAIL", _join(first, "no accuracy/ folder"))
    why = f"{first}; {round_name}'s checker compares no accuracy figures then (from v2.0 on)"
    return Check(test, "accuracy", "PASS", why)


def _verdict_line(text: str) -> Literal["PASS", "FAIL"] | None:
    """The verification script's own verdict: a `TEST PASS` line wins, as in the checker."""
    if "TEST PASS" in text:
        return "PASS"
    return "FAIL" if "TEST FAIL" in text else None


#: TEST06's checks, each passing on the values listed
_TEST06_LINES = {
    "First token check pass": ("True", "Skipped"),
    "EOS check pass": ("True",),
    "Sample length check pass": ("True",),
}


def _test06(test: str, text: str, name: str) -> Check:
    """TEST06 passes when each of its checks printed a passing value; a file without some of
    them fails if it ran to its end (`TEST06 verification complete`), else it is truncated."""
    said: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key in _TEST06_LINES:
            said[key] = value.strip()
    shown = ", ".join(f"{k.removesuffix(' check pass').lower()} {v}" for k, v in said.items())
    failed = [k for k, v in said.items() if v not in _TEST06_LINES[k]]
    missing = [k for k in _TEST06_LINES if k not in said]
    if failed:
        return Check(test, "accuracy", "FAIL", shown)
    if missing and "verification complete" not in text:
        return Check(test, "accuracy", "unreadable", f"{name} has no '{missing[0]}' line")
    if missing:
        return Check(test, "accuracy", "FAIL", f"{name} has no '{missing[0]}' line")
    return Check(test, "accuracy", "PASS", shown)


def _test01_accuracy(test: str, verdict: Literal["FAIL"] | None, folder: Path, model: str) -> Check:
    """TEST01's accuracy after its deterministic check did not pass: the sampled outputs'
    accuracy in the compliance run against the baseline's, as the checker compares them."""
    first = "deterministic: TEST FAIL" if verdict else "verify_accuracy.txt has no verdict line"
    texts = {name: _read(folder / name) for name in (_BASELINE, _COMPLIANCE)}
    absent = [name for name, text in texts.items() if text is None]
    if absent:
        why = _join(first, f"no accuracy/{absent[0]} to compare with")
        return Check(test, "accuracy", "FAIL" if verdict else "unreadable", why)
    baseline = _figures(texts[_BASELINE] or "", model)
    compliance = _figures(texts[_COMPLIANCE] or "", model)
    for name, figures in ((_BASELINE, baseline), (_COMPLIANCE, compliance)):
        lacking = [m for m in (baseline or figures) if figures.get(m) is None]
        if not figures or lacking:
            what = f"no {lacking[0]}" if lacking else "no accuracy figure"
            return Check(test, "accuracy", "unreadable", _join(first, f"accuracy/{name}: {what}"))
    deltas = [
        (metric, _delta_percent(base or 0.0, compliance.get(metric) or 0.0), _limit(model, metric))
        for metric, base in baseline.items()
    ]
    off = [d for d in deltas if not d[1] <= d[2]]
    shown = ", ".join(
        f"{m} {'off by' if not d <= lim else 'within'} {d:.3g} % of the baseline (limit {lim:g} %)"
        for m, d, lim in (off or deltas)
    )
    # a failed deterministic check goes without saying: the comparison follows only then
    why = _join("" if verdict else first, f"non-deterministic: {shown}")
    return Check(test, "accuracy", "FAIL" if off else "PASS", why)


def _delta_percent(baseline: float, compliance: float) -> float:
    """The checker's |1 - baseline / compliance| x 100; infinite where a figure is 0 (the
    checker fails it)."""
    if baseline == 0 or compliance == 0:
        return math.inf
    return abs(1 - baseline / compliance) * 100


def _limit(model: str, metric: str) -> float:
    """The checker's `get_delta_perc`: its table, else 0.1 % for a 99.9 % benchmark, else 1 %."""
    return _DELTA_PERCENT.get(model, {}).get(metric, 0.1 if "99.9" in model else 1.0)


def _figures(text: str, model: str) -> dict[str, float | None]:
    """The figures TEST01 compares in one accuracy file: the benchmark's target metrics, or its
    primary metric for a benchmark without a rule; None for a metric the file lacks."""
    reading = parse_accuracy_text(text, model)
    names = _TEST01_FIGURES.get(model)
    if names is None:
        return {reading.metric: reading.value} if reading and math.isfinite(reading.value) else {}
    # a figure printed as NaN or infinity is none: the comparison is unreadable, not failed
    values = {
        k.lower(): v for k, v in (reading.values if reading else {}).items() if math.isfinite(v)
    }
    if model == "pointpainting":  # its mAP is printed as `mAP=` or as `'Total':`
        names = ("mAP",) if "map" in values else ("Total",)
    return {name: values.get(name.lower()) for name in names}


def overall(checks: Iterable[Check]) -> Verdict | None:
    """The result's compliance: FAIL if a counted verification failed, else "unreadable" if one
    could not be read, else PASS; None when nothing counts."""
    verdicts = [c.verdict for c in checks if c.counted]
    if not verdicts:
        return None
    if "FAIL" in verdicts:
        return "FAIL"
    return "PASS" if all(v == "PASS" for v in verdicts) else "unreadable"


def describe(checks: Iterable[Check]) -> str | None:
    """`TEST01 accuracy:PASS (non-deterministic: ...), performance:PASS; TEST04 ...`."""
    by_test: dict[str, list[str]] = {}
    for c in checks:
        by_test.setdefault(c.test, []).append(
            f"{c.kind}:{c.verdict}" + (f" ({c.why})" if c.why else "")
        )
    return "; ".join(f"{t} " + ", ".join(kinds) for t, kinds in sorted(by_test.items())) or None


def verdicts(checks: Iterable[Check]) -> dict[str, dict[str, str]]:
    """{test: {kind: verdict}}: every verification, counted or not."""
    out: dict[str, dict[str, str]] = {}
    for c in checks:
        out.setdefault(c.test, {})[c.kind] = c.verdict
    return out


def checks_of(environment: Mapping[str, Any], scenario: str) -> list[Check]:
    """A record's checks of a scenario: `compliance_checks`, or (a record written before them)
    its `compliance` verdicts, each counted."""
    stored = environment.get("compliance_checks", {}).get(scenario)
    if stored is not None:
        return [Check.from_dict(c) for c in stored]
    old: dict[str, dict[str, str]] = environment.get("compliance", {}).get(scenario, {})
    return [
        Check(test, kind, cast("Verdict", verdict))
        for test, kinds in sorted(old.items())
        for kind, verdict in sorted(kinds.items())
    ]
