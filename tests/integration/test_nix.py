"""Real Nix (Debian's nix-bin, offline): narHash parity, a local flake locked, read, entered."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.formats.nix.flakelock import diff_locks, read_flake_lock
from repro.formats.nix.nar import nar_hash

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(
        shutil.which("nix") is None, reason="nix is not installed (Debian: apt-get install nix-bin)"
    ),
]
NIX = ["nix", "--extra-experimental-features", "nix-command flakes"]


def nix(*args: str, cwd: Path | None = None) -> str:
    registry = Path(os.environ.get("TMPDIR", "/tmp")) / "repro-test-registry.json"
    registry.write_text('{"flakes": [], "version": 2}')
    proc = subprocess.run(
        [*NIX, "--option", "flake-registry", str(registry), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def random_tree(root: Path, rng: random.Random, depth: int = 0) -> None:
    root.mkdir()
    names = ["a", "B", "_x", ".hidden", "über", "日本", "sp ace", "10", "9", "a.b", "a-b"]
    for name in rng.sample(names, rng.randint(0, 6)):
        kind = rng.choice(
            ["file", "exec", "empty", "link", "dir"]
            if depth < 3
            else ["file", "exec", "empty", "link"]
        )
        p = root / name
        if kind == "dir":
            random_tree(p, rng, depth + 1)
        elif kind == "link":
            p.symlink_to(rng.choice(["a", "../x", "/nix/store/nothing", "日本"]))
        else:
            p.write_bytes(b"" if kind == "empty" else os.urandom(rng.randint(1, 300)))
            p.chmod(rng.choice([0o755, 0o700]) if kind == "exec" else rng.choice([0o644, 0o444]))


@pytest.mark.parametrize("seed", range(12))
def test_nar_hash_matches_nix_hash_path_on_random_trees(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    random_tree(tmp_path / "t", rng)
    assert nar_hash(tmp_path / "t")["sri"] == nix("hash", "path", str(tmp_path / "t"))
    assert nar_hash(tmp_path / "t")["nix32"] == nix("hash", "path", "--base32", str(tmp_path / "t"))


def test_prefetch_prints_what_nix_prints(root: Path) -> None:
    model = root / "artifacts" / "digits-mlp.onnx"
    out = json.loads(CliRunner().invoke(cli, ["prefetch", str(model), "--json"]).stdout)
    assert out["nar"]["sri"] == nix("hash", "path", str(model))
    assert out["flat"]["sri"] == nix("hash", "file", str(model))


def make_flake(base: Path) -> Path:
    """A flake with a path input and a bash-built devShell that puts this Python on PATH."""
    flake = base / "flake"
    (flake / "dep").mkdir(parents=True)
    (flake / "dep" / "flake.nix").write_text('{ outputs = { self }: { value = "from-dep"; }; }\n')
    bindir = str(Path(sys.executable).parent)
    (flake / "flake.nix").write_text(f"""{{
  inputs.dep.url = "path:./dep";
  outputs = {{ self, dep }}: let system = "x86_64-linux"; in {{
    devShells.${{system}}.ort = derivation {{
      name = "repro-test-shell";
      inherit system;
      builder = "/bin/bash";
      args = [ "-c" "echo ok > $out" ];
      outputs = [ "out" ];
      REPRO_DEP = dep.value;
      shellHook = "export PATH={bindir}:$PATH";
    }};
  }};
}}
""")
    nix("flake", "lock", "--offline", f"path:{flake}")
    return flake


def test_local_flake_locks_reads_and_enters(tmp_path: Path) -> None:
    flake = make_flake(tmp_path)
    lock = read_flake_lock(flake / "flake.lock")
    (dep,) = lock.inputs()
    assert (dep.name, dep.type) == ("dep", "path")
    assert dep.nar_hash == nar_hash(flake / "dep")["sri"]  # Nix's narHash is ours
    meta = json.loads(nix("flake", "metadata", "--offline", "--json", f"path:{flake}"))
    assert meta["locked"]["narHash"] == nar_hash(flake)["sri"]
    out = nix(
        "develop", "--offline", f"path:{flake}#ort", "--command", "bash", "-c", "echo $REPRO_DEP"
    )
    assert out.splitlines()[-1] == "from-dep"


def test_capture_and_replay_inside_nix_develop(tmp_path: Path, root: Path) -> None:
    flake = make_flake(tmp_path)
    partial = json.loads((root / "specs" / "ort-digits.json").read_text())
    partial["artifacts"]["model"]["path"] = str(root / "artifacts" / "digits-mlp.onnx")
    partial["workload"]["scenarios"] = [
        s for s in partial["workload"]["scenarios"] if s["scenario"] == "Offline"
    ]
    partial["workload"]["modes"] = ["performance"]
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    dirs = [
        "--specs-dir",
        str(tmp_path / "specs"),
        "--lockfiles-dir",
        str(tmp_path / "locks"),
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    result = CliRunner().invoke(
        cli,
        [
            "capture",
            "--from",
            str(tmp_path / "partial.json"),
            "--env-manager",
            "nix",
            "--flake-dir",
            str(flake),
            "--no-run",
            *dirs,
        ],
    )
    assert result.exit_code == 0, result.stderr
    spec = json.loads((tmp_path / "specs" / "ort-digits.json").read_text())
    env = spec["environment"]
    assert env["manager"] == "nix"
    assert env["shell"] == "ort"
    assert env["inputs"] == [
        {"name": "dep", "type": "path", "path": "./dep", "nar_hash": nar_hash(flake / "dep")["sri"]}
    ]
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(tmp_path / "specs" / "ort-digits.json"),
            "--env",
            "nix",
            "--min-duration-ms",
            "200",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--run-id",
            "in-nix",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "complete"
    assert record["environment"]["manager"] == "nix"
    assert record["environment"]["flake"].endswith("#ort")


def test_flake_lock_differences_are_drift(tmp_path: Path, shared_fixtures: Path) -> None:
    a = read_flake_lock(shared_fixtures / "locks/nix/py-skeleton.flake.lock")
    b = read_flake_lock(shared_fixtures / "locks/nix/machine-learning-projects.flake.lock")
    changes = {(name, attr) for name, attr, _, _ in diff_locks(a, b)}
    assert ("nixpkgs", "rev") in changes
    result = CliRunner().invoke(
        cli,
        [
            "env",
            "diff",
            "--json",
            str(shared_fixtures / "locks/nix/py-skeleton.flake.lock"),
            str(shared_fixtures / "locks/nix/machine-learning-projects.flake.lock"),
        ],
    )
    assert result.exit_code == 0, result.stderr
    keys = [c["key"] for c in json.loads(result.stdout)["changes"]]
    assert "nix.nixpkgs" in keys


@pytest.mark.network
def test_reference_flake_realizes_with_network(root: Path) -> None:
    """Needs nixpkgs from GitHub: run with `pytest -m network` on a networked machine."""
    out = nix(
        "develop",
        f"path:{root / 'nix'}#ort",
        "--no-update-lock-file",
        "--command",
        "python",
        "-c",
        "import mlperf_loadgen, onnxruntime; print('ok')",
    )
    assert out.splitlines()[-1] == "ok"
