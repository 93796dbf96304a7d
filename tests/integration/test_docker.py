"""Docker against the real engine (`.ci/run` starts dockerd and builds the base image; opt in
elsewhere with REPRO_TEST_DOCKER=1): the digits image built and pinned, ort-digits replayed in
it (every scenario), judged against a native replay interleaved on this machine, a changed
image id refused, a container killed mid-run leaving an interrupted run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.containers.image import DEFAULT_BASE
from repro.environments import registry
from repro.runs.store import load_run
from repro.spec.io import parse_spec


def _daemon_problem() -> str | None:
    try:
        import docker

        c = docker.from_env(timeout=10)
        try:
            c.ping()
            c.images.get(DEFAULT_BASE)
        finally:
            c.close()
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


@pytest.fixture(autouse=True)
def _daemon(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("docker") is None:
        return
    problem = _daemon_problem()
    if problem is not None:
        pytest.skip(f"no Docker daemon with {DEFAULT_BASE} (docs/docker.md): {problem}")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """specs/ort-digits.json captured with --env-manager docker: the image built and pinned."""
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("docker")
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
    (tmp / "partial.json").write_text(json.dumps(partial))
    result = _invoke(
        "capture",
        "--from",
        str(tmp / "partial.json"),
        "--env-manager",
        "docker",
        "--no-run",
        "--specs-dir",
        str(tmp / "specs"),
        "--lockfiles-dir",
        str(tmp / "lockfiles"),
        "--results-dir",
        str(tmp / "results"),
        "--cache-dir",
        str(tmp / "cache"),
    )
    assert result.exit_code == 0, result.output
    return tmp / "specs" / "ort-digits.json"


@pytest.mark.docker
def test_every_scenario_replays_in_the_pinned_image(pinned: Path) -> None:
    env = json.loads(pinned.read_text())["environment"]
    assert env["manager"] == "docker"
    assert env["image_id"].startswith("sha256:")
    assert env["base"] == DEFAULT_BASE
    out = pinned.parent.parent
    result = _invoke(
        "replay",
        str(pinned),
        "--min-duration-ms",
        "200",
        "--container-cpuset",
        "0",
        "--container-memory",
        "1g",
        "--results-dir",
        str(out / "results"),
        "--cache-dir",
        str(out / "cache"),
        "--run-id",
        "in-docker",
        "--json",
    )
    assert result.exit_code in (0, 3), result.output  # 3: a Server run INVALID under load
    record = json.loads(result.stdout)
    assert {(t["scenario"], t["mode"]) for t in record["tests"]} == {
        (s, m)
        for s in ("SingleStream", "MultiStream", "Server", "Offline")
        for m in ("performance", "accuracy")
    }
    assert all(t["status"] in ("valid", "invalid") for t in record["tests"])
    environment = record["environment"]
    assert environment["manager"] == "docker"  # auto took the captured manager
    assert environment["image_id"] == env["image_id"]
    assert (environment["cpuset"], environment["memory"]) == ("0", "1g")
    fp = record["fingerprint"]
    assert fp["os"]["container"] == "docker"
    assert fp["python"]["executable"] == "/opt/repro/venv/bin/python"
    assert fp["hardware"]["cgroup"]["cpuset"] == "0"  # the container's own view
    assert fp["hardware"]["cgroup"]["memory_limit_bytes"] == 2**30
    assert fp["hardware"]["cpu"]["usable_cpus"] == 1


@pytest.mark.docker
def test_the_container_and_a_native_replay_agree(pinned: Path) -> None:
    out = pinned.parent.parent
    result = _invoke(
        "replay",
        str(pinned),
        "--env",
        "docker",
        "--against",
        "self",
        "--baseline-env",
        "native",
        "--until-decided",
        "--max-rounds",
        "3",
        "--scenario",
        "SingleStream",
        "--scenario",
        "Offline",
        "--min-duration-ms",
        "300",
        "--results-dir",
        str(out / "results"),
        "--cache-dir",
        str(out / "cache"),
        "--report-dir",
        str(out / "report"),
        "--run-id",
        "vs-native",
        "--cpus",
        "0",
    )
    report = json.loads((out / "report" / "report.json").read_text())
    assert result.exit_code in (0, 1), result.output
    for scenario in report["scenarios"]:
        assert scenario["prediction_agreement"] == 1.0  # the same wheels, the same answers
        accuracy = [m for m in scenario["metrics"] if m["metric"] == "accuracy"]
        assert accuracy
        assert accuracy[0]["verdict"] == "reproduced"
    # Same machine, interleaved, but not the same interpreter: the image's Python is Debian's
    # 3.11.2, the host's may be another build. The digits model is bound by Python and
    # LoadGen, so its Offline throughput was seen 10-20 % higher in the container. A
    # performance difference judged real must then be explained by the drift.
    offline = next(s for s in report["scenarios"] if s["scenario"] == "Offline")
    throughput = next(m for m in offline["metrics"] if m["metric"] == "samples_per_second")
    if throughput["verdict"] == "not reproduced":
        groups = {d["group"] for d in report["drift"]}
        assert "python" in groups or "packages" in groups, report["drift"]
    drift = {(d["group"], d["key"]) for d in report["drift"]}
    assert ("pins", "environment.manager") in drift
    runs = out / "results" / "ort-digits"
    replay, baseline = load_run(runs / "vs-native-replay"), load_run(runs / "vs-native-baseline")
    assert (replay.environment["manager"], baseline.environment["manager"]) == ("docker", "native")
    # --cpus 0: the container's CPU set holds it, and every test of both sides ran there
    assert replay.environment["cpuset"] == "0"
    assert {tuple(t.cpus or ()) for t in [*replay.tests, *baseline.tests]} == {(0,)}
    diff = _invoke(
        "env", "diff", str(runs / "vs-native-baseline"), str(runs / "vs-native-replay"), "--json"
    )
    keys = {c["key"] for c in json.loads(diff.stdout)["changes"]}
    assert "executable" not in keys  # where Python lives is not drift
    assert "environment.manager" in keys


@pytest.mark.docker
def test_a_different_image_id_is_refused(pinned: Path, tmp_path: Path) -> None:
    raw = json.loads(pinned.read_text())
    raw.pop("id")
    raw["environment"]["image_id"] = "sha256:" + "0" * 64
    spec = pinned.parent / "tampered.json"
    spec.write_text(json.dumps(raw))
    result = _invoke(
        "replay",
        str(spec),
        "--env",
        "docker",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(pinned.parent.parent / "cache"),
    )
    assert result.exit_code == 3, result.output
    assert "$.environment.image_id" in result.output
    assert "sha256:" + "0" * 64 in result.output
    assert "--rebuild" in result.output
    assert not (tmp_path / "results").exists()  # refused before any run directory
    # an image that is here but not one repro built for this spec: refused before any run
    raw["environment"]["image_id"] = raw["environment"]["base_id"]
    spec.write_text(json.dumps(raw))
    result = _invoke(
        "replay",
        str(spec),
        "--env",
        "docker",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(pinned.parent.parent / "cache"),
    )
    assert result.exit_code == 3, result.output
    assert "not an image `repro image` built" in result.output
    assert not (tmp_path / "results").exists()
    # --rebuild: built again (under another name here, so the pinned one stays as it is)
    raw["environment"]["image"] = "repro/ort-digits:rebuilt-by-test"
    raw["environment"]["image_id"] = "sha256:" + "0" * 64
    spec.write_text(json.dumps(raw))
    result = _invoke(
        "replay",
        str(spec),
        "--env",
        "docker",
        "--rebuild",
        "--scenario",
        "Offline",
        "--mode",
        "accuracy",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(pinned.parent.parent / "cache"),
        "--json",
    )
    assert result.exit_code == 0, result.output
    env = json.loads(result.stdout)["environment"]
    assert env["rebuilt"] is True
    assert env["pinned_image_id"] == "sha256:" + "0" * 64
    assert env["image_id"].startswith("sha256:")
    assert env["image_id"] != env["pinned_image_id"]
    assert "rebuilt repro/ort-digits:rebuilt-by-test" in env["reason"]


@pytest.mark.docker
def test_the_pinned_id_runs_wherever_its_name_points_now(pinned: Path, tmp_path: Path) -> None:
    import docker

    env = json.loads(pinned.read_text())["environment"]
    c = docker.from_env()
    try:
        c.images.get(env["base_id"]).tag(env["image"])  # the name now points elsewhere
        result = _invoke(
            "replay",
            str(pinned),
            "--env",
            "docker",
            "--scenario",
            "Offline",
            "--mode",
            "accuracy",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(pinned.parent.parent / "cache"),
            "--json",
        )
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["environment"]["image_id"] == env["image_id"]
    finally:
        c.images.get(env["image_id"]).tag(env["image"])
        c.close()


@pytest.mark.docker
def test_a_container_killed_mid_run_leaves_an_interrupted_run(pinned: Path, tmp_path: Path) -> None:
    import docker

    c = docker.from_env()
    request_close = c.close
    before = {x.name for x in c.containers.list()}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "repro",
            "replay",
            str(pinned),
            "--env",
            "docker",
            "--scenario",
            "Offline",
            "--mode",
            "performance",
            "--min-duration-ms",
            "60000",
            "--results-dir",
            str(tmp_path / "results"),
            "--run-id",
            "killed",
            "--cache-dir",
            str(pinned.parent.parent / "cache"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    worker = None
    deadline = time.monotonic() + 120
    while worker is None and time.monotonic() < deadline and proc.poll() is None:
        names = {x.name for x in c.containers.list()} - before
        worker = next((n for n in names if n.startswith("repro-worker-")), None)
        time.sleep(0.3)
    assert worker is not None, proc.communicate(timeout=60)[0]
    time.sleep(1.0)
    c.containers.get(worker).kill()
    request_close()
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 3, output
    assert "killed (exit 137)" in output
    record = load_run(tmp_path / "results" / "ort-digits" / "killed")
    assert record.status == "interrupted"
    assert record.tests[0].status == "failed"


@pytest.mark.docker
def test_a_baked_image_carries_the_artifacts(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    dirs = [
        "--specs-dir",
        str(tmp_path / "specs"),
        "--lockfiles-dir",
        str(tmp_path / "lockfiles"),
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    result = _invoke(
        "capture",
        "--from",
        str(tmp_path / "partial.json"),
        "--env-manager",
        "docker",
        "--docker-bake-artifacts",
        "--no-run",
        *dirs,
    )
    assert result.exit_code == 0, result.output
    spec = json.loads((tmp_path / "specs" / "ort-digits.json").read_text())
    shas = sorted(a["sha256"] for a in spec["artifacts"].values())
    assert spec["environment"]["baked_artifacts"] == shas
    assert spec["environment"]["image"].endswith("-baked")
    result = _invoke(
        "replay",
        str(tmp_path / "specs" / "ort-digits.json"),
        "--scenario",
        "Offline",
        "--mode",
        "accuracy",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--json",
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["environment"]["baked_artifacts"] == shas
    assert record["tests"][0]["status"] == "valid"  # the worker checked the baked bytes


def test_auto_falls_back_when_no_daemon_answers(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    raw = json.loads((root / "specs" / "ort-digits.json").read_text())
    raw.pop("id")
    raw["environment"] = {
        "manager": "docker",
        "image": "repro/ort-digits:x",
        "image_id": "sha256:" + "1" * 64,
        "python_lock": raw["environment"]["python_lock"],
    }
    spec = parse_spec(raw, source="spec.json")
    chosen, reason = registry.choose("auto", spec, Path("spec.json"))
    assert chosen == "venv"
    assert "captured manager 'docker' is not usable here" in reason
