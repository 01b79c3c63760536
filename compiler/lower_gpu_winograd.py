"""Which convolutions the GPU path runs by Winograd F(2x2, 3x3), and how their group is lowered.

A group whose one Conv is 3x3, stride 1, dilation 1, ungrouped, float32, with constant weights,
and for which topi.gpu.winograd.winograd_pays (FLOPs saved against the two extra launches) is a
Winograd group: its weight W is replaced, in the GPU step's arguments, by U = G W G^T computed
here at compile time (a new constant `W@winograd_gpu`), and its Conv is lowered by
topi.gpu.conv2d_nchw_winograd instead of the direct conv2d_nchw.
"""
from __future__ import annotations

from dataclasses import dataclass

from vdla.driver.host_ops.winograd import transform_weight

from .graph.ir import Graph, Node, TensorType


@dataclass(frozen=True)
class WinogradConv:
    conv: Node              # the Conv inside the group
    weight: str             # its OIHW weight constant
    transformed: str        # the name of U, its Winograd transform [4, 4, OC, C, 1, 1]


def winograd_conv(graph: Graph, node: Node) -> WinogradConv | None:
    """The group's convolution if it should run by Winograd on the GPU, else None."""
    from .topi.gpu.winograd import winograd_pays
    convs = [n for n in (node.body if node.op == "Fused" else [node]) if n.op == "Conv"]
    if len(convs) != 1:
        return None
    conv = convs[0]
    a, x, w = conv.attrs, conv.inputs[0], conv.inputs[1]
    weight = graph.constants.get(w)
    if weight is None or weight.ndim != 4 or weight.shape[2:] != (3, 3) or weight.dtype != "float32":
        return None
    if list(a.get("strides", [1, 1])) != [1, 1] or list(a.get("dilations", [1, 1])) != [1, 1] or a.get("group", 1) != 1:
        return None
    data, out = graph.types[x], graph.types[conv.outputs[0]]
    if data.dtype != "float32" or len(data.shape) != 4:
        return None
    n, c = data.shape[:2]
    if not winograd_pays(n, c, weight.shape[0], *out.shape[2:]):
        return None
    return WinogradConv(conv, w, f"{w}@winograd_gpu")


def add_transformed_weight(graph: Graph, plan: WinogradConv) -> None:
    if plan.transformed not in graph.constants:
        u = transform_weight(graph.constants[plan.weight], 1, 1)
        graph.constants[plan.transformed] = u
        graph.types[plan.transformed] = TensorType.of(u)


def winograd_args(plan: WinogradConv, args: list[str]) -> list[str]:
    return [plan.transformed if a == plan.weight else a for a in args]


def winograd_node(plan: WinogradConv, node: Node) -> Node:
    """The group with its Conv reading U instead of W (for group_to_te)."""
    def renamed(n):
        return Node(n.op, n.name, [plan.transformed if i == plan.weight else i for i in n.inputs], n.outputs, n.attrs)
    if node.op != "Fused":
        return renamed(node)
    return Node(node.op, node.name, renamed(node).inputs, node.outputs,
                {**node.attrs, "body": [renamed(n) for n in node.body]})


def _conv_rule(node: Node, ins, graph):
    from .topi.gpu import conv2d_nchw_winograd
    bias = ins[2] if len(ins) > 2 else None
    return [conv2d_nchw_winograd(ins[0], ins[1], bias, pads=node.attrs["pads"])]


RULES = {"Conv": _conv_rule}    # lower_ops.group_to_te's rules for a Winograd group
