"""The runs `repro submission` makes itself, in the runs' spec's environment: what they are.

A round fixes what a run cannot change afterwards: LoadGen's seeds (each round has its own)
and, for a full-length run, the durations and query counts mlperf.conf sets. So the submission
makes, per scenario, a performance run with the round's seeds when the given run used other
seeds (or is shorter than `--full-length` asks), and the compliance tests (TEST01, TEST04, with
LoadGen's audit.config) with the same settings. The accuracy run is always the given one's.
The runs are made by a `RunMaker`: the replay engine's (`repro.replay.submission_maker`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from repro.mlperf.round_rules import MIN_DURATION_MS, BenchmarkRules, RoundRules
from repro.runs.plan import OVERRIDABLE
from repro.runs.record import RunRecord, TestRecord
from repro.spec.models import ExperimentSpec

Reporter = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """How the submission's runs of one scenario are made: the spec with the round's seeds
    (and sample count), the replay's length settings, and why."""

    spec: ExperimentSpec
    settings: dict[str, int | None]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Made:
    """A run the submission made: its test (None: it failed, `error` says why) and folder."""

    name: str
    test: TestRecord | None
    folder: Path | None
    error: str | None = None


def round_spec(
    spec: ExperimentSpec, rules: RoundRules, bench: BenchmarkRules | None, *, full_length: bool
) -> tuple[ExperimentSpec, tuple[str, ...]]:
    """The spec with the round's seeds; with `full_length`, the benchmark's performance
    sample count too (as many as the data set has, said, when it has fewer)."""
    wl = spec.workload
    seeds = wl.seeds.model_copy(update=dict(rules.seeds))
    update: dict[str, Any] = {"seeds": seeds}
    notes: list[str] = []
    if full_length and bench is not None:
        count = min(bench.performance_sample_count, wl.total_sample_count)
        update["performance_sample_count"] = count
        if count < bench.performance_sample_count:
            notes.append(
                f"the data set has {wl.total_sample_count} samples: the performance sample "
                f"count is {count}, not {bench.name}'s {bench.performance_sample_count} (a spec "
                f"naming the benchmark's data set, {bench.dataset_size} samples, meets it)"
            )
    # the copy is another experiment: its id is its own digest, computed where it is recorded
    changed = {"workload": wl.model_copy(update=update), "id": None}
    return spec.model_copy(update=changed), tuple(notes)


def length_settings(
    record: RunRecord, scenario: str, bench: BenchmarkRules | None, *, full_length: bool
) -> dict[str, int | None]:
    """The length settings of the made runs: the given run's, or with `full_length` MLPerf's
    (600 s; mlperf.conf's query counts for the benchmark)."""
    if not full_length:
        return {k: record.overrides.get(k) for k in OVERRIDABLE}
    queries = bench.full_length_queries.get(scenario) if bench is not None else None
    return {"min_duration_ms": MIN_DURATION_MS, "min_query_count": queries, "max_duration_ms": None}


class RunMaker(Protocol):
    """What makes a submission's runs: the spec a given run replayed, and one run made."""

    def spec_of(self, run_dir: Path, record: RunRecord) -> tuple[ExperimentSpec, Path]:
        """The spec the run replayed, and the path it came from."""
        ...

    def make(self, run_dir: Path, record: RunRecord, scenario: str, name: str, plan: Plan) -> Made:
        """One performance run (`name`: performance, TEST01 or TEST04) of `scenario`."""
        ...
