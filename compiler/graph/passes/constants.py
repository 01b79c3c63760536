"""Passes on compile-time constants.

fold_constants evaluates, in topological order, every node whose inputs are all constants and
every Shape of a statically shaped tensor; this is what turns exporters' shape arithmetic
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape) into a constant Reshape. Types are inferred
along the way because a Shape node needs its input's type, which may come from a Reshape whose
target shape was only just folded.

absorb_constant_operands then moves constant operand inputs (Reshape's shape, Slice's starts,
Pad's pads, Clip's bounds, ...) into attributes, so kernels and the runtime see them as
attributes, not as buffers.
"""
from __future__ import annotations

import collections

import numpy as np

from vdla.driver import host_ops

from ..infer import CONSTANT_OPERANDS, infer_node
from ..ir import Graph, GraphError, RuntimeShapeError, TensorType
from .inline_if import constant_condition, inline_if
from .runtime_shaped import host_only, host_step, wrapped

# Never fold these: the result would be as big as an activation for no gain, or they are
# the computation itself (a model that is constant end to end still folds: see below).
_FOLD_SIZE_LIMIT = 1 << 22


def fold_constants(graph: Graph) -> Graph:
    kept = []
    pending = collections.deque(graph.nodes)
    while pending:
        node = pending.popleft()
        try:
            types = infer_node(graph, node)
        except RuntimeShapeError as why:
            operands = [n for n in node.inputs if n]
            condition = constant_condition(graph, node)
            if operands and all(n in graph.constants for n in operands) and _fold(graph, node):
                pass                       # control flow on constants
            elif condition is not None:
                pending.extendleft(reversed(inline_if(graph, node, condition)))
            else:
                kept.append(host_step(graph, node, why))
            continue
        for name, t in zip(node.outputs, types):
            if name:
                graph.types[name] = t
        why = host_only(graph, node)
        if why:
            kept.append(wrapped(node, why))
            continue
        if node.op == "Shape":
            shape = graph.types[node.inputs[0]].shape
            value = np.array(shape[node.attrs.get("start", 0):node.attrs.get("end", None)], np.int64)
            graph.constants[node.outputs[0]] = value
            continue
        if node.op == "Size":     # like Shape: known from the static type alone
            graph.constants[node.outputs[0]] = np.array(graph.types[node.inputs[0]].size, np.int64)
            continue
        operands = [n for n in node.inputs if n]
        # dequantized weights are weights, whatever their size
        if operands and all(n in graph.constants for n in operands) and \
                (node.op == "DequantizeLinear" or all(t.nbytes <= _FOLD_SIZE_LIMIT for t in types)):
            _fold(graph, node)
            continue
        kept.append(node)
    graph.nodes = kept
    return graph


def _fold(graph: Graph, node) -> bool:
    """Evaluate `node` on its constant inputs; False (and nothing folded) where an output is a
    sequence or an optional, which a constant cannot hold."""
    args = [graph.constants[n] if n else None for n in node.inputs]
    try:
        outs = host_ops.run(node.op, args, node.attrs)
    except Exception as exc:
        raise GraphError(f"{node.describe()}: constant folding failed: {exc}") from exc
    if any(isinstance(v, (list, tuple)) or v is None for v, name in zip(outs, node.outputs) if name):
        return False
    for name, value in zip(node.outputs, outs):
        if name:
            graph.constants[name] = np.asarray(value, order="C")
            graph.types[name] = TensorType.of(graph.constants[name])
    return True


def absorb_constant_operands(graph: Graph) -> Graph:
    for node in graph.nodes:
        slots = CONSTANT_OPERANDS.get(node.op, {})
        for index, key in slots.items():
            if index < len(node.inputs) and node.inputs[index]:
                value = graph.constants[node.inputs[index]]
                node.attrs[key] = value.tolist() if value.ndim else value.item()
                node.inputs[index] = ""
        while node.inputs and not node.inputs[-1]:
            node.inputs.pop()
    return graph
