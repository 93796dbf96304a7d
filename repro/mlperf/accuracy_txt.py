"""Read `<scenario>/accuracy/accuracy.txt` of a published MLPerf Inference result.

The file holds what the benchmark's accuracy script printed (often after progress lines),
then a `hash=<sha256>` line that the submission tooling appends (ignored here). The formats, by
the script that prints them (paths in github.com/mlcommons/inference):

- `accuracy=76.076%, good=38038, total=50000` -- resnet50, mobilenet:
  vision/classification_and_detection/tools/accuracy-imagenet.py
- `mAP=37.434%`, after pycocotools' `Average Precision (AP) @[ IoU=... ] = 0.374` table --
  retinanet, ssd: vision/classification_and_detection/tools/accuracy-openimages.py, accuracy-coco.py
- `{"exact_match": 82.92, "f1": 90.36}` -- bert: language/bert/accuracy-squad.py
- `{'rouge1': 44.54, 'rouge2': 22.12, 'rougeL': 28.74, 'rougeLsum': ..., 'gen_len': ...,
  'gen_num': ..., 'tokens_per_sample': ...}` after a `Results` line, numbers possibly printed as
  `np.float64(...)` -- gptj: language/gpt-j/evaluation.py; llama2-70b, mixtral-8x7b (which adds
  'gsm8k', 'mbxp', and MBXP's per-language count dicts that land in `values` too), llama3.1
  ('rougeL', 'exact_match'): language/<model>/evaluate-accuracy.py
- `Word Error Rate: 7.44%, accuracy=92.56%` -- rnnt: speech_recognition/rnnt/accuracy_eval.py;
  whisper: speech2text/accuracy_eval.py
- `Accuracy Results: {'FID_SCORE': 23.45, 'CLIP_SCORE': 31.78}` -- stable-diffusion-xl:
  text_to_image/tools/accuracy_coco.py
- `AUC=80.166%, accuracy=96.605%, good=..., total=..., queries=...` -- dlrm-v2:
  recommendation/dlrm_v2/pytorch/tools/accuracy-dlrm.py
- `Accuracy: mean = 0.86236, kidney = 0.9350, tumor = 0.7897` -- 3d-unet:
  vision/medical_imaging/3d-unet-kits19/accuracy_kits.py (read as `DICE`, `kidney`, `tumor`)
- `{"accuracy": 0.7286, "model": "rgat", ...}` -- rgat: graph/R-GAT/tools/accuracy_igbh.py

Two readers cover them, line by line: quoted `'name': number` pairs (Python or JSON dicts,
`np.float64(...)` wrappers, truncated dicts) and comma-separated `name=number` / `name: number`
items. Anything else (progress lines, pycocotools' table, paths) is skipped. A number printed
with `%` is returned as a fraction; the primary metric is put on its one scale (`_on_scale`:
AUC printed as `80.17` or `80.17%` is 0.8017 either way), and a figure off its scale is
damaged input (`out_of_range`). The primary metric per benchmark is the first entry of the
submission checker's `accuracy-target` (tools/submission/submission_checker.py), except where
noted in `_SPECS`. For yolo, pointpainting, deepseek-r1, gpt-oss and gnmt only the checker's
metric names were checked, not a printed file; a text without the expected name falls back to
the unknown-benchmark rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

__all__ = [
    "AccuracyReading",
    "out_of_range",
    "parse_accuracy_text",
    "primary_metric",
    "read_accuracy_file",
]


@dataclass(frozen=True)
class AccuracyReading:
    """The primary metric of one accuracy.txt, with every other number it printed."""

    metric: str  # MLPerf's primary metric for the benchmark, e.g. "top1", "mAP", "f1", "WER"
    value: float  # a %-printed value as a fraction (76.456% -> 0.76456), else as printed
    unit: str  # "fraction" for a %-printed value, else "score"
    higher_is_better: bool  # False for error rates (WER) and FID
    values: dict[str, float]  # every metric the text holds, by printed name (same unit rules)


@dataclass(frozen=True)
class _Spec:
    metric: str
    keys: tuple[str, ...]  # names the script prints the metric under
    higher_is_better: bool = True


# Benchmark folder name prefix (after dropping -99/-99.9) -> primary metric. Longest prefix wins.
_SPECS: dict[str, _Spec] = {
    "resnet": _Spec("top1", ("accuracy",)),
    "mobilenet": _Spec("top1", ("accuracy",)),
    "retinanet": _Spec("mAP", ("mAP",)),
    "ssd": _Spec("mAP", ("mAP",)),
    "yolo": _Spec("mAP", ("mAP",)),
    "pointpainting": _Spec("mAP", ("mAP", "Total")),
    "bert": _Spec("f1", ("f1",)),
    "dlrm": _Spec("AUC", ("AUC",)),
    # DLRMv3 prints `metric/lifetime_ne/rating: 0.87` (and _accuracy, _gauc); the checker's first
    # target is the NE, held as a floor (at least 99.9 % of the reference's)
    "dlrm-v3": _Spec("NE", ("metric/lifetime_ne/rating",)),
    # Wan 2.2 prints every VBench dimension, then their score: `'vbench_score': 70.16`
    "wan-2.2-t2v": _Spec("vbench_score", ("vbench_score",)),
    "3d-unet": _Spec("DICE", ("DICE",)),
    "gptj": _Spec("rouge1", ("rouge1",)),
    "gpt-j": _Spec("rouge1", ("rouge1",)),
    "llama2-70b": _Spec("rouge1", ("rouge1",)),
    "mixtral-8x7b": _Spec("rouge1", ("rouge1",)),
    "llama3.1-8b": _Spec("rouge1", ("rouge1",)),
    "llama3.1-405b": _Spec("rougeL", ("rougeL",)),  # the checker's first target for 405b
    "deepseek-r1": _Spec("exact_match", ("exact_match",)),
    "gpt-oss": _Spec("exact_match", ("exact_match",)),
    "rgat": _Spec("accuracy", ("accuracy",)),
    "gnmt": _Spec("BLEU", ("BLEU",)),
    # The checker scores speech by `accuracy` (100 - WER); WER is the quantity MLPerf quotes.
    "rnnt": _Spec("WER", ("WER",), higher_is_better=False),
    "whisper": _Spec("WER", ("WER",), higher_is_better=False),
    # The checker holds FID and CLIP to a window; FID is the headline, CLIP stays in `values`.
    "stable-diffusion": _Spec("FID", ("FID_SCORE", "FID"), higher_is_better=False),
}
_BY_LENGTH = sorted(_SPECS, key=len, reverse=True)

# Preferred over other names when the benchmark is unknown (pick the first of these printed).
_KNOWN = {k.lower() for s in _SPECS.values() for k in s.keys} | {
    "clip_score",
    "rouge2",
    "rougelsum",
    "gsm8k",
    "mbxp",
}
# Counts some scripts print beside the metric; pointpainting's mAP is printed as `Total`, which
# its own entry reads: never a fallback for another benchmark's figure.
_COUNTS = {"good", "total", "queries", "gen_len", "gen_num", "tokens_per_sample"}
# Printed phrases that are not names: `Word Error Rate: 7.4%`, 3d-unet's `Accuracy: mean = ...`.
_ALIASES = {"word error rate": "WER", "accuracy: mean": "DICE"}
_LOWER_IS_BETTER = re.compile(r"(?:^|[^a-z])(?:wer|fid|ne|error|loss)(?:[^a-z]|$)")

# a printed NaN or infinity is read too, to be refused as the figure (never skipped for a
# figure printed elsewhere, never taken as "no figure")
_NUM = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?)(?![A-Za-z]))"
# 'rouge1': 44.4 | "f1": 90.8 | 'FID_SCORE': np.float64(23.4) | 'rougeL': '28.6'
_QUOTED_PAIR = re.compile(
    r"""(['"])([^'"\n]{1,100})\1\s*:\s*(?:np\.\w+\(\s*)?(['"]?)(""" + _NUM + r""")\3\s*(%?)"""
)
# accuracy=76.4% | AUC=80.1% | Word Error Rate: 7.4% | Accuracy: mean = 0.86 | kidney = 0.93
_ITEM = re.compile(
    r"^\s*(?:([A-Za-z][\w .-]*?)\s*:\s*)?([A-Za-z][\w .@/-]*?)\s*[=:]\s*(" + _NUM + r")\s*(%?)\s*$"
)


def _normalize(benchmark: str) -> str:
    name = benchmark.strip().lower().replace("llama3_1", "llama3.1")
    return re.sub(r"-99(?:\.9)?$", "", name)


def _spec(benchmark: str | None) -> _Spec | None:
    if not benchmark:
        return None
    name = _normalize(benchmark)
    return next((_SPECS[p] for p in _BY_LENGTH if name.startswith(p)), None)


def primary_metric(benchmark: str) -> str | None:
    """MLPerf's primary accuracy metric for a benchmark folder name (`bert-99.9` -> `f1`)."""
    spec = _spec(benchmark)
    return spec.metric if spec else None


def _read_values(text: str) -> tuple[dict[str, float], set[str]]:
    """Every number printed under a name, in order of first appearance; and the %-printed names."""
    values: dict[str, float] = {}
    percent: set[str] = set()

    def put(name: str, number: str, pct: str) -> None:
        name = _ALIASES.get(name.strip().lower(), name.strip())
        value = float(Decimal(number) / 100) if pct else float(number)  # 76.456% -> 0.76456
        values[name] = value  # NaN, inf, 1e999: kept, for the reader to refuse as a figure
        if pct:
            percent.add(name)
        else:
            percent.discard(name)

    for line in text.splitlines():
        # a figure logged through Python's logging (`WARNING:main:metric/lifetime_ne/rating:
        # 0.86755`, dlrm-v3 in v6.0): the level and the logger's name are not part of its name
        line = _LOG_PREFIX.sub("", line, count=1)
        # the submission scripts append the accuracy log's digest, on its own line or on the
        # figure's (`mAP=35.293%hash=9f0c...`, Krai v2.1): never part of a figure
        line = _HASH.split(line, maxsplit=1)[0]
        if "=" not in line and ":" not in line:
            continue  # neither reader can take a line without `=` or `:`
        for m in _QUOTED_PAIR.finditer(line):
            put(m.group(2), m.group(4), m.group(5))
        for item in _QUOTED_PAIR.sub(" ", line).split(","):
            if found := _ITEM.match(item):
                prefix, name = found.group(1), found.group(2)
                if prefix and f"{prefix}: {name}".lower() in _ALIASES:
                    name = f"{prefix}: {name}"
                put(name, found.group(3), found.group(4))
    return values, percent


_HASH = re.compile(r"hash\s*=", re.IGNORECASE)
_LOG_PREFIX = re.compile(r"^\s*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:")


def _lookup(values: dict[str, float], keys: tuple[str, ...]) -> str | None:
    by_lower = {name.lower(): name for name in values}
    return next((by_lower[k.lower()] for k in keys if k.lower() in by_lower), None)


#: an accuracy.txt larger than this is read from its end first: the scripts print the figure
#: last, after their per-sample lines (some published files are 1.5 MB of those)
_TAIL_BYTES = 64 * 1024


def read_accuracy_file(path: Path, benchmark: str | None = None) -> AccuracyReading | None:
    """`parse_accuracy_text` of a file; a large one is read from its last 64 KB when those
    hold the benchmark's primary metric, else whole (same result, without reading megabytes
    of per-sample lines for every result of a round)."""
    size = path.stat().st_size
    spec = _spec(benchmark)
    if size > 4 * _TAIL_BYTES and spec is not None:
        with path.open("rb") as fh:
            fh.seek(size - _TAIL_BYTES)
            tail = fh.read().decode(errors="replace").split("\n", 1)[-1]  # from a whole line
        reading = parse_accuracy_text(tail, benchmark)
        if reading is not None and _lookup(reading.values, spec.keys) is not None:
            return reading
    return parse_accuracy_text(path.read_text(errors="replace"), benchmark)


def parse_accuracy_text(text: str, benchmark: str | None = None) -> AccuracyReading | None:
    """The primary metric of an accuracy.txt; None when it holds no named number.

    With a known `benchmark` (folder name, e.g. `llama2-70b-99.9`) the metric is MLPerf's primary
    one. When the text lacks it, or the benchmark is unknown, the first metric printed with a
    known name is taken, lower-is-better for error rates, FID and losses; only for an unknown
    benchmark the first number printed otherwise (for a known one a count such as
    `total=50000` is never taken for its accuracy: None). A byte-order mark (a file saved by a
    Windows editor) is not part of a name.
    """
    values, percent = _read_values(text.replace("\ufeff", ""))
    if not values:
        return None
    spec = _spec(benchmark)
    key = _lookup(values, spec.keys) if spec else None
    if spec and key:
        metric, higher = spec.metric, spec.higher_is_better
    else:
        known = next((n for n in values if n.lower() in _KNOWN and n.lower() not in _COUNTS), None)
        if known is None and spec:
            return None
        key = known or next(iter(values))
        metric, higher = key, not _LOWER_IS_BETTER.search(key.lower())
    value, unit = _on_scale(metric, values[key], printed_percent=key in percent)
    return AccuracyReading(
        metric=metric, value=value, unit=unit, higher_is_better=higher, values=values
    )


#: the scale each metric is read on, whatever the script printed: a fraction from 0 to 1
#: (a script that prints `AUC=80.17` without `%` printed a percentage: 0.8017), or a score
#: from 0 to 100 as the scripts print it (F1, ROUGE, BLEU: `rouge1=44.5%` is 44.5)
_FRACTIONS = {"top1", "map", "auc", "dice", "accuracy", "wer"}
_PERCENT_SCORES = {
    "f1",
    "exact_match",
    "rouge1",
    "rouge2",
    "rougel",
    "rougelsum",
    "bleu",
    "vbench_score",
}


def _on_scale(metric: str, value: float, *, printed_percent: bool) -> tuple[float, str]:
    """(value, unit) of a metric on its one scale (see `_FRACTIONS`, `_PERCENT_SCORES`);
    other metrics as printed."""
    name = metric.lower()
    if name in _FRACTIONS:
        if not printed_percent and 1 < value <= 100:
            return float(Decimal(repr(value)) / 100), "fraction"
        return value, "fraction"
    if name in _PERCENT_SCORES:
        return (float(Decimal(repr(value)) * 100), "score") if printed_percent else (value, "score")
    return value, "fraction" if printed_percent else "score"


def out_of_range(reading: AccuracyReading) -> str | None:
    """Why the reading cannot be its metric's figure (a fraction outside 0..1, a score of F1,
    ROUGE or BLEU outside 0..100, a negative FID), or None."""
    name, value = reading.metric.lower(), reading.value
    if reading.unit == "fraction" and not 0 <= value <= 1:
        return f"{reading.metric} = {value:g} is not a fraction from 0 to 1 (0 % to 100 %)"
    if name in _PERCENT_SCORES and not 0 <= value <= 100:
        return f"{reading.metric} = {value:g} is not a score from 0 to 100"
    if value < 0 and name in ("fid", "clip", "wer"):
        return f"{reading.metric} = {value:g} is negative"
    return None
