"""Use case: pin an experiment (artifacts, environment, hardware), run it once, record the original.

Input is a partial spec (a JSON document that may lack the artifacts' sha256, the environment
pins, the hardware and the original); `capture` fills all of them in, writes
`specs/<name>.json`, locks the environment under `lockfiles/<name>/` and, unless told not to,
runs the experiment into `results/<name>/original/` and records its headline metrics and
reference predictions in the spec.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.fetch import download
from repro.artifacts.recipes import get_recipe
from repro.backends.registry import spack_key_packages
from repro.capture_checks import (
    EnvironmentPlan,
    check_artifacts,
    check_part,
    check_spec,
    plan_environment,
)
from repro.digests import sha256_file
from repro.environments.base import CaptureContext
from repro.environments.pylock import LOCK_NAME, write_python_lock
from repro.errors import SpecError, UsageError
from repro.formats.spack.pins import keep_builtin_commit
from repro.formats.spack.pins import pins_from_files as spack_pins
from repro.machine.fingerprint import collect, hardware_from
from repro.outputs import written
from repro.replay.claim_evidence import with_evidence
from repro.replay.claim_rounds import CheckOptions, check_claims
from repro.replay.session import ReplaySession
from repro.replay.settings import ProgressFactory, Reporter
from repro.runs import layout
from repro.runs.accuracy import load_predictions
from repro.runs.commit import commit_run
from repro.runs.layout import component
from repro.runs.plan import ReplayPlan
from repro.runs.record import RunRecord, TestRecord
from repro.servers.registry import ENGINES
from repro.spec.io import dump_spec, parse_spec, write_spec
from repro.spec.models import ExperimentSpec, Hardware, Original
from repro.spec.paths import resolve_path
from repro.spec.spack_pins import MANIFEST_NAME as SPACK_MANIFEST
from repro.validate import check

#: the LoadGen seeds of MLPerf Inference v5.0's mlperf.conf, the default of a new capture
DEFAULT_SEEDS = {
    "qsl_rng_seed": 6023615788873153749,
    "sample_index_rng_seed": 15036839855038426416,
    "schedule_rng_seed": 9933818062894767841,
}
HEADLINE = (
    "validity",
    "samples_per_second",
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "early_stopping_p90_ns",
    "early_stopping_p99_ns",
)


@dataclass(frozen=True)
class Captured:
    """What a capture produced: the spec as written and, unless --no-run, the original."""

    spec_path: Path
    spec: ExperimentSpec
    run_dir: Path | None = None
    record: RunRecord | None = None


@dataclass(frozen=True)
class CaptureOptions:
    specs_dir: Path = Path("specs")
    lockfiles_dir: Path = Path("lockfiles")
    results_dir: Path = Path("results")
    #: None: keep the manager of the spec captured from (`--from`), else venv
    env_manager: str | None = None
    flake_dir: Path = Path("nix")
    #: the base image of --env-manager docker (None: repro.containers.image.DEFAULT_BASE)
    docker_base: str | None = None
    #: copy the artifacts into the image of --env-manager docker
    docker_bake: bool = False
    run: bool = True
    force: bool = False
    #: how the original runs (its repeats, LoadGen overrides); in this interpreter
    replay: ReplayPlan = field(default_factory=ReplayPlan)
    #: command-line flags changed the --from spec (errors then say so)
    flags_over_from: bool = False
    #: measure the spec's claims after the original (their evidence goes into the spec)
    claims: bool = True


def _rel(target: Path, start: Path) -> str:
    return os.path.relpath(target.resolve(), start.resolve())


def pin_artifacts(
    raw: dict[str, Any], *, base_dir: Path, cache: ArtifactCache, report: Reporter
) -> None:
    """Fill in a missing sha256 of each artifact from its bytes (recipe, path, or download);
    bytes produced here are kept in the cache, so that checking and running them later
    produces nothing twice."""
    arts = raw.get("artifacts")
    if not isinstance(arts, dict) or not arts:
        raise SpecError("$.artifacts: give at least a model and a dataset")
    for name, art in arts.items():
        if not isinstance(art, dict) or art.get("sha256"):
            continue
        where = f"$.artifacts.{name}"
        tmp = cache.root / "tmp" / f"capture-{name}"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            if "recipe" in art:
                recipe = get_recipe(art["recipe"], where=f"{where}.recipe")
                params = recipe.resolve(art.get("params") or {}, where=where)
                art["params"] = params
                art.setdefault("media_type", recipe.media_type)
                report(f"generating {name} with recipe {recipe.name}")
                recipe.generate(tmp, params)
                art["sha256"] = _keep_in_cache(tmp, cache)
            elif "path" in art:
                src = resolve_path(art["path"], base_dir)
                if not src.is_file():
                    raise SpecError(f"{where}.path: {art['path']} does not exist")
                art["sha256"] = sha256_file(src)
            elif "url" in art:
                report(f"downloading {name} to pin its sha256 (trust on first use)")
                download(art["url"], tmp)
                art["sha256"] = _keep_in_cache(tmp, cache)
            else:
                raise SpecError(f"{where}: give one of url, path or recipe")
        finally:
            tmp.unlink(missing_ok=True)


def _keep_in_cache(produced: Path, cache: ArtifactCache) -> str:
    """The sha256 of a file just produced; the file becomes the cache's entry of that hash
    (unless the cache has one already)."""
    sha256 = sha256_file(produced)
    if not cache.path_for(sha256).exists():
        cache.path_for(sha256).parent.mkdir(parents=True, exist_ok=True)
        cache.commit(produced, sha256)
    return sha256


def _server_packages(raw: dict[str, Any]) -> tuple[str, ...]:
    """A served experiment's server engine's packages: locked beside the client's, so that the
    server runs in the pinned environment too (an external endpoint's are not ours)."""
    engine = (raw.get("server") or {}).get("engine")
    return ENGINES[engine].packages if engine in ENGINES else ()


def pin_environment(
    raw: dict[str, Any],
    name: str,
    spec_dir: Path,
    opts: CaptureOptions,
    report: Reporter,
    plan: EnvironmentPlan,
    cache: ArtifactCache | None = None,
) -> None:
    """Lock the worker's Python packages and let the chosen manager pin the rest in the spec."""
    report(f"pinning the environment with {plan.manager_name}")
    report(
        f"locking the {plan.backend.name} worker's Python packages (pip-compile --generate-hashes)"
    )
    lock = write_python_lock(
        plan.backend, layout_lock_path(opts.lockfiles_dir, name), extra=_server_packages(raw)
    )
    ctx = CaptureContext(
        name=name,
        spec_dir=spec_dir,
        lockfiles_dir=opts.lockfiles_dir,
        flake_dir=opts.flake_dir,
        backend=plan.backend,
        python=f"{sys.version_info.major}.{sys.version_info.minor}",
        python_lock={"path": _rel(lock.path, spec_dir), "sha256": lock.sha256},
        hashes_complete=lock.hashes_complete,
        report=report,
        options=_manager_options(raw, opts, cache),
    )
    previous = (raw.get("environment") or {}).get("spack")
    raw["environment"] = plan.manager.capture(ctx)
    manifest = opts.lockfiles_dir / name / SPACK_MANIFEST
    if "spack" not in raw["environment"] and manifest.is_file():
        # a Spack environment for the same stack, usable with --env spack
        raw["environment"]["spack"] = spack_pins(manifest, spec_dir, spack_key_packages())
        keep_builtin_commit(raw["environment"]["spack"], previous)
        locked = "locked" if "spack_lock" in raw["environment"]["spack"] else "no spack.lock yet"
        report(f"pinned the Spack environment beside it: {manifest} ({locked})")


def _manager_options(
    raw: dict[str, Any], opts: CaptureOptions, cache: ArtifactCache | None
) -> dict[str, Any]:
    """What the managers take from the capture's options (docker: base image, baking)."""
    options: dict[str, Any] = {}
    if opts.docker_base:
        options["docker_base"] = opts.docker_base
    if opts.docker_bake and cache is not None:
        from repro.artifacts.fetch import materialize
        from repro.spec.types import Artifact

        options["docker_bake"] = {
            m.sha256: m.path
            for m in (
                materialize(
                    name, Artifact.model_validate(art), base_dir=opts.specs_dir, cache=cache
                )
                for name, art in (raw.get("artifacts") or {}).items()
            )
        }
    return options


def layout_lock_path(lockfiles_dir: Path, name: str) -> Path:
    """`lockfiles/<name>/requirements.lock`."""
    return lockfiles_dir / name / LOCK_NAME


#: an LLM's headline figures (LoadGen's, with use_token_latencies), beside HEADLINE's
TOKEN_METRICS = ("tokens_per_second", "ttft_p99_ns", "tpot_p99_ns")


def original_summary(record: RunRecord) -> dict[str, dict[str, Any]]:
    """Headline metrics per scenario (median over repeated runs) and the accuracy."""
    out: dict[str, dict[str, Any]] = {}
    for scenario in dict.fromkeys(t.scenario for t in record.tests):
        row: dict[str, Any] = {}
        perf = record.performance(scenario)
        for key in (*HEADLINE, *TOKEN_METRICS):
            values: list[Any] = [t.metrics[key] for t in perf if t.metrics.get(key) is not None]
            if not values:
                continue
            row[key] = (
                values[0]
                if isinstance(values[0], str)
                else statistics.median(float(v) for v in values)
            )
        if perf:
            row["runs"] = len(perf)
        acc = record.accuracy_test(scenario)
        scored = acc.scored() if acc is not None else None
        if scored is not None and scored.value is not None:
            row["accuracy"] = scored.value
            row["accuracy_metric"] = scored.metric
        out[scenario] = row
    return out


def reference_predictions(run_dir: Path, record: RunRecord) -> dict[str, Any] | None:
    """Top-1 per sample of the original's first accuracy run, in data-set order."""
    acc: TestRecord | None = next((t for t in record.tests if t.mode == "accuracy"), None)
    if acc is None or acc.status != "valid":
        return None
    scored = acc.scored()
    digests = scored.output_digests if scored is not None else None
    task = ((record.spec or {}).get("workload") or {}).get("task")
    if task == "generation" and digests:
        # a generation's reference: each prompt's generated tokens, by their sha256
        return {
            "outputs_sha256": list(digests),
            "sha256": scored.responses_sha256 if scored is not None else None,
        }
    pred_file = run_dir / acc.dir / layout.PREDICTIONS_FILE
    indices, top1 = load_predictions(pred_file)
    ordered = top1[np.argsort(indices)]
    return {
        "top1": [int(v) for v in ordered],
        "sha256": scored.predictions_sha256 if scored is not None else None,
    }


def _scored_against_itself(run_dir: Path, record: RunRecord, reference: list[str]) -> RunRecord:
    """A generation's original scored against the references it has just given (its accuracy
    tests ran before there were any): each accuracy test's share of prompts whose tokens are the
    reference's, so that a replay's agreement has the original's to be compared with."""
    tests = []
    for t in record.tests:
        acc = t.scored()
        digests = acc.output_digests if acc is not None else None
        if t.mode == "accuracy" and acc is not None and digests:
            correct = sum(1 for d, r in zip(digests, reference, strict=False) if d == r)
            scored = dict(t.accuracy or {})
            if acc.value is None:
                scored.update(value=correct / len(digests), correct=correct, total=len(digests))
                scored.pop("note", None)
            elif "agreement" in scored and acc.agreement is None:  # scored by rouge
                scored["agreement"] = correct / len(digests)
            t = t.model_copy(update={"accuracy": scored})
        tests.append(t)
    updated = record.model_copy(update={"tests": tests})
    commit_run(run_dir, updated)
    return updated


def _previous(spec_path: Path) -> dict[str, Any] | None:
    """The spec file about to be overwritten, as JSON (None when there is none or it is not)."""
    if not spec_path.is_file():
        return None
    try:
        data = json.loads(spec_path.read_text())
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, list) and len(value) > 16:
        out[prefix] = f"<{len(value)} items, sha256 {_digest(value)[:12]}>"
    else:
        out[prefix] = value


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _say_what_changed(
    previous: dict[str, Any] | None, spec: ExperimentSpec, report: Reporter
) -> None:
    """Every field the overwrite changed, so that a re-capture never rewrites a spec silently."""
    if previous is None:
        return
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    _flatten("$", previous, old)
    _flatten("$", json.loads(dump_spec(spec)), new)
    changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if not changed:
        report("the spec is unchanged")
        return
    report(f"the spec changed in {len(changed)} field(s):")
    for key in changed[:25]:
        report(f"  {key}: {old.get(key, '(absent)')!r} -> {new.get(key, '(absent)')!r}")
    if len(changed) > 25:
        report(f"  ... and {len(changed) - 25} more")


def capture(
    raw: dict[str, Any],
    *,
    source: str,
    cache: ArtifactCache,
    opts: CaptureOptions,
    report: Reporter,
    progress: ProgressFactory,
) -> Captured:
    """Pin and (unless opts.run is false) run the experiment, then write the spec once.

    Every input is checked before anything is locked or written (`repro.capture_checks`); a
    capture that fails at any step leaves no spec, no lock folder and no results folder of its
    own (over an earlier capture, with --force, that one is given back as it was)."""
    raw = dict(raw)
    raw.setdefault("schema", "repro.experiment/v1")
    raw.pop("id", None)
    kept_original, kept_hardware = raw.pop("original", None), raw.get("hardware")
    if kept_original is not None:  # checked now, not after minutes of locking
        check_part(Original, kept_original, source, "$.original")
        check_part(Hardware, kept_hardware or {}, source, "$.hardware")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{source}: $.name: required to capture (it names the spec file)")
    spec_path = opts.specs_dir / f"{component(name, what='$.name')}.json"
    original_dir = layout.original_of(layout.spec_results(opts.results_dir, name))
    if not opts.force:
        for path, what in ((spec_path, "the spec"), (original_dir, "the original")):
            if path.exists() and (opts.run or path == spec_path):
                raise UsageError(
                    f"{path} exists: capture would overwrite {what}",
                    hint="pass --force to overwrite it (capture then says what changed), or "
                    "--name to capture under another name",
                )
    base_dir = Path(source).parent if Path(source).is_file() else Path.cwd()
    _rebase_artifact_paths(raw, base_dir, opts.specs_dir)
    new_specs_dir = not opts.specs_dir.exists()
    # made first: the artifacts' paths are checked from it (`..` needs a folder to climb from)
    opts.specs_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _checked_capture(
            raw,
            name,
            spec_path,
            kept_original,
            kept_hardware,
            base_dir=base_dir,
            source=source,
            cache=cache,
            opts=opts,
            report=report,
            progress=progress,
        )
    except BaseException:
        if new_specs_dir:
            with contextlib.suppress(OSError):  # not empty: someone else wrote there meanwhile
                opts.specs_dir.rmdir()
        raise


def _checked_capture(
    raw: dict[str, Any],
    name: str,
    spec_path: Path,
    kept_original: Any,
    kept_hardware: Any,
    *,
    base_dir: Path,
    source: str,
    cache: ArtifactCache,
    opts: CaptureOptions,
    report: Reporter,
    progress: ProgressFactory,
) -> Captured:
    """Every input checked, then the pins, the original and the spec; on failure, what this
    capture wrote is gone and what an earlier one wrote is as it was."""
    results = layout.spec_results(opts.results_dir, name)
    label = f"{source} with the command line's flags" if opts.flags_over_from else source
    check_spec(raw, label, spec_path)
    plan = plan_environment(
        raw,
        name=name,
        env_manager=opts.env_manager,
        lockfiles_dir=opts.lockfiles_dir,
        flake_dir=opts.flake_dir,
        docker_base=opts.docker_base,
        docker_bake=opts.docker_bake,
    )
    original_dir = layout.original_of(results)
    previous = _previous(spec_path)
    new_results = not results.exists()
    # --force over an earlier capture: its spec and locks stay as they were until the new
    # capture has finished (an interruption or an error gives them back; a first capture's
    # are removed), and its original until the new one is whole
    try:
        with _kept_until_done([spec_path, opts.lockfiles_dir / name]):
            spec = _pinned_spec(
                raw,
                name,
                spec_path,
                plan,
                label=label,
                source=source,
                cache=cache,
                opts=opts,
                report=report,
            )
            if not opts.run:
                return _write_unrun(
                    spec,
                    spec_path,
                    previous,
                    kept_original,
                    kept_hardware,
                    base_dir=base_dir,
                    report=report,
                )
            return _run_original(
                spec,
                spec_path,
                original_dir,
                previous,
                cache=cache,
                opts=opts,
                report=report,
                progress=progress,
            )
    except BaseException:
        if new_results:  # only this capture wrote there
            shutil.rmtree(results, ignore_errors=True)
        raise


def _rebase_artifact_paths(raw: dict[str, Any], base_dir: Path, spec_dir: Path) -> None:
    """Paths in the partial spec are relative to its own folder; rewrite them for specs/."""
    for art in (raw.get("artifacts") or {}).values():
        if isinstance(art, dict) and isinstance(art.get("path"), str):
            art["path"] = _rel(resolve_path(art["path"], base_dir), spec_dir)


@contextlib.contextmanager
def _kept_until_done(paths: list[Path]) -> Iterator[None]:
    """Copies of `paths` (files or folders) put back when the block fails, and what the block
    made where there was nothing removed; the copies are dropped when it succeeds."""
    # the copies sit beside what they keep (one file system: putting them back is a rename)
    saved: list[tuple[Path, Path | None]] = []
    done = False  # the block succeeded, or what it changed was put back: the copies can go
    try:
        for path in paths:
            copy = path.with_name(f".{path.name}.kept-{os.getpid()}")
            if path.is_dir():
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(path, copy, symlinks=True)
            elif path.is_file():
                shutil.copy2(path, copy)
            else:
                saved.append((path, None))
                continue
            saved.append((path, copy))
        yield
        done = True
    except BaseException:
        for path, kept in saved:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            if kept is not None:
                kept.replace(path)
        done = True  # a second interruption before this leaves the copies on disk
        raise
    finally:
        for _, kept in saved if done else ():
            if kept is not None and kept.exists():
                if kept.is_dir():
                    shutil.rmtree(kept, ignore_errors=True)
                else:
                    kept.unlink(missing_ok=True)


def _pinned_spec(
    raw: dict[str, Any],
    name: str,
    spec_path: Path,
    plan: EnvironmentPlan,
    *,
    label: str,
    source: str,
    cache: ArtifactCache,
    opts: CaptureOptions,
    report: Reporter,
) -> ExperimentSpec:
    """The artifacts hashed and checked against the workload, then the environment locked and
    the hardware fingerprinted: the spec as it will be written."""
    spec_dir = opts.specs_dir
    pin_artifacts(raw, base_dir=spec_dir, cache=cache, report=report)
    check_artifacts(raw, source=label, spec_dir=spec_dir, cache=cache)
    pin_environment(raw, name, spec_dir, opts, report, plan, cache)
    raw["hardware"] = hardware_from(collect())
    spec = parse_spec(raw, source=source)
    errors = [p for p in check(spec, spec_path) if p.severity == "error"]
    if errors:
        lines = "\n".join(f"  {p.where}: {p.message}" for p in errors)
        raise SpecError(f"{source}: the captured spec is not runnable:\n{lines}")
    return spec


def _write_unrun(
    spec: ExperimentSpec,
    spec_path: Path,
    previous: dict[str, Any] | None,
    kept_original: Any,
    kept_hardware: Any,
    *,
    base_dir: Path,
    report: Reporter,
) -> Captured:
    """--no-run: the pinned spec, keeping the --from spec's original when it had one."""
    if kept_original is not None:
        # No new original was produced: the measured one (and where it ran) stays, its
        # folder named from the new spec's folder as the artifacts are
        kept_original = dict(kept_original)
        kept_original["path"] = _rel(
            resolve_path(kept_original["path"], base_dir), spec_path.parent
        )
        spec = spec.model_copy(
            update={
                "original": Original.model_validate(kept_original),
                "hardware": Hardware.model_validate(kept_hardware or {}),
            }
        )
        report("kept the spec's original results and hardware (--no-run measures nothing)")
    spec = write_spec(spec, spec_path)
    _say_what_changed(previous, spec, report)
    report(f"wrote {spec_path} (id {spec.id})")
    return Captured(spec_path, spec)


def _run_original(
    spec: ExperimentSpec,
    spec_path: Path,
    original_dir: Path,
    previous: dict[str, Any] | None,
    *,
    cache: ArtifactCache,
    opts: CaptureOptions,
    report: Reporter,
    progress: ProgressFactory,
) -> Captured:
    """Run the original beside the earlier one, then write the spec and swap the original in."""
    had_spec = previous is not None or spec_path.exists()
    # the new original is measured beside the old one, which it replaces once it is whole
    staged = original_dir.with_name(f"{layout.ORIGINAL_RUN_ID}.new")
    for leftover in (staged, layout.partial_of(staged)):  # a capture killed before the swap
        shutil.rmtree(leftover, ignore_errors=True)
    plan = opts.replay.but(
        env="native",
        results_dir=opts.results_dir,
        run_id=layout.ORIGINAL_RUN_ID,
        run_path=staged,
    )
    try:
        session = ReplaySession.open(
            spec,
            spec_path,
            plan,
            report=report,
            progress=progress,
            cache=cache,
            reason="capture runs the original in the interpreter whose packages were locked",
        )
        _, record = session.replayer(spec, plan).run()
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        report(
            "the new original did not finish and is discarded"
            + ("; the earlier capture is kept as it was" if had_spec else "; nothing was written")
        )
        raise
    original: dict[str, Any] = {
        "path": _rel(original_dir, spec_path.parent),
        "metrics": original_summary(record),
    }
    refs = reference_predictions(staged, record)
    if refs is not None:
        original["reference_predictions"] = refs
        if refs.get("outputs_sha256"):
            record = _scored_against_itself(staged, record, refs["outputs_sha256"])
            original["metrics"] = original_summary(record)
    measured = spec.model_copy(update={"original": Original.model_validate(original)})
    if opts.claims and measured.claims:
        try:
            measured = _measure_claims(measured, spec_path, session, plan, report)
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            report("the claims could not be measured: the new original is discarded")
            raise
    final = write_spec(measured, spec_path)
    _replace_dir(staged, original_dir)  # last: until here the earlier original stands
    written.moved(staged, original_dir)
    _say_what_changed(previous, final, report)
    report(f"wrote {spec_path} (id {final.id})")
    return Captured(spec_path, final, original_dir, record)


def _measure_claims(
    spec: ExperimentSpec,
    spec_path: Path,
    session: ReplaySession,
    plan: ReplayPlan,
    report: Reporter,
) -> ExperimentSpec:
    """Every claim measured on this machine, in the original's environment, its evidence in
    the spec (with the original's reference predictions: an agreement metric scores by them)."""
    outcomes = check_claims(
        spec,
        spec_path,
        factory=session.replayer,
        opts=CheckOptions(plan=ReplayPlan(env="native", results_dir=plan.results_dir)),
        report=report,
    )
    return with_evidence(spec, outcomes)


def _replace_dir(new: Path, old: Path) -> None:
    """`new` takes the place of `old`: old is renamed aside first, then removed, so a reader
    finds the one or the other, whole."""
    aside = old.with_name(f".{old.name}.replaced")
    shutil.rmtree(aside, ignore_errors=True)
    if old.exists():
        old.replace(aside)
    new.replace(old)
    shutil.rmtree(aside, ignore_errors=True)
