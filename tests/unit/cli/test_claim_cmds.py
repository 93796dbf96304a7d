"""`repro claim add|list|measure|check` and `repro replay --claims`: what they write, what they
print, their exit codes, and bad input refused (exit 2) before anything runs."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repro.artifacts.cache import ArtifactCache
from repro.backends import registry
from repro.cli import cli
from repro.environments.base import RealizedEnvironment
from repro.harness.request import WorkerRequest
from repro.replay.session import ReplaySession
from repro.runs.plan import ReplayPlan
from repro.spec.io import load_spec
from repro.spec.models import ExperimentSpec
from tests.fakes import EchoPlugin, FakeProbes, InProcessRunner
from tests.helpers import portable_spec

ADD = [
    "--id",
    "threads",
    "--statement",
    "2 threads give twice the Offline throughput of 1",
    "--metric",
    "Offline.throughput",
    "--relation",
    ">=",
    "--bound",
    "1.8",
    "--candidate",
    "backend.options.intra_op_threads=2",
    "--min-duration-ms",
    "100",
    "--max-rounds",
    "10",
]


@contextlib.contextmanager
def _no_bar(label: str, forecast: Any) -> Iterator[None]:
    yield


def _speed(req: WorkerRequest) -> float:
    return 1000.0 * max(int(req.backend.options.intra_op_threads), 1)  # type: ignore[attr-defined]


def _fake_session(
    cls: type[ReplaySession],
    spec: ExperimentSpec,
    spec_path: Path,
    plan: ReplayPlan,
    *,
    cache: Any = None,
    **_: Any,
) -> ReplaySession:
    """A session whose replays run the in-process fake engine (in place of `open`)."""
    env = RealizedEnvironment(manager="fake", python=[sys.executable], env={})
    return cls(
        spec_path,
        env,
        cache or ArtifactCache(plan.cache_dir),
        report=lambda _: None,
        progress=_no_bar,
        runner=InProcessRunner(speed=_speed),
        probes=FakeProbes(),
    )


@pytest.fixture
def fake_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replayer the commands make runs the in-process fake engine."""
    monkeypatch.setitem(registry.BACKENDS, "onnxruntime", EchoPlugin())

    monkeypatch.setattr(ReplaySession, "open", classmethod(_fake_session))


@pytest.fixture
def spec_file(root: Path, tmp_path: Path) -> Path:
    path = tmp_path / "ort-digits.json"
    path.write_text(json.dumps(portable_spec(root, "ort-digits")))
    CliRunner().invoke(cli, ["validate", "--fix-id", str(path)])
    return path


def _repro(*argv: str, cwd: Path | None = None) -> Result:
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        return CliRunner().invoke(cli, list(argv))


def test_add_writes_the_claim_and_keeps_the_spec_id(spec_file: Path) -> None:
    before = load_spec(spec_file)
    result = _repro("claim", "add", str(spec_file), *ADD)
    assert result.exit_code == 0, result.output
    after = load_spec(spec_file)
    assert after.id == before.id
    assert after.claims is not None
    assert after.claims[0].bound_text() == "Offline.throughput candidate/baseline >= 1.8"
    again = _repro("claim", "add", str(spec_file), *ADD)
    assert again.exit_code == 2
    assert "a claim 'threads' exists" in again.stderr
    assert _repro("claim", "add", str(spec_file), *ADD, "--force").exit_code == 0
    assert len(load_spec(spec_file).claims or []) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # --bound inf: refused by the option's type (tests/unit/cli/test_finite_options.py)
        (["--bound", "0"], "$.claims[0].bound (claim 'threads'): Input should be greater than 0"),
        (["--metric", "Offline.latency_p99"], "Offline does not measure 'latency_p99'"),
        (["--metric", "MultiStream.latency_p99"], "runs no MultiStream scenario"),
        (["--candidate", "backend.options.intra_op_threads=1"], "the same experiment"),
        (["--candidate", "backend.options.intra_op_threads=x"], "variant does not validate"),
        (["--candidate", "workload.batch_size=0"], "$.workload.batch_size"),
        # the cached model ran on both sides (a ratio of 0.901 was reported)
        (["--candidate", "artifacts.model.path=/etc/passwd"], "an artifact is its sha256"),
    ],
)
def test_add_refuses_bad_input_naming_the_claim_and_the_field(
    spec_file: Path, change: list[str], message: str
) -> None:
    text = spec_file.read_text()
    argv = list(ADD)
    flag = change[0]
    if flag == "--candidate":
        i = argv.index("--candidate")
        argv[i + 1] = change[1]
    else:
        argv[argv.index(flag) + 1] = change[1]
    if flag == "--metric" and change[1].startswith("MultiStream"):
        spec = json.loads(text)
        spec["workload"]["scenarios"] = [
            s for s in spec["workload"]["scenarios"] if s["scenario"] != "MultiStream"
        ]
        spec.pop("id")
        spec_file.write_text(json.dumps(spec))
        text = spec_file.read_text()
    result = _repro("claim", "add", str(spec_file), *argv)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "threads" in result.stderr
    assert spec_file.read_text() == text  # nothing written


def test_add_refuses_an_override_given_twice(spec_file: Path) -> None:
    # the last one silently won
    text = spec_file.read_text()
    result = _repro(
        "claim", "add", str(spec_file), *ADD, "--candidate", "backend.options.intra_op_threads=3"
    )
    assert result.exit_code == 2, result.output
    assert "claim 'threads'" in result.stderr
    assert "backend.options.intra_op_threads is overridden twice (2 and 3)" in result.stderr
    assert spec_file.read_text() == text


def test_environment_overrides_are_refused_where_the_environment_is_not_built(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    """Under --env native both variants run this interpreter: a variant's lock changes
    nothing, and a check that compares them would compare one stack with itself."""
    argv = list(ADD)
    argv[argv.index("--candidate") + 1] = "environment.shell=tvm"
    added = _repro("claim", "add", str(spec_file), *argv)
    assert added.exit_code == 0, added.output
    result = _repro(
        "claim",
        "check",
        str(spec_file),
        "--env",
        "native",
        "--results-dir",
        str(tmp_path / "results"),
    )
    assert result.exit_code == 2, result.output
    assert "environment.shell" in result.stderr
    assert "--env native runs this interpreter's packages" in result.stderr
    assert not (tmp_path / "results").exists()


def test_list_shows_each_claim_and_its_evidence(spec_file: Path) -> None:
    _repro("claim", "add", str(spec_file), *ADD)
    shown = _repro("claim", "list", str(spec_file))
    assert shown.exit_code == 0
    assert "threads: 2 threads give twice" in shown.output
    assert "not measured" in shown.output
    listed = json.loads(_repro("claim", "list", str(spec_file), "--json").output)
    assert listed[0]["id"] == "threads"


def test_check_exits_0_when_the_claims_hold_and_1_when_one_does_not(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    _repro("claim", "add", str(spec_file), *ADD)
    out = tmp_path / "out"
    held = _repro(
        "claim",
        "check",
        str(spec_file),
        "--report-dir",
        str(out),
        "--json",
        "--results-dir",
        str(tmp_path / "results"),
    )
    assert held.exit_code == 0, held.output
    data = json.loads(held.stdout)
    assert data["schema"] == "repro.claim_rounds/v1"
    assert data["claims"][0]["verdict"] == "holds"
    assert data["claims"][0]["match"] == "no original"
    assert (out / "claims.md").read_text().startswith("# Claims: ort-digits")
    assert json.loads((out / "claims.json").read_text())["verdict"] == "holds"
    _repro("claim", "add", str(spec_file), *ADD, "--bound", "2.5", "--force")
    failed = _repro(
        "claim",
        "check",
        str(spec_file),
        "--report-dir",
        str(out),
        "--results-dir",
        str(tmp_path / "results"),
    )
    assert failed.exit_code == 1, failed.output
    assert "does not hold" in failed.stdout


def test_check_fixed_rounds_runs_the_whole_cap_and_reports_each_rounds_end(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    _repro("claim", "add", str(spec_file), *ADD)
    done = _repro(
        "claim",
        "check",
        str(spec_file),
        "--json",
        "--fixed-rounds",
        "--max-rounds",
        "10",
        "--report-dir",
        str(tmp_path / "out"),
        "--results-dir",
        str(tmp_path / "results"),
    )
    assert done.exit_code == 0, done.output
    [row] = json.loads(done.stdout)["claims"]
    assert row["rounds"] == 10
    assert "fixed-size" in row["stopped"]
    assert len(row["round_end_s"]) == 10


def test_measure_records_the_evidence_and_keeps_the_id(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    _repro("claim", "add", str(spec_file), *ADD)
    before = load_spec(spec_file)
    result = _repro("claim", "measure", str(spec_file), "--results-dir", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    after = load_spec(spec_file)
    assert after.id == before.id
    assert after.claims is not None
    evidence = after.claims[0].evidence
    assert evidence is not None
    assert evidence.value == pytest.approx(2.0)
    assert evidence.verdict == "holds"
    checked = _repro(
        "claim",
        "check",
        str(spec_file),
        "--report-dir",
        str(tmp_path / "o"),
        "--results-dir",
        str(tmp_path / "r"),
        "--json",
    )
    assert json.loads(checked.stdout)["claims"][0]["match"] == "matches"


def test_replay_claims_puts_the_claims_first_and_exits_by_them(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    _repro("claim", "add", str(spec_file), *ADD)
    out = tmp_path / "report"
    result = _repro(
        "replay",
        str(spec_file),
        "--claims",
        "--scenario",
        "Offline",
        "--mode",
        "performance",
        "--min-duration-ms",
        "100",
        "--results-dir",
        str(tmp_path / "results"),
        "--report-dir",
        str(out),
    )
    # the fake engine is far from the original's numbers: the absolute rows are not
    # reproduced, but --claims asked about the claims, and they hold
    assert result.exit_code == 0, result.output
    page = (out / "report.md").read_text()
    assert page.index("## Claims") < page.index("## Offline")
    assert "✓ holds" in page
    report = json.loads((out / "report.json").read_text())
    assert report["claims_verdict"] == "holds"
    assert "<h2>Claims</h2>" in (out / "report.html").read_text()


def test_replay_claims_on_a_spec_without_claims_is_refused_before_it_runs(
    spec_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run")

    monkeypatch.setattr("repro.environments.registry.realize", refuse)
    result = _repro("replay", str(spec_file), "--claims")
    assert result.exit_code == 2
    assert "$.claims: --claims checks the spec's claims, and it states none" in result.stderr


BAD_CLAIMS: list[tuple[dict[str, Any], str, str]] = [
    # (the claim's changes, the field named, what the message says)
    (
        {"candidate": {"overrides": {"backend.options.intra_op_threads": 1}}},
        "$.claims[0] (claim 'threads').candidate",
        "the same experiment",
    ),
    ({"metric": "MultiStream.latency_p99"}, "$.claims[0]", "runs no MultiStream scenario"),
    ({"metric": "Offline.latency_p90"}, "metric", "Offline does not measure 'latency_p90'"),
    ({"bound": float("inf")}, "bound", "finite"),
    ({"bound": float("nan")}, "bound", "finite"),
    ({"bound": 0}, "bound", "greater than 0"),
    ({"bound": -1.0}, "bound", "greater than 0"),
    (
        {"candidate": {"overrides": {"workload.batch_size": 0}}},
        "$.claims[0] (claim 'threads').candidate",
        "does not validate",
    ),
    (
        {"candidate": {"overrides": {"backend.options.intra_opthreads": 2}}},
        "$.claims[0] (claim 'threads').candidate",
        "intra_op_threads",
    ),
]


@pytest.mark.parametrize("command", ["check", "measure", "replay"])
@pytest.mark.parametrize(("change", "field", "message"), BAD_CLAIMS)
def test_a_bad_claim_is_refused_with_exit_2_before_anything_runs(
    spec_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    change: dict[str, Any],
    field: str,
    message: str,
) -> None:
    """`claim check`, `claim measure` and `replay --claims` refuse a claim that cannot be
    checked (exit 2, the claim and the field named) before an environment is realized."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run")

    monkeypatch.setattr("repro.environments.registry.realize", refuse)
    monkeypatch.setattr(ReplaySession, "open", classmethod(refuse))
    raw = json.loads(spec_file.read_text())
    raw["claims"] = [
        {
            "id": "threads",
            "statement": "2 threads give 1.8x the Offline throughput of 1",
            "metric": "Offline.throughput",
            "baseline": {"overrides": {"backend.options.intra_op_threads": 1}},
            "candidate": {"overrides": {"backend.options.intra_op_threads": 2}},
            "relation": ">=",
            "bound": 1.6,
            **change,
        }
    ]
    if "MultiStream" in json.dumps(change):
        raw["workload"]["scenarios"] = [
            s for s in raw["workload"]["scenarios"] if s["scenario"] != "MultiStream"
        ]
        raw.pop("id")  # another experiment: its id is computed on load
    spec_file.write_text(json.dumps(raw))  # json writes inf and nan as Infinity and NaN
    before = spec_file.read_text()
    argv = (
        ["replay", str(spec_file), "--claims"]
        if command == "replay"
        else ["claim", command, str(spec_file)]
    )
    result = _repro(*argv, "--results-dir", str(tmp_path / "results"))
    assert result.exit_code == 2, result.output
    assert str(spec_file) in result.stderr
    assert field in result.stderr, result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert spec_file.read_text() == before
    assert not (tmp_path / "results").exists()


def test_replay_claims_on_other_hardware_judges_the_claims_first(
    spec_file: Path, tmp_path: Path, fake_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On another CPU the absolute rows are "not comparable: different hardware"; the claims
    are still judged, first on the page, and --json and the exit code follow them."""
    other = {"cpu": {"model": "Another CPU", "logical_cpus": 64}, "machine": "x86_64"}
    monkeypatch.setattr(
        InProcessRunner,
        "fingerprint",
        lambda self, env: {"schema": "repro.machine.fingerprint/v1", "hardware": other},
    )
    _repro("claim", "add", str(spec_file), *ADD)
    out = tmp_path / "report"
    result = _repro(
        "replay",
        str(spec_file),
        "--claims",
        "--scenario",
        "Offline",
        "--mode",
        "performance",
        "--min-duration-ms",
        "100",
        "--results-dir",
        str(tmp_path / "results"),
        "--report-dir",
        str(out),
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["claims"][0]["verdict"] == "holds"
    page = (out / "report.md").read_text()
    assert "different hardware" in page
    assert page.index("## Claims") < page.index("different hardware")
    report = json.loads((out / "report.json").read_text())
    assert report["claims_verdict"] == "holds"
    assert report["claims"][0]["id"] == "threads"


def test_replay_claims_whose_original_is_gone_still_writes_the_claims(
    spec_file: Path, tmp_path: Path, fake_workers: None
) -> None:
    """The spec's original folder missing is found after the replay and the claims' rounds ran:
    the claims are written and judged (the report is the claims alone, and says why), never an
    error that loses them."""
    _repro("claim", "add", str(spec_file), *ADD)
    raw = json.loads(spec_file.read_text())
    raw["original"]["path"] = "gone/original"
    spec_file.write_text(json.dumps(raw))
    out = tmp_path / "report"
    result = _repro(
        "replay",
        str(spec_file),
        "--claims",
        "--scenario",
        "Offline",
        "--mode",
        "performance",
        "--min-duration-ms",
        "100",
        "--results-dir",
        str(tmp_path / "results"),
        "--report-dir",
        str(out),
    )
    assert result.exit_code == 0, result.output
    assert "the replay is not compared with the original" in result.stderr
    assert (out / "claims.json").is_file()
    assert json.loads((out / "claims.json").read_text())["claims"][0]["verdict"] == "holds"


def test_add_refuses_a_round_cap_the_rule_cannot_decide_within(spec_file: Path) -> None:
    """`--max-rounds 8` was accepted: 2 rounds left out while the queries were sized, 8 counted
    ones needed, and the claim could never be decided."""
    argv = list(ADD)
    argv[argv.index("--max-rounds") + 1] = "8"
    result = _repro("claim", "add", str(spec_file), *argv)
    assert result.exit_code == 2, result.output
    assert "a claim's check needs at least 10 rounds" in result.stderr
