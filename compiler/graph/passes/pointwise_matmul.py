"""Pass: a 1x1 convolution left in NCHW as one matrix product over the image's pixels.

The layout pass leaves a convolution NCHW when its output channels would pack into narrow
blocks (ShuffleNetV2's 58 and 116). The NCHW kernel vectorizes along an output row, and a 1x1
conv's rows are short (28 pixels: vectors of 4, 15 G multiply-adds a second on a Zen 5). With
one image, such a conv is W [M, C] @ X [C, H*W]: the image viewed as a matrix (a Reshape, which
the memory plan aliases), the matmul kernel's vectors run along all H*W pixels, its bias is an
Add of a column, and the product is viewed back as [1, M, H, W] under the conv's output name.
"""
from __future__ import annotations

from ..ir import Graph, Node, TensorType


def _as_matmul(graph: Graph, node: Node) -> list[Node] | None:
    if node.op != "Conv":
        return None
    a = node.attrs
    x, w = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    xt = graph.types[x]
    if xt.dtype != "float32" or len(xt.shape) != 4 or xt.shape[0] != 1 or w not in graph.constants \
            or (bias and bias not in graph.constants) or a.get("group", 1) != 1 \
            or graph.constants[w].shape[2:] != (1, 1) or any(s != 1 for s in a["strides"]) or any(a["pads"]):
        return None
    m, c = graph.constants[w].shape[:2]
    _, _, h, wd = xt.shape
    y = node.outputs[0]
    pixels = graph.add_tensor(f"{x}@pixels", TensorType((c, h * wd), xt.dtype))
    matrix = graph.add_constant(f"{w}@matrix", graph.constants[w].reshape(m, c))
    product = graph.add_tensor(f"{y}@pixels", TensorType((m, h * wd), xt.dtype))
    out = [Node("Reshape", f"{node.name}.pixels", [x], [pixels], {"shape": [c, h * wd]}),
           Node("MatMul", node.name, [matrix, pixels], [product])]
    if bias:
        biased = graph.add_tensor(f"{y}@pixels+b", TensorType((m, h * wd), xt.dtype))
        column = graph.add_constant(f"{bias}@column", graph.constants[bias].reshape(m, 1))
        out.append(Node("Add", f"{node.name}.bias", [product, column], [biased]))
        product = biased
    out.append(Node("Reshape", f"{node.name}.image", [product], [y], {"shape": [1, m, h, wd]}))
    return out


def pointwise_convs_as_matmul(graph: Graph) -> Graph:
    nodes = []
    for node in graph.nodes:
        nodes.extend(_as_matmul(graph, node) or [node])
    graph.nodes = nodes
    return graph
