"""What a replay knows as its steps go (`ReplayState`), and what every step shares: the value an
earlier step must have made (`need`) and a Replayer in a session of its own (`open_replayer`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from repro.artifacts.cache import ArtifactCache
from repro.errors import RunError
from repro.replay.request import ReplayReporter, ReplayRequest

if TYPE_CHECKING:
    from repro.replay.claim_rounds import Outcome as ClaimOutcome
    from repro.replay.options import ReplayOptions
    from repro.replay.replayer import Replayer
    from repro.replay.rounds import Outcome
    from repro.reports.model import ClaimsCheck, Report
    from repro.runs.placement import Placement
    from repro.runs.record import RunRecord
    from repro.runs.store import LoadedRun
    from repro.spec.models import ExperimentSpec
    from repro.stats.sequential import Stopping

T = TypeVar("T")


@dataclass(frozen=True)
class ReplayState:
    """What a replay knows so far: the request, then what each step added to it."""

    request: ReplayRequest
    reporter: ReplayReporter
    #: the spec, or the spec inside the package the request names
    spec_path: Path | None = None
    #: the environment options a package's contents give (wheels, an image)
    package_options: dict[str, Any] = field(default_factory=dict)
    #: False for a package packed without its original: the replay has none (and reads no
    #: folder outside the package that its spec names)
    original_packed: bool = True
    spec: ExperimentSpec | None = None
    opts: ReplayOptions | None = None
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
        """The artifact cache (the request's, else the default)."""
        return ArtifactCache(self.request.cache_dir)

    def note(self, message: str) -> None:
        self.reporter.note(message)


def start(request: ReplayRequest, reporter: ReplayReporter) -> ReplayState:
    """The state before the first step: the request only."""
    return ReplayState(request=request, reporter=reporter, spec_path=request.spec_path)


def need(value: T | None, what: str) -> T:
    """A value an earlier step makes; its absence is a step list out of order (a bug)."""
    if value is None:
        raise AssertionError(f"a replay step needs {what}, which no step before it made")
    return value


def open_replayer(
    state: ReplayState, spec: ExperimentSpec, spec_path: Path, env_name: str, opts: ReplayOptions
) -> Replayer:
    """The environment realized in a session, and the session's Replayer of `spec`."""
    from repro.replay.session import ReplaySession

    session = ReplaySession.open(
        env_name,
        spec,
        spec_path,
        state.cache,
        report=state.reporter.note,
        progress=state.reporter.progress,
        options=opts.env_options,
    )
    from repro.environments.registry import FACES

    for face in FACES.values():
        unused = [o.flag for o in face.options if o.name in state.request.env_options]
        if unused and session.env.manager != face.name:
            state.note(
                f"{', '.join(unused)}: unused ({face.name}'s option), as --env {env_name} chose "
                f"{session.env.manager}"
            )
    return session.replayer(spec, opts)


def raise_unless_complete(run_dir: Path, record: RunRecord) -> None:
    """A run that did not complete is a RunError naming the tests (or parts) that did not."""
    if record.status == "complete":
        return
    if record.parts and record.message:
        raise RunError(f"run {record.status}: {record.message}", hint=f"the parts are in {run_dir}")
    bad = [t for t in record.tests if t.status != "valid"]
    details = "; ".join(
        f"{t.scenario} {t.mode}: {t.status}"
        + (f" ({why})" if (why := t.error or t.loadgen().errors) else "")
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
    from repro.spec.io import with_backend_options as apply

    if not options:
        return spec
    return apply(spec, dict(options), source=f"{spec_path} with --backend-option")
