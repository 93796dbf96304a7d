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
from typing import Protocol

import numpy as np

#: a first token: the query id and its slot; the token is `out[slot, 0]` of the slots' token
#: buffers (`ContinuousBatcher.out`)
Report = Callable[[int, int], None]
#: the queries that ended in one step, each as (query id, slot, tokens generated): its tokens
#: are `out[slot, :tokens]` until the call returns; one call (LoadGen's QuerySamplesComplete
#: takes them all at once)
Done = Callable[[list[tuple[int, int, int]]], None]


class Decoder(Protocol):
    """What batching needs of an engine (`repro.backends.torch.lm.SlotDecoder`)."""

    slots: int

    def prefill(self, slot: int, prompt: np.ndarray) -> int: ...  # pragma: no cover

    #: an array of a token for each slot (the batcher copies it)
    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray: ...  # pragma: no cover


@dataclass
class _Request:
    qid: int
    issued_ns: int
    #: the decode steps done when it joined: its tokens after the first come from the steps
    #: after that one
    start: int


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
    every running request, and a request that has its last token is reported and leaves.

    A step costs a few small array writes however many requests run (what the SUT adds to each
    token is what `bench/llm_overhead.py` measures): its tokens become the next input and go to
    one column of a ring (max(2, max_new_tokens) columns, a row a slot), and the positions
    advance; with an end token, one look for it among the step's tokens. A request's tokens are
    copied out of the ring once, when it ends, at a step known when it joined or at an end
    token."""

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
        out: np.ndarray | None = None,
    ) -> None:
        self.decoder, self.prompts = decoder, prompts
        self.max_new, self.eos = max_new_tokens, eos_token_id
        self.first, self.done = first, done
        self.log = log if log is not None else GenerationLog()
        slots = decoder.slots
        self.free = list(range(slots - 1, -1, -1))
        self.active: dict[int, _Request] = {}
        #: the step that gives each running slot its last token (slots by step)
        self.ends: dict[int, list[int]] = {}
        #: step k's tokens are column k % columns (a slot's history is a row)
        self.columns = max(2, max_new_tokens)
        self.ring = np.zeros((slots, self.columns), dtype=np.int32)
        #: the last tokens, the next step's input (a free slot's token is any token)
        self.tokens = np.zeros(slots, dtype=np.int64)
        #: a free slot decodes at position 0 (its answer ignored): running slots advance by 1
        self.positions = np.zeros(slots, dtype=np.int64)
        self.running = np.zeros(slots, dtype=np.int64)
        #: each slot's generated tokens as reported: int32, a row a slot, reused
        shape = (slots, max_new_tokens)
        if out is None:
            out = np.zeros(shape, dtype=np.int32)
        elif out.shape != shape or out.dtype != np.int32 or not out.flags.c_contiguous:
            raise ValueError(f"out: {out.dtype} {out.shape}, not a C-contiguous int32 {shape}")
        self.out = out
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
            # the lock only to take requests or to wait: a request submitted just after the
            # look at `waiting` joins between the next two steps
            if not self.active or (self.waiting and self.free):
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
        steps = self.log.steps
        t = time.perf_counter_ns()
        token = self.decoder.prefill(slot, prompt)
        self.log.decode_ns += time.perf_counter_ns() - t
        self.out[slot, 0] = token
        self.first(qid, slot)
        self.active[slot] = _Request(qid, issued_ns, steps)
        if self.max_new == 1 or token == self.eos:
            self._finish([slot], steps)
            return
        self.ends.setdefault(steps + self.max_new - 1, []).append(slot)
        self.tokens[slot] = token
        self.positions[slot] = len(prompt)
        self.running[slot] = 1

    def _step(self) -> None:
        t = time.perf_counter_ns()
        out = self.decoder.step(self.tokens, self.positions)
        self.log.decode_ns += time.perf_counter_ns() - t
        self.log.steps = step = self.log.steps + 1
        self.ring[:, step % self.columns] = out
        self.tokens[:] = out  # a copy: the decoder's array may be read-only or reused
        self.positions += self.running
        ended = self.ends.pop(step, None)
        if self.eos is not None and self.eos in out.tolist():
            early = [s for s in self.active if out[s] == self.eos and (not ended or s not in ended)]
            for slot in early:
                self.ends[self.active[slot].start + self.max_new - 1].remove(slot)
            ended = (ended or []) + early
        if ended:
            self._finish(ended, step)

    def _finish(self, slots: list[int], step: int) -> None:
        """Report the requests that ended together at `step` in one call, and free their
        slots."""
        cols, ended = self.columns, []
        for slot in slots:
            req = self.active.pop(slot)
            n = step - req.start + 1
            if n > 1:  # steps start+1 .. step: one stretch of the slot's row, or two
                out, row = self.out[slot], self.ring[slot]
                a = (req.start + 1) % cols
                b = a + n - 1
                if b <= cols:
                    out[1:n] = row[a:b]
                else:
                    out[1 : 1 + cols - a] = row[a:]
                    out[1 + cols - a : n] = row[: b - cols]
            ended.append((req, slot, n))
        self.done([(req.qid, slot, n) for req, slot, n in ended])
        log, now = self.log, time.perf_counter_ns()
        for req, slot, n in ended:
            log.latencies_ns.append(now - req.issued_ns)
            log.samples += 1
            log.tokens += n
            self.positions[slot] = 0
            self.running[slot] = 0
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
    out = np.zeros((decoder.slots, max_new_tokens), dtype=np.int32)
    batcher = ContinuousBatcher(
        decoder,
        prompts,
        max_new_tokens=max_new_tokens,
        eos_token_id=eos_token_id,
        first=_ignore,
        done=lambda ended: outputs.update((q, out[s, :n].copy()) for q, s, n in ended),
        out=out,
    )
    batcher.submit(range(len(indices)), indices)
    batcher.stopped = True
    batcher.serve()
    return outputs, batcher.log


def _ignore(qid: int, slot: int) -> None:
    pass
