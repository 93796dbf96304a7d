"""The torch generative engine (worker only): a GPT-style causal LM with a KV cache per slot.

`TinyLM` is the architecture of the `tinylm` recipe. Its weights come from the recipe's .npz
(the state_dict's arrays plus `config`) or from a checkpoint a user wrote with
`torch.save({"config": {...}, "state_dict": model.state_dict()})` of the same architecture
(read with `weights_only=True`: tensors and plain values only, no code runs).

`SlotDecoder` is what continuous batching runs on. It holds `slots` requests at once, each with
its own KV cache (one slot of a preallocated cache tensor). A request joins with `prefill`
(its prompt alone, causal attention: the first token) and decodes with the others in `step`,
one token each per call. Every call has a fixed shape (all slots, the whole context, a mask for
each slot's length), so a request's tokens do not depend on which others share the batch nor on
when it joined: greedy decoding gives the same tokens in Offline, Server and a plain loop.
"""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from repro.artifacts.lm_recipes import CONFIG_KEY, LmConfig
from repro.backends.torch import TorchOptions
from repro.backends.torch.engine import resolve_device
from repro.errors import SpecError

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


class LmLoadError(RuntimeError):
    """The model artifact is not a TinyLM .npz nor a torch checkpoint of one."""


class _Attention(nn.Module):
    qkv: nn.Linear
    proj: nn.Linear

    def __init__(self, c: LmConfig) -> None:
        super().__init__()
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)


class _Mlp(nn.Module):
    def __init__(self, c: LmConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(c.d_model, c.d_ff)
        self.out = nn.Linear(c.d_ff, c.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.out(F.gelu(self.fc(x)))
        return out


class _Block(nn.Module):
    ln1: nn.LayerNorm
    attn: _Attention
    ln2: nn.LayerNorm
    mlp: _Mlp

    def __init__(self, c: LmConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(c.d_model)
        self.attn = _Attention(c)
        self.ln2 = nn.LayerNorm(c.d_model)
        self.mlp = _Mlp(c)


class TinyLM(nn.Module):
    """Token and position embeddings, pre-norm blocks, a final norm, the embedding as head."""

    def __init__(self, config: LmConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)


def load_lm(data: bytes, where: Path) -> tuple[TinyLM, str]:
    """The model from its bytes, and the format it came in."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
    except zipfile.BadZipFile:
        raise LmLoadError(
            f"{where}: not a TinyLM .npz nor a torch checkpoint (not a zip)"
        ) from None
    if f"{CONFIG_KEY}.npy" in names:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        config = LmConfig.from_array(arrays.pop(CONFIG_KEY))
        state = {k: torch.from_numpy(v) for k, v in arrays.items()}
        fmt = "tinylm npz (state_dict arrays + config)"
    else:
        try:
            ckpt = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
            config = LmConfig(**{k: int(ckpt["config"][k]) for k in LmConfig.__dataclass_fields__})
            state = ckpt["state_dict"]
        except Exception as exc:  # torch's unpickler raises several kinds
            raise LmLoadError(
                f"{where}: not a TinyLM checkpoint ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); write one with "
                'torch.save({"config": {vocab_size, d_model, n_layers, n_heads, d_ff, context}, '
                '"state_dict": model.state_dict()})'
            ) from None
        fmt = "torch checkpoint (config + state_dict)"
    model = TinyLM(config)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise LmLoadError(
            f"{where}: the weights are not those of the TinyLM architecture its config names "
            f"({str(exc).splitlines()[0]})"
        ) from None
    return model, fmt


class SlotDecoder:
    """`slots` requests decoded together, each with its KV cache; fixed shapes (see module)."""

    def __init__(self, model: TinyLM, *, slots: int, device: torch.device, dtype: torch.dtype):
        c = model.config
        self.model, self.config, self.slots, self.device = model, c, slots, device
        self.heads, self.head_dim = c.n_heads, c.d_model // c.n_heads
        shape = (c.n_layers, slots, c.n_heads, c.context, self.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self._rows = torch.arange(slots, device=device)
        self._positions = torch.arange(c.context, device=device)
        self.head = model.tok_emb.weight  # tied
        self.blocks: list[_Block] = [b for b in model.blocks if isinstance(b, _Block)]

    @torch.inference_mode()
    def prefill(self, slot: int, prompt: np.ndarray) -> int:
        """Run one prompt into `slot`'s cache; its first generated token (greedy)."""
        m, n = self.model, len(prompt)
        ids = torch.from_numpy(np.asarray(prompt, dtype=np.int64)).to(self.device)
        x = m.tok_emb(ids) + m.pos_emb.weight[:n]
        for i, b in enumerate(self.blocks):
            q, k, v = b.attn.qkv(b.ln1(x)).view(n, 3, self.heads, self.head_dim).permute(1, 2, 0, 3)
            self.k[i, slot, :, :n] = k
            self.v[i, slot, :, :n] = v
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b.attn.proj(att.permute(1, 0, 2).reshape(n, -1))
            x = x + b.mlp(b.ln2(x))
        logits = m.ln_f(x[-1]) @ self.head.T
        return int(torch.argmax(logits.float()))

    @torch.inference_mode()
    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """One token for every slot: `tokens[s]` is slot s's last token, at `positions[s]`
        (a free slot passes any token at position 0 and its answer is ignored)."""
        m, b_, d = self.model, self.slots, self.config.d_model
        tok = torch.from_numpy(tokens).to(self.device)
        pos = torch.from_numpy(positions).to(self.device)
        x = m.tok_emb(tok) + m.pos_emb(pos)
        mask = (self._positions[None, :] <= pos[:, None])[:, None, None, :]
        for i, b in enumerate(self.blocks):
            q, k, v = b.attn.qkv(b.ln1(x)).view(b_, 3, self.heads, self.head_dim).unbind(1)
            self.k[i, self._rows, :, pos] = k
            self.v[i, self._rows, :, pos] = v
            att = F.scaled_dot_product_attention(q[:, :, None], self.k[i], self.v[i], mask)
            x = x + b.attn.proj(att.reshape(b_, d))
            x = x + b.mlp(b.ln2(x))
        logits = m.ln_f(x) @ self.head.T
        out: np.ndarray = torch.argmax(logits.float(), dim=-1).cpu().numpy()
        return out


class TorchGenerator:
    """The generative engine of the torch backend: loads the LM, hands out a SlotDecoder."""

    name: ClassVar[str] = "torch"

    def __init__(self) -> None:
        self.options = TorchOptions()
        self.info: dict[str, Any] = {}
        self.device = torch.device("cpu")

    def load(self, model: Path, options: TorchOptions, *, slots: int, model_bytes: bytes) -> None:
        """The model on the spec's device, in its precision, with `slots` KV caches."""
        self.options = options
        self.device = resolve_device(options)
        if options.mode == "compile":
            raise SpecError(
                '$.backend.options.mode: "compile" is for classification models; a generative '
                'workload runs "eager"'
            )
        if options.threads:
            torch.set_num_threads(options.threads)
        if options.interop_threads:
            torch.set_num_interop_threads(options.interop_threads)
        t = time.perf_counter()
        lm, fmt = load_lm(model_bytes, model)
        dtype = _DTYPES[options.precision]
        lm = lm.to(self.device).to(dtype).eval()
        self.config = lm.config
        self.decoder = SlotDecoder(lm, slots=slots, device=self.device, dtype=dtype)
        self.info.update(
            model_format=fmt,
            load_s=round(time.perf_counter() - t, 6),
            architecture=vars(lm.config) if hasattr(lm.config, "__dict__") else {},
            slots=slots,
        )

    def describe(self) -> dict[str, Any]:
        cuda = self.device.type == "cuda"
        return {
            "name": self.name,
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if cuda else "cpu",
            "options": self.options.model_dump(mode="json"),
            "threads_in_effect": torch.get_num_threads(),
            "decoding": "greedy",
            **self.info,
        }
