"""The QSL's sample store: what LoadGen loads is what a query gets, by view or by batch."""

from __future__ import annotations

import numpy as np
import pytest

from repro.harness import dataset
from repro.harness.dataset import SampleStore


def _source() -> np.ndarray:
    return np.arange(10 * 3, dtype=np.float32).reshape(10, 3)


def test_views_follow_loads_and_unloads() -> None:
    source = _source()
    store = SampleStore(source)
    views = store.views  # the SUT keeps this dict: it must be filled in place
    store.load([7, 2, 5])
    assert sorted(views) == [2, 5, 7]
    for i in (2, 5, 7):
        assert views[i].shape == (1, 3)
        np.testing.assert_array_equal(views[i], source[i : i + 1])
        np.testing.assert_array_equal(views[i], store.one(i))
    store.unload([5])
    assert sorted(views) == [2, 7]
    store.load([1])
    assert sorted(views) == [1]
    np.testing.assert_array_equal(store.batch([1]), source[1:2])


def test_too_many_samples_for_views_fall_back_to_indexing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset, "MAX_VIEWS", 2)
    source = _source()
    store = SampleStore(source)
    store.load([0, 4, 9])
    assert store.views == {}
    np.testing.assert_array_equal(store.one(9), source[9:10])
    np.testing.assert_array_equal(store.batch([9, 0]), source[[9, 0]])


class _Shapes:
    """An engine that records the batch shapes it is asked to run."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def predict(self, batch: np.ndarray) -> np.ndarray:
        self.batches.append(len(batch))
        return np.zeros((len(batch), 3), dtype=np.float32)


@pytest.mark.parametrize(
    ("scenario", "samples_per_query", "shapes"),
    [
        ("SingleStream", None, [1]),
        ("Offline", None, [8]),
        ("Server", None, [1, 8]),
        ("MultiStream", 8, [8]),
        ("MultiStream", 4, [4]),  # a query smaller than the batch runs as one batch of 4
    ],
)
def test_warm_up_runs_each_shape_the_scenario_will_use(
    scenario: str, samples_per_query: int | None, shapes: list[int]
) -> None:
    from repro.harness.worker import warm_up

    engine = _Shapes()
    out = warm_up(
        engine,  # type: ignore[arg-type]
        _source(),
        8,
        scenario,
        samples_per_query=samples_per_query,
    )
    assert engine.batches == shapes
    assert out.shape == (1, 3)
