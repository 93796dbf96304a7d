"""Every shipped spec, end to end, as a user runs it: a short replay of each file in specs/,
then `repro report --compare results/<name>/` against its shipped original, or, where it has
none, `--against self` over two rounds. The report is written and says 0 or 1, never 2, 3 or 4:
a change to a type the modules share cannot break a spec's replay or report unseen.

A spec this machine cannot run (its backend's package is missing, it needs a GPU or the
network) is skipped with the reason, and `-ra` lists them at the end of the run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.backends.registry import get_backend
from repro.cli import cli
from repro.errors import BackendUnavailableError
from repro.spec.io import load_spec
from repro.spec.models import ExperimentSpec
from tests.helpers import assert_replayed

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.json"))
#: the shortest run LoadGen can judge: each scenario's own query count (its early-stopping
#: minimum), with a 100 ms minimum duration instead of the spec's seconds
SHORT = ("--min-duration-ms", "100")
#: scenarios whose shortest valid run is minutes here: left out of this test, with the reason
LEFT_OUT: dict[tuple[str, str], str] = {
    ("ort-resnet50", "MultiStream"): "its shortest valid run is 662 queries of 8 ResNet-50 "
    "samples (LoadGen's early-stopping minimum for p99), ~2 min on 2 cores; MultiStream runs "
    "end to end in ort-digits",
    ("torch-resnet50", "Server"): "its shortest valid run is 600 queries at 20 QPS of a "
    "ResNet-50 that torch runs at 3-10 samples/s here, 1-3 min a side a round (19 min for "
    "the two rounds under load); Server runs end to end in ort-digits, ort-resnet50 and "
    "torch-tinylm",
    ("torch-resnet50", "Offline"): "with SingleStream and both accuracy tests its two A/A "
    "rounds took 8 min under load (torch's ResNet-50 at ~3 samples/s); Offline runs end to "
    "end in ort-resnet50 and tvm-resnet50, and torch's Offline in tests/integration/test_torch.py",
}


def _why_not_here(spec: ExperimentSpec) -> str | None:
    """Why this machine cannot replay the spec; None when it can."""
    plugin = get_backend(spec.backend.name)
    if plugin.device(spec.backend.options) != "cpu":
        return f"needs a GPU ({plugin.device(spec.backend.options)}): none here"
    urls = sorted(name for name, art in spec.artifacts.items() if art.url is not None)
    if urls:
        return f"needs the network (artifacts {', '.join(urls)} come from a URL)"
    try:
        plugin.load_engine()
    except BackendUnavailableError as exc:
        return f"{exc.message} ({exc.hint})"
    return None


def _invoke(args: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and everything said (stdout and stderr)."""
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.output


@pytest.fixture(params=SPECS, ids=[p.stem for p in SPECS])
def spec_path(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    why = _why_not_here(load_spec(path))
    if why is not None:
        pytest.skip(f"{path.relative_to(ROOT)}: not replayed here: {why}")
    return path


def test_every_shipped_spec_replays_and_reports(
    spec_path: Path, tmp_path: Path, shared_cache: Path
) -> None:
    spec = load_spec(spec_path)
    results = tmp_path / "results"
    scenarios = [s.scenario for s in spec.workload.scenarios]
    chosen = [s for s in scenarios if (spec.name, s) not in LEFT_OUT]
    args = [
        "replay",
        str(spec_path),
        "--env",
        "native",
        *SHORT,
        "-o",
        str(results),
        "--cache-dir",
        str(shared_cache),
        *(a for s in chosen if chosen != scenarios for a in ("-s", s)),
    ]
    report = tmp_path / "report"
    original = ROOT / "results" / spec.name / "original"
    if original.is_dir():
        # the user's path: the shipped original beside the replay, then the folder compared
        shutil.copytree(original, results / spec.name / "original")
        code, record, out = _invoke([*args, "--run-id", "e2e", "--json"])
        assert_replayed(code, json.loads(record), out)
        code, _, out = _invoke(["report", "--compare", str(results / spec.name), "-o", str(report)])
    else:
        code, _, out = _invoke(
            [*args, "--against", "self", "--max-rounds", "2", "--report-dir", str(report)]
        )
    assert code in (0, 1), out
    verdict: dict[str, Any] = json.loads((report / "report.json").read_text())
    assert verdict["spec_name"] == spec.name
    assert verdict["verdict"], verdict["summary"]
    assert (report / "report.md").is_file()


@pytest.mark.parametrize("left_out", sorted(LEFT_OUT), ids=lambda k: "-".join(k))
def test_left_out_scenarios_are_said(left_out: tuple[str, str]) -> None:
    """Listed by `-ra` with the reason, beside the specs this machine cannot run."""
    assert (ROOT / "specs" / f"{left_out[0]}.json").is_file(), "a stale entry of LEFT_OUT"
    pytest.skip(f"specs/{left_out[0]}.json {left_out[1]}: {LEFT_OUT[left_out]}")
