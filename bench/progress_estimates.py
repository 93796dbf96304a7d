"""Progress estimates against what each wait took: per test and for the rest of the replay.

    python bench/progress_estimates.py [--spec specs/ort-digits.json ...] [--min-duration-ms 500]
        [--repeat 2] [--scenarios SingleStream,Offline] [--planned-for-faster 10]

A real replay (`--env native`, real workers, LoadGen, onnxruntime) whose progress display is a
recorder: for each test it keeps the estimate the bar was given at the start, the first one
from the test's own warm-up, the last one before the test ended, and how long it took; and the
estimate of the rest of the replay made at each test's start against the time the rest took.
`--planned-for-faster X` multiplies the spec's Offline expected QPS by X, as an imported spec
planned on a faster machine has it (the Offline query then holds X times the samples).
Target: every estimate made after the replay's first test within 2x of the actual time.

    python bench/progress_estimates.py --smoke    # CI: ort-digits, 2 scenarios of 0.1 s, once
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repro.artifacts.cache import ArtifactCache  # noqa: E402
from repro.estimates import Estimate, Forecast  # noqa: E402
from repro.jsonio import read_json  # noqa: E402
from repro.replay.session import ReplaySession  # noqa: E402
from repro.runs.plan import ReplayPlan, loadgen_overrides  # noqa: E402
from repro.spec.io import parse_spec  # noqa: E402

#: --smoke: the same code on the smallest input; flags given beside it still win
SMOKE = {"min_duration_ms": 100, "repeat": 1, "scenarios": "SingleStream,Offline"}


@dataclass
class Wait:
    """What the display was told during one test, and how long the test took."""

    label: str
    start: Estimate
    rest: Estimate | None
    warm: Estimate | None = None
    last: Estimate | None = None
    actual_s: float = 0.0
    ended_at: float = 0.0
    seen: list[str] = field(default_factory=list)


class Recorder:
    """A progress factory that asks the forecast as a bar would (every 0.1 s)."""

    def __init__(self) -> None:
        self.waits: list[Wait] = []

    @contextlib.contextmanager
    def __call__(self, label: str, forecast: Forecast) -> Iterator[None]:
        first = forecast.now()
        wait = Wait(label, first.test, first.rest)
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.1):
                est = forecast.now().test
                if wait.warm is None and "warm-up" in est.basis and est.known:
                    wait.warm = est
                wait.last = est

        thread = threading.Thread(target=watch, daemon=True)
        t = time.monotonic()
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            wait.actual_s = time.monotonic() - t
            wait.ended_at = time.monotonic()
            self.waits.append(wait)


def _fmt(e: Estimate | None) -> str:
    if e is None:
        return "-"
    return f"{e.seconds:7.1f}" if e.seconds is not None else "   unkn"


def _ratio(e: Estimate | None, actual: float) -> float | None:
    return actual / e.seconds if e is not None and e.seconds else None


def replay(spec_path: Path, args: argparse.Namespace, out: Path) -> tuple[list[Wait], float]:
    raw = read_json(spec_path)
    for sc in raw["workload"]["scenarios"]:
        settings = sc.setdefault("settings", {})
        if sc["scenario"] == "Offline" and settings.get("offline_expected_qps"):
            settings["offline_expected_qps"] *= args.planned_for_faster
    raw.pop("id", None)
    spec = parse_spec(raw, source=str(spec_path))
    cache = ArtifactCache(args.cache_dir)
    scenarios = tuple(args.scenarios.split(",")) if args.scenarios else ()
    plan = ReplayPlan(
        scenarios=scenarios,
        loadgen=loadgen_overrides(min_duration_ms=args.min_duration_ms),
        repeat=args.repeat,
        results_dir=out,
        env="native",
    )
    recorder = Recorder()
    session = ReplaySession.open(
        spec, spec_path, plan, report=lambda _: None, progress=recorder, cache=cache
    )
    replayer = session.replayer(spec, plan)
    replayer.run()
    return recorder.waits, time.monotonic()


def show(name: str, waits: list[Wait], end: float) -> dict[str, object]:
    print(f"\n{name}: estimate / actual (s); ratio = actual / estimate")
    print(
        f"{'test':30s} {'start':>7s} {'warm-up':>7s} {'last':>7s} {'actual':>7s} {'ratio':>6s}"
        f"   {'rest est':>8s} {'rest act':>8s} {'ratio':>6s}  basis at start"
    )
    later: list[float] = []
    rests: list[float] = []
    unknown = 0
    for i, w in enumerate(waits):
        rest_actual = end - w.ended_at
        r = _ratio(w.start, w.actual_s)
        rr = _ratio(w.rest, rest_actual) if w.rest is not None and rest_actual > 1 else None
        if i > 0:
            if r is None:
                unknown += 1
            else:
                later.append(r)
            if rr is not None:
                rests.append(rr)
        print(
            f"{w.label:30s} {_fmt(w.start)} {_fmt(w.warm)} {_fmt(w.last)} {w.actual_s:7.1f} "
            f"{(f'{r:6.2f}' if r else '     -')}   {_fmt(w.rest):>8s} {rest_actual:8.1f} "
            f"{(f'{rr:6.2f}' if rr else '     -')}  {w.start.basis}"
        )
    within = [x for x in later if 0.5 <= x <= 2]
    summary = {
        "spec": name,
        "tests_after_the_first": len(waits) - 1,
        "estimate_known_at_start": len(later),
        "unknown_at_start": unknown,
        "within_2x": len(within),
        "ratio_median": round(statistics.median(later), 2) if later else None,
        "ratio_range": [round(min(later), 2), round(max(later), 2)] if later else None,
        "rest_ratio_range": [round(min(rests), 2), round(max(rests), 2)] if rests else None,
    }
    print(json.dumps(summary))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append", type=Path)
    parser.add_argument("--min-duration-ms", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--scenarios", default="")
    parser.add_argument("--planned-for-faster", type=float, default=1.0)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CI: ort-digits, SingleStream and Offline of 0.1 s, once",
    )
    args = parser.parse_args()
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args()
    specs = args.spec or [ROOT / "specs" / "ort-digits.json"]
    with tempfile.TemporaryDirectory(prefix="repro-bench-progress-") as tmp:
        for spec in specs:
            t0 = time.monotonic()
            waits, end = replay(spec, args, Path(tmp))
            show(f"{spec.stem} ({end - t0:.0f} s)", waits, end)


if __name__ == "__main__":
    main()
