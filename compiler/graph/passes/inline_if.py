"""An If whose condition is a compile-time constant is the branch it takes.

The branch's nodes join the graph in the If's place (their names and tensors prefixed with the
If's name, so two inlined branches cannot collide), and Identity nodes give its outputs the If's
output names; remove_identities then renames them away. The branch's nodes are then compiled like
any others, instead of running as a host step.
"""
from __future__ import annotations

import numpy as np

from vdla.driver.host_ops.subgraph import decode

from ..ir import Graph, Node, TensorType


def constant_condition(graph: Graph, node: Node) -> bool | None:
    """The If's condition if it is a compile-time constant, else None."""
    if node.op != "If" or node.inputs[0] not in graph.constants:
        return None
    return bool(np.asarray(graph.constants[node.inputs[0]]).reshape(()))


def inline_if(graph: Graph, node: Node, condition: bool) -> list[Node]:
    """The nodes that replace `node`; the branch's constants join the graph's."""
    branch = decode(node.attrs["then_branch" if condition else "else_branch"])
    prefix = f"{node.name}/"
    local = set(branch["constants"]) | {o for n in branch["nodes"] for o in n["outputs"] if o}
    rename = {name: prefix + name for name in local}
    known = graph.meta.get("onnx_types", {})
    for name in local & set(known):       # ONNX's types of the branch's values, for host steps among them
        known[rename[name]] = known[name]
    for name, value in branch["constants"].items():
        graph.constants[rename[name]] = value
        graph.types[rename[name]] = TensorType.of(value)
    nodes = [Node(n["op"], prefix + n["name"], [rename.get(i, i) for i in n["inputs"]],
                  [rename.get(o, o) for o in n["outputs"]], n["attrs"]) for n in branch["nodes"]]
    nodes += [Node("Identity", f"{prefix}{out}", [rename.get(inner, inner)], [out], {})
              for inner, out in zip(branch["outputs"], node.outputs) if out]
    return nodes
