"""Pass: put Gemm with constant weights into the dense form kernels take: B as [N, K]
(transB=1), alpha folded into B, beta folded into a 1-D bias C."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, TensorType


def canonicalize_gemm(graph: Graph) -> Graph:
    for node in graph.nodes:
        if node.op != "Gemm" or node.inputs[1] not in graph.constants:
            continue
        a = node.attrs
        c = node.inputs[2] if len(node.inputs) > 2 else ""
        if c and c not in graph.constants:
            continue
        b = graph.constants[node.inputs[1]]
        b = b if a.get("transB", 0) else b.T
        n = b.shape[0]
        if c:
            bias = graph.constants[c]
            if bias.size not in (1, n) or (bias.ndim == 2 and bias.shape[0] != 1):
                continue  # a per-row bias: keep the general form
            bias = np.broadcast_to(bias.reshape(-1), (n,)) * a.get("beta", 1.0)
        alpha = a.get("alpha", 1.0)
        names = [f"{node.name}.weight"]
        graph.constants[names[0]] = np.ascontiguousarray(b * alpha if alpha != 1.0 else b).astype(b.dtype)
        if c:
            names.append(f"{node.name}.bias")
            graph.constants[names[1]] = np.ascontiguousarray(bias).astype(b.dtype)
        for name in names:
            graph.types[name] = TensorType.of(graph.constants[name])
        node.inputs = [node.inputs[0]] + names
        node.attrs = {"transA": a.get("transA", 0), "transB": 1}
    return graph
