"""Static shape and dtype inference, one rule per op.

`infer_node(graph, node)` returns the types of the node's outputs from the types of its
inputs and the values of its constant inputs. Rules that depend on the input shape resolve
it into the node's attributes (auto_pad -> explicit pads, ConvTranspose output_shape -> pads,
kernel_shape from the weights), so later stages read one explicit form.
"""
from __future__ import annotations

import math

import numpy as np

from vdla.driver import host_ops
from vdla.driver.host_ops.nn import pool_output_size

from .ir import Graph, GraphError, Node, TensorType, UnsupportedModelError

ELEMENTWISE_UNARY = {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Clip",
                     "Exp", "Identity"}
BROADCAST_BINARY = {"Add", "Sub", "Mul", "Div"}
# Ops whose output type is computed by running the numpy op on a zero-strided placeholder:
# they only move data, so this costs nothing and cannot disagree with their semantics.
DATA_MOVEMENT = {"Reshape", "Flatten", "Transpose", "Concat", "Split", "Slice", "Pad", "Squeeze",
                 "Unsqueeze", "Shape"}
# input index -> name, for operands that must be compile-time constants
CONSTANT_OPERANDS = {
    "Reshape": {1: "shape"}, "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"},
    "Pad": {1: "pads", 2: "constant_value", 3: "axes"}, "Clip": {1: "min", 2: "max"},
    "Split": {1: "split"}, "Squeeze": {1: "axes"}, "Unsqueeze": {1: "axes"},
    "ReduceMean": {1: "axes"}, "Dropout": {1: "ratio", 2: "training_mode"},
}


def _resolve_pads(node: Node, in_spatial, kernel, strides, dilations) -> list[int]:
    nd = len(in_spatial)
    mode = node.attrs.get("auto_pad", "NOTSET")
    if mode == "NOTSET":
        return list(node.attrs.get("pads") or [0] * (2 * nd))
    if mode == "VALID":
        return [0] * (2 * nd)
    begins, ends = [], []
    for size, k, s, d in zip(in_spatial, kernel, strides, dilations):
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _spatial(node: Node, x: TensorType, kernel) -> None:
    """Make kernel_shape, strides, dilations and pads explicit on a conv/pool node."""
    nd = len(x.shape) - 2
    if nd < 1:
        raise GraphError(f"{node.describe()}: input must have a batch, a channel and at least one "
                         f"spatial dim, got {x}")
    a = node.attrs
    a["kernel_shape"] = list(kernel)
    a["strides"] = list(a.get("strides") or [1] * nd)
    a["dilations"] = list(a.get("dilations") or [1] * nd)
    if node.op != "ConvTranspose":
        a["pads"] = _resolve_pads(node, x.shape[2:], kernel, a["strides"], a["dilations"])
        a["auto_pad"] = "NOTSET"


def _conv_shape(node: Node, x: TensorType, w: TensorType, dtype: str) -> TensorType:
    _spatial(node, x, w.shape[2:])
    a, nd = node.attrs, len(x.shape) - 2
    a["group"] = a.get("group", 1)
    if x.shape[1] != w.shape[1] * a["group"]:
        raise GraphError(f"{node.describe()}: input has {x.shape[1]} channels but the weights "
                         f"expect {w.shape[1]} x group {a['group']}")
    sizes = [pool_output_size(x.shape[2 + i], w.shape[2 + i], a["strides"][i], a["pads"][i],
                              a["pads"][nd + i], a["dilations"][i]) for i in range(nd)]
    return TensorType((x.shape[0], w.shape[0], *sizes), dtype)


def _conv_transpose_shape(node: Node, x: TensorType, w: TensorType) -> TensorType:
    _spatial(node, x, w.shape[2:])
    a, nd = node.attrs, len(x.shape) - 2
    a["group"] = a.get("group", 1)
    out_pad = list(a.get("output_padding") or [0] * nd)
    a["output_padding"] = out_pad
    full = [(x.shape[2 + i] - 1) * a["strides"][i] + (w.shape[2 + i] - 1) * a["dilations"][i] + 1
            + out_pad[i] for i in range(nd)]
    mode = a.get("auto_pad", "NOTSET")
    if a.get("output_shape") or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = list(a.get("output_shape") or [x.shape[2 + i] * a["strides"][i] for i in range(nd)])
        target = target[-nd:]
        total = [f - t for f, t in zip(full, target)]
        upper = mode == "SAME_UPPER"
        # ONNX: SAME_UPPER puts the smaller half first; otherwise the larger half first. A
        # negative total (output_shape beyond the full result) extends with zeros at the end.
        begins = [t // 2 if upper else t - t // 2 for t in total]
        a["pads"] = begins + [t - b for t, b in zip(total, begins)]
    elif mode == "VALID":
        a["pads"] = [0] * (2 * nd)
    else:
        a["pads"] = list(a.get("pads") or [0] * (2 * nd))
    a["auto_pad"] = "NOTSET"
    a.pop("output_shape", None)
    sizes = [full[i] - a["pads"][i] - a["pads"][nd + i] for i in range(nd)]
    return TensorType((x.shape[0], w.shape[1] * a["group"], *sizes), x.dtype)


def _pool_shape(node: Node, x: TensorType) -> TensorType:
    _spatial(node, x, node.attrs["kernel_shape"])
    a, nd = node.attrs, len(x.shape) - 2
    sizes = [pool_output_size(x.shape[2 + i], a["kernel_shape"][i], a["strides"][i], a["pads"][i],
                              a["pads"][nd + i], a["dilations"][i], bool(a.get("ceil_mode", 0)))
             for i in range(nd)]
    return TensorType((*x.shape[:2], *sizes), x.dtype)


def _matmul_shape(node: Node, a: tuple, b: tuple) -> tuple:
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise GraphError(f"{node.describe()}: cannot multiply shapes {a} and {b}")
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return tuple(out)


def _placeholder(t: TensorType) -> np.ndarray:
    return np.broadcast_to(np.zeros((), dtype=t.dtype), t.shape)


def _by_evaluation(graph: Graph, node: Node, ins: list) -> list[TensorType]:
    args = [graph.constants[n] if n in graph.constants else (_placeholder(t) if t else None)
            for n, t in zip(node.inputs, ins)]
    outs = host_ops.run(node.op, args, node.attrs)
    return [TensorType.of(o) for o in outs]


def _check_constant_operands(graph: Graph, node: Node) -> None:
    for index, what in CONSTANT_OPERANDS.get(node.op, {}).items():
        if index < len(node.inputs) and node.inputs[index] and node.inputs[index] not in graph.constants:
            raise GraphError(f"{node.describe()}: input {index} ({what}) = {node.inputs[index]!r} must be "
                             "a compile-time constant (an initializer, or computed from static "
                             "shapes); vdla compiles static graphs")


def infer_node(graph: Graph, node: Node) -> list[TensorType]:
    ins = [graph.types.get(n) if n else None for n in node.inputs]
    for name, t in zip(node.inputs, ins):
        if name and t is None:
            raise GraphError(f"{node.describe()}: input {name!r} has no known type")
    _check_constant_operands(graph, node)
    op, x = node.op, ins[0] if ins else None
    try:
        if op in ELEMENTWISE_UNARY:
            return [x]
        if op in BROADCAST_BINARY:
            return [TensorType(tuple(np.broadcast_shapes(x.shape, ins[1].shape)), x.dtype)]
        if op == "Cast":
            return [TensorType(x.shape, node.attrs["to"])]
        if op == "Dropout":
            training = node.inputs[2] if len(node.inputs) > 2 else ""
            if node.attrs.get("training_mode") or (training and graph.constants[training].any()):
                raise UnsupportedModelError(f"{node.describe()}: training_mode=true is not "
                                            "supported (inference only)")
            return [x, TensorType(x.shape, "bool")][:len(node.outputs)]
        if op == "Conv":
            return [_conv_shape(node, x, ins[1], x.dtype)]
        if op == "QLinearConv":
            out_dtype = ins[7].dtype if len(ins) > 7 and ins[7] else "uint8"
            return [_conv_shape(node, x, ins[3], out_dtype)]
        if op == "ConvTranspose":
            return [_conv_transpose_shape(node, x, ins[1])]
        if op in ("MaxPool", "AveragePool"):
            return [_pool_shape(node, x)]
        if op in ("GlobalAveragePool", "GlobalMaxPool"):
            return [TensorType(x.shape[:2] + (1,) * (len(x.shape) - 2), x.dtype)]
        if op == "BatchNormalization":
            return [x]
        if op == "Gemm":
            a, b = x.shape, ins[1].shape
            m = a[1] if node.attrs.get("transA", 0) else a[0]
            n = b[0] if node.attrs.get("transB", 0) else b[1]
            return [TensorType((m, n), x.dtype)]
        if op == "MatMul":
            return [TensorType(_matmul_shape(node, x.shape, ins[1].shape), x.dtype)]
        if op == "QLinearMatMul":
            return [TensorType(_matmul_shape(node, x.shape, ins[3].shape), ins[7].dtype)]
        if op == "Softmax":
            return [x]
        if op == "Gather":
            axis = node.attrs.get("axis", 0) % len(x.shape)
            shape = x.shape[:axis] + ins[1].shape + x.shape[axis + 1:]
            return [TensorType(shape, x.dtype)]
        if op == "QuantizeLinear":
            dtype = node.attrs.get("output_dtype") or (ins[2].dtype if len(ins) > 2 and ins[2] else "uint8")
            return [TensorType(x.shape, dtype)]
        if op == "DequantizeLinear":
            return [TensorType(x.shape, ins[1].dtype)]
        if op in DATA_MOVEMENT or op == "ReduceMean":
            return _by_evaluation(graph, node, ins)
        if op == "LayoutPack":
            n, c, h, w = x.shape
            b = node.attrs["block"]
            return [TensorType((n, c // b, h, w, b), x.dtype)]
        if op == "LayoutUnpack":
            n, cb, h, w, b = x.shape
            return [TensorType((n, cb * b, h, w), x.dtype)]
        if op == "ConvNCHWc":
            w6, a = ins[1].shape, node.attrs
            sizes = [pool_output_size(x.shape[2 + i], w6[2 + i], a["strides"][i], a["pads"][i],
                                      a["pads"][2 + i], a["dilations"][i]) for i in range(2)]
            return [TensorType((x.shape[0], w6[0], *sizes, w6[-1]), x.dtype)]
        if op == "ConvWinogradNCHWc":   # weight [4, 4, O/ob, I/cb, cb, ob]: a 3x3 filter, stride 1
            u, p = ins[1].shape, node.attrs["pads"]
            sizes = [x.shape[2 + i] + p[i] + p[2 + i] - 2 for i in range(2)]
            return [TensorType((x.shape[0], u[2], *sizes, u[-1]), x.dtype)]
        if op.endswith("NCHWc") and op[:-5] in ("MaxPool", "AveragePool", "GlobalAveragePool",
                                                "GlobalMaxPool"):
            n, cb, h, w, b = x.shape
            plain = TensorType((n, cb * b, h, w), x.dtype)
            if op.startswith("Global"):
                return [TensorType((n, cb, 1, 1, b), x.dtype)]
            out = _pool_shape(node, plain)
            return [TensorType((n, cb, *out.shape[2:], b), x.dtype)]
        if op == "QConvNCHWcInt8":
            w7, a = ins[1].shape, node.attrs
            sizes = [pool_output_size(x.shape[2 + i], w7[2 + i], a["strides"][i], a["pads"][i],
                                      a["pads"][2 + i], a["dilations"][i]) for i in range(2)]
            return [TensorType((x.shape[0], w7[0], *sizes, w7[5]), "int32")]
        if op == "RequantizeChannels":
            return [TensorType(x.shape, node.attrs["dtype"])]
        if op == "Fused" or op.startswith("Vdla"):   # typed when made (quantize_vdla)
            return [graph.types[o] for o in node.outputs]
    except GraphError:
        raise
    except Exception as exc:  # a malformed model: say which node
        raise GraphError(f"{node.describe()}: cannot infer output types from inputs "
                         f"{', '.join(map(str, ins))}: {exc}") from exc
    raise GraphError(f"{node.describe()}: no shape inference rule for op {op!r}")
