"""Continuous batching with a fake decoder: requests join and leave between steps, the first
token is reported before the rest, and every request gets its own tokens whatever shares the
batch (no torch, no LoadGen)."""

from __future__ import annotations

from functools import partial

import numpy as np

from repro.harness.batching import ContinuousBatcher, generate_all


class CountingDecoder:
    """Token t+1 follows t; a prompt's first token is its last id + 1. Records each step's
    occupancy, so that tests see who shared the batch."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.occupied: list[int] = []
        self.seen: list[tuple[int, int]] = []  # (slot, position) of each active row

    def prefill(self, slot: int, prompt: np.ndarray) -> int:
        return int(prompt[-1]) + 1

    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        self.occupied.append(int(np.count_nonzero(positions)))
        return tokens + 1


PROMPTS = [np.array([10 * i + 1, 10 * i + 2], dtype=np.int64) for i in range(6)]


def test_every_prompt_gets_its_own_tokens() -> None:
    outputs, log = generate_all(CountingDecoder(2), PROMPTS, range(6), max_new_tokens=4)
    for i in range(6):
        start = 10 * i + 3
        assert outputs[i].tolist() == [start, start + 1, start + 2, start + 3]
    assert log.samples == 6
    assert log.tokens == 24
    assert log.decode_ns > 0  # the time inside the decoder, for the SUT's own share


def test_requests_join_as_slots_free_up_between_steps() -> None:
    dec = CountingDecoder(2)
    events: list[tuple[str, int]] = []
    batcher = ContinuousBatcher(
        dec,
        PROMPTS,
        max_new_tokens=3,
        eos_token_id=None,
        first=lambda q, t: events.append(("first", q)),
        done=lambda ended: events.extend(("done", q) for q, _, _ in ended),
    )
    batcher.submit([0, 1, 2], [0, 1, 2])
    batcher.stopped = True
    batcher.serve()
    # two slots: 0 and 1 run together, 2 joins once they leave; never more than two at once
    assert events.index(("first", 0)) < events.index(("done", 0))
    assert events.index(("done", 1)) < events.index(("first", 2))
    assert max(dec.occupied) == 2
    assert batcher.log.steps == 4  # 2 steps for the pair, 2 for the third


def test_a_late_request_joins_a_running_batch() -> None:
    dec = CountingDecoder(4)
    done: dict[int, list[int]] = {}
    batcher = ContinuousBatcher(
        dec,
        PROMPTS,
        max_new_tokens=5,
        eos_token_id=None,
        first=lambda q, t: None,
        done=lambda ended: done.update((q, batcher.out[s, :n].tolist()) for q, s, n in ended),
    )
    batcher.submit([0], [0])
    batcher._join(*batcher.waiting.popleft())
    batcher._step()  # request 0 is running alone
    batcher.submit([1], [3])
    batcher.stopped = True
    batcher.serve()  # request 1 joins between steps, while 0 is still decoding
    assert dec.occupied[:2] == [1, 2]
    assert done == {0: [3, 4, 5, 6, 7], 1: [33, 34, 35, 36, 37]}


def test_an_end_token_ends_a_generation_early() -> None:
    outputs, log = generate_all(
        CountingDecoder(2), PROMPTS[:1], [0], max_new_tokens=8, eos_token_id=5
    )
    assert outputs[0].tolist() == [3, 4, 5]
    assert log.tokens == 3


def test_one_new_token_is_the_first_token_alone() -> None:
    outputs, log = generate_all(CountingDecoder(2), PROMPTS, range(3), max_new_tokens=1)
    assert [o.tolist() for o in outputs.values()] == [[3], [13], [23]]
    assert log.steps == 0


def test_the_decoding_thread_serves_what_is_submitted_and_stops() -> None:
    done: list[int] = []
    batcher = ContinuousBatcher(
        CountingDecoder(2),
        PROMPTS,
        max_new_tokens=2,
        eos_token_id=None,
        first=lambda q, t: None,
        done=lambda ended: done.extend(q for q, _, _ in ended),
    )
    batcher.start()
    batcher.submit([7, 8, 9], [0, 1, 2])
    batcher.stop()
    assert sorted(done) == [7, 8, 9]


def test_requests_that_end_in_one_step_are_reported_in_one_call() -> None:
    calls: list[list[int]] = []
    batcher = ContinuousBatcher(
        CountingDecoder(3),
        PROMPTS,
        max_new_tokens=3,
        eos_token_id=None,
        first=lambda q, t: None,
        done=lambda ended: calls.append([q for q, _, _ in ended]),
    )
    batcher.submit([0, 1, 2, 3], [0, 1, 2, 3])
    batcher.stopped = True
    batcher.serve()
    # 0-2 share the slots and end together (one call to LoadGen); 3 runs alone after them
    assert calls == [[0, 1, 2], [3]]


def test_an_end_token_frees_its_slot_while_the_others_decode_on() -> None:
    dec = CountingDecoder(2)
    outputs, log = generate_all(dec, PROMPTS, range(3), max_new_tokens=4, eos_token_id=5)
    # 0 ends at its end token after two steps; 2 takes its slot while 1 is still decoding
    assert {q: t.tolist() for q, t in outputs.items()} == {
        0: [3, 4, 5],
        1: [13, 14, 15, 16],
        2: [23, 24, 25, 26],
    }
    assert dec.occupied == [2, 2, 2, 1, 1]
    assert log.tokens == 11


class TableDecoder:
    """A decoder whose next token depends on the last token and the position (a fixed table,
    vocabulary 7), so that a token given to the wrong slot or position shows in the output."""

    def __init__(self, slots: int, seed: int) -> None:
        self.slots = slots
        self.table = np.random.Generator(np.random.PCG64(seed)).integers(0, 7, (7, 64))

    def prefill(self, slot: int, prompt: np.ndarray) -> int:
        return int(self.table[int(prompt[-1]) % 7, len(prompt) % 64])

    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        out = self.table[tokens % 7, positions % 64]
        out.setflags(write=False)  # a decoder may hand out a read-only array
        return out


def _collect(
    outputs: dict[int, list[int]], out: np.ndarray, ended: list[tuple[int, int, int]]
) -> None:
    outputs.update((q, out[s, :n].tolist()) for q, s, n in ended)


def _one_by_one(dec: TableDecoder, prompt: np.ndarray, new: int, eos: int | None) -> list[int]:
    """The generation of one prompt alone, token by token: what batching must not change."""
    tokens = [dec.prefill(0, prompt)]
    while len(tokens) < new and tokens[-1] != eos:
        tokens.append(int(dec.table[tokens[-1] % 7, (len(prompt) + len(tokens) - 1) % 64]))
    return tokens


def test_batching_never_changes_a_generation_whatever_shares_the_batch() -> None:
    rng = np.random.Generator(np.random.PCG64(7))
    prompts = [rng.integers(0, 7, int(rng.integers(1, 9))) for _ in range(12)]
    for case in range(300):
        slots, new = int(rng.integers(1, 5)), int(rng.choice([1, 2, 3, 5, 8]))
        eos = None if case % 3 == 0 else int(rng.integers(0, 7))
        dec = TableDecoder(slots, seed=case)
        out = np.zeros((slots, new), dtype=np.int32)
        outputs: dict[int, list[int]] = {}
        batcher = ContinuousBatcher(
            dec,
            prompts,
            max_new_tokens=new,
            eos_token_id=eos,
            first=lambda q, s: None,
            done=partial(_collect, outputs, out),
            out=out,
        )
        order = rng.permutation(len(prompts))
        submitted = 0
        while submitted < len(order) or batcher.waiting or batcher.active:  # arrivals between steps
            arriving = int(rng.integers(0, 3))
            batch = order[submitted : submitted + arriving]
            batcher.submit([int(i) for i in batch], [int(i) for i in batch])
            submitted += len(batch)
            while batcher.waiting and batcher.free:
                batcher._join(*batcher.waiting.popleft())
            if batcher.active:
                batcher._step()
        expected = {i: _one_by_one(dec, prompts[i], new, eos) for i in range(len(prompts))}
        assert outputs == expected, (case, slots, new, eos)
