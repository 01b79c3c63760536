"""Pass: a Transpose that moves only axes of size 1 keeps every element where it was, so it is a
Reshape, which the memory plan runs as an alias (no kernel, no copy). Exporters write these
where a batch of one changes places: a ViT's batch_first [1, N, D] <-> [N, 1, D] around each
attention."""
from __future__ import annotations

from ..ir import Graph, Node


def transposes_as_views(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        if node.op == "Transpose":
            shape = graph.types[node.inputs[0]].shape
            perm = node.attrs.get("perm")
            perm = list(range(len(shape)))[::-1] if perm is None else [p % len(shape) for p in perm]
            moved = [p for p in perm if shape[p] != 1]
            if moved == sorted(moved):
                out = graph.types[node.outputs[0]].shape
                node = Node("Reshape", node.name, [node.inputs[0]], list(node.outputs), {"shape": list(out)})
        nodes.append(node)
    graph.nodes = nodes
    return graph
