"""The served backend: LoadGen's queries as streaming requests to an OpenAI-compatible server.

The server itself is the spec's `server` section (`repro.servers`: the engine repro starts in
the pinned environment, or an external endpoint); this backend is the client side: the API
(completions or chat), the sampling (temperature 0 and a seed: the same prompt, the same
answer), how many connections at once, each request's deadline. Its worker is the served SUT
(`repro.harness.served`, aiohttp), which imports no inference library.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.backends.base import BackendPlugin
from repro.runs.facts import BackendFacts
from repro.spec.sections import BackendSpecBase
from repro.spec.types import Accepts, SpecModel


class ServedOptions(SpecModel):
    """How the client asks: these change what the server computes or how fast it answers."""

    api: Literal["completions", "chat"] = Field(
        "completions",
        description="/v1/completions (the prompt as it is) or /v1/chat/completions (the prompt "
        "as a user message, through the model's chat template)",
    )
    temperature: Annotated[float, Field(ge=0, le=2), Accepts("0 to 2")] = Field(
        0.0, description="0: greedy, the same prompt gives the same answer"
    )
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = Field(
        0, description="the request's seed (null: none sent)"
    )
    max_connections: Annotated[int, Field(ge=1, le=4096), Accepts("1 to 4096")] = Field(
        64, description="requests in flight at most (keep-alive connections)"
    )
    request_timeout_s: Annotated[float, Field(ge=1, le=3600), Accepts("1 to 3600")] = Field(
        120.0, description="one request's deadline, its whole answer included"
    )
    extra_body: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="fields every request carries besides the OpenAI ones (vLLM's ignore_eos, "
        "SGLang's regex...)",
    )


class ServedBackend(BackendSpecBase):
    """`"backend": {"name": "served", "options": {...}}`."""

    name: Literal["served"] = Field(description="the backend's plug-in")
    options: ServedOptions = Field(default_factory=ServedOptions)


class ServedFacts(BackendFacts):
    """What a served test records of its client and its server's answers."""

    #: (the model's name in the API is its folder's path for some engines: where the cache
    #: is, not what was served; the server's record pins the model)
    identity: ClassVar[tuple[str, ...]] = ("name", "client", "version", "api")

    client: str | None = None
    model: str | None = Field(None, description="the model's name in the API")
    requests: int | None = None
    chunks: int | None = Field(None, description="stream events read (not tokens)")

    def on_cpu(self) -> bool | None:
        return None  # the server computes; where is the server's record's to say


class ServedPlugin(BackendPlugin):
    """An OpenAI-compatible server driven over HTTP (the client: aiohttp)."""

    name: ClassVar[str] = "served"
    spec_model = ServedBackend
    engine = "repro.harness.served:ServedSUT"
    facts = ServedFacts
    # the client's; the server engine's packages are locked beside them (`repro.servers`)
    worker_packages = ("mlcommons-loadgen", "numpy", "pydantic", "aiohttp", "tokenizers")
    install_hint = "pip install 'repro[serve]'"
    key_packages = ("aiohttp",)
    served = True


PLUGIN = ServedPlugin()
