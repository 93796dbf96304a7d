"""Do the verdicts hold on this shared machine, quiet and under load? A/A trials, real changes.

    python bench/verdict_fidelity.py --plan                  # the parts, each <= 30 min here
    python bench/verdict_fidelity.py --part 3 --out parts/   # run part 3 -> parts/part-03.json
    python bench/verdict_fidelity.py --merge parts/          # the table of every part run
    python bench/verdict_fidelity.py --material parts/ -o tests/data/rounds/recorded.json
    python bench/verdict_fidelity.py --part 0 --trials 3 --max-rounds 8 --min-duration-ms 200
    python bench/verdict_fidelity.py --smoke                 # CI: parts 0 and 8 (quiet), one
                                                             # trial of 2 rounds of 0.1 s each

Each trial is a real `repro replay ... --until-decided` (native environment, real LoadGen and
onnxruntime) in its own folder, with `stress-ng --cpu N` busy beside it for the whole part
(N = the part's load):

- **A/A on ort-digits** (µs a sample; three scenarios, `DIGITS_AA`) at 0, 2 and 4 busy
  workers: every *not reproduced* is false (target: none);
- **A/A on a small ResNet** (ms a sample, `workloads.small_resnet`: specs/ort-resnet-small.json's
  workload; Offline, the demo's A/A flags: `MS_AA`) at 0 and 2: how often it is decided
  *reproduced* within 60 s (target: >= 80 %), and none *not reproduced*;
- **three real changes** on the small ResNet at 0 and 2, each interleaved with the unchanged
  spec: intra-op threads 2 -> 1, batch 8 -> 1, and a model ~10 % slower (base width 16 -> 17):
  each must be found, *not reproduced* (target: >= 90 %).

A part's record holds every trial's verdicts and its rounds (`workloads.paired_rounds`): the
material `repro.stats.simulate` judges the sequential rule on (`--material` gathers the A/A
trials' rounds into the file the test suite replays). Prints its table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import (
    DIGITS,
    ROOT,
    as_material,
    paired_rounds,
    replay,
    small_resnet,
    stress,
)


def demo_aa_args() -> list[str]:
    """The flags of the demo's interleaved A/A, as the Makefile's AA_ARGS gives them (one
    place: the trials run what the demo runs)."""
    text = (ROOT / "Makefile").read_text()
    found = re.search(r"^AA_ARGS \?= ((?:.*\\\n)*.*)$", text, re.MULTILINE)
    if found is None:
        sys.exit("the Makefile has no AA_ARGS")
    return found.group(1).replace("\\\n", " ").split()


#: the µs-scale A/A on ort-digits: the demo's interleaved A/A until 2026-12-06 (three
#: scenarios; the demo now runs its A/A on the ms-scale model, below)
DIGITS_AA = [
    "--against",
    "self",
    "--until-decided",
    "--max-rounds",
    "32",
    "--max-time",
    "150",
    "--min-duration-ms",
    "500",
    "--mode",
    "performance",
    "-s",
    "SingleStream",
    "-s",
    "Server",
    "-s",
    "Offline",
]
#: the ms-scale A/A: the demo's (Makefile, AA_ARGS), Offline alone (a round of it is two
#: ~1.7 s tests: its first look, after 8 rounds, comes within 30 s)
MS_AA = ["--against", "self", *demo_aa_args()]
#: the changes' trials: the same rule, on the two scenarios every change shows in
CHANGE = [
    "--until-decided",
    "--max-rounds",
    "32",
    "--max-time",
    "150",
    "--min-duration-ms",
    "500",
    "--mode",
    "performance",
    "-s",
    "SingleStream",
    "-s",
    "Offline",
]
POSITIVE = ("reproduced", "reproduced after machine adjustment")
#: the trials' flags a run may make smaller (--max-rounds, --min-duration-ms)
LIMITS = ("--max-rounds", "--min-duration-ms")
#: --smoke: the same code on the smallest input: the quiet A/A of ort-digits (part 0) and a
#: quiet real change (part 8: threads 2 -> 1 on the small ResNet), one trial each, 2 rounds of
#: 0.1 s tests; flags given beside it still win
SMOKE = {"trials": 1, "max_rounds": 2, "min_duration_ms": 100}
SMOKE_PARTS = [0, 8]


@dataclass(frozen=True)
class Part:
    """One part of the benchmark: `trials` trials of one kind under one load."""

    kind: str  # "aa" or "change"
    workload: str  # "digits", "resnet16", or a change's name
    load: int
    trials: int

    @property
    def label(self) -> str:
        return f"{self.kind} {self.workload} at {self.load} busy worker(s)"


PLAN: tuple[Part, ...] = (
    *(Part("aa", "digits", load, 10) for load in (0, 0, 2, 2, 4, 4)),
    *(Part("aa", "resnet16", load, 10) for load in (0, 2)),
    *(Part("change", name, load, 10) for name in ("threads", "batch", "slower") for load in (0, 2)),
)


def specs(work: Path) -> dict[str, tuple[Path, Path | None]]:
    """(candidate, baseline) per workload: an A/A's baseline is `self` (None)."""
    return {
        "digits": (DIGITS, None),
        "resnet16": (small_resnet(work), None),
        "threads": (
            small_resnet(work, name="threads1", threads=1),
            small_resnet(work, name="threads2", threads=2),
        ),
        "batch": (
            small_resnet(work, name="batch1", batch=1),
            small_resnet(work, name="batch8", batch=8),
        ),
        "slower": (
            small_resnet(work, name="width17", base_width=17),
            small_resnet(work, name="width16", base_width=16),
        ),
    }


def limited(flags: list[str], limits: dict[str, str]) -> list[str]:
    """`flags` with the value of each flag named in `limits` replaced (a shorter run)."""
    return [limits.get(flags[i - 1], f) if i else f for i, f in enumerate(flags)]


def trial(
    candidate: Path,
    baseline: Path | None,
    cache: Path,
    aa: list[str],
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One `repro replay` of the part's kind: its verdicts, time and rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        args = (
            [str(candidate), *aa]
            if baseline is None
            else [str(candidate), "--against", str(baseline), *CHANGE]
        )
        args = limited(args, limits or {})
        t0 = time.monotonic()
        rc = replay(args, work, cache)
        wall = round(time.monotonic() - t0, 1)
        reports = list((work / "reports").glob("report.json"))
        if rc not in (0, 1) or not reports:
            return {
                "verdict": "failed",
                "exit": rc,
                "wall_s": wall,
                "log": (work / "replay.log").read_text()[-2000:],
            }
        report = json.loads(reports[0].read_text())
        stopping = next((n for n in report["notes"] if n.startswith("stopping:")), "")
        return {
            "verdict": report["verdict"],
            "exit": rc,
            "wall_s": wall,
            "stopping": stopping,
            "metrics": {
                f"{s['scenario']}.{m['metric']}": [m["verdict"], m["delta_rel"], m["ci"]]
                for s in report["scenarios"]
                for m in s["metrics"]
                if m["judged"] or m["metric"] == "samples_per_cpu_second"
            },
            "rounds": paired_rounds(work / "results"),
        }


def run_part(
    index: int, out: Path, trials: int | None = None, limits: dict[str, str] | None = None
) -> Path:
    """Part `index` (its own number of trials unless `trials`), into `out`."""
    part = PLAN[index]
    if trials is not None:
        part = Part(part.kind, part.workload, part.load, trials)
    path = out / f"part-{index:02d}.json"
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "part": index,
        "kind": part.kind,
        "workload": part.workload,
        "load": part.load,
        "trials": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        candidate, baseline = specs(work)[part.workload]
        cache = work / "cache"
        print(f"part {index}: {part.label}, {part.trials} trials", flush=True)
        with stress(part.load):
            for k in range(part.trials):
                aa = MS_AA if part.workload == "resnet16" else DIGITS_AA
                found = trial(candidate, baseline, cache, aa, limits)
                record["trials"].append(found)
                path.write_text(json.dumps(record, indent=1))
                undecided = [
                    f"{m} {v[0]}"
                    for m, v in found.get("metrics", {}).items()
                    if v[0] not in POSITIVE and "cpu" not in m
                ]
                print(
                    f"  trial {k + 1}: {found['verdict']} ({found['wall_s']} s) "
                    f"{'; '.join(undecided)}",
                    flush=True,
                )
    return path


def _decided_in(found: dict[str, Any], seconds: float) -> bool:
    return found["verdict"] in POSITIVE and found["wall_s"] <= seconds


def table(parts: list[dict[str, Any]]) -> list[str]:
    rows = ["| what | load | trials | verdicts | result |", "|---|---|---|---|---|"]
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for p in parts:
        groups.setdefault((p["kind"], p["workload"], p["load"]), []).extend(p["trials"])
    for (kind, workload, load), trials in sorted(groups.items()):
        counts: dict[str, int] = {}
        for t in trials:
            counts[t["verdict"]] = counts.get(t["verdict"], 0) + 1
        shown = ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
        n = len(trials)
        walls = sorted(t["wall_s"] for t in trials)
        median = walls[len(walls) // 2] if walls else 0
        if kind == "aa":
            wrong = counts.get("not reproduced", 0)
            fast = sum(_decided_in(t, 60) for t in trials)
            positive = sum(counts.get(v, 0) for v in POSITIVE)
            result = (
                f"**{wrong} false not reproduced**; reproduced {positive}/{n}, "
                f"within 60 s {fast}/{n}; median {median:.0f} s"
            )
            what = f"A/A {workload}"
        else:
            found = counts.get("not reproduced", 0)
            result = (
                f"**found {found}/{n}** ({100 * found / max(n, 1):.0f} %); median {median:.0f} s"
            )
            what = f"change: {workload}"
        rows.append(f"| {what} | {load} | {n} | {shown} | {result} |")
    return rows


def material(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every A/A trial's rounds, as `repro.stats.simulate.Trial`s."""
    found = (
        as_material(t["rounds"], f"{p['workload']}@{p['load']}")
        for p in parts
        if p["kind"] == "aa"
        for t in p["trials"]
        if t.get("rounds")
    )
    return [m for m in found if m is not None]


def limits_of(args: argparse.Namespace) -> dict[str, str]:
    """The trials' flags that the command line makes smaller."""
    given = (args.max_rounds, args.min_duration_ms)
    return {flag: str(v) for flag, v in zip(LIMITS, given, strict=True) if v is not None}


def smoke(args: argparse.Namespace, out: Path) -> None:
    """CI's run: the smoke parts (or --part) into `out`, their table and material; exit 1 when
    a trial failed (a long run records it and goes on; this one is there to catch it)."""
    indices = args.part or SMOKE_PARTS
    print(
        f"smoke: part(s) {indices}, {args.trials} trial(s) each; the other parts left out (the "
        "parts under load run stress-ng beside them for minutes)",
        flush=True,
    )
    for index in indices:
        run_part(index, out, args.trials, limits_of(args))
    parts = [json.loads(p.read_text()) for p in sorted(out.glob("part-*.json"))]
    print("\n".join(table(parts)))
    print(f"{len(material(parts))} A/A trials' rounds as the simulation's material")
    failed = [t for p in parts for t in p["trials"] if t["verdict"] == "failed"]
    for t in failed:
        print(f"a trial failed (exit {t['exit']}):\n{t['log']}", file=sys.stderr)
    if failed:
        sys.exit(f"smoke: {len(failed)} trial(s) failed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", action="store_true", help="print the parts")
    parser.add_argument("--part", type=int, action="append", default=[])
    parser.add_argument("--out", type=Path, default=Path("fidelity-parts"))
    parser.add_argument("--merge", type=Path, default=None, help="a folder of part records")
    parser.add_argument("--material", type=Path, default=None, help="a folder of part records")
    parser.add_argument("-o", "--output", type=Path, default=None)
    parser.add_argument(
        "--trials", type=int, default=None, help="trials of each part run (default: the part's)"
    )
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=None,
        help="each trial's round cap (default: the trials' flags')",
    )
    parser.add_argument(
        "--min-duration-ms",
        type=int,
        default=None,
        help="each test's minimum (default: the trials' flags')",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CI: parts 0 and 8, one trial of 2 rounds of 0.1 s each",
    )
    args = parser.parse_args()
    if args.plan:
        for i, p in enumerate(PLAN):
            print(f"{i:2d}  {p.label}, {p.trials} trials")
        return
    if args.smoke:
        parser.set_defaults(**SMOKE)
        with tempfile.TemporaryDirectory(prefix="verdict-fidelity-smoke-") as tmp:
            smoke(parser.parse_args(), Path(tmp))
        return
    for index in args.part:
        run_part(index, args.out, args.trials, limits_of(args))
    folder = args.merge or args.material or (args.out if args.part else None)
    if folder is None:
        parser.error("--plan, --part, --merge or --material")
    parts = [json.loads(p.read_text()) for p in sorted(folder.glob("part-*.json"))]
    if args.material is not None:
        found = material(parts)
        text = json.dumps(found, indent=None, separators=(",", ":")) + "\n"
        (args.output.write_text(text) if args.output else sys.stdout.write(text))
        print(f"{len(found)} A/A trials' rounds", file=sys.stderr)
        return
    print("\n".join(table(parts)))


if __name__ == "__main__":
    main()
