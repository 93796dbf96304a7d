"""Deterministic artifact generators, registered by name, whose output is pinned by sha256.

The same parameters give the same bytes on any machine with the pinned package versions, with
one exception said out loud: `digits-mlp` trains a network, whose last bits may differ across
CPUs, so its output is committed to the repository and pinned as a `path` artifact.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from repro.errors import SpecError

ParamValue = int | float | str | bool


@dataclass(frozen=True)
class Recipe:
    """A registered generator: `target(out_path, **params)` writes one file."""

    name: str
    target: str
    defaults: Mapping[str, ParamValue]
    media_type: str
    description: str
    deterministic_across_cpus: bool = True
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def resolve(self, params: Mapping[str, ParamValue], *, where: str) -> dict[str, ParamValue]:
        """The defaults overlaid with `params`; unknown names and wrong types are errors."""
        out = dict(self.defaults)
        for key, value in params.items():
            if key not in self.defaults:
                raise SpecError(
                    f"{where}.params.{key}: unknown parameter of recipe {self.name!r}; "
                    f"expected one of {sorted(self.defaults)}"
                )
            want = type(self.defaults[key])
            ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
            if want is float and isinstance(value, int) and not isinstance(value, bool):
                ok, value = True, float(value)
            if not ok:
                raise SpecError(f"{where}.params.{key}: expected {want.__name__}, got {value!r}")
            if key in self.choices and value not in self.choices[key]:
                raise SpecError(
                    f"{where}.params.{key}: expected one of {list(self.choices[key])}, "
                    f"got {value!r}"
                )
            out[key] = value
        return out

    def generate(self, out: Path, params: Mapping[str, ParamValue]) -> None:
        module, func = self.target.split(":")
        fn: Callable[..., None] = getattr(importlib.import_module(module), func)
        fn(out, **self.resolve(params, where="params"))


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            name="resnet50-v1.5",
            target="repro.artifacts.models:write_resnet50",
            defaults={"seed": 0, "num_classes": 1001, "base_width": 64, "opset": 13},
            media_type="application/onnx",
            description="ONNX graph with the layers of MLPerf's ResNet-50 v1.5 "
            "(input_tensor:0 NCHW 3x224x224, ArgMax:0 over 1001 classes), seeded weights",
        ),
        Recipe(
            name="synthetic-imagenet",
            target="repro.artifacts.datasets:write_synthetic_imagenet",
            defaults={"seed": 0, "count": 64, "height": 224, "width": 224},
            media_type="application/x-npz",
            description="N preprocessed NCHW float32 images (per-channel normalized) from a seed",
        ),
        Recipe(
            name="sklearn-digits",
            target="repro.artifacts.datasets:write_sklearn_digits",
            defaults={"split": "test", "test_fraction": 0.25, "seed": 0},
            media_type="application/x-npz",
            description="scikit-learn's bundled 8x8 digits (1797 images), scaled to [0, 1], "
            "with a seeded stratified train/test split",
            choices={"split": ("train", "test", "all")},
        ),
        Recipe(
            name="digits-mlp",
            target="repro.artifacts.models:write_digits_mlp",
            defaults={"hidden": 64, "seed": 0, "test_fraction": 0.25, "max_iter": 300},
            media_type="application/onnx",
            description="an MLP trained on the digits train split, exported to ONNX "
            "(input [N,64] -> predictions int64)",
            deterministic_across_cpus=False,
        ),
    )
}


def get_recipe(name: str, *, where: str = "recipe") -> Recipe:
    """The registered recipe, or a SpecError that lists the valid names."""
    try:
        return RECIPES[name]
    except KeyError:
        raise SpecError(
            f"{where}: unknown recipe {name!r}; expected one of {sorted(RECIPES)}"
        ) from None
