"""What one replay is asked for, typed once: `ReplayPlan` and its mode.

A front end (the command line, a script, a test, a dispatched part, a claim's side, a sweep's
point) validates its values into a plan once and hands it whole to the engine: the plan holds
parsed values (backend overrides as a mapping, CPU lists as numbers), never a command line's
text, and nothing about how the result is shown (printing, JSON and the report's folder are the
front end's). A variant of a plan is `plan.but(...)`, never a copy of its fields.

The LoadGen settings a plan may override in every scenario are the spec's own
(`LoadGenSettings`): their types, bounds and words come from there (`LoadGenOverrides`), and the
command line's options are made from them (`repro.cli.options.loadgen_override`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model

from repro.spec.types import ModeName, ScenarioName, optional_setting

#: what one replay does: a plain replay, one followed by a profiled pass, rounds until decided
#: against the spec's original, rounds against a baseline (with or without until-decided), a
#: replay and the spec's claims checked, parts dispatched by an executor (this machine, Slurm,
#: ...), or a dispatched run resumed
Mode = Literal["plain", "profile", "until-decided", "against", "claims", "on", "resume"]
MODES: Final[frozenset[Mode]] = frozenset(get_args(Mode))
#: the modes that run on this machine, and those that start a run from a spec
HERE: Final[frozenset[Mode]] = frozenset({"plain", "profile", "until-decided", "against", "claims"})
STARTED: Final[frozenset[Mode]] = MODES - {"resume"}

#: the LoadGen settings a plan overrides in every scenario (quick runs, longer runs)
OVERRIDABLE: Final = ("min_duration_ms", "min_query_count", "max_duration_ms")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


#: LoadGen settings over every scenario's (None: the spec's), typed as the spec types them
LoadGenOverrides = create_model(
    "LoadGenOverrides", __base__=_Frozen, **{name: optional_setting(name) for name in OVERRIDABLE}
)


class RoundsPlan(_Frozen):
    """Paired rounds (`--against`, `--until-decided`): the baseline, the caps, placement."""

    #: the baseline: a spec path, or "self"
    against: str | None = None
    baseline_env: str | None = None
    baseline_options: dict[str, Any] = Field(default_factory=dict)
    until_decided: bool = False
    max_rounds: int | None = Field(None, ge=1, le=1000)
    max_time_s: float | None = Field(None, ge=1, le=7 * 24 * 3600)
    duet: bool = False
    #: the CPUs the rounds' tests are pinned to (None: unpinned)
    cpus: tuple[int, ...] | None = None
    order_seed: int | None = Field(None, ge=0, le=2**32 - 1)


class ReplayPlan(_Frozen):
    """One replay, as asked: the spec, what to run of it, where, how many times, and how."""

    #: the spec, or a package holding one (None: resume)
    spec_path: Path | None = None
    results_dir: Path = Path("results")
    #: the run's folder name (None: a new time-based id)
    run_id: str | None = None
    #: build the run at exactly this folder (a part of a dispatched run), not results/<name>/<id>
    run_path: Path | None = None
    scenarios: tuple[ScenarioName, ...] = ()
    modes: tuple[ModeName, ...] = ()
    loadgen: LoadGenOverrides = Field(default_factory=LoadGenOverrides)
    #: backend options over the spec's (the run records them; the report shows them as drift)
    backend_options: dict[str, Any] = Field(default_factory=dict)
    #: performance tests of each scenario (rounds); 0 runs only a profiled pass
    repeat: int = Field(1, ge=0)
    #: the environment manager (`auto`: the captured one if installed, else venv) and its own
    #: options by name (docker's rebuild, cpuset, memory: `EnvironmentFace.options`)
    env: str = "auto"
    env_options: dict[str, Any] = Field(default_factory=dict)
    cache_dir: Path | None = None
    #: a package's signer's public key
    key_path: Path | None = None
    #: a profiled pass after the tests, of this many samples (of `profile_scenario`, else the
    #: default one: `repro.profiling.default_scenario`)
    profile: bool = False
    profile_samples: int = Field(64, ge=1)
    profile_scenario: ScenarioName | None = None
    #: an MLPerf compliance test's audit.config for LoadGen (`repro submission`): its runs are
    #: judged by the test's verification, not as replays
    audit_config: str | None = None
    probes: bool = True
    worker_timeout_s: float = Field(3600.0, gt=0)
    #: what the run records besides its overrides (a claim's side: the claim and variant)
    recorded: dict[str, Any] = Field(default_factory=dict)
    rounds: RoundsPlan = Field(default_factory=RoundsPlan)
    #: check the spec's claims after the replay
    claims: bool = False
    #: dispatch as parts on this executor, with its flags
    on: str | None = None
    executor_flags: dict[str, Any] = Field(default_factory=dict)
    #: resume this dispatched run
    resume_run: Path | None = None

    @property
    def mode(self) -> Mode:
        """What the plan asks for; options of other modes are the front end's to refuse."""
        if self.resume_run is not None:
            return "resume"
        if self.on is not None:
            return "on"
        if self.claims:
            return "claims"
        if self.rounds.against is not None:
            return "against"
        if self.rounds.until_decided:
            return "until-decided"
        return "profile" if self.profile else "plain"

    def but(self, **changes: Any) -> ReplayPlan:
        """This plan with `changes` (a variant: a baseline's, a part's, a claim's side), checked
        as a new plan is."""
        return type(self).model_validate(self.model_dump() | changes)

    def override(self, name: str) -> Any:
        """The value of LoadGen's setting `name` over the spec's, or None."""
        return getattr(self.loadgen, name)

    @property
    def short_test_ms(self) -> int | None:
        """The minimum duration asked for every test (a short test is bounded by it)."""
        value: int | None = self.override("min_duration_ms")
        return value

    def override_map(self, **more: Any) -> dict[str, Any]:
        """What the plan changed of the spec, as the run records it (unset values left out;
        the backend options are in the spec the run records)."""
        given = {
            "scenarios": list(self.scenarios),
            "modes": list(self.modes),
            **self.loadgen.model_dump(),
            "repeat": self.repeat,
            **self.recorded,
            **more,
        }
        return {k: v for k, v in given.items() if v not in (None, [], {})}


def loadgen_overrides(**values: Any) -> Any:
    """LoadGen's settings over every scenario's, checked by the spec's types."""
    return LoadGenOverrides.model_validate(values)
