# repro: Spack's compiler wrapper from the Spack that builds, for an offline install. Builtin's
# fetches its release tarball from GitHub, which a machine without the internet cannot reach and
# a mirror made from PyPI cannot hold; Spack itself carries the same script (cc.sh) for its own
# tests. This package takes that file from the running Spack (pinned by its sha256: a Spack whose
# cc.sh differs fails the fetch, by name) and installs it as builtin's package does (inherited).

import pathlib

import spack.paths
from spack_repo.builtin.packages.compiler_wrapper.package import (
    CompilerWrapper as BuiltinCompilerWrapper,
)

from spack.package import *

_CC = (
    pathlib.Path(spack.paths.prefix)
    / "var/spack/test_repos/spack_repo/builtin_mock/packages/compiler_wrapper/cc.sh"
)


class CompilerWrapper(BuiltinCompilerWrapper):
    """Spack's compiler wrapper script, taken from the Spack that runs (no download)."""

    url = _CC.as_uri()

    version(
        "1.1.0",
        sha256="c65a9d2b2d4eef67ab5cb0684d706bb9f005bb2be94f53d82683d7055bdb837c",
        expand=False,
    )
