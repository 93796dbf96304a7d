"""`repro env show` and `repro env diff`: the environment fingerprint and its drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from repro.cli.options import json_option
from repro.compare.envdiff import key_packages


@click.group()
def env() -> None:
    """Environment fingerprint (show) and drift between two environments (diff)."""


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, int):
        return "unknown"
    return f"{n / 2**30:.1f} GiB"


def _text(v: Any) -> str:
    return "unknown" if v is None else str(v)


@env.command("show")
@json_option
@click.option("--deep", is_flag=True, help="Also import the backends for their build info.")
def env_show(as_json: bool, deep: bool) -> None:
    """Print this machine's fingerprint: CPU, memory, OS, Python, packages, variables.

    A fact that cannot be read is shown as unknown, never guessed.

    \b
    Example:
      repro env show --json > here.json
    """
    from repro.machine.fingerprint import collect

    fp = collect(deep=deep)
    if as_json:
        click.echo(json.dumps(fp, indent=2, sort_keys=True))
        return
    hw, cpu, os_, py = fp["hardware"], fp["hardware"]["cpu"], fp["os"], fp["python"]
    lines = [
        f"cpu        {_text(cpu['model'])} ({_text(cpu['vendor'])}), "
        f"{_text(cpu['logical_cpus'])} logical / {_text(cpu['physical_cores'])} cores / "
        f"{_text(cpu['sockets'])} socket(s), usable {_text(cpu['usable_cpus'])}",
        f"flags      {' '.join(cpu['flags']) or 'unknown'}",
        f"caches     {_text(hw['caches'])}",
        f"memory     {_fmt_bytes(hw['memory_bytes'])}, NUMA nodes {_text(hw['numa_nodes'])}",
        f"frequency  governor {_text(hw['frequency_governor'])}, turbo {_text(hw['turbo'])}",
        f"gpus       {_text(hw['gpus'])}",
        f"os         {_text(os_['release'])}, kernel {_text(os_['kernel'])}, "
        f"{_text(os_['libc'])}, container {_text(os_['container'])}",
        f"python     {py['implementation']} {py['version']} ({py['executable']})",
        f"packages   {len(fp['packages'])} installed; "
        + ", ".join(f"{k} {v}" for k, v in fp["packages"].items() if k in key_packages()),
        f"variables  {_text(fp['variables'] or None)}",
    ]
    for name, info in fp["native"].items():
        lines.append(f"{name:<10} {_text(info)}")
    click.echo("\n".join(lines))


@env.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@json_option
def env_diff(a: Path, b: Path, as_json: bool) -> None:
    """What changed from A to B, likeliest to change speed or accuracy first.

    A and B are fingerprints (`repro env show --json`), run directories, specs, flake.lock
    or spack.lock files (any lockfile version: a changed compiler, target, version or variant
    of a key package ranks first).

    \b
    Example:
      repro env diff results/ort-digits/original results/ort-digits/20261129T171502Z-3fa2c1
    """
    from repro.compare.envdiff import as_json as changes_json
    from repro.compare.envdiff import diff_paths

    changes = diff_paths(a, b)
    if as_json:
        click.echo(
            json.dumps(
                {"a": str(a), "b": str(b), "changes": changes_json(changes)}, indent=2, default=str
            )
        )
        return
    if not changes:
        click.echo("no differences")
        return
    current = None
    for c in changes:
        if c.level != current:
            current = c.level
            click.echo(f"{current} impact:")
        click.echo(f"  {c.group:<9} {c.key}: {_text(c.a)} -> {_text(c.b)}")
