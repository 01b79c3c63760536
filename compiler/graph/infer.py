"""Static shape and dtype inference, one rule per op.

`infer_node(graph, node)` returns the types of the node's outputs from the types of its
inputs and the values of its constant inputs. Rules that depend on the input shape resolve
it into the node's attributes (auto_pad -> explicit pads, ConvTranspose output_shape -> pads,
kernel_shape from the weights), so later stages read one explicit form.

Inference is also where a node's attributes meet its input shapes, so the rules check them
(InvalidModelError, naming the node, the attribute and what was expected), and every output
type passes `limits.check_tensor`. No rule materializes a tensor: data-movement ops use the host
ops' shape rules, which read only shapes.
"""
from __future__ import annotations

import numpy as np

from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError, Shaped
from vdla.driver.host_ops import vdla as vdla_ops
from vdla.driver.host_ops.errors import RuntimeShape, Unimplemented
from vdla.driver.host_ops.axes import normalize_axis
from vdla.driver.host_ops.nn import pool_output_size

from .infer_window import conv_shape, conv_transpose_shape, pool_shape
from .ir import Graph, GraphError, InvalidModelError, Node, RuntimeShapeError, TensorType, UnsupportedModelError
from .limits import check_tensor

ELEMENTWISE_UNARY = {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Clip",
                     "Exp", "Identity"}
BROADCAST_BINARY = {"Add", "Sub", "Mul", "Div"}
# Ops whose output shapes come from the host ops' shape rules (vdla.driver.host_ops.SHAPES).
DATA_MOVEMENT = {"Reshape", "Flatten", "Transpose", "Concat", "Split", "Slice", "Pad", "Squeeze",
                 "Unsqueeze", "Shape", "Gather", "ReduceMean"}
# input index -> name, for operands that must be compile-time constants
CONSTANT_OPERANDS = {
    "Reshape": {1: "shape"}, "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"},
    "Pad": {1: "pads", 2: "constant_value", 3: "axes"}, "Clip": {1: "min", 2: "max"},
    "Split": {1: "split"}, "Squeeze": {1: "axes"}, "Unsqueeze": {1: "axes"},
    "ReduceMean": {1: "axes"}, "Dropout": {1: "ratio", 2: "training_mode"},
    **{op: d.constant_operands for op, d in host_ops.DEFS.items() if d.constant_operands},
}


def _shaped_args(graph: Graph, node: Node, ins: list) -> list:
    """What a host op's shape or type rule sees: constants' values, data inputs' shapes."""
    return [graph.constants[n] if n in graph.constants else
            (Shaped(t.shape, len(t.shape), t.dtype) if t else None) for n, t in zip(node.inputs, ins)]


def _record_rule(graph: Graph, node: Node, ins: list) -> list[TensorType]:
    try:
        types = host_ops.output_types(node.op, _shaped_args(graph, node, ins), node.attrs)
    except RuntimeShape as why:
        raise RuntimeShapeError(f"{node.describe()}: {why}") from None
    except Unimplemented as why:     # a value the op allows and vdla does not take (a shape that needs values)
        raise UnsupportedModelError(f"{node.describe()}: {why}") from None
    return [TensorType(shape, dtype) for shape, dtype in types]


def _shape_rule(graph: Graph, node: Node, ins: list) -> list[TensorType]:
    shapes = host_ops.output_shapes(node.op, _shaped_args(graph, node, ins), node.attrs)
    dtype = "int64" if node.op == "Shape" else ins[0].dtype
    return [TensorType(s, dtype) for s in shapes]


def _matmul_shape(node: Node, a: tuple, b: tuple) -> tuple:
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if not a or not b or a2[-1] != b2[-2]:
        raise InvalidModelError(f"{node.describe()}: cannot multiply shapes {list(a)} and {list(b)}")
    batch = _broadcast(node, a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return tuple(out)


def _broadcast(node: Node, *shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise InvalidModelError(f"{node.describe()}: input shapes {', '.join(str(list(s)) for s in shapes)} do not "
                                "broadcast (numpy rules: trailing dims equal or 1)") from None


def _gemm_shape(node: Node, a: TensorType, b: TensorType, c: TensorType | None) -> TensorType:
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise InvalidModelError(f"{node.describe()}: A {a} and B {b} must be matrices (rank 2)")
    trans_a, trans_b = node.attrs.get("transA", 0), node.attrs.get("transB", 0)
    m, k = a.shape[::-1] if trans_a else a.shape
    kb, n = b.shape[::-1] if trans_b else b.shape
    if k != kb:
        raise InvalidModelError(f"{node.describe()}: A {a} (transA={trans_a}) has {k} columns but B {b} "
                                f"(transB={trans_b}) has {kb} rows")
    if c is not None:
        try:
            fits = tuple(np.broadcast_shapes(c.shape, (m, n))) == (m, n)
        except ValueError:
            fits = False
        if not fits:
            raise InvalidModelError(f"{node.describe()}: C {c} does not broadcast to the [{m}, {n}] result")
    return TensorType((m, n), a.dtype)


def _per_channel(node: Node, x: TensorType, params: list, names: list[str]) -> None:
    if len(x.shape) < 2:
        raise InvalidModelError(f"{node.describe()}: input {x} needs a channel axis (rank >= 2)")
    for name, t in zip(names, params):
        if t is not None and t.shape != (x.shape[1],):
            raise InvalidModelError(f"{node.describe()}: {name} {t} must have shape [{x.shape[1]}] (one value per "
                                    f"channel of the input {x})")


def _quant_axis(node: Node, x: TensorType, scale: TensorType) -> None:
    """A per-axis scale must match the axis it runs along."""
    if scale.size <= 1 and len(scale.shape) <= 1:
        return
    if len(scale.shape) != 1:
        raise InvalidModelError(f"{node.describe()}: scale {scale} must be a scalar or 1-D (blocked quantization "
                                "is not supported)")
    axis = normalize_axis(node.attrs.get("axis", 1), len(x.shape))
    if scale.shape[0] != x.shape[axis]:
        raise InvalidModelError(f"{node.describe()}: scale {scale} has {scale.shape[0]} values for axis {axis} of "
                                f"the input {x}, which has {x.shape[axis]}")


def _check_gather_indices(graph: Graph, node: Node, x: TensorType) -> None:
    if len(node.inputs) < 2 or node.inputs[1] not in graph.constants:
        return  # indices known only at run time: the host op checks them
    axis = normalize_axis(node.attrs.get("axis", 0), len(x.shape))
    idx, dim = graph.constants[node.inputs[1]], x.shape[axis]
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise InvalidModelError(f"{node.describe()}: indices {node.inputs[1]!r} hold values outside "
                                f"{-dim}..{dim - 1}, the range of axis {axis} of the input {x}")


def _check_constant_operands(graph: Graph, node: Node) -> None:
    for index, what in CONSTANT_OPERANDS.get(node.op, {}).items():
        if index < len(node.inputs) and node.inputs[index] and node.inputs[index] not in graph.constants:
            raise RuntimeShapeError(f"{node.describe()}: input {index} ({what}) = {node.inputs[index]!r} is "
                                    "known only at run time (not an initializer, nor computed from static shapes)")


def constant_operands_known(graph: Graph, node: Node) -> bool:
    """Whether the operands `infer_node` needs as constants are constants already (and the inputs
    whose values give the output shape, which may fold to constants later)."""
    record = host_ops.DEFS.get(node.op)
    needed = [*CONSTANT_OPERANDS.get(node.op, {}), *(record.typed_from_values if record else ())]
    return all(not (index < len(node.inputs) and node.inputs[index]) or node.inputs[index] in graph.constants
               for index in needed)


def infer_node(graph: Graph, node: Node) -> list[TensorType]:
    ins = [graph.types.get(n) if n else None for n in node.inputs]
    for name, t in zip(node.inputs, ins):
        if name and t is None:
            raise GraphError(f"{node.describe()}: input {name!r} has no known type")
        if name and t.dynamic and node.op != "Fused":
            raise RuntimeShapeError(f"{node.describe()}: the shape of its input {name!r} ({t}) is known only at "
                                    "run time")
    _check_constant_operands(graph, node)
    try:
        outs = _rule(graph, node, ins)
    except GraphError:
        raise
    except OperandError as exc:  # an attribute or operand value the op's definition forbids
        raise InvalidModelError(f"{node.describe()}: {exc}") from None
    except Exception as exc:  # a malformed model: say which node
        raise GraphError(f"{node.describe()}: cannot infer output types from inputs "
                         f"{', '.join(map(str, ins))}: {exc}") from exc
    for name, t in zip(node.outputs, outs):
        if name and not t.dynamic:
            check_tensor(node.describe(), name, t)
    return outs


def _rule(graph: Graph, node: Node, ins: list) -> list[TensorType]:
    op, x = node.op, ins[0] if ins else None
    arg = (lambda i: ins[i] if len(ins) > i else None)
    if op in host_ops.DEFS:
        return _record_rule(graph, node, ins)
    if op in ELEMENTWISE_UNARY:
        return [x]
    if op in BROADCAST_BINARY:
        return [TensorType(_broadcast(node, x.shape, ins[1].shape), x.dtype)]
    if op == "Cast":
        return [TensorType(x.shape, node.attrs["to"])]
    if op == "Dropout":
        return [x, TensorType(x.shape, "bool")][:len(node.outputs)]
    if op == "Conv":
        return [conv_shape(node, x, ins[1], arg(2), x.dtype)]
    if op == "QLinearConv":
        out_dtype = ins[7].dtype if arg(7) else "uint8"
        return [conv_shape(node, x, ins[3], arg(8), out_dtype)]
    if op == "ConvTranspose":
        return [conv_transpose_shape(node, x, ins[1], arg(2))]
    if op in ("MaxPool", "AveragePool"):
        y = pool_shape(node, x)
        return [y, TensorType(y.shape, "int64")] if node.attrs.get("indices") else [y]
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        if len(x.shape) < 3:
            raise InvalidModelError(f"{node.describe()}: input {x} needs a batch, a channel and spatial dims "
                                    "(rank >= 3)")
        return [TensorType(x.shape[:2] + (1,) * (len(x.shape) - 2), x.dtype)]
    if op == "BatchNormalization":
        _per_channel(node, x, ins[1:5], ["scale", "B", "input_mean", "input_var"])
        return [x, ins[3], ins[4]][:max(1, len(node.outputs))]     # training mode: the running statistics
    if op == "Gemm":
        return [_gemm_shape(node, x, ins[1], arg(2))]
    if op == "MatMul":
        return [TensorType(_matmul_shape(node, x.shape, ins[1].shape), x.dtype)]
    if op == "MatMulPanels":       # x [rows, K], weight [N / P, K, P] -> [rows, N]
        w = ins[1].shape
        if len(x.shape) != 2 or len(w) != 3 or x.shape[1] != w[1]:
            raise InvalidModelError(f"{node.describe()}: {list(x.shape)} @ panels {list(w)}: expected [rows, K] and "
                             "[N / P, K, P]")
        return [TensorType((x.shape[0], w[0] * w[2]), x.dtype)]
    if op == "QLinearMatMul":
        return [TensorType(_matmul_shape(node, x.shape, ins[3].shape), ins[7].dtype)]
    if op == "Softmax":
        normalize_axis(node.attrs.get("axis", -1), len(x.shape))
        return [x]
    if op == "QuantizeLinear":
        _quant_axis(node, x, ins[1])
        dtype = node.attrs.get("output_dtype") or (ins[2].dtype if arg(2) else "uint8")
        return [TensorType(x.shape, dtype)]
    if op == "DequantizeLinear":
        _quant_axis(node, x, ins[1])
        return [TensorType(x.shape, ins[1].dtype)]
    if op in DATA_MOVEMENT:
        if op == "Gather":
            _check_gather_indices(graph, node, x)
        return _shape_rule(graph, node, ins)
    return _internal_rule(graph, node, ins)


def _internal_rule(graph: Graph, node: Node, ins: list) -> list[TensorType]:
    """The ops vdla's passes introduce (packed layouts, quantized and fused kernels)."""
    op, x = node.op, ins[0] if ins else None
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
    if op == "ConvWinogradNCHWc":   # weight [alpha, alpha, O/ob, I/cb, cb, ob]: a 3x3 filter, stride 1
        u, p = ins[1].shape, node.attrs["pads"]
        sizes = [x.shape[2 + i] + p[i] + p[2 + i] - 2 for i in range(2)]
        return [TensorType((x.shape[0], u[2], *sizes, u[-1]), x.dtype)]
    if op.endswith("NCHWc") and op[:-5] in ("MaxPool", "AveragePool", "GlobalAveragePool",
                                            "GlobalMaxPool"):
        n, cb, h, w, b = x.shape
        plain = TensorType((n, cb * b, h, w), x.dtype)
        if op.startswith("Global"):
            return [TensorType((n, cb, 1, 1, b), x.dtype)]
        out = pool_shape(node, plain)
        return [TensorType((n, cb, *out.shape[2:], b), x.dtype)]
    if op == "QConvNCHWcInt8":
        w7, a = ins[1].shape, node.attrs
        sizes = [pool_output_size(x.shape[2 + i], w7[2 + i], a["strides"][i], a["pads"][i],
                                  a["pads"][2 + i], a["dilations"][i]) for i in range(2)]
        return [TensorType((x.shape[0], w7[0], *sizes, w7[5]), "int32")]
    if op == "QMatMulInt8":         # uint8 [rows, K] x int8 [N/16, K/4, 16, 4] -> int32 [rows, N/16, 16]
        w4 = ins[1].shape
        if len(x.shape) != 2 or len(w4) != 4 or x.shape[1] != w4[1] * w4[3]:
            raise InvalidModelError(f"{node.describe()}: {list(x.shape)} @ int8 panels {list(w4)}: expected "
                                    "[rows, K] and [N/16, K/4, 16, 4]")
        return [TensorType((x.shape[0], w4[0], w4[2]), "int32")]
    if op == "RequantizeChannels":
        return [TensorType(x.shape, node.attrs["dtype"])]
    if op == "Fused" or op in vdla_ops.SEMANTICS:   # typed when made (vdla.compiler.vdla.quantize)
        return [graph.types[o] for o in node.outputs]
    raise GraphError(f"{node.describe()}: no shape inference rule for op {op!r}")
