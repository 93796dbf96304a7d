"""`repro.workflow`: steps run in order, each on the previous one's result; a raise ends it."""

from __future__ import annotations

import pytest

from repro.errors import UsageError
from repro.workflow import execute, step_names


def double(n: int) -> int:
    return 2 * n


def add_one(n: int) -> int:
    return n + 1


def refuse(n: int) -> int:
    raise UsageError(f"not {n}")


def test_each_step_takes_the_result_of_the_one_before() -> None:
    assert execute([double, add_one], 5) == 11
    assert execute([add_one, double], 5) == 12


def test_no_steps_leave_the_state_as_it_was() -> None:
    assert execute([], 7) == 7


def test_a_step_that_raises_ends_the_pipeline() -> None:
    seen: list[int] = []

    def record(n: int) -> int:
        seen.append(n)
        return n

    with pytest.raises(UsageError, match="not 6"):
        execute([add_one, refuse, record], 5)
    assert seen == []


def test_the_steps_have_their_names() -> None:
    assert step_names([double, add_one, refuse]) == ["double", "add_one", "refuse"]
