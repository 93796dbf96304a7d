"""The layout of a run directory: every file name and folder scheme, in one place.

A run directory is `results/<spec-name>/<run-id>/`; the original of a captured experiment is
the run with the id `original`. Per scenario it holds `<Scenario>/performance/run_<k>/` and
`<Scenario>/accuracy/`, each with LoadGen's files untouched beside the worker's own. A run is
built under the hidden name `.<run-id>.partial` and renamed when its record is written, so a
run killed hard never looks like a finished one.

Other modules ask this one for paths; none spells a file name of a run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from repro.errors import SpecError
from repro.spec.types import FOLDER_NAME_MAX, FOLDER_NAME_PATTERN

#: the run record
RUN_FILE: Final = "run.json"
#: the run id of a captured original
ORIGINAL_RUN_ID: Final = "original"

# LoadGen's own files (names fixed by LoadGen)
SUMMARY: Final = "mlperf_log_summary.txt"
DETAIL: Final = "mlperf_log_detail.txt"
ACCURACY_LOG: Final = "mlperf_log_accuracy.json"

# The worker's files, beside LoadGen's in each test folder
REQUEST_FILE: Final = "request.json"
WORKER_LOG: Final = "worker.log"
WORKER_RESULT: Final = "worker.json"
HIST_FILE: Final = "latency_hist.npz"
LATENCIES_FILE: Final = "latencies_ns.npy"
INFERENCE_FILE: Final = "inference_ns.npy"
#: how far the running test is (`repro.harness.progress`), removed when its worker ends
PROGRESS_FILE: Final = "progress.json"
#: (QSL index, top-1) pairs of an accuracy run, written by the orchestrator
PREDICTIONS_FILE: Final = "predictions.npy"

# A layer profile: `profile/<Scenario>/` holds LoadGen's logs of the profiled pass, the worker's
# files, the per-layer table, the Chrome/Perfetto trace and the profiler's raw output
PROFILE_FOLDER: Final = "profile"
PROFILE_FILE: Final = "profile.json"
TIMELINE_FILE: Final = "timeline.json"

# A dispatched run (`--on`): `parts/<k>/` each a run of its own; `dispatch/` the plan, the batch
# script and each part's output
PARTS_FOLDER: Final = "parts"
DISPATCH_FOLDER: Final = "dispatch"
DISPATCH_PLAN: Final = "dispatch/plan.json"
DISPATCH_SCRIPT: Final = "dispatch/job.sbatch"


#: a name that becomes one path component: no separator, no `..`, not hidden (the spec's rule)
_COMPONENT = re.compile(FOLDER_NAME_PATTERN)


def component(name: str, *, what: str) -> str:
    """`name` if it is safe as one folder name, else a SpecError saying what is allowed.

    Every name that repro turns into a path (a spec's name, a run id, a report folder) passes
    here, so no input can write outside `results/` or `reports/`.
    """
    if not _COMPONENT.match(name) or len(name) > FOLDER_NAME_MAX:
        raise SpecError(
            f"{what} {name!r} is not a plain folder name (one name, no path)",
            hint="use letters, digits, '.', '_', '+' and '-' (at most 128, starting with a "
            "letter or digit, no '..')",
        )
    return name


def spec_results(results_dir: Path, spec_name: str) -> Path:
    """`results/<spec-name>/`: every run of one spec."""
    return results_dir / component(spec_name, what="spec name")


def run_dir(results_dir: Path, spec_name: str, run_id: str) -> Path:
    """`results/<spec-name>/<run-id>/`."""
    return spec_results(results_dir, spec_name) / component(run_id, what="run id")


def partial_dir(results_dir: Path, spec_name: str, run_id: str) -> Path:
    """Where a run is built before it is renamed to its run_dir."""
    return partial_of(run_dir(results_dir, spec_name, run_id))


def partial_of(final: Path) -> Path:
    """Where the folder `final` is built (or taken back to be resumed): `.<name>.partial`."""
    return final.parent / f".{final.name}.partial"


def final_of(partial: Path) -> Path:
    """The folder a `.<name>.partial` becomes."""
    name = partial.name
    if name.startswith(".") and name.endswith(".partial"):
        name = name[1 : -len(".partial")]
    return partial.parent / name


def part_dir(index: int) -> str:
    """A part of a dispatched run relative to the run: `parts/<k>`."""
    return f"{PARTS_FOLDER}/{index}"


def part_log(index: int) -> str:
    """A part's output relative to the run: `dispatch/part-<k>.out`."""
    return f"{DISPATCH_FOLDER}/part-{index}.out"


def is_partial(path: Path) -> bool:
    """A run still being built (or abandoned by a hard kill)."""
    return path.name.startswith(".")


def test_dir(scenario: str, mode: str, repeat: int) -> str:
    """A test's folder relative to its run: `<Scenario>/performance/run_<k>` or
    `<Scenario>/accuracy`."""
    return f"{scenario}/{mode}" + (f"/run_{repeat}" if mode == "performance" else "")


def profile_dir(scenario: str) -> str:
    """A profiled pass's folder relative to its run: `profile/<Scenario>`."""
    return f"{PROFILE_FOLDER}/{scenario}"


def record_file(run: Path) -> Path:
    """The run.json of a run directory."""
    return run / RUN_FILE


def original_of(spec_results_dir: Path) -> Path:
    """`results/<spec-name>/original/`."""
    return spec_results_dir / ORIGINAL_RUN_ID
