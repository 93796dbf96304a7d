"""SGLang's OpenAI-compatible server (`sglang.launch_server`): a GPU machine's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.servers.base import EngineFlags, ServerEngine, flag_arguments
from repro.spec.sections import ServerSectionBase

SERVED_NAME = "model"


class SglangFlags(EngineFlags):
    """SGLang's flags that change what it computes or how fast."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    tp_size: Annotated[int, Field(ge=1, le=1024)] | None = None
    mem_fraction_static: Annotated[float, Field(gt=0, le=1)] | None = None
    max_running_requests: Annotated[int, Field(ge=1)] | None = None
    quantization: str | None = None
    attention_backend: str | None = None
    random_seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = 0


class SglangSection(ServerSectionBase):
    """`"server": {"engine": "sglang", "model": ..., "flags": {...}}`."""

    engine: Literal["sglang"] = Field(description="the server engine's plug-in")
    flags: SglangFlags = Field(default_factory=SglangFlags)


class Sglang(ServerEngine):
    name: ClassVar[str] = "sglang"
    spec_model = SglangSection
    packages = ("sglang", "torch", "transformers", "flashinfer-python")
    module = "sglang.launch_server"
    install_hint = "pip install 'sglang[all]' (a CUDA machine)"

    def arguments(self, model: Path, host: str, port: int, flags: EngineFlags) -> list[str]:
        assert isinstance(flags, SglangFlags)
        return [
            "--model-path",
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


ENGINE = Sglang()
