"""vLLM's OpenAI-compatible server (`vllm.entrypoints.openai.api_server`): a GPU machine's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.servers.base import EngineFlags, ServerEngine, flag_arguments
from repro.spec.sections import ServerSectionBase

SERVED_NAME = "model"


class VllmFlags(EngineFlags):
    """vLLM's flags that change what it computes or how fast."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_model_len: Annotated[int, Field(ge=1)] | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    tensor_parallel_size: Annotated[int, Field(ge=1, le=1024)] | None = None
    max_num_seqs: Annotated[int, Field(ge=1)] | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    enforce_eager: bool = False
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = 0


class VllmSection(ServerSectionBase):
    """`"server": {"engine": "vllm", "model": ..., "flags": {...}}`."""

    engine: Literal["vllm"] = Field(description="the server engine's plug-in")
    flags: VllmFlags = Field(default_factory=VllmFlags)


class Vllm(ServerEngine):
    name: ClassVar[str] = "vllm"
    spec_model = VllmSection
    packages = ("vllm", "torch", "transformers", "tokenizers")
    module = "vllm.entrypoints.openai.api_server"
    install_hint = "pip install vllm (a CUDA machine: vLLM's CPU build is a wheel of its own)"

    def arguments(self, model: Path, host: str, port: int, flags: EngineFlags) -> list[str]:
        assert isinstance(flags, VllmFlags)
        return [
            "--model",
            str(model),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            host,
            "--port",
            str(port),
            *flag_arguments(flags),
        ]

    def served_name(self, model: Path) -> str:
        return SERVED_NAME


ENGINE = Vllm()
