"""An op and the elementwise chain after it, run on a view of their tensors: how a linear layer
runs on [rows, N] (matmul_rows) and a pointwise convolution on one long row (conv_rows).

The rewriting pass views the op's input and output (Reshapes, which the memory plan aliases:
no copy). Each op fusion would put in the op's kernel (its output's only reader, elementwise,
of the same shape) is restated on the view, its other operands mapped by the pass (None: the
chain stops before that op), and the chain's last result is viewed back under its own name.
"""
from __future__ import annotations

from typing import Callable

from ..ir import Graph, Node, TensorType
from .fusion import ELEMENTWISE


def next_elementwise(graph: Graph, consumers: dict, tail: str) -> Node | None:
    """The elementwise op fusion would add to the chain ending in `tail`: its only reader."""
    users = consumers.get(tail, [])
    if tail in graph.outputs or len(users) != 1:
        return None
    nxt = users[0]
    if nxt.op not in ELEMENTWISE or len(nxt.outputs) != 1 or nxt.inputs.count(tail) != 1 \
            or graph.types[nxt.outputs[0]].shape != graph.types[tail].shape:
        return None
    return nxt


def chain_on_view(graph: Graph, consumers: dict, tail: str, tail_view: str, view_shape: tuple, suffix: str,
                  operand: Callable[[str, list], str | None], done: set) -> tuple[list[Node], list[Node], str, str]:
    """The chain after `tail` restated on `tail_view` (of `view_shape`): -> (nodes viewing its
    operands, the chain's ops, its last tensor, that tensor's view). `operand(name, views)`
    maps an operand onto the view, appending any Reshape it needs to `views`; the ids of the
    ops taken go to `done` (the pass drops them where they stood)."""
    views: list[Node] = []
    chain: list[Node] = []
    while (nxt := next_elementwise(graph, consumers, tail)) is not None:
        these: list[Node] = []
        operands = [tail_view if name == tail else "" if not name else operand(name, these) for name in nxt.inputs]
        if any(o is None for o in operands):
            break
        done.add(id(nxt))
        views.extend(these)
        tail = nxt.outputs[0]
        tail_view = graph.add_tensor(f"{tail}@{suffix}", TensorType(view_shape, graph.types[tail].dtype))
        chain.append(Node(nxt.op, nxt.name, operands, [tail_view], dict(nxt.attrs)))
    return views, chain, tail, tail_view


def rewrite_with_chains(graph: Graph, op: str, rewrite) -> Graph:
    """Each `op` node replaced by `rewrite(node, consumers, defined, done)` (None: it stays),
    `defined` the tensors defined before it; the chain ops a rewrite took (ids in `done`) leave
    their old places."""
    consumers = graph.consumers()
    defined = set(graph.inputs) | set(graph.constants)
    done: set[int] = set()
    nodes: list[Node] = []
    for node in graph.nodes:
        if id(node) in done:
            continue
        new = rewrite(node, consumers, defined, done) if node.op == op else None
        nodes.extend(new or [node])
        defined.update(o for n in (new or [node]) for o in n.outputs)
    graph.nodes = nodes
    return graph
