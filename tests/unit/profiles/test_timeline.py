"""The Chrome/Perfetto trace: queries, predict() calls and layers on their own tracks."""

from __future__ import annotations

import json

import pytest

from repro.backends.onnxruntime.engine import ort_kind
from repro.backends.tvm.engine import tvm_kind, tvm_op_type
from repro.profiles.model import LayerCall, Span
from repro.profiles.timeline import chrome_trace, dumps


def test_trace_has_a_track_per_level_and_layers_inside_their_inference() -> None:
    queries = [Span(1_000_000, 1_100_000, 1), Span(1_200_000, 1_300_000, 1)]
    inferences = [Span(1_010_000, 1_090_000, 1), Span(1_210_000, 1_290_000, 1)]
    calls = [
        LayerCall("warm", "Conv", "conv", 10_000, 5_000),  # before the pass: left out
        LayerCall("conv", "Conv", "conv", 1_020_000, 30_000),
        LayerCall("conv", "Conv", "conv", 1_220_000, 30_000),
    ]
    doc = json.loads(dumps(chrome_trace(queries, inferences, calls, backend="b", profiler="p")))
    events = doc["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"LoadGen queries", "predict()", "layers"}
    slices = [e for e in events if e["ph"] == "X"]
    assert [e["name"] for e in slices if e["tid"] == 1] == ["query 0", "query 1"]
    layers = [e for e in slices if e["tid"] == 3]
    assert len(layers) == 2
    assert doc["otherData"]["layer_calls"] == 2
    assert min(e["ts"] for e in slices) == 0.0  # microseconds from the first query
    assert doc["otherData"]["truncated"] is False
    predicts = [e for e in slices if e["tid"] == 2]
    for layer, pred in zip(layers, predicts, strict=True):
        assert pred["ts"] <= layer["ts"]
        assert layer["ts"] + layer["dur"] <= pred["ts"] + pred["dur"]


def test_kinds_line_up_across_backends() -> None:
    assert tvm_op_type("fused_conv2d_add_relu3") == "conv2d_add_relu"
    assert tvm_op_type("matmul1") == "matmul"
    assert tvm_kind("conv2d_add_relu") == ort_kind("FusedConv") == ort_kind("Conv") == "conv"
    assert tvm_kind("matmul_add") == ort_kind("Gemm") == ort_kind("FusedGemm") == "matmul"
    assert tvm_kind("max_pool2d") == ort_kind("MaxPool") == "pool"
    assert tvm_kind("adaptive_avg_pool2d") == ort_kind("GlobalAveragePool") == "pool"
    assert tvm_kind("argmax") == ort_kind("ArgMax") == "argmax"
    assert ort_kind("ReorderOutput") == "reorderoutput"  # unknown: its own kind


def test_a_trace_over_the_cap_keeps_whole_inferences_from_the_start_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from repro.profiles import timeline

    monkeypatch.setattr(timeline, "MAX_EVENTS", 20)
    inferences = [Span(1_000_000 * k, 1_000_000 * k + 500_000, 1) for k in range(1, 11)]
    queries = inferences
    calls = [
        LayerCall(f"l{j}", "Conv", "conv", s.start_ns + 1_000 + 10_000 * j, 5_000)
        for s in inferences
        for j in range(3)
    ]
    doc = chrome_trace(queries, inferences, calls, backend="b", profiler="p")
    other = doc["otherData"]
    assert other["truncated"] is True
    assert 0 < other["inferences"] < 10
    assert other["layer_calls"] == 3 * other["inferences"]  # every kept inference is whole
    assert len(doc["traceEvents"]) <= 20 + other["inferences"]  # + the queries of those
