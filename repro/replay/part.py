"""`python -m repro.replay.part PLAN.json K`: part K of a dispatched replay, on the node it was
given: realize the environment there, run one round into `<run>/parts/<k>/`.

Exit 0 when the part's run is complete, 3 when it is not (its run.json says why), 2 on a bad
plan."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from repro.dispatch.executors.base import PART_MODULE
from repro.dispatch.executors.registry import get_executor
from repro.dispatch.plan import read_plan
from repro.errors import ReproError, SpecError, UsageError
from repro.estimates import Forecast
from repro.replay.session import ReplaySession
from repro.spec.io import format_validation_error
from repro.spec.models import ExperimentSpec


def _note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _progress(label: str, forecast: Forecast) -> Iterator[None]:
    """A line per test in the part's output (a batch job has no terminal)."""
    _note(f"{label} ({forecast.now().test.text()})")
    yield


def run_part(plan_path: Path, index: int) -> int:
    """The part's exit status: 0 complete, 3 otherwise."""

    plan = read_plan(plan_path)
    if not 0 <= index < plan.parts:
        raise UsageError(f"{plan_path}: part {index} does not exist (the plan has {plan.parts})")
    if plan.part_dir(index).exists():
        raise UsageError(
            f"{plan.part_dir(index)}: part {index} ran already",
            hint=f"`repro replay --resume {plan.run_dir}` runs the parts that did not finish; "
            "remove the part's folder to run it again",
        )
    try:
        spec = ExperimentSpec.model_validate(plan.spec)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(str(plan_path), exc, plan.spec, root="$.spec")
        ) from None
    spec_path = Path(plan.spec_path)
    variable = get_executor(plan.executor).node_variable
    node = os.environ.get(variable) if variable else None
    _note(f"part {index} of {plan.parts}" + (f" on {node}" if node else ""))
    modes = plan.replay.modes or tuple(spec.workload.modes)
    if index > 0 and "performance" in modes:
        modes = ("performance",)  # accuracy is deterministic: part 0 runs it once
    part = plan.replay.but(
        modes=modes,
        repeat=1,
        run_id=f"{plan.run_id}-part{index}",
        run_path=plan.part_dir(index),
    )
    session = ReplaySession.open(
        spec, spec_path, part, report=_note, progress=_progress, given=plan.given
    )
    _, record = session.replayer(spec, part).run()
    return 0 if record.status == "complete" else 3


def main(argv: list[str]) -> int:
    """`python -m repro.replay.part PLAN.json K`: the part's exit code (2: bad arguments or
    plan, 3: the part did not complete, each with the reason on stderr; 130: interrupted)."""
    if len(argv) != 2 or not (argv[1].isascii() and argv[1].isdigit()):  # "²" is a digit
        print(f"usage: python -m {PART_MODULE} PLAN.json PART", file=sys.stderr)
        return 2
    try:
        return run_part(Path(argv[0]), int(argv[1]))
    except ReproError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # the run's or the cache's folder, not writable on this node
        print(f"error: {exc}", file=sys.stderr)
        print("hint: is the run's file system mounted on this node, and writable?", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
