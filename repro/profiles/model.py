"""A layer profile as stored in a run (`profile/<Scenario>/profile.json`), and its kernel calls.

Format history (the `schema` field):
# repro.profile/v1 - first version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import SpecError
from repro.spec.types import ScenarioName

PROFILE_SCHEMA: Final = "repro.profile/v1"


class LayerCall(NamedTuple):
    """One kernel call as a backend's profiler saw it, on the wall clock (`time.time_ns`)."""

    name: str
    op_type: str
    kind: str
    start_ns: int
    dur_ns: int
    #: elements of its (first) output, whatever the layout (shown; not used to match)
    out_elems: int | None = None
    #: the thread it ran on, as the profiler numbers threads (a track of its own in the trace)
    thread: int = 0


class Span(NamedTuple):
    """A stretch of the profiled pass on the wall clock: a LoadGen query or one `predict`."""

    start_ns: int
    end_ns: int
    samples: int


#: a count or a time in ns that a profile can hold (a tampered file's 10**400 is refused)
_NS = Field(ge=0, le=2**63)


class LayerRow(BaseModel):
    """One layer of the model: every call of it during the profiled inferences."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str = Field(description="the backend's name of the layer (a node, a fused kernel)")
    op_type: str = Field(description="its operator(s) as the backend names them")
    kind: str = Field(description="the kind of operator, the same across backends (conv, ...)")
    position: int = Field(ge=0, le=2**31, description="its order within one inference, from 0")
    out_elems: int | None = Field(None, description="elements of its output, when known")
    calls: int = Field(ge=1, le=2**63)
    total_ns: int = Field(ge=0, le=2**63)
    median_ns: int = Field(ge=0, le=2**63, description="median time of one call")
    per_sample_ns: float = Field(ge=0, le=2**63, description="total time / samples inferred")
    share: float = Field(ge=0, le=1e6, description="total time / the inferences' time")


class Overhead(BaseModel):
    """The profiler's cost: the same inferences timed with and without it, in one process."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    rel: float | None = Field(ge=-1, le=1e6, description="profiled median / unprofiled - 1")
    profiled_median_ns: int = Field(ge=0, le=2**63)
    unprofiled_median_ns: int = Field(ge=0, le=2**63)
    inferences: int = Field(ge=0, le=2**63, description="inferences timed on each side")
    method: str


class Profile(BaseModel):
    """Where the inference time of a profiled pass went, layer by layer."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)
    schema_: Literal["repro.profile/v1"] = Field(PROFILE_SCHEMA, alias="schema")
    backend: str
    profiler: str = Field(description="which profiler measured the layers")
    scenario: ScenarioName
    queries: int = Field(ge=1, le=2**63, description="LoadGen queries of the profiled pass")
    inferences: int = Field(ge=1, le=2**63, description="predict() calls the table covers")
    samples: int = Field(ge=1, le=2**63, description="samples those inferences computed")
    inference_ns: int = Field(ge=1, le=2**63, description="time inside predict(), summed")
    layers_ns: int = Field(ge=0, le=2**63, description="the layers' time, summed")
    outside_ns: int = Field(
        ge=-(2**63),
        le=2**63,
        description="inference time outside every layer (the framework, copies); negative when "
        "layers ran in parallel",
    )
    overhead: Overhead | None = None
    rows: list[LayerRow] = Field(description="one per layer, in execution order")
    raw_trace: str | None = Field(None, description="the profiler's own output, beside this file")
    timeline: str | None = Field(None, description="the Chrome/Perfetto trace, beside this file")
    notes: list[str] = Field(default_factory=list)

    def dump(self) -> str:
        return self.model_dump_json(by_alias=True, indent=1) + "\n"

    def coverage(self) -> float | None:
        """The layers' time per inference / the unprofiled inference time (median): how much of
        the time the measured run spends the table accounts for."""
        if self.overhead is None or not self.inferences or not self.overhead.unprofiled_median_ns:
            return None
        return self.layers_ns / self.inferences / self.overhead.unprofiled_median_ns

    def top(self, n: int) -> list[LayerRow]:
        """The `n` layers that took the most time."""
        return sorted(self.rows, key=lambda r: -r.total_ns)[:n]


def read_profile(path: Path) -> Profile:
    """A stored profile; a damaged or foreign file is a SpecError naming it."""
    hint = "profile the run again (`repro profile SPEC --into RUN`) or delete the folder"
    try:
        doc = json.loads(path.read_bytes())
    except ValueError as exc:
        raise SpecError(f"{path}: not JSON ({exc})", hint=hint) from None
    try:
        return Profile.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        raise SpecError(f"{path}: {where}: {err['msg']}", hint=hint) from None
