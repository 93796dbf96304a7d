"""Options several commands share, each declared once.

LoadGen's overrides (`--min-duration-ms`, `--min-query-count`, `--max-duration-ms`) take their
bounds from the spec's own types (`repro.spec.types`): a command accepts what a spec accepts
for the same setting, and the help says which setting it overrides. What a command does with
the value (every scenario's, a check's tests', the original's run) is its own help text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import annotated_types
import click

from repro.outputs import TRACK_META
from repro.runs.plan import OVERRIDABLE, LoadGenOverrides

F = TypeVar("F", bound=Callable[..., Any])

cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Artifact cache (default: $REPRO_CACHE_DIR or ~/.cache/repro).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
#: where a command that replays writes its runs
results_dir_option = click.option(
    "--results-dir",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Parent of results/<name>/.",
)


def env_option(what: str = "the worker runs") -> Callable[[F], F]:
    """--env: where a command that replays runs its workers (auto: the captured manager if it
    is installed, else venv)."""
    from repro.environments.registry import replay_choices

    return click.option(
        "--env",
        "env_name",
        default="auto",
        show_default=True,
        type=click.Choice(replay_choices()),
        help=f"Where {what}: auto takes the captured manager if installed, else venv.",
    )


def manager_options() -> Callable[[F], F]:
    """Every environment manager's own options (`EnvironmentFace.options`: docker's
    --rebuild, --container-cpuset, --container-memory), each as its face declares it."""
    from repro.environments.registry import FACES

    def decorate(f: F) -> F:
        for face in reversed(FACES.values()):
            for o in reversed(face.options):
                text = f"--env {face.name}: {o.help}."
                f = (
                    click.option(o.flag, o.param, is_flag=True, default=None, help=text)
                    if o.switch
                    else click.option(o.flag, o.param, default=None, help=text)
                )(f)
        return f

    return decorate


def _bounds(setting: str) -> click.IntRange:
    """The bounds the spec's type of LoadGen's `setting` holds (its Ge/Le constraints)."""
    info = LoadGenOverrides.model_fields[setting]
    low: Any = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    high: Any = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    return click.IntRange(low, high)


def loadgen_override(setting: str, help: str, default: int | None = None) -> Callable[[F], F]:
    """The option overriding LoadGen's `setting` (one of `repro.runs.plan.OVERRIDABLE`), named
    and bounded as the spec's type of it is; None (the default) leaves the spec's."""
    if setting not in OVERRIDABLE:
        raise ValueError(f"{setting!r} is not a LoadGen setting a plan overrides: {OVERRIDABLE}")
    flag = "--" + setting.replace("_", "-")
    return click.option(
        flag,
        setting,
        type=_bounds(setting),
        default=default,
        show_default=default is not None,
        help=help,
    )


def _keep_track(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Keep the value for the catalog step, checked now with REPRO_TRACKING_URI and the
    project's config: a typo fails the command before it runs, not after an hour of replay."""
    from repro.catalog.where import resolve

    resolve(value, Path.cwd())
    ctx.meta[TRACK_META] = value


#: --track [URI]: log what the command wrote into the catalog (an MLflow store); given without
#: a URI, the project's own SQLite file; `off` for none whatever REPRO_TRACKING_URI says
track_option = click.option(
    "--track",
    metavar="URI",
    is_flag=False,
    flag_value="default",
    default=None,
    expose_value=False,
    callback=_keep_track,
    help="Log the runs and verdicts into the catalog (MLflow): a tracking URI, or nothing for "
    "the project's .repro/catalog.db; 'off' for none (default: $REPRO_TRACKING_URI, else "
    ".repro/config.toml's catalog.tracking_uri, else off).",
)
