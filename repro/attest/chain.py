"""The statements of the chain, their envelopes, and checking them against the bytes on disk.

Links, in chain order: the spec (its file, lock files and path artifacts), a run (SLSA
provenance: every file of the run as subjects; the spec id, artifact and lock digests it ran
with as resolved dependencies; the environment as recorded), a report (its files; each side's
run.json digest). Verifying a report follows its runs, and a run its spec when the spec's own
attestation is found; every link is checked, the first that fails is named.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.atomic import atomic_write_text
from repro.digests import sha256_file
from repro.errors import SpecError
from repro.formats.nix.flake_files import credential_reason, flake_files
from repro.reports.model import Report
from repro.runs import layout
from repro.runs.store import load_run
from repro.spec.io import load_spec, spec_id
from repro.spec.paths import resolve_path
from repro.spec.references import references
from repro.spec.types import LockFile

if TYPE_CHECKING:
    from repro.runs.record import RunRecord
    from repro.spec.models import ExperimentSpec

ATTESTATION = "attestation.intoto.json"
SPEC_ATTESTATION_SUFFIX = ".intoto.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
SPEC_PREDICATE = "https://repro.dev/attestation/spec/v1"
RUN_PREDICATE = "https://slsa.dev/provenance/v1"
REPORT_PREDICATE = "https://repro.dev/attestation/report/v1"
BUILD_TYPE = "https://repro.dev/replay/v1"


def _subjects(root: Path, files: list[Path]) -> list[dict[str, Any]]:

    return [
        {"name": Path(os.path.relpath(f, root)).as_posix(), "digest": {"sha256": sha256_file(f)}}
        for f in sorted(set(files))
    ]


def _statement(
    subjects: list[dict[str, Any]], kind: str, predicate: dict[str, Any]
) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": kind,
        "predicate": predicate,
    }


# --- the statements -------------------------------------------------------------------------


def spec_files(spec_path: Path, spec: Any) -> list[Path]:
    """The spec file and what it names by path: lock files, path artifacts, a `path:` flake's
    files (those a package carries)."""

    base = spec_path.parent
    files = [spec_path]
    for ref in references(spec):
        if ref.kind in ("artifact", "lock"):
            files.append(resolve_path(ref.path, base))
        elif ref.kind == "flake" and resolve_path(ref.path, base).is_dir():
            files += flake_files(resolve_path(ref.path, base)).files
    return [f for f in files if f.is_file()]


def spec_statement(spec_path: Path, spec: ExperimentSpec) -> dict[str, Any]:

    return _statement(
        _subjects(spec_path.parent, spec_files(spec_path, spec)),
        SPEC_PREDICATE,
        {
            "name": spec.name,
            "spec_id": spec_id(spec),
            "artifacts": {n: a.sha256 for n, a in spec.artifacts.items()},
            "environment": _pins(spec),
        },
    )


#: the environment's lock files a statement pins by digest, and its image ids (docker)
_PINNED_LOCKS = ("python_lock", "flake_lock")
_PINNED_IDS = ("image_id", "digest")


def _pins(spec: ExperimentSpec | None) -> dict[str, Any]:
    """The environment's pins of a spec: its manager and every digest it holds (a record
    that kept no spec: no manager)."""
    if spec is None:
        return {"manager": None}
    env = spec.environment
    pins: dict[str, Any] = {"manager": env.manager}
    for key in _PINNED_LOCKS:
        lock = getattr(env, key, None)
        if isinstance(lock, LockFile):
            pins[key] = lock.sha256
    for key in _PINNED_IDS:
        value = getattr(env, key, None)
        if value:
            pins[key] = value
    return pins


def run_files(run: Path) -> list[Path]:
    """Every file of a run but its own attestation (one of that name deeper down is a file)
    and those that look like credentials (a `.env` left in the folder is no part of the run,
    and a package never carries it: what is attested is what travels)."""
    return [
        p
        for p in run.rglob("*")
        if p.is_file()
        and p != run / ATTESTATION
        and credential_reason(p.relative_to(run).as_posix()) is None
    ]


def run_statement(run: Path, record: RunRecord) -> dict[str, Any]:
    spec = record.replayed_spec()
    artifacts = spec.artifacts if spec is not None else {}
    return _statement(
        _subjects(run, run_files(run)),
        RUN_PREDICATE,
        {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "spec_name": record.spec_name,
                    "spec_id": record.spec_id,
                    "overrides": record.overrides,
                },
                "internalParameters": {"environment": record.environment},
                "resolvedDependencies": [
                    {"name": f"artifact:{n}", "digest": {"sha256": a.sha256}}
                    for n, a in sorted(artifacts.items())
                ]
                + [{"name": "environment", "annotations": _pins(spec)}],
            },
            "runDetails": {
                "builder": {"id": f"https://repro.dev/repro@{record.repro_version}"},
                "metadata": {
                    "invocationId": record.run_id,
                    "startedOn": record.started_utc,
                    "finishedOn": record.finished_utc,
                },
            },
        },
    )


REPORT_FILES = ("report.json", "report.md", "report.html")


def report_statement(folder: Path, report: Any) -> dict[str, Any]:

    inputs = []
    for role, side in (("original", report.original), *(("replay", r) for r in report.replays)):
        run_json = Path(side.path) / layout.RUN_FILE
        inputs.append(
            {
                "role": role,
                "path": side.path,
                "path_from_report": os.path.relpath(Path(side.path).absolute(), folder.absolute()),
                "run_id": side.run_id,
                "spec_id": side.spec_id,
                "run_json_sha256": sha256_file(run_json) if run_json.is_file() else None,
            }
        )
    return _statement(
        _subjects(folder, [folder / n for n in REPORT_FILES if (folder / n).is_file()]),
        REPORT_PREDICATE,
        {"verdict": report.verdict, "summary": report.summary, "inputs": inputs},
    )


# --- envelopes ------------------------------------------------------------------------------


def sign(statement: dict[str, Any], signer: Any, out: Path) -> None:
    """The statement in a DSSE envelope signed by `signer`, written to `out`."""
    from securesystemslib.dsse import Envelope

    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)
    atomic_write_text(out, json.dumps(envelope.to_dict(), indent=2) + "\n")


@dataclass
class Link:
    """One checked link of the chain: what is wrong with it, and what was verified of it."""

    kind: str
    where: str
    problems: list[str] = field(default_factory=list)
    #: what a link that holds was verified as (who signed it, what it covers)
    verified: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _open_envelope(
    path: Path, key: Any | None, link: Link, predicate: str
) -> dict[str, Any] | None:
    """The statement of an envelope whose signature `key` verifies (unchecked without a key:
    said as a problem)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    if not path.is_file():
        link.problems.append(f"no attestation ({path.name}): run `repro attest {link.where}`")
        return None
    shape = "an object of a payloadType and a payload (strings) and a list of signatures"
    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError):
        link.problems.append(f"{path}: not a DSSE envelope (not JSON)")
        return None
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("payload"), str)
        and isinstance(doc.get("payloadType"), str)
        and isinstance(doc.get("signatures"), list)
        and all(isinstance(s, dict) for s in doc["signatures"])
    ):
        link.problems.append(f"{path}: not a DSSE envelope (expected {shape})")
        return None
    try:
        envelope = Envelope.from_dict(doc)
    except (ValueError, KeyError, TypeError, AttributeError):
        link.problems.append(f"{path}: not a DSSE envelope (expected {shape})")
        return None
    if envelope.payload_type != PAYLOAD_TYPE:
        link.problems.append(f"{path}: payloadType {envelope.payload_type!r}, not in-toto's")
        return None
    if key is None:
        link.problems.append(f"{path}: the signature is not checked: give --key PUB")
    else:
        try:
            envelope.verify([key], 1)
        except VerificationError:
            link.problems.append(f"{path}: the signature does not verify with key {key.keyid[:16]}")
            return None
        link.verified.append(f"signed by key {key.keyid[:16]} ({path.name})")
    try:
        statement: dict[str, Any] = json.loads(envelope.payload)
    except ValueError:
        link.problems.append(f"{path}: the signed payload is not JSON")
        return None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        link.problems.append(f"{path}: not an in-toto statement")
        return None
    if statement.get("predicateType") != predicate or not isinstance(
        statement.get("predicate"), dict
    ):
        link.problems.append(
            f"{path}: a statement of {statement.get('predicateType')!r}, not of a {link.kind} "
            f"({predicate})"
        )
        return None
    return statement


def _ran_spec_id(statement: dict[str, Any]) -> str | None:
    """The spec id a run's provenance says it ran (None when the predicate lacks it)."""
    build = statement["predicate"].get("buildDefinition")
    params = build.get("externalParameters") if isinstance(build, dict) else None
    value = params.get("spec_id") if isinstance(params, dict) else None
    return value if isinstance(value, str) else None


def _check_subjects(
    root: Path, statement: dict[str, Any], link: Link, *, complete: list[Path] | None = None
) -> None:
    """Every subject's bytes on disk; with `complete`, no file more than the subjects."""
    named = set()
    for s in statement.get("subject", []):
        name = str(s.get("name", ""))
        named.add(name)
        want = (s.get("digest") or {}).get("sha256")
        path = root / name
        if not path.is_file():
            link.problems.append(f"{name}: missing (attested sha256 {str(want)[:16]}...)")
        elif sha256_file(path) != want:
            link.problems.append(
                f"{name}: sha256 {sha256_file(path)[:16]}... on disk, attested {str(want)[:16]}..."
            )
    if complete is not None:
        import os

        for f in complete:
            rel = Path(os.path.relpath(f, root)).as_posix()
            if rel not in named:
                link.problems.append(f"{rel}: not attested (added after the attestation)")


def verify_spec(spec_path: Path, key: Any | None) -> list[Link]:
    link = Link("spec", str(spec_path))
    envelope = spec_path.with_name(spec_path.name + SPEC_ATTESTATION_SUFFIX)
    statement = _open_envelope(envelope, key, link, SPEC_PREDICATE)
    if statement is not None:
        _check_subjects(spec_path.parent, statement, link)
        _bound_to(spec_path, statement, link)
    return [link]


def _bound_to(spec_path: Path, statement: dict[str, Any], link: Link) -> None:
    """The statement is of this spec: it names this file among its subjects, this spec's id,
    and every file the spec names (an envelope copied beside another spec does not verify)."""

    try:
        spec = load_spec(spec_path, check_id=False)
    except SpecError as exc:
        link.problems.append(exc.message)
        return
    names = {str(s.get("name")) for s in statement.get("subject", []) if isinstance(s, dict)}
    if spec_path.name not in names:
        link.problems.append(
            f"the attestation is not of {spec_path.name} (its subjects: "
            f"{', '.join(sorted(names))[:200]})"
        )
    if statement["predicate"].get("spec_id") != spec_id(spec):
        link.problems.append(
            f"the attestation is of spec {str(statement['predicate'].get('spec_id'))[:12]}, "
            f"{spec_path.name} is {spec_id(spec)[:12]}"
        )
    for f in spec_files(spec_path, spec):
        rel = Path(os.path.relpath(f, spec_path.parent)).as_posix()
        if rel not in names:
            link.problems.append(f"{rel}: named by the spec but not attested")


def verify_run(run: Path, key: Any | None, *, follow_spec: bool = True) -> list[Link]:
    """A run's link; with `follow_spec`, the spec it names too (found from here or beside the
    run's results folder): its file must be the spec the run's signed statement says it ran."""

    links: list[Link] = []
    link = Link("run", str(run))
    statement = _open_envelope(run / ATTESTATION, key, link, RUN_PREDICATE)
    if statement is not None:
        _check_subjects(run, statement, link, complete=run_files(run))
    if follow_spec and statement is not None:
        try:
            spec_path = _find_spec(Path(load_run(run).spec_path), run)
        except SpecError as exc:
            link.problems.append(exc.message)
            spec_path = None
        ran = _ran_spec_id(statement)
        if ran is None:
            link.problems.append("the run's statement does not say which spec it ran")
        if spec_path is not None:
            links += _spec_link(spec_path, key, ran)
        else:
            link.problems.append(
                "the spec the run names is not found from here: its link is not checked"
            )
    return [*links, link]


def _find_spec(recorded: Path, run: Path) -> Path | None:
    """The spec a run names: as recorded (from the working folder), else relative to the
    folder that holds `results/` (the usual project layout)."""
    if recorded.is_file():
        return recorded
    for parent in run.absolute().parents:
        candidate = parent / recorded
        if candidate.is_file():
            return candidate
    return None


def _spec_link(spec_path: Path, key: Any | None, ran: str | None) -> list[Link]:
    """The spec's own link (when it is attested) and whether it is the spec the run ran."""

    attested = spec_path.with_name(spec_path.name + SPEC_ATTESTATION_SUFFIX).is_file()
    links = (
        verify_spec(spec_path, key)
        if attested
        else [
            Link(
                "spec (not attested: its id and lock digests checked)",
                str(spec_path),
                verified=["not signed: its id and lock digests match the run's"],
            )
        ]
    )
    try:
        spec = load_spec(spec_path, check_id=False)
        now = spec_id(spec)
    except SpecError as exc:
        links[-1].problems.append(exc.message)
        return links
    for problem in _lock_digests(spec_path, spec):
        links[-1].problems.append(problem)
    if ran and now != ran:
        links[-1].problems.append(
            f"{spec_path.name}: the spec is {now[:12]} now; the run's signed statement says it "
            f"ran {ran[:12]}"
        )
    return links


def _lock_digests(spec_path: Path, spec: Any) -> list[str]:
    """Lock files on disk that are not the bytes the spec pins (the spec id covers the pins)."""

    out = []
    env = spec.environment
    for section in (env, env.spack):
        for key in ("python_lock", "flake_lock", "spack_yaml", "spack_lock"):
            lock = getattr(section, key, None) if section is not None else None
            if lock is None:
                continue
            path = resolve_path(lock.path, spec_path.parent)
            if not path.is_file():
                out.append(f"{lock.path}: missing (the spec pins sha256 {lock.sha256[:16]}...)")
            elif sha256_file(path) != lock.sha256:
                out.append(
                    f"{lock.path}: not the bytes the spec pins (sha256 {lock.sha256[:16]}...)"
                )
    return out


def _read_payload(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
        payload: dict[str, Any] = json.loads(base64.b64decode(doc["payload"]))
        return payload
    except (OSError, ValueError, KeyError, TypeError):
        return None


def verify_report(folder: Path, key: Any | None) -> list[Link]:
    link = Link("report", str(folder))
    statement = _open_envelope(folder / ATTESTATION, key, link, REPORT_PREDICATE)
    links: list[Link] = []
    if statement is not None:
        _check_subjects(
            folder,
            statement,
            link,
            complete=[p for p in folder.rglob("*") if p.is_file() and p != folder / ATTESTATION],
        )
        for side in statement.get("predicate", {}).get("inputs", []):
            relative = _as_typed(folder / str(side.get("path_from_report", "")))
            run = relative if side.get("path_from_report") else Path(str(side.get("path")))
            if not (run / "run.json").is_file():
                run = Path(str(side.get("path")))
            run_json = run / "run.json"
            if not run_json.is_file():
                link.problems.append(f"{side.get('role')} run {run}: not found")
                continue
            if not side.get("run_json_sha256"):
                link.problems.append(f"{side.get('role')} run {run}: no run.json digest attested")
            elif sha256_file(run_json) != side["run_json_sha256"]:
                link.problems.append(
                    f"{side.get('role')} run {run}: run.json changed since the report"
                )
            if (run / ATTESTATION).is_file():
                links += verify_run(run, key)
            else:
                links.append(Link("run", str(run), [f"no attestation: `repro attest {run}`"]))
    return [*links, link]


def _as_typed(path: Path) -> Path:
    """`reports/x/../../results/y` as a person would type it (`results/y`), where both name
    the same folder (a symlinked folder on the way keeps the path as it was)."""
    tidy = Path(os.path.normpath(path))
    try:
        same = tidy.resolve() == path.resolve()
    except OSError:
        same = False
    return tidy if same else path


def write_attestation(target: Path, signer: Any) -> Path:
    """Attest a spec file, a run folder or a report folder; the envelope's path."""

    if target.is_dir() and layout.record_file(target).is_file():
        out = target / ATTESTATION
        sign(run_statement(target, load_run(target)), signer, out)
        return out
    if target.is_dir() and (target / "report.json").is_file():
        try:
            report = Report.model_validate_json((target / "report.json").read_text())
        except ValueError as exc:
            raise SpecError(
                f"{target / 'report.json'}: not a repro report ({str(exc)[:200]})"
            ) from None
        out = target / ATTESTATION
        sign(report_statement(target, report), signer, out)
        return out
    if target.is_file() and target.suffix == ".json":
        out = target.with_name(target.name + SPEC_ATTESTATION_SUFFIX)
        sign(spec_statement(target, load_spec(target)), signer, out)
        return out
    raise SpecError(
        f"{target}: not a spec file, a run folder (run.json) or a report folder (report.json)",
        hint="attest SPEC.json, results/<name>/<run-id>/ or reports/<name>/",
    )


def verify_target(target: Path, key: Any | None) -> list[Link]:

    if target.is_dir() and layout.record_file(target).is_file():
        return verify_run(target, key)
    if target.is_dir() and (target / "report.json").is_file():
        return verify_report(target, key)
    if target.is_file() and target.suffix == ".json":
        return verify_spec(target, key)
    raise SpecError(
        f"{target}: not a spec file, a run folder or a report folder",
        hint="verify SPEC.json, results/<name>/<run-id>/, reports/<name>/ or a package",
    )


def covering_attestation(target: Path) -> Path | None:
    """The attestation that signs `target` (a spec, a run folder, a report folder), where one
    was written: a command that rewrites what it covers says so (`stale_attestation`)."""
    if target.is_file():
        beside = target.with_name(target.name + SPEC_ATTESTATION_SUFFIX)
        return beside if beside.is_file() else None
    inside = target / ATTESTATION
    return inside if inside.is_file() else None


def stale_attestation(target: Path) -> str | None:
    """What to say after rewriting `target` when an attestation signed it before: `repro
    verify` now fails on it until it is attested again."""
    found = covering_attestation(target)
    if found is None:
        return None
    return (
        f"{target} changed after {found} signed it: `repro verify` fails on it until it is "
        f"attested again (`repro attest {target} --key KEY`; attest last, after every command "
        "that writes it)"
    )
