"""The spack manager's orchestration, with a FAKE `spack` executable that records its argv
(tests/fakes.py): environment made from the pinned lock and reused by its hash, concretized
when no lock is pinned, refusals (tampered lock, inconsistent manifest, re-concretized roots,
failed install), capture's pins, auto's fallback, and a real LoadGen replay whose worker
starts through `spack env activate`. The real Spack's tests are test_spack_real.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import cli
from repro.environments import registry
from repro.environments.spack.manager import SpackManager
from repro.errors import EnvironmentSetupError, SpecError
from repro.spec.io import parse_spec
from repro.spec.models import ExperimentSpec
from tests.fakes import fake_spack_calls, write_fake_spack
from tests.helpers import portable_spec

SPECS = [
    "python@3.11",
    "py-mlcommons-loadgen@6.0.17",
    "py-onnxruntime@1.22.2",
    "py-numpy@2",
    "py-pydantic@2",
]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _node(
    name: str, version: str, h: str, deps: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "hash": h,
        "namespace": "repro" if name == "py-mlcommons-loadgen" else "builtin",
        "arch": {"platform": "linux", "platform_os": "debian12", "target": "x86_64_v3"},
        "parameters": {"build_system": "python_pip", "cflags": []},
        "dependencies": deps or [],
    }


def write_lock(folder: Path, *, specs: list[str] = SPECS, onnxruntime: str = "1.22.2") -> Path:
    """A v6 spack.lock whose roots are `specs`, compiled by a gcc build dependency."""
    gcc = _node("gcc", "12.2.0", "g" * 32)
    compiler = [
        {
            "name": "gcc",
            "hash": "g" * 32,
            "parameters": {"deptypes": ["build"], "virtuals": ["c", "cxx"]},
        }
    ]
    nodes = {"g" * 32: gcc}
    roots = []
    for i, s in enumerate(specs):
        name = s.split("@")[0]
        version = {"python": "3.11.9", "py-onnxruntime": onnxruntime, "py-numpy": "2.2.6"}.get(
            name, s.split("@")[1] if "@" in s else "1.0"
        )
        h = (chr(ord("a") + i) * 31 + ("1" if onnxruntime == "1.22.2" else "2"))[:32]
        nodes[h] = _node(name, version, h, compiler)
        roots.append({"hash": h, "spec": s})
    lock = {
        "_meta": {"file-type": "spack-lockfile", "lockfile-version": 6, "specfile-version": 5},
        "spack": {"version": "1.1.0", "type": "git", "commit": "e" * 40},
        "roots": roots,
        "concrete_specs": nodes,
    }
    path = folder / "spack.lock"
    path.write_text(json.dumps(lock, indent=1))
    return path


@pytest.fixture
def envdir(tmp_path: Path, root: Path) -> Path:
    """lockfiles/ort-digits/ with a manifest of SPECS (what the fake's locks are of)."""
    folder = tmp_path / "lockfiles" / "ort-digits"
    folder.mkdir(parents=True)
    manifest = {
        "spack": {
            "specs": SPECS,
            "concretizer": {"unify": True},
            "view": True,
            "repos": {
                "repro": "../../spack-repo/spack_repo/repro",
                "builtin": {
                    "git": "https://github.com/spack/spack-packages.git",
                    "commit": "fcf3a6d065b3b958a88e1c2f84a18cb2cf85ae36",
                },
            },
        }
    }
    (folder / "spack.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return folder


@pytest.fixture
def fake_spack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "spack-calls.jsonl"
    write_fake_spack(tmp_path / "bin", log)
    monkeypatch.delenv("SPACK_ROOT", raising=False)  # the fake, not a real Spack found there
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    return log


def make_spec(root: Path, tmp_path: Path, envdir: Path, *, locked: bool = True) -> Path:
    """specs/ort-digits.json (paths made absolute) pinned to `envdir`'s Spack environment."""
    raw = portable_spec(root, "ort-digits")
    pins: dict[str, Any] = {
        "spack_yaml": {"path": str(envdir / "spack.yaml"), "sha256": _sha(envdir / "spack.yaml")}
    }
    if locked:
        lock = envdir / "spack.lock"
        from repro.backends.registry import spack_key_packages
        from repro.formats.spack.lockfile import read_spack_lock
        from repro.formats.spack.pins import lock_pins

        pins["spack_lock"] = {"path": str(lock), "sha256": _sha(lock)}
        pins.update(lock_pins(read_spack_lock(lock), spack_key_packages()))
    raw["environment"]["spack"] = pins
    raw["workload"]["scenarios"] = [
        s for s in raw["workload"]["scenarios"] if s["scenario"] == "Offline"
    ]
    raw["workload"]["modes"] = ["performance"]
    path = tmp_path / "specs" / "ort-digits.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw, indent=1))
    return path


def _load(path: Path) -> ExperimentSpec:
    return parse_spec(json.loads(path.read_text()), source=str(path))


def test_realize_creates_the_environment_from_the_pinned_lock_then_reuses_it(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    lines: list[str] = []
    env = SpackManager(lines.append).realize(_load(spec_path), spec_path, tmp_path / "envs")
    target = Path(env.details["spack_env"])
    assert target.name.startswith("spack-")
    assert target.parent == tmp_path / "envs"
    assert (target / "spack.lock").read_bytes() == (envdir / "spack.lock").read_bytes()
    repos = yaml.safe_load((target / "spack.yaml").read_text())["spack"]["repos"]
    assert repos["repro"] == str((envdir / "../../spack-repo/spack_repo/repro").resolve())
    assert repos["builtin"]["commit"] == "fcf3a6d065b3b958a88e1c2f84a18cb2cf85ae36"
    calls = fake_spack_calls(fake_spack)
    assert ["-e", str(target), "install", "--fail-fast"] in calls
    assert not any("concretize" in c for c in calls)  # the pinned lock is used as it is
    assert any(ln.startswith("  spack: ==> Installing") for ln in lines)  # progress shown
    assert env.details["locked"] is True
    assert env.details["packages"]["py-onnxruntime"]["version"] == "1.22.2"
    assert env.details["packages"]["python"]["compiler"] == "gcc@12.2.0"
    assert "created" in env.reason
    assert "pinned by" in env.reason

    again = SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    assert "reused" in again.reason
    installs = [c for c in fake_spack_calls(fake_spack) if "install" in c]
    assert len(installs) == 1


def test_without_a_pinned_lock_the_manifest_is_concretized_and_the_run_says_so(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    spec_path = make_spec(root, tmp_path, envdir, locked=False)
    env = SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    calls = fake_spack_calls(fake_spack)
    target = env.details["spack_env"]
    assert calls.index(["-e", target, "concretize", "--fresh"]) < calls.index(
        ["-e", target, "install", "--fail-fast"]
    )
    assert env.details["locked"] is False
    assert "not pinned" in env.reason
    assert [r["spec"] for r in env.details["roots"]] == SPECS


def test_a_tampered_lock_is_refused_before_spack_runs(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    write_lock(envdir, onnxruntime="1.21.0")
    with pytest.raises(EnvironmentSetupError, match="not the pinned sha256"):
        SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    assert fake_spack_calls(fake_spack) == []


def test_a_lock_not_concretized_from_the_manifest_is_refused(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    write_lock(envdir, specs=[*SPECS[:-1], "py-pydantic@1"])
    spec_path = make_spec(root, tmp_path, envdir)
    with pytest.raises(SpecError, match=r"only in spack.yaml: py-pydantic@2"):
        SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")


def test_roots_spack_reconcretized_differently_are_refused(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    raw = json.loads(spec_path.read_text())
    raw["environment"]["spack"]["roots"][2]["hash"] = "z" * 32  # not what the lock holds
    spec_path.write_text(json.dumps(raw))
    with pytest.raises(EnvironmentSetupError, match="re-concretized"):
        SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")


def test_a_failed_install_names_spacks_error_and_is_retried_next_time(
    root: Path, tmp_path: Path, envdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    write_fake_spack(tmp_path / "bin", log, fail_install=True)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    with pytest.raises(
        EnvironmentSetupError, match=r"`spack install` failed \(exit 1\).*build failed.*install.log"
    ):
        SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    write_fake_spack(tmp_path / "bin", log)
    SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    assert sum("install" in c for c in fake_spack_calls(log)) == 2  # no marker was left


def test_an_external_whose_prefix_is_gone_is_refused_before_spack_installs(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    manifest = yaml.safe_load((envdir / "spack.yaml").read_text())
    manifest["spack"]["packages"] = {
        "llvm": {
            "buildable": False,
            "externals": [{"spec": "llvm@14.0.6", "prefix": str(tmp_path / "gone")}],
        }
    }
    (envdir / "spack.yaml").write_text(yaml.safe_dump(manifest))
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    with pytest.raises(
        EnvironmentSetupError,
        match=r"packages\.llvm: the external llvm@14\.0\.6 has no prefix .*gone",
    ):
        SpackManager().realize(_load(spec_path), spec_path, tmp_path / "envs")
    assert not any("install" in c for c in fake_spack_calls(fake_spack))


def test_a_spec_without_spack_pins_says_how_to_add_them(
    root: Path, tmp_path: Path, fake_spack: Path
) -> None:
    raw = portable_spec(root, "ort-digits")
    raw["environment"].pop("spack", None)
    spec = parse_spec(raw, source="x.json")
    with pytest.raises(EnvironmentSetupError, match=r"\$.environment.spack") as err:
        SpackManager().realize(spec, tmp_path / "x.json", tmp_path / "envs")
    assert "repro spack pin" in (err.value.hint or "")


def test_auto_falls_back_to_venv_without_spack_and_says_so(
    root: Path, tmp_path: Path, envdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_lock(envdir)
    raw = json.loads(make_spec(root, tmp_path, envdir).read_text())
    raw["environment"] = {
        "manager": "spack",
        **{k: v for k, v in raw["environment"].items() if k in ("spack", "python_lock")},
    }
    spec = parse_spec(raw, source="spec.json")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("SPACK_ROOT", raising=False)
    chosen, reason = registry.choose("auto", spec, Path("spec.json"))
    assert chosen == "venv"
    assert "captured manager 'spack' is not usable here (`spack` is not on PATH" in reason


def test_the_spack_pins_do_not_change_the_id_of_a_nix_spec(root: Path) -> None:
    from repro.spec.io import load_spec, spec_id

    spec = load_spec(root / "specs" / "ort-digits.json")
    assert spec.environment.manager == "nix"
    assert spec.environment.spack is not None
    raw = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["environment"].pop("spack")
    assert spec_id(parse_spec(raw, source="x")) == spec_id(spec) == spec.id


def test_capture_with_spack_pins_the_lock_and_the_key_packages(
    root: Path, tmp_path: Path, envdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_lock(envdir)
    monkeypatch.setenv("PATH", f"{Path(__import__('sys').executable).parent}:/usr/bin:/bin")
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
    partial["environment"] = {"manager": "spack"}
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(tmp_path / "partial.json"),
            "--env-manager",
            "spack",
            "--no-run",
            "--specs-dir",
            str(tmp_path / "specs"),
            "--lockfiles-dir",
            str(tmp_path / "lockfiles"),
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 0, result.output
    env = json.loads((tmp_path / "specs" / "ort-digits.json").read_text())["environment"]
    assert env["manager"] == "spack"
    assert env["spack"]["spack_lock"]["sha256"] == _sha(envdir / "spack.lock")
    assert env["spack"]["packages"]["py-mlcommons-loadgen"]["namespace"] == "repro"
    assert [r["spec"] for r in env["spack"]["roots"]] == SPECS
    assert env["python_lock"]["path"].endswith("requirements.lock")
    check = CliRunner().invoke(cli, ["validate", str(tmp_path / "specs" / "ort-digits.json")])
    assert check.exit_code == 0, check.output


def test_env_diff_between_two_locks_ranks_a_key_package_change_first(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = write_lock(tmp_path / "a"), write_lock(tmp_path / "b", onnxruntime="1.21.0")
    result = CliRunner().invoke(cli, ["env", "diff", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    changes = json.loads(result.stdout)["changes"]
    assert (changes[0]["key"], changes[0]["a"], changes[0]["b"]) == (
        "py-onnxruntime.version",
        "1.22.2",
        "1.21.0",
    )
    assert changes[0]["level"] == "high"
    assert {c["key"].rsplit(".", 1)[1] for c in changes if c["level"] == "low"} == {"hash"}


def test_replay_runs_the_worker_through_spack_env_activate(
    root: Path, tmp_path: Path, envdir: Path, fake_spack: Path
) -> None:
    write_lock(envdir)
    spec_path = make_spec(root, tmp_path, envdir)
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(spec_path),
            "--env",
            "spack",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run-id",
            "in-spack",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["status"] == "complete"
    env = record["environment"]
    assert env["manager"] == "spack"
    assert env["spack_lock_sha256"] == _sha(envdir / "spack.lock")
    assert env["packages"]["py-onnxruntime"]["version"] == "1.22.2"
    activations = [c for c in fake_spack_calls(fake_spack) if c[:3] == ["env", "activate", "--sh"]]
    assert activations  # the worker (and the probe before it) started through the environment
    drift = CliRunner().invoke(
        cli, ["env", "diff", str(spec_path), str(tmp_path / "results" / "ort-digits" / "in-spack")]
    )
    assert drift.exit_code == 0, drift.output
