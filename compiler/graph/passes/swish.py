"""Pass: x * Sigmoid(x) as one Swish(x) (SiLU: EfficientNet's, YOLO's activation as exporters
write it).

Why: the product reads x twice, so the fusion pass, which extends a chain only through an
output's single consumer, leaves the conv that makes x, the Sigmoid and the Mul as separate
kernels, and x makes a round trip through memory. As one elementwise op of x, the activation
fuses into the conv's epilogue. Only where the Sigmoid's result feeds nothing else. (The CPU
pipeline only: the accelerator's quantizer has its own SiLU path.)
"""
from __future__ import annotations

from ..ir import Graph, Node


def fold_swish(graph: Graph) -> Graph:
    consumers, made = graph.consumers(), graph.producers()
    return graph.fold_chains(lambda node: _swish(graph, node, made, consumers))


def _swish(graph, node, made, consumers):
    """(Swish(x), [the Sigmoid]) where `node` is x * Sigmoid(x), else None."""
    if node.op != "Mul" or len(node.inputs) != 2:
        return None
    for x, s in (node.inputs, node.inputs[::-1]):
        sig = made.get(s)
        if sig is not None and sig.op == "Sigmoid" and sig.inputs[0] == x and s not in graph.outputs \
                and len(consumers.get(s, [])) == 1 and graph.types[x] == graph.types[node.outputs[0]]:
            return Node("Swish", node.name, [x], list(node.outputs), {"alpha": 1.0}), [sig]
    return None
