"""Logging folders into the catalog: after a command (what it wrote), or `repro catalog sync`
(every run, report, sweep and claims check under some folders). The same entries either way,
so a replay logged when it ran and synced later is one MLflow run.

Parents before children: a sweep, then its points, then the runs of each point; an interleaved
comparison, then its two sides; every run before a report that judges it (a judged run the
catalog lacks is logged from the report's own path to it first).
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from repro.catalog.entries import (
    Entry,
    claims_entry,
    judgement,
    pair_entry,
    run_entry,
    run_key,
    sweep_entries,
)
from repro.catalog.store import INSTALL_HINT, Catalog, Outcome
from repro.catalog.where import resolve
from repro.errors import CatalogUnavailableError, ReproError
from repro.jsonio import read_json
from repro.outputs import Written
from repro.reports.model import ClaimsCheck, Report
from repro.runs import layout
from repro.runs.record import RunRecord

SWEEP_FILE = "sweep.json"
REPORT_FILE = "report.json"
REPORT_SCHEMA = "repro.report/v2"
SWEEP_SCHEMA = "repro.sweep/v1"
CLAIMS_FILE = "claims.json"
CLAIMS_SCHEMA = "repro.claim_rounds/v1"


@dataclass
class Tally:
    """What a sync did: entries logged for the first time, changed, already there; folders
    it could not log, and why."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0
    judged: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, outcome: Outcome) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    @property
    def nothing_logged(self) -> bool:
        """Every folder found was skipped: nothing went in, nothing was there already."""
        return bool(self.skipped) and not (
            self.new or self.updated or self.unchanged or self.judged
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "judged": self.judged,
            "skipped": [{"path": str(p), "why": w} for p, w in self.skipped],
            "notes": self.notes,
        }


def find(roots: Iterable[Path]) -> Written:
    """Every run, report and sweep folder under `roots` (a root may be one itself)."""
    found = Written()
    for root in roots:
        for top, dirs, files in os.walk(root):
            here = Path(top)
            # not .repro/ (the catalog's own copies), .venv/, .git/
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            if layout.RUN_FILE in files:
                found.note("runs", here)
                dirs.clear()  # a run's folders are its tests
                continue
            if REPORT_FILE in files:
                found.note("reports", here)
            if SWEEP_FILE in files:
                found.note("sweeps", here)
            if CLAIMS_FILE in files:
                found.note("claims", here)
            dirs.sort()
    return found


def log_written(catalog: Catalog, written: Written, *, logs: bool = False) -> Tally:
    """Log the folders of `written` into `catalog`; a folder it cannot read is skipped with
    its reason, never an error of the whole. Raises CatalogUnavailableError when the store fails."""
    tally = Tally()
    parents: dict[Path, str] = {}  # a sweep point's run folder -> the point's key
    for folder in written.sweeps:
        state = _read(folder / SWEEP_FILE, SWEEP_SCHEMA, tally)
        if state is None:
            continue
        try:
            entries = sweep_entries(folder, state)
        except (TypeError, AttributeError, ValueError) as exc:  # sweep.json has no model
            tally.skipped.append((folder, f"{SWEEP_FILE}: not as repro writes it ({exc})"))
            continue
        for entry in entries:
            _put(catalog, entry, tally)
        for point, entry in zip(state.get("points") or [], entries[1:], strict=False):
            for run in point.get("runs") or []:
                parents[(folder / run).resolve()] = entry.key
    runs: list[tuple[Path, RunRecord]] = []
    for folder in written.runs:
        record = _load(folder, tally)
        if record is not None:
            runs.append((folder, record))
    _log_runs(catalog, runs, parents, tally, logs=logs)
    for folder in written.reports:
        report = _typed(Report, _read(folder / REPORT_FILE, REPORT_SCHEMA, tally), folder, tally)
        if report is not None:
            _judge(catalog, folder, report, tally, logs=logs)
    for folder in written.claims:
        check = _typed(
            ClaimsCheck, _read(folder / CLAIMS_FILE, CLAIMS_SCHEMA, tally), folder, tally
        )
        if check is not None:
            _put(catalog, claims_entry(folder, check), tally)
    return tally


def _typed(
    model: type[BaseModel], data: dict[str, Any] | None, folder: Path, tally: Tally
) -> dict[str, Any] | None:
    """A report or claims check as repro writes it (its model), else skipped with the field."""
    if data is None:
        return None
    try:
        return model.model_validate(data).model_dump(mode="json", by_alias=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "$." + ".".join(str(p) for p in first["loc"])
        tally.skipped.append((folder, f"not as repro writes it: {where}: {first['msg']}"))
        return None


def _log_runs(
    catalog: Catalog,
    runs: list[tuple[Path, RunRecord]],
    parents: dict[Path, str],
    tally: Tally,
    *,
    logs: bool,
) -> None:
    pairs: dict[str, list[RunRecord]] = {}
    for _, record in runs:
        pairing = record.interleave.id if record.interleave else None
        if pairing:
            pairs.setdefault(str(pairing), []).append(record)
    for records in pairs.values():
        _put(catalog, pair_entry(records), tally)
    seen: dict[str, Path] = {}
    for folder, record in runs:
        entry = run_entry(folder, record, logs=logs)
        if entry.key in seen:  # a copy of a run: the catalog keeps the first folder's
            tally.skipped.append(
                (
                    folder,
                    f"the same run ({record.run_id}, started {record.started_utc}) as "
                    f"{seen[entry.key]}: a copy; logged from there",
                )
            )
            continue
        seen[entry.key] = folder
        entry.parent = parents.get(folder.resolve(), entry.parent)
        _put(catalog, entry, tally)


def _judge(
    catalog: Catalog, folder: Path, report: dict[str, Any], tally: Tally, *, logs: bool
) -> None:
    verdict = judgement(folder, report)
    for side in verdict.published:
        tally.notes.append(f"{folder}: {side} is a published result, not a run of the catalog")
    if not verdict.experiment or not verdict.judged:
        tally.skipped.append((folder, "the report judged no repro run"))
        return
    # the sides as the report names them (paths as it was given them), logged first when the
    # catalog lacks them: the original too, so a spec's history shows what it was judged against
    sides = [report.get("original") or {}, *(report.get("replays") or [])]
    records: dict[str, RunRecord] = {}
    for side in sides:
        path = Path(str(side.get("path"))) if isinstance(side, dict) and side.get("path") else None
        if side.get("kind", "repro") != "repro" or path is None or not path.is_dir():
            continue
        record = _load(path, tally)
        if record is None:
            continue
        records[record.run_id] = record
        if catalog.find(verdict.experiment, run_key(record)) is None:
            _log_runs(catalog, [(path, record)], {}, tally, logs=logs)
    for run_id, _ in verdict.judged:
        record = records.get(run_id)
        run = (
            catalog.find(verdict.experiment, run_key(record))
            if record is not None
            else catalog.find_run(verdict.experiment, run_id)
        )
        if run is None:
            tally.skipped.append(
                (folder, f"its run {run_id} is neither in the catalog nor on disk")
            )
            continue
        outcome, why = catalog.judge(verdict, run)
        if outcome == "judged":
            tally.judged += 1
        elif why:
            tally.notes.append(f"{folder}: {run_id}: {why}")


def _put(catalog: Catalog, entry: Entry, tally: Tally) -> None:
    outcome, notes = catalog.put(entry)
    tally.count(outcome)
    tally.notes += [f"{entry.key}: {n}" for n in notes]


def _load(folder: Path, tally: Tally) -> RunRecord | None:
    from repro.runs.store import load_run

    if not folder.is_dir():
        tally.skipped.append((folder, "no such folder"))
        return None
    try:
        return load_run(folder)
    except ReproError as exc:
        tally.skipped.append((folder, exc.message))
        return None


def _read(path: Path, schema: str, tally: Tally) -> dict[str, Any] | None:
    try:
        data = read_json(path)
    except ReproError as exc:
        tally.skipped.append((path.parent, exc.message))
        return None
    if not isinstance(data, dict) or data.get("schema") != schema:
        tally.skipped.append((path.parent, f"{path.name}: not a {schema} file"))
        return None
    return data


def summary(tally: Tally) -> str:
    """One line: what was logged."""
    parts = [f"{tally.new} new", f"{tally.updated} updated", f"{tally.unchanged} unchanged"]
    if tally.judged:
        parts.append(f"{tally.judged} verdict(s)")
    if tally.skipped:
        parts.append(f"{len(tally.skipped)} skipped")
    return ", ".join(parts)


def after_command(
    track: str | None, written: Written, *, warn: Callable[[str], None] | None = None
) -> None:
    """The catalog step of a command, after its results are on disk: log what it wrote when
    the catalog is on. Never raises and never changes the command's exit code: a store that
    cannot be reached is a warning that says what was not logged and how to log it later."""
    say = warn or (lambda line: print(line, file=sys.stderr))
    if not written:
        return
    try:
        _within_deadline(lambda: _after_command(track, written, say), written, say)
    except KeyboardInterrupt:
        say(
            "warning: catalog: interrupted while logging; the results are on disk: "
            f"`repro catalog sync {' '.join(sorted(_roots(written)))}` logs the rest"
        )
    except Exception as exc:  # a bug of the catalog step must not cost the command its result
        say(f"warning: catalog: nothing logged: {type(exc).__name__}: {exc}")


#: the catalog step's whole budget, seconds: MLflow's timeout is per read, and a tracker that
#: sends a byte every few seconds never times out; $REPRO_CATALOG_DEADLINE_S changes it
CATALOG_DEADLINE_S = 60.0


def _within_deadline(
    step: Callable[[], None], written: Written, say: Callable[[str], None]
) -> None:
    """Run the catalog step in a thread of its own and stop waiting for it at the deadline (a
    daemon thread: the command ends, and the step with it)."""
    import threading

    raw = os.environ.get("REPRO_CATALOG_DEADLINE_S", "")
    try:
        deadline = float(raw) if raw else CATALOG_DEADLINE_S
    except ValueError:
        deadline = CATALOG_DEADLINE_S
    if not math.isfinite(deadline) or deadline <= 0:
        deadline = CATALOG_DEADLINE_S
    failed: list[BaseException] = []

    def run() -> None:
        try:
            step()
        except BaseException as exc:  # said below, in this thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="repro-catalog", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        say(
            f"warning: catalog: the tracker did not finish within {deadline:g} s: not waited "
            f"for any longer; the results are on disk: `repro catalog sync "
            f"{' '.join(sorted(_roots(written)))}` logs them when it answers"
        )
        return
    if failed:
        raise failed[0]


def _after_command(track: str | None, written: Written, say: Callable[[str], None]) -> None:
    try:
        tracking = resolve(track, Path.cwd())
    except ReproError as exc:
        say(f"warning: catalog: {exc.message}; nothing logged")
        return
    if tracking is None:
        return
    what = _what(written)
    try:
        store = Catalog(tracking)
        tally = log_written(store, written)
    except CatalogUnavailableError as exc:
        say(f"warning: catalog: {what} not logged: {exc.message}")
        sync = f"repro catalog sync {' '.join(sorted(_roots(written)))}"
        if exc.hint == INSTALL_HINT:
            say(f"hint: {exc.hint}; the results are on disk: `{sync}` logs them then")
        else:
            say(f"hint: the results are on disk; `{sync}` logs them when the catalog is back")
        return
    say(f"catalog: {summary(tally)} in {tracking.shown}")
    for path, why in tally.skipped:
        say(f"  not logged: {path}: {why}")
    for name, experiment in sorted(store.touched.items()):
        if page := tracking.page(experiment):
            say(f"  {name}: {page}")


def _what(written: Written) -> str:
    kinds = (
        ("run", written.runs),
        ("report", written.reports),
        ("claims check", written.claims),
        ("sweep", written.sweeps),
    )
    return " and ".join(f"{len(items)} {kind}(s)" for kind, items in kinds if items)


def _roots(written: Written) -> set[str]:
    """The top folders (results/, reports/) of what was written, relative where possible."""
    out = set()
    for folder in [*written.runs, *written.reports, *written.sweeps, *written.claims]:
        try:
            rel = folder.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            out.add(shlex.quote(str(folder)))
            continue
        out.add(shlex.quote(f"{rel.parts[0]}/") if rel.parts else ".")
    return out
