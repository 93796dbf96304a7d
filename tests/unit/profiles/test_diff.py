"""The profile diff: layers matched by name, else by kind and position; changes ranked."""

from __future__ import annotations

import pytest

from repro.profiles.diff import OUTSIDE, diff_profiles, match_layers
from repro.profiles.model import LayerRow, Profile


def _profile(
    layers: list[tuple[str, str, float]], *, backend: str = "onnxruntime", outside: float = 10_000
) -> Profile:
    """Per-sample times of (name, kind, ns) layers, one sample per inference, 10 inferences."""
    n = 10
    rows = [
        LayerRow(
            name=name,
            op_type=kind.title(),
            kind=kind,
            position=i,
            calls=n,
            total_ns=int(ns * n),
            median_ns=int(ns),
            per_sample_ns=ns,
            share=0.0,
        )
        for i, (name, kind, ns) in enumerate(layers)
    ]
    layers_ns = sum(r.total_ns for r in rows)
    inference = layers_ns + int(outside * n)
    return Profile(
        backend=backend,
        profiler="test",
        scenario="SingleStream",
        queries=n,
        inferences=n,
        samples=n,
        inference_ns=inference,
        layers_ns=layers_ns,
        outside_ns=inference - layers_ns,
        rows=rows,
    )


RESNETISH = [(f"conv{i}", "conv", 100_000.0 + 1_000 * i) for i in range(12)] + [
    ("pool", "pool", 5_000.0),
    ("fc", "matmul", 20_000.0),
]


def test_an_injected_slow_layer_ranks_first_with_most_of_the_change() -> None:
    slow = [(n, k, ns * (2.4 if n == "conv7" else 1.0)) for n, k, ns in RESNETISH]
    d = diff_profiles(_profile(RESNETISH), _profile(slow))
    top = d.changes[0]
    assert top.name == "conv7"
    assert top.match == "name"
    assert top.ratio == pytest.approx(2.4)
    assert top.share_of_change == pytest.approx(1.0)
    assert d.matched_by_name == len(RESNETISH)
    assert d.delta_rel == pytest.approx(1.4 * 107_000 / (sum(ns for *_, ns in RESNETISH) + 10_000))


def test_identical_profiles_change_nothing() -> None:
    d = diff_profiles(_profile(RESNETISH), _profile(RESNETISH))
    assert all(c.delta_ns == 0 for c in d.changes)
    assert all(c.share_of_change is None for c in d.changes)


def test_other_backend_names_are_matched_by_kind_and_position() -> None:
    """onnxruntime's nodes against TVM's kernels: no name in common; TVM fused the ReLUs."""
    ort = [
        ("conv_0", "conv", 100.0),
        ("relu_1", "relu", 5.0),
        ("conv_2", "conv", 200.0),
        ("gemm_3", "matmul", 50.0),
    ]
    tvm = [
        ("fused_conv2d_add_relu", "conv", 110.0),
        ("fused_conv2d_add_relu1", "conv", 400.0),
        ("fused_matmul_add", "matmul", 55.0),
    ]
    d = diff_profiles(_profile(ort), _profile(tvm, backend="tvm"))
    pairs = {(c.name, c.replay_name) for c in d.changes if c.match == "kind and position"}
    assert pairs == {
        ("conv_0", "fused_conv2d_add_relu"),
        ("conv_2", "fused_conv2d_add_relu1"),
        ("gemm_3", "fused_matmul_add"),
    }
    only = [c for c in d.changes if c.match == "original only"]
    assert [c.name for c in only] == ["relu_1"]
    assert only[0].delta_ns == -5.0
    assert d.changes[0].replay_name == "fused_conv2d_add_relu1"  # +200 ns: the largest change


def test_layers_left_without_a_partner_are_listed_per_side() -> None:
    a = [("x", "conv", 10.0), ("y", "relu", 1.0)]
    b = [("x", "conv", 10.0), ("z", "softmax", 3.0)]
    pairs, only_a, only_b = match_layers(_profile(a).rows, _profile(b).rows)
    assert [(p[0].name, p[2]) for p in pairs] == [("x", "name")]
    assert [r.name for r in only_a] == ["y"]
    assert [r.name for r in only_b] == ["z"]


def test_the_time_outside_the_layers_is_a_row_of_its_own() -> None:
    d = diff_profiles(_profile(RESNETISH), _profile(RESNETISH, outside=60_000))
    assert d.changes[0].name == OUTSIDE
    assert d.changes[0].delta_ns == pytest.approx(50_000)
    assert d.changes[0].share_of_change == pytest.approx(1.0)


def test_alignment_keeps_order_when_one_side_has_extra_layers_between() -> None:
    """A layout conversion between every convolution on one side does not shift the pairs."""
    a = [
        ("c0", "conv", 1.0),
        ("r0", "reorder", 1.0),
        ("c1", "conv", 2.0),
        ("r1", "reorder", 1.0),
        ("p", "pool", 1.0),
    ]
    b = [("k0", "conv", 1.0), ("k1", "conv", 2.0), ("q", "pool", 1.0)]
    pairs, only_a, only_b = match_layers(_profile(a).rows, _profile(b).rows)
    assert [(x.name, y.name) for x, y, _ in pairs] == [("c0", "k0"), ("c1", "k1"), ("p", "q")]
    assert [r.name for r in only_a] == ["r0", "r1"]
    assert only_b == []


def test_the_change_is_summed_by_kind_and_said_in_one_line() -> None:
    slow = [(n, k, ns * (2.0 if k == "conv" else 1.0)) for n, k, ns in RESNETISH]
    d = diff_profiles(_profile(RESNETISH), _profile(slow))
    assert d.kinds[0].kind == "conv"
    assert d.kinds[0].share_of_change == pytest.approx(1.0)
    assert "100% of the change is in the conv layers" in d.headline()
    assert "the largest single layer change: conv11 (2.00x)" in d.headline()


def test_layers_that_moved_both_ways_are_not_given_shares_beyond_the_whole() -> None:
    """The diff said "2082 % of the change" and "-3059 %" where layers moved both ways and the
    total barely moved."""
    from repro.profiles.diff import KindChange, LayerChange, ProfileDiff, share_text

    def layer(name: str, kind: str, a: float, b: float, share: float) -> LayerChange:
        return LayerChange(
            name=name,
            kind=kind,
            match="name",
            original_ns=a,
            replay_ns=b,
            delta_ns=b - a,
            ratio=b / a,
            share_of_change=share,
        )

    diff = ProfileDiff(
        scenario="SingleStream",
        original_backend="onnxruntime",
        replay_backend="onnxruntime",
        original_ns=100_000,
        replay_ns=101_000,
        delta_rel=0.01,
        matched_by_name=2,
        matched_by_position=0,
        original_only=0,
        replay_only=0,
        changes=[
            layer("conv1", "Conv", 50_000, 70_820, 20.82),
            layer("add1", "Add", 50_000, 30_180, -19.82),
        ],
        kinds=[
            KindChange(
                kind="Conv",
                original_ns=50_000,
                replay_ns=70_820,
                delta_ns=20_820,
                share_of_change=20.82,
            ),
            KindChange(
                kind="Add",
                original_ns=50_000,
                replay_ns=30_180,
                delta_ns=-19_820,
                share_of_change=-19.82,
            ),
        ],
    )
    text = diff.headline()
    assert "%" not in text.split(";", 1)[1]  # only the total is a percentage
    assert "moved both ways: the Conv layers +20.8 µs, the Add layers -19.8 µs a sample" in text
    assert share_text(20.82) == share_text(-30.59) == "both ways"
    assert share_text(0.42) == "42%"
