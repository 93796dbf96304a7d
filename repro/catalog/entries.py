"""What goes into the catalog: a run record, a report or a sweep becomes `Entry`s (pure, no MLflow).

Only fields repro already records, each taken by name (an allow-list): the spec's id, the
settings each test ran with, the backend and its options, the environment's manager and lock
digests, the machine's CPU/GPU model and the digest of its fingerprint; the LoadGen metrics
(throughput, latency percentiles, tokens/s), accuracy, energy, CPU time and the probes' speed
index. Never an environment variable, a path, a host name or a free-text reason (a reason can
hold a path: the verdict's one-line reason is a report's own words, redacted when written).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from repro.digests import sha256_file
from repro.jsonio import canonical_json
from repro.mlperf.tree import HEADLINE
from repro.runs import layout
from repro.runs.record import RunRecord
from repro.stats.speed_adjust import SPEED_KEYS

Status = Literal["FINISHED", "FAILED", "KILLED"]
#: MLflow's limits: a param's value, a tag's value (MLflow 3: 6000 and 8000 characters)
PARAM_MAX: Final = 6000
TAG_MAX: Final = 8000
#: a test metric that is a measurement (never a setting, a seed or a count LoadGen was given)
_MEASURED = re.compile(
    r"^(?:samples_per_second|scheduled_samples_per_second|queries_per_second"
    r"|queries_per_second_without_overhead|(?:inferred_)?tokens_per_second"
    r"|tokens_per_second_without_overhead|latency_(?:min|max|mean|p\d+(?:\.\d+)?)_ns"
    r"|early_stopping_p\d+(?:\.\d+)?_ns|(?:ttft|tpot)_(?:min|max|mean|p\d+(?:\.\d+)?)_ns)$"
)
#: the backend's recorded facts that are parameters of the run (its options come whole)
#: the energy figures of a test (NVML's counter)
_ENERGY: Final = ("joules", "average_watts", "joules_per_sample")
#: the probe figures logged: those that can serve as the speed index, and the memory copy's
_SPEED: Final = (*SPEED_KEYS, "memory_gbps")
_STATUS: Final[dict[str, Status]] = {"complete": "FINISHED", "interrupted": "KILLED"}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: a key MLflow accepts (letters, digits, `_ - . / :` and space)
_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-./: ]")


@dataclass
class Entry:
    """One MLflow run: what repro logs for a run, a comparison, a sweep or a sweep's point."""

    # repro's own id: a run id, "pair:<id>", "sweep:<id>", "sweep:<id>:point:<k>",
    # "claims:<generated_utc>"
    key: str
    experiment: str  # the spec's name
    name: str  # MLflow's run name
    kind: Literal["run", "pair", "sweep", "point", "claims"]
    start_ms: int | None = None
    end_ms: int | None = None
    status: Status = "FINISHED"
    params: dict[str, str] = field(default_factory=dict)
    metrics: list[tuple[str, float, int]] = field(default_factory=list)  # name, value, step
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[tuple[Path, str]] = field(default_factory=list)  # file, folder in the run
    parent: str | None = None  # the key of the entry it is nested under

    @property
    def digest(self) -> str:
        """What the entry says, as one digest: the catalog skips an entry it already holds."""
        body = {
            "params": self.params,
            "metrics": sorted(self.metrics),
            "tags": {k: v for k, v in self.tags.items() if k != "repro.entry_sha256"},
            "artifacts": sorted(
                (folder, p.name, sha256_file(p) if p.is_file() else None)
                for p, folder in self.artifacts
            ),
            "parent": self.parent,
            "status": self.status,
        }
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def key_name(text: str) -> str:
    """A param or metric name MLflow accepts."""
    return _KEY_BAD.sub("_", text)


def utc_ms(utc: str | None) -> int | None:
    """Milliseconds since the epoch of an ISO time (UTC when it names no zone), as MLflow
    keeps times; None when there is none."""
    if not utc:
        return None
    try:
        when = dt.datetime.fromisoformat(utc)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def _text(value: Any, limit: int = PARAM_MAX) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def machine_digest(fingerprint: dict[str, Any]) -> str | None:
    """The digest of a machine's hardware facts (the same machine, the same digest)."""
    hardware = fingerprint.get("hardware")
    if not isinstance(hardware, dict) or not hardware:
        return None
    return hashlib.sha256(canonical_json(hardware).encode()).hexdigest()[:16]


def run_key(record: RunRecord) -> str:
    """A run's identity in the catalog: its id and when it started. A run id alone is not one
    (every original is `original`, a sweep's point runs are named alike in every sweep); a
    record rewritten later (a profile added) keeps both."""
    return f"{record.run_id}@{record.started_utc}"


def run_entry(folder: Path, record: RunRecord, *, logs: bool = False) -> Entry:
    """A run: its settings, backend and environment as params, every test's measurements as
    metrics (a repeated test's repeats, or an interleaved run's rounds, as the metric's steps),
    its run.json and LoadGen summaries as artifacts (the detail logs too when `logs`)."""
    entry = Entry(
        key=run_key(record),
        experiment=record.spec_name,
        name=record.run_id,
        kind="run",
        start_ms=utc_ms(record.started_utc),
        end_ms=utc_ms(record.finished_utc),
        status=_STATUS.get(record.status, "FAILED"),
    )
    entry.params.update(_run_params(record))
    entry.metrics.extend(_run_metrics(record))
    entry.tags.update(_run_tags(folder, record))
    for name, value in _medians(record).items():
        entry.metrics.append((name, value, 0))
        entry.tags.setdefault("repro.headline_metric", name)
    entry.artifacts.append((layout.record_file(folder), ""))
    names = ("mlperf_log_summary.txt",) + (("mlperf_log_detail.txt",) if logs else ())
    for test in record.tests:
        for name in names:
            path = folder / test.dir / name
            if path.is_file():
                entry.artifacts.append((path, test.dir))
    if record.interleave and record.interleave.id:
        entry.parent = f"pair:{record.interleave.id}"
    return entry


def _run_params(record: RunRecord) -> dict[str, str]:
    params: dict[str, str] = {"spec_id": record.spec_id, "spec_name": record.spec_name}
    env = record.environment
    if isinstance(env.get("manager"), str):
        params["environment.manager"] = env["manager"]
    for k, v in sorted(env.items()):
        if k.endswith("_sha256") and isinstance(v, str) and _SHA256.match(v):
            params[f"environment.{key_name(k)}"] = v
    facts = record.facts()
    hardware = facts.hardware
    if hardware.cpu.model:
        params["machine.cpu_model"] = hardware.cpu.model
    if hardware.cpu.logical_cpus:
        params["machine.logical_cpus"] = str(hardware.cpu.logical_cpus)
    gpus = [g.name for g in hardware.gpus or [] if g.name]
    params["machine.gpus"] = ", ".join(gpus) if gpus else (hardware.accelerators or "none")
    digest = machine_digest(record.fingerprint)
    if digest:
        params["machine.fingerprint_sha256"] = digest
    seen: set[str] = set()
    for test in record.tests:
        if not seen:
            backend = test.backend_facts()
            for k, value in backend.identity_facts().items():
                params[f"backend.{k}"] = _text(value)
            for k, v in sorted(backend.options.items()):
                params[key_name(f"backend.options.{k}")] = _text(v)
        if test.scenario in seen or not test.settings:
            continue
        seen.add(test.scenario)
        for k, v in sorted(test.settings.items()):
            params[key_name(f"{test.scenario}.{k}")] = _text(v)
    return params


def _run_metrics(record: RunRecord) -> Iterator[tuple[str, float, int]]:
    for test in record.tests:
        step = test.repeat
        s = test.scenario
        if test.mode == "performance":
            for k, v in sorted(test.metrics.items()):
                value = _number(v)
                if value is not None and _MEASURED.match(k):
                    yield key_name(f"{s}.{k}"), value, step
            if test.cpu and test.cpu.samples_per_cpu_second is not None:
                yield f"{s}.samples_per_cpu_second", test.cpu.samples_per_cpu_second, step
            for k in _ENERGY:
                value = _number(getattr(test.energy, k, None))
                if value is not None:
                    yield f"{s}.energy.{k}", value, step
            for k in _SPEED:
                value = _number((test.probe_before or {}).get(k))
                if value is not None:
                    yield f"probe.{k}", value, step
        accuracy = test.accuracy or {}
        value = _number(accuracy.get("value"))
        if value is not None:
            yield key_name(f"{s}.accuracy.{accuracy.get('metric') or 'value'}"), value, step


def _medians(record: RunRecord) -> dict[str, float]:
    """Each scenario's MLPerf metric, the median over its performance tests (repeats, rounds),
    in the order the tests ran: `Offline.samples_per_second.median`."""
    values: dict[str, list[float]] = {}
    for test in record.tests:
        # records of before `mlperf_metric`: the scenario's MLPerf metric
        metric = test.metrics.get("mlperf_metric") or HEADLINE[test.scenario][0]
        value = _number(test.metrics.get(metric)) if isinstance(metric, str) else None
        if test.mode == "performance" and value is not None:
            values.setdefault(key_name(f"{test.scenario}.{metric}.median"), []).append(value)
    if not values:  # an accuracy-only run: its accuracy
        for test in record.tests:
            accuracy = test.accuracy or {}
            value = _number(accuracy.get("value"))
            if value is not None:
                name = f"{test.scenario}.accuracy.{accuracy.get('metric') or 'value'}"
                values.setdefault(key_name(name), []).append(value)
    return {k: statistics.median(v) for k, v in values.items()}


def _run_tags(folder: Path, record: RunRecord) -> dict[str, str]:
    role = "original" if folder.name == layout.ORIGINAL_RUN_ID else "replay"
    side = record.interleave.side if record.interleave else None
    if side in ("a", "b"):
        role = "replay" if side == "a" else "baseline"
    tags = {
        "repro.run_id": record.run_id,
        "repro.kind": "run",
        "repro.role": role,
        "repro.status": record.status,
        "repro.version": record.repro_version,
        "repro.spec_id": record.spec_id,
    }
    if record.record_sha256:
        tags["repro.record_sha256"] = record.record_sha256
    if record.interleave and record.interleave.id:
        tags["repro.pairing"] = record.interleave.id
    return tags


def pair_entry(records: Iterable[RunRecord]) -> Entry:
    """The parent of an interleaved comparison's two sides."""
    runs = sorted(records, key=lambda r: r.run_id)
    first = runs[0]
    pairing = str(first.interleave.id if first.interleave else None)
    entry = Entry(
        key=f"pair:{pairing}",
        experiment=first.spec_name,
        name=f"comparison {pairing}",
        kind="pair",
        start_ms=min((utc_ms(r.started_utc) or 0) for r in runs) or None,
        end_ms=max((utc_ms(r.finished_utc) or 0) for r in runs) or None,
        status="FINISHED" if all(r.status == "complete" for r in runs) else "FAILED",
    )
    entry.tags.update(
        {
            "repro.kind": "pair",
            "repro.pairing": pairing,
            "repro.runs": ", ".join(r.run_id for r in runs),
            "repro.spec_id": first.spec_id,
        }
    )
    for k in ("rule", "rounds", "max_rounds", "stopped"):
        value = getattr(first.stopping, k, None)
        if value is not None:
            entry.params[f"stopping.{k}"] = _text(value)
    placement = ((first.interleave.placement if first.interleave else None) or {}).get("mode")
    if placement:
        entry.params["placement"] = str(placement)
    return entry


@dataclass(frozen=True)
class Judgement:
    """What a report says of the runs it judged: tags on each, and the report as artifacts."""

    experiment: str
    original: str | None
    #: the repro runs it judged: run id and the path the report names
    judged: list[tuple[str, str | None]]
    #: sides that are not repro runs (a published MLPerf result): not in the catalog
    published: list[str]
    tags: dict[str, str]
    metrics: dict[str, float]
    artifacts: list[tuple[Path, str]]

    @property
    def digest(self) -> str:
        """What the judgement says, as one digest: a run it already tags is left alone."""
        body = {"tags": self.tags, "metrics": self.metrics}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def judgement(folder: Path, report: dict[str, Any]) -> Judgement:
    """The verdict of a report (report.json in `folder`), for each replay run it judged."""
    original = report.get("original") or {}
    verdict = str(report.get("verdict") or "")
    tags = {
        "repro.verdict": verdict,
        "repro.verdict_reason": _text(report.get("summary") or "", TAG_MAX),
        "repro.report_generated_utc": str(report.get("generated_utc") or ""),
    }
    if original.get("run_id"):
        tags["repro.original_run_id"] = str(original["run_id"])
    for scenario in report.get("scenarios") or []:
        if isinstance(scenario, dict) and scenario.get("scenario") and scenario.get("verdict"):
            tags[key_name(f"repro.verdict.{scenario['scenario']}")] = str(scenario["verdict"])
    metrics: dict[str, float] = {}
    row = headline(report)
    if row is not None:
        ci = row.get("ci") or [None, None]
        tags["repro.verdict_metric"] = f"{row['scenario']}.{row['metric']}"
        for name, value in (
            ("verdict.delta_rel", row.get("delta_rel")),
            ("verdict.ci_low", ci[0]),
            ("verdict.ci_high", ci[1]),
        ):
            number = _number(value)
            if number is not None:
                metrics[name] = number
    sides = [r for r in report.get("replays") or [] if isinstance(r, dict) and r.get("run_id")]
    judged = [
        (str(r["run_id"]), str(r["path"]) if r.get("path") else None)
        for r in sides
        if r.get("kind", "repro") == "repro"
    ]
    published = [str(r["run_id"]) for r in sides if r.get("kind", "repro") != "repro"]
    artifacts = [
        (folder / name, "report")
        for name in ("report.md", "report.html", "report.json")
        if (folder / name).is_file()
    ]
    return Judgement(
        experiment=str(report.get("spec_name") or ""),
        original=str(original["run_id"]) if original.get("run_id") else None,
        judged=judged,
        published=published,
        tags=tags,
        metrics=metrics,
        artifacts=artifacts,
    )


def headline(report: dict[str, Any]) -> dict[str, Any] | None:
    """The judged metric row that says the report's verdict (the first that does; else the
    first judged row with a change): its scenario, metric, change and interval."""
    rows = [
        {"scenario": scenario.get("scenario"), **row}
        for scenario in report.get("scenarios") or []
        for row in scenario.get("metrics") or []
        if row.get("judged") and row.get("delta_rel") is not None and row.get("unit")
    ]
    for row in rows:
        if row.get("verdict") == report.get("verdict"):
            return row
    return rows[0] if rows else None


def sweep_entries(folder: Path, state: dict[str, Any]) -> list[Entry]:
    """A sweep (sweep.json in `folder`) and its points, nested under it."""
    sweep_id = str(state.get("id") or folder.name)
    name = str(state.get("spec_name") or state.get("name") or "")
    parent = Entry(
        key=f"sweep:{sweep_id}",
        experiment=name,
        name=f"sweep {sweep_id}",
        kind="sweep",
        start_ms=utc_ms(state.get("started_utc")),
        end_ms=utc_ms(state.get("finished_utc")),
    )
    parent.tags.update({"repro.kind": "sweep", "repro.sweep_id": sweep_id})
    parent.params["spec_id"] = str(state.get("spec_id") or "")
    for param in state.get("params") or []:
        parent.params[key_name(f"grid.{param.get('path')}")] = _text(param.get("values"))
    for k in ("strategy", "seed", "repeat", "min_duration_ms", "max_rounds"):
        if state.get(k) is not None:
            parent.params[k] = _text(state[k])
    parent.params["objectives"] = _text(state.get("objectives") or [])
    for name_ in ("sweep.json", "sweep.md", "points.csv"):
        if (folder / name_).is_file():
            parent.artifacts.append((folder / name_, ""))
    out = [parent]
    for point in state.get("points") or []:
        index = point.get("index")
        child = Entry(
            key=f"sweep:{sweep_id}:point:{index}",
            experiment=name,
            name=f"point {index}",
            kind="point",
            parent=parent.key,
            status="FINISHED" if point.get("status") == "complete" else "FAILED",
        )
        child.tags.update(
            {
                "repro.kind": "point",
                "repro.sweep_id": sweep_id,
                "repro.point_status": str(point.get("status")),
                "repro.front": str(point.get("front") or ""),
                "repro.runs": ", ".join(point.get("runs") or []),
            }
        )
        for k, v in sorted((point.get("values") or {}).items()):
            child.params[key_name(k)] = _text(v)
        for k, v in sorted((point.get("measures") or {}).items()):
            value = _number(v)
            if value is not None:
                child.metrics.append((key_name(k), value, 0))
        for k, m in sorted((point.get("metrics") or {}).items()):
            value = _number((m or {}).get("mean"))
            if value is not None:
                child.metrics.append((key_name(k), value, 0))
        out.append(child)
    return out


def claims_entry(folder: Path, check: dict[str, Any]) -> Entry:
    """A claims check (claims.json in `folder`): each claim's quantity, interval and verdict,
    and whether it matches the original's figure."""
    when = str(check.get("generated_utc") or "")
    entry = Entry(
        key=f"claims:{when}",
        experiment=str(check.get("spec_name") or ""),
        name=f"claims check {when[:19]}",
        kind="claims",
        start_ms=utc_ms(when),
        end_ms=utc_ms(when),
    )
    entry.params["spec_id"] = str(check.get("spec_id") or "")
    entry.tags.update(
        {
            "repro.kind": "claims",
            "repro.verdict": str(check.get("verdict") or ""),
            "repro.verdict_reason": _text(check.get("summary") or "", TAG_MAX),
            "repro.version": str(check.get("repro_version") or ""),
        }
    )
    for claim in check.get("claims") or []:
        cid = key_name(str(claim.get("id") or "claim"))
        entry.tags[f"repro.claim.{cid}"] = str(claim.get("verdict") or "")
        entry.tags[f"repro.claim.{cid}.match"] = str(claim.get("match") or "")
        entry.params[f"claim.{cid}.bound"] = _text(claim.get("bound") or "")
        ci = claim.get("ci") or [None, None]
        for name, value in (
            ("value", claim.get("value")),
            ("ci_low", ci[0]),
            ("ci_high", ci[1]),
            ("rounds", claim.get("rounds")),
        ):
            number = _number(value)
            if number is not None:
                entry.metrics.append((f"claim.{cid}.{name}", number, 0))
    entry.artifacts += [
        (folder / name, "claims")
        for name in ("claims.md", "claims.json")
        if (folder / name).is_file()
    ]
    return entry
