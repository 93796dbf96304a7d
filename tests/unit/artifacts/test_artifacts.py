"""The content-addressed cache and materialization from paths and recipes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from repro.artifacts.cache import ArtifactCache, default_cache_dir
from repro.artifacts.fetch import materialize
from repro.artifacts.recipes import RECIPES, get_recipe
from repro.errors import ArtifactError, SpecError
from repro.spec.models import Artifact


def _file(tmp_path: Path, content: bytes = b"weights") -> tuple[Path, str]:
    p = tmp_path / "model.bin"
    p.write_bytes(content)
    return p, hashlib.sha256(content).hexdigest()


def test_path_artifact_lands_under_its_hash(tmp_path: Path) -> None:
    _src, digest = _file(tmp_path)
    cache = ArtifactCache(tmp_path / "c")
    m = materialize(
        "model", Artifact(path="model.bin", sha256=digest), base_dir=tmp_path, cache=cache
    )
    assert m.path == cache.path_for(digest)
    assert m.path.read_bytes() == b"weights"
    assert m.origin == "path"
    again = materialize(
        "model", Artifact(path="model.bin", sha256=digest), base_dir=tmp_path, cache=cache
    )
    assert again.origin == "cache"


def test_hash_mismatch_names_artifact_and_both_digests_and_leaves_nothing(tmp_path: Path) -> None:
    _, digest = _file(tmp_path)
    wrong = "0" * 64
    cache = ArtifactCache(tmp_path / "c")
    with pytest.raises(ArtifactError) as info:
        materialize(
            "model", Artifact(path="model.bin", sha256=wrong), base_dir=tmp_path, cache=cache
        )
    assert "'model'" in info.value.message
    assert wrong in info.value.message
    assert digest in info.value.message
    assert not cache.path_for(wrong).exists()
    leftovers = list((tmp_path / "c").rglob("*"))
    assert all(p.is_dir() for p in leftovers), leftovers


def test_missing_path_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        materialize(
            "model",
            Artifact(path="nope.bin", sha256="0" * 64),
            base_dir=tmp_path,
            cache=ArtifactCache(tmp_path / "c"),
        )


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REPRO_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("REPRO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "repro"


def test_recipe_params_are_checked() -> None:
    recipe = get_recipe("sklearn-digits")
    assert recipe.resolve({"split": "train"}, where="w")["split"] == "train"
    with pytest.raises(SpecError, match=r"w\.params\.colour: unknown parameter"):
        recipe.resolve({"colour": 1}, where="w")
    with pytest.raises(SpecError, match="expected one of"):
        recipe.resolve({"split": "validation"}, where="w")
    with pytest.raises(SpecError, match="expected int"):
        get_recipe("synthetic-imagenet").resolve({"count": "many"}, where="w")
    with pytest.raises(SpecError, match="unknown recipe"):
        get_recipe("resnet-1000")


def test_small_recipe_outputs_are_deterministic_in_process(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        RECIPES["synthetic-imagenet"].generate(out, {"count": 3, "height": 32, "width": 32})
    assert a.read_bytes() == b.read_bytes()


def test_artifact_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one source"):
        Artifact(sha256="0" * 64)
    with pytest.raises(ValueError, match="url must start"):
        Artifact(url="ftp://x", sha256="0" * 64)
