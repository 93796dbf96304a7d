"""The registry of backends: every plug-in `repro.spec.plugins` names, by name.

Plug-in modules are light (no inference library is imported), so the registry loads them
eagerly; engines are imported in the worker only.
"""

from __future__ import annotations

from typing import Final

from repro.backends.base import BackendPlugin
from repro.errors import SpecError
from repro.spec import plugins

BACKENDS: Final[dict[str, BackendPlugin]] = {p.name: p for p in map(plugins.load, plugins.BACKENDS)}


def backend_names() -> list[str]:
    """Every backend's name, in registry order (the CLI's choices)."""
    return list(BACKENDS)


def get_backend(name: str) -> BackendPlugin:
    """The plug-in of a backend; an unknown name lists the valid ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise SpecError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}") from None


def backends_with_profilers() -> list[str]:
    """The backends whose engine has a layer profiler (`repro profile`)."""
    return [name for name, p in BACKENDS.items() if p.profiler is not None]


def result_variables() -> frozenset[str]:
    """The environment variables that change results or speed: every backend's own, and
    those of the libraries beside them (`repro.privacy.RESULT_VARIABLES`)."""
    from repro.privacy import RESULT_VARIABLES

    return RESULT_VARIABLES.union(*(p.result_variables for p in BACKENDS.values()))


def spack_key_packages() -> frozenset[str]:
    """The Spack packages whose pins change results: the harness's and every backend's."""
    from repro.formats.spack.lockfile import HARNESS_KEY_PACKAGES

    return HARNESS_KEY_PACKAGES.union(*(p.spack_key_packages for p in BACKENDS.values()))
