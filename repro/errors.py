"""Every error repro raises on purpose, each with the exit code the CLI returns for it."""

from __future__ import annotations

from typing import ClassVar

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2
EXIT_FAILURE = 3
EXIT_INTERNAL = 4


class Interrupted(Exception):
    """SIGTERM or SIGHUP arrived: stop like Ctrl-C (the CLI exits 130)."""


class ReproError(Exception):
    """Base of the errors the CLI reports without a traceback."""

    exit_code: ClassVar[int] = EXIT_INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class SpecError(ReproError):
    """An invalid or unsupported spec, or other bad input from the user."""

    exit_code = EXIT_BAD_INPUT


class InternalError(ReproError):
    """repro cannot read or use what it made itself: a bug in repro, not a fault of the user's
    input (the CLI exits 4 and `--debug` shows the traceback)."""

    exit_code = EXIT_INTERNAL


class UsageError(ReproError):
    """Options that cannot work together."""

    exit_code = EXIT_BAD_INPUT


class ArtifactError(ReproError):
    """A fetch failed, or an artifact does not have the pinned sha256."""

    exit_code = EXIT_FAILURE


class EnvironmentSetupError(ReproError):
    """The software environment could not be realized."""

    exit_code = EXIT_FAILURE


class BackendUnavailableError(EnvironmentSetupError):
    """A backend's package is not installed in the realized environment."""


class ClusterUnavailableError(EnvironmentSetupError):
    """The cluster that runs dispatched parts cannot take them (no `sbatch` on PATH, no
    controller answering): nothing was submitted."""


class CatalogUnavailableError(ReproError):
    """The catalog's store cannot be reached or written, or MLflow's client is not installed
    (the results it was to log are on disk all the same)."""

    exit_code = EXIT_FAILURE


class RunError(ReproError):
    """The harness or LoadGen failed, or LoadGen judged the run INVALID."""

    exit_code = EXIT_FAILURE
