"""What this process wrote: run, report, sweep and claims-check folders, each as it was committed.

The catalog step that runs after a command (`repro.catalog.sync.after_command`) logs what is
here; nothing else reads it. A folder is noted once it is whole on the disk (a run after its
record is committed, a report after its files are written), so what the catalog is told of is
already safe whatever happens to the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Kind = Literal["runs", "reports", "sweeps", "claims"]
#: where a command's `--track` value waits for the catalog step (`ReproGroup.invoke`)
TRACK_META = "repro.track"


@dataclass
class Written:
    """The folders a command wrote, in order, each once."""

    runs: list[Path] = field(default_factory=list)
    reports: list[Path] = field(default_factory=list)
    sweeps: list[Path] = field(default_factory=list)
    claims: list[Path] = field(default_factory=list)

    def note(self, kind: Kind, folder: Path) -> None:
        found = self._of(kind)
        if folder not in found:
            found.append(folder)

    def moved(self, old: Path, new: Path) -> None:
        """A folder noted under `old` (a run staged under a temporary name) is now `new`."""
        for found in self._all():
            found[:] = [new / f.relative_to(old) if f.is_relative_to(old) else f for f in found]

    def clear(self) -> None:
        """A new command starts (a process that runs several: a test, a notebook)."""
        for found in self._all():
            found.clear()

    def _of(self, kind: Kind) -> list[Path]:
        found: list[Path] = getattr(self, kind)
        return found

    def _all(self) -> tuple[list[Path], ...]:
        return (self.runs, self.reports, self.sweeps, self.claims)

    def __bool__(self) -> bool:
        return any(self._all())


#: this process's
written = Written()
