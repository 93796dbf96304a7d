"""Packages at their edges: only the flake travels (never credentials), every member is covered
by a signed statement, a packaged spec reads nothing outside its package, and a private key
others can read is not used."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import cli
from repro.digests import sha256_file
from repro.packaging.archive import Member, PackageManifest, Source, extract, write_package

SECRET = "ghp_0123456789abcdefSECRET"


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _project(root: Path, where: Path) -> Path:
    """The repository's layout for ort-digits (relative paths, as pack needs), copied."""
    for rel in ("specs/ort-digits.json", "artifacts/digits-mlp.onnx"):
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, where / rel)
    for rel in ("lockfiles/ort-digits", "nix", "results/ort-digits/original"):
        shutil.copytree(root / rel, where / rel)
    return where


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("keys")
    code, _, err = _cli("keygen", "-o", str(folder))
    assert code == 0, err
    return str(folder / "repro-signing.key"), str(folder / "repro-signing.pub")


def _nix_members(package: Path, tmp: Path) -> set[str]:
    manifest = extract(package, tmp / "unpacked")
    return {m.path for m in manifest.members if m.path.startswith("nix/")}


def test_a_plain_flake_folder_packs_only_the_flake_and_never_credentials(
    root: Path, tmp_path: Path
) -> None:
    project = _project(root, tmp_path / "p")
    nix = project / "nix"
    (nix / ".netrc").write_text(f"machine github.com login x password {SECRET}\n")
    (nix / ".env").write_text("AWS_SECRET_ACCESS_KEY=Y\n")
    (nix / ".aws").mkdir()
    (nix / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = Z\n")
    (nix / "notes.txt").write_text("my notes\n")
    (nix / "pkgs").mkdir()
    (nix / "pkgs" / "extra.nix").write_text("{ }: { }\n")
    (nix / "flake.nix").write_text(
        "{\n  # ./notes.txt is named in a comment only\n"
        "  outputs = { self }: { overlays.default = import ./pkgs/extra.nix; };\n}\n"
    )
    package = tmp_path / "x.repro.tar"
    code, _out, err = _cli("pack", str(project / "specs/ort-digits.json"), "-o", str(package))
    assert code == 0, err
    assert _nix_members(package, tmp_path) == {
        "nix/flake.nix",
        "nix/flake.lock",
        "nix/pkgs/extra.nix",
    }
    assert SECRET.encode() not in package.read_bytes()
    assert b"AWS_SECRET_ACCESS_KEY" not in package.read_bytes()
    for name in (".netrc", ".env", ".aws/credentials"):
        assert f"nix/{name} (" in err, err
    assert "credentials" in err
    assert "nix/notes.txt (not flake.nix, flake.lock or a file flake.nix names)" in err


def test_a_flake_file_that_is_a_link_is_said_not_silently_left_out(
    root: Path, tmp_path: Path
) -> None:
    """Pack left out a flake file that is a symbolic link without saying so."""
    project = _project(root, tmp_path / "p")
    nix = project / "nix"
    (project / "shared-pkgs").mkdir()
    (project / "shared-pkgs" / "extra.nix").write_text("{ }: { }\n")
    (nix / "pkgs").mkdir()
    (nix / "pkgs" / "extra.nix").symlink_to(project / "shared-pkgs" / "extra.nix")
    (nix / "flake.nix").write_text(
        "{\n  outputs = { self }: { overlays.default = import ./pkgs/extra.nix; };\n}\n"
    )
    package = tmp_path / "x.repro.tar"
    code, _out, err = _cli("pack", str(project / "specs/ort-digits.json"), "-o", str(package))
    assert code == 0, err
    assert "nix/pkgs/extra.nix" not in _nix_members(package, tmp_path)
    assert "nix/pkgs/extra.nix (a symbolic link (to " in err
    assert "a replay from it lacks this file" in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_flake_packs_what_git_tracks_and_its_attestation_covers_the_same(
    root: Path, tmp_path: Path, keys: tuple[str, str]
) -> None:
    project = _project(root, tmp_path / "p")
    nix = project / "nix"
    (nix / ".env").write_text(f"TOKEN={SECRET}\n")
    (nix / "untracked.txt").write_text("scratch\n")
    git = ["git", "-C", str(project)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "nix/flake.nix", "nix/flake.lock", "nix/README.md"], check=True)
    subprocess.run([*git, "add", "-f", "nix/.env"], check=True)  # tracked, still a secret
    spec = project / "specs/ort-digits.json"
    key, pub = keys
    code, _, err = _cli(
        "attest", str(spec), str(project / "results/ort-digits/original"), "--key", key
    )
    assert code == 0, err
    package = tmp_path / "g.repro.tar"
    code, _, err = _cli("pack", str(spec), "-o", str(package))
    assert code == 0, err
    assert _nix_members(package, tmp_path) == {
        "nix/flake.nix",
        "nix/flake.lock",
        "nix/README.md",
    }
    assert SECRET.encode() not in package.read_bytes()
    assert "nix/.env (looks like credentials)" in err
    assert "nix/untracked.txt (not tracked by git" in err
    code, out, err = _cli("verify", str(package), "--key", pub)
    assert code == 0, out + err


def test_credentials_left_in_the_original_never_travel_and_the_package_still_verifies(
    root: Path, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """The original's folder is packed whole but for what looks like credentials (a `.env`
    beside the logs was shipped verbatim); its attestation covers what travels."""
    project = _project(root, tmp_path / "p")
    original = project / "results/ort-digits/original"
    (original / ".env").write_text(f"TOKEN={SECRET}\n")
    (original / "Offline" / ".netrc").write_text(f"machine x password {SECRET}\n")
    spec = project / "specs/ort-digits.json"
    key, pub = keys
    code, _, err = _cli("attest", str(spec), str(original), "--key", key)
    assert code == 0, err
    package = tmp_path / "o.repro.tar"
    code, _, err = _cli("pack", str(spec), "-o", str(package))
    assert code == 0, err
    assert SECRET.encode() not in package.read_bytes()
    assert f"not packed: {original / '.env'} (looks like credentials)" in err
    assert f"not packed: {original / 'Offline/.netrc'} (looks like credentials)" in err
    members = {m.path for m in extract(package, tmp_path / "unpacked").members}
    assert "results/ort-digits/original/run.json" in members
    assert not any(m.endswith((".env", ".netrc")) for m in members)
    code, out, err = _cli("verify", str(package), "--key", pub)
    assert code == 0, out + err


# --- every member covered by a signed statement ---------------------------------------------


def _forge(package: Path, tmp: Path, add: Callable[[Path, PackageManifest], None]) -> Path:
    """The package with what `add` puts into its unpacked folder and manifest, every digest
    in the (unsigned) manifest made to match: what an attacker can always do."""
    folder = tmp / f"forge-{len(list(tmp.iterdir()))}"
    manifest = extract(package, folder)
    add(folder, manifest)
    for m in manifest.members:
        m.size, m.sha256 = (folder / m.path).stat().st_size, sha256_file(folder / m.path)
    out = folder.with_suffix(".repro.tar")
    write_package(
        out, [Source(m.path, m.role, folder / m.path) for m in manifest.members], manifest
    )
    return out


def _adding(path: str, role: str, data: bytes) -> Callable[[Path, PackageManifest], None]:
    def add(folder: Path, manifest: PackageManifest) -> None:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
        manifest.members.append(
            Member(path=path, role=role, size=len(data), sha256="0" * 64)  # type: ignore[arg-type]
        )

    return add


def _docker_save(tmp: Path) -> bytes:
    """A tar shaped like `docker save`'s: manifest.json naming a config by its digest."""
    import io
    import tarfile

    config = b'{"architecture": "amd64"}'
    digest = hashlib.sha256(config).hexdigest()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (
            ("manifest.json", json.dumps([{"Config": f"{digest}.json", "Layers": []}]).encode()),
            (f"{digest}.json", config),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


LOADGEN_WHEEL = "wheels/mlcommons_loadgen-6.0.17-cp311-cp311-manylinux_2_27_x86_64.whl"
ADDED = {
    "an unpinned wheel": ("wheels/evil-1.0-py3-none-any.whl", "wheel", b"PK evil"),
    "a wheel the signed lock contradicts": (LOADGEN_WHEEL, "wheel", b"PK not loadgen"),
    "an image": ("image/image.tar", "image", None),
    "an image that is not a docker save": ("image/evil.tar", "image", b"not a tar"),
    "a fake run": ("results/ort-digits/fake/run.json", "result", b'{"schema": "x"}'),
    "a fake original log": ("results/ort-digits/original/extra.txt", "original", b"x"),
}


@pytest.fixture(scope="module")
def packages(
    tmp_path_factory: pytest.TempPathFactory, keys: tuple[str, str], shared_cache: Path
) -> dict[str, Path]:
    """ort-digits packed twice: signed (--sign), and unsigned with its spec and original
    attested."""
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("packages")
    key, _ = keys
    signed_project = _project(root, tmp / "s")
    signed = tmp / "signed.repro.tar"
    code, _, err = _cli(
        "pack",
        str(signed_project / "specs/ort-digits.json"),
        "-o",
        str(signed),
        "--with-artifacts",
        "--key",
        key,
        "--cache-dir",
        str(shared_cache),
    )
    assert code == 0, err
    project = _project(root, tmp / "u")
    spec = project / "specs/ort-digits.json"
    code, _, err = _cli(
        "attest", str(spec), str(project / "results/ort-digits/original"), "--key", key
    )
    assert code == 0, err
    unsigned = tmp / "unsigned.repro.tar"
    code, _, err = _cli(
        "pack", str(spec), "-o", str(unsigned), "--with-artifacts", "--cache-dir", str(shared_cache)
    )
    assert code == 0, err
    return {"signed": signed, "unsigned": unsigned}


@pytest.mark.parametrize("kind", ["signed", "unsigned"])
def test_an_untouched_package_verifies(
    packages: dict[str, Path], keys: tuple[str, str], kind: str
) -> None:
    code, out, err = _cli("verify", str(packages[kind]), "--key", keys[1])
    assert code == 0, out + err
    if kind == "signed":
        assert "package.intoto.json" in {
            m.path for m in extract(packages[kind], packages[kind].parent / "sig").members
        }


@pytest.mark.parametrize("kind", ["signed", "unsigned"])
@pytest.mark.parametrize("what", sorted(ADDED))
def test_a_member_no_signed_statement_covers_fails_verification_named(
    packages: dict[str, Path], keys: tuple[str, str], tmp_path: Path, kind: str, what: str
) -> None:
    path, role, data = ADDED[what]
    forged = _forge(packages[kind], tmp_path, _adding(path, role, data or _docker_save(tmp_path)))
    code, out, err = _cli("verify", str(forged), "--key", keys[1], "--json")
    assert code == 1, out + err
    problems = [p for link in json.loads(out)["links"] for p in link["problems"]]
    assert any(p.startswith(f"{path}: no signed statement covers it") for p in problems), problems


def test_a_signed_package_whose_member_was_replaced_fails_verification(
    packages: dict[str, Path], keys: tuple[str, str], tmp_path: Path
) -> None:
    def edit(folder: Path, manifest: PackageManifest) -> None:
        log = next(m for m in manifest.members if m.path.endswith("mlperf_log_summary.txt"))
        (folder / log.path).write_bytes((folder / log.path).read_bytes() + b"\n")

    forged = _forge(packages["signed"], tmp_path, edit)
    code, out, _err = _cli("verify", str(forged), "--key", keys[1])
    assert code == 1, out
    assert "mlperf_log_summary.txt: sha256" in out
    assert "signed" in out


def test_verify_without_a_key_never_names_its_temporary_folder(
    packages: dict[str, Path],
) -> None:
    code, out, err = _cli("verify", str(packages["unsigned"]))
    assert code == 1, out + err
    assert "repro-verify-" not in out + err
    assert f"{packages['unsigned']}:" in out


# --- a packaged spec reads nothing outside its package --------------------------------------


def test_a_replay_of_a_package_never_reads_outside_it(
    packages: dict[str, Path], tmp_path: Path, shared_cache: Path
) -> None:
    from repro.spec.io import dump_spec, load_spec, with_id

    host_file = Path("/etc/passwd")

    def escape(folder: Path, manifest: PackageManifest) -> None:
        spec_path = folder / manifest.spec
        spec = load_spec(spec_path)
        model = spec.artifacts["model"].model_copy(
            update={"path": "../" * 12 + "etc/passwd", "sha256": sha256_file(host_file)}
        )
        spec = spec.model_copy(update={"artifacts": {**spec.artifacts, "model": model}})
        spec_path.write_text(dump_spec(with_id(spec)))

    forged = _forge(packages["unsigned"], tmp_path, escape)
    results = tmp_path / "results"
    code, out, err = _cli(
        "replay",
        str(forged),
        "--env",
        "native",
        "-s",
        "Offline",
        "-m",
        "accuracy",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert code == 2, out + err
    assert "$.artifacts.model.path" in err
    assert "outside the package" in err
    assert not results.exists()


def test_a_home_path_is_refused_in_every_spec(root: Path, tmp_path: Path) -> None:
    spec = json.loads((root / "specs/ort-digits.json").read_text())
    spec["artifacts"]["model"]["path"] = "~/.bashrc"
    path = tmp_path / "home.json"
    path.write_text(json.dumps(spec))
    code, out, err = _cli("validate", str(path))
    assert code == 2, out + err
    assert "$.artifacts.model.path" in out + err
    assert "'~'" in out + err


# --- the signing key ------------------------------------------------------------------------


def test_a_private_key_others_can_read_is_not_used(
    root: Path, tmp_path: Path, keys: tuple[str, str]
) -> None:
    key = tmp_path / "open.key"
    shutil.copyfile(keys[0], key)
    key.chmod(0o644)
    project = _project(root, tmp_path / "p")
    code, out, err = _cli("attest", str(project / "specs/ort-digits.json"), "--key", str(key))
    assert code == 2, out + err
    assert "0644 are too open" in err
    assert f"chmod 600 {key}" in err
    assert not (project / "specs/ort-digits.json.intoto.json").exists()
    code, out, err = _cli(
        "pack",
        str(project / "specs/ort-digits.json"),
        "-o",
        str(tmp_path / "x.repro.tar"),
        "--key",
        str(key),
    )
    assert code == 2, out + err
    assert not (tmp_path / "x.repro.tar").exists()


def test_validate_of_a_spec_glob_skips_the_attestations_beside_the_specs(
    root: Path, tmp_path: Path, keys: tuple[str, str]
) -> None:
    project = _project(root, tmp_path / "p")
    spec = project / "specs/ort-digits.json"
    code, _, err = _cli("attest", str(spec), "--key", keys[0])
    assert code == 0, err
    code, out, err = _cli("validate", *sorted(str(p) for p in (project / "specs").glob("*.json")))
    assert code == 0, out + err
    assert "ort-digits.json.intoto.json: skipped: an attestation" in err
    assert "ort-digits.json: ok" in out


# --- a replay runs the package, not an edited copy of it ------------------------------------


def _replay_package(package: Path, tmp: Path, *extra: str) -> tuple[int, str, str]:
    return _cli(
        "replay",
        str(package),
        "--env",
        "native",
        "-s",
        "Offline",
        "-m",
        "accuracy",
        "--results-dir",
        str(tmp / "results"),
        "--cache-dir",
        str(tmp / "cache"),
        *extra,
    )


def _run_spec_ids(results: Path) -> set[str]:
    return {
        json.loads(p.read_text())["spec_id"]
        for p in results.glob("ort-digits/*/run.json")
        if p.parent.name != "original"
    }


def test_an_edited_copy_of_a_package_in_the_cache_is_not_replayed(
    packages: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cached copy's spec edited and its manifest made to match: the next replay of the
    unchanged package ran the edited spec without a word. It must run the package's."""
    from repro.spec.io import dump_spec, load_spec, spec_id, with_id

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    package = packages["unsigned"]
    code, out, err = _replay_package(package, tmp_path)
    assert code == 0, out + err
    [packed_id] = _run_spec_ids(tmp_path / "results")
    [copy] = (tmp_path / "cache" / "packages").glob("[0-9a-f]*")
    manifest = PackageManifest.model_validate_json((copy / "manifest.json").read_text())
    spec_path = copy / manifest.spec
    spec = load_spec(spec_path)
    edited = with_id(spec.model_copy(update={"description": "edited in the cache"}))
    spec_path.write_text(dump_spec(edited))
    for m in manifest.members:
        if m.path == manifest.spec:
            m.size, m.sha256 = spec_path.stat().st_size, sha256_file(spec_path)
    (copy / "manifest.json").write_text(manifest.model_dump_json())
    assert spec_id(edited) != packed_id

    code, out, err = _replay_package(package, tmp_path)
    assert code == 0, out + err
    assert _run_spec_ids(tmp_path / "results") == {packed_id}
    assert load_spec(spec_path).description != "edited in the cache"  # unpacked again


def test_an_extra_file_in_the_cached_copy_makes_it_unpacked_again(
    packages: dict[str, Path], tmp_path: Path
) -> None:
    from repro.artifacts.cache import ArtifactCache
    from repro.packaging.pack import open_package

    cache = ArtifactCache(tmp_path / "cache")
    root, _ = open_package(packages["unsigned"], cache)
    (root / "planted.py").write_text("import os\n")
    again, _ = open_package(packages["unsigned"], cache)
    assert again == root
    assert not (root / "planted.py").exists()


def test_a_signed_package_replays_only_with_a_key_that_verifies_it(
    packages: dict[str, Path],
    keys: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, out, err = _replay_package(packages["signed"], tmp_path)
    assert code == 0, out + err
    assert "signed by key" in err
    assert "not checked here: give --key PUB" in err

    code, out, err = _replay_package(packages["signed"], tmp_path, "--key", keys[1])
    assert code == 0, out + err
    assert "signature verified" in err

    code, _, err = _cli("keygen", "-o", str(tmp_path / "other"))
    assert code == 0, err
    other = str(tmp_path / "other" / "repro-signing.pub")
    code, out, err = _replay_package(packages["signed"], tmp_path / "b", "--key", other)
    assert code == 3, out + err
    assert "the signature does not hold with key" in err
    assert not (tmp_path / "b" / "results").exists()

    code, out, err = _replay_package(packages["unsigned"], tmp_path)
    assert code == 0, out + err
    assert "not signed: its files match its own manifest" in err
    # --key asks for a signature: an unsigned package has none to check, and does not run
    code, out, err = _replay_package(packages["unsigned"], tmp_path / "c", "--key", keys[1])
    assert code == 3, out + err
    assert "not signed, and --key asks for its signature to be checked" in err


def test_a_colleague_replays_a_package_and_reports_as_the_readme_says(
    packages: dict[str, Path],
    keys: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After `repro replay PACKAGE`, the README's `repro report --compare results/<name>/`
    failed (exit 2, "not a repro run ..."): the original was only in the artifact cache."""
    colleague = tmp_path / "colleague"
    colleague.mkdir()
    monkeypatch.chdir(colleague)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    package = str(packages["signed"])
    code, out, err = _cli("verify", package, "--key", keys[1])
    assert code == 0, out + err
    code, out, err = _cli(
        "replay",
        package,
        "--key",
        keys[1],
        "--env",
        "native",
        "-s",
        "Offline",
        "-m",
        "accuracy",
        "--cache-dir",
        "cache",
    )
    assert code == 0, out + err
    assert (colleague / "results" / "ort-digits" / "original" / "run.json").is_file()
    code, out, err = _cli("report", "--compare", "results/ort-digits/")
    assert code == 0, out + err
    assert out.startswith("REPRODUCED")
    assert (colleague / "reports" / "ort-digits" / "report.md").is_file()
