"""Entries into MLflow's real SQLite store: once each, updated in place, nested, judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.catalog.entries import Entry, Judgement
from repro.catalog.store import Catalog
from repro.catalog.where import Tracking, embedded
from repro.errors import CatalogUnavailableError


def _entry(key: str, **changes: object) -> Entry:
    entry = Entry(key=key, experiment="exp", name=key, kind="run", start_ms=1_000)
    entry.params.update({"spec_id": "a" * 64})
    entry.metrics.extend([("Offline.samples_per_second", 100.0, 1), ("Offline.x", 1.0, 2)])
    entry.tags.update({"repro.run_id": key, "repro.kind": "run"})
    for k, v in changes.items():
        setattr(entry, k, v)
    return entry


def test_logging_twice_updates_never_duplicates(project: Path) -> None:
    catalog = Catalog(embedded(project))
    assert catalog.put(_entry("r1")) == ("new", [])
    assert catalog.put(_entry("r1")) == ("unchanged", [])
    changed = _entry("r1")
    changed.tags["repro.status"] = "complete"
    changed.params["spec_id"] = "b" * 64
    outcome, notes = catalog.put(changed)
    assert outcome == "updated"
    assert notes
    assert "spec_id" in notes[0]
    assert "first value" in notes[0]
    (run,) = catalog.runs("exp")
    assert run.key == "r1"
    assert run.tags["repro.status"] == "complete"
    assert run.params["spec_id"] == "a" * 64  # MLflow keeps a param's first value
    history = catalog.client.get_metric_history(run.run_id, "Offline.samples_per_second")
    assert [(m.step, m.value) for m in history] == [(1, 100.0)]


def test_a_child_is_nested_under_its_parent(project: Path) -> None:
    catalog = Catalog(embedded(project))
    catalog.put(Entry(key="pair:p", experiment="exp", name="comparison p", kind="pair"))
    catalog.put(_entry("side-a", parent="pair:p"))
    runs = {r.key: r for r in catalog.runs("exp")}
    assert runs["side-a"].tags["mlflow.parentRunId"] == runs["pair:p"].run_id


def _judgement(project: Path, when: str, **tags: str) -> Judgement:
    (project / "report.md").write_text(f"# report of {when}\n")
    return Judgement(
        experiment="exp",
        original="original",
        judged=[("r1", None)],
        published=[],
        tags={"repro.report_generated_utc": when, **tags},
        metrics={"verdict.delta_rel": 0.01},
        artifacts=[(project / "report.md", "report")],
    )


def test_a_judgement_tags_its_run_once_and_a_newer_one_wins(project: Path) -> None:
    catalog = Catalog(embedded(project))
    catalog.put(_entry("r1"))
    first = _judgement(
        project,
        "2026-12-06T05:00:00+00:00",
        **{"repro.verdict": "reproduced", "repro.verdict.Server": "reproduced"},
    )
    run = catalog.find_run("exp", "r1")
    assert catalog.judge(first, run) == ("judged", None)
    assert catalog.judge(first, catalog.find_run("exp", "r1")) == ("unchanged", None)
    newer = _judgement(project, "2026-12-06T06:00:00+00:00", **{"repro.verdict": "not reproduced"})
    assert catalog.judge(newer, catalog.find_run("exp", "r1"))[0] == "judged"
    outcome, why = catalog.judge(first, catalog.find_run("exp", "r1"))
    assert outcome == "older"
    assert why is not None
    assert "2026-12-06T06:00:00" in why
    (held,) = catalog.runs("exp")
    assert held.tags["repro.verdict"] == "not reproduced"
    assert "repro.verdict.Server" not in held.tags  # the newer report did not judge Server
    assert held.metrics["verdict.delta_rel"] == 0.01
    files = catalog.client.list_artifacts(held.run_id, "report")
    assert [f.path for f in files] == ["report/report.md"]


def test_a_run_whose_logging_broke_off_is_logged_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(embedded(project))
    (project / "run.json").write_text("{}")
    entry = _entry("r1", artifacts=[(project / "run.json", "")])

    def broken(*args: object, **kwargs: object) -> None:
        raise ConnectionError("the server went away")

    monkeypatch.setattr(catalog.client, "log_artifact", broken)
    with pytest.raises(CatalogUnavailableError, match="the server went away"):
        catalog.put(entry)
    monkeypatch.undo()
    assert catalog.put(entry)[0] == "updated"  # not "unchanged": its digest was never written
    assert catalog.put(entry)[0] == "unchanged"


def test_a_store_it_cannot_reach_is_an_error_that_says_results_are_safe(
    mlflow_installed: None,
) -> None:
    catalog = Catalog(Tracking(uri="http://127.0.0.1:9", source="--track"))
    with pytest.raises(CatalogUnavailableError) as err:
        catalog.put(_entry("r1"))
    assert "http://127.0.0.1:9 (--track) cannot be written" in err.value.message
    assert err.value.hint
    assert "repro catalog sync" in err.value.hint


def test_a_first_use_cut_short_leaves_no_half_made_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow's migrations, interrupted, leave a store it cannot open again: the store is made
    beside its place and renamed in whole."""
    import mlflow.tracking

    tracking = embedded(project)
    database = project / ".repro" / "catalog.db"
    real = mlflow.tracking.MlflowClient

    class Cut(real):  # type: ignore[misc,valid-type]
        def search_experiments(self, *args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(mlflow.tracking, "MlflowClient", Cut)
    with pytest.raises(KeyboardInterrupt):
        Catalog(tracking)
    assert not database.exists()
    monkeypatch.undo()
    assert Catalog(tracking).put(_entry("r1"))[0] == "new"
    assert database.is_file()


def test_a_spec_name_never_leads_the_artifacts_out_of_their_folder(project: Path) -> None:
    catalog = Catalog(embedded(project))
    (project / "run.json").write_text("{}")
    entry = _entry("r1", experiment="../../escaped", artifacts=[(project / "run.json", "")])
    assert catalog.put(entry)[0] == "new"
    assert not (project.parent / "escaped").exists()
    stored = [p.name for p in (project / ".repro" / "catalog-artifacts").rglob("run.json")]
    assert stored == ["run.json"]


def test_an_error_never_shows_the_uris_password_or_token() -> None:
    tracking = Tracking(uri="https://bob:s3cret@host:5000/?token=tok_abc", source="--track")
    said = tracking.scrub("Max retries for https://bob:s3cret@host:5000/?token=tok_abc/api")
    assert "s3cret" not in said
    assert "tok_abc" not in said
