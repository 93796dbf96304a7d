"""A replay of a package: unpacked and checked under the artifact cache (every member, its
signature), what its contents give the environment, and its original placed where the replay's
results land."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from repro.artifacts.cache import ArtifactCache
from repro.errors import ArtifactError, RunError
from repro.replay.settings import Reporter


def unpacked(
    package: Path, env_name: str, cache: ArtifactCache, key_path: Path | None, *, report: Reporter
) -> tuple[Path, dict[str, Any], bool]:
    """A package unpacked (checked) under the cache: its spec, the environment options its
    contents give (wheels to build the venv from, an image to load), and whether its original
    is in it."""
    from repro.packaging.pack import check_inside, offline_gaps, open_package
    from repro.spec.io import load_spec

    root, manifest = open_package(package, cache)
    spec_path = root / manifest.spec
    packed = check_inside(load_spec(spec_path), spec_path, root, package)
    report(f"package {package}: {len(manifest.members)} files checked, unpacked in {root}")
    _check_signature(package, root, manifest, key_path, report)
    certain, maybe = offline_gaps(load_spec(spec_path), root, manifest, env_name, cache)
    if certain:
        raise RunError(
            f"{package}: the package lacks what this replay needs: " + "; ".join(certain),
            hint="pack it again with --with-artifacts, or replay where the network is reachable",
        )
    for gap in maybe:
        report(f"not in the package: {gap}")
    options: dict[str, Any] = {}
    if manifest.of_role("wheel"):
        options["wheels"] = str(root / "wheels")
    if manifest.of_role("image"):
        options["image_archive"] = str(root / "image" / "image.tar")
    original = load_spec(spec_path).original
    if original is not None and not packed:
        report("the package holds no original (packed without it): nothing to compare with here")
    if manifest.of_role("spack-source"):
        options["spack_mirror"] = str(root / "spack-mirror")
    return spec_path, options, packed


def _check_signature(
    package: Path, root: Path, manifest: Any, key_path: Path | None, report: Reporter
) -> None:
    """A signed package's signature, checked with `key_path` (or this user's own public
    key when the package names it as its signer): a replay runs only what the signer signed;
    without a key it says plainly that the signature was not checked."""
    from repro.attest.keys import PUBLIC, default_key_dir, load_public
    from repro.attest.package import package_signature, signer_keyids

    signers = signer_keyids(root)
    own = default_key_dir() / PUBLIC
    key = None
    if key_path is not None:
        key = load_public(key_path)
    elif signers and own.is_file():
        mine = load_public(own)
        key = mine if mine.keyid in signers else None
    verdict, problems = package_signature(root, manifest, key)
    named = ", ".join(k[:16] for k in signers) or "none named"
    used = key.keyid[:16] if key is not None else ""
    if verdict == "unsigned" and key_path is not None:
        raise ArtifactError(
            f"{package}: not signed, and --key asks for its signature to be checked",
            hint="get the signed package from its source, or replay without --key",
        )
    if verdict == "unsigned":
        report(
            f"package {package}: not signed: its files match its own manifest, and nothing says "
            "who made it (`repro pack --key` signs one)"
        )
    elif verdict == "unchecked":
        report(
            f"package {package}: signed by key {named}, not checked here: give --key PUB "
            "(the signer's repro-signing.pub), or run `repro verify PACKAGE --key PUB`"
        )
    elif verdict == "verified":
        report(f"package {package}: signature verified (key {used}), every file covered")
    else:
        raise ArtifactError(
            f"{package}: the signature does not hold with key {used} (signed by "
            f"{named}): " + "; ".join(problems[:3]),
            hint="get the package again from its source, or give the signer's key with --key",
        )


def original_beside(spec_path: Path, results_dir: Path, *, report: Reporter) -> None:
    """The package's original, copied to results/<name>/original/ where the replay lands, so
    that `repro report --compare results/<name>/` finds both (as a fresh clone's does); an
    original already there is kept, and said when it is another one."""
    from repro.runs import layout
    from repro.runs.store import digest_files
    from repro.spec.io import load_spec

    spec = load_spec(spec_path)
    if spec.original is None:
        return
    source = (spec_path.parent / spec.original.path).resolve()
    target = layout.original_of(layout.spec_results(results_dir, spec.name))
    if target.exists():
        if digest_files(target) != digest_files(source):
            report(
                f"{target} holds another original than the package's: compare with the "
                f"package's as `repro report --compare {source} RUN`"
            )
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix=".original.", dir=target.parent))  # this replay's own
    try:
        shutil.copytree(source, copy, dirs_exist_ok=True)
        try:
            copy.rename(target)
        except OSError:  # another replay of the package put it there first: the same bytes
            if not target.is_dir():
                raise
            return
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    report(f"the package's original: {target} (`repro report --compare {target.parent}/`)")
