"""Passes that delete work: identities, unused nodes, unused constants."""
from __future__ import annotations

from ..ir import Graph

_IDENTITIES = {"Identity", "Dropout"}


def _is_identity(node) -> bool:
    """Identity, inference Dropout, and a Pad of zeros (Swin pads its windows by what the map
    lacks: zero for most maps)."""
    if node.op == "Pad":
        pads = node.attrs.get("pads")
        return pads is not None and not any(pads) and len([n for n in node.inputs if n]) == 1
    return node.op in _IDENTITIES


def remove_identities(graph: Graph) -> Graph:
    """Identities (_is_identity) forward their input; uses are renamed to the input.
    One that produces a graph output from a graph input or constant stays (it is a copy)."""
    renamed: dict[str, str] = {}
    kept = []
    for node in graph.nodes:
        node.inputs = [renamed.get(n, n) for n in node.inputs]
        for inner in node.body:            # a host step made early (runtime_shaped) reads by name too
            inner.inputs = [renamed.get(n, n) for n in inner.inputs]
        if _is_identity(node) and node.outputs[0] not in graph.outputs \
                and not any(o for o in node.outputs[1:]):
            renamed[node.outputs[0]] = node.inputs[0]
            continue
        kept.append(node)
    graph.nodes = kept
    return graph


def eliminate_dead_code(graph: Graph) -> Graph:
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs if o):
            kept.append(node)
            live.update(n for n in node.inputs if n)
            for inner in node.body:
                live.update(n for n in inner.inputs if n)
    graph.nodes = kept[::-1]
    graph.constants = {k: v for k, v in graph.constants.items() if k in live}
    used = live | set(graph.inputs)
    for node in graph.nodes:
        used.update(o for o in node.outputs if o)
        for inner in node.body:
            used.update(o for o in inner.outputs if o)
    graph.types = {k: v for k, v in graph.types.items() if k in used}
    return graph
