"""The Docker pieces that need no daemon: the Dockerfile, the container command a worker call
becomes (mounts, limits, lifeline, variables), the spec section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from repro.containers.image import PREFIX, VENV_PYTHON, dockerfile
from repro.containers.launch import LaunchError, docker_command, request_mounts
from repro.environments.docker import DockerEnvironment
from repro.lifeline import ENV as LIFELINE

ID = "sha256:" + "a" * 64


def _request(tmp_path: Path, **extra: object) -> Path:
    cache = tmp_path / "cache"
    (cache / "sha256" / "ab").mkdir(parents=True)
    model = cache / "sha256" / "ab" / "model"
    model.write_bytes(b"onnx")
    data = tmp_path / "local-data.npz"
    data.write_bytes(b"npz")
    out = tmp_path / "run" / "Offline" / "performance"
    out.mkdir(parents=True)
    request = {
        "model_path": str(model),
        "model_sha256": "m" * 64,
        "dataset_path": str(data),
        "dataset_sha256": "d" * 64,
        "output_dir": str(out),
        "runtime": {"cache_dir": str(cache)},
        "backend": {"name": "tvm"},
        **extra,
    }
    path = tmp_path / "scratch" / "Offline-performance.json"
    path.parent.mkdir()
    path.write_text(json.dumps(request))
    return path


def test_the_dockerfile_installs_the_pinned_wheels_offline_and_labels_the_image() -> None:
    text = dockerfile(
        base="local/debian:bookworm-py",
        spec_name="ort-digits",
        spec_id="f" * 64,
        lock_sha256="1" * 64,
        require_hashes=True,
        baked={},
    )
    assert text.splitlines()[1] == "FROM local/debian:bookworm-py"
    assert "--no-index --no-deps --require-hashes" in text
    assert f"--find-links {PREFIX}/wheels -r {PREFIX}/requirements.lock" in text
    assert f"COPY repro {PREFIX}/src/repro" in text
    assert f'org.repro.python-lock-sha256="{"1" * 64}"' in text
    assert "artifacts" not in text.split("LABEL")[0]  # mounted at run time, not baked
    baked = dockerfile(
        base="b",
        spec_name="n",
        spec_id="",
        lock_sha256="",
        require_hashes=False,
        baked={"c" * 64: "c" * 64},
    )
    assert "--require-hashes" not in baked
    assert f"COPY artifacts/{'c' * 64} {PREFIX}/artifacts/{'c' * 64}" in baked


def test_a_worker_call_mounts_outputs_writable_and_inputs_read_only(tmp_path: Path) -> None:
    req = _request(tmp_path)
    mounts = dict(request_mounts(json.loads(req.read_text()), req))
    out = tmp_path / "run" / "Offline" / "performance"
    assert mounts[str(out)] is True
    assert mounts[str(tmp_path / "cache" / "tvm")] is True  # TVM's compiled modules
    assert mounts[str(tmp_path / "cache")] is False
    assert mounts[str(req.parent)] is False
    assert mounts[str(tmp_path / "local-data.npz")] is False  # outside the cache: on its own
    assert str(tmp_path / "cache" / "sha256" / "ab" / "model") not in mounts  # under the cache


def test_a_backend_that_compiles_nothing_writes_nothing_in_the_cache(tmp_path: Path) -> None:
    req = _request(tmp_path, backend={"name": "onnxruntime"})
    mounts = dict(request_mounts(json.loads(req.read_text()), req))
    assert [path for path, writable in mounts.items() if writable] == [
        str(tmp_path / "run" / "Offline" / "performance")
    ]


def test_the_docker_command_for_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    req = _request(tmp_path)
    cmd = docker_command(
        ["-m", "repro.harness", str(req)],
        image=ID,
        cpuset="0",
        memory="2g",
        environ={"OMP_NUM_THREADS": "2", "AWS_SECRET_ACCESS_KEY": "x", LIFELINE: "7"},
        name="w",
    )
    assert cmd[:2] == ["docker", "run"]
    assert cmd[cmd.index("--network") + 1] == "none"
    assert cmd[cmd.index("--cpuset-cpus") + 1] == "0"
    assert cmd[cmd.index("--memory") + 1] == "2g"
    assert "-i" in cmd
    assert f"{LIFELINE}=0" in cmd
    assert "OMP_NUM_THREADS" in cmd
    assert not any("AWS" in c for c in cmd)  # only allow-listed variables
    out = str(tmp_path / "run" / "Offline" / "performance")
    assert f"type=bind,source={out},target={out}" in cmd
    assert f"type=bind,source={tmp_path / 'cache'},target={tmp_path / 'cache'},readonly" in cmd
    assert cmd[cmd.index("-w") + 1] == out
    assert cmd[-5:] == [ID, VENV_PYTHON, "-m", "repro.harness", str(req)]


def test_a_fingerprint_call_mounts_nothing_and_has_no_lifeline() -> None:
    cmd = docker_command(["-m", "repro.machine.fingerprint"], image=ID, environ={})
    assert "--mount" not in cmd
    assert "-i" not in cmd
    assert cmd[-3:] == [VENV_PYTHON, "-m", "repro.machine.fingerprint"]
    assert cmd[cmd.index("--name") + 1].startswith("repro-run-")


def test_baked_artifacts_are_read_from_the_image(tmp_path: Path) -> None:
    req = _request(tmp_path)
    cmd = docker_command(["-m", "repro.harness", str(req)], image=ID, baked={"m" * 64}, environ={})
    rewritten = Path(cmd[-1])
    assert rewritten.name == "Offline-performance.container.json"
    data = json.loads(rewritten.read_text())
    assert data["model_path"] == f"{PREFIX}/artifacts/{'m' * 64}"
    assert data["dataset_path"] == str(tmp_path / "local-data.npz")  # not baked: mounted


@pytest.mark.parametrize("bad", ["/", "/usr", f"{PREFIX}/src", "/tmp/a,b"])
def test_a_path_that_cannot_be_mounted_is_refused(tmp_path: Path, bad: str) -> None:
    req = _request(tmp_path)
    data = json.loads(req.read_text())
    data["output_dir"] = bad
    with pytest.raises(LaunchError):
        request_mounts(data, req)


def test_the_spec_section_pins_ids_by_digest() -> None:
    env = DockerEnvironment.model_validate(
        {"manager": "docker", "image": "repro/x:1", "image_id": ID, "cpuset": "0-1"}
    )
    assert env.image_id == ID
    with pytest.raises(ValidationError):
        DockerEnvironment.model_validate({"manager": "docker", "image": "x", "image_id": "latest"})


@pytest.mark.parametrize(
    ("cpuset", "memory", "message"),
    [
        ("99", None, "--container-cpuset '99': this machine has CPUs 0-"),
        ("a-b", None, "expected CPUs like 0-3,6"),
        ("1-0", None, "'1-0' is not a range of CPUs"),
        (None, "foo", "expected bytes like 512m"),
        (None, "-5g", "expected bytes"),
        (None, "1", "at least 6m"),
    ],
)
def test_container_limits_are_checked_before_anything_runs(
    cpuset: str | None, memory: str | None, message: str
) -> None:
    from repro.environments.docker.manager import check_limits
    from repro.errors import SpecError

    with pytest.raises(SpecError, match=message):
        check_limits(
            cpuset, memory, cpuset_from="--container-cpuset", memory_from="--container-memory"
        )
    check_limits("0", "512m", cpuset_from="c", memory_from="m")  # these are fine


def test_image_names_docker_refuses_are_bad_input() -> None:
    from repro.containers.image import check_reference, repository_name
    from repro.errors import SpecError

    for bad in ("hostile/UPPER:1", "x y:1", "", "a::b", "repro/x:" + "t" * 200):
        with pytest.raises(SpecError, match="--tag"):
            check_reference(bad, what="--tag")
    assert check_reference("localhost:5000/repro/ort-digits:v1.2", what="--tag")
    assert repository_name("Hostile.-X") == "hostile-x"
    check_reference(f"repro/{repository_name('ResNet_50 (big)')}:lock-1", what="tag")


def test_a_mount_path_docker_cannot_take_is_refused(tmp_path: Path) -> None:
    from repro.containers.launch import check_mount

    for bad in ("/tmp/a,b", '/tmp/a"b', "/opt/repro/x"):
        with pytest.raises(LaunchError):
            check_mount(bad)
    assert check_mount("/tmp/with space:colon=ok") == "/tmp/with space:colon=ok"
