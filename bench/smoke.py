"""Every benchmark's `--smoke` run, one after another: a refactor that breaks one fails CI.

    python bench/smoke.py                              # every benchmark (CI runs this)
    python bench/smoke.py start_speed probe_cost       # only these
    python bench/smoke.py --timeout 300

A benchmark is a `bench/*.py` script with a `__main__` block, found by glob (a new one is run
too); a module without one (workloads.py) is a helper the benchmarks import. Each runs as
`python bench/NAME.py --smoke` under this interpreter, in a temporary working folder of its own,
within `--timeout` seconds (past it, its process group is killed: stress-ng with it, and repro's
workers follow their parent). `--smoke` runs the benchmark's real code on its smallest input and
asserts no figure: a benchmark passes when it exits 0. Prints one line a benchmark (seconds,
ok / failed / timed out) and the last lines that a failed one printed; exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
#: the lines of a failed benchmark's output shown
TAIL_LINES = 40


def is_script(path: Path) -> bool:
    """Whether the module has a top-level `if __name__ == "__main__":` block."""
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        sides = [node.test.left, *node.test.comparators]
        names = {s.id for s in sides if isinstance(s, ast.Name)}
        values = {s.value for s in sides if isinstance(s, ast.Constant)}
        if names == {"__name__"} and values == {"__main__"}:
            return True
    return False


def benchmarks(folder: Path = BENCH) -> list[Path]:
    """The benchmarks in `folder`: its scripts, this one left out."""
    return [p for p in sorted(folder.glob("*.py")) if p.name != "smoke.py" and is_script(p)]


def run_one(path: Path, timeout_s: float) -> tuple[str, float, str]:
    """`python PATH --smoke` in a temporary folder: (outcome, seconds, its output)."""
    with tempfile.TemporaryDirectory(prefix=f"repro-smoke-{path.stem}-") as tmp:
        log = Path(tmp) / "output.log"
        work = Path(tmp) / "work"
        work.mkdir()
        with log.open("wb") as out:
            start = time.monotonic()
            # a session of its own: past the timeout its whole group goes (the workers a
            # benchmark starts, stress-ng), not only the benchmark's own process
            proc = subprocess.Popen(
                [sys.executable, str(path), "--smoke"],
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=timeout_s)
                outcome = "ok" if rc == 0 else f"failed (exit {rc})"
            except subprocess.TimeoutExpired:
                outcome = f"timed out after {timeout_s:g} s"
            finally:
                if proc.poll() is None:  # past the timeout, or Ctrl-C here
                    with contextlib.suppress(ProcessLookupError):  # gone meanwhile
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            seconds = time.monotonic() - start
        return outcome, seconds, log.read_text(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these benchmarks (default: all)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a benchmark")
    args = parser.parse_args()
    found = benchmarks()
    known = {p.stem for p in found}
    unknown = sorted(set(args.names) - known)
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; expected some of {sorted(known)}")
    chosen = [p for p in found if not args.names or p.stem in args.names]
    print(f"{len(chosen)} benchmark(s), --smoke each, at most {args.timeout:g} s", flush=True)
    failed = []
    total = time.monotonic()
    for path in chosen:
        outcome, seconds, output = run_one(path, args.timeout)
        print(f"  {path.stem:<20} {seconds:6.1f} s  {outcome}", flush=True)
        if outcome != "ok":
            failed.append(path.stem)
            tail = output.splitlines()[-TAIL_LINES:]
            print("\n".join(f"    | {line}" for line in tail), flush=True)
    print(
        f"{len(chosen) - len(failed)} of {len(chosen)} ok in {time.monotonic() - total:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
