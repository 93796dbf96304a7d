"""What a replay from a package fetches from outside, said per environment manager by the
manager's own face (`EnvironmentFace.offline_need`), not by a list in the pack use case."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.artifacts.cache import ArtifactCache
from repro.environments.registry import FACES
from repro.packaging.archive import Member, PackageManifest
from repro.packaging.pack import offline_gaps
from repro.spec.io import load_spec

ROOT = Path(__file__).resolve().parents[3]


def _manifest(*roles: str) -> PackageManifest:
    return PackageManifest(
        spec="spec.json",
        spec_name="ort-digits",
        spec_id="x",
        repro_version="0",
        contents={},
        members=[
            Member(path=f"m{i}", sha256="0" * 64, size=1, role=role)
            for i, role in enumerate(("spec", *roles))
        ],
    )


def test_every_manager_that_captures_says_what_a_package_replay_needs_from_outside() -> None:
    assert {n for n, f in FACES.items() if f.can_capture} == {
        n for n, f in FACES.items() if f.offline_need is not None
    }


@pytest.mark.parametrize(
    ("env", "role", "said"),
    [
        ("venv", "wheel", "wheels"),
        ("docker", "image", "Docker image"),
        ("spack", "spack-source", "Spack environment's sources"),
    ],
)
def test_a_need_the_package_holds_is_not_said(
    env: str, role: str, said: str, tmp_path: Path
) -> None:
    spec = load_spec(ROOT / "specs" / "ort-digits.json")
    cache = ArtifactCache(tmp_path)
    _, without = offline_gaps(spec, tmp_path, _manifest(), env, cache)
    _, holding = offline_gaps(spec, tmp_path, _manifest(role), env, cache)
    assert any(said in gap for gap in without), without
    assert not any(said in gap for gap in holding), holding


def test_nix_always_says_its_inputs_and_native_needs_nothing(tmp_path: Path) -> None:
    spec = load_spec(ROOT / "specs" / "ort-digits.json")
    cache = ArtifactCache(tmp_path)
    assert any("nixpkgs" in g for g in offline_gaps(spec, tmp_path, _manifest(), "nix", cache)[1])
    assert offline_gaps(spec, tmp_path, _manifest(), "native", cache)[1] == []
