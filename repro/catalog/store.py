"""The catalog's store: entries into an MLflow tracking store, and the runs of a spec back.

One MLflow experiment per spec name; one MLflow run per entry, found again by its key (the tag
`repro.key`), so logging twice updates, never duplicates, and an entry the store already holds
as it is (the tag `repro.entry_sha256`) is skipped. MLflow's client comes from the
`repro[mlflow]` extra (mlflow-skinny, and SQLAlchemy for the embedded SQLite store); it is
imported when a store is opened, never when repro starts.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from repro.catalog.entries import TAG_MAX, Entry, Judgement, utc_ms
from repro.catalog.where import Tracking, sqlite_file
from repro.errors import CatalogUnavailableError

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

Outcome = Literal["new", "updated", "unchanged"]
Judged = Literal["judged", "unchanged", "older"]
KEY_TAG: Final = "repro.key"
RUN_ID_TAG: Final = "repro.run_id"
#: written last: a run the store holds with it was logged whole
DIGEST_TAG: Final = "repro.entry_sha256"
JUDGEMENT_TAG: Final = "repro.judgement_sha256"
#: MLflow's own tag of an experiment's kind: its UI opens a `custom_model_development`
#: experiment on its runs table (an experiment without it opened on an empty GenAI overview:
#: "Traces 0, No data available", and a newcomer thought nothing was logged)
KIND_TAG: Final = "mlflow.experimentKind"
KIND: Final = "custom_model_development"
VERDICT_TAG: Final = "repro.verdict"
#: between a run's name and its verdict in the name the runs table shows
NAME_VERDICT: Final = " · "
REPORT_TIME_TAG: Final = "repro.report_generated_utc"
#: the tags a judgement sets per scenario (a later report's scenarios replace them)
_SCENARIO_VERDICT: Final = "repro.verdict."
#: MLflow's log_batch limits
_BATCH_METRICS: Final = 1000
_BATCH_PARAMS: Final = 100
_BATCH_TAGS: Final = 100
#: how long the client waits for a server, and how often it tries (MLflow's own default is
#: minutes of retries: a replay must not hang on a tracker that is down)
_HTTP_ENV: Final = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    # its "View run ... at" lines on stdout (a server store) are not repro's output
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
INSTALL_HINT: Final = "install the extra: pip install 'repro[mlflow]'"


@dataclass(frozen=True)
class CatalogRun:
    """One MLflow run of the catalog, as `repro catalog history` reads it."""

    run_id: str
    experiment_id: str
    key: str
    start_ms: int | None
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]


class Catalog:
    """An open tracking store."""

    def __init__(self, tracking: Tracking, *, read: bool = False) -> None:
        """Open the store; `read`: a reading command's (`catalog history`), which never makes
        a store or its tables."""
        self.tracking = tracking
        for k, v in _HTTP_ENV.items():
            os.environ.setdefault(k, v)
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise CatalogUnavailableError(
                f"the catalog needs MLflow's client, which is not installed ({exc.name})",
                hint=INSTALL_HINT,
            ) from None
        # MLflow's own lines (its tables made, its errors with their tracebacks) are not
        # repro's output: a failure is said once, in repro's words
        logging.getLogger("mlflow").setLevel(logging.CRITICAL)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        # urllib3's "Retrying ..." of a server that is down: the catalog says it in its words
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        try:
            if tracking.artifacts is not None:
                tracking.artifacts.mkdir(parents=True, exist_ok=True)
            database = sqlite_file(tracking.uri)
            if database is not None and database.exists():
                _refuse_foreign(database, tracking.shown)
            elif database is not None and read:
                raise CatalogUnavailableError(
                    f"no catalog at {tracking.shown} yet ({tracking.source})",
                    hint="`repro catalog sync results/` logs the project's runs into it",
                )
            elif database is not None:
                _made_whole(database, MlflowClient)
            self.client: MlflowClient = MlflowClient(tracking_uri=tracking.uri)
        except CatalogUnavailableError:
            raise
        except Exception as exc:  # MLflow raises many kinds for a store it cannot open
            raise self._unavailable(exc) from None
        self._experiments: dict[str, str] = {}
        self._kinds_checked: set[str] = set()

    def _unavailable(self, exc: BaseException) -> CatalogUnavailableError:
        text = self.tracking.scrub(" ".join(str(exc).split()))
        damage = _SQLITE_DAMAGE.search(text) if sqlite_file(self.tracking.uri) else None
        if damage is not None and "locked" not in damage.group(1):
            return CatalogUnavailableError(
                f"the catalog at {self.tracking.shown} is damaged: its tables are not as MLflow "
                f"made them ({damage.group(1).strip()[:200]})",
                hint="move it away and `repro catalog sync results/` rebuilds the catalog from "
                "the runs on disk",
            )
        return CatalogUnavailableError(
            f"the catalog at {self.tracking.shown} ({self.tracking.source}) cannot be written: "
            f"{type(exc).__name__}: {text[:300]}",
            hint="results are on disk; `repro catalog sync results/` logs them when it is back",
        )

    @property
    def touched(self) -> dict[str, str]:
        """Spec name -> experiment id of the experiments this catalog has read or made."""
        return dict(self._experiments)

    def experiment(self, name: str) -> str | None:
        """The id of the experiment of a spec name, if the store has one."""
        if name not in self._experiments:
            try:
                found = self.client.get_experiment_by_name(name)
            except Exception as exc:
                raise self._unavailable(exc) from None
            if found is None:
                return None
            self._experiments[name] = found.experiment_id
        return self._experiments[name]

    def _experiment_made(self, name: str) -> str:
        """The id of the experiment of a spec name, made when the store has none."""
        found = self.experiment(name)
        if found is not None:
            return found
        location = (
            (self.tracking.artifacts / _folder_name(name)).as_uri()
            if self.tracking.artifacts is not None
            else None  # a server keeps the artifacts where it was told to
        )
        try:
            made: str = self.client.create_experiment(
                name, artifact_location=location, tags={KIND_TAG: KIND}
            )
        except Exception as exc:
            raise self._unavailable(exc) from None
        self._experiments[name] = made
        return made

    def _kind_set(self, experiment_id: str) -> None:
        """An experiment made before repro set its kind opens on its runs too."""
        try:
            found = self.client.get_experiment(experiment_id)
            if found.tags.get(KIND_TAG) != KIND:
                self.client.set_experiment_tag(experiment_id, KIND_TAG, KIND)
        except Exception as exc:
            raise self._unavailable(exc) from None

    def find(self, experiment: str, key: str) -> Any | None:
        """The MLflow run of an entry's key, if the store holds one."""
        return self._first(experiment, KEY_TAG, key)

    def put(self, entry: Entry) -> tuple[Outcome, list[str]]:
        """Log an entry (its parent must be logged first); what happened, and what could not
        change (MLflow keeps a param's first value)."""
        try:
            return self._put(entry)
        except CatalogUnavailableError:
            raise
        except Exception as exc:
            raise self._unavailable(exc) from None

    def _put(self, entry: Entry) -> tuple[Outcome, list[str]]:
        from mlflow.entities import Metric, Param, RunTag

        digest = entry.digest
        eid = self._experiment_made(entry.experiment)
        if eid not in self._kinds_checked:
            self._kind_set(eid)
            self._kinds_checked.add(eid)
        run = self.find(entry.experiment, entry.key)
        if run is not None and run.data.tags.get(DIGEST_TAG) == digest:
            return "unchanged", []
        verdict = run.data.tags.get(VERDICT_TAG) if run is not None else None
        tags = {**entry.tags, KEY_TAG: entry.key, "mlflow.runName": _named(entry.name, verdict)}
        if entry.parent is not None:
            parent = self.find(entry.experiment, entry.parent)
            if parent is not None:
                tags["mlflow.parentRunId"] = parent.info.run_id
        notes: list[str] = []
        if run is None:
            outcome: Outcome = "new"
            run_id = self.client.create_run(
                eid, start_time=entry.start_ms, tags={KEY_TAG: entry.key}, run_name=entry.name
            ).info.run_id
            params = dict(entry.params)
        else:
            outcome = "updated"
            run_id = run.info.run_id
            have = run.data.params
            params = {k: v for k, v in entry.params.items() if k not in have}
            notes = [
                f"param {k}: kept {have[k]!r} (MLflow keeps a param's first value), not {v!r}"
                for k, v in entry.params.items()
                if k in have and have[k] != v
            ]
        at = entry.start_ms or 0
        metrics = [Metric(k, v, at, step) for k, v, step in entry.metrics]
        for batch in _chunks(metrics, _BATCH_METRICS):
            self.client.log_batch(run_id, metrics=batch)
        for pbatch in _chunks([Param(k, v) for k, v in sorted(params.items())], _BATCH_PARAMS):
            self.client.log_batch(run_id, params=pbatch)
        tag_list = [RunTag(k, v[:TAG_MAX]) for k, v in sorted(tags.items())]
        for tbatch in _chunks(tag_list, _BATCH_TAGS):
            self.client.log_batch(run_id, tags=tbatch)
        for path, folder in entry.artifacts:
            if path.is_file():  # a file gone since the entry was made is left out, not fatal
                self.client.log_artifact(run_id, str(path), folder or None)
            else:
                notes.append(f"{path.name}: gone before it was logged")
        self.client.set_terminated(run_id, entry.status, end_time=entry.end_ms)
        # last: a run interrupted before here is logged again by the next sync, never skipped
        self.client.set_tag(run_id, DIGEST_TAG, digest)
        return outcome, notes

    def find_run(self, experiment: str, run_id: str) -> Any | None:
        """The latest MLflow run of a repro run id (a report that names no path to its side)."""
        return self._first(experiment, RUN_ID_TAG, run_id)

    def _first(self, experiment: str, tag: str, value: str) -> Any | None:
        """The latest MLflow run of an experiment whose `tag` is `value`, if any."""
        eid = self.experiment(experiment)
        if eid is None:
            return None
        try:
            runs = self.client.search_runs(
                [eid],
                f"tags.`{tag}` = {_quoted(value)}",
                max_results=1,
                order_by=["attributes.start_time DESC"],
            )
        except Exception as exc:
            raise self._unavailable(exc) from None
        return runs[0] if runs else None

    def judge(self, judgement: Judgement, run: Any) -> tuple[Judged, str | None]:
        """Tag one run a report judged with its verdict, and attach the report: whether it
        was `judged`, already held this judgement (`unchanged`) or holds a newer report's
        (`older`, with why)."""
        try:
            return self._judge(judgement, run)
        except Exception as exc:
            raise self._unavailable(exc) from None

    def _judge(self, judgement: Judgement, run: Any) -> tuple[Judged, str | None]:
        from mlflow.entities import Metric, RunTag

        have = run.data.tags
        if have.get(JUDGEMENT_TAG) == judgement.digest:
            return "unchanged", None
        when = judgement.tags.get(REPORT_TIME_TAG, "")
        if have.get(REPORT_TIME_TAG, "") > when:
            return "older", f"a newer report's verdict ({have[REPORT_TIME_TAG]}) stands"
        run_id = run.info.run_id
        for key in have:
            if key.startswith(_SCENARIO_VERDICT) and key not in judgement.tags:
                self.client.delete_tag(run_id, key)  # a scenario this report did not judge
        at = utc_ms(when) or 0
        self.client.log_batch(
            run_id,
            metrics=[Metric(k, v, at, 0) for k, v in sorted(judgement.metrics.items())],
            tags=[RunTag(k, v[:TAG_MAX]) for k, v in sorted(judgement.tags.items())],
        )
        for path, folder in judgement.artifacts:
            if path.is_file():
                self.client.log_artifact(run_id, str(path), folder)
        verdict = judgement.tags.get(VERDICT_TAG)
        if verdict:  # where the runs table shows it with no configuration: the run's name
            base = (run.info.run_name or "").split(NAME_VERDICT)[0]
            self.client.set_tag(run_id, "mlflow.runName", _named(base, verdict))
        self.client.set_tag(run_id, JUDGEMENT_TAG, judgement.digest)
        return "judged", None

    def runs(self, experiment: str) -> list[CatalogRun]:
        """Every run of a spec's experiment, oldest first."""
        eid = self.experiment(experiment)
        if eid is None:
            return []
        out: list[CatalogRun] = []
        try:
            token = None
            while True:
                page = self.client.search_runs(
                    [eid],
                    max_results=1000,
                    order_by=["attributes.start_time ASC"],
                    page_token=token,
                )
                out += [_catalog_run(r) for r in page]
                token = page.token
                if not token:
                    break
        except Exception as exc:
            raise self._unavailable(exc) from None
        return out


def _catalog_run(run: Any) -> CatalogRun:
    return CatalogRun(
        run_id=run.info.run_id,
        experiment_id=run.info.experiment_id,
        key=run.data.tags.get(KEY_TAG, ""),
        start_ms=run.info.start_time,
        status=run.info.status,
        params=dict(run.data.params),
        metrics=dict(run.data.metrics),
        tags=dict(run.data.tags),
    )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _quoted(text: str) -> str:
    """A string literal of MLflow's search syntax."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _folder_name(name: str) -> str:
    """A spec's name as one folder of the artifacts: letters, digits, `._-` (a record's name
    is anyone's text: `../..` must not lead out of the folder), with a digest when changed."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "experiment"
    if safe == name:
        return safe
    return f"{safe[:80]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


#: what SQLite said when a statement met a table that is not as MLflow's migrations made it
#: (SQLAlchemy's "(sqlite3.OperationalError) table metrics has no column named step [SQL: ...")
_SQLITE_DAMAGE: Final = re.compile(r"\(sqlite3\.(?:OperationalError|DatabaseError)\) ([^\[]+)")

#: the tables every MLflow SQL store has (its migrations' own, and its first)
_MLFLOW_TABLES: Final = frozenset({"alembic_version", "experiments", "runs"})


def _refuse_foreign(database: Path, shown: str) -> None:
    """An existing file is the catalog only if it is an MLflow store: MLflow would make its
    ~65 tables in any SQLite file it is given (an application's database) and migrate it."""
    import sqlite3

    if not database.is_file():
        raise CatalogUnavailableError(
            f"the catalog at {shown} is not a file (a folder?)",
            hint="name an SQLite file: sqlite:///PATH/catalog.db",
        )
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as con:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    except sqlite3.DatabaseError as exc:
        raise CatalogUnavailableError(
            f"the catalog at {shown} is damaged or not an SQLite database ({exc})",
            hint="move it away and `repro catalog sync results/` rebuilds the catalog from "
            "the runs on disk",
        ) from None
    tables = {name for (name,) in rows}
    if not tables >= _MLFLOW_TABLES:
        raise CatalogUnavailableError(
            f"{database} is an SQLite database but not an MLflow store (it has "
            f"{len(tables)} table(s), none of MLflow's): never written into",
            hint="name another file for the catalog (sqlite:///.repro/catalog.db)",
        )


def _made_whole(database: Path, client: Callable[..., Any]) -> None:
    """Make a new SQLite store whole or not at all: its tables are made in a file beside it,
    under a lock, and renamed into place; an interrupted or concurrent first use leaves
    nothing half made (MLflow's migrations, cut short, leave a store it cannot open again)."""
    database.parent.mkdir(parents=True, exist_ok=True)
    with (database.parent / f".{database.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if database.exists():  # made by another command while this one waited
            return
        for cut in database.parent.glob(f".{database.name}.making-*"):
            cut.unlink(missing_ok=True)  # a try cut short before
        # a name of its own each time: MLflow keeps a store per URI open in the process
        making = database.parent / f".{database.name}.making-{os.getpid()}-{time.monotonic_ns()}"
        client(tracking_uri=f"sqlite:///{making}").search_experiments(max_results=1)
        making.replace(database)


def _named(name: str, verdict: str | None) -> str:
    """A run's name in the catalog: its own, and the verdict a report gave it, if any
    (`r1 · not reproduced`)."""
    return f"{name}{NAME_VERDICT}{verdict}" if verdict else name
