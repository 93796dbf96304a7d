"""What a replay is asked to do, typed: `ReplayRequest`, its mode, and the reporter the engine
speaks through.

A request is what any front end (the command line, a script, a test) fills in; it holds parsed
values (backend overrides as a mapping, CPU lists as numbers), never a command line's text, and
nothing about how the result is shown: printing, JSON and the report's folder are the front
end's. The engine's steps (`repro.replay.steps`) run a request and say what happens through a
`ReplayReporter`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, get_args

if TYPE_CHECKING:
    from repro.estimates import Forecast
    from repro.runs.record import RunRecord
    from repro.spec.models import ModeName, ScenarioName

#: what one replay does: a plain replay, one followed by a profiled pass, rounds until decided
#: against the spec's original, rounds against a baseline (with or without until-decided), a
#: replay and the spec's claims checked, parts dispatched by an executor (this machine, Slurm,
#: ...), or a dispatched run resumed
Mode = Literal["plain", "profile", "until-decided", "against", "claims", "on", "resume"]
MODES: Final[frozenset[Mode]] = frozenset(get_args(Mode))
#: the modes that run on this machine, and those that start a run from a spec
HERE: Final[frozenset[Mode]] = frozenset({"plain", "profile", "until-decided", "against", "claims"})
STARTED: Final[frozenset[Mode]] = MODES - {"resume"}

#: which run a reporter is shown: the replay's, a baseline's beside it, or what a dispatched run
#: had gathered when it was interrupted
RunRole = Literal["run", "baseline", "interrupted"]


class ReplayReporter(Protocol):
    """How the engine speaks: status lines, a wait's progress, and each run it made."""

    def note(self, message: str) -> None:
        """A status line."""

    def progress(self, label: str, forecast: Forecast) -> contextlib.AbstractContextManager[Any]:
        """The wait for one worker (a context around it)."""

    def run(self, run_dir: Path, record: RunRecord, role: RunRole) -> None:
        """A run the replay made (written and committed before this is called)."""


@dataclass(frozen=True)
class ReplayRequest:
    """One replay, as asked: the spec, what to run of it, where, and how many times."""

    #: the spec, or a package holding one (None: resume)
    spec_path: Path | None
    results_dir: Path
    scenarios: tuple[ScenarioName, ...] = ()
    modes: tuple[ModeName, ...] = ()
    #: LoadGen overrides of every scenario (bounded by the spec's own types)
    min_duration_ms: int | None = None
    min_query_count: int | None = None
    max_duration_ms: int | None = None
    #: backend options over the spec's (the run records them; the report shows them as drift)
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 1
    env_name: str = "auto"
    run_id: str | None = None
    cache_dir: Path | None = None
    #: a package's signer's public key
    key_path: Path | None = None
    #: the environment manager's own options, by name (docker's rebuild, cpuset, memory:
    #: `EnvironmentFace.options`), as the command line gave them
    env_options: Mapping[str, Any] = field(default_factory=dict)
    #: rounds: the baseline (a spec path, or "self"), its environment and backend options
    against: str | None = None
    baseline_env: str | None = None
    baseline_options: Mapping[str, Any] = field(default_factory=dict)
    until_decided: bool = False
    max_rounds: int | None = None
    max_time_s: float | None = None
    duet: bool = False
    #: the CPUs the rounds' tests are pinned to (None: unpinned)
    cpus: tuple[int, ...] | None = None
    order_seed: int | None = None
    #: check the spec's claims after the replay
    claims: bool = False
    #: a profiled pass after the tests, of this many samples
    profile: bool = False
    profile_samples: int = 64
    #: dispatch as parts on this executor, with its flags
    on: str | None = None
    executor_flags: Mapping[str, Any] = field(default_factory=dict)
    #: resume this dispatched run
    resume_run: Path | None = None

    @property
    def mode(self) -> Mode:
        """What the request asks for; options of other modes are the front end's to refuse."""
        if self.resume_run is not None:
            return "resume"
        if self.on is not None:
            return "on"
        if self.claims:
            return "claims"
        if self.against is not None:
            return "against"
        if self.until_decided:
            return "until-decided"
        return "profile" if self.profile else "plain"
