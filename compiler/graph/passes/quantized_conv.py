"""Pass: QLinearConv -> an int8 convolution in the blocked layout plus a per-channel requantize.

With uint8 activations, int8 weights of zero point 0 (symmetric, as quantizers emit them) and
per-tensor input/output scales, ONNX QLinearConv is

    y = saturate(round((sum((x - xz) * w) + B) * xs * ws[oc] / ys) + yz)

Padding with xz instead of 0 makes every window term (x - xz) * w, so the sum is
sum(x_padded * w) - xz * sum(w[oc]): an unsigned x signed dot product (the VNNI instruction's
operand types) plus a per-channel constant folded into the bias. The input is packed to
NCHWc (channel blocks of a multiple of 4; a count that is none, a stem's 3, gains channels of
the zero point with zero weights), weights to [O/16, I/cb, KH, KW, cb/4, 16, 4] at
compile time, and the result unpacked to NCHW for whatever follows. Weights without -128 carry
their per-channel sums too, for targets whose kernels multiply signed bytes x - 128.
"""
from __future__ import annotations

import numpy as np

from vdla.driver.host_ops.layout import pack_weight_int8

from ..ir import Graph, Node, TensorType


def scalar_constant(graph: Graph, name: str):
    """The value of a one-element constant input, else None."""
    if not name or name not in graph.constants or graph.constants[name].size != 1:
        return None
    return graph.constants[name].reshape(()).item()


def zero_or_absent(graph: Graph, name: str) -> bool:
    """A weight zero point the uint8 x int8 kernels take: none, or constant zeros."""
    return not name or (name in graph.constants and not graph.constants[name].any())


def signed_product_inputs(graph: Graph, weight_name: str, weight: np.ndarray, reduce_axes) -> list[str]:
    """The optional weight-sums input of QConvNCHWcInt8 / QMatMulInt8 ([blocks, 16] int32, each
    output channel's sum over `reduce_axes`): with it, a target may multiply x - 128 as a signed
    byte and add 128 x the sum back (topi.conv2d_nchwc_int8's weight_sums; AVX2 hosts without
    VNNI do, lower_ops.cpu_rules). Only weights without -128 have one: its negation is not a byte."""
    if weight.min() == -128:
        return []
    sums = weight.astype(np.int64).sum(axis=reduce_axes).astype(np.int32)
    return [graph.add_constant(f"{weight_name}@sums", sums.reshape(-1, 16))]


def requantize_constants(x_scale, x_zero, w_scale, y_scale, weight_sums, bias=None):
    """RequantizeChannels' per-output-channel operands for uint8 x int8 products: the int32
    correction (bias - xz * the channel's weight sum, which makes sum(x * w) the sum of
    (x - xz) * w) and the float32 multiplier xs * ws / ys."""
    count = len(weight_sums)
    w_scale = np.broadcast_to(np.asarray(w_scale, np.float64).reshape(-1), (count,))
    b = np.zeros(count, np.int64) if bias is None else bias.astype(np.int64)
    correction = (b - int(x_zero) * weight_sums).astype(np.int32)
    return correction, (np.float64(x_scale) * w_scale / np.float64(y_scale)).astype(np.float32)


class _Rewriter:
    def __init__(self, graph: Graph):
        self.g = graph

    def rewrite(self, node: Node) -> list[Node] | None:
        g, a = self.g, node.attrs
        ins = list(node.inputs) + [""] * (9 - len(node.inputs))
        x, xs, xz, w, ws, wz, ys, yz, bias = ins
        xt, yt = g.types[x], g.types[node.outputs[0]]
        scalars = [scalar_constant(g, n) for n in (xs, xz, ys, yz)]
        if (len(xt.shape) != 4 or xt.dtype != "uint8" or yt.dtype not in ("uint8", "int8")
                or a.get("group", 1) != 1 or w not in g.constants or ws not in g.constants
                or any(v is None for v in scalars) or (bias and bias not in g.constants)
                or not zero_or_absent(g, wz)):
            return None
        weight = g.constants[w]
        oc, c = weight.shape[:2]
        if weight.dtype != np.int8 or oc % 16:
            return None
        padded_c = -(-c // 4) * 4     # 4-way dot products: a stem's 3 channels take a 4th of zero weights
        cb = next(b for b in (16, 8, 4) if padded_c % b == 0)
        x_scale, x_zero, y_scale, y_zero = scalars
        correction, multiplier = requantize_constants(x_scale, x_zero, g.constants[ws], y_scale,
                                                      weight.astype(np.int64).reshape(oc, -1).sum(axis=1),
                                                      g.constants[bias] if bias else None)
        shape5 = (1, oc // 16, 1, 1, 16)
        n, _, h, wd = xt.shape
        y = node.outputs[0]
        pad_channels = []
        if padded_c != c:     # the extra channels hold the zero point: (x - xz) * 0 either way
            wide = g.add_tensor(f"{x}@{padded_c}ch", TensorType((n, padded_c, h, wd), "uint8"))
            pad_channels = [Node("Pad", f"{node.name}.channels", [x], [wide],
                                 {"mode": "constant", "pads": [0, 0, 0, 0, 0, padded_c - c, 0, 0],
                                  "constant_value": int(x_zero)})]
            weight = np.concatenate([weight, np.zeros((oc, padded_c - c) + weight.shape[2:], np.int8)], axis=1)
            x, c = wide, padded_c
        packed_x = g.add_tensor(f"{x}@c{cb}", TensorType((n, c // cb, h, wd, cb), "uint8"))
        acc_t = yt.shape[:1] + (oc // 16,) + yt.shape[2:] + (16,)
        acc = g.add_tensor(f"{y}@acc", TensorType(acc_t, "int32"))
        packed_y = g.add_tensor(f"{y}@c16", TensorType(acc_t, yt.dtype))
        return pad_channels + [
            Node("LayoutPack", f"pack:{x}", [x], [packed_x], {"block": cb}),
            Node("QConvNCHWcInt8", node.name,
                 [packed_x, g.add_constant(f"{w}@int8c", pack_weight_int8(weight, cb)),
                  *signed_product_inputs(g, w, weight, (1, 2, 3))], [acc],
                 {"strides": a["strides"], "pads": a["pads"], "dilations": a["dilations"],
                  "pad_value": int(x_zero)}),
            Node("RequantizeChannels", f"{node.name}.requantize",
                 [acc, g.add_constant(f"{y}@corr", correction.reshape(shape5)),
                  g.add_constant(f"{y}@mult", multiplier.reshape(shape5))], [packed_y],
                 {"zero_point": int(y_zero), "dtype": yt.dtype}),
            Node("LayoutUnpack", f"unpack:{y}", [packed_y], [y]),
        ]


def pack_quantized_conv(graph: Graph) -> Graph:
    rewriter = _Rewriter(graph)
    nodes = []
    for node in graph.nodes:
        replacement = rewriter.rewrite(node) if node.op == "QLinearConv" else None
        nodes.extend(replacement or [node])
    graph.nodes = nodes
    return graph
