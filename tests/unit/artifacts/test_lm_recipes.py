"""The generative recipes (numpy only) and the prompt checks against a model's vocabulary and
context: each bad input is named by its JSON path."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from repro.artifacts.lm_recipes import (
    LmConfig,
    prompt_problems,
    read_lm_config,
    write_synthetic_prompts,
    write_tinylm,
)
from repro.npz import read_npz

SMALL = {"seed": 0, "vocab_size": 32, "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_tinylm_is_the_same_bytes_twice_and_states_its_config(tmp_path: Path) -> None:
    write_tinylm(tmp_path / "a.npz", **SMALL, context=64)
    write_tinylm(tmp_path / "b.npz", **SMALL, context=64)
    assert _sha(tmp_path / "a.npz") == _sha(tmp_path / "b.npz")
    assert read_lm_config(tmp_path / "a.npz") == LmConfig(32, 16, 1, 2, 32, 64)
    weights = read_npz(tmp_path / "a.npz")
    assert weights["tok_emb.weight"].shape == (32, 16)
    assert weights["blocks.0.attn.qkv.weight"].shape == (48, 16)


def test_another_seed_gives_other_weights(tmp_path: Path) -> None:
    write_tinylm(tmp_path / "a.npz", **SMALL, context=64)
    write_tinylm(tmp_path / "b.npz", **{**SMALL, "seed": 1}, context=64)
    assert _sha(tmp_path / "a.npz") != _sha(tmp_path / "b.npz")


def test_heads_must_divide_the_width(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="multiple of n_heads"):
        write_tinylm(tmp_path / "a.npz", **{**SMALL, "n_heads": 3}, context=64)


def test_prompts_are_padded_token_ids_within_the_vocabulary(tmp_path: Path) -> None:
    out = tmp_path / "p.npz"
    write_synthetic_prompts(out, seed=0, count=20, vocab_size=32, min_length=3, max_length=9)
    data = read_npz(out)
    ids, lengths = data["input_ids"], data["input_lengths"]
    assert ids.shape == (20, 9)
    assert ids.dtype == np.int32
    assert lengths.min() >= 3
    assert lengths.max() <= 9
    for row, n in zip(ids, lengths, strict=True):
        assert (row[:n] >= 1).all()
        assert (row[:n] < 32).all()
        assert (row[n:] == 0).all()


def test_prompts_without_references_are_the_bytes_the_reference_spec_pins(tmp_path: Path) -> None:
    out = tmp_path / "p.npz"
    write_synthetic_prompts(out, seed=0, count=64, vocab_size=512, min_length=8, max_length=32)
    # specs/torch-tinylm.json's data set, from before the recipe could write references
    assert _sha(out) == "5ac6356c2ca6c27da38368c62d44e120cb6d6a87e8a284a4029e6346a4c4892e"


def test_references_come_with_a_vocabulary_of_distinct_words(tmp_path: Path) -> None:
    plain, refs = tmp_path / "plain.npz", tmp_path / "refs.npz"
    kw = {"seed": 3, "count": 10, "vocab_size": 300, "min_length": 2, "max_length": 6}
    write_synthetic_prompts(plain, **kw)
    write_synthetic_prompts(refs, **kw, reference_words=20)
    a, b = read_npz(plain), read_npz(refs)
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])  # the same prompts
    vocab = b["vocabulary"]
    assert vocab.shape == (300,)
    assert vocab[0] == ""  # the padding id decodes to nothing
    assert len(set(vocab.tolist())) == 300
    assert all(w.startswith("\u2581") for w in vocab[1:].tolist())
    texts = b["reference_texts"]
    assert texts.shape == (10,)
    assert all(len(t.split()) == 20 and t.endswith(".") for t in texts.tolist())
    write_synthetic_prompts(tmp_path / "again.npz", **kw, reference_words=20)
    assert _sha(tmp_path / "again.npz") == _sha(refs)


def test_a_model_file_without_config_has_no_config(tmp_path: Path) -> None:
    out = tmp_path / "p.npz"
    write_synthetic_prompts(out, seed=0, count=2, vocab_size=32, min_length=3, max_length=9)
    assert read_lm_config(out) is None
    (tmp_path / "x.bin").write_bytes(b"not a zip")
    assert read_lm_config(tmp_path / "x.bin") is None


CONFIG = LmConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=32, context=40)


def _problems(
    ids: np.ndarray, lengths: np.ndarray, *, max_new: int = 8, eos: int | None = None
) -> list[tuple[str, str]]:
    return prompt_problems(
        ids,
        lengths,
        config=CONFIG,
        max_new_tokens=max_new,
        eos_token_id=eos,
        dataset="prompts",
        samples=len(lengths),
    )


def _prompts(n: int = 4, width: int = 10) -> tuple[np.ndarray, np.ndarray]:
    return np.ones((n, width), dtype=np.int32), np.full(n, width, dtype=np.int32)


def test_prompts_that_fit_have_no_problem() -> None:
    assert _problems(*_prompts()) == []


def test_a_token_id_beyond_the_vocabulary_names_the_data_set() -> None:
    ids, lengths = _prompts()
    ids[2, 5] = 32  # tokenized for a larger vocabulary
    ((where, message),) = _problems(ids, lengths)
    assert where == "$.artifacts.prompts"
    assert "token id 32" in message
    assert "32 tokens" in message
    assert "tokenizer" in message


def test_padding_beyond_the_length_is_not_a_token() -> None:
    ids, lengths = _prompts()
    ids[0, 9] = 999
    lengths[0] = 9
    assert _problems(ids, lengths) == []


def test_a_generation_past_the_context_names_max_new_tokens_and_the_room_left() -> None:
    ((where, message),) = _problems(*_prompts(width=35), max_new=8)
    assert where == "$.workload.generation.max_new_tokens"
    assert "context is 40" in message
    assert "at most 5" in message


def test_a_prompt_longer_than_the_context_names_the_data_set() -> None:
    ((where, message),) = _problems(*_prompts(width=45), max_new=1)
    assert where == "$.artifacts.prompts"
    assert "longer than the context" in message


def test_an_eos_token_outside_the_vocabulary_is_named() -> None:
    ((where, _),) = _problems(*_prompts(), eos=99)
    assert where == "$.workload.generation.eos_token_id"


def test_lengths_that_do_not_match_the_ids_name_the_lengths_key() -> None:
    ids, _ = _prompts()
    ((where, _),) = _problems(ids, np.ones(3, dtype=np.int32))
    assert where == "$.workload.generation.lengths_key"
