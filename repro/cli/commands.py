"""The list of commands the `repro` group registers."""

from __future__ import annotations

import click

from repro.cli.attest_cmds import attest, keygen, verify
from repro.cli.capture_cmd import capture
from repro.cli.claim_cmds import claim
from repro.cli.env_cmds import env
from repro.cli.image_cmd import image
from repro.cli.import_cmd import import_mlperf
from repro.cli.model_cmd import model
from repro.cli.nix_cmds import prefetch
from repro.cli.pack_cmds import pack, unpack
from repro.cli.profile_cmd import profile
from repro.cli.recommend_cmd import recommend
from repro.cli.replay_cmd import replay
from repro.cli.report_cmd import report
from repro.cli.results_cmd import results
from repro.cli.spack_cmds import spack
from repro.cli.spec_cmds import fetch, recipe, schema, tune, validate
from repro.cli.submission_cmd import submission
from repro.cli.sweep_cmd import sweep

COMMANDS: list[click.Command] = [
    capture,
    replay,
    claim,
    sweep,
    profile,
    report,
    results,
    import_mlperf,
    recommend,
    model,
    validate,
    schema,
    fetch,
    recipe,
    env,
    spack,
    image,
    pack,
    unpack,
    verify,
    keygen,
    attest,
    submission,
    tune,
    prefetch,
]
