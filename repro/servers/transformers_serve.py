"""`transformers serve`: Hugging Face transformers' own OpenAI-compatible server (CPU or GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.servers.base import EngineFlags, ServerEngine, flag_arguments
from repro.spec.sections import ServerSectionBase
from repro.spec.types import Accepts


class TransformersServeFlags(EngineFlags):
    """`transformers serve`'s flags that change what it computes or how fast."""

    device: str = Field("cpu", description="where it computes: cpu, cuda:0, auto")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="the weights' type (auto: as stored)"
    )
    attn_implementation: str | None = Field(None, description="eager, sdpa, flash_attention_2")
    continuous_batching: bool = Field(False, description="batch requests as they arrive")
    compile: bool = Field(False, description="torch.compile the model")
    max_model_len: Annotated[int, Field(ge=1, le=1_048_576), Accepts("1 to 1048576")] | None = (
        Field(None, description="the longest request, prompt and answer, in tokens")
    )
    default_seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = Field(
        None, description="torch's seed in the server"
    )


class TransformersServeSection(ServerSectionBase):
    """`"server": {"engine": "transformers-serve", "model": ..., "flags": {...}}`."""

    engine: Literal["transformers-serve"] = Field(description="the server engine's plug-in")
    flags: TransformersServeFlags = Field(default_factory=TransformersServeFlags)


class TransformersServe(ServerEngine):
    """transformers' `serve` command, with the model given on its command line (loaded once)."""

    name: ClassVar[str] = "transformers-serve"
    spec_model = TransformersServeSection
    packages = ("transformers[serving]", "torch", "tokenizers", "safetensors", "fastapi", "uvicorn")
    module = "transformers.cli.transformers"
    install_hint = "pip install torch==2.13.0 'transformers[serving]==5.25.0'"

    def arguments(self, model: Path, host: str, port: int, flags: EngineFlags) -> list[str]:
        assert isinstance(flags, TransformersServeFlags)
        return [
            "serve",
            str(model),
            "--host",
            host,
            "--port",
            str(port),
            "--log-level",
            "info",
            *flag_arguments(flags),
        ]


ENGINE = TransformersServe()
