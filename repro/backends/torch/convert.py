"""An ONNX graph as a torch module built from its initializers (worker only; imports torch).

torch has no ONNX importer, so repro converts the operators its recipes' models use (ResNet-50
v1.5: Conv, Relu, MaxPool, Add, ReduceMean, Gemm, Softmax, ArgMax; the digits MLP: MatMul,
Add, Relu, ArgMax) and a few of their common spellings (GlobalAveragePool, Flatten, Identity).
An operator outside that list is refused by name: a model that converts runs as ONNX defines
it, or not at all. Only the nodes the selected output needs are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper

Op = Callable[..., torch.Tensor]


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _symmetric(pads: list[int], where: str) -> list[int]:
    half = len(pads) // 2
    begin, end = pads[:half], pads[half:]
    if begin != end:
        raise UnsupportedModelError(f"{where}: asymmetric pads {pads} are not converted")
    return list(begin)


class UnsupportedModelError(ValueError):
    """The ONNX model uses what the converter does not convert (named in the message)."""


def _conv(a: dict[str, Any], name: str) -> Op:
    strides = list(a.get("strides", [1, 1]))
    pads = _symmetric(list(a.get("pads", [0, 0, 0, 0])), name)
    dilations = list(a.get("dilations", [1, 1]))
    groups = int(a.get("group", 1))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise UnsupportedModelError(f"{name}: Conv auto_pad is not converted")

    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        return F.conv2d(x, w, b, stride=strides, padding=pads, dilation=dilations, groups=groups)

    return conv


def _maxpool(a: dict[str, Any], name: str) -> Op:
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides", [1] * len(kernel)))
    pads = _symmetric(list(a.get("pads", [0] * 2 * len(kernel))), name)
    ceil = bool(a.get("ceil_mode", 0))
    return lambda x: F.max_pool2d(x, kernel, strides, pads, ceil_mode=ceil)


def _reduce_mean(a: dict[str, Any], name: str) -> Op:
    if "axes" not in a:
        raise UnsupportedModelError(f"{name}: ReduceMean without an axes attribute (opset 18)")
    axes, keep = [int(v) for v in a["axes"]], bool(a.get("keepdims", 1))
    return lambda x: torch.mean(x, dim=axes, keepdim=keep)


def _gemm(a: dict[str, Any], name: str) -> Op:
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    ta, tb = bool(a.get("transA", 0)), bool(a.get("transB", 0))

    def gemm(x: torch.Tensor, w: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        y = torch.matmul(x.t() if ta else x, w.t() if tb else w)
        if alpha != 1.0:
            y = y * alpha
        if c is not None:
            y = y + (c * beta if beta != 1.0 else c)
        return y

    return gemm


def _flatten(a: dict[str, Any], name: str) -> Op:
    axis = int(a.get("axis", 1))
    return lambda x: torch.flatten(x, axis) if axis > 0 else x.reshape(1, -1)


def _softmax(a: dict[str, Any], name: str) -> Op:
    axis = int(a.get("axis", -1))
    return lambda x: torch.softmax(x, dim=axis)


def _argmax(a: dict[str, Any], name: str) -> Op:
    axis, keep = int(a.get("axis", 0)), bool(a.get("keepdims", 1))
    if a.get("select_last_index", 0):
        raise UnsupportedModelError(f"{name}: ArgMax select_last_index is not converted")
    return lambda x: torch.argmax(x, dim=axis, keepdim=keep)


_OPS: dict[str, Callable[[dict[str, Any], str], Op]] = {
    "Conv": _conv,
    "Relu": lambda a, n: torch.relu,
    "MaxPool": _maxpool,
    "Add": lambda a, n: torch.add,
    "ReduceMean": _reduce_mean,
    "GlobalAveragePool": lambda a, n: lambda x: torch.mean(x, dim=[2, 3], keepdim=True),
    "Gemm": _gemm,
    "MatMul": lambda a, n: torch.matmul,
    "Flatten": _flatten,
    "Softmax": _softmax,
    "ArgMax": _argmax,
    "Identity": lambda a, n: lambda x: x,
}
#: the operators `build` converts
CONVERTED_OPS = tuple(sorted(_OPS))


class OnnxModule(torch.nn.Module):
    """The needed nodes of an ONNX graph in order; the initializers are the module's buffers
    (so `.to(device, dtype)` moves them and casts the floating ones)."""

    def __init__(self, proto: Any, output: str) -> None:
        super().__init__()
        graph = proto.graph
        inits = {i.name: i for i in graph.initializer}
        real = [i.name for i in graph.input if i.name not in inits]
        if len(real) != 1:
            raise UnsupportedModelError(f"the graph has {len(real)} inputs; one is converted")
        self.input_name = real[0]
        self.output_name = output
        needed = _needed(graph.node, output)
        self._slots: dict[str, str] = {}
        self.steps: list[tuple[Op, list[str], str]] = []
        for node in graph.node:
            if not set(node.output) & needed:
                continue
            if node.op_type not in _OPS:
                raise UnsupportedModelError(
                    f"node {node.name or node.output[0]!r}: operator {node.op_type} is not "
                    f"converted (repro's torch converter has {list(CONVERTED_OPS)})"
                )
            for name in node.input:
                if name in inits and name not in self._slots:
                    slot = f"init_{len(self._slots)}"
                    value = np.array(numpy_helper.to_array(inits[name]))
                    self.register_buffer(slot, torch.from_numpy(value))
                    self._slots[name] = slot
            self.steps.append(
                (_OPS[node.op_type](_attrs(node), node.name), list(node.input), node.output[0])
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        env: dict[str, torch.Tensor] = {self.input_name: x}
        for slot_of, slot in self._slots.items():
            env[slot_of] = getattr(self, slot)
        for fn, inputs, out in self.steps:
            env[out] = fn(*(env[i] for i in inputs if i))
        return env[self.output_name]


def _needed(nodes: Any, output: str) -> set[str]:
    """Every value the output depends on."""
    producer = {o: n for n in nodes for o in n.output}
    needed, todo = set(), [output]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producer.get(name)
        if node is not None:
            todo.extend(i for i in node.input if i)
    return needed


def build(proto: Any, output: str) -> OnnxModule:
    """The torch module computing `output` of the ONNX model `proto`."""
    outputs = [o.name for o in proto.graph.output]
    if output not in outputs:
        raise UnsupportedModelError(f"{output!r} is not an output of the model ({outputs})")
    return OnnxModule(proto, output)
