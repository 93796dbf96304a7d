"""A command as a pipeline of named steps, each a function of the previous step's result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: one step: what the steps before it made, in; that and what this step adds, out. A step ends
#: the pipeline early by raising (a ReproError, or click's Exit carrying an exit code).
Step = Callable[[T], T]


def execute(steps: Sequence[Step[T]], state: T) -> T:
    """Run `steps` in order, each on the result of the one before; the last result out."""
    for step in steps:
        state = step(state)
    return state


def step_names(steps: Sequence[Step[T]]) -> list[str]:
    """The steps' names, in order: what a mode does, in words."""
    return [getattr(step, "__name__", repr(step)) for step in steps]
