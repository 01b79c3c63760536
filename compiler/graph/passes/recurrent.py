"""Pass: an LSTM, GRU or RNN as the input projection of every step at once and the recurrence
(CPU pipeline).

Why: x_t W^T does not depend on the state, so all steps' projections are one matmul [seq * batch,
input] @ [input, directions * gates * hidden], which the matmul kernels run at full width; what
is left per step is h W_r^T and the cell, the part that must run in order, as one kernel
(`LSTMScan`, `GRUScan`, `RNNScan`: vdla.driver.host_ops.recurrent states them, the loop IR is
vdla.compiler.topi.recurrent's). As one numpy host step, the op spent its time in the per-step
overhead: 3.5x to 11x onnxruntime's time on single layers.

Only where the kernel applies: float32, W, R and B constant (sequence_lens, constant or not, goes
to the scan: a batch entry past its length holds its state). Otherwise the op stays a host step.
"""
from __future__ import annotations

import numpy as np

from vdla.driver.host_ops.recurrent import GATES, scan_op
from ..infer import infer_node
from ..ir import Graph, Node, TensorType


def _constant(graph: Graph, node: Node, i: int):
    name = node.inputs[i] if len(node.inputs) > i else ""
    return graph.constants.get(name) if name else None


def _applies(graph: Graph, node: Node) -> bool:
    if node.op not in GATES or graph.types[node.inputs[0]].dtype != "float32":
        return False
    w, r = _constant(graph, node, 1), _constant(graph, node, 2)
    has = (lambda i: len(node.inputs) > i and bool(node.inputs[i]))
    if w is None or r is None or (has(3) and _constant(graph, node, 3) is None):
        return False
    return not has(4) or graph.types[node.inputs[4]].dtype == "int32"


def _lens(graph: Graph, node: Node) -> str:
    """sequence_lens for the scan, or "" where every batch entry runs every step."""
    name = node.inputs[4] if len(node.inputs) > 4 else ""
    lens = _constant(graph, node, 4)
    seq = graph.types[node.inputs[0]].shape[node.attrs.get("layout", 0)]
    return "" if not name or (lens is not None and (np.asarray(lens) == seq).all()) else name


def _split(graph: Graph, node: Node) -> list[Node]:
    x = node.inputs[0]
    w, r = _constant(graph, node, 1), _constant(graph, node, 2)
    n_dir, size = w.shape[0], r.shape[1]
    b = _constant(graph, node, 3)
    b = np.zeros((n_dir, 2 * size), np.float32) if b is None else b.astype(np.float32)
    xt = graph.types[x]
    # every direction's W^T side by side: one matmul gives all their projections
    wt = graph.add_constant(f"{node.inputs[1]}@T", np.ascontiguousarray(
        np.concatenate([w[d].T for d in range(n_dir)], axis=1), np.float32))
    wb = graph.add_constant(f"{node.inputs[1]}@bias", np.ascontiguousarray(b[:, :size].reshape(-1)))
    rt = graph.add_constant(f"{node.inputs[2]}@T", np.ascontiguousarray(r.transpose(0, 2, 1), np.float32))
    rb = graph.add_constant(f"{node.inputs[2]}@bias", np.ascontiguousarray(b[:, size:]))
    xw_type = TensorType(xt.shape[:2] + (n_dir * size,), "float32")
    projected = graph.add_tensor(f"{node.name}.xw", xw_type)
    xw = graph.add_tensor(f"{node.name}.xw_biased", xw_type)
    inputs = [xw, rt, rb] + [node.inputs[i] if len(node.inputs) > i else "" for i in (5, 6, 7)]
    if node.op != "LSTM":
        inputs = inputs[:4]
    lens = _lens(graph, node)
    if lens:
        inputs.append(lens)
    # the kernel writes Y and keeps its state in Y_h and Y_c: outputs even where nothing reads them,
    # typed by the scan's own rule
    outputs = (list(node.outputs) + [""] * 3)[:3 if node.op == "LSTM" else 2]
    types = infer_node(graph, Node(scan_op(node.op), node.name, inputs, outputs, dict(node.attrs)))
    outputs = [o or graph.add_tensor(f"{node.name}.output{i}", t) for i, (o, t) in enumerate(zip(outputs, types))]
    return [Node("MatMul", f"{node.name}.projection", [x, wt], [projected]),
            Node("Add", f"{node.name}.projection_bias", [projected, wb], [xw]),
            Node(scan_op(node.op), node.name, inputs, outputs, dict(node.attrs))]


def split_recurrent_projection(graph: Graph) -> Graph:
    return graph.expand_nodes(lambda node: _split(graph, node) if _applies(graph, node) else None)
