"""What kind of operator a layer is, across backends: the key that matches an onnxruntime node
with the TVM kernel that computes the same thing when their names differ.

onnxruntime names a layer after the ONNX node and gives its operator type (`Conv`, `FusedConv`,
`Gemm`); TVM names a compiled kernel after the Relax operators fused into it
(`fused_conv2d_add_relu`, `matmul1`). Both map to one kind, the heaviest operator in the layer
(a convolution with its bias and ReLU fused in is a convolution).
"""

from __future__ import annotations

import re
from typing import Final

#: heaviest first: a fused kernel takes the kind of the first of these it contains
_TVM_KINDS: Final = (
    ("conv", ("conv1d", "conv2d", "conv3d", "conv")),
    ("matmul", ("matmul", "dense", "gemm")),
    ("pool", ("pool",)),
    ("softmax", ("softmax",)),
    ("norm", ("layer_norm", "batch_norm", "group_norm", "rms_norm")),
    ("reduce", ("mean", "sum", "prod")),
    ("argmax", ("argmax",)),
    ("concat", ("concat",)),
    ("transpose", ("transpose",)),
    ("reshape", ("reshape", "squeeze", "expand_dims", "flatten")),
    ("relu", ("relu",)),
    ("add", ("add",)),
    ("multiply", ("multiply",)),
)

_ORT_KINDS: Final = {
    "conv": ("Conv", "FusedConv", "NhwcFusedConv", "QLinearConv", "ConvInteger"),
    "matmul": ("MatMul", "Gemm", "FusedGemm", "FusedMatMul", "MatMulInteger", "QLinearMatMul"),
    "pool": ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"),
    "softmax": ("Softmax", "LogSoftmax"),
    "norm": ("LayerNormalization", "BatchNormalization", "GroupNormalization"),
    "reduce": ("ReduceMean", "ReduceSum", "ReduceProd"),
    "argmax": ("ArgMax",),
    "concat": ("Concat",),
    "transpose": ("Transpose",),
    "reshape": ("Reshape", "Flatten", "Squeeze", "Unsqueeze"),
    "relu": ("Relu",),
    "add": ("Add", "Sum"),
    "multiply": ("Mul",),
}
_BY_ORT_TYPE: Final = {t: kind for kind, types in _ORT_KINDS.items() for t in types}
_TRAILING_INDEX = re.compile(r"\d+$")


def tvm_op_type(symbol: str) -> str:
    """A TVM kernel's operators: `fused_conv2d_add_relu3` -> `conv2d_add_relu`."""
    name = symbol.removeprefix("fused_")
    return _TRAILING_INDEX.sub("", name) or name


def tvm_kind(op_type: str) -> str:
    """The kind of a TVM kernel from its operators (`conv2d_add_relu` -> `conv`)."""
    for kind, words in _TVM_KINDS:
        if any(w in op_type for w in words):
            return kind
    return op_type


def ort_kind(op_type: str) -> str:
    """The kind of an onnxruntime node from its operator type (`FusedConv` -> `conv`)."""
    return _BY_ORT_TYPE.get(op_type, op_type.lower())
