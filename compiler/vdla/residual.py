"""Which residual Adds run as a convolution's epilogue. Add(a, b) of two images on the
accelerator, where the operand made later comes from a convolution that nothing else reads,
folds into that convolution: its epilogue loads the other operand, scales it to the output's
grid and adds it before the one rounding shift (Epilogue.residual_scale). Apart, the Add cost
the convolution's int8 store, two loads into the accumulators and two requantizations: about
17 cycles per output vector, against about 7 in the epilogue.

Not in VTA mode (VTA loads no int8 residual into the accumulators), not for grouped
convolutions, and not where a QDQ model quantizes the convolution's output before the Add
(its own run rounds there, and so must ours)."""
from __future__ import annotations

from ..graph.ir import Graph, Node


def residual_adds(graph: Graph, place: dict, stats: dict, vta_compat: bool = False,
                  apart: set[str] = frozenset()) -> dict[str, Node]:
    """{convolution: the Add fused into it}; marks each such Add fused_into its convolution in
    `place` (its ReLU stays fused into the Add). `apart`: convolutions that keep their Add
    apart (their kernel with it did not fit)."""
    found = dict(_fused(graph, place))
    if vta_compat:
        return found
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    producer, consumers = graph.producers(), graph.consumers()
    has_act = {info["fused_into"] for info in place.values() if info.get("fused_into")}
    on_vdla = lambda n: place.get(n.name, {}).get("device") == "vdla"     # noqa: E731
    for add in graph.nodes:
        if add.op != "Add" or not on_vdla(add) or place[add.name].get("fused_into") or len(set(add.inputs)) != 2 \
                or len(graph.types[add.outputs[0]].shape) != 4:
            continue
        made = [(order[producer[t].name], producer[t]) for t in add.inputs if t in producer]
        if not made:
            continue
        conv = max(made, key=lambda m: m[0])[1]       # the operand made later: the other is ready by then
        out = conv.outputs[0]
        if conv.op != "Conv" or conv.name in apart or not on_vdla(conv) or conv.name in has_act \
                or conv.attrs.get("group", 1) != 1 \
                or consumers.get(out) != [add] or out in graph.outputs or "qdq" in stats.get(out, {}):
            continue
        place[add.name]["fused_into"] = conv.name
        found[conv.name] = add
    return found


def _fused(graph: Graph, place: dict):
    """The Adds already fused (a placement quantized again)."""
    by_name = {n.name: n for n in graph.nodes}
    for name, info in place.items():
        if info.get("fused_into") and by_name.get(name) is not None and by_name[name].op == "Add":
            yield info["fused_into"], by_name[name]
