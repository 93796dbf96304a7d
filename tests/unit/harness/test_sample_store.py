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
