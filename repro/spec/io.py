"""Read and write experiment specs: schema-version check first, then clear field-level errors."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro.atomic import atomic_write_text
from repro.errors import SpecError
from repro.jsonio import canonical_json, read_json
from repro.spec.models import SUPPORTED_SCHEMAS, ExperimentSpec

#: fields left out of the spec id: the id itself, where and with what outcome it last ran, and
#: the claims made about it (statements and their evidence, not what it runs:
#: `repro.spec.claims`), so that stating or measuring a claim keeps the id of every run
ID_EXCLUDED = ("id", "original", "hardware", "claims")
#: LoadGen settings v1 gained after specs were published (an LLM's token latencies): unset,
#: they are left out of the id, so that every earlier spec keeps its id
LATER_SETTINGS = ("use_token_latencies", "ttft_latency", "tpot_latency")

#: the deepest nesting of objects and arrays a spec may have; real specs nest about 6 levels,
#: and pydantic stops serializing (for the spec id) at about 255
MAX_SPEC_DEPTH = 64

_DEEP_HINT = (
    "an experiment spec nests objects and arrays only a few levels deep: check that this is "
    "the spec you meant and not a damaged or generated file, and flatten the nested value"
)


def spec_id(spec: ExperimentSpec) -> str:
    """sha256 of the canonical JSON of the spec, without its id, original, hardware and claims (and
    without Spack pins when Spack is not the captured manager, and without the LoadGen settings
    v1 gained later, `LATER_SETTINGS`, where they are unset).

    Defaults are filled in first, so writing a default out or leaving it away gives the same
    id. `original` and `hardware` are observations (what a run measured, and where), not what
    to run: two captures of one experiment observe different numbers and keep one id.
    """
    data = spec.model_dump(mode="json", by_alias=True)
    for key in ID_EXCLUDED:
        data.pop(key, None)
    for scenario in data["workload"]["scenarios"]:
        for key in LATER_SETTINGS:  # a field v1 gained later is no part of the id unset
            if scenario["settings"].get(key) is None:
                scenario["settings"].pop(key, None)
    if data.get("tolerances", {}).get("energy_rel") is None:  # later, unset: not in the id
        data.get("tolerances", {}).pop("energy_rel", None)
    if data["workload"].get("generation") is None:  # v1 gained it later, as LATER_SETTINGS
        data["workload"].pop("generation", None)
    if data.get("server") is None:  # v1 gained it later: a spec without one keeps its id
        data.pop("server", None)
    for art in data.get("artifacts", {}).values():
        if art.get("files") is None:  # later too: a file artifact keeps its id
            art.pop("files", None)
    accuracy = data["workload"].get("accuracy") or {}
    if accuracy.get("metric") != "rouge":  # v1 gained them later, read only by rouge
        accuracy.pop("references_key", None)
        accuracy.pop("vocabulary_key", None)
    env = data["environment"]
    if env.get("manager") != "spack":
        # Spack pins beside another manager's are another way to build the stack, not part
        # of what the experiment is (repro.formats.spack.pins)
        env.pop("spack", None)
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def json_path(loc: tuple[int | str, ...], raw: Any, *, root: str = "$") -> str:
    """Turn a pydantic error location into a JSON path of the user's document.

    Discriminated unions put their tag into the location (`backend.onnxruntime.options`);
    elements that are not in the document are dropped, except a last, missing field.
    """
    path = root
    node = raw
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and part in node:
            path += f".{part}"
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            path += f"[{part}]"
            node = node[part]
        elif last and isinstance(part, str) and part not in ("function-after",):
            path += f".{part}"
        # else: a union tag or validator name, not part of the document
    return path


@functools.cache
def _field_names() -> frozenset[str]:
    """Every field name of the spec's models (for "did you mean" hints)."""
    from pydantic import BaseModel

    names: set[str] = set()
    todo: list[type[BaseModel]] = [ExperimentSpec]
    seen: set[type[BaseModel]] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(info.alias or name)
            for arg in _types_in(info.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    todo.append(arg)
    return frozenset(names)


def _types_in(annotation: Any) -> list[Any]:
    from typing import get_args

    out = [annotation]
    for arg in get_args(annotation):
        out += _types_in(arg)
    return out


def _describe(err: Mapping[str, Any]) -> str:
    msg = str(err["msg"])
    if err["type"] == "extra_forbidden":
        import difflib

        name = str(err["loc"][-1]) if err.get("loc") else ""
        if name in _field_names():  # a field of another section, or another kind of this one
            return (
                "unknown field in this section (another section, or another kind of this one, "
                "has a field of that name: check the section's manager or name, or remove it)"
            )
        close = difflib.get_close_matches(name, sorted(_field_names()), n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else "; remove it or check its spelling"
        return f"unknown field{hint}"
    if "percentile" in str(err.get("loc", "")) and err["type"] == "less_than":
        return f"{msg} (a fraction: 0.99 means the 99th percentile)"
    if err["type"] == "missing":
        return "required field is missing"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "string_pattern_mismatch" and "sha256" in str(err.get("loc", "")):
        return f"{msg} (a sha256 is 64 lowercase hex digits)"
    return msg


def format_validation_error(
    source: str, exc: ValidationError, raw: Any, *, root: str = "$", what: str = "experiment spec"
) -> str:
    """One message naming the file and, per problem, the JSON path and what was expected.

    `root` is the JSON path of `raw` inside the spec, when a part was validated alone.
    """
    lines = [f"{source}: invalid {what} ({exc.error_count()} problem(s))"]
    for err in exc.errors():
        where = json_path(tuple(err["loc"]), raw, root=root) + _claim_named(err["loc"], raw)
        got = ""
        if err["type"] not in ("missing", "extra_forbidden") and "input" in err:
            shown = json.dumps(err["input"], default=str)
            got = f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        lines.append(f"  {where}: {_describe(err)}{got}")
    return "\n".join(lines)


def _claim_named(loc: tuple[int | str, ...], raw: Any) -> str:
    """` (claim 'threads')` after the path of a problem inside a claim that has an id."""
    if len(loc) < 2 or loc[0] != "claims" or not isinstance(loc[1], int):
        return ""
    claims = raw.get("claims") if isinstance(raw, dict) else None
    claim = claims[loc[1]] if isinstance(claims, list) and loc[1] < len(claims) else None
    name = claim.get("id") if isinstance(claim, dict) else None
    return f" (claim {name!r})" if isinstance(name, str) else ""


def _too_deep(raw: Any, limit: int) -> list[int | str] | None:
    """The location of a container nested more than `limit` levels deep, or None.

    Walks with an explicit stack, so a document of any depth is checked without recursion.
    """
    todo: list[tuple[Any, list[int | str]]] = [(raw, [])]
    while todo:
        node, loc = todo.pop()
        items: list[tuple[int | str, Any]]
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        if len(loc) >= limit:
            return loc
        todo.extend((value, [*loc, key]) for key, value in items)
    return None


def _short_path(loc: list[int | str], keep: int = 8) -> str:
    """A JSON path of a location, cut after `keep` steps (with how many more were left out)."""
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[:keep])
    return path + (f"<{len(loc) - keep} more levels>" if len(loc) > keep else "")


def parse_spec(raw: Any, *, source: str) -> ExperimentSpec:
    """Validate an already-parsed JSON document as an experiment spec."""
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: $: expected a JSON object, got {type(raw).__name__}")
    deep = _too_deep(raw, MAX_SPEC_DEPTH)
    if deep is not None:
        raise SpecError(
            f"{source}: JSON nested too deeply: {_short_path(deep)} is more than "
            f"{MAX_SPEC_DEPTH} levels of objects and arrays deep",
            hint=_DEEP_HINT,
        )
    version = raw.get("schema")
    if version is None:
        raise SpecError(
            f"{source}: $.schema: required field is missing",
            hint=f'add "schema": "{SUPPORTED_SCHEMAS[-1]}"',
        )
    if version not in SUPPORTED_SCHEMAS:
        raise SpecError(
            f"{source}: $.schema: unsupported schema version {version!r}; "
            f"this repro reads {', '.join(SUPPORTED_SCHEMAS)}",
            hint="upgrade repro, or write the spec for a supported version",
        )
    try:
        return ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(source, exc, raw),
            hint="`repro schema` prints the JSON Schema of a valid spec",
        ) from None
    except RecursionError:
        raise SpecError(f"{source}: JSON nested too deeply to validate", hint=_DEEP_HINT) from None


def load_spec(path: Path, *, check_id: bool = True) -> ExperimentSpec:
    """Read, validate and (unless told otherwise) check the id of a spec file."""
    spec = parse_spec(read_json(path, deep_hint=_DEEP_HINT), source=str(path))
    if check_id and spec.id is not None and spec.id != spec_id(spec):
        raise SpecError(
            f"{path}: $.id: {spec.id} is not the digest of this spec ({spec_id(spec)}); "
            "the spec was edited after its id was computed",
            hint=f"run `repro validate --fix-id {path}` to rewrite the id",
        )
    return spec


def with_id(spec: ExperimentSpec) -> ExperimentSpec:
    """The same spec with its id filled in."""
    return spec.model_copy(update={"id": spec_id(spec)})


def with_backend_options(
    spec: ExperimentSpec, overrides: Mapping[str, Any], *, source: str
) -> ExperimentSpec:
    """The spec with some backend options replaced, validated, with its new id."""
    options = {**spec.backend.options.model_dump(mode="json"), **overrides}
    section = {"name": spec.backend.name, "options": options}
    try:
        backend = type(spec.backend).model_validate(section)
    except ValidationError as exc:
        raise SpecError(
            format_validation_error(source, exc, section, root="$.backend"),
            hint="the backend's options are in `repro schema`",
        ) from None
    return with_id(spec.model_copy(update={"backend": backend}))


def dump_spec(spec: ExperimentSpec) -> str:
    """The spec as pretty JSON, None-valued optional fields left out."""
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_spec(spec: ExperimentSpec, path: Path) -> ExperimentSpec:
    """Fill in the id and write the spec atomically; returns the spec as written."""
    spec = with_id(spec)
    atomic_write_text(path, dump_spec(spec))
    return spec


def rebase_paths(data: dict[str, Any], base_dir: Path, new_dir: Path) -> None:
    """Rewrite a raw spec's relative paths (artifacts, lock files, a `path:` flake), written
    relative to `base_dir`, so they stay right from `new_dir`."""
    import os

    def moved(path: str) -> str:
        if Path(path).is_absolute():
            return path
        return os.path.relpath((base_dir / path).resolve(), new_dir.resolve())

    for art in data.get("artifacts", {}).values():
        if "path" in art:
            art["path"] = moved(art["path"])
    env = data.get("environment", {})
    spack = env.get("spack") if isinstance(env.get("spack"), dict) else {}
    for section in (env, spack):
        for key in ("python_lock", "flake_lock", "spack_yaml", "spack_lock"):
            if isinstance(section.get(key), dict) and "path" in section[key]:
                section[key]["path"] = moved(section[key]["path"])
    if str(env.get("flake", "")).startswith("path:"):
        env["flake"] = "path:" + moved(env["flake"][5:])
    move_claim_paths(data, moved)


_LOCK_KEYS = ("python_lock", "flake_lock", "spack_yaml", "spack_lock")


def move_claim_paths(data: dict[str, Any], moved: Callable[[str], str]) -> None:
    """The relative paths the claims' variants name (an artifact's or a lock file's path, a
    `path:` flake), each passed through `moved`, in a raw spec."""
    for claim in data.get("claims") or []:
        for side in ("baseline", "candidate"):
            variant = claim.get(side) if isinstance(claim, dict) else None
            overrides = variant.get("overrides") if isinstance(variant, dict) else None
            if isinstance(overrides, dict):
                for key, value in overrides.items():
                    overrides[key] = _moved_override(key, value, moved)


def _moved_override(key: str, value: Any, moved: Callable[[str], str]) -> Any:
    parts = key.split(".")
    names_file = (parts[0] == "artifacts" and len(parts) == 2) or (
        parts[0] == "environment" and parts[-1] in _LOCK_KEYS
    )
    if names_file and isinstance(value, dict) and isinstance(value.get("path"), str):
        return {**value, "path": moved(value["path"])}
    is_path = parts[-1] == "path" and (
        (parts[0] == "artifacts" and len(parts) == 3)
        or (parts[0] == "environment" and len(parts) >= 2 and parts[-2] in _LOCK_KEYS)
    )
    if is_path and isinstance(value, str):
        return moved(value)
    if key == "environment.flake" and isinstance(value, str) and value.startswith("path:"):
        return "path:" + moved(value[5:])
    return value
