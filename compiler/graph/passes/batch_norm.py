"""Pass: batch normalization at inference is an affine map per channel.

After a convolution with constant weights whose output feeds only the BN, it folds into the
convolution's weights and bias (scale w per output channel, shift the bias). Any other BN
becomes Mul and Add by per-channel constants, which fusion then merges into a neighbour.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType


def _affine(graph: Graph, bn: Node) -> tuple[np.ndarray, np.ndarray]:
    scale, bias, mean, var = (graph.constants[n].astype(np.float64) for n in bn.inputs[1:5])
    mul = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
    return mul, bias - mean * mul


def fold_batch_norm(graph: Graph) -> Graph:
    producers = graph.producers()
    consumers = graph.consumers()
    replaced: dict[str, str] = {}
    kept: list[Node] = []
    for node in graph.nodes:
        node.inputs = [replaced.get(n, n) for n in node.inputs]
        if node.op != "BatchNormalization" or not all(n in graph.constants for n in node.inputs[1:5]):
            kept.append(node)
            continue
        mul, add = _affine(graph, node)
        conv = producers.get(node.inputs[0])
        x = node.inputs[0]
        if (conv is not None and conv.op == "Conv" and conv.inputs[1] in graph.constants
                and len(consumers.get(x, [])) == 1 and x not in graph.outputs
                and (len(conv.inputs) < 3 or not conv.inputs[2] or conv.inputs[2] in graph.constants)):
            w = graph.constants[conv.inputs[1]]
            b = graph.constants[conv.inputs[2]] if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
            w_name, b_name = f"{conv.name}.bn_weight", f"{conv.name}.bn_bias"
            graph.constants[w_name] = (w * mul.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
            graph.constants[b_name] = (b * mul + add).astype(w.dtype)
            graph.types[w_name] = TensorType.of(graph.constants[w_name])
            graph.types[b_name] = TensorType.of(graph.constants[b_name])
            conv.inputs = [conv.inputs[0], w_name, b_name]
            replaced[node.outputs[0]] = x  # the conv now computes the BN's output
            continue
        rank = len(graph.types[x].shape)
        dtype = graph.types[x].dtype
        shape = (-1,) + (1,) * (rank - 2)
        m_name, a_name, mid = f"{node.name}.scale", f"{node.name}.shift", f"{node.name}.scaled"
        graph.constants[m_name] = mul.reshape(shape).astype(dtype)
        graph.constants[a_name] = add.reshape(shape).astype(dtype)
        for n in (m_name, a_name):
            graph.types[n] = TensorType.of(graph.constants[n])
        graph.types[mid] = graph.types[node.outputs[0]]
        kept.append(Node("Mul", f"{node.name}.mul", [x, m_name], [mid]))
        kept.append(Node("Add", f"{node.name}.add", [mid, a_name], [node.outputs[0]]))
    graph.nodes = kept
    graph.outputs = [_rename_output(graph, o, replaced) for o in graph.outputs]
    return graph


def _rename_output(graph: Graph, name: str, replaced: dict) -> str:
    # A folded BN whose output is a graph output: the conv output takes over the name.
    if name not in replaced:
        return name
    source = replaced[name]
    for node in graph.nodes:
        node.outputs = [name if o == source else o for o in node.outputs]
        node.inputs = [name if i == source else i for i in node.inputs]
    graph.types[name] = graph.types[source]
    return name
