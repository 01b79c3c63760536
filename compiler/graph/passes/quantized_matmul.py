"""Pass: QLinearMatMul by a constant int8 weight -> the 1x1 QLinearConv it equals, so that
pack_quantized_conv gives it the int8 blocked convolution (AVX-512 VNNI where the host has it)
instead of a numpy host step (ViT-Tiny's 197x192 @ 192x768 layer: 36 ms against onnxruntime's
0.28).

An activation [..., M, K] is a [rows, K] matrix; transposed and seen as [1, K, 1, rows] it is an
NCHW image of K channels and rows pixels, and [K, N] weights are N 1x1 filters. The result
[1, N, 1, rows] is transposed back. The int8 convolution tiles a row by a divisor of its length
(its dot products have no tail), so a row count without a divisor of at least MIN_TILE (ViT's
197 tokens) is padded to a multiple of PAD_TO, the extra outputs sliced off. The conditions are pack_quantized_conv's: uint8 activations,
int8 weights of zero point 0, per-tensor activation scales, channel counts it can block (N a
multiple of 16, K of 4).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, TensorType

MIN_TILE, PAD_TO = 7, 8
CONV_ATTRS = {"auto_pad": "NOTSET", "group": 1, "kernel_shape": [1, 1], "strides": [1, 1], "pads": [0, 0, 0, 0],
              "dilations": [1, 1]}


def _scalar_constant(graph: Graph, name: str) -> bool:
    return bool(name) and name in graph.constants and graph.constants[name].size == 1


def _as_conv(graph: Graph, node: Node) -> list[Node] | None:
    a, a_scale, a_zero, w, w_scale, w_zero, y_scale, y_zero = node.inputs
    at, yt = graph.types[a], graph.types[node.outputs[0]]
    weight = graph.constants.get(w)
    if weight is None or weight.ndim != 2 or weight.dtype != np.int8 or at.dtype != "uint8" or len(at.shape) < 2 \
            or yt.dtype not in ("uint8", "int8") or w_scale not in graph.constants \
            or not all(_scalar_constant(graph, n) for n in (a_scale, a_zero, y_scale, y_zero)) \
            or (w_zero and (w_zero not in graph.constants or graph.constants[w_zero].any())):
        return None
    k, n = weight.shape
    if n % 16 or k % 4 or graph.constants[w_scale].size not in (1, n):
        return None
    rows = math.prod(at.shape[:-1])
    tiled = any(rows % t == 0 for t in range(MIN_TILE, min(rows, 2 * MIN_TILE) + 1))
    width = rows if tiled else -(-rows // PAD_TO) * PAD_TO
    name, y = node.name, node.outputs[0]

    def tensor(stem, shape, dtype):
        return graph.add_tensor(f"{y}@{stem}", TensorType(shape, dtype))
    flat, by_channel = tensor("rows_in", (rows, k), "uint8"), tensor("image_in_t", (k, rows), "uint8")
    image = tensor("image_in", (1, k, 1, width), "uint8")
    out_image, out_t = tensor("image", (1, n, 1, width), yt.dtype), tensor("image_t", (n, width), yt.dtype)
    out_rows = tensor("rows", (rows, n), yt.dtype)
    filters = graph.add_constant(f"{w}@filters", np.ascontiguousarray(weight.T).reshape(n, k, 1, 1))
    scales = graph.add_constant(f"{w_scale}@filters", graph.constants[w_scale].reshape(-1))
    nodes = [Node("Reshape", f"{name}.rows", [a], [flat], {"shape": [rows, k]}),
             Node("Transpose", f"{name}.channels", [flat], [by_channel], {"perm": [1, 0]})]
    if width != rows:
        padded = tensor("image_in_padded", (k, width), "uint8")
        nodes.append(Node("Pad", f"{name}.pad", [by_channel], [padded],
                          {"mode": "constant", "pads": [0, 0, 0, width - rows], "constant_value": 0}))
        by_channel = padded
    nodes += [
        Node("Reshape", f"{name}.image", [by_channel], [image], {"shape": [1, k, 1, width]}),
        Node("QLinearConv", name, [image, a_scale, a_zero, filters, scales, w_zero, y_scale, y_zero], [out_image],
             dict(CONV_ATTRS)),
        Node("Reshape", f"{name}.unimage", [out_image], [out_t], {"shape": [n, width]})]
    if width != rows:
        cropped = tensor("image_t_cropped", (n, rows), yt.dtype)
        nodes.append(Node("Slice", f"{name}.crop", [out_t], [cropped], {"starts": [0], "ends": [rows], "axes": [1]}))
        out_t = cropped
    return nodes + [Node("Transpose", f"{name}.unchannels", [out_t], [out_rows], {"perm": [1, 0]}),
                    Node("Reshape", f"{name}.unrows", [out_rows], [y], {"shape": list(yt.shape)})]


def qlinear_matmul_as_conv(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        replacement = _as_conv(graph, node) if node.op == "QLinearMatMul" else None
        nodes.extend(replacement or [node])
    graph.nodes = nodes
    return graph
