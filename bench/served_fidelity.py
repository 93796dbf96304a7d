"""Do the verdicts hold for a served model? A/A trials with and without a server restart per
round, and a real change of the server's flags, on specs/served-tinyllm.json.

    python bench/served_fidelity.py --trials 10 --out bench/records/served-fidelity.json
    python bench/served_fidelity.py --kinds aa-once --trials 3
    python bench/served_fidelity.py --smoke       # CI: one A/A trial of 2 rounds of 0.1 s

Each trial is a real `repro replay specs/served-tinyllm.json --against ... --until-decided`
(native environment: `transformers serve` started by repro in this interpreter, real LoadGen,
the served SUT over HTTP) in its own folder, Offline performance tests:

- **aa-once**: the spec against itself, each side's server started once for all the rounds;
- **aa-each-round**: the same with `server.restart: each-round` (the spec's own): each side's
  server started anew before every round;
- **dtype**: the server's `--dtype bfloat16` against the spec's float32 (a real change of the
  server's stack: bfloat16 matmuls on a CPU without AMX are slower), restart once.

Every *not reproduced* of an A/A is false (target: none); the change must be found, *not
reproduced* (target: >= 9 of 10). Prints the table and each trial's verdict, time and rounds;
asserts nothing. `--out` keeps every trial's record.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import ROOT, paired_rounds, replay

SPEC = ROOT / "specs" / "served-tinyllm.json"
KINDS = ("aa-once", "aa-each-round", "dtype")
#: the trials' rounds: Offline performance only (the accuracy side of a change is found at once)
ROUNDS = ["--until-decided", "--mode", "performance", "-s", "Offline"]
#: what --smoke runs: one A/A trial, its rounds and tests as short as a valid run allows
SMOKE = {"kinds": "aa-once", "trials": 1, "max_rounds": 2, "min_duration_ms": 100}


def variant(work: Path, name: str, *, restart: str, dtype: str | None = None) -> Path:
    """specs/served-tinyllm.json with its server's restart (and dtype) changed, written in
    `work` with its relative paths made absolute."""
    spec = json.loads(SPEC.read_text())
    spec.pop("id", None)
    spec.pop("original", None)  # an A/A judges the two sides, not the stored original
    spec["name"] = name
    spec["server"]["restart"] = restart
    if dtype is not None:
        spec["server"]["flags"]["dtype"] = dtype
    env = spec["environment"]
    env["python_lock"]["path"] = str(SPEC.parent / env["python_lock"]["path"])
    for key in ("spack_yaml", "spack_lock"):
        env["spack"][key]["path"] = str(SPEC.parent / env["spack"][key]["path"])
    path = work / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def trial(kind: str, cache: Path, max_rounds: int, min_duration_ms: int) -> dict[str, Any]:
    """One trial of `kind`: its verdict, time and rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        restart = "each-round" if kind == "aa-each-round" else "once"
        dtype = "bfloat16" if kind == "dtype" else None
        candidate = variant(work, "served-a", restart=restart, dtype=dtype)
        baseline = "self" if kind != "dtype" else str(variant(work, "served-b", restart=restart))
        args = [
            str(candidate),
            "--against",
            baseline,
            *ROUNDS,
            "--max-rounds",
            str(max_rounds),
            "--min-duration-ms",
            str(min_duration_ms),
        ]
        t0 = time.monotonic()
        rc = replay(args, work, cache)
        wall = round(time.monotonic() - t0, 1)
        reports = list((work / "reports").glob("report.json"))
        if rc not in (0, 1) or not reports:
            log = (work / "replay.log").read_text()[-2000:]
            return {"kind": kind, "verdict": "failed", "exit": rc, "wall_s": wall, "log": log}
        report = json.loads(reports[0].read_text())
        stopping = next((n for n in report["notes"] if n.startswith("stopping:")), "")
        return {
            "kind": kind,
            "verdict": report["verdict"],
            "exit": rc,
            "wall_s": wall,
            "stopping": stopping,
            "metrics": {
                f"{s['scenario']}.{m['metric']}": [m["verdict"], m["delta_rel"], m["ci"]]
                for s in report["scenarios"]
                for m in s["metrics"]
                if m["judged"]
            },
            "rounds": paired_rounds(work / "results"),
        }


def table(trials: list[dict[str, Any]]) -> None:
    print(f"\n{'kind':<15} {'trials':>6}  verdicts (count)                      median wall")
    for kind in KINDS:
        mine = [t for t in trials if t["kind"] == kind]
        if not mine:
            continue
        counts = Counter(t["verdict"] for t in mine)
        walls = sorted(t["wall_s"] for t in mine)
        said = ", ".join(f"{v}: {n}" for v, n in counts.most_common())
        print(f"{kind:<15} {len(mine):>6}  {said:<38} {walls[len(walls) // 2]:.0f} s")
    false = sum(
        1 for t in trials if t["kind"].startswith("aa") and t["verdict"] == "not reproduced"
    )
    found = [t for t in trials if t["kind"] == "dtype"]
    print(f"\nA/A trials said not reproduced: {false} (target: 0)")
    if found:
        hits = sum(t["verdict"] == "not reproduced" for t in found)
        print(f"the dtype change found: {hits} of {len(found)} (target: >= 90 %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--trials", type=int, default=10, help="trials of each kind")
    parser.add_argument("--max-rounds", type=int, default=8)
    parser.add_argument("--min-duration-ms", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None, help="write every trial's record here")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "repro-served")
    parser.add_argument("--smoke", action="store_true", help=f"CI: {SMOKE}")
    args = parser.parse_args()
    if args.smoke:
        args.kinds, args.trials = SMOKE["kinds"], SMOKE["trials"]
        args.max_rounds, args.min_duration_ms = SMOKE["max_rounds"], SMOKE["min_duration_ms"]
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"--kinds: unknown {unknown}; known: {', '.join(KINDS)}")
    trials: list[dict[str, Any]] = []
    for k in range(args.trials):
        for kind in kinds:  # interleaved: a phase of the machine falls on every kind
            found = trial(kind, args.cache, args.max_rounds, args.min_duration_ms)
            trials.append(found)
            print(
                f"trial {k + 1} {kind}: {found['verdict']} ({found['wall_s']} s) "
                f"{found.get('stopping', '')[:100]}",
                flush=True,
            )
            if args.out is not None:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps({"trials": trials}, indent=1) + "\n")
    table(trials)
    failed = [t for t in trials if t["verdict"] == "failed"]
    for t in failed[:1]:
        print(f"\na failed trial's log:\n{t['log']}")
    return 1 if args.smoke and failed else 0


if __name__ == "__main__":
    sys.exit(main())
