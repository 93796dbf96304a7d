"""`repro capture`: describe an experiment, pin it, run it once as the original."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from repro.artifacts.cache import ArtifactCache
from repro.backends.registry import backend_names
from repro.cli.options import cache_dir_option, json_option, loadgen_override, track_option
from repro.cli.params import parse_key_value
from repro.cli.progress import TimedBar, note
from repro.cli.run_output import print_run_summary
from repro.environments.registry import capture_choices
from repro.errors import RunError, SpecError, UsageError
from repro.spec.models import SCENARIOS


def parse_source(text: str, option: str) -> dict[str, Any]:
    """`recipe:NAME[,k=v...]`, an http(s)/file URL, or a local path."""
    if text.startswith("recipe:"):
        name, *params = text[len("recipe:") :].split(",")
        values = dict(parse_key_value(p, option=f"{option} {text}:") for p in params)
        return {"recipe": name, "params": values}
    if text.startswith(("http://", "https://", "file://")):
        return {"url": text}
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise UsageError(
            f"{option} {text}: the URL scheme {text.split(':', 1)[0]!r} is not supported",
            hint="give an http(s):// or file:// URL, a local path, or recipe:NAME",
        )
    return {"path": str(Path(text).resolve())}


def _set_setting(scenarios: dict[str, dict[str, Any]], text: str) -> None:
    example = "SCENARIO.key=value, e.g. Offline.offline_expected_qps=100"
    lhs, value = parse_key_value(text, option="--setting", example=example)
    scenario, dot, key = lhs.partition(".")
    if not dot:
        raise UsageError(f"--setting {text}: expected {example}")
    if scenario not in SCENARIOS:
        raise UsageError(
            f"--setting {text}: unknown scenario {scenario!r}; expected one of {list(SCENARIOS)}"
        )
    scenarios.setdefault(scenario, {})[key] = value


def _no_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The flags build_partial takes, none of them given."""
    return {k: (() if isinstance(v, tuple) else None) for k, v in flags.items()}


def _rounds_of(base: dict[str, Any]) -> int:
    """How many performance runs the --from spec's original had (a re-capture measures as
    many, not fewer), else 1."""
    metrics = ((base.get("original") or {}).get("metrics") or {}) if isinstance(base, dict) else {}
    runs = [
        int(m["runs"])
        for m in metrics.values()
        if isinstance(m, dict) and isinstance(m.get("runs"), int | float) and m["runs"] >= 1
    ]
    return max(runs, default=1)


def _flake_of(base: dict[str, Any], from_spec: Path | None) -> Path:
    """The --from spec's flake folder (`path:` relative to its own folder), else nix/."""
    flake = (base.get("environment") or {}).get("flake") if isinstance(base, dict) else None
    if from_spec is not None and isinstance(flake, str) and flake.startswith("path:"):
        return from_spec.parent / flake.removeprefix("path:")
    return Path("nix")


#: the parts of a spec that define what is measured: a flag that changes one of them makes the
#: --from spec's original results another experiment's
EXPERIMENT_PARTS = ("artifacts", "backend", "workload")


def build_partial(base: dict[str, Any], **flags: Any) -> dict[str, Any]:
    """A partial spec: `base` (from --from) overridden by the command-line flags."""
    from repro.capture import DEFAULT_SEEDS

    raw: dict[str, Any] = json.loads(json.dumps(base))
    for key in ("name", "description"):
        if flags[key] is not None:
            raw[key] = flags[key]
    if flags["tags"]:
        raw["tags"] = list(flags["tags"])
    arts = raw.setdefault("artifacts", {})
    for key in ("model", "dataset"):
        if flags[key] is not None:
            arts[key] = parse_source(flags[key], f"--{key}")
    backend = raw.setdefault("backend", {"name": "onnxruntime"})
    if flags["backend"] is not None and flags["backend"] != backend.get("name"):
        backend.clear()
        backend["name"] = flags["backend"]
    for opt in flags["backend_options"]:
        k, v = parse_key_value(opt, option="--backend-option")
        backend.setdefault("options", {})[k] = v
    wl = raw.setdefault("workload", {})
    for key in (
        "input_name",
        "output_name",
        "total_sample_count",
        "performance_sample_count",
        "batch_size",
        "preprocessing",
    ):
        if flags[key] is not None:
            wl[key] = flags[key]
    wl.setdefault("seeds", dict(DEFAULT_SEEDS))
    if flags["accuracy_metric"] is not None or "accuracy" not in wl:
        wl["accuracy"] = {**wl.get("accuracy", {}), "metric": flags["accuracy_metric"] or "top1"}
    if flags["class_offset"] is not None:
        wl["accuracy"]["class_offset"] = flags["class_offset"]
    if flags["modes"]:
        wl["modes"] = list(flags["modes"])
    scenarios = {s["scenario"]: dict(s.get("settings", {})) for s in wl.get("scenarios", [])}
    for sc in flags["scenarios"]:
        scenarios.setdefault(sc, {})
    for text in flags["settings"]:
        _set_setting(scenarios, text)
    if scenarios:
        wl["scenarios"] = [{"scenario": k, "settings": v} for k, v in scenarios.items()]
    return raw


@click.command()
@click.option(
    "--from",
    "from_spec",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A (partial) spec to start from; flags override its fields.",
)
@click.option("--name", help="Experiment name: specs/<name>.json, results/<name>/.")
@click.option("--description")
@click.option("--tag", "tags", multiple=True)
@click.option("--model", help="recipe:NAME[,k=v...] | URL | PATH")
@click.option("--dataset", help="recipe:NAME[,k=v...] | URL | PATH (.npz with inputs[, labels])")
@click.option("--backend", type=click.Choice(backend_names()))
@click.option(
    "--backend-option",
    "backend_options",
    multiple=True,
    help="key=value, e.g. intra_op_threads=2 (repeatable).",
)
@click.option("--scenario", "scenarios", multiple=True, type=click.Choice(SCENARIOS))
@click.option(
    "--setting", "settings", multiple=True, help="SCENARIO.key=value LoadGen setting (repeatable)."
)
@click.option("--mode", "modes", multiple=True, type=click.Choice(["performance", "accuracy"]))
@click.option("--input-name")
@click.option("--output-name")
@click.option("--preprocessing")
@click.option("--total-sample-count", type=click.IntRange(min=1))
@click.option("--performance-sample-count", type=click.IntRange(min=1))
@click.option("--batch-size", type=click.IntRange(min=1))
@click.option("--accuracy-metric", type=click.Choice(["top1", "agreement", "rouge"]))
@click.option("--class-offset", type=int)
@click.option(
    "--env-manager",
    type=click.Choice(capture_choices()),
    default=None,
    help="How the environment is pinned (default: the --from spec's manager, else venv).",
)
@click.option(
    "--flake-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Flake whose lock pins the environment (with --env-manager nix) [default: the --from "
    "spec's flake, else nix/].",
)
@click.option(
    "--docker-base",
    default=None,
    help="Base image of the image built with --env-manager docker "
    "(default: local/debian:bookworm-py, see docs/docker.md).",
)
@click.option(
    "--docker-bake-artifacts",
    is_flag=True,
    help="With --env-manager docker: copy the artifacts into the image (a self-contained "
    "image; default: mounted read-only at run time).",
)
@click.option("--no-run", is_flag=True, help="Pin and write the spec, run nothing.")
@click.option(
    "--no-claims",
    is_flag=True,
    help="Do not measure the spec's claims after the original (they keep the evidence they "
    "have); by default each is measured here, in paired rounds, and its evidence recorded.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=None,
    help="Performance runs of the original, for the report's statistics [default: as many as "
    "the --from spec's original had, else 1].",
)
@loadgen_override("min_duration_ms", "Override min_duration_ms for the original's run.")
@click.option("--force", is_flag=True, help="Replace an existing results/<name>/original/.")
@click.option(
    "--specs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("specs"),
    show_default=True,
)
@click.option(
    "--lockfiles-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("lockfiles"),
    show_default=True,
)
@click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
)
@cache_dir_option
@track_option
@json_option
def capture(
    from_spec: Path | None,
    env_manager: str | None,
    flake_dir: Path | None,
    docker_base: str | None,
    docker_bake_artifacts: bool,
    no_run: bool,
    no_claims: bool,
    repeat: int | None,
    force: bool,
    specs_dir: Path,
    lockfiles_dir: Path,
    results_dir: Path,
    cache_dir: Path | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Pin an experiment and run it once: specs/<name>.json + lockfiles/ + original results.

    Artifacts get their sha256 from their bytes, the worker's Python packages are locked with
    hashes (pip-compile), the hardware is fingerprinted, and the original's headline metrics
    and reference predictions are recorded in the spec. Capturing the same experiment twice
    gives the same spec id.

    \b
    Example:
      repro capture --name my-digits --model artifacts/digits-mlp.onnx \\
        --dataset recipe:sklearn-digits,split=test --output-name predictions \\
        --total-sample-count 450 --performance-sample-count 450 --scenario Offline \\
        --setting Offline.offline_expected_qps=100000
      repro capture --from specs/ort-digits.json --force
    """
    from repro.capture import CaptureOptions
    from repro.capture import capture as run_capture
    from repro.jsonio import read_json
    from repro.runs.plan import OVERRIDABLE, ReplayPlan, loadgen_overrides

    # LoadGen's overrides for the original's run, apart from the flags that build the spec
    loadgen = {k: flags.pop(k) for k in OVERRIDABLE if k in flags}

    base: dict[str, Any] = {}
    source = "command line"
    if from_spec is not None:
        loaded = read_json(from_spec)
        if not isinstance(loaded, dict):
            raise SpecError(f"{from_spec}: $: expected a JSON object")
        base, source = loaded, str(from_spec)
    raw = build_partial(base, **flags)
    # against the --from spec with no flag given (build_partial fills in its own defaults)
    unflagged = build_partial(base, **_no_flags(flags))
    changed = [k for k in EXPERIMENT_PARTS if raw.get(k) != unflagged.get(k)]
    if base.get("original") is not None and changed:
        # the original was measured on the --from experiment, not on this one
        raw.pop("original", None)
        raw.pop("hardware", None)
        note(f"the original of {from_spec} is not kept: the flags change its {', '.join(changed)}")
    opts = CaptureOptions(
        specs_dir=specs_dir,
        lockfiles_dir=lockfiles_dir,
        results_dir=results_dir,
        env_manager=env_manager,
        flake_dir=flake_dir or _flake_of(base, from_spec),
        docker_base=docker_base,
        docker_bake=docker_bake_artifacts,
        run=not no_run,
        claims=not no_claims,
        force=force,
        flags_over_from=from_spec is not None and raw != unflagged,
        replay=ReplayPlan(
            repeat=repeat or _rounds_of(base),
            loadgen=loadgen_overrides(**loadgen),
        ),
    )
    captured = run_capture(
        raw,
        source=source,
        cache=ArtifactCache(cache_dir),
        opts=opts,
        report=note,
        progress=TimedBar,
    )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "spec": str(captured.spec_path),
                    "id": captured.spec.id,
                    "original": str(captured.run_dir) if captured.run_dir else None,
                }
            )
        )
    else:
        click.echo(f"spec {captured.spec_path} (id {captured.spec.id})")
    if captured.run_dir is not None and captured.record is not None:
        if not as_json:
            print_run_summary(captured.run_dir, captured.record)
        if captured.record.status != "complete":
            raise RunError(
                f"the original run is {captured.record.status}",
                hint=f"see LoadGen's logs in {captured.run_dir}",
            )
