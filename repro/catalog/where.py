"""Where the catalog is: a tracking URI from `--track`, `REPRO_TRACKING_URI` or the project's
`.repro/config.toml`, in that order; on without a URI, an embedded SQLite file in the project.

    [catalog]
    tracking_uri = "http://mlflow.example:5000"   # or "default": .repro/catalog.db

`--track off` switches it off for one command whatever the others say. The URI is never written
into a file repro makes (it can hold a user and a password); it is printed without them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import tomllib

from repro.errors import SpecError, UsageError

ENV: Final = "REPRO_TRACKING_URI"
CONFIG: Final = Path(".repro") / "config.toml"
#: the embedded store, and its artifacts beside it, relative to the project
DATABASE: Final = Path(".repro") / "catalog.db"
ARTIFACTS: Final = Path(".repro") / "catalog-artifacts"
#: `--track` given without a URI, or a config's "default": the embedded store
DEFAULT: Final = "default"
OFF: Final = "off"
#: file:// is left out: MLflow 3's file store is in maintenance mode and refuses new runs
_SCHEMES: Final = ("sqlite", "http", "https", "postgresql", "mysql", "databricks")


@dataclass(frozen=True)
class Tracking:
    """A tracking store to log to: its URI, who asked for it, and (for the embedded store) the
    folder of its artifacts."""

    uri: str
    source: str
    artifacts: Path | None = None

    def scrub(self, text: str) -> str:
        """`text` (an error of the store's client) without the URI's user, password or query."""
        parts = urlsplit(self.uri)
        for secret in (parts.password, parts.username, parts.query):
            if secret:
                text = text.replace(secret, "***")
        return text

    @property
    def shown(self) -> str:
        """The URI without a user, a password or a query (where a token can sit too)."""
        parts = urlsplit(self.uri)
        if parts.username is None and parts.password is None and not parts.query:
            return self.uri
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def page(self, experiment_id: str) -> str | None:
        """The web page of an experiment's runs table, for a store behind an `mlflow server`.

        MLflow 3.17's UI opens an experiment on the view its sidebar switch last chose, a GenAI
        overview by default ("Traces 0, No data available"); the query names the runs table.
        """
        if urlsplit(self.uri).scheme not in ("http", "https"):
            return None
        base = self.shown.rstrip("/")
        return f"{base}/#/experiments/{experiment_id}?workflowType=machine_learning"


def embedded(project: Path) -> Tracking:
    """The default store: SQLite in `<project>/.repro/catalog.db`, artifacts beside it."""
    root = project.resolve()
    return Tracking(
        uri=f"sqlite:///{root / DATABASE}", source="default", artifacts=root / ARTIFACTS
    )


def _configured(project: Path) -> str | None:
    path = project / CONFIG
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(
            f"{path}: not TOML ({exc})",
            hint='write it as `[catalog]` then `tracking_uri = "default"` (or a server URL)',
        ) from None
    section = data.get("catalog", {})
    if "tracking_uri" in data:  # written at the top, where it was silently ignored
        raise SpecError(
            f"{path}: tracking_uri is set outside the [catalog] table, where it means nothing",
            hint='put it under the table: `[catalog]` then `tracking_uri = "default"`',
        )
    value = section.get("tracking_uri") if isinstance(section, dict) else None
    if value is not None and not isinstance(value, str):
        raise SpecError(
            f"{path}: catalog.tracking_uri: a string is required, got {type(value).__name__}",
            hint='e.g. tracking_uri = "default" or "http://host:5000"',
        )
    return value or None


def _check(uri: str, source: str) -> str:
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        raise UsageError(
            f"{source}: {uri!r} is not a URI ({exc})", hint="e.g. http://host:5000 or 'default'"
        ) from None
    scheme = parts.scheme.split("+")[0]  # postgresql+psycopg2, mysql+pymysql
    if scheme == "sqlite" and parts.path in ("", "/", "/:memory:"):
        raise UsageError(
            f"{source}: {uri!r} is an SQLite store in memory: it is gone when the command ends",
            hint="name a file: sqlite:///catalog.db (relative) or sqlite:////abs/path.db",
        )
    if scheme not in _SCHEMES:
        raise UsageError(
            f"{source}: {uri.split('://')[0]!r} is not a tracking store MLflow reads",
            hint=f"give one of {', '.join(s + '://' for s in _SCHEMES)}, or 'default' for "
            f"the project's own SQLite file ({DATABASE})",
        )
    return uri


def resolve(track: str | None, project: Path, *, on: bool = False) -> Tracking | None:
    """The store to log to, or None when the catalog is off. `on`: a catalog command, which
    uses the embedded store when nothing names another."""
    sources: tuple[tuple[Callable[[], str | None], str], ...] = (
        (lambda: track, "--track"),
        (lambda: os.environ.get(ENV) or None, ENV),
        (lambda: _configured(project), str(CONFIG)),  # read only when the others are silent
    )
    for read, source in sources:
        value = read()
        if value is None:
            continue
        if value == OFF:
            if not on:
                return None
            if source == "--track":
                raise UsageError(
                    "--track off: a catalog command needs a catalog",
                    hint="drop --track, or give the store's URI",
                )
            continue  # a catalog command reads the next source
        if value == DEFAULT:
            return embedded(project)
        return Tracking(
            uri=_check(value, source), source=source, artifacts=_artifacts(value, project)
        )
    return embedded(project) if on else None


def _artifacts(uri: str, project: Path) -> Path | None:
    """Where a store that keeps no artifacts of its own puts them (MLflow's default is
    `./mlruns` wherever the command runs): beside an SQLite file, or in the project for
    another database; None for a server or a file store (they keep their own)."""
    database = sqlite_file(uri, project)
    if database is not None:
        return database.parent / f"{database.stem}-artifacts"
    if urlsplit(uri).scheme.split("+")[0] in ("postgresql", "mysql"):
        return project.resolve() / ARTIFACTS
    return None


def for_catalog_command(track: str | None, project: Path) -> Tracking:
    """The store of `repro catalog sync|history`: as `resolve`, and the project's embedded
    store when nothing names another (an `off` from the environment or the config is passed
    over; `--track off` is refused)."""
    found = resolve(track, project, on=True)
    return found if found is not None else embedded(project)


def sqlite_file(uri: str, project: Path | None = None) -> Path | None:
    """The file of an SQLite store's URI (`sqlite:///rel` from the project or the working
    folder, `sqlite:////abs`); None for another store."""
    parts = urlsplit(uri)
    if parts.scheme.split("+")[0] != "sqlite" or parts.path in ("", "/", "/:memory:"):
        return None
    return (project or Path.cwd()).resolve() / parts.path[1:]
