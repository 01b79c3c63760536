"""Reference interpreter of the graph IR on numpy (the oracle for the executor and passes)."""
from __future__ import annotations

import numpy as np

from vdla.driver import host_ops

from .ir import Graph, GraphError


def run_reference(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    values = dict(graph.constants)
    for name in graph.inputs:
        if name not in feeds:
            raise GraphError(f"graph {graph.name!r}: missing input {name!r}")
        values[name] = np.asarray(feeds[name])
    for node in graph.nodes:
        nodes = node.body if node.op == "Fused" else [node]
        for inner in nodes:
            args = [values[n] if n else None for n in inner.inputs]
            outs = host_ops.run(inner.op, args, inner.attrs)
            for name, out in zip(inner.outputs, outs):
                if name:
                    values[name] = out
    return {name: values[name] for name in graph.outputs}
