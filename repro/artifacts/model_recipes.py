"""Model recipes: a ResNet-50 v1.5-shaped ONNX graph with seeded weights, and the digits MLP."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from repro.artifacts.datasets import digits_split


class _GraphBuilder:
    """Accumulates ONNX nodes and initializers with unique names."""

    def __init__(
        self, rng: np.random.Generator, noise: tuple[float, np.random.Generator] | None = None
    ) -> None:
        self.rng = rng
        #: (relative scale, its own generator): every weight and bias perturbed by it, so that
        #: the weights without noise stay the seed's, byte for byte
        self.noise = noise
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self._n}"

    def const(self, prefix: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(prefix)
        if self.noise is not None and value.dtype == np.float32:
            scale, rng = self.noise
            value = (value * (1 + scale * rng.standard_normal(value.shape))).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, c_in: int, c_out: int, k: int, stride: int, *, gain: float = 1.0) -> str:
        """Conv with its batch norm folded into weights and bias (as in inference graphs)."""
        std = gain * np.sqrt(2.0 / (c_in * k * k))
        w = (self.rng.standard_normal((c_out, c_in, k, k)) * std).astype(np.float32)
        b = (self.rng.standard_normal(c_out) * 0.01).astype(np.float32)
        pad = k // 2
        return self.node(
            "Conv",
            [x, self.const("w", w), self.const("b", b)],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad],
        )


def write_resnet50(
    out: Path,
    *,
    seed: int,
    num_classes: int,
    base_width: int,
    opset: int,
    perturb: float = 0.0,
    perturb_seed: int = 1,
) -> None:
    """ResNet-50 v1.5: bottlenecks [3, 4, 6, 3], stride on the 3x3 conv, 1001-way ArgMax output.

    Names follow MLPerf's resnet50_v1.onnx: input `input_tensor:0` (NCHW float32, dynamic
    batch), outputs `ArgMax:0` (int64) and `softmax_tensor:0`. `perturb` > 0 multiplies every
    weight by 1 + perturb x N(0, 1) (a model variant close to the seed's: a few predictions
    change, as a quantized or pruned model's do).
    """
    import onnx
    from onnx import TensorProto, helper

    noise = (perturb, np.random.Generator(np.random.PCG64(perturb_seed))) if perturb else None
    g = _GraphBuilder(np.random.Generator(np.random.PCG64(seed)), noise)
    w = base_width
    x = g.node("Relu", [g.conv("input_tensor:0", 3, w, 7, 2)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = w
    for width, blocks, stride in ((w, 3, 1), (2 * w, 4, 2), (4 * w, 6, 2), (8 * w, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = g.node("Relu", [g.conv(x, c_in, width, 1, 1)])
            y = g.node("Relu", [g.conv(y, width, width, 3, s)])
            # A small gain on the last conv keeps activations bounded without batch norm.
            y = g.conv(y, width, 4 * width, 1, 1, gain=0.2)
            shortcut = g.conv(x, c_in, 4 * width, 1, s) if i == 0 else x
            x = g.node("Relu", [g.node("Add", [y, shortcut])])
            c_in = 4 * width
    pooled = g.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    fc_w = g.rng.standard_normal((c_in, num_classes)) * np.sqrt(1.0 / c_in)
    # Pooled ReLU features are all positive: centre each class's weights so that the common
    # component cancels and the predicted class depends on the image.
    fc_w = (fc_w - fc_w.mean(axis=0, keepdims=True)).astype(np.float32)
    fc_b = np.zeros(num_classes, dtype=np.float32)
    logits = g.node("Gemm", [pooled, g.const("fc_w", fc_w), g.const("fc_b", fc_b)])
    g.nodes.append(helper.make_node("Softmax", [logits], ["softmax_tensor:0"], axis=1))
    g.nodes.append(helper.make_node("ArgMax", [logits], ["ArgMax:0"], axis=1, keepdims=0))
    graph = helper.make_graph(
        g.nodes,
        "resnet50_v1.5",
        [helper.make_tensor_value_info("input_tensor:0", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [
            helper.make_tensor_value_info("ArgMax:0", TensorProto.INT64, ["N"]),
            helper.make_tensor_value_info(
                "softmax_tensor:0", TensorProto.FLOAT, ["N", num_classes]
            ),
        ],
        g.inits,
    )
    _save(graph, opset, out, onnx, helper)


def write_digits_mlp(
    out: Path, *, hidden: int, seed: int, test_fraction: float, max_iter: int
) -> None:
    """Train scikit-learn's MLPClassifier on the digits train split and export it to ONNX."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    x_train, _, y_train, _ = digits_split(test_fraction=test_fraction, seed=seed)
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=max_iter, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed budget is the recipe
        clf.fit(x_train, y_train)
    w1, w2 = (c.astype(np.float32) for c in clf.coefs_)
    b1, b2 = (b.astype(np.float32) for b in clf.intercepts_)
    inits = [
        numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))
    ]
    nodes = [
        helper.make_node("MatMul", ["input", "w1"], ["h_mm"]),
        helper.make_node("Add", ["h_mm", "b1"], ["h_pre"]),
        helper.make_node("Relu", ["h_pre"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["o_mm"]),
        helper.make_node("Add", ["o_mm", "b2"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["predictions"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "digits_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 64])],
        [
            helper.make_tensor_value_info("predictions", TensorProto.INT64, ["N"]),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10]),
        ],
        inits,
    )
    _save(graph, 13, out, onnx, helper)


def _save(graph: object, opset: int, out: Path, onnx: object, helper: object) -> None:
    model = helper.make_model(  # type: ignore[attr-defined]
        graph,
        producer_name="repro",
        opset_imports=[helper.make_opsetid("", opset)],  # type: ignore[attr-defined]
    )
    model.ir_version = 8
    onnx.checker.check_model(model)  # type: ignore[attr-defined]
    out.write_bytes(model.SerializeToString(deterministic=True))
