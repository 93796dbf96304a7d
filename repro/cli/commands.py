"""The list of commands the `repro` group registers."""

from __future__ import annotations

import click

from repro.cli.replay_cmd import replay
from repro.cli.spec_cmds import fetch, recipe, schema, validate

COMMANDS: list[click.Command] = [schema, validate, fetch, recipe, replay]
