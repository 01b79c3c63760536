"""Pass: give every tensor its static type (shape, dtype), in topological order."""
from __future__ import annotations

from ..infer import infer_node
from ..ir import Graph, GraphError


def infer_types(graph: Graph) -> Graph:
    for node in graph.nodes:
        if node.op == "Fused":
            continue  # body types were inferred before fusion and stay valid
        types = infer_node(graph, node)
        if len(types) < len([o for o in node.outputs if o]):
            raise GraphError(f"{node.describe()}: has {len(node.outputs)} outputs, op gives {len(types)}")
        for name, t in zip(node.outputs, types):
            if name:
                graph.types[name] = t
    return graph
