"""What a replay knows as its steps go (`ReplayState`), and what every step shares: the value an
earlier step must have made (`need`) and a Replayer in a session of its own (`open_replayer`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from repro.artifacts.cache import ArtifactCache
from repro.errors import RunError
from repro.replay.replayer import Replayer
from repro.replay.reporter import ReplayReporter
from repro.replay.session import ReplaySession
from repro.runs.plan import ReplayPlan
from repro.spec.io import with_backend_options as apply_backend_options

if TYPE_CHECKING:
    from repro.replay.claim_rounds import Outcome as ClaimOutcome
    from repro.replay.round_judge import Outcome
    from repro.reports.model import ClaimsCheck, Report
    from repro.runs.placement import Placement
    from repro.runs.record import RunRecord
    from repro.runs.store import LoadedRun
    from repro.spec.models import ExperimentSpec
    from repro.stats.sequential import Stopping

T = TypeVar("T")


@dataclass(frozen=True)
class ReplayState:
    """What a replay knows so far: the plan, then what each step added to it."""

    #: the plan as asked, then as the steps fix it (the rounds' run ids, pinned CPUs)
    plan: ReplayPlan
    reporter: ReplayReporter
    #: the spec, or the spec inside the package the request names
    spec_path: Path | None = None
    #: the environment options a package's contents give (wheels, an image)
    package_options: dict[str, Any] = field(default_factory=dict)
    #: False for a package packed without its original: the replay has none (and reads no
    #: folder outside the package that its spec names)
    original_packed: bool = True
    spec: ExperimentSpec | None = None
    #: rounds: when they stop, and the run id the replay's and the baseline's ids derive from
    stopping: Stopping | None = None
    #: where the rounds' tests run: one at a time (pinned or not), or in duet
    placement: Placement | None = None
    base_id: str | None = None
    baseline: Replayer | None = None
    original: LoadedRun | None = None
    replayer: Replayer | None = None
    run: tuple[Path, RunRecord] | None = None
    outcome: Outcome | None = None
    #: claims: what each claim's rounds measured, their check, and the replay against the
    #: spec's original with the claims in it (None: nothing to compare it with)
    claims: list[ClaimOutcome] | None = None
    claims_check: ClaimsCheck | None = None
    claims_report: Report | None = None

    @property
    def cache(self) -> ArtifactCache:
        """The artifact cache (the plan's, else the default)."""
        return ArtifactCache(self.plan.cache_dir)

    def note(self, message: str) -> None:
        self.reporter.note(message)


def start(plan: ReplayPlan, reporter: ReplayReporter) -> ReplayState:
    """The state before the first step: the plan only."""
    return ReplayState(plan=plan, reporter=reporter, spec_path=plan.spec_path)


def need(value: T | None, what: str) -> T:
    """A value an earlier step makes; its absence is a step list out of order (a bug)."""
    if value is None:
        raise AssertionError(f"a replay step needs {what}, which no step before it made")
    return value


def open_replayer(
    state: ReplayState,
    spec: ExperimentSpec,
    spec_path: Path,
    plan: ReplayPlan,
    *,
    given: Mapping[str, Any] | None = None,
) -> Replayer:
    """The environment realized in a session, and the session's Replayer of `spec`; `given`:
    what a package's contents give the environment (the replay's own spec only)."""
    session = ReplaySession.open(
        spec,
        spec_path,
        plan,
        report=state.reporter.note,
        progress=state.reporter.progress,
        cache=state.cache,
        given=given,
    )
    return session.replayer(spec, plan)


def raise_unless_complete(run_dir: Path, record: RunRecord) -> None:
    """A run that did not complete is a RunError naming the tests (or parts) that did not."""
    if record.status == "complete":
        return
    if record.parts and record.message:
        raise RunError(f"run {record.status}: {record.message}", hint=f"the parts are in {run_dir}")
    bad = [t for t in record.tests if t.status != "valid"]
    details = "; ".join(
        f"{t.scenario} {t.mode}: {t.status}"
        + (f" ({why})" if (why := t.error or t.metrics.errors) else "")
        for t in bad
    )
    raise RunError(
        f"run {record.status}: {details}",
        hint=f"the tests' folders are in {run_dir}: LoadGen's mlperf_log_summary.txt says why "
        "a test was INVALID, the worker's log why one failed",
    )


# -- shared with `repro profile`


def with_backend_options(
    spec: ExperimentSpec, spec_path: Path, options: Mapping[str, Any]
) -> ExperimentSpec:
    """The spec with backend options over its own, when any (validated by the spec's types)."""
    if not options:
        return spec
    return apply_backend_options(spec, dict(options), source=f"{spec_path} with --backend-option")
