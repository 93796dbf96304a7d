"""Recipes of a served experiment: a tiny Llama model directory and its prompts, with no download.

- `tiny-llama`: a Hugging Face model directory (`config.json`, `model.safetensors`,
  `tokenizer.json`, `tokenizer_config.json` with a one-line chat template,
  `generation_config.json`) that `transformers serve`, vLLM or SGLang load like any Llama: its
  weights are drawn with numpy from a seed, its byte-level BPE is trained with `tokenizers` on a
  text the project ships (`repro/data/served-corpus.txt`). Every file is written byte for byte
  the same on any machine with the pinned `tokenizers` and `safetensors`.
- `served-prompts`: text prompts (an .npz of one unicode array, `prompts`), sentences of the
  same corpus cut at seeded lengths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import numpy as np

from repro.errors import ArtifactError
from repro.npz import write_npz

#: the text the tokenizer is trained on and the prompts are cut from
CORPUS: Final = Path(__file__).resolve().parent.parent / "data" / "served-corpus.txt"
#: the chat template: each message as `role: content`, then the answer's turn
CHAT_TEMPLATE: Final = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
)
SPECIAL: Final = ("<s>", "</s>")


def _tokenizer(vocab_size: int) -> Any:
    """A byte-level BPE trained on the corpus (its first two ids: <s> and </s>)."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError as exc:
        raise ArtifactError(
            f"the tiny-llama recipe trains its tokenizer with `tokenizers`: {exc}",
            hint="pip install 'repro[serve]'",
        ) from None
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.read_text().splitlines(), trainer=trainer)
    return tok


def llama_weights(config: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Seeded float32 weights under a Llama's parameter names, in a fixed drawing order: the
    embeddings and every projection N(0, 1/fan_in) (a random model then answers each prompt
    differently), the RMS norms 1."""
    rng = np.random.default_rng(seed)
    h, ff, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    kv = h // config["num_attention_heads"] * config["num_key_value_heads"]

    def linear(rows: int, fan_in: int) -> np.ndarray:
        drawn: np.ndarray = rng.standard_normal((rows, fan_in)) / np.sqrt(fan_in)
        return drawn.astype(np.float32)

    out = {"model.embed_tokens.weight": linear(vocab, h)}
    for i in range(config["num_hidden_layers"]):
        at = f"model.layers.{i}"
        out |= {
            f"{at}.self_attn.q_proj.weight": linear(h, h),
            f"{at}.self_attn.k_proj.weight": linear(kv, h),
            f"{at}.self_attn.v_proj.weight": linear(kv, h),
            f"{at}.self_attn.o_proj.weight": linear(h, h),
            f"{at}.mlp.gate_proj.weight": linear(ff, h),
            f"{at}.mlp.up_proj.weight": linear(ff, h),
            f"{at}.mlp.down_proj.weight": linear(h, ff),
            f"{at}.input_layernorm.weight": np.ones(h, dtype=np.float32),
            f"{at}.post_attention_layernorm.weight": np.ones(h, dtype=np.float32),
        }
    out["model.norm.weight"] = np.ones(h, dtype=np.float32)
    out["lm_head.weight"] = linear(vocab, h)
    return out


def _json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_tiny_llama(
    out: Path,
    *,
    seed: int,
    vocab_size: int,
    hidden_size: int,
    layers: int,
    heads: int,
    kv_heads: int,
    context: int,
    new_tokens: int,
) -> None:
    """The model directory at `out` (a new folder)."""
    try:
        from safetensors.numpy import save_file
    except ImportError as exc:
        raise ArtifactError(
            f"the tiny-llama recipe writes its weights with `safetensors`: {exc}",
            hint="pip install 'repro[serve]'",
        ) from None
    if hidden_size % heads or heads % kv_heads:
        raise ArtifactError(
            f"tiny-llama: heads ({heads}) must divide hidden_size ({hidden_size}) and kv_heads "
            f"({kv_heads}) divide heads"
        )
    out.mkdir(parents=True)
    tok = _tokenizer(vocab_size)
    bos, eos = (tok.token_to_id(t) for t in SPECIAL)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": tok.get_vocab_size(),
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "max_position_embeddings": context,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "dtype": "float32",
    }
    _json(out / "config.json", config)
    # the metadata is fixed: safetensors writes the tensors sorted by name
    save_file(llama_weights(config, seed), str(out / "model.safetensors"), {"format": "pt"})
    tok.save(str(out / "tokenizer.json"))
    _json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": SPECIAL[0],
            "eos_token": SPECIAL[1],
            "model_max_length": context,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    # every answer has exactly `new_tokens` tokens (a random model may say </s> early): the
    # runs compare like for like
    _json(
        out / "generation_config.json",
        {
            "bos_token_id": bos,
            "eos_token_id": eos,
            "do_sample": False,
            "min_new_tokens": new_tokens,
            "max_new_tokens": new_tokens,
        },
    )


def write_served_prompts(
    out: Path, *, seed: int, count: int, min_words: int, max_words: int
) -> None:
    """`count` prompts: the corpus's sentences in a seeded order, each cut to a seeded number of
    words in [min_words, max_words]."""
    if min_words > max_words:
        raise ArtifactError(f"served-prompts: min_words {min_words} > max_words {max_words}")
    sentences = [s.split() for s in CORPUS.read_text().splitlines() if s.strip()]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(sentences))
    prompts = []
    for i in range(count):
        words = sentences[int(order[i % len(order)])]
        n = int(rng.integers(min_words, max_words + 1))
        prompts.append(" ".join(words[:n]))
    write_npz(out, {"prompts": np.array(prompts, dtype=f"<U{max(map(len, prompts))}")})
