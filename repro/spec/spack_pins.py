"""The spec's Spack section (`$.environment.spack`): what a spec pins of a Spack environment.

Light (no Spack, no lock parsing): the spec and the worker import it; `repro.formats.spack.pins`
makes the pins from the files.
"""

from __future__ import annotations

from pydantic import Field

from repro.spec.types import LockFile, SpecModel

MANIFEST_NAME = "spack.yaml"
LOCK_NAME = "spack.lock"


class SpackRootPin(SpecModel):
    """A root spec of the environment, as the manifest wrote it, with its DAG hash."""

    spec: str = Field(description="the root as the manifest writes it")
    hash: str = Field(description="its DAG hash in spack.lock")
    name: str | None = Field(None, description="the package's name")


class SpackPackagePin(SpecModel):
    """A key package as concretized: what changes an inference result."""

    version: str
    hash: str
    compiler: str | None = None
    target: str | None = None
    namespace: str | None = None
    variants: str | None = None
    external: bool = False


class SpackPins(SpecModel):
    """`$.environment.spack`: a Spack environment pinned by its manifest and lock."""

    spack_yaml: LockFile = Field(description="the environment's manifest (lockfiles/<name>/)")
    spack_lock: LockFile | None = Field(
        None, description="the concretized lock; absent until Spack has concretized the manifest"
    )
    spack_version: str | None = Field(None, description="the Spack that wrote the lock")
    spack_commit: str | None = Field(None, description="the Spack commit that wrote the lock")
    builtin_commit: str | None = Field(
        None, description="the spack-packages commit the manifest pins its builtin repo to"
    )
    roots: list[SpackRootPin] = Field(
        default_factory=list, description="the environment's root specs and their DAG hashes"
    )
    packages: dict[str, SpackPackagePin] = Field(
        default_factory=dict, description="key packages (llvm, onednn, apache-tvm, python, ...)"
    )
