"""ROUGE as MLPerf's LLM accuracy scripts compute it: decoding with the data set's vocabulary,
the figures against hand-counted overlaps, the stemmer, the sentence split of rougeLsum."""

from __future__ import annotations

import numpy as np
import pytest

from repro.errors import SpecError
from repro.runs import rouge

pytest.importorskip("rouge_score", reason="ROUGE is repro[rouge]")

VOCAB = ["", "\u2581the", "\u2581cat", "s", "\u2581sat", "\u2581on", "\u2581mat", "."]


def test_a_generation_is_its_pieces_joined_with_the_word_mark_as_a_space() -> None:
    assert rouge.decode([1, 2, 3, 4, 0, 7], VOCAB, skip=frozenset({0})) == "the cats sat."
    assert rouge.decode([1, 2, 7, 7], VOCAB, skip=frozenset({0, 7})) == "the cat"  # eos skipped


def test_a_token_outside_the_vocabulary_is_refused_naming_its_size() -> None:
    with pytest.raises(SpecError, match=r"token id 9 is outside .* \(8 pieces\)"):
        rouge.decode([1, 9], VOCAB, skip=frozenset())


def test_the_figures_are_mean_f_measures_times_100_of_hand_counted_overlaps() -> None:
    # 5 of 6 unigrams shared (the x2, cat, on, mat): P = R = F = 5/6; 3 of 5 bigrams: 3/5
    found = rouge.score_texts(["the cat sat on the mat"], ["the cat is on the mat"])
    assert found["rouge1"] == pytest.approx(83.3333, abs=1e-4)
    assert found["rouge2"] == pytest.approx(60.0)
    # the longest common subsequence: the cat on the mat, 5 of 6
    assert found["rougeL"] == pytest.approx(83.3333, abs=1e-4)
    assert found["gen_num"] == 1
    assert found["gen_len"] == len("the cat sat on the mat")
    two = rouge.score_texts(["the cat sat on the mat", "a dog"], ["the cat is on the mat", "a dog"])
    assert two["rouge1"] == pytest.approx((83.3333 + 100) / 2, abs=1e-4)  # a mean over prompts


def test_words_are_stemmed_as_mlperf_scores_them() -> None:
    # MLPerf's scripts score with use_stemmer=True: "cats" and "cat" are one word
    assert rouge.score_texts(["cats sat"], ["cat sat"])["rouge1"] == pytest.approx(100.0)


def test_rouge_lsum_reads_each_sentence_apart() -> None:
    # the whole texts share 3 of 6 in order (rougeL 50); sentence by sentence, all 6 (100)
    found = rouge.score_texts(["Dog eats food. A cat sat."], ["A cat sat. Dog eats food."])
    assert found["rougeL"] == pytest.approx(50.0)
    assert found["rougeLsum"] == pytest.approx(100.0)
    assert found["sentence_split"].startswith("punkt")


def test_a_generation_record_has_rouge1_as_its_value_and_tokens_per_sample() -> None:
    tokens = [np.array([1, 2, 4, 5, 1, 6], np.int32), np.array([1, 2, 7, 7], np.int32)]
    refs = np.array(["unused", "the cat sat on the mat", "the cat"])
    found = rouge.score_generations(
        tokens, [1, 2], references=refs, vocabulary=np.array(VOCAB), skip=frozenset({0, 7})
    )
    assert found["metric"] == "rouge1"
    assert found["unit"] == "score"  # 0 to 100, as MLPerf prints it
    assert found["value"] == pytest.approx(100.0)
    assert found["gen_tok_len"] == 10
    assert found["tokens_per_sample"] == 5.0
