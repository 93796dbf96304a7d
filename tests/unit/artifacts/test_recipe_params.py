"""Recipe parameters have ranges: a value out of range, of the wrong type or unknown is a
SpecError naming `$.artifacts.<name>.params.<param>`, before anything is generated."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.artifacts.recipes import MAX_OUTPUT_BYTES, RECIPES, Param, Recipe
from repro.cli import cli
from repro.errors import SpecError
from tests.helpers import portable_spec

WHERE = "$.artifacts.x"


def _numeric(recipe: Recipe) -> dict[str, Param]:
    return {
        name: p
        for name, p in recipe.params.items()
        if isinstance(p.default, int | float) and not isinstance(p.default, bool)
    }


@pytest.mark.parametrize("recipe", RECIPES.values(), ids=lambda r: r.name)
def test_every_numeric_parameter_has_a_range_around_its_default(recipe: Recipe) -> None:
    assert _numeric(recipe)
    for name, p in _numeric(recipe).items():
        assert p.min is not None, name
        assert p.max is not None, name
        assert p.min <= p.default <= p.max, name
        assert p.description, name


@pytest.mark.parametrize(
    ("recipe", "name", "value", "accepted"),
    [
        ("synthetic-imagenet", "count", 10**12, "int in [1, 10000000]"),
        ("synthetic-imagenet", "count", True, "int in [1, 10000000]"),
        ("synthetic-imagenet", "count", 64.0, "int in [1, 10000000]"),
        ("synthetic-imagenet", "height", 0, "int in [1, 4096]"),
        ("synthetic-imagenet", "seed", 2**64, "int in [0, 18446744073709551615]"),
        ("resnet50-v1.5", "base_width", 129, "int in [1, 128]"),
        ("resnet50-v1.5", "num_classes", 0, "int in [1, 16384]"),
        ("resnet50-v1.5", "opset", 18, "int in [7, 17]"),
        ("resnet50-v1.5", "opset", "13", "int in [7, 17]"),
        ("sklearn-digits", "seed", 2**32, "int in [0, 4294967295]"),
        ("sklearn-digits", "test_fraction", float("nan"), "float in [0.01, 0.99]"),
        ("sklearn-digits", "test_fraction", 1, "float in [0.01, 0.99]"),
        ("sklearn-digits", "test_fraction", 10**400, "float in [0.01, 0.99]"),
        ("digits-mlp", "hidden", 100_000, "int in [1, 1024]"),
        ("digits-mlp", "max_iter", 0, "int in [1, 2000]"),
    ],
)
def test_a_bad_value_names_its_path_and_range(
    recipe: str, name: str, value: Any, accepted: str
) -> None:
    expected = f"{WHERE}.params.{name}: expected {accepted}, got "
    with pytest.raises(SpecError, match=re.escape(expected)):
        RECIPES[recipe].resolve({name: value}, where=WHERE)


@pytest.mark.parametrize(
    ("recipe", "name"),
    [(r.name, name) for r in RECIPES.values() for name in _numeric(r)],
)
def test_both_ends_of_a_range_are_accepted_and_no_further(recipe: str, name: str) -> None:
    r = RECIPES[recipe]
    p = r.params[name]
    assert p.min is not None
    assert p.max is not None
    # The other numbers at their smallest, so that no combined size limit interferes.
    smallest = {other: q.min for other, q in _numeric(r).items() if q.min is not None}
    step = 1 if isinstance(p.default, int) else 0.001
    for edge in (p.min, p.max):
        assert r.resolve({**smallest, name: edge}, where=WHERE)[name] == edge
    for beyond in (p.min - step, p.max + step):
        with pytest.raises(SpecError, match=re.escape(f"{WHERE}.params.{name}: expected")):
            r.resolve({**smallest, name: beyond}, where=WHERE)


def test_a_generated_file_stays_within_1_gib() -> None:
    recipe = RECIPES["synthetic-imagenet"]
    image_bytes = 3 * 224 * 224 * 4
    fits = MAX_OUTPUT_BYTES // image_bytes
    assert recipe.check({"count": fits}, where=WHERE) == []
    [(path, message)] = recipe.check({"count": fits + 1}, where=WHERE)
    assert path == f"{WHERE}.params"
    assert "at most 1,024 MiB" in message


def test_check_reports_every_bad_parameter_at_its_own_path() -> None:
    problems = RECIPES["sklearn-digits"].check({"colour": 1, "seed": -1}, where=WHERE)
    assert [path for path, _ in problems] == [f"{WHERE}.params.colour", f"{WHERE}.params.seed"]
    assert "expected one of ['seed', 'split', 'test_fraction']" in problems[0][1]


def test_fetch_refuses_a_huge_recipe_before_generating_anything(
    tmp_path: Path, root: Path, cache_dir: Path
) -> None:
    spec = portable_spec(root, "ort-resnet50")
    spec["artifacts"]["dataset"]["params"]["count"] = 10**12
    target = tmp_path / "spec.json"
    target.write_text(json.dumps(spec))
    result = CliRunner().invoke(cli, ["fetch", "--cache-dir", str(cache_dir), str(target)])
    assert result.exit_code == 2, result.output
    assert "$.artifacts.dataset.params.count: expected int in [1, 10000000]" in result.stderr
    assert not cache_dir.exists() or not any(cache_dir.rglob("*.npz"))
