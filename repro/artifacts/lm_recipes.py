"""Generative recipes: a small GPT-style causal LM with seeded weights, and prompts of token ids.

Both are written with numpy alone (no torch), as byte-for-byte reproducible .npz files:

- `tinylm`: the weights under the parameter names of `repro.backends.torch.lm.TinyLM` (its
  `state_dict` keys) plus `config`, the architecture as JSON bytes (`LmConfig`);
- `synthetic-prompts`: `input_ids` (int32, N x max_length, zero-padded) and `input_lengths`
  (int32, N), token ids uniform in [1, vocab_size).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from repro.npz import write_npz

#: the .npz member that holds a model's architecture (JSON bytes as a uint8 array)
CONFIG_KEY = "config"


@dataclass(frozen=True)
class LmConfig:
    """The architecture of a TinyLM: what the weights' shapes follow."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    context: int

    def to_array(self) -> np.ndarray:
        return np.frombuffer(json.dumps(asdict(self), sort_keys=True).encode(), dtype=np.uint8)

    @classmethod
    def from_array(cls, raw: np.ndarray) -> LmConfig:
        fields = json.loads(bytes(np.asarray(raw, dtype=np.uint8)).decode())
        return cls(**{k: int(fields[k]) for k in cls.__dataclass_fields__})


def lm_weights(config: LmConfig, seed: int) -> dict[str, np.ndarray]:
    """Seeded float32 weights in a fixed drawing order: embeddings N(0, 0.1), every linear layer
    N(0, 1/fan_in) (GPT-2's N(0, 0.02) leaves a random model repeating its last prompt token;
    this scale makes its greedy output depend on the prompt), biases 0, layer norms 1 and 0."""
    rng = np.random.default_rng(seed)
    d, ff = config.d_model, config.d_ff

    def normal(shape: tuple[int, ...], std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def linear(rows: int, fan_in: int) -> np.ndarray:
        return normal((rows, fan_in), 1 / np.sqrt(fan_in))

    out = {
        "tok_emb.weight": normal((config.vocab_size, d), 0.1),
        "pos_emb.weight": normal((config.context, d), 0.1),
    }
    for i in range(config.n_layers):
        p = f"blocks.{i}."
        out |= {
            p + "ln1.weight": np.ones(d, np.float32),
            p + "ln1.bias": np.zeros(d, np.float32),
            p + "attn.qkv.weight": linear(3 * d, d),
            p + "attn.qkv.bias": np.zeros(3 * d, np.float32),
            p + "attn.proj.weight": linear(d, d),
            p + "attn.proj.bias": np.zeros(d, np.float32),
            p + "ln2.weight": np.ones(d, np.float32),
            p + "ln2.bias": np.zeros(d, np.float32),
            p + "mlp.fc.weight": linear(ff, d),
            p + "mlp.fc.bias": np.zeros(ff, np.float32),
            p + "mlp.out.weight": linear(d, ff),
            p + "mlp.out.bias": np.zeros(d, np.float32),
        }
    out |= {"ln_f.weight": np.ones(d, np.float32), "ln_f.bias": np.zeros(d, np.float32)}
    return out


def write_tinylm(
    out: Path,
    *,
    seed: int,
    vocab_size: int,
    d_model: int,
    n_layers: int,
    n_heads: int,
    d_ff: int,
    context: int,
) -> None:
    """A GPT-style decoder (learned positions, pre-norm blocks, tied output embedding)."""
    if d_model % n_heads:
        raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
    config = LmConfig(vocab_size, d_model, n_layers, n_heads, d_ff, context)
    write_npz(out, {**lm_weights(config, seed), CONFIG_KEY: config.to_array()})


def write_synthetic_prompts(
    out: Path,
    *,
    seed: int,
    count: int,
    vocab_size: int,
    min_length: int,
    max_length: int,
    reference_words: int = 0,
) -> None:
    """`count` prompts of seeded lengths in [min_length, max_length] and seeded token ids; with
    `reference_words`, a vocabulary and a seeded reference text per prompt (`rouge`)."""
    if min_length > max_length:
        raise ValueError(f"min_length {min_length} is above max_length {max_length}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, max_length + 1, size=count).astype(np.int32)
    ids = rng.integers(1, vocab_size, size=(count, max_length)).astype(np.int32)
    ids[np.arange(max_length)[None, :] >= lengths[:, None]] = 0
    arrays = {"input_ids": ids, "input_lengths": lengths}
    if reference_words:  # drawn after the prompts: the prompts stay those without references
        vocabulary = pseudo_words(vocab_size, rng)
        arrays |= {
            "vocabulary": vocabulary,
            "reference_texts": np.array(
                [reference_text(vocabulary, reference_words, rng) for _ in range(count)]
            ),
        }
    write_npz(out, arrays)


_SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in "aeiou")


def pseudo_words(vocab_size: int, rng: np.random.Generator) -> np.ndarray:
    """A SentencePiece-style vocabulary: id 0 (padding) empty, every other id a distinct word of
    2-3 seeded syllables behind the word mark U+2581."""
    words: list[str] = [""]
    seen = {""}
    while len(words) < vocab_size:
        n = int(rng.integers(2, 4))
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), size=n))
        if word not in seen:
            seen.add(word)
            words.append("\u2581" + word)
    return np.array(words)


def reference_text(vocabulary: np.ndarray, words: int, rng: np.random.Generator) -> str:
    """`words` seeded words of the vocabulary as sentences of 4-12 words, capitalized, each
    ending with a full stop: a reference to score against, not a meaningful text."""
    picked = [str(vocabulary[int(i)])[1:] for i in rng.integers(1, len(vocabulary), size=words)]
    sentences, at = [], 0
    while at < len(picked):
        n = int(rng.integers(4, 13))
        part = picked[at : at + n]
        sentences.append(" ".join(part).capitalize() + ".")
        at += n
    return " ".join(sentences)


def read_lm_config(path: Path) -> LmConfig | None:
    """The architecture of a TinyLM .npz from its `config` member (the weights are not read);
    None for another format (a torch checkpoint: the worker reads it with torch)."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as zf:
        if f"{CONFIG_KEY}.npy" not in zf.namelist():
            return None
        with zf.open(f"{CONFIG_KEY}.npy") as fh:
            raw = np.lib.format.read_array(fh, allow_pickle=False)
    return LmConfig.from_array(raw)


def prompt_problems(
    ids: np.ndarray,
    lengths: np.ndarray,
    *,
    config: LmConfig,
    max_new_tokens: int,
    eos_token_id: int | None,
    dataset: str,
    samples: int,
) -> list[tuple[str, str]]:
    """(JSON path, message) for what keeps the prompts from running on the model: a layout
    that is not token ids and lengths, a token id outside the vocabulary (prompts tokenized
    for another model), a prompt that with max_new_tokens does not fit in the context."""
    where = f"$.artifacts.{dataset}"
    if ids.ndim != 2 or lengths.ndim != 1 or len(lengths) != len(ids):
        return [
            (
                "$.workload.generation.lengths_key",
                f"the data set {dataset!r} holds token ids of shape {list(ids.shape)} and "
                f"lengths of shape {list(lengths.shape)}: expected N x max length and N",
            )
        ]
    if not (np.issubdtype(ids.dtype, np.integer) and np.issubdtype(lengths.dtype, np.integer)):
        return [(where, f"token ids ({ids.dtype}) and lengths ({lengths.dtype}) must be integers")]
    ids, lengths = ids[:samples], lengths[:samples]
    problems = []
    if len(lengths) and (lengths.min() < 1 or lengths.max() > ids.shape[1]):
        i = int(np.argmax((lengths < 1) | (lengths > ids.shape[1])))
        return [(where, f"prompt {i} has length {int(lengths[i])}, outside 1 to {ids.shape[1]}")]
    used = np.arange(ids.shape[1])[None, :] < lengths[:, None]
    bad = used & ((ids < 0) | (ids >= config.vocab_size))
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        problems.append(
            (
                where,
                f"prompt {i} holds token id {int(ids[i, j])} (position {j}), but the model's "
                f"vocabulary has {config.vocab_size} tokens (ids 0 to {config.vocab_size - 1}): "
                "the prompts were tokenized for another vocabulary; tokenize them with the "
                "model's tokenizer, or use a model of this vocabulary",
            )
        )
    longest = int(lengths.max()) if len(lengths) else 0
    if longest + max_new_tokens > config.context:
        i = int(np.argmax(lengths))
        room = config.context - longest
        fix = (
            f"lower max_new_tokens to at most {room}, or use shorter prompts"
            if room >= 1
            else "the prompt alone is longer than the context: use shorter prompts or a model "
            "with a longer context"
        )
        problems.append(
            (
                "$.workload.generation.max_new_tokens" if room >= 1 else where,
                f"prompt {i} has {longest} tokens; with max_new_tokens {max_new_tokens} it needs "
                f"{longest + max_new_tokens} positions, but the model's context is "
                f"{config.context}: {fix}",
            )
        )
    if eos_token_id is not None and eos_token_id >= config.vocab_size:
        problems.append(
            (
                "$.workload.generation.eos_token_id",
                f"{eos_token_id} is not a token of the model's vocabulary "
                f"({config.vocab_size} tokens): name one below {config.vocab_size}, or null",
            )
        )
    return problems
