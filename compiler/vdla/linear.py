"""Pass: linear layers written as MatMul become the Gemm the accelerator's dense op takes, so
that to placement a MatMul by a constant weight and a Gemm are one thing.

MatMul(x, W) with W a constant [K, N] matrix and x an [..., K] activation is Gemm(x, W^T)
(transB=1, the canonical form) over x's rows; an Add of a constant [N] vector (or one
broadcast to it) that alone reads the product is the Gemm's bias. An activation of more
than two dims (a token sequence [B, S, K]) is viewed as its rows [B*S, K] by a Reshape and
the product viewed back: on the accelerator the packed matrix is the same bytes either way,
so placement keeps those views there (placement.row_view). A MatMul of two activations
(attention's scores) is left as it is: the matmul op's (ops/matmul.py)."""
from __future__ import annotations

import math

import numpy as np

from ..graph.ir import Graph, Node, TensorType


def _bias(graph: Graph, node: Node, consumers, n: int):
    """(the Add that adds a constant [N] vector to `node`'s output alone, that vector) or None."""
    out = node.outputs[0]
    users = consumers.get(out, [])
    if len(users) != 1 or users[0].op != "Add" or out in graph.outputs:
        return None
    add = users[0]
    other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
    value = graph.constants.get(other)
    if value is None or value.dtype != graph.types[out].dtype or value.size not in (1, n) \
            or any(d != 1 for d in value.shape[:-1]) or value.ndim > len(graph.types[out].shape):
        return None
    return add, np.broadcast_to(value.reshape(-1), (n,))


def linear_layers_as_gemm(graph: Graph) -> Graph:
    consumers = graph.consumers()
    nodes, dropped = [], set()
    for node in graph.nodes:
        if node.name in dropped:
            continue
        w = graph.constants.get(node.inputs[1]) if node.op == "MatMul" else None
        x = graph.types.get(node.inputs[0]) if w is not None else None
        if w is None or w.ndim != 2 or x is None or len(x.shape) < 2 or x.dtype != w.dtype \
                or not np.issubdtype(w.dtype, np.floating) or node.inputs[0] in graph.constants:
            nodes.append(node)
            continue
        k, n = w.shape
        rows = math.prod(x.shape[:-1])
        weight = f"{node.name}.weight"
        graph.constants[weight] = np.ascontiguousarray(w.T)
        inputs = [node.inputs[0], weight]
        out = node.outputs[0]
        fused = _bias(graph, node, consumers, n)
        if fused is not None:
            add, vector = fused
            dropped.add(add.name)
            graph.constants[f"{node.name}.bias"] = np.ascontiguousarray(vector).astype(w.dtype)
            inputs.append(f"{node.name}.bias")
            out = add.outputs[0]
        for name in inputs[1:]:
            graph.types[name] = TensorType.of(graph.constants[name])
        if len(x.shape) == 2:
            nodes.append(Node("Gemm", node.name, inputs, [out], {"transA": 0, "transB": 1}))
            continue
        x_rows, y_rows = f"{node.name}.rows", f"{node.name}.out_rows"
        graph.types[x_rows] = TensorType((rows, k), x.dtype)
        graph.types[y_rows] = TensorType((rows, n), x.dtype)
        nodes += [Node("Reshape", f"{node.name}.to_rows", [node.inputs[0]], [x_rows], {"shape": [rows, k]}),
                  Node("Gemm", node.name, [x_rows, *inputs[1:]], [y_rows], {"transA": 0, "transB": 1}),
                  Node("Reshape", f"{node.name}.from_rows", [y_rows], [out], {"shape": list(graph.types[out].shape)})]
    graph.nodes = nodes
    return graph
