"""The catalog's store: entries into an MLflow tracking store, and the runs of a spec back.

One MLflow experiment per spec name; one MLflow run per entry, found again by its key (the tag
`repro.key`), so logging twice updates, never duplicates, and an entry the store already holds
as it is (the tag `repro.entry_sha256`) is skipped. MLflow's client comes from the
`repro[mlflow]` extra (mlflow-skinny, and SQLAlchemy for the embedded SQLite store); it is
imported when a store is opened, never when repro starts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from repro.catalog.entries import TAG_MAX, Entry, Judgement
from repro.catalog.where import Tracking
from repro.errors import ReproError

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

Outcome = Literal["new", "updated", "unchanged"]
KEY_TAG: Final = "repro.key"
DIGEST_TAG: Final = "repro.entry_sha256"
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


class CatalogUnavailable(ReproError):
    """The store cannot be reached or written, or MLflow's client is not installed."""

    exit_code = 3


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

    def __init__(self, tracking: Tracking) -> None:
        self.tracking = tracking
        for k, v in _HTTP_ENV.items():
            os.environ.setdefault(k, v)
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise CatalogUnavailable(
                f"the catalog needs MLflow's client, which is not installed ({exc.name})",
                hint=INSTALL_HINT,
            ) from None
        # MLflow's own INFO lines (creating the SQLite tables) are not repro's output
        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)
        # urllib3's "Retrying ..." of a server that is down: the catalog says it in its words
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        if tracking.artifacts is not None:
            tracking.artifacts.mkdir(parents=True, exist_ok=True)
        try:
            self.client: MlflowClient = MlflowClient(tracking_uri=tracking.uri)
        except Exception as exc:  # MLflow raises many kinds for a store it cannot open
            raise self._unavailable(exc) from None
        self._experiments: dict[str, str] = {}

    def _unavailable(self, exc: BaseException) -> CatalogUnavailable:
        text = " ".join(str(exc).split())
        return CatalogUnavailable(
            f"the catalog at {self.tracking.shown} ({self.tracking.source}) cannot be written: "
            f"{type(exc).__name__}: {text[:300]}",
            hint="results are on disk; `repro catalog sync results/` logs them when it is back",
        )

    def experiment(self, name: str, *, create: bool = True) -> str | None:
        """The id of the experiment of a spec name, created when asked."""
        if name in self._experiments:
            return self._experiments[name]
        try:
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                eid: str | None = found.experiment_id
            elif create:
                location = (
                    self.tracking.artifacts.as_uri() + "/" + name
                    if self.tracking.artifacts is not None
                    else None
                )
                eid = self.client.create_experiment(name, artifact_location=location)
            else:
                eid = None
        except Exception as exc:
            raise self._unavailable(exc) from None
        if eid is not None:
            self._experiments[name] = eid
        return eid

    def find(self, experiment: str, key: str) -> Any | None:
        """The MLflow run of an entry's key, if the store holds one."""
        eid = self.experiment(experiment, create=False)
        if eid is None:
            return None
        quoted = key.replace("\\", "\\\\").replace("'", "\\'")
        try:
            runs = self.client.search_runs([eid], f"tags.`{KEY_TAG}` = '{quoted}'", max_results=2)
        except Exception as exc:
            raise self._unavailable(exc) from None
        return runs[0] if runs else None

    def put(self, entry: Entry) -> tuple[Outcome, list[str]]:
        """Log an entry (its parent must be logged first); what happened, and what could not
        change (MLflow keeps a param's first value)."""
        try:
            return self._put(entry)
        except CatalogUnavailable:
            raise
        except Exception as exc:
            raise self._unavailable(exc) from None

    def _put(self, entry: Entry) -> tuple[Outcome, list[str]]:
        from mlflow.entities import Metric, Param, RunTag

        digest = entry.digest
        eid = self.experiment(entry.experiment)
        assert eid is not None
        run = self.find(entry.experiment, entry.key)
        if run is not None and run.data.tags.get(DIGEST_TAG) == digest:
            return "unchanged", []
        tags = {**entry.tags, KEY_TAG: entry.key, DIGEST_TAG: digest, "mlflow.runName": entry.name}
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
            self.client.log_artifact(run_id, str(path), folder or None)
        self.client.set_terminated(run_id, entry.status, end_time=entry.end_ms)
        return outcome, notes

    def judge(self, judgement: Judgement) -> list[str]:
        """Tag the runs a report judged with its verdict, and attach the report; the run ids
        it could not find (not logged yet)."""
        missing: list[str] = []
        try:
            for run_id in judgement.judged:
                run = self.find(judgement.experiment, run_id)
                if run is None:
                    missing.append(run_id)
                    continue
                for key, value in judgement.tags.items():
                    self.client.set_tag(run.info.run_id, key, value[:TAG_MAX])
                for key, number in judgement.metrics.items():
                    self.client.log_metric(run.info.run_id, key, number, step=0)
                for path, folder in judgement.artifacts:
                    self.client.log_artifact(run.info.run_id, str(path), folder)
        except Exception as exc:
            raise self._unavailable(exc) from None
        return missing

    def runs(self, experiment: str) -> list[CatalogRun]:
        """Every run of a spec's experiment, oldest first."""
        eid = self.experiment(experiment, create=False)
        if eid is None:
            return []
        out: list[CatalogRun] = []
        try:
            token = None
            while True:
                page = self.client.search_runs(
                    [eid], max_results=1000, order_by=["attributes.start_time ASC"],
                    page_token=token,
                )  # fmt: skip
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
