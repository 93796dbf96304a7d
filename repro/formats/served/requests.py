"""A served run's requests one by one, and its metrics measured from them by any definition.

A harness that keeps each request's timestamps and token count (AIPerf's
`profile_export.jsonl`, GuideLLM's request list, `vllm bench serve --save-detailed`, repro's
`requests.npz`) can be measured again by another harness's definitions
(`repro.formats.served.definitions`); a summary of percentiles cannot. repro keeps both counts
of each answer where it can (the server's and its model's tokenizer's, and the tokenizer's count
of the first chunk), so its runs can be measured by every definition here. Percentiles are
taken as LoadGen takes them: the sorted values' element at floor(n * q).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from repro.formats.served.definitions import KEYS, Counter, Definition, Definitions

#: the file a repro served test keeps its requests in
REQUESTS_FILE: Final = "requests.npz"
PERCENTILES: Final = {"p50": 0.50, "p90": 0.90, "p99": 0.99}
#: the optional per-request arrays (saved and loaded where present)
_OPTIONAL: Final = ("last_token_ns", "first_chunk_tokens", "queued_ns", "tokenizer_tokens")


@dataclass(frozen=True)
class Requests:
    """The completed requests of one run, in nanoseconds from the run's start."""

    start_ns: np.ndarray  # when each was sent
    ttft_ns: np.ndarray  # sent to the first chunk holding text (NaN: none came)
    latency_ns: np.ndarray  # sent to the answer's end
    output_tokens: np.ndarray
    counter: Counter  # who counted output_tokens
    last_token_ns: np.ndarray | None = None  # sent to the last chunk holding text
    #: the first chunk's tokens, by the tokenizer (endpoints' TPOT leaves them out)
    first_chunk_tokens: np.ndarray | None = None
    #: issued (by LoadGen) to sent (a connection free): the client's own queue, where kept
    queued_ns: np.ndarray | None = None
    #: the answer's tokens as the model's tokenizer counts its text (beside the server's)
    tokenizer_tokens: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.latency_ns.size)

    def tokens(self, counter: Counter) -> np.ndarray | None:
        """The answers' token counts by `counter` ("-": whichever was kept)."""
        if counter in ("-", self.counter):
            return self.output_tokens
        return self.tokenizer_tokens if counter == "tokenizer" else None

    def missing(self, d: Definition) -> str | None:
        """Why this run's requests cannot be measured by `d` (None: they can)."""
        if len(self) < 2:
            return "fewer than two requests kept"
        if self.tokens(d.counter) is None:
            return f"its tokens were counted by the {self.counter}, not the {d.counter}"
        if d.formula == "issued" and self.queued_ns is None:
            return "when each request was issued (before it waited for a connection) was not kept"
        if d.family == "ttft" and d.formula == "first-chunk":
            return "the time of the stream's first chunk was not kept, only its first text"
        if d.formula == "last-token" and self.last_token_ns is None:
            return "the time of each answer's last text was not kept"
        if d.family == "tpot":
            if d.formula == "decode/(n-first)" and self.first_chunk_tokens is None:
                return "the tokens of each answer's first chunk were not kept"
            if d.formula.startswith("last-") and self.last_token_ns is None:
                return "the time of each answer's last token was not kept"
        return None

    def measure(self, defs: Definitions) -> dict[str, float]:
        """The metrics of every family in `defs`, each by its definition (check `missing`)."""
        out: dict[str, float] = {}
        for family, d in defs.items():
            wait = self.queued_ns if d.formula == "issued" and self.queued_ns is not None else 0
            if family == "ttft":
                out.update(_spread("ttft", self.ttft_ns + wait))
            elif family == "latency":
                end = self.last_token_ns if d.formula == "last-token" else self.latency_ns
                assert end is not None
                out.update(_spread("latency", end + wait))
            elif family == "tpot":
                out.update(_spread("tpot", self.tpot_values(d)))
            else:
                window_s = self.window_ns() / 1e9
                if window_s <= 0:
                    continue
                if family == "request_rate":
                    n = len(self) - (1 if d.formula == "(n-1)/window" else 0)
                    out[KEYS["request_rate"][0]] = n / window_s
                else:
                    tokens = self.tokens(d.counter)
                    assert tokens is not None
                    out[KEYS["token_rate"][0]] = float(np.sum(tokens)) / window_s
        return out

    def window_ns(self) -> float:
        """First request sent to last answer ended."""
        return float(np.max(self.start_ns + self.latency_ns) - np.min(self.start_ns))

    def tpot_values(self, d: Definition) -> np.ndarray:
        """Each request's time per output token by `d` (the requests it applies to)."""
        counted = self.tokens(d.counter)
        assert counted is not None
        n = counted.astype(np.float64)
        if d.formula == "last-start/n":
            assert self.last_token_ns is not None
            keep = n >= 1
            return np.asarray(self.last_token_ns[keep] / n[keep], dtype=np.float64)
        keep = n >= 2
        if d.formula == "decode/(n-1)":
            span = self.latency_ns - self.ttft_ns
            after = n - 1
        elif d.formula == "last-first/(n-1)":
            assert self.last_token_ns is not None
            span = self.last_token_ns - self.ttft_ns
            after = n - 1
        else:  # decode/(n-first)
            assert self.first_chunk_tokens is not None
            span = self.latency_ns - self.ttft_ns
            after = n - self.first_chunk_tokens
            keep &= after >= 1
        return np.asarray(span[keep] / after[keep], dtype=np.float64)

    def save(self, path: Path) -> None:
        """Write them as repro keeps a served test's requests (`REQUESTS_FILE`), under a
        temporary name first."""
        arrays = {
            "start_ns": self.start_ns.astype(np.float64),
            "ttft_ns": self.ttft_ns.astype(np.float64),
            "latency_ns": self.latency_ns.astype(np.float64),
            "output_tokens": self.output_tokens.astype(np.int64),
            "counter": np.array(self.counter),
        }
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                arrays[name] = np.asarray(value, dtype=np.float64)
        tmp = path.with_name(f".{path.name}.tmp")
        with tmp.open("wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
        tmp.replace(path)

    @staticmethod
    def load(path: Path) -> Requests | None:
        """A served test's requests as repro kept them; None when the file is absent or not
        one of them (an older run, or damage: the comparison then has the summary only)."""
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                counter = str(f["counter"])
                arrays = {
                    k: np.asarray(f[k])
                    for k in ("start_ns", "ttft_ns", "latency_ns", "output_tokens", *_OPTIONAL)
                    if k in f.files
                }
        except (OSError, ValueError, KeyError):
            return None
        sizes = {a.shape for a in arrays.values()}
        needed = {"start_ns", "ttft_ns", "latency_ns", "output_tokens"}
        if not needed <= set(arrays) or len(sizes) != 1 or counter not in ("server", "tokenizer"):
            return None
        if any(a.dtype.kind not in "iuf" for a in arrays.values()):
            return None
        return Requests(counter=counter, **arrays)  # type: ignore[arg-type]


def _spread(name: str, values: np.ndarray) -> dict[str, float]:
    """Mean and percentiles (LoadGen's rule) of the finite values, in the family's keys."""
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return {}
    out = {f"{name}_mean_ns": float(np.mean(v))}
    for label, q in PERCENTILES.items():
        out[f"{name}_{label}_ns"] = float(v[min(int(v.size * q), v.size - 1)])
    return out
