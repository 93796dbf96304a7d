"""Use case: a published MLPerf result as a repro experiment (`repro import-mlperf`).

Per result: a spec that replays the result's LoadGen settings and seeds (from its logs) with the
model, data and backend of a base spec (the published model cannot be downloaded here; a user
with the official artifacts puts their url and sha256 in the base), and the result itself as
that spec's original, `results/<name>/original/`: its LoadGen logs copied byte for byte and a
run.json whose tests carry the effective settings, so `repro report --compare results/<name>/`
lists every setting the replay ran differently, and says "different hardware" where it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from repro import __version__
from repro.atomic import writing
from repro.errors import SpecError, UsageError
from repro.mlperf.tree import SEED_KEYS, find_results, read_mlperf_result
from repro.privacy import redact_text
from repro.runs import layout
from repro.runs.commit import commit_run
from repro.runs.record import RunRecord
from repro.runs.store import digest_files
from repro.spec.io import (
    format_validation_error,
    load_spec,
    rebase_paths,
    spec_id,
    with_id,
    write_spec,
)
from repro.spec.models import ExperimentSpec

#: the longest spec name a spec accepts
MAX_NAME = 64


@dataclass(frozen=True)
class Imported:
    """One imported result: where it came from and what was written."""

    source: Path
    name: str
    spec_path: Path
    original: Path
    scenarios: list[str]
    #: what the importer must know: the replay runs another model than the published one
    warnings: tuple[str, ...] = ()


def select(
    tree: Path,
    *,
    submitter: str | None = None,
    system: str | None = None,
    benchmark: str | None = None,
) -> list[Path]:
    """The published results of `tree` that match the filters (exact names)."""
    found = []
    for bench in find_results(tree):
        record = read_mlperf_result(bench, detail_logs=False)
        env = record.environment
        if submitter and env.get("submitter") != submitter:
            continue
        if system and env.get("system") != system:
            continue
        if benchmark and record.spec_name != benchmark:
            continue
        found.append(bench)
    return found


def import_result(
    source: Path,
    base_spec: Path,
    *,
    specs_dir: Path,
    results_dir: Path,
    scenarios: tuple[str, ...] = (),
) -> Imported:
    """Write the spec and the original of one published result."""
    record = read_mlperf_result(source)
    name = _name(record)
    performed: list[str] = [t.scenario for t in record.tests if t.mode == "performance"]
    wanted = [s for s in dict.fromkeys(performed) if not scenarios or s in scenarios]
    if not wanted:
        raise SpecError(
            f"{source}: no performance run of {', '.join(scenarios) or 'any scenario'}",
            hint="see `repro results TREE` for what the tree holds",
        )
    base = load_spec(base_spec)
    other_model = _other_model(base, record.spec_name)
    spec = _spec(base, record, name, wanted, source, rebase=(base_spec.parent, specs_dir))
    spec_path = specs_dir / f"{name}.json"
    made = not specs_dir.exists()
    specs_dir.mkdir(parents=True, exist_ok=True)  # its relative paths are resolved from there
    try:
        _require_valid(spec, spec_path, source, base.name)
    except SpecError:
        if made:
            specs_dir.rmdir()  # nothing written: not even the folder
        raise
    original = layout.original_of(results_dir / name)
    for existing in (original, spec_path):
        if existing.exists():
            raise UsageError(
                f"{existing} exists: {source} was imported before (or the name is taken)",
                hint=f"delete it (`rm -r {existing}`) to import again",
            )
    spec = write_spec(
        spec.model_copy(
            update={
                "original": spec.original.model_copy(update={"path": _rel(original, specs_dir)})
            }
            if spec.original is not None
            else {}
        ),
        spec_path,
    )
    notes = (other_model,) if other_model else ()
    try:
        _write_original(record, source, original, spec, wanted, spec_path, notes)
    except BaseException:
        spec_path.unlink(missing_ok=True)  # never a spec without its original
        raise
    return Imported(source, name, spec_path, original, wanted, notes)


def _family(benchmark: str) -> str:
    """A benchmark without its accuracy target (`llama2-70b-99.9` -> `llama2-70b`)."""
    return re.sub(r"-99(?:\.9)?$", "", benchmark.lower())


def _other_model(base: ExperimentSpec, benchmark: str) -> str | None:
    """What to say when the base stands in for another benchmark than the result's (its name
    and tags name the benchmark it replays): the replay runs the base's model, and its figures
    say nothing of the published ones."""
    names = {_family(n) for n in (base.name, *(base.tags or []))}
    if _family(benchmark) in names:
        return None
    model = base.artifacts[base.workload.model]
    return (
        f"the replay runs {base.name}'s model ({base.workload.model}, sha256 "
        f"{model.sha256[:12]}), not the published {benchmark}: its speed and accuracy say "
        f"nothing of the published figures (give a --base that names {benchmark} among its "
        "tags, with the benchmark's model)"
    )


def _require_valid(spec: ExperimentSpec, spec_path: Path, source: Path, base: str) -> None:
    """The imported spec is one `repro validate` accepts, or nothing is written: a base's
    claims that the result's scenarios do not run, settings a machine cannot plan (an 8-GPU
    result's query, unscaled), each named."""
    from repro.validate import check

    errors = [p for p in check(spec, spec_path) if p.severity == "error"]
    if errors:
        shown = "\n".join(f"  {p.where}: {p.message}" for p in errors[:8])
        raise SpecError(
            f"{source} imported onto {base}: the spec would not validate "
            f"({len(errors)} problem(s)), nothing written:\n{shown}",
            hint="import another scenario (--scenario), or lower the published settings in a "
            "copy of the base",
        )


def _name(record: RunRecord) -> str:
    env = record.environment
    raw = "-".join(
        str(v)
        for v in (
            "mlperf",
            record.spec_name,
            env.get("division"),
            env.get("submitter"),
            env.get("system"),
        )
        if v
    )
    name = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-.")
    if len(name) > MAX_NAME:  # a spec name's limit: keep the start, make the rest unique
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('-.')}-{digest}"
    return name


def _spec(
    base: ExperimentSpec,
    record: RunRecord,
    name: str,
    wanted: list[str],
    source: Path,
    *,
    rebase: tuple[Path, Path],
) -> ExperimentSpec:
    """The base spec with the published scenarios' settings and seeds; its relative paths
    (artifacts, lock files, flake) re-expressed from the new spec's folder."""
    data = base.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("id", None)
    rebase_paths(data, *rebase)
    workload = data["workload"]
    by_scenario = {s["scenario"]: s for s in workload.get("scenarios", [])}
    scenarios = []
    for scenario in wanted:
        settings = dict(by_scenario.get(scenario, {}).get("settings", {}))
        test = record.performance(scenario)[0]
        if test.settings.get("use_token_latencies"):
            # bounded by its token latencies: the base's sample-latency bound is not the run's
            settings.pop("server_target_latency_ns", None)
        settings.update(test.settings)
        scenarios.append({"scenario": scenario, "settings": settings})
    workload["scenarios"] = scenarios
    seeds = {k: v for k, v in record.performance(wanted[0])[0].metrics.items() if k in SEED_KEYS}
    if len(seeds) == len(SEED_KEYS):
        workload["seeds"] = {**workload.get("seeds", {}), **seeds}
    env, hardware = record.environment_facts(), record.facts().hardware
    data["name"] = name
    data["description"] = (
        f"LoadGen settings and seeds of the published MLPerf result {env.submitter}/"
        f"{env.system}/{record.spec_name} ({redact_text(str(source))}); model, data and "
        "backend from "
        f"{base.name}"
    )
    data["hardware"] = {
        k: v
        for k, v in {
            "cpu_model": hardware.cpu.model,
            "physical_cores": hardware.cpu.physical_cores,
            "sockets": hardware.cpu.sockets,
            "accelerators": hardware.accelerators,
        }.items()
        if v is not None
    }
    metrics = {
        scenario: {
            k: v
            for k, v in record.performance(scenario)[0].metrics.items()
            if isinstance(v, int | float | str)
            and not isinstance(v, bool)
            and k
            in (
                "validity",
                "samples_per_second",
                "tokens_per_second",
                "latency_p50_ns",
                "latency_p90_ns",
                "latency_p99_ns",
            )
        }
        for scenario in wanted
    }
    data["original"] = {"path": "original", "metrics": metrics}
    data.pop("claims", None)  # the base's claims are of the base's experiment, not this result
    try:
        return with_id(ExperimentSpec.model_validate(data))
    except ValidationError as exc:  # the published settings do not fit the spec's bounds
        raise SpecError(
            format_validation_error(f"{source} imported onto {base.name}", exc, data),
            hint="the published settings are outside what a spec accepts; import another "
            "scenario (--scenario) or edit the base",
        ) from None


def _write_original(
    record: RunRecord,
    source: Path,
    original: Path,
    spec: ExperimentSpec,
    wanted: list[str],
    spec_path: Path,
    notes: tuple[str, ...] = (),
) -> None:
    """results/<name>/original/: the published logs copied, and run.json describing them."""
    partial = original.with_name(f".{original.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    tests = []
    for test in record.tests:
        if test.scenario not in wanted:
            continue
        rel = layout.test_dir(test.scenario, test.mode, test.repeat)
        src = source / test.dir if (source / test.dir).is_dir() else source
        (partial / rel).mkdir(parents=True, exist_ok=True)
        for f in sorted(src.iterdir()):
            if f.is_file() and f.suffix in (".txt", ".json") and f.stat().st_size < 64 * 2**20:
                with writing(partial / rel / f.name):
                    shutil.copyfile(f, partial / rel / f.name)
        tests.append(test.model_copy(update={"dir": rel}))
    env = record.environment
    run = RunRecord(
        run_id=layout.ORIGINAL_RUN_ID,
        spec_name=spec.name,
        spec_id=spec_id(spec),
        spec_path=str(spec_path),
        status="complete",
        started_utc="",
        repro_version=__version__,
        environment={**env, "source": str(source)},
        fingerprint=record.fingerprint,
        spec=json.loads(spec.model_dump_json(by_alias=True, exclude_none=True)),
        tolerances=spec.tolerances,
        tests=tests,
        notes=[f"imported from the published result {source}", *notes, *record.notes],
    )
    run.files_sha256 = digest_files(partial)
    original.parent.mkdir(parents=True, exist_ok=True)
    commit_run(partial, run, final=original)


def _rel(target: Path, start: Path) -> str:
    """`target` as a path relative to the folder `start` (how a spec names its files)."""
    return os.path.relpath(target.resolve(), start.resolve())
