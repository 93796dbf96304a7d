"""Semantic checks of a spec beyond its schema: references, lock files, LoadGen's own rules,
and the workload against its artifacts' contents (the model's input and output names, the data
set's arrays and sample counts from its .npz headers)."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from repro.artifacts.cache import ArtifactCache
from repro.artifacts.lm_recipes import LmConfig, prompt_problems, read_lm_config
from repro.artifacts.recipes import RECIPES
from repro.backends.base import io_name_problems
from repro.backends.registry import BACKENDS, get_backend
from repro.digests import sha256_file
from repro.environments.pylock import unhashed_requirements
from repro.environments.registry import get_manager
from repro.errors import SpecError
from repro.formats.spack.lockfile import read_spack_lock
from repro.formats.spack.manifest import check_consistency, read_manifest
from repro.harness.sizing import MAX_PLANNED_SAMPLES
from repro.npz import npz_shapes, read_npz
from repro.runs import rouge
from repro.spec.claims import SIDES, Claim, Side
from repro.spec.io import load_spec
from repro.spec.models import ExperimentSpec, LoadGenSettings, LockFile, ScenarioName, Workload
from repro.spec.paths import resolve_path
from repro.spec.spack_pins import SpackPins
from repro.spec.variants import VariantError, claim_where, variant_specs

#: TestSettings fields that belong to one scenario only
SCENARIO_FIELDS: dict[ScenarioName, tuple[str, ...]] = {
    "SingleStream": (
        "single_stream_expected_latency_ns",
        "single_stream_target_latency_percentile",
    ),
    "MultiStream": (
        "multi_stream_expected_latency_ns",
        "multi_stream_samples_per_query",
        "multi_stream_target_latency_percentile",
    ),
    "Server": (
        "server_target_qps",
        "server_target_latency_ns",
        "server_target_latency_percentile",
        "server_coalesce_queries",
        "server_max_async_queries",
    ),
    "Offline": ("offline_expected_qps",),
}
#: fields without which LoadGen's run would be meaningless for the scenario
REQUIRED_FIELDS: dict[ScenarioName, tuple[str, ...]] = {
    "SingleStream": ("single_stream_expected_latency_ns",),
    "MultiStream": ("multi_stream_expected_latency_ns",),
    "Server": ("server_target_qps", "server_target_latency_ns"),
    "Offline": ("offline_expected_qps",),
}


@dataclass(frozen=True)
class Problem:
    """One finding of `repro validate`: where in the spec, what, and how bad."""

    where: str
    message: str
    severity: Literal["error", "warning"] = "error"


def _check_lock(lock: LockFile, where: str, base: Path) -> list[Problem]:
    path = resolve_path(lock.path, base)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        return [Problem(f"{where}.path", f"lock file {lock.path} {what} (looked at {path})")]
    got = sha256_file(path)
    if got != lock.sha256:
        return [
            Problem(
                f"{where}.sha256",
                f"lock file {lock.path} has sha256 {got}, the spec pins {lock.sha256}; "
                "re-capture the environment or restore the lock file",
            )
        ]
    return []


def _check_hashes(path: Path, shown: str) -> list[Problem]:
    """A lock the spec says is fully hashed must be one `pip --require-hashes` installs."""
    try:
        bad = unhashed_requirements(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem("$.environment.python_lock.path", f"{shown}: cannot be read: {exc}")]
    if not bad:
        return []
    return [
        Problem(
            "$.environment.python_lock",
            f"{shown}: {len(bad)} requirement(s) without a --hash or editable ({bad[0]!r}"
            f"{', ...' if len(bad) > 1 else ''}): the replay installs with --require-hashes, "
            "which refuses them; re-capture the spec (pip-compile --generate-hashes), or set "
            "$.environment.hashes_complete to false",
        )
    ]


def _check_spack(pins: SpackPins, base: Path) -> list[Problem]:
    """The pinned spack.yaml has Spack's structure; the pinned spack.lock was concretized from
    it (its roots are the manifest's specs)."""

    where = "$.environment.spack"
    try:
        manifest = read_manifest(resolve_path(pins.spack_yaml.path, base))
        if pins.spack_lock is None:
            return [
                Problem(
                    f"{where}.spack_lock",
                    f"no spack.lock pinned: {pins.spack_yaml.path} was never concretized; "
                    f"`spack -e {Path(pins.spack_yaml.path).parent} concretize` where Spack is, "
                    "then `repro spack pin`",
                    "warning",
                )
            ]
        lock = read_spack_lock(resolve_path(pins.spack_lock.path, base))
    except SpecError as exc:
        return [Problem(where, exc.message)]
    result = check_consistency(manifest, [r.spec for r in lock.roots])
    problems = []
    if result.checked and not result.consistent:
        problems.append(
            Problem(
                f"{where}.spack_lock",
                f"{pins.spack_lock.path}: its roots are not the specs of {pins.spack_yaml.path} "
                f"(only in the manifest: {list(result.only_in_manifest)}; only in the lock: "
                f"{list(result.only_in_lock)}); concretize again and `repro spack pin`",
            )
        )
    pinned = {r.spec: r.hash for r in pins.roots}
    if pinned and pinned != {r.spec: r.hash for r in lock.roots}:
        problems.append(
            Problem(f"{where}.roots", "differ from the pinned lock's roots; `repro spack pin`")
        )
    return problems


def planned_samples(name: ScenarioName, s: LoadGenSettings) -> float:
    """About how many samples LoadGen generates for a performance run with these settings.

    As LoadGen's GenerateQueries does: at least min_query_count queries, and enough for twice
    the minimum duration at the expected rate (Server: once); Offline issues one query of at
    least 1.1 x duration x rate samples. 0 where a required rate is missing.
    """
    seconds = s.min_duration_ms / 1000
    if name == "Offline":
        rate = s.offline_expected_qps
        return max(s.min_query_count, 1.1 * seconds * rate) if rate else 0
    if name == "Server":
        rate = s.server_target_qps
        return max(s.min_query_count, seconds * rate) if rate else 0
    if name == "SingleStream":
        latency, per_query = s.single_stream_expected_latency_ns, 1
    else:
        latency = s.multi_stream_expected_latency_ns
        per_query = s.multi_stream_samples_per_query or 8  # LoadGen's default
    if not latency:
        return 0
    return max(s.min_query_count, 2 * seconds * 1e9 / latency) * per_query


def _check_settings(name: ScenarioName, s: LoadGenSettings, where: str) -> list[Problem]:
    problems = []
    foreign = [
        f
        for other, fields in SCENARIO_FIELDS.items()
        if other != name
        for f in fields
        if getattr(s, f) is not None
    ]
    problems += [
        Problem(f"{where}.settings.{f}", f"does not apply to the {name} scenario; remove it")
        for f in foreign
    ]
    problems += [
        Problem(f"{where}.settings.{f}", f"required for the {name} scenario")
        for f in REQUIRED_FIELDS[name]
        # with token latencies LoadGen bounds TTFT and TPOT, not the query latency (MLPerf's
        # mlperf.conf sets an LLM's Server target_latency to 0)
        if getattr(s, f) is None and not (s.use_token_latencies and f == "server_target_latency_ns")
    ]
    if s.min_query_count == 0 and s.min_duration_ms == 0:
        problems.append(
            Problem(f"{where}.settings", "min_duration_ms and min_query_count are both 0")
        )
    planned = planned_samples(name, s)
    if planned > MAX_PLANNED_SAMPLES:
        problems.append(
            Problem(
                f"{where}.settings",
                f"LoadGen would generate about {planned:.3g} samples before the run and hold "
                f"them in memory; at most {MAX_PLANNED_SAMPLES:,} are accepted: lower "
                "min_duration_ms, min_query_count or the expected rate (qps or latency)",
            )
        )
    return problems


def check(spec: ExperimentSpec, spec_path: Path) -> list[Problem]:
    """Every semantic problem of a schema-valid spec; an empty list means it is runnable."""
    base = spec_path.parent
    problems: list[Problem] = []
    for name, art in spec.artifacts.items():
        where = f"$.artifacts.{name}"
        if art.recipe is not None:
            recipe = RECIPES.get(art.recipe)
            if recipe is None:
                problems.append(
                    Problem(f"{where}.recipe", f"unknown recipe; expected one of {sorted(RECIPES)}")
                )
            else:
                problems += [Problem(*found) for found in recipe.check(art.params, where=where)]
        found = resolve_path(art.path, base) if art.path is not None else None
        if found is not None and not (found.is_dir() if art.is_folder else found.is_file()):
            kind = "folder" if art.is_folder else "regular file"
            what = f"is not a {kind}" if found.exists() else "does not exist"
            problems.append(Problem(f"{where}.path", f"{art.path} {what}"))
    wl = spec.workload
    for field, name in (("model", wl.model), ("dataset", wl.dataset)):
        if name not in spec.artifacts:
            problems.append(
                Problem(
                    f"$.workload.{field}",
                    f"names artifact {name!r}, which is not in $.artifacts "
                    f"(has {sorted(spec.artifacts)})",
                )
            )
    backend = get_backend(spec.backend.name)
    problems += _served_problems(spec, backend.served)
    if wl.task == "generation" and backend.generator is None and not backend.served:
        with_one = sorted(n for n, p in BACKENDS.items() if p.generator is not None)
        problems.append(
            Problem(
                "$.backend.name",
                f'{spec.backend.name!r} has no generative engine for task "generation": use '
                f"{' or '.join(with_one)}",
            )
        )
    for where, name in backend.artifact_refs(spec.backend.options).items():
        if name not in spec.artifacts:
            problems.append(Problem(where, f"names artifact {name!r}, which is not in $.artifacts"))
    for i, sc in enumerate(wl.scenarios):
        problems += _check_settings(sc.scenario, sc.settings, f"$.workload.scenarios[{i}]")
        per_query = sc.settings.multi_stream_samples_per_query or 1
        if sc.scenario == "MultiStream" and per_query > wl.performance_sample_count:
            problems.append(
                Problem(
                    f"$.workload.scenarios[{i}].settings.multi_stream_samples_per_query",
                    "larger than performance_sample_count",
                )
            )
    env = spec.environment
    lock_problems: list[Problem] = []
    for attr, lock in get_manager(env.manager).locks(env).items():
        lock_problems += _check_lock(lock, f"$.environment.{attr}", base)
    problems += lock_problems
    python_lock = getattr(env, "python_lock", None)
    if python_lock is not None and getattr(env, "hashes_complete", False) and not lock_problems:
        problems += _check_hashes(resolve_path(python_lock.path, base), python_lock.path)
    if env.spack is not None and not lock_problems:
        problems += _check_spack(env.spack, base)
    why = rouge.missing() if "accuracy" in wl.modes and wl.accuracy.metric == "rouge" else None
    if why is not None:
        problems.append(
            Problem(
                "$.workload.accuracy.metric",
                f"rouge cannot be scored here: {why}; {rouge.INSTALL_HINT}",
            )
        )
    if "accuracy" in wl.modes and wl.accuracy.metric == "agreement":
        ref = spec.original.reference_predictions if spec.original else None
        if ref is None:
            problems.append(
                Problem(
                    "$.original.reference_predictions",
                    "accuracy metric 'agreement' has no reference predictions yet; "
                    "`repro capture` records them",
                    "warning",
                )
            )
        elif wl.task == "generation":
            if len(ref.outputs_sha256) != wl.total_sample_count:
                problems.append(
                    Problem(
                        "$.original.reference_predictions.outputs_sha256",
                        f"has {len(ref.outputs_sha256)} entries, total_sample_count is "
                        f"{wl.total_sample_count}: capture the original again",
                    )
                )
        elif len(ref.top1) != wl.total_sample_count:
            problems.append(
                Problem(
                    "$.original.reference_predictions.top1",
                    f"has {len(ref.top1)} entries, total_sample_count is {wl.total_sample_count}",
                )
            )
    return problems + _check_claims(spec, spec_path, problems)


#: the latency percentiles LoadGen's summary gives (a Server bound at another one cannot be
#: read from a run's metrics)
_PERCENTILES = {0.5: "latency_p50_ns", 0.9: "latency_p90_ns", 0.99: "latency_p99_ns"}


def _check_claims(spec: ExperimentSpec, spec_path: Path, own: list[Problem]) -> list[Problem]:
    """Each claim's variants are valid experiments that measure its metric; a problem a
    variant shares with the spec itself is the spec's, said once."""
    problems: list[Problem] = []
    seen = {(p.where, p.message) for p in own}
    for claim in spec.claims or []:
        where = claim_where(spec, claim)
        try:
            sides = variant_specs(spec, claim, source=str(spec_path))
        except VariantError as exc:
            problems.append(Problem(exc.where, exc.detail))
            continue
        for side in SIDES:
            variant = sides[side]
            problems += _measures(claim, side, variant, where)
            problems += [
                Problem(f"{where}.{side}: {p.where}", p.message, p.severity)
                for p in check(variant, spec_path)
                if (p.where, p.message) not in seen
            ]
    return problems


def _measures(claim: Claim, side: Side, variant: ExperimentSpec, where: str) -> list[Problem]:
    """The variant runs the scenario (and the mode) the claim's metric needs."""
    metric = claim.parsed_metric
    wl = variant.workload
    runs = [s.scenario for s in wl.scenarios]
    if metric.is_accuracy:
        if "accuracy" in wl.modes:
            return []
        return [
            Problem(
                f"{where}.metric",
                f"accuracy: the {side} variant runs no accuracy mode (its modes: {wl.modes})",
            )
        ]
    scenario = metric.scenarios()[side]
    if scenario not in runs:
        return [
            Problem(
                f"{where}.metric",
                f"{claim.metric}: the {side} variant runs no {scenario} scenario (it runs "
                f"{', '.join(runs)}), so it does not measure it",
            )
        ]
    if "performance" not in wl.modes:
        return [
            Problem(
                f"{where}.metric", f"{claim.metric}: the {side} variant runs no performance mode"
            )
        ]
    settings = next(s.settings for s in wl.scenarios if s.scenario == scenario)
    percentile = settings.server_target_latency_percentile
    if metric.is_feasibility and side == "candidate" and percentile not in (None, *_PERCENTILES):
        return [
            Problem(
                f"{where}.metric",
                f"{claim.metric}: Server's latency bound is at percentile {percentile}; a "
                "feasibility claim reads LoadGen's p50, p90 or p99",
            )
        ]
    return []


def _served_problems(spec: ExperimentSpec, served: bool) -> list[Problem]:
    """A served backend goes with a `server` section and a generation of text prompts, and a
    `server` section with a served backend; a server's model is a folder artifact."""
    wl, section = spec.workload, spec.server
    if section is None:
        if served:
            return [Problem("$.server", "the served backend drives a server: add the section")]
        return []
    if not served:
        with_one = sorted(n for n, p in BACKENDS.items() if p.served)
        return [Problem("$.backend.name", f"a `server` is driven by the {with_one[0]!r} backend")]
    problems = []
    if wl.task != "generation" or wl.generation is None:
        problems.append(
            Problem("$.workload.task", 'a served experiment is a "generation" (with generation)')
        )
    model = getattr(section, "model", None)
    art = spec.artifacts.get(model) if model is not None else None
    if model is not None and art is None:
        problems.append(
            Problem("$.server.model", f"names artifact {model!r}, which is not in $.artifacts")
        )
    elif art is not None and not art.is_folder:
        problems.append(
            Problem(
                "$.server.model",
                f"the artifact {model!r} is a file; a server serves a model folder (its files)",
            )
        )
    return problems


def check_contents(spec: ExperimentSpec, files: Mapping[str, Path]) -> list[Problem]:
    """The workload against the bytes of its artifacts (`files`: artifact name -> a local file
    with the pinned bytes; an artifact not given is not checked): the input and output names
    are the model's, as its backend reads them, and the data set holds the arrays and the
    samples the workload names (its .npz headers; nothing is loaded)."""
    wl = spec.workload
    problems: list[Problem] = []
    model = files.get(wl.model)
    if model is not None and model.is_file():
        try:
            names = get_backend(spec.backend.name).model_io_names(model)
        except SpecError as exc:
            return [Problem(f"$.artifacts.{wl.model}", exc.message)]
        if names is not None:
            found = io_name_problems(*names, wl.input_name, wl.output_name)
            problems += [Problem(where, message) for where, message in found]
    dataset = files.get(wl.dataset)
    if dataset is not None:
        problems += _check_dataset(wl, dataset)
    served = spec.server is not None
    if wl.generation is not None and model is not None and dataset is not None and not problems:
        problems += [] if served else _check_prompts(wl, model, dataset)
    return problems


def _check_prompts(wl: Workload, model: Path, dataset: Path) -> list[Problem]:
    """A generation's prompts against the model's vocabulary and context (a tinylm .npz states
    its config; another checkpoint is checked by the worker, which reads it with torch)."""
    assert wl.generation is not None
    config = read_lm_config(model)
    if config is None:
        return []
    try:
        data = read_npz(dataset)
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        return [Problem(f"$.artifacts.{wl.dataset}", f"not a readable .npz: {exc}")]
    if wl.generation.lengths_key not in data:
        return [
            Problem(
                "$.workload.generation.lengths_key",
                f"{wl.generation.lengths_key!r} is not an array of the data set {wl.dataset!r} "
                f"(it has {sorted(data)}): name the array of prompt lengths",
            )
        ]
    problems = _check_vocabulary(wl, config, data)
    found = prompt_problems(
        data[wl.inputs_key],
        data[wl.generation.lengths_key],
        config=config,
        max_new_tokens=wl.generation.max_new_tokens,
        eos_token_id=wl.generation.eos_token_id,
        dataset=wl.dataset,
        samples=wl.total_sample_count,
    )
    return problems + [Problem(where, message) for where, message in found]


def local_files(spec: ExperimentSpec, spec_path: Path, cache: ArtifactCache) -> dict[str, Path]:
    """The model and the data set where their pinned bytes are at hand without producing them
    (a cache entry, or a path artifact whose bytes have the pinned sha256), for check_contents."""
    out: dict[str, Path] = {}
    for name in (spec.workload.model, spec.workload.dataset):
        art = spec.artifacts.get(name)
        if art is None:
            continue
        if art.is_folder:  # a served model: its server reads it, not the checks
            continue
        cached = cache.path_for(art.sha256)
        found = resolve_path(art.path, spec_path.parent) if art.path is not None else None
        if cached.is_file():
            out[name] = cached
        elif found is not None and found.is_file() and sha256_file(found) == art.sha256:
            out[name] = found
    return out


def _check_dataset(wl: Workload, path: Path) -> list[Problem]:
    if not zipfile.is_zipfile(path):
        return []  # not an .npz: the backend's worker reads it its own way
    try:
        shapes = npz_shapes(path)
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        return [Problem(f"$.artifacts.{wl.dataset}", f"not a readable .npz: {exc}")]
    has = f"(it has {sorted(shapes)})"
    if wl.inputs_key not in shapes:
        return [
            Problem(
                "$.workload.inputs_key",
                f"{wl.inputs_key!r} is not an array of the data set {wl.dataset!r} {has}: name "
                "the array of model inputs",
            )
        ]
    problems = []
    held = shapes[wl.inputs_key][0] if shapes[wl.inputs_key] else 0
    if held < wl.total_sample_count:
        problems.append(
            Problem(
                "$.workload.total_sample_count",
                f"is {wl.total_sample_count}, but the data set's {wl.inputs_key!r} holds "
                f"{held} samples: set it to at most {held}",
            )
        )
    if "accuracy" in wl.modes and wl.accuracy.metric == "rouge":
        problems += _rouge_arrays(wl, shapes, has)
    needs_labels = "accuracy" in wl.modes and wl.accuracy.metric == "top1"
    if needs_labels and wl.accuracy.labels_key not in shapes:
        problems.append(
            Problem(
                "$.workload.accuracy.labels_key",
                f"{wl.accuracy.labels_key!r} is not an array of the data set {wl.dataset!r} "
                f"{has}: the top1 metric needs the labels; name the labels array, or use the "
                "agreement metric",
            )
        )
    return problems


def _rouge_arrays(wl: Workload, shapes: Mapping[str, tuple[int, ...]], has: str) -> list[Problem]:
    """The rouge metric's reference texts (one per sample) and vocabulary in the data set."""
    acc = wl.accuracy
    problems = []
    for key, field, what in (
        (acc.references_key, "references_key", "the reference texts (a string per prompt)"),
        (acc.vocabulary_key, "vocabulary_key", "the vocabulary (a string per token id)"),
    ):
        if key not in shapes:
            problems.append(
                Problem(
                    f"$.workload.accuracy.{field}",
                    f"{key!r} is not an array of the data set {wl.dataset!r} {has}: the rouge "
                    f"metric needs {what}; name the array, or use the agreement metric",
                )
            )
    held = shapes.get(acc.references_key)
    if held is not None and (len(held) != 1 or held[0] < wl.total_sample_count):
        problems.append(
            Problem(
                "$.workload.accuracy.references_key",
                f"{acc.references_key!r} has shape {list(held)}: the rouge metric needs one "
                f"reference text per prompt ({wl.total_sample_count})",
            )
        )
    return problems


def _check_vocabulary(
    wl: Workload, config: LmConfig, data: Mapping[str, np.ndarray]
) -> list[Problem]:
    """The rouge metric's vocabulary decodes every token the model can generate."""
    vocabulary = data.get(wl.accuracy.vocabulary_key)
    if vocabulary is None or "accuracy" not in wl.modes or wl.accuracy.metric != "rouge":
        return []
    if vocabulary.ndim != 1 or vocabulary.dtype.kind not in "US":
        return [
            Problem(
                "$.workload.accuracy.vocabulary_key",
                f"{wl.accuracy.vocabulary_key!r} is {vocabulary.dtype} of shape "
                f"{list(vocabulary.shape)}: expected strings, one per token id",
            )
        ]
    if len(vocabulary) != config.vocab_size:
        return [
            Problem(
                "$.workload.accuracy.vocabulary_key",
                f"{wl.accuracy.vocabulary_key!r} holds {len(vocabulary)} pieces, but the model's "
                f"vocabulary has {config.vocab_size} tokens: it is another tokenizer's; use the "
                "model's own vocabulary",
            )
        ]
    return []


def validate_file(path: Path) -> tuple[ExperimentSpec, list[Problem]]:
    """Load (schema check) then check semantics; schema errors raise SpecError."""
    spec = load_spec(path)
    return spec, check(spec, path)


def require_valid(path: Path) -> ExperimentSpec:
    """Load a spec and raise SpecError listing every semantic error."""
    spec, problems = validate_file(path)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        lines = "\n".join(f"  {p.where}: {p.message}" for p in errors)
        raise SpecError(f"{path}: invalid experiment spec ({len(errors)} problem(s))\n{lines}")
    return spec
