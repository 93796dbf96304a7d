"""ROUGE of generated texts against reference texts, as MLPerf's LLM accuracy scripts score it.

MLPerf's `language/llama2-70b/evaluate-accuracy.py` (and its mixtral and llama3.1 siblings)
decode each prompt's generated token ids with the model's tokenizer, strip the texts, put each
sentence on a line of its own (`nltk.sent_tokenize`: rougeLsum reads lines as sentences), and
score rouge1, rouge2, rougeL and rougeLsum with Google's `rouge_score` (Porter stemmer on),
each the mean F-measure over the prompts x 100; beside them `gen_len` (characters generated),
`gen_num` (prompts) and `tokens_per_sample`. This module does the same with the same library.

The tokenizer here is the data set's vocabulary: an array of strings, one per token id; a text
is its pieces joined, SentencePiece's word mark `▁` (U+2581) read as a space (Llama's
tokenizer), special tokens (`eos_token_id`, the padding id 0) left out, as
`skip_special_tokens` does. Sentences are split by NLTK's Punkt: its trained English model
where the `punkt_tab` data is installed, else Punkt's untrained rules (the data is a download:
rouge1, rouge2 and rougeL do not depend on it, rougeLsum may); the result says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from repro.errors import SpecError

#: the scores of MLPerf's script, in its order
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
#: the headline figure: MLPerf's primary accuracy metric of llama2-70b, mixtral, llama3.1-8b
HEADLINE = "rouge1"
#: SentencePiece's word-boundary mark
WORD_MARK = "\u2581"

INSTALL_HINT = "ROUGE needs rouge-score and nltk: pip install 'repro[rouge]'"


def missing() -> str | None:
    """Why ROUGE cannot be scored in this Python (its libraries are not installed), or None."""
    try:
        import nltk  # noqa: F401
        import rouge_score  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed"
    return None


def decode(ids: Sequence[int], vocabulary: Sequence[str], *, skip: frozenset[int]) -> str:
    """A generation's text: its tokens' pieces joined, `▁` as a space, `skip` left out, stripped.
    A token id outside the vocabulary is a SpecError (the vocabulary is another model's)."""
    pieces = []
    for t in ids:
        if t in skip:
            continue
        if not 0 <= t < len(vocabulary):
            raise SpecError(
                f"generated token id {t} is outside the data set's vocabulary "
                f"({len(vocabulary)} pieces)",
                hint="the vocabulary must be the model's tokenizer's: one string per token id",
            )
        pieces.append(vocabulary[t])
    return "".join(pieces).replace(WORD_MARK, " ").strip()


def _sentences() -> tuple[Any, str]:
    """(a function text -> sentences, which Punkt it is)."""
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        return PunktSentenceTokenizer().tokenize, "punkt (untrained: no nltk punkt_tab data)"
    return nltk.sent_tokenize, "punkt (nltk's trained English model)"


def score_texts(predictions: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """MLPerf's ROUGE figures of `predictions` against `references` (same order and length)."""
    from rouge_score import rouge_scorer

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions, {len(references)} references")
    split, splitter = _sentences()

    def lines(text: str) -> str:
        return "\n".join(split(text.strip()))

    preds = [lines(p) for p in predictions]
    refs = [lines(r) for r in references]
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    per = [scorer.score(r, p) for p, r in zip(preds, refs, strict=True)]
    out: dict[str, Any] = {
        kind: round(float(np.mean([s[kind].fmeasure for s in per])) * 100, 4) if per else 0.0
        for kind in ROUGE_TYPES
    }
    out["gen_len"] = sum(len(p) for p in preds)
    out["gen_num"] = len(preds)
    out["sentence_split"] = splitter
    return out


def score_generations(
    tokens: Sequence[np.ndarray],
    indices: Sequence[int],
    *,
    references: np.ndarray,
    vocabulary: np.ndarray,
    skip: frozenset[int],
) -> dict[str, Any]:
    """The accuracy record of a generation scored by ROUGE: rouge1 as the value (a score from 0
    to 100, as MLPerf prints it), the other ROUGE figures, tokens per sample."""
    vocab = [str(v) for v in vocabulary.tolist()]
    texts = [decode([int(t) for t in ids.tolist()], vocab, skip=skip) for ids in tokens]
    refs = [str(references[i]) for i in indices]
    found = score_texts(texts, refs)
    generated = sum(len(t) for t in tokens)
    return {
        "metric": HEADLINE,
        "value": found[HEADLINE],
        "unit": "score",
        **{k: found[k] for k in ROUGE_TYPES if k != HEADLINE},
        "gen_len": found["gen_len"],
        "gen_num": found["gen_num"],
        "gen_tok_len": generated,
        "tokens_per_sample": round(generated / len(tokens), 1) if tokens else 0.0,
        "sentence_split": found["sentence_split"],
    }
