"""The files a spec names by path, in one place: what a package carries, what a spec's
attestation covers, and what must stay inside a package."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.errors import SpecError
from repro.spec.models import ExperimentSpec
from repro.spec.variants import claim_where, variant_specs

Kind = Literal["artifact", "lock", "flake", "original"]


@dataclass(frozen=True)
class Reference:
    """A path the spec names: the field that names it, the path as written, what it is."""

    field: str
    path: str
    kind: Kind
    key: str = ""  # an artifact's name


def references(spec: ExperimentSpec) -> list[Reference]:
    """Every path the spec names: path artifacts, lock files (the Spack pins beside another
    manager's too), a `path:` flake's folder, the original's run folder; and those its claims'
    variants name besides (another backend's lock file, a model variant's file)."""
    out = _own_references(spec)
    seen = {(r.path, r.kind) for r in out}
    for claim in spec.claims or []:
        try:
            variants = variant_specs(spec, claim, source="the spec")
        except SpecError:
            continue  # `repro validate` names it; a package carries what it can
        for side, variant in variants.items():
            for ref in _own_references(variant):
                if (ref.path, ref.kind) not in seen and ref.kind != "original":
                    seen.add((ref.path, ref.kind))
                    where = f"{claim_where(spec, claim)}.{side}: {ref.field}"
                    out.append(Reference(where, ref.path, ref.kind, ref.key))
    return out


def _own_references(spec: ExperimentSpec) -> list[Reference]:
    env = spec.environment
    out = [
        Reference(f"$.artifacts.{n}.path", a.path, "artifact", n)
        for n, a in spec.artifacts.items()
        if a.path is not None
    ]
    for section, where in ((env, "$.environment"), (env.spack, "$.environment.spack")):
        if section is None:
            continue
        for key in ("python_lock", "flake_lock", "spack_yaml", "spack_lock"):
            lock = getattr(section, key, None)
            if lock is not None:
                out.append(Reference(f"{where}.{key}.path", lock.path, "lock"))
    flake = getattr(env, "flake", None)
    if isinstance(flake, str) and flake.startswith("path:"):
        out.append(Reference("$.environment.flake", flake[5:], "flake"))
    if spec.original is not None:
        out.append(Reference("$.original.path", spec.original.path, "original"))
    return out


def paths_outside(spec: ExperimentSpec, spec_path: Path, root: Path) -> list[Reference]:
    """The references that do not resolve inside the package `root` (`..` past its root, an
    absolute path, `~`): a replay from a package reads nothing of the machine it lands on."""
    top = Path(os.path.normpath(root.absolute()))
    base = spec_path.parent.absolute()
    return [
        ref
        for ref in references(spec)
        if Path(ref.path).is_absolute()
        or ref.path.startswith("~")
        or not Path(os.path.normpath(base / ref.path)).is_relative_to(top)
    ]
