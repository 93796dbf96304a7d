"""Continuous batching of a generative SUT: requests join and leave the running batch between
decode steps, each with its own KV cache slot. No LoadGen here: `first` and `done` report the
tokens (LoadGen's FirstTokenComplete and QuerySamplesComplete in `repro.harness.generation`,
a plain list in tests and in `bench/llm_overhead.py`)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

#: a first token: the query id and its token (a view, alive until the call returns)
Report = Callable[[int, np.ndarray], None]
#: the queries that ended in one step, each with its tokens: one call (LoadGen's
#: QuerySamplesComplete takes them all at once)
Done = Callable[[list[tuple[int, np.ndarray]]], None]


class Decoder(Protocol):
    """What batching needs of an engine (`repro.backends.torch.lm.SlotDecoder`)."""

    slots: int

    def prefill(self, slot: int, prompt: np.ndarray) -> int: ...  # pragma: no cover

    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray: ...  # pragma: no cover


@dataclass
class _Request:
    qid: int
    index: int
    issued_ns: int
    out: np.ndarray  # int32, max_new_tokens long; out[:n] generated so far
    n: int = 0


@dataclass
class GenerationLog:
    """What the SUT did: each query's latency (issue to last token), samples and tokens."""

    latencies_ns: list[int] = field(default_factory=list)
    samples: int = 0
    tokens: int = 0
    steps: int = 0
    #: time inside the decoder (prefills and steps): the rest of the SUT's time is its own
    decode_ns: int = 0

    def array(self) -> np.ndarray:
        return np.asarray(self.latencies_ns, dtype=np.int64)


class ContinuousBatcher:
    """Requests wait in a queue; between two decode steps every free slot takes a waiting
    request (its prefill gives the first token, reported at once), one step decodes a token for
    every running request, and a request that has its last token is reported and leaves."""

    def __init__(
        self,
        decoder: Decoder,
        prompts: Sequence[np.ndarray],
        *,
        max_new_tokens: int,
        eos_token_id: int | None,
        first: Report,
        done: Done,
        log: GenerationLog | None = None,
    ) -> None:
        self.decoder, self.prompts = decoder, prompts
        self.max_new, self.eos = max_new_tokens, eos_token_id
        self.first, self.done = first, done
        self.log = log if log is not None else GenerationLog()
        slots = decoder.slots
        self.free = list(range(slots - 1, -1, -1))
        self.active: dict[int, _Request] = {}
        self.tokens = np.zeros(slots, dtype=np.int64)
        self.positions = np.zeros(slots, dtype=np.int64)
        self.waiting: deque[tuple[int, int, int]] = deque()
        self.cv = threading.Condition()
        self.stopped = False
        self.thread: threading.Thread | None = None

    def submit(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """Queue requests (LoadGen's issue thread); the decoding thread takes them."""
        now = time.perf_counter_ns()
        with self.cv:
            self.waiting.extend((q, i, now) for q, i in zip(ids, indices, strict=True))
            self.cv.notify()

    def start(self) -> None:
        self.thread = threading.Thread(target=self.serve, name="repro-decode", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Let the decoding thread finish what it holds, then end it."""
        with self.cv:
            self.stopped = True
            self.cv.notify()
        if self.thread is not None:
            self.thread.join()

    def serve(self) -> None:
        """The decoding loop (its own thread, or inline once everything is submitted)."""
        while True:
            with self.cv:
                while not self.waiting and not self.active and not self.stopped:
                    self.cv.wait()
                if not self.waiting and not self.active:
                    return
                n = min(len(self.free), len(self.waiting))
                joining = [self.waiting.popleft() for _ in range(n)]
            for qid, index, issued in joining:
                self._join(qid, index, issued)
            if self.active:
                self._step()

    def _join(self, qid: int, index: int, issued_ns: int) -> None:
        slot = self.free.pop()
        prompt = self.prompts[index]
        req = _Request(qid, index, issued_ns, np.empty(self.max_new, dtype=np.int32))
        t = time.perf_counter_ns()
        token = self.decoder.prefill(slot, prompt)
        self.log.decode_ns += time.perf_counter_ns() - t
        req.out[0] = token
        req.n = 1
        self.first(qid, req.out[:1])
        if req.n == self.max_new or token == self.eos:
            self._finish([(slot, req)])
            return
        self.active[slot] = req
        self.tokens[slot] = token
        self.positions[slot] = len(prompt)

    def _step(self) -> None:
        t = time.perf_counter_ns()
        out = self.decoder.step(self.tokens, self.positions)
        self.log.decode_ns += time.perf_counter_ns() - t
        self.log.steps += 1
        ended = []
        for slot, req in self.active.items():
            token = int(out[slot])
            req.out[req.n] = token
            req.n += 1
            if req.n == self.max_new or token == self.eos:
                ended.append((slot, req))
            else:
                self.tokens[slot] = token
                self.positions[slot] += 1
        if ended:
            for slot, _ in ended:
                del self.active[slot]
            self._finish(ended)

    def _finish(self, ended: list[tuple[int, _Request]]) -> None:
        """Report the requests that ended together in one call, and free their slots."""
        self.done([(req.qid, req.out[: req.n]) for _, req in ended])
        log, now = self.log, time.perf_counter_ns()
        for slot, req in ended:
            log.latencies_ns.append(now - req.issued_ns)
            log.samples += 1
            log.tokens += req.n
            self.tokens[slot] = 0
            self.positions[slot] = 0
            self.free.append(slot)


def generate_all(
    decoder: Decoder,
    prompts: Sequence[np.ndarray],
    indices: Sequence[int],
    *,
    max_new_tokens: int,
    eos_token_id: int | None = None,
) -> tuple[dict[int, np.ndarray], GenerationLog]:
    """Every prompt of `indices` through the batcher, inline, without LoadGen: the generated
    tokens by position in `indices` (the plain run that tests and benchmarks compare with)."""
    outputs: dict[int, np.ndarray] = {}
    batcher = ContinuousBatcher(
        decoder,
        prompts,
        max_new_tokens=max_new_tokens,
        eos_token_id=eos_token_id,
        first=_ignore,
        done=lambda ended: outputs.update((qid, toks.copy()) for qid, toks in ended),
    )
    batcher.submit(range(len(indices)), indices)
    batcher.stopped = True
    batcher.serve()
    return outputs, batcher.log


def _ignore(qid: int, tokens: Any) -> None:
    pass
