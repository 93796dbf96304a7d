"""The executor plug-in interface: who runs the parts of a dispatched replay, and in what words.

An executor is one module under `repro/dispatch/executors/` and one line in `registry.py`. The
module holds an `ExecutorPlugin` named PLUGIN (light: its options, its command-line flags, what
it is) and the `Executor` that does the work, which the plug-in names by "module:Class" and
imports only when parts are dispatched (an executor that needs a heavy client keeps it in a
module of its own). An executor submits parts by index, says where each one stands (`poll`),
cancels them, and says which of its earlier jobs still run (`alive`). It says where a part
stands in its own words (a Slurm job state) *and* in repro's (`Phase`): gathering the parts
reads repro's words only. The part's own run.json says how the part's run went; the
executor's state says why a part left no run and on which node it ran.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NamedTuple, Protocol, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from repro.errors import UsageError

if TYPE_CHECKING:
    from repro.dispatch.plan import DispatchPlan

#: where a part stands, in repro's words:
#: pending (queued, not started), running, completed (it ended by itself: its run.json says how
#: its run went), failed (it ended by itself, in error), cancelled (someone cancelled it: a
#: Ctrl-C of the replay, `scancel`), stopped (the executor or the machine stopped it: a time
#: limit, a preemption, a node that failed), gone (the executor no longer knows it, and
#: nothing says how it ended)
Phase = Literal["pending", "running", "completed", "failed", "cancelled", "stopped", "gone"]
#: what a node runs for one part: `python -m PART_MODULE PLAN.json K` (the replay engine's)
PART_MODULE: Final = "repro.replay.part"
#: the phases of a part that has not ended
UNFINISHED: Final = frozenset({"pending", "running"})
#: the word recorded for a part that finished while no replay watched it (a killed replay's
#: provisional record heard none from its executor): the word the shipped executors use
FINISHED_UNWATCHED: Final = "COMPLETED"


class PartState(NamedTuple):
    """Where one part stands: in repro's words (`phase`) and in the executor's own (`state`,
    recorded as the part's last word), with the node and the job when known; `why` is the
    executor's account of an end that left no run, when it has one."""

    phase: Phase
    state: str
    node: str | None = None
    job_id: str | None = None
    why: str | None = None


class ExecutorOptions(BaseModel):
    """An executor's options, recorded in the plan: every field has a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Executor(Protocol):
    """One dispatch's executor: made by its plug-in with the options it runs with."""

    #: its plug-in's name
    name: str
    #: the id of the current submission, once there is one
    job: str | None

    @property
    def options(self) -> ExecutorOptions:
        """The options it runs with (the plan records them)."""

    def submit(self, plan: DispatchPlan, plan_path: Path, indices: list[int]) -> str:
        """Start the parts; an id of the submission (a Slurm job id)."""

    def poll(self) -> dict[int, PartState]:
        """The state of every submitted part (none before a submission)."""

    def cancel(self) -> None:
        """Stop every part that has not finished (nothing before a submission)."""

    def alive(self, jobs: list[str]) -> list[str]:
        """Which of these earlier submissions still have parts queued or running."""

    def check(self) -> None:
        """Raise ClusterUnavailableError when parts could not be submitted at all (before
        anything is written for them)."""


@dataclass(frozen=True)
class ExecutorFlag:
    """A command-line option of one executor; `repro.cli` adds it to every command that
    dispatches (`--on`), and it sets one field of the executor's options."""

    #: the option as click declares it: "--partition", or "--exclusive/--shared" for a switch
    decl: str
    #: the keyword the command receives
    param: str
    #: the field of the options model it sets
    field: str
    help: str
    #: text; a count (an integer from 1); a switch (an on/off pair)
    kind: Literal["text", "count", "switch"] = "text"
    #: what a valid value looks like, said when one is not
    hint: str | None = None


class ExecutorPlugin:
    """What repro knows about one executor without importing its work."""

    name: ClassVar[str]
    #: where the parts run, for `--on`'s help ("on this machine, one after the other")
    where: ClassVar[str]
    #: its options (recorded in the plan)
    options_model: ClassVar[type[ExecutorOptions]]
    #: "module:Class" of the Executor; the class is called with the options
    executor: ClassVar[str]
    #: its command-line options
    flags: ClassVar[tuple[ExecutorFlag, ...]] = ()
    #: the environment variable that names the node a part runs on, where it sets one
    node_variable: ClassVar[str | None] = None

    def state(self, word: str, node: str | None = None, job_id: str | None = None) -> PartState:
        """A state this executor says (`word`, as a part's record keeps it) in repro's words."""
        raise NotImplementedError(f"executor {self.name!r} does not translate its states")

    def stop_hint(self, jobs: list[str]) -> str:
        """How a person stops these jobs of this executor themselves."""
        return f"stop job(s) {', '.join(jobs)}"

    def options_from(
        self, given: Mapping[str, Any], saved: ExecutorOptions | None = None
    ) -> ExecutorOptions:
        """The options: `saved` (else the defaults) with the flags given over them (by the
        command's keyword; None is not given); a bad value is a UsageError naming its flag."""
        updates = {f.field: given[f.param] for f in self.flags if given.get(f.param) is not None}
        base = saved.model_dump() if saved is not None else {}
        try:
            return self.options_model.model_validate(base | updates)
        except ValidationError as exc:
            raise self._flag_error(exc, updates) from None

    def _flag_error(self, exc: ValidationError, updates: dict[str, Any]) -> UsageError:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        flag = next((f for f in self.flags if f.field == field), None)
        cause = (err.get("ctx") or {}).get("error")
        said = str(cause) if isinstance(cause, ValueError) else err["msg"]
        if flag is None or field not in updates:  # a saved option: the run's plan was edited
            return UsageError(
                f"--on {self.name}: the run's option {field!r}: {said}",
                hint="give it again on the command line, or replay anew",
            )
        return UsageError(f"{flag.decl} {updates[field]!r}: {said}", hint=flag.hint)

    def make(self, options: ExecutorOptions | None = None) -> Executor:
        """The executor, with these options (else the defaults)."""
        module, _, attr = self.executor.partition(":")
        cls = cast(
            "Callable[[ExecutorOptions], Executor]", getattr(importlib.import_module(module), attr)
        )
        return cls(options if options is not None else self.options_model())


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back while a submission is made, so that an interruption
    arrives once its id is known (and the parts can be cancelled), never in between."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
