"""Finding and loading runs: repro run directories and published MLPerf results, each read once."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from repro.digests import sha256_file
from repro.errors import InternalError, SpecError
from repro.jsonio import regular_file
from repro.runs import layout
from repro.runs.loadgen_logs import read_logs
from repro.runs.record import (
    DAMAGED_HINT,
    RunRecord,
    inferred_format,
    newer_format,
    record_digest,
)
from repro.spec.io import format_validation_error, spec_id
from repro.spec.models import ExperimentSpec
from repro.spec.types import FOLDER_NAME_PATTERN

#: a repro run, a published MLPerf result (LoadGen's logs or MLCommons endpoints'), or another
#: harness's served run (AIPerf, GuideLLM, `vllm bench serve`: `repro.formats.served`)
SideKind = Literal["repro", "mlperf", "tool"]


@dataclass(frozen=True)
class LoadedRun:
    """A run record with the folder it was read from and what kind of result it is."""

    path: Path
    kind: SideKind
    record: RunRecord
    #: a side's requests one by one, by (scenario, repeat), where its files kept them and the
    #: record does not (another harness's per-request export, read with its summary)
    requests: Mapping[tuple[str, int], Any] = field(default_factory=dict)

    def test_path(self, test_dir: str, name: str) -> Path:
        """A file of one of the run's tests."""
        return self.path / test_dir / name


_cache: dict[tuple[Path, int, int], RunRecord] = {}
#: larger than any run record (a dispatched run of thousands of tests is a few MB)
MAX_RECORD_BYTES = 256 << 20


def load_run(run: Path) -> RunRecord:
    """Read a run directory's run.json (once per file version); a broken one is bad input."""
    path = layout.record_file(run)
    if not run.exists():
        raise SpecError(f"{run}: no such directory")
    try:
        st = path.stat()
    except FileNotFoundError:
        raise SpecError(
            f"{run}: not a repro run directory (no {layout.RUN_FILE})",
            hint="pass results/<name>/<run-id>/ or results/<name>/",
        ) from None
    key = (path.resolve(), st.st_mtime_ns, st.st_size)
    if key not in _cache:
        # a regular file of a record's size: a FIFO or a device in its place is never read
        regular_file(path, "a run record (run.json)", max_bytes=MAX_RECORD_BYTES)
        try:
            raw = json.loads(path.read_text(), object_pairs_hook=_unique)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as exc:
            raise SpecError(f"{path}: not a valid run record: {exc}", hint=DAMAGED_HINT) from None
        later = newer_format(raw)
        if later is not None:
            raise SpecError(
                f"{path}: $.format: {later}",
                hint="read it with a repro at least as new as the one that wrote it",
            )
        _check_digest(path, raw)
        if isinstance(raw, dict) and "format" not in raw:  # written before records had one
            raw = raw | {"format": inferred_format(raw)}
        try:
            record = RunRecord.model_validate(raw)
        except ValidationError as exc:
            raise SpecError(
                format_validation_error(str(path), exc, raw, what="run record"), hint=DAMAGED_HINT
            ) from None
        _check_record(path, record)
        _check_views(path, record, sealed=isinstance(raw, dict) and "record_sha256" in raw)
        _cache[key] = record
    return _cache[key]


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys appear once (repro never writes a key twice: a second one is an
    edit, and which of the two counts would be a guess)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _check_digest(path: Path, raw: Any) -> None:
    """A record that carries its digest is the record repro wrote, or it was edited."""
    if not isinstance(raw, dict) or raw.get("record_sha256") is None:
        return  # written before records carried one: the checks below still hold
    if raw["record_sha256"] != record_digest(raw):
        raise SpecError(
            f"{path}: $.record_sha256: the record is not the one repro wrote (its digest does "
            "not match its contents): it was edited",
            hint=DAMAGED_HINT,
        )


def _check_spec(path: Path, record: RunRecord) -> None:
    """The spec a record embeds is a spec, and the one its `spec_id` names."""

    if record.spec is None:
        return
    try:
        spec = ExperimentSpec.model_validate(record.spec)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(
                str(path), exc, record.spec, root="$.spec", what="embedded spec"
            ),
            hint=DAMAGED_HINT,
        ) from None
    if spec_id(spec) != record.spec_id:
        raise SpecError(
            f"{path}: $.spec: the embedded spec's id is {spec_id(spec)[:12]}, $.spec_id says "
            f"{record.spec_id[:12]}: the record was edited",
            hint=DAMAGED_HINT,
        )
    if spec.name != record.spec_name:
        raise SpecError(
            f"{path}: $.spec_name is {record.spec_name!r}, the embedded spec's name "
            f"{spec.name!r}: the record was edited",
            hint=DAMAGED_HINT,
        )


def _check_settings(where: str, settings: Mapping[str, Any]) -> None:
    """LoadGen's TestSettings are numbers (a flag is a boolean): anything else was edited."""
    flags = {"server_coalesce_queries", "use_token_latencies"}
    for key, value in settings.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (isinstance(value, bool) if key in flags else number):
            kind = "a boolean" if key in flags else "a number"
            raise SpecError(
                f"{where}: settings.{key} is {value!r}, not {kind} (LoadGen's TestSettings)",
                hint=DAMAGED_HINT,
            )


def _check_record(path: Path, record: RunRecord) -> None:
    """What a run repro wrote always holds: its embedded spec is the one it names; a test's
    settings are LoadGen's numbers; a finished performance test states LoadGen's validity,
    VALID or INVALID; an accuracy is a fraction. A record that does not is damaged."""
    _check_spec(path, record)
    if not re.fullmatch(FOLDER_NAME_PATTERN, record.spec_name):
        raise SpecError(
            f"{path}: $.spec_name is {record.spec_name!r}: not a spec's name (a name of one "
            "folder: letters, digits, '.', '_', '+' and '-')",
            hint=DAMAGED_HINT,
        )
    folder = path.parent.name
    # a dispatched run's part k is kept in parts/k under the id <run>-part<k>
    part = re.fullmatch(r"\.?(\d+)(?:\.partial)?", folder)
    a_part = (
        part is not None
        and path.parent.parent.name == "parts"
        and record.run_id.endswith(f"-part{part.group(1)}")
    )
    if folder not in (record.run_id, f".{record.run_id}.partial") and not a_part:
        raise SpecError(
            f"{path}: $.run_id is {record.run_id!r}, not its folder's name {folder!r}: a run "
            "is kept in a folder of its id (an edited record, or a renamed folder)",
            hint="rename the folder back to the run id, or copy the run with its folder",
        )
    for i, t in enumerate(record.tests):
        where = f"{path}: $.tests[{i}] ({t.scenario} {t.mode})"
        _check_settings(where, t.settings)
        for key, value in t.metrics.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise SpecError(
                    f"{where}: metrics.{key} is {value!r}: not a figure LoadGen writes",
                    hint=DAMAGED_HINT,
                )
        validity = t.metrics.get("validity")
        finished = t.mode == "performance" and t.status in ("valid", "invalid")
        if finished and validity not in ("VALID", "INVALID"):
            raise SpecError(
                f"{where}: metrics.validity is {validity!r}: a finished performance test "
                "states LoadGen's VALID or INVALID",
                hint=DAMAGED_HINT,
            )
        value = (t.accuracy or {}).get("value")
        fraction = (t.accuracy or {}).get("unit", "fraction") == "fraction"  # not a F1 or FID
        if (
            fraction
            and value is not None
            and not (
                isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
            )
        ):
            raise SpecError(
                f"{where}: accuracy.value is {value!r}, not a fraction from 0 to 1",
                hint=DAMAGED_HINT,
            )


def _check_views(path: Path, record: RunRecord, *, sealed: bool) -> None:
    """Every typed view of the record reads. One that does not, in a record whose digest
    matches its contents (repro wrote it as it is), is repro's bug: a view that refuses what a
    plug-in records (a TVM target recorded as an object), never the user's damaged file."""
    try:
        record.check_views()
    except SpecError as exc:
        if not sealed:
            raise
        raise InternalError(
            f"{path}: repro cannot read a record it wrote: {exc.message}",
            hint="this is a bug in repro, not damage to the record (its digest matches its "
            "contents, so it is as repro wrote it): keep the run, rerun with --debug for the "
            "traceback and report it",
        ) from exc


def list_runs(spec_results: Path) -> list[Path]:
    """Finished run directories of one spec, oldest first (run ids sort by time)."""
    if not spec_results.is_dir():
        return []
    return sorted(
        p
        for p in spec_results.iterdir()
        if p.is_dir() and not layout.is_partial(p) and layout.record_file(p).is_file()
    )


def latest_finished(spec_results: Path, *, spec_id: str, exclude: Path) -> Path | None:
    """The run of spec `spec_id` that finished last (complete, or judged INVALID by LoadGen)
    with tests (not a profile alone), by the finish time it recorded (never by its folder's
    name), besides `exclude`."""
    best: tuple[dt.datetime, Path] | None = None
    for p in list_runs(spec_results):
        if p.resolve() == exclude.resolve():
            continue
        try:
            record = load_run(p)
        except SpecError:
            continue  # a damaged run is never the latest finished one (named when given)
        if record.interleave:
            continue  # one side of an interleaved pair (--against): judged with its pair only
        if record.status not in ("complete", "invalid") or record.spec_id != spec_id:
            continue
        if not record.tests:
            continue  # a run that holds only a layer profile is not a replay
        when = _parse_time(record.finished_utc)
        if when is not None and (best is None or when > best[0]):
            best = (when, p)
    return best[1] if best else None


def _parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def digest_files(run: Path) -> dict[str, str]:
    """sha256 of every file of a run directory but its record, by relative path."""

    record = layout.record_file(run)
    return {
        str(p.relative_to(run)): sha256_file(p)
        for p in sorted(run.rglob("*"))
        if p.is_file() and p != record
    }


def check_files(run: LoadedRun) -> list[str]:
    """Files of a run that are missing or differ from the digests its record holds."""
    problems = []
    for rel, want in sorted(run.record.files_sha256.items()):
        path = run.path / rel
        if not path.is_file():
            problems.append(f"{path}: missing (the run recorded it)")
            continue

        got = sha256_file(path)
        if got != want:
            problems.append(
                f"{path}: altered since the run (sha256 {got[:12]}, recorded {want[:12]})"
            )
    return problems


#: metrics a report judges, checked against LoadGen's own logs
_CHECKED = ("validity", "samples_per_second", "latency_p50_ns", "latency_p90_ns", "latency_p99_ns")


def check_metrics(run: LoadedRun) -> list[str]:
    """Performance metrics in run.json that LoadGen's logs beside them do not say.

    The report judges the record's numbers; the logs are what LoadGen wrote. An edited record
    (or logs replaced by another run's) shows here.
    """

    problems = []
    for t in run.record.tests:
        folder = run.path / t.dir
        if t.mode != "performance" or t.status not in ("valid", "invalid"):
            continue
        if not (folder / layout.SUMMARY).is_file():
            continue  # a missing log the run recorded is check_files' finding
        logged = read_logs(folder)
        for key in _CHECKED:
            want, got = t.metrics.get(key), logged.get(key)
            if want is None or got is None:
                continue
            same = (
                want == got
                if isinstance(want, str) or isinstance(got, str)
                else (abs(float(want) - float(got)) <= 1e-9 * max(abs(float(got)), 1.0))
            )
            if not same:
                problems.append(
                    f"{layout.record_file(run.path)}: {t.scenario} {t.dir}: {key} is {want!r} "
                    f"but LoadGen's log says {got!r}"
                )
    return problems
