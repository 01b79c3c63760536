"""Pass: MatMul and Gemm by a constant weight as one GEMM over all the activation's rows, with
the weight in the form the CPU matmul kernel reads best (topi.conv_schedules' register-tiled
micro-kernel: a few rows times a vector of columns, broadcast-FMAs over K).

- MatMul of an [..., M, K] activation by a 2-D weight (nn.Linear on a token sequence, a
  pointwise layer on an NHWC image) computes the same thing as [rows, K] @ [K, N]: the
  activation is viewed as [rows, K] (a Reshape, which the memory plan aliases: no copy), the
  MatMul and the elementwise chain after it that fusion would put in its kernel (bias, GELU,
  residual) run on [rows, N], and the chain's result is viewed back under its own name. A
  batched kernel would tile each M separately (a ViT's [N, 1, D] activation: rows of one).
- The weight is stored as [N / PANEL, K, PANEL] panels, each read contiguously, where the
  columns make whole panels: the MatMul becomes MatMulPanels, [rows, K] @ panels -> [rows, N]
  (its kernel's column vectors read panel rows), and its chain, a residual included, runs on
  [rows, N] as the plain form's does.
- Gemm with a constant weight (canonicalize_gemm's [N, K], transB=1) and at least MIN_ROWS
  rows becomes MatMul by the weight transposed at compile time, plus the bias Add. A Gemm of
  fewer rows (a classifier's one) keeps dense's dot-product schedule, which reads the
  weight once for all its columns.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, TensorType
from .view_chain import chain_on_view, rewrite_with_chains

MIN_ROWS = 8
# The weight is read in panels of PANEL columns, each contiguous: a [K, N] row-major weight
# gives the kernel one cache line per K row, N * 4 bytes apart, which the prefetcher does not
# follow across pages (ConvNeXt-T's last stage, [49, 768] @ [768, 3072]: 4.6 ms, 25 GMAC/s, in
# [K, N] form). Measured with the Transpose back included, in the same process as
# onnxruntime: ViT-Tiny 29.5 -> 28.2 ms, ConvNeXt-T 108 -> 101 ms, the BERT encoder 0.42 -> 0.37 ms.
PANEL = 16


def _gemm_as_matmul(graph: Graph, node: Node) -> list[Node] | None:
    a = node.attrs
    w = node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    x_type = graph.types[node.inputs[0]]
    if a.get("transA", 0) or not a.get("transB", 0) or w not in graph.constants \
            or (bias and (bias not in graph.constants or graph.constants[bias].ndim != 1)) \
            or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 \
            or x_type.dtype != "float32" or x_type.shape[0] < MIN_ROWS:
        return None
    wt = graph.add_constant(f"{w}^T", np.ascontiguousarray(graph.constants[w].T))
    y = node.outputs[0]
    if not bias:
        return [Node("MatMul", node.name, [node.inputs[0], wt], [y])]
    product = graph.add_tensor(f"{y}@matmul", graph.types[y])
    return [Node("MatMul", node.name, [node.inputs[0], wt], [product]),
            Node("Add", f"{node.name}.bias", [product, bias], [y])]


def _row_operand(graph: Graph, name: str, shape: tuple, rows: int, views: list, defined: set) -> str | None:
    """`name` as an operand of the chain's [rows, N] form, or None if it does not broadcast
    there: a constant of at most one non-1 trailing dim, or a runtime tensor of the chain's
    own shape defined before the MatMul (viewed as [rows, N] there)."""
    t = graph.types[name]
    if name in graph.constants:
        value = graph.constants[name]
        if value.ndim <= 1:
            return name
        if math.prod(value.shape[:-1]) == 1:
            return graph.add_constant(f"{name}@row", value.reshape(value.shape[-1]))
        return None
    if t.shape != shape or name not in defined:
        return None
    view = graph.add_tensor(f"{name}@rows", TensorType((rows, shape[-1]), t.dtype))
    views.append(Node("Reshape", f"{name}.rows", [name], [view], {"shape": [rows, shape[-1]]}))
    return view


def _flatten(node: Node, consumers: dict, defined: set, done: set, graph: Graph) -> list[Node] | None:
    x, w = node.inputs
    xt, wt = graph.types[x], graph.types[w]
    if len(xt.shape) < 2 or len(wt.shape) != 2 or w not in graph.constants or xt.dtype != "float32":
        return None
    rows, k = math.prod(xt.shape[:-1]), xt.shape[-1]
    n = wt.shape[1]
    panels = n % PANEL == 0             # the columns make whole panels
    if len(xt.shape) == 2 and not panels:
        return None
    shape = graph.types[node.outputs[0]].shape

    out = []
    if len(xt.shape) > 2:
        x2 = graph.add_tensor(f"{x}@rows", TensorType((rows, k), xt.dtype))
        out.append(Node("Reshape", f"{node.name}.rows", [x], [x2], {"shape": [rows, k]}))
        x = x2
    if panels:
        weight = graph.constants[w]
        w = graph.add_constant(f"{w}@panels", np.ascontiguousarray(
            weight.reshape(k, n // PANEL, PANEL).transpose(1, 0, 2)))
    product = graph.add_tensor(f"{node.outputs[0]}@rows", TensorType((rows, n), graph.types[node.outputs[0]].dtype))
    views, chain, tail, tail2 = chain_on_view(
        graph, consumers, node.outputs[0], product, (rows, n), "rows",
        lambda name, new: _row_operand(graph, name, shape, rows, new, defined), done)
    out += views + [Node("MatMulPanels" if panels else "MatMul", node.name, [x, w], [product])] + chain
    out.append(Node("Reshape", f"{tail}.unrows", [tail2], [tail], {"shape": list(shape)}))
    return out


def flatten_matmul_rows(graph: Graph) -> Graph:
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.op == "Gemm":
            nodes.extend(_gemm_as_matmul(graph, node) or [node])
        else:
            nodes.append(node)
    graph.nodes = nodes
    return rewrite_with_chains(graph, "MatMul", lambda node, *context: _flatten(node, *context, graph))
