"""Pass: operator fusion into the groups the tensor compiler schedules as one kernel.

A group is at most one anchor (convolution, dense/matmul, pooling, softmax, reduction)
followed by a chain of elementwise ops, or a chain of elementwise ops alone. An op joins the
chain when it is the only consumer of the chain's current output, that output is not a graph
output, and its result has the chain's shape (its other operand broadcasts into it: a bias, a
per-channel scale, a residual). Data-movement ops (Reshape, Transpose, Concat, ...) stay alone.
"""
from __future__ import annotations

from ..ir import Graph, Node

ANCHORS = {"Conv", "ConvNCHWc", "ConvWinogradNCHWc", "QConvNCHWcInt8", "QMatMulInt8", "ConvTranspose", "Gemm", "MatMul", "MatMulPanels", "MaxPool", "AveragePool",
           "GlobalAveragePool", "GlobalMaxPool", "Softmax", "ReduceMean", "QLinearConv",
           "QLinearMatMul", "MaxPoolNCHWc", "AveragePoolNCHWc", "GlobalAveragePoolNCHWc",
           "GlobalMaxPoolNCHWc"}
ELEMENTWISE = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp",
               "Add", "Sub", "Mul", "Div", "QuantizeLinear", "DequantizeLinear", "Cast", "RequantizeChannels",
               "Erf", "Gelu", "Pow", "Sqrt", "Neg", "Abs", "Reciprocal", "Where", "Min", "Max", "Equal", "Less",
               "Greater", "LessOrEqual", "GreaterOrEqual", "Softplus", "Elu", "PRelu", "Swish", "Floor", "Ceil",
               "Round", "Log", "Softsign", "Mish", "Selu", "Celu", "ThresholdedRelu", "Sign", "Not",
               "And", "Or", "Xor"}


def _extends(graph: Graph, consumers: dict, tail: str, nxt: Node, position: dict) -> bool:
    if nxt.op not in ELEMENTWISE or tail in graph.outputs:
        return False
    if len(consumers.get(tail, [])) != 1 or len(nxt.outputs) != 1:
        return False
    if graph.types[nxt.outputs[0]].shape != graph.types[tail].shape:
        return False
    return True


def fuse_operators(graph: Graph) -> Graph:
    consumers = graph.consumers()
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    taken: set[int] = set()
    groups: dict[int, list[Node]] = {}  # position of the last member -> members
    for node in graph.nodes:
        if id(node) in taken or (node.op not in ANCHORS and node.op not in ELEMENTWISE):
            continue
        members = [node]
        tail = node.outputs[0]
        while len(node.outputs) == 1:
            users = consumers.get(tail, [])
            if len(users) != 1 or id(users[0]) in taken \
                    or not _extends(graph, consumers, tail, users[0], position):
                break
            members.append(users[0])
            tail = users[0].outputs[0]
        taken.update(id(m) for m in members)
        if len(members) == 1:
            continue
        groups[position[id(members[-1])]] = members
    grouped = {id(m) for members in groups.values() for m in members}
    fused = []
    for i, node in enumerate(graph.nodes):
        if i in groups:
            fused.append(_make_group(groups[i]))
        elif id(node) not in grouped:
            fused.append(node)
    graph.nodes = fused
    return graph


def _make_group(members: list[Node]) -> Node:
    internal = {o for m in members for o in m.outputs}
    inputs: list[str] = []
    for m in members:
        for name in m.inputs:
            if name and name not in internal and name not in inputs:
                inputs.append(name)
    pattern = "+".join(m.op for m in members)
    return Node("Fused", members[0].name, inputs, list(members[-1].outputs),
                {"body": members, "pattern": pattern})
