"""The plan of a dispatched replay (`<run>/dispatch/plan.json`): everything a part needs.

Format history (the `schema` field):
# repro.dispatch/v1 - first version; later: the executor's options in `executor_options` (its
#                     plug-in's options model), where a plan of before held them under the
#                     executor's name (`"slurm": {...}`, null for another executor): such a plan
#                     is read as ever. Later: what each part replays is one `replay` plan
#                     (`repro.runs.plan.ReplayPlan`), where a plan of before held its fields one
#                     by one (`env`, `env_options`, `cache_dir`, `scenarios`, `modes`, the
#                     LoadGen overrides, `probes`): such a plan is read into one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from repro.atomic import atomic_write_text
from repro.dispatch.executors.base import ExecutorOptions
from repro.dispatch.executors.registry import EXECUTORS, get_executor
from repro.errors import SpecError
from repro.jsonio import read_json
from repro.runs import layout
from repro.runs.plan import OVERRIDABLE, ReplayPlan
from repro.spec.io import format_validation_error

#: what a package's contents give the environment (`repro.replay.packaged.unpacked`), which a
#: plan of before held among the environment's options
_PACKAGE_GIVEN = ("wheels", "image_archive", "spack_mirror")


class DispatchPlan(BaseModel):
    """One dispatched replay: the spec as replayed, where and how each part runs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["repro.dispatch/v1"] = Field("repro.dispatch/v1", alias="schema")
    run_id: str
    run_dir: str = Field(description="the run folder while it is built (parts write below it)")
    spec_path: str
    spec: dict[str, Any] = Field(description="the spec as replayed (with --backend-option)")
    replay: ReplayPlan = Field(
        description="what each part replays: the environment and its options, the cache, the "
        "scenarios, modes and LoadGen overrides (a part runs one round)"
    )
    given: dict[str, Any] = Field(
        default_factory=dict,
        description="what a package gives the environment (its wheels, image, Spack mirror)",
    )
    parts: int = Field(ge=1, le=100_000)
    executor: str = Field(description="who runs the parts (a name in the executors' registry)")
    executor_options: dict[str, Any] = Field(
        default_factory=dict, description="the executor's own options (its options model)"
    )
    python: list[str] = Field(description="the command that runs Python with repro on a node")

    @model_validator(mode="before")
    @classmethod
    def _fields_one_by_one(cls, data: Any) -> Any:
        """A plan of before `replay` held the replay's fields one by one."""
        if not isinstance(data, dict) or "replay" in data:
            return data
        data = dict(data)
        loadgen = {k: data.pop(k) for k in OVERRIDABLE if k in data}
        replay = {
            k: data.pop(k)
            for k in ("env", "cache_dir", "scenarios", "modes", "probes")
            if k in data
        }
        options = dict(data.pop("env_options", None) or {})
        options.pop("mounts", None)  # the part's session mounts the run's folders itself
        data["given"] = {k: options.pop(k) for k in _PACKAGE_GIVEN if k in options}
        data["replay"] = {**replay, "env_options": options, "loadgen": loadgen}
        return data

    @model_validator(mode="before")
    @classmethod
    def _options_under_their_name(cls, data: Any) -> Any:
        """A plan of before `executor_options` held them under the executor's name."""
        if not isinstance(data, dict) or "executor_options" in data:
            return data
        data = dict(data)
        for name in EXECUTORS:
            options = data.pop(name, None)
            if name == data.get("executor") and options is not None:
                data["executor_options"] = options
        return data

    @field_validator("executor")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in EXECUTORS:
            raise ValueError(f"unknown executor {name!r}; expected one of {sorted(EXECUTORS)}")
        return name

    @model_validator(mode="after")
    def _options_valid(self) -> DispatchPlan:
        self.options()
        return self

    def options(self) -> ExecutorOptions:
        """The executor's options, typed by its plug-in."""
        return get_executor(self.executor).options_model.model_validate(self.executor_options)

    def part_dir(self, index: int) -> Path:
        return Path(self.run_dir) / layout.part_dir(index)

    def dispatch_dir(self) -> Path:
        return Path(self.run_dir) / layout.DISPATCH_FOLDER

    def write(self) -> Path:
        path = Path(self.run_dir) / layout.DISPATCH_PLAN
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, self.model_dump_json(by_alias=True, indent=2) + "\n")
        return path


def read_plan(path: Path) -> DispatchPlan:
    """A plan file; `~` (a redacted home) is expanded again for this user."""
    hint = "the run was not dispatched with `repro replay --on`, or its plan is damaged"
    try:  # a regular file of bounded size and depth (a FIFO never ends; a deep one recurses)
        doc = read_json(path, constants=False, deep_hint=hint)
    except SpecError as exc:
        raise SpecError(f"not a repro dispatch plan: {exc.message}", hint=hint) from None
    except OSError as exc:
        raise SpecError(f"{path}: not a repro dispatch plan ({exc})", hint=hint) from None
    try:
        plan = DispatchPlan.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(str(path), exc, doc, what="dispatch plan"), hint=hint
        ) from None
    expand = _expand_home
    return plan.model_copy(
        update={
            "run_dir": expand(plan.run_dir),
            "spec_path": expand(plan.spec_path),
            "replay": plan.replay.but(
                results_dir=expand(str(plan.replay.results_dir)),
                cache_dir=expand(str(plan.replay.cache_dir)),
            ),
            "python": [expand(p) for p in plan.python],
        }
    )


def _expand_home(text: str) -> str:
    return str(Path(text).expanduser()) if text.startswith("~") else text
