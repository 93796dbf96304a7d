"""What this process wrote: run, report, sweep and claims-check folders, each as it was committed.

The catalog step that runs after a command (`repro.catalog.sync.after_command`) logs what is
here; nothing else reads it. A folder is noted once it is whole on the disk (a run after its
record is committed, a report after its files are written), so what the catalog is told of is
already safe whatever happens to the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Written:
    """The folders a command wrote, in order, each once."""

    runs: list[Path] = field(default_factory=list)
    reports: list[Path] = field(default_factory=list)
    sweeps: list[Path] = field(default_factory=list)
    claims: list[Path] = field(default_factory=list)

    def note(self, kind: str, folder: Path) -> None:
        found: list[Path] = getattr(self, kind)
        if folder not in found:
            found.append(folder)

    def __bool__(self) -> bool:
        return bool(self.runs or self.reports or self.sweeps or self.claims)


#: this process's
written = Written()
