"""A package's signature and what verifying a package checks: every member covered by a signed
statement, and every member's bytes what the signed spec pins.

`repro pack --sign` adds `package.intoto.json`: a DSSE envelope whose in-toto statement lists
every other member with its sha256 (the manifest, signed). Without it, a member is covered only
by the chain's own statements: the spec's attestation (the spec, its lock files, path artifacts
and flake files), a run's attestation (its files), or a pin of the signed spec (a cached
artifact named by a sha256 the spec pins, a wheel whose sha256 the pinned lock lists, the image
whose config digest is the spec's `image_id`). Whatever no signed statement covers fails
verification, named; so does a member whose bytes contradict the spec's pins, signed or not.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

from repro.attest.chain import (
    ATTESTATION,
    SPEC_ATTESTATION_SUFFIX,
    Link,
    _open_envelope,
    _read_payload,
    sign,
    verify_run,
    verify_spec,
)
from repro.digests import sha256_file
from repro.environments.pylock import lock_hashes, normalize
from repro.environments.registry import get_manager
from repro.spec.io import load_spec, spec_id
from repro.spec.models import ExperimentSpec
from repro.spec.references import paths_outside

SIGNATURE = "package.intoto.json"
PACKAGE_PREDICATE = "https://repro.dev/attestation/package/v1"


def package_statement(
    members: list[Any], *, spec: str, spec_name: str, spec_id_: str
) -> dict[str, Any]:
    """The statement a package's signature holds: every member (but the signature) and its
    sha256, the spec's path and id."""
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [
            {"name": m.path, "digest": {"sha256": m.sha256}}
            for m in sorted(members, key=lambda m: m.path)
        ],
        "predicateType": PACKAGE_PREDICATE,
        "predicate": {"spec": spec, "spec_name": spec_name, "spec_id": spec_id_},
    }


def sign_members(
    members: list[Any], manifest_fields: dict[str, str], signer: Any, out: Path
) -> None:
    """Write the package's signature envelope to `out`."""
    sign(
        package_statement(
            members,
            spec=manifest_fields["spec"],
            spec_name=manifest_fields["spec_name"],
            spec_id_=manifest_fields["spec_id"],
        ),
        signer,
        out,
    )


def verify_package(root: Path, manifest: Any, key: Any | None) -> list[Link]:
    """Every check of an unpacked package: the package's own link (coverage and pins), then
    the chain's links (the spec's, its original's, every attested run's)."""
    spec_path = root / manifest.spec
    link = Link("package", str(root))
    spec = load_spec(spec_path, check_id=False)
    signed = _signed_subjects(root, manifest, key, spec, link)
    link.problems += pin_problems(root, manifest, spec)
    link.problems += [
        f"{ref.field}: {ref.path} resolves outside the package"
        for ref in paths_outside(spec, spec_path, root)
    ]
    covered = signed if signed is not None else _chain_coverage(root, manifest, spec)
    members = [m for m in manifest.members if m.role != "signature"]
    held = sum(covered.get(m.path) == m.sha256 for m in members)
    link.verified.append(
        f"{held} of {len(members)} members covered by the package's signature"
        if signed is not None
        else f"not signed as a package: {held} of {len(members)} members covered by the "
        "chain's attestations and the spec's pins"
    )
    for m in manifest.members:
        if m.role == "signature":
            continue
        if m.path not in covered:
            link.problems.append(
                f"{m.path}: no signed statement covers it ("
                + (
                    "not in the package's signature"
                    if signed is not None
                    else "the package is not signed and no attestation names it"
                )
                + ")"
            )
        elif covered[m.path] != m.sha256:
            link.problems.append(
                f"{m.path}: sha256 {m.sha256[:16]}..., signed {covered[m.path][:16]}..."
            )
    return [link, *_chain_links(root, spec_path, spec, key, package_signed=signed is not None)]


def signer_keyids(root: Path) -> list[str]:
    """The key ids a package's signature names (as it claims them: not verified here)."""
    try:
        doc = json.loads((root / SIGNATURE).read_text())
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return []
    signatures = doc.get("signatures") if isinstance(doc, dict) else None
    return [
        s["keyid"]
        for s in signatures or []
        if isinstance(s, dict) and isinstance(s.get("keyid"), str)
    ]


def package_signature(root: Path, manifest: Any, key: Any | None) -> tuple[str, list[str]]:
    """Who signed an unpacked package and what a replay can say of it: ("unsigned", []),
    ("unchecked", []) when signed and no key is given, ("verified", []) or ("refused",
    problems) when the signature, with `key`, covers every member at its sha256."""
    if not manifest.of_role("signature"):
        return "unsigned", []
    if key is None:
        return "unchecked", []
    link = verify_package(root, manifest, key)[0]
    problems = [p for p in link.problems if "resolves outside the package" not in p]
    return ("refused", problems) if problems else ("verified", [])


def _signed_subjects(
    root: Path, manifest: Any, key: Any | None, spec: ExperimentSpec, link: Link
) -> dict[str, str] | None:
    """The members the package's signature covers (name -> sha256); None when unsigned."""
    if not manifest.of_role("signature"):
        return None
    names = [m.path for m in manifest.of_role("signature")]
    if names != [SIGNATURE]:
        link.problems.append(f"{', '.join(names)}: a package has one signature, {SIGNATURE}")
        return {}
    statement = _open_envelope(root / SIGNATURE, key, link, PACKAGE_PREDICATE)
    if statement is None:
        return {}
    predicate = statement["predicate"]
    if predicate.get("spec") != manifest.spec:
        link.problems.append(
            f"{SIGNATURE}: signs the spec {str(predicate.get('spec'))[:80]!r}, the package's is "
            f"{manifest.spec!r}"
        )
    if predicate.get("spec_id") != spec_id(spec):
        link.problems.append(
            f"{SIGNATURE}: signs spec id {str(predicate.get('spec_id'))[:12]}, the packaged "
            f"spec is {spec_id(spec)[:12]}"
        )
    out: dict[str, str] = {}
    for s in statement.get("subject") or []:
        digest = s.get("digest") if isinstance(s, dict) else None
        if isinstance(digest, dict) and isinstance(digest.get("sha256"), str):
            out[str(s.get("name"))] = digest["sha256"]
    listed = {m.path for m in manifest.members}
    for name in sorted(set(out) - listed):
        link.problems.append(f"{name}: signed but not in the package")
    return out


def _chain_coverage(root: Path, manifest: Any, spec: ExperimentSpec) -> dict[str, str]:
    """What the chain's attestations and the spec's pins cover, for an unsigned package: member
    name -> the sha256 signed for it. (The statements' signatures are checked by the links.)"""
    spec_path = root / manifest.spec
    covered: dict[str, str] = {}

    def from_statement(envelope: Path, base: Path) -> None:
        payload = _read_payload(envelope)
        if payload is None:
            return
        covered[str(_member(root, envelope))] = sha256_file(envelope)
        for s in payload.get("subject") or []:
            if not isinstance(s, dict) or not isinstance(s.get("digest"), dict):
                continue
            digest = s["digest"].get("sha256")
            name = _member(root, base / str(s.get("name")))
            if isinstance(digest, str) and name is not None:
                covered[name] = digest

    envelope = spec_path.with_name(spec_path.name + SPEC_ATTESTATION_SUFFIX)
    if envelope.is_file():
        from_statement(envelope, spec_path.parent)
    for att in sorted(root.rglob(ATTESTATION)):
        if (att.parent / "run.json").is_file():
            from_statement(att, att.parent)
    pinned = {a.sha256 for a in spec.artifacts.values()}
    wheels = _lock_of(root, spec_path, spec)
    image = _pinned_image(spec)
    for m in manifest.members:
        if (
            (m.role == "cached-artifact" and m.sha256 in pinned)
            or (m.role == "wheel" and m.sha256 in wheels.get(_wheel_project(m.path), set()))
            # NOTE: a spec that pins no image covers none (an archive that is not a `docker
            # save` has no id either: None == None covered any bytes)
            or (m.role == "image" and image is not None and _image_id(root / m.path) == image)
        ):
            covered.setdefault(m.path, m.sha256)
    return covered


def _member(root: Path, path: Path) -> str | None:
    """A path's member name in the package (None outside it)."""
    folded = Path(os.path.normpath(path))
    if not folded.is_relative_to(root):
        return None
    return PurePosixPath(folded.relative_to(root)).as_posix()


def pin_problems(root: Path, manifest: Any, spec: ExperimentSpec) -> list[str]:
    """Members whose bytes contradict what the spec pins: a second spec, an artifact or lock
    the spec does not pin, a wheel the pinned lock does not list with its sha256, an image
    that is not the pinned one. Signed or not, such a package is not the experiment."""

    env = spec.environment
    artifacts = {a.sha256 for a in spec.artifacts.values()}
    locks = {lock.sha256 for lock in get_manager(env.manager).locks(env).values()}
    if env.spack is not None:
        locks |= {
            lock.sha256 for lock in (env.spack.spack_yaml, env.spack.spack_lock) if lock is not None
        }
    wheels = _lock_of(root, root / manifest.spec, spec)
    out = []
    for m in manifest.members:
        if m.role == "spec" and m.path != manifest.spec:
            out.append(f"{m.path}: a second spec, which no attestation covers")
        elif m.role in ("cached-artifact", "artifact") and m.sha256 not in artifacts:
            out.append(f"{m.path}: an artifact the spec does not pin (sha256 {m.sha256[:12]})")
        elif m.role == "lock" and m.sha256 not in locks:
            out.append(f"{m.path}: a lock file the spec does not pin (sha256 {m.sha256[:12]})")
        elif m.role == "wheel":
            project = _wheel_project(m.path)
            if project not in wheels:
                out.append(f"{m.path}: a wheel of {project!r}, which the spec's lock does not pin")
            elif wheels[project] and m.sha256 not in wheels[project]:
                out.append(
                    f"{m.path}: sha256 {m.sha256[:16]}... is not a hash the spec's lock lists "
                    f"for {project}"
                )
        elif m.role == "image":
            got, want = _image_id(root / m.path), _pinned_image(spec)
            if want is None:
                out.append(f"{m.path}: an image, but the spec pins none ($.environment.image_id)")
            elif got != want:
                out.append(
                    f"{m.path}: image {str(got)[:19]}, the spec pins {want[:19]} "
                    "($.environment.image_id)"
                )
    return out


def _lock_of(root: Path, spec_path: Path, spec: ExperimentSpec) -> dict[str, set[str]]:
    """project -> sha256s of the spec's Python lock as packed (only when it is the pinned one)."""
    lock = spec.environment.python_lock
    if lock is None:
        return {}
    path = Path(os.path.normpath(spec_path.parent / lock.path))
    if not path.is_relative_to(root) or not path.is_file() or sha256_file(path) != lock.sha256:
        return {}
    return lock_hashes(path.read_text(errors="replace"))


def _wheel_project(member: str) -> str:
    """The normalized project name of a wheel file (`name-version-...whl`)."""
    return normalize(PurePosixPath(member).name.split("-", 1)[0])


def _pinned_image(spec: ExperimentSpec) -> str | None:
    value = getattr(spec.environment, "image_id", None)
    return value if isinstance(value, str) else None


def _image_id(archive: Path) -> str | None:
    """The image id (`sha256:<config digest>`) of a `docker save` archive, checked against the
    config's bytes; None when the archive does not hold one image whose config is that digest."""
    try:
        with tarfile.open(archive, mode="r:") as tar:
            manifest = tar.extractfile("manifest.json")
            entries = json.loads(manifest.read()) if manifest is not None else None
            if not (isinstance(entries, list) and len(entries) == 1):
                return None
            config = entries[0].get("Config") if isinstance(entries[0], dict) else None
            if not isinstance(config, str):
                return None
            blob = tar.extractfile(config)
            if blob is None:
                return None
            import hashlib

            digest = hashlib.sha256(blob.read()).hexdigest()
    except (OSError, tarfile.TarError, KeyError, ValueError):
        return None
    named = PurePosixPath(config).name.removesuffix(".json")
    return f"sha256:{digest}" if named == digest else None


def _chain_links(
    root: Path, spec_path: Path, spec: ExperimentSpec, key: Any | None, *, package_signed: bool
) -> list[Link]:
    """The spec's link, its original run's (which must have run this spec), every other run
    with an attestation. In a signed package the spec and its original need no attestation of
    their own (the signature covers them); one they have is checked."""
    links: list[Link] = []
    envelope = spec_path.with_name(spec_path.name + SPEC_ATTESTATION_SUFFIX)
    if envelope.is_file():
        links += verify_spec(spec_path, key)
    elif not package_signed:
        links.append(Link("spec", str(spec_path), [_UNSIGNED]))
    checked: set[Path] = set()
    if spec.original is not None:
        original = Path(os.path.normpath(spec_path.parent / spec.original.path))
        inside = original.is_relative_to(root) and (original / "run.json").is_file()
        if not inside:
            links.append(Link("run", str(original), ["the spec's original is not in the package"]))
        elif (original / ATTESTATION).is_file():
            links += _original_link(original, spec, key)
        elif not package_signed:
            links.append(
                Link("run", str(original), [_UNSIGNED.replace("its spec", "its original")])
            )
        checked.add(original)
    for att in sorted(root.rglob(ATTESTATION)):
        folder = att.parent
        if folder not in checked and (folder / "run.json").is_file():
            links += verify_run(folder, key, follow_spec=False)
    return links


_UNSIGNED = (
    "the package is not signed and its spec has no attestation: pack it with --sign, or "
    "`repro attest` the spec and its original before packing"
)


def _original_link(original: Path, spec: ExperimentSpec, key: Any | None) -> list[Link]:
    """The original run's link; its signed statement must say it ran the packaged spec."""
    run_links = verify_run(original, key, follow_spec=False)
    payload = _read_payload(original / ATTESTATION) or {}
    build = payload.get("predicate", {}).get("buildDefinition", {})
    ran = build.get("externalParameters", {}).get("spec_id") if isinstance(build, dict) else None
    if ran and ran != spec_id(spec):
        run_links[-1].problems.append(
            f"the original ran spec {str(ran)[:12]}, the packaged spec is {spec_id(spec)[:12]}"
        )
    return run_links
