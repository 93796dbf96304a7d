"""The per-layer table from kernel calls: one row per layer, warm-up excluded, times summed."""

from __future__ import annotations

import pytest

from repro.profiles.build import assign, build_profile, overhead_of
from repro.profiles.model import LayerCall, Span


def _inference(start: int, layers: list[tuple[str, int]]) -> tuple[Span, list[LayerCall]]:
    """An inference starting at `start` ns whose layers run back to back, 1 us apart."""
    t, calls = start + 1_000, []
    for name, dur in layers:
        calls.append(LayerCall(name, name.title(), name, t, dur))
        t += dur + 1_000
    return Span(start, t, 1), calls


def test_one_row_per_layer_in_execution_order_with_totals_and_shares() -> None:
    spans, calls = [], []
    for k in range(4):
        span, cs = _inference(
            1_000_000 * (k + 1), [("conv", 50_000), ("relu", 5_000), ("fc", 20_000)]
        )
        spans.append(span)
        calls += cs
    prof = build_profile(
        calls, spans, backend="b", profiler="p", scenario="SingleStream", queries=4
    )
    assert [r.name for r in prof.rows] == ["conv", "relu", "fc"]
    assert [r.position for r in prof.rows] == [0, 1, 2]
    conv = prof.rows[0]
    assert (conv.calls, conv.total_ns, conv.median_ns) == (4, 200_000, 50_000)
    assert conv.per_sample_ns == 50_000
    assert prof.inferences == 4
    assert prof.samples == 4
    assert prof.layers_ns == 4 * 75_000
    assert prof.outside_ns == prof.inference_ns - prof.layers_ns == 4 * 4_000
    assert conv.share == pytest.approx(200_000 / prof.inference_ns)
    assert sum(r.share for r in prof.rows) + prof.outside_ns / prof.inference_ns == pytest.approx(1)


def test_calls_outside_the_inferences_are_not_counted() -> None:
    span, calls = _inference(10_000_000, [("conv", 50_000)])
    warm_up = LayerCall("conv", "Conv", "conv", 1_000, 900_000)  # before the pass
    timing = LayerCall("conv", "Conv", "conv", 90_000_000, 900_000)  # the overhead loop after
    prof = build_profile(
        [warm_up, *calls, timing],
        [span],
        backend="b",
        profiler="p",
        scenario="SingleStream",
        queries=1,
    )
    assert prof.rows[0].calls == 1
    assert prof.rows[0].total_ns == 50_000


def test_a_kernel_called_twice_in_one_inference_is_two_layers() -> None:
    """TVM reuses one compiled function for identical layers: the table keeps the model's shape."""
    spans, calls = [], []
    for k in range(3):
        span, cs = _inference(
            1_000_000 * (k + 1), [("conv2d3", 10_000), ("add", 1_000), ("conv2d3", 30_000)]
        )
        spans.append(span)
        calls += cs
    prof = build_profile(
        calls, spans, backend="tvm", profiler="p", scenario="SingleStream", queries=3
    )
    assert [r.name for r in prof.rows] == ["conv2d3", "add", "conv2d3#2"]
    assert prof.rows[2].median_ns == 30_000
    assert prof.rows[2].calls == 3


def test_an_inference_without_calls_is_left_out_of_the_time_and_said() -> None:
    span, calls = _inference(1_000_000, [("conv", 50_000)])
    empty = Span(5_000_000, 5_900_000, 1)
    prof = build_profile(
        calls, [span, empty], backend="b", profiler="p", scenario="SingleStream", queries=2
    )
    assert prof.inferences == 1
    assert prof.inference_ns == span.end_ns - span.start_ns


def test_assign_takes_calls_a_rounding_early_into_their_inference() -> None:
    span = Span(1_000_000, 2_000_000, 1)
    early = LayerCall("x", "X", "x", 999_500, 10)  # onnxruntime rounds to whole microseconds
    assert assign([early], [span]) == [[early]]


def test_overhead_is_the_ratio_of_medians() -> None:
    with_ = [Span(0, 120, 1), Span(0, 110, 1), Span(0, 500, 1)]
    without = [Span(0, 100, 1), Span(0, 100, 1), Span(0, 90, 1)]
    o = overhead_of(with_, without, "m")
    assert o.rel == pytest.approx(0.2)
    assert o.inferences == 3


def test_no_layer_call_inside_any_inference_is_an_error_not_an_empty_table() -> None:
    from repro.errors import RunError

    span = Span(1_000_000, 2_000_000, 1)
    elsewhere = LayerCall("conv", "Conv", "conv", 50_000_000, 10)  # another clock's times
    with pytest.raises(RunError, match="no layer call inside the 1 timed inferences"):
        build_profile(
            [elsewhere], [span], backend="b", profiler="p", scenario="SingleStream", queries=1
        )


def test_inferences_the_profiler_dropped_are_said() -> None:
    span, calls = _inference(1_000_000, [("conv", 50_000)])
    later = Span(5_000_000, 5_900_000, 1)  # onnxruntime stopped recording events
    prof = build_profile(
        calls, [span, later], backend="b", profiler="p", scenario="SingleStream", queries=2
    )
    assert any("recorded layers in 1 of the 2 timed inferences" in n for n in prof.notes)
