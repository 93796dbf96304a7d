"""A package's names loaded from their modules when first used (PEP 562), so that importing the
package (or one light module of it) does not import the heavy ones."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def names(package: str, home: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: a name of `home` (name -> its module) imported from its
    module the first time it is asked for, then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
