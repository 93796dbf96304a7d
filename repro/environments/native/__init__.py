"""The `native` environment's face: this interpreter, its drift from the spec's lock recorded.

Its section of the spec and its facts; the work is in `repro.environments.native.manager`.
"""

from __future__ import annotations

from repro.environments.section import EnvironmentFace

FACE = EnvironmentFace(
    name="native",
    spec_model=None,
    manager="repro.environments.native.manager:NativeManager",
    can_capture=False,
)
