"""Multiply-accumulates of the ops that have them but no accelerator record, so that a CPU
node's MACs are counted (the offloaded fraction, `vdla compile`'s list of CPU layers) whatever
keeps it there. The accelerator ops count their own (VdlaOp.macs)."""
from __future__ import annotations

import math


def matmul_macs(graph, node) -> int:
    """A matrix product's (MatMul, Gemm): every output element sums the operands' shared dim."""
    return math.prod(graph.types[node.outputs[0]].shape) * graph.types[node.inputs[0]].shape[-1]


def _conv_transpose(graph, node) -> int:
    x, w = graph.types[node.inputs[0]], graph.types[node.inputs[1]]
    # every input pixel of every input channel scatters a kernel of O/group output channels
    return math.prod(x.shape) * math.prod(w.shape[1:])


def _recurrent(gates: int):
    def macs(graph, node) -> int:
        x, w = graph.types[node.inputs[0]], graph.types[node.inputs[1]]     # x [S, B, I], W [D, G*H, I]
        directions, hidden = w.shape[0], w.shape[1] // gates
        return x.shape[0] * x.shape[1] * directions * gates * hidden * (x.shape[2] + hidden)
    return macs


_COUNTS = {"MatMul": matmul_macs, "MatMulInteger": matmul_macs, "ConvTranspose": _conv_transpose,
           "LSTM": _recurrent(4), "GRU": _recurrent(3), "RNN": _recurrent(1)}


def cpu_macs(graph, node) -> int:
    """The MACs of `node` (an op without an accelerator record), 0 for ops without."""
    count = _COUNTS.get(node.op)
    if count is None or any(not n or n not in graph.types for n in node.inputs[:2] + node.outputs[:1]):
        return 0
    return int(count(graph, node))
