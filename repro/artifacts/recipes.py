"""Deterministic artifact generators, registered by name, whose output is pinned by sha256.

The same parameters give the same bytes on any machine with the pinned package versions, with
one exception said out loud: `digits-mlp` trains a network, whose last bits may differ across
CPUs, so its output is committed to the repository and pinned as a `path` artifact.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from repro.errors import SpecError
from repro.spec.limits import UINT64_MAX

ParamValue = int | float | str | bool

#: the largest file a recipe may write: generating it takes several times this in memory
MAX_OUTPUT_BYTES: Final = 2**30
#: numpy's legacy seeding (scikit-learn's random_state) takes a uint32
UINT32_MAX: Final = 2**32 - 1


@dataclass(frozen=True)
class Param:
    """One parameter of a recipe: its default and the values it accepts (bounds inclusive)."""

    default: ParamValue
    description: str
    min: int | float | None = None
    max: int | float | None = None
    choices: tuple[str, ...] = ()

    def accepts(self) -> str:
        """The accepted values, in words."""
        if self.choices:
            return f"one of {list(self.choices)}"
        return f"{type(self.default).__name__} in [{self.min}, {self.max}]"

    def check(self, value: object) -> ParamValue:
        """`value` as the recipe takes it (an int given for a float becomes one), or ValueError."""
        want = type(self.default)
        # An integer is a JSON number like any other (converted only when in range, since a huge
        # one overflows a float); `True` is an int to Python, not to a spec.
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value) if self._within(value) else value
        if not isinstance(value, want) or (isinstance(value, bool) and want is not bool):
            raise ValueError(f"expected {self.accepts()}, got {_shown(value)}")
        if self.choices and value not in self.choices:
            raise ValueError(f"expected {self.accepts()}, got {_shown(value)}")
        if not isinstance(value, bool | str) and not self._within(value):
            raise ValueError(f"expected {self.accepts()}, got {_shown(value)}")
        return value

    def _within(self, value: float) -> bool:
        # Written so that NaN, which Python's JSON reader accepts, is outside every range.
        return self.min is not None and self.max is not None and self.min <= value <= self.max


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Recipe:
    """A registered generator: `target(out_path, **params)` writes one file."""

    name: str
    target: str
    params: Mapping[str, Param]
    media_type: str
    description: str
    deterministic_across_cpus: bool = True
    #: it writes a folder (a model's weights, config and tokenizer), not one file
    folder: bool = False
    #: the size of the output for resolved parameters, where they alone do not bound it
    output_bytes: Callable[[Mapping[str, ParamValue]], int] | None = None

    @property
    def defaults(self) -> dict[str, ParamValue]:
        """Every parameter's default value."""
        return {key: p.default for key, p in self.params.items()}

    def check(self, params: Mapping[str, object], *, where: str) -> list[tuple[str, str]]:
        """(JSON path, message) for every unknown, mistyped or out-of-range parameter."""
        return self._overlay(params, where=where)[1]

    def resolve(self, params: Mapping[str, object], *, where: str) -> dict[str, ParamValue]:
        """The defaults overlaid with `params`; any problem is a SpecError naming its path."""
        out, problems = self._overlay(params, where=where)
        if problems:
            raise SpecError("\n".join(f"{path}: {message}" for path, message in problems))
        return out

    def _overlay(
        self, params: Mapping[str, object], *, where: str
    ) -> tuple[dict[str, ParamValue], list[tuple[str, str]]]:
        out = self.defaults
        problems: list[tuple[str, str]] = []
        for key, value in params.items():
            param = self.params.get(key)
            if param is None:
                message = (
                    f"unknown parameter of recipe {self.name!r}; "
                    f"expected one of {sorted(self.params)}"
                )
                problems.append((f"{where}.params.{key}", message))
                continue
            try:
                out[key] = param.check(value)
            except ValueError as exc:
                problems.append((f"{where}.params.{key}", str(exc)))
        if not problems and self.output_bytes is not None:
            size = self.output_bytes(out)
            if size > MAX_OUTPUT_BYTES:
                message = (
                    f"the output would take {size / 2**20:,.1f} MiB; a recipe may write at "
                    f"most {MAX_OUTPUT_BYTES // 2**20:,} MiB (1 GiB), so lower the parameters"
                )
                problems.append((f"{where}.params", message))
        return out, problems

    def generate(self, out: Path, params: Mapping[str, ParamValue]) -> None:
        module, func = self.target.split(":")
        fn: Callable[..., None] = getattr(importlib.import_module(module), func)
        fn(out, **self.resolve(params, where=self.name))


def _imagenet_bytes(params: Mapping[str, ParamValue]) -> int:
    """float32 NCHW with 3 channels."""
    count, height, width = (int(params[k]) for k in ("count", "height", "width"))
    return count * 3 * height * width * 4


def _tinylm_bytes(params: Mapping[str, ParamValue]) -> int:
    """float32 weights: embeddings, then per block qkv, proj and the MLP."""
    v, d, n, ff, c = (
        int(params[k]) for k in ("vocab_size", "d_model", "n_layers", "d_ff", "context")
    )
    return 4 * ((v + c) * d + n * (4 * d * d + 2 * d * ff))


_DIGITS_SEED = Param(
    0, "seeds the train/test split (a uint32, as scikit-learn takes)", 0, UINT32_MAX
)
# 1797 digits in 10 classes: each side of a stratified split needs at least 10 of them.
_TEST_FRACTION = Param(0.25, "share of the digits held out for testing", 0.01, 0.99)

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            name="resnet50-v1.5",
            target="repro.artifacts.model_recipes:write_resnet50",
            # base_width 128 with 16384 classes is about 650 MB of weights.
            params={
                # numpy's PCG64 takes any integer; a uint64, like LoadGen's seeds, is plenty.
                "seed": Param(0, "seeds the weights", 0, UINT64_MAX),
                "num_classes": Param(1001, "classes of the output", 1, 16384),
                "base_width": Param(64, "channels of the first stage (ResNet-50: 64)", 1, 128),
                # onnxruntime reads opset 7 and later; ReduceMean's axes attribute ends at 17.
                "opset": Param(13, "ONNX opset of the graph", 7, 17),
                "perturb": Param(
                    0.0, "relative noise on every weight (0: the seed's weights)", 0.0, 1.0
                ),
                "perturb_seed": Param(1, "seeds the noise", 0, UINT64_MAX),
            },
            media_type="application/onnx",
            description="ONNX graph with the layers of MLPerf's ResNet-50 v1.5 "
            "(input_tensor:0 NCHW 3x224x224, ArgMax:0 over 1001 classes), seeded weights",
        ),
        Recipe(
            name="synthetic-imagenet",
            target="repro.artifacts.datasets:write_synthetic_imagenet",
            params={
                "seed": Param(0, "seeds the pixels", 0, UINT64_MAX),
                "count": Param(64, "images", 1, 10_000_000),
                "height": Param(224, "pixels", 1, 4096),
                "width": Param(224, "pixels", 1, 4096),
            },
            media_type="application/x-npz",
            description="N preprocessed NCHW float32 images (per-channel normalized) from a seed",
            output_bytes=_imagenet_bytes,
        ),
        Recipe(
            name="sklearn-digits",
            target="repro.artifacts.datasets:write_sklearn_digits",
            params={
                "split": Param("test", "which part to write", choices=("train", "test", "all")),
                "test_fraction": _TEST_FRACTION,
                "seed": _DIGITS_SEED,
            },
            media_type="application/x-npz",
            description="scikit-learn's bundled 8x8 digits (1797 images), scaled to [0, 1], "
            "with a seeded stratified train/test split",
        ),
        Recipe(
            name="tinylm",
            target="repro.artifacts.lm_recipes:write_tinylm",
            # the largest (vocab 65536 x d_model 2048, 32 layers) is about 1 GB of float32
            params={
                "seed": Param(0, "seeds the weights", 0, UINT64_MAX),
                "vocab_size": Param(512, "tokens of the vocabulary", 2, 65536),
                "d_model": Param(64, "width of the residual stream", 8, 2048),
                "n_layers": Param(2, "decoder blocks", 1, 32),
                "n_heads": Param(4, "attention heads (d_model must be a multiple)", 1, 64),
                "d_ff": Param(256, "width of each block's MLP", 8, 8192),
                "context": Param(256, "positions: prompt plus generated tokens", 8, 8192),
            },
            media_type="application/x-npz",
            description="a GPT-style causal LM (pre-norm decoder blocks, learned positions, "
            "tied output embedding) with seeded weights, as an .npz of its torch state_dict "
            "plus its config",
            output_bytes=_tinylm_bytes,
        ),
        Recipe(
            name="synthetic-prompts",
            target="repro.artifacts.lm_recipes:write_synthetic_prompts",
            params={
                "seed": Param(0, "seeds the lengths and the token ids", 0, UINT64_MAX),
                "count": Param(64, "prompts", 1, 1_000_000),
                "vocab_size": Param(512, "token ids are drawn from [1, vocab_size)", 2, 65536),
                "min_length": Param(8, "shortest prompt, tokens", 1, 8192),
                "max_length": Param(32, "longest prompt, tokens", 1, 8192),
                "reference_words": Param(
                    0,
                    "0: none; else also a vocabulary (a pseudo-word per token id) and a "
                    "reference text of this many words per prompt, for the rouge metric",
                    0,
                    4096,
                ),
            },
            media_type="application/x-npz",
            description="prompts as token ids: input_ids (int32, zero-padded) and input_lengths; "
            "with reference_words, vocabulary and reference_texts",
            output_bytes=lambda p: (
                int(p["count"]) * (int(p["max_length"]) + 1) * 4
                + int(p["count"]) * int(p["reference_words"]) * 64
                + int(p["vocab_size"]) * 64
            ),
        ),
        Recipe(
            name="tiny-llama",
            target="repro.artifacts.served_recipes:write_tiny_llama",
            params={
                "seed": Param(0, "seeds the weights", 0, UINT64_MAX),
                "vocab_size": Param(512, "tokens the byte-level BPE learns (at most)", 260, 8192),
                "hidden_size": Param(64, "width of the residual stream", 8, 1024),
                "layers": Param(2, "decoder blocks", 1, 16),
                "heads": Param(4, "attention heads (hidden_size must be a multiple)", 1, 64),
                "kv_heads": Param(2, "key/value heads (heads must be a multiple)", 1, 64),
                "context": Param(256, "positions: prompt plus answer", 16, 8192),
                "new_tokens": Param(32, "tokens every answer has (min and max)", 1, 4096),
            },
            media_type="inode/directory",
            description="a Hugging Face Llama model folder (config, safetensors weights drawn "
            "from a seed, a byte-level BPE trained on the project's corpus, a one-line chat "
            "template) that transformers serve, vLLM and SGLang load; no download",
            folder=True,
            output_bytes=lambda p: (
                4
                * (
                    2 * int(p["vocab_size"]) * int(p["hidden_size"])
                    + int(p["layers"]) * 12 * int(p["hidden_size"]) ** 2
                )
            ),
        ),
        Recipe(
            name="served-prompts",
            target="repro.artifacts.served_recipes:write_served_prompts",
            params={
                "seed": Param(0, "seeds the order and the cuts", 0, UINT64_MAX),
                "count": Param(64, "prompts", 1, 100_000),
                "min_words": Param(4, "shortest prompt, words", 1, 64),
                "max_words": Param(12, "longest prompt, words", 1, 64),
            },
            media_type="application/x-npz",
            description="text prompts (prompts: unicode) cut from the project's corpus at "
            "seeded lengths, for a served experiment",
        ),
        Recipe(
            name="digits-mlp",
            target="repro.artifacts.model_recipes:write_digits_mlp",
            # Training time grows with hidden x max_iter; the largest take minutes on a CPU.
            params={
                "hidden": Param(64, "units of the hidden layer", 1, 1024),
                "seed": _DIGITS_SEED,
                "test_fraction": _TEST_FRACTION,
                "max_iter": Param(300, "training epochs at most", 1, 2000),
            },
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
