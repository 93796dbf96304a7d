"""Opening what a comparison names: a repro run, `results/<name>/` (its original), or the
published MLPerf results at any level of a tree, each as a `LoadedRun` (the adapter of
published trees to runs: `repro.runs` reads repro's own runs and never a published tree)."""

from __future__ import annotations

from pathlib import Path

from repro.errors import SpecError
from repro.formats.served.aiperf import SUMMARY as AIPERF_SUMMARY
from repro.mlperf.harness_results import harness_side
from repro.mlperf.tree import find_results, os_error_reason, read_mlperf_result
from repro.runs import layout
from repro.runs.store import LoadedRun, load_run


def open_run(path: Path) -> LoadedRun:
    """A repro run directory, `results/<name>/` (its original) or one published MLPerf result."""
    sides = open_sides(path)
    if len(sides) > 1:
        listing = ", ".join(str(s.path) for s in sides[:5]) + (", ..." if len(sides) > 5 else "")
        raise SpecError(
            f"{path}: holds {len(sides)} published results ({listing}); name one of them",
            hint="or give both sides as trees: `repro report --compare TREE_A TREE_B` pairs "
            "their results by benchmark and scenario",
        )
    return sides[0]


def open_sides(path: Path, *, unread: list[str] | None = None) -> list[LoadedRun]:
    """Every run `path` names: a repro run directory, `results/<name>/` (its original), or the
    published MLPerf results at any level of a tree (round, division, submitter, system,
    benchmark, scenario, `performance/run_k`). With `unread`, a level that holds several
    results skips one that cannot be read and says it there (file and reason): one odd file
    never stops a round; a single result that cannot be read is an error as ever."""

    if not path.exists():
        raise SpecError(f"{path}: no such file or directory")
    _refuse_unfinished(path)
    if path.is_file():
        side = harness_side(path)
        if side is None:
            raise SpecError(
                f"{path}: not a result file repro reads (AIPerf's {AIPERF_SUMMARY}, "
                "GuideLLM's or `vllm bench serve`'s JSON)",
                hint="name a repro run's folder, results/<name>/, a published MLPerf tree, or "
                "another harness's result file",
            )
        return [side]
    if layout.record_file(path).is_file():
        return [LoadedRun(path, "repro", load_run(path))]
    original = layout.original_of(path)
    if layout.record_file(original).is_file():
        return [LoadedRun(original, "repro", load_run(original))]
    results = find_results(path)
    if len(results) == 1 or (results and unread is None):
        return [LoadedRun(r, "mlperf", read_mlperf_result(r)) for r in results]
    if results and unread is not None:
        sides = []
        for r in results:
            try:
                sides.append(LoadedRun(r, "mlperf", read_mlperf_result(r)))
            except SpecError as exc:
                unread.append(f"not read: {exc.message}")
            except OSError as exc:  # one unreadable file: that result only, not the level
                unread.append(f"not read: {os_error_reason(r, exc)}")
        if not sides:
            raise SpecError(
                f"{path}: none of its {len(results)} published results could be read "
                f"({unread[-1]})",
                hint="restore the files from the published tree",
            )
        return sides
    side = harness_side(path)
    if side is not None:
        return [side]
    runs = sorted(p.name for p in path.iterdir() if layout.record_file(p).is_file())
    if runs:  # results/<name>/ of runs, but no original among them
        raise SpecError(
            f"{path}: holds {len(runs)} run(s) ({', '.join(runs[:3])}"
            f"{', ...' if len(runs) > 3 else ''}) but no original ({path.name}/original/): "
            "nothing stands as what they reproduce",
            hint=f"capture one (`repro capture --from SPEC`), or compare two of them: `repro "
            f"report --compare {path / runs[0]} {path / runs[-1]}`, or run an A/A with "
            "`repro replay SPEC --against self`",
        )
    raise SpecError(
        f"{path}: not a repro run, a results/<name>/ folder, a published MLPerf tree (no "
        "LoadGen summary under any <scenario>/performance/run_k/ below it, no MLCommons "
        "endpoints result: <scenario>/config.yaml and performance/result_summary.json), nor "
        "another harness's results (AIPerf, GuideLLM, vllm bench serve)",
        hint="pass results/<name>/, a run directory, any level of a published tree "
        "(<division>/<submitter>/results/<system>/<benchmark>/<scenario>/), or an AIPerf, "
        "GuideLLM or vllm bench serve result",
    )


def open_replay(path: Path) -> LoadedRun:
    """A replay given on the command line: a repro run directory or one published result."""
    sides = replay_sides(path)
    return sides[0] if len(sides) == 1 else open_run(path)  # open_run names the results


def replay_sides(path: Path, *, unread: list[str] | None = None) -> list[LoadedRun]:
    """Every run a replay argument names: a repro run directory, or the published results at
    any level of a tree (never `results/<name>/`'s original: that is not a replay)."""

    _refuse_unfinished(path)
    if path.is_file() or (
        not layout.record_file(path).is_file() and path.is_dir() and find_results(path)
    ):
        return open_sides(path, unread=unread)
    if path.is_dir() and not layout.record_file(path).is_file():
        side = harness_side(path)
        if side is not None:
            return [side]
    return [LoadedRun(path, "repro", load_run(path))]


def _refuse_unfinished(path: Path) -> None:
    """A hidden `.<run-id>.partial` folder is a run that never finished (it is renamed when
    it does): a hard kill left it, and it is never read as a result."""
    if layout.is_partial(path.resolve()) and path.resolve().name.endswith(".partial"):
        raise SpecError(
            f"{path}: a run that never finished (a replay stopped by a hard kill leaves it "
            "under this hidden name): never compared",
            hint="delete it, or run the replay again (`repro replay --on local --resume` "
            "takes a dispatched one over)",
        )
