"""The torch causal LM: the KV-cache decode equals recomputing the whole sequence, a request's
tokens do not depend on what shares the batch, and a checkpoint of the same architecture loads
(tiny models; skipped without torch)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from repro.artifacts.lm_recipes import write_tinylm

torch = pytest.importorskip("torch", reason="the torch backend needs torch (repro[torch])")

from repro.backends.torch.lm import LmLoadError, SlotDecoder, load_lm  # noqa: E402

SMALL = {"seed": 3, "vocab_size": 48, "d_model": 16, "n_layers": 2, "n_heads": 2, "d_ff": 32}


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("lm") / "m.npz"
    write_tinylm(path, **SMALL, context=48)
    return path.read_bytes()


def _decoder(data: bytes, slots: int) -> SlotDecoder:
    model, _ = load_lm(data, Path("m.npz"))
    return SlotDecoder(model, slots=slots, device=torch.device("cpu"), dtype=torch.float32)


def _generate(dec: SlotDecoder, slot: int, prompt: np.ndarray, n: int, noise: bool) -> list[int]:
    """n tokens of `prompt` in `slot`; with `noise`, the other slots decode random tokens."""
    rng = np.random.default_rng(slot)
    out = [dec.prefill(slot, prompt)]
    pos = len(prompt)
    for _ in range(n - 1):
        tokens = rng.integers(0, 48, dec.slots) if noise else np.zeros(dec.slots, np.int64)
        positions = rng.integers(0, 40, dec.slots) if noise else np.zeros(dec.slots, np.int64)
        tokens[slot], positions[slot] = out[-1], pos
        out.append(int(dec.step(tokens, positions)[slot]))
        pos += 1
    return out


PROMPT = np.array([5, 9, 1, 33, 7, 2], dtype=np.int64)


def test_cached_decoding_equals_recomputing_the_sequence(model_bytes: bytes) -> None:
    got = _generate(_decoder(model_bytes, 1), 0, PROMPT, 8, noise=False)
    seq, want = list(PROMPT), []
    for _ in range(8):
        token = _decoder(model_bytes, 1).prefill(0, np.array(seq))
        want.append(token)
        seq.append(token)
    assert got == want


def test_a_request_gets_the_same_tokens_whatever_shares_the_batch(model_bytes: bytes) -> None:
    alone = _generate(_decoder(model_bytes, 1), 0, PROMPT, 10, noise=False)
    shared = _generate(_decoder(model_bytes, 4), 2, PROMPT, 10, noise=True)
    assert alone == shared


def test_a_torch_checkpoint_of_the_architecture_loads(model_bytes: bytes) -> None:
    model, _ = load_lm(model_bytes, Path("m.npz"))
    buf = io.BytesIO()
    config = {k: getattr(model.config, k) for k in model.config.__dataclass_fields__}
    torch.save({"config": config, "state_dict": model.state_dict()}, buf)
    again, fmt = load_lm(buf.getvalue(), Path("m.pt"))
    assert "torch checkpoint" in fmt
    dec = SlotDecoder(again, slots=1, device=torch.device("cpu"), dtype=torch.float32)
    assert dec.prefill(0, PROMPT) == _decoder(model_bytes, 1).prefill(0, PROMPT)


def test_weights_of_another_shape_are_refused_by_name(model_bytes: bytes) -> None:
    model, _ = load_lm(model_bytes, Path("m.npz"))
    config = {k: getattr(model.config, k) for k in model.config.__dataclass_fields__}
    buf = io.BytesIO()
    torch.save({"config": {**config, "d_ff": 64}, "state_dict": model.state_dict()}, buf)
    with pytest.raises(LmLoadError, match="not those of the TinyLM architecture"):
        load_lm(buf.getvalue(), Path("m.pt"))


def test_a_file_that_is_no_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LmLoadError, match="not a zip"):
        load_lm(b"hello", Path("m.bin"))
    buf = io.BytesIO()
    torch.save({"something": 1}, buf)
    with pytest.raises(LmLoadError, match=r"torch\.save"):
        load_lm(buf.getvalue(), Path("m.pt"))
