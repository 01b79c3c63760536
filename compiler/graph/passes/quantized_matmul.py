"""Pass: QLinearMatMul by a constant int8 weight -> the uint8 x int8 matmul kernel (the int8
convolution's VNNI micro-kernel with rows for pixels) plus a per-column requantize, instead of
a numpy host step (ViT-Tiny's 197x192 @ 192x768 layer: 36 ms against onnxruntime's 0.05).

With uint8 activations, int8 weights of zero point 0 and per-tensor activation scales,

    y = saturate(round(sum((a - az) * w) * as * ws[n] / ys) + yz)
      = saturate(round((sum(a * w) - az * sum(w[:, n])) * multiplier[n]) + yz),

a uint8 x int8 dot product (vpdpbusd's operand types) and a per-column constant. The activation
[..., M, K] is read as [rows, K] (an aliasing Reshape); the weight is packed at compile time to
[N/16, K/4, 16, 4]; the result [rows, N/16, 16] is [rows, N] in memory. The kernel's dot
products take whole row tiles, so a row count without a divisor of MIN_TILE..2*MIN_TILE (ViT's
197 tokens) is padded to a multiple of PAD_TO, the extra rows sliced off. N must be a multiple
of 16 and K of 4; anything else stays a QLinearMatMul.
"""
from __future__ import annotations

import math

import numpy as np

from vdla.driver.host_ops.layout import pack_matmul_weight_int8

from ..ir import Graph, Node, TensorType
from .quantized_conv import requantize_constants, scalar_constant, signed_product_inputs, zero_or_absent

MIN_TILE, PAD_TO = 7, 8


def _rewrite(graph: Graph, node: Node) -> list[Node] | None:
    a, a_scale, a_zero, w, w_scale, w_zero, y_scale, y_zero = node.inputs
    at, yt = graph.types[a], graph.types[node.outputs[0]]
    weight = graph.constants.get(w)
    scalars = [scalar_constant(graph, n) for n in (a_scale, a_zero, y_scale, y_zero)]
    if weight is None or weight.ndim != 2 or weight.dtype != np.int8 or at.dtype != "uint8" or len(at.shape) < 2 \
            or yt.dtype not in ("uint8", "int8") or w_scale not in graph.constants or None in scalars \
            or not zero_or_absent(graph, w_zero):
        return None
    k, n = weight.shape
    if n % 16 or k % 4 or graph.constants[w_scale].size not in (1, n):
        return None
    a_scale_v, a_zero_v, y_scale_v, y_zero_v = scalars
    rows = math.prod(at.shape[:-1])
    tiled = any(rows % t == 0 for t in range(MIN_TILE, min(rows, 2 * MIN_TILE) + 1))
    padded_rows = rows if tiled else -(-rows // PAD_TO) * PAD_TO
    name, y = node.name, node.outputs[0]

    def tensor(stem, shape, dtype):
        return graph.add_tensor(f"{y}@{stem}", TensorType(shape, dtype))
    correction, multiplier = requantize_constants(a_scale_v, a_zero_v, graph.constants[w_scale], y_scale_v,
                                                  weight.astype(np.int64).sum(axis=0))
    flat = tensor("rows_in", (rows, k), "uint8")
    nodes = [Node("Reshape", f"{name}.rows", [a], [flat], {"shape": [rows, k]})]
    if padded_rows != rows:
        padded = tensor("rows_in_padded", (padded_rows, k), "uint8")
        nodes.append(Node("Pad", f"{name}.pad", [flat], [padded],
                          {"mode": "constant", "pads": [0, 0, padded_rows - rows, 0], "constant_value": 0}))
        flat = padded
    acc = tensor("acc", (padded_rows, n // 16, 16), "int32")
    out = tensor("blocks", (padded_rows, n // 16, 16), yt.dtype)
    nodes += [
        Node("QMatMulInt8", name, [flat, graph.add_constant(f"{w}@int8panels", pack_matmul_weight_int8(weight)),
                                   *signed_product_inputs(graph, w, weight, 0)], [acc]),
        Node("RequantizeChannels", f"{name}.requantize",
             [acc, graph.add_constant(f"{y}@corr", correction.reshape(1, n // 16, 16)),
              graph.add_constant(f"{y}@mult", multiplier.reshape(1, n // 16, 16))], [out],
             {"zero_point": int(y_zero_v), "dtype": yt.dtype})]
    if padded_rows != rows:
        cropped = tensor("blocks_cropped", (rows, n // 16, 16), yt.dtype)
        nodes.append(Node("Slice", f"{name}.crop", [out], [cropped], {"starts": [0], "ends": [rows], "axes": [0]}))
        out = cropped
    return nodes + [Node("Reshape", f"{name}.unrows", [out], [y], {"shape": list(yt.shape)})]


def pack_quantized_matmul(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        replacement = _rewrite(graph, node) if node.op == "QLinearMatMul" else None
        nodes.extend(replacement or [node])
    graph.nodes = nodes
    return graph
