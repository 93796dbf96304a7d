"""How the engine speaks: `ReplayReporter` (status lines, a wait's progress, each run made); a
front end implements it (`repro.cli.run_output.TerminalReporter`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from repro.estimates import Forecast
    from repro.runs.record import RunRecord

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
