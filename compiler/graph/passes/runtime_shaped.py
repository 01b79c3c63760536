"""Nodes whose output types depend on run-time values, made host steps.

A node whose shape rule needs a value that is no compile-time constant (NonZero of an
activation, a Range to a computed limit, Pad's pads from an input), a control-flow node, or one
that reads a tensor of run-time shape, cannot become a kernel. It becomes a host step: a "Fused"
node of that one node, marked `host_only` with the reason (which `vdla compile` lists), whose
outputs are typed by ONNX's own shape inference of the model (graph.meta["onnx_types"], made by the
frontend): the dtype always, the dimensions where ONNX knows them and -1 elsewhere. A tensor
with a -1 dimension is left out of the memory plan; the executor keeps what the host step returns.

A few nodes with static types have no kernel to write one of their outputs (MaxPool's Indices,
BatchNormalization's and Dropout's training modes): `host_only` names them, and they become the
same kind of host step, typed by vdla's own inference.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, RuntimeShapeError, TensorType, UnsupportedModelError


def host_only(graph: Graph, node: Node) -> str | None:
    """Why a node whose types are known must still run on the host (no kernel computes it)."""
    if node.op == "MaxPool" and node.attrs.get("indices"):
        return "MaxPool's Indices output is computed on the host (no kernel writes it)"
    if node.op == "BatchNormalization" and node.attrs.get("training_mode"):
        return "BatchNormalization in training mode (batch statistics) runs on the host"
    if node.op == "Dropout":
        flag = node.inputs[2] if len(node.inputs) > 2 else ""
        if flag and flag in graph.constants and np.asarray(graph.constants[flag]).any():
            return "Dropout in training mode (a random mask) runs on the host"
    return None


def wrapped(node: Node, reason: str) -> Node:
    """`node` as a one-node host step ("Fused", host_only) that no pass looks into."""
    return Node("Fused", node.name, list(dict.fromkeys(n for n in node.inputs if n)), list(node.outputs),
                {"body": [node], "pattern": node.op, "host_only": reason})


def host_step(graph: Graph, node: Node, why: RuntimeShapeError) -> Node:
    """`node` as a host step, its outputs typed from ONNX's shape inference."""
    known = graph.meta.get("onnx_types", {})
    for name in node.outputs:
        if not name:
            continue
        if name not in known:
            raise UnsupportedModelError(f"{why}; ONNX's shape inference gives no type for its output {name!r}, "
                                        "so vdla cannot plan it")
        shape, dtype, kind = known[name]
        graph.types[name] = TensorType(tuple(shape), dtype, kind)
    return wrapped(node, str(why).split(": ", 1)[-1])
