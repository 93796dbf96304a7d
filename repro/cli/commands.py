"""The commands of the `repro` group, loaded when one runs (click's lazy-group pattern).

`repro --help` lists them from this table without importing a command's module, so the help and
`--version` cost what they print; a test holds each entry to its command (its name, where it is,
its short help).
"""

from __future__ import annotations

from typing import Final

#: the longest short help kept (click shortens it to the terminal's width)
SHORT_HELP: Final = 120
#: name -> ("module:attribute" of the command, its short help as `repro --help` shows it, at most
#: SHORT_HELP characters)
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "capture": (
        "repro.cli.capture_cmd:capture",
        ("Pin an experiment and run it once: specs/<name>.json + lockfiles/ + original results."),
    ),
    "replay": (
        "repro.cli.replay_cmd:replay",
        "Replay an experiment: verify artifacts, realize the environment, run LoadGen.",
    ),
    "claim": (
        "repro.cli.claim_cmds:claim",
        ("State, measure and check the relative results a spec claims (ratios, accuracy drops)."),
    ),
    "sweep": (
        "repro.cli.sweep_cmd:sweep",
        ("Replay every point of a grid of settings and report the uncertainty-aware Pareto front."),
    ),
    "profile": (
        "repro.cli.profile_cmd:profile",
        "Profile an experiment's layers with the backend's own profiler.",
    ),
    "report": (
        "repro.cli.report_cmd:report",
        ("Compare replays with the original: per scenario and metric, a verdict and its reason."),
    ),
    "results": (
        "repro.cli.results_cmd:results",
        (
            "Every result of published MLPerf trees (any level: a round, division, submitter, "
            "system, benchmark) as one table: one..."
        ),
    ),
    "import-mlperf": (
        "repro.cli.import_cmd:import_mlperf",
        (
            "Import published MLPerf results (any level of a tree): per result, a spec that "
            "replays its LoadGen settings and seeds..."
        ),
    ),
    "recommend": (
        "repro.cli.recommend_cmd:recommend",
        (
            "The systems no other system beats on every objective at once, from a table "
            "written by `repro results --csv` (or a..."
        ),
    ),
    "catalog": (
        "repro.cli.catalog_cmds:catalog",
        "Every run, comparison and verdict in an MLflow store: log them, see a spec's history.",
    ),
    "model": (
        "repro.cli.model_cmd:model",
        "Predictive models of published results (fit, validated by system).",
    ),
    "validate": (
        "repro.cli.spec_cmds:validate",
        "Check specs against the schema and for semantic problems.",
    ),
    "schema": (
        "repro.cli.spec_cmds:schema",
        "Print the JSON Schema of the experiment spec (repro.experiment/v1).",
    ),
    "fetch": (
        "repro.cli.spec_cmds:fetch",
        "Materialize every artifact of the specs in the content-addressed cache.",
    ),
    "recipe": (
        "repro.cli.spec_cmds:recipe",
        "List and run the deterministic artifact recipes.",
    ),
    "env": (
        "repro.cli.env_cmds:env",
        "Environment fingerprint (show) and drift between two environments (diff).",
    ),
    "spack": (
        "repro.cli.spack_cmds:spack",
        ("Spack environments: pin a spec to one (pin), check them (check), read a lock (show)."),
    ),
    "image": (
        "repro.cli.image_cmd:image",
        (
            "Build a Docker image for SPEC: the base image, a venv installed from the spec's "
            "hashed Python lock (`pip install..."
        ),
    ),
    "pack": (
        "repro.cli.pack_cmds:pack",
        (
            "Write an experiment package: the spec and every file it names, its original "
            "results, and on request the artifacts,..."
        ),
    ),
    "unpack": (
        "repro.cli.pack_cmds:unpack",
        "Unpack a package safely and check every file against its manifest.",
    ),
    "verify": (
        "repro.cli.attest_cmds:verify",
        (
            "Check a package, a run, a report or a spec: every hash against the bytes on disk "
            "and, with --key, every attestation's..."
        ),
    ),
    "keygen": (
        "repro.cli.attest_cmds:keygen",
        (
            "Make an ed25519 signing key pair for `repro attest` (the private key mode 0600; "
            "it is never written into a run, a..."
        ),
    ),
    "attest": (
        "repro.cli.attest_cmds:attest",
        "Sign an in-toto statement of a spec, a run or a report and write it beside it.",
    ),
    "submission": (
        "repro.cli.submission_cmd:submission",
        (
            "Write an MLPerf Inference submission tree from finished runs by one round's "
            "rules, make the runs the round fixes (its..."
        ),
    ),
    "tune": (
        "repro.cli.spec_cmds:tune",
        ("Tune a TVM spec with MetaSchedule and pin the database in the spec as an artifact."),
    ),
    "prefetch": (
        "repro.cli.nix_cmds:prefetch",
        ("Print the hashes Nix wants for PATH or URL, so it enters a flake as a fixed output."),
    ),
}


def shorten(text: str, limit: int) -> str:
    """A help text's first sentence, cut at a word to `limit` characters with `...` (what click
    shows beside a command in a group's help)."""
    words = " ".join(text.split("\n\n")[0].split()).split(" ")
    out: list[str] = []
    for word in words:
        if len(" ".join([*out, word])) > limit - 3 and out:
            return " ".join(out) + "..."
        out.append(word)
        if word.endswith("."):
            return " ".join(out)
    return " ".join(out)
