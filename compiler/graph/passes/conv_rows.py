"""Pass: a pointwise convolution in the packed layout over one long row of pixels.

The blocked convolution's register tile covers pixels of one output row. A 1x1 convolution
of stride 1 and no padding reads pixel p of the input for pixel p of the output, so its image
[N, C/b, H, W, b] may be viewed as [N, C/b, 1, H*W, b] (a Reshape the memory plan aliases),
and its elementwise chain (bias, clip, the residual Add) with it (view_chain). The tile then
runs along all H*W pixels instead of stopping at each row's end: MobileNetV2's projections
over 14x14 and 7x7 images had rows too short for the tile (14 = 4 + 4 + 4 + 2) on AVX2.
Images of more than MAX_PIXELS keep their rows: theirs are long enough, and the row loop is
what the kernel runs in parallel.
"""
from __future__ import annotations

from ..ir import Graph, Node, TensorType
from .view_chain import chain_on_view, rewrite_with_chains

MAX_PIXELS = 28 * 28


def _pointwise(graph: Graph, node: Node) -> bool:
    a = node.attrs
    w = node.inputs[1]
    return (not a.get("depthwise") and a.get("groups", 1) == 1 and w in graph.constants
            and graph.constants[w].shape[2:4] == (1, 1) and all(s == 1 for s in a["strides"])
            and not any(a["pads"]) and all(d == 1 for d in a["dilations"]))


def _as_row(node: Node, consumers: dict, defined: set, done: set, graph: Graph) -> list[Node] | None:
    x = node.inputs[0]
    xt, yt = graph.types[x], graph.types[node.outputs[0]]
    n, cb, h, w, b = xt.shape
    if h == 1 or h * w > MAX_PIXELS or not _pointwise(graph, node):
        return None
    shape = yt.shape
    view_shape = (shape[0], shape[1], 1, h * w, shape[4])

    def operand(name: str, views: list) -> str | None:
        """A chain operand on the row: one that broadcasts over the image as it is, one of the
        image's shape as a view; a runtime one only if defined before the conv."""
        t = graph.types[name]
        if name not in defined:
            return None
        if all(d == 1 for d in t.shape[-3:-1]):
            return name
        if t.shape != shape or name in graph.constants:
            return None
        view = graph.add_tensor(f"{name}@row", TensorType(view_shape, t.dtype))
        views.append(Node("Reshape", f"{name}.row", [name], [view], {"shape": list(view_shape)}))
        return view

    row_in = graph.add_tensor(f"{x}@row", TensorType((n, cb, 1, h * w, b), xt.dtype))
    product = graph.add_tensor(f"{node.outputs[0]}@row", TensorType(view_shape, yt.dtype))
    views, chain, tail, tail_view = chain_on_view(graph, consumers, node.outputs[0], product, view_shape, "row",
                                                  operand, done)
    return [Node("Reshape", f"{node.name}.row", [x], [row_in], {"shape": [n, cb, 1, h * w, b]}), *views,
            Node(node.op, node.name, [row_in, *node.inputs[1:]], [product], dict(node.attrs)), *chain,
            Node("Reshape", f"{tail}.unrow", [tail_view], [tail], {"shape": list(shape)})]


def pointwise_convs_as_rows(graph: Graph) -> Graph:
    return rewrite_with_chains(graph, "ConvNCHWc", lambda node, *context: _as_row(node, *context, graph))
