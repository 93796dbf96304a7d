"""The LoadGen overrides every command shares are one declaration: the same bounds (the spec's
own), and the values reach the worker typed."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.cli.options import _bounds
from repro.harness.request import WorkerRequest
from repro.runs.plan import OVERRIDABLE
from repro.spec.limits import MAX_DURATION_MS
from repro.spec.models import LoadGenSettings


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    """Every command of the tree, by its path ("claim check")."""
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        path = f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            found |= _commands(cmd, path + " ")
        else:
            found[path] = cmd
    return found


@pytest.mark.parametrize("setting", sorted(OVERRIDABLE))
def test_each_loadgen_override_is_one_option_with_the_spec_s_bounds(setting: str) -> None:
    flag, bounds = "--" + setting.replace("_", "-"), _bounds(setting)
    using = {
        path: param
        for path, cmd in _commands(cli).items()
        for param in cmd.params
        if flag in getattr(param, "opts", ())
    }
    assert using, f"no command declares {flag}"
    for path, param in using.items():
        assert isinstance(param.type, click.IntRange), path
        got = (param.type.min, param.type.max)
        assert got == (bounds.min, bounds.max), f"repro {path}: {flag} with bounds of its own"
        assert param.name == setting, f"repro {path}: {flag} is not passed as {setting}"
    field = LoadGenSettings.model_fields[setting]
    limits = {type(m).__name__: m for m in field.metadata}
    assert (bounds.min, bounds.max) == (limits["Ge"].ge, limits["Le"].le)


def test_the_commands_that_override_the_minimum_duration_all_do_so() -> None:
    users = {
        path
        for path, cmd in _commands(cli).items()
        for param in cmd.params
        if "--min-duration-ms" in getattr(param, "opts", ())
    }
    assert {"replay", "capture", "sweep", "claim check", "claim measure"} <= users


def test_a_minimum_duration_beyond_the_spec_s_bound_is_refused_by_every_command() -> None:
    too_long = str(MAX_DURATION_MS + 1)
    for args in (["replay", "x.json"], ["sweep", "x.json"], ["claim", "check", "x.json"]):
        result = CliRunner().invoke(cli, [*args, "--min-duration-ms", too_long])
        assert result.exit_code == 2, (args, result.output)
        assert "--min-duration-ms" in result.output


def test_the_worker_request_carries_loadgen_s_settings_typed() -> None:
    assert WorkerRequest.model_fields["settings"].annotation is LoadGenSettings
    base = {"min_duration_ms": 10, "offline_expected_qps": 100.0}
    raw = {"settings": base | {"offline_expectd_qps": 1.0}}  # a misspelt setting
    with pytest.raises(ValueError, match="offline_expectd_qps"):
        WorkerRequest.model_validate(raw)
