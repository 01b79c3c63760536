"""Pass: a 2-D ConvTranspose as a convolution per output phase, the phases interleaved
(CPU pipeline).

Why: a transposed convolution has no kernel of its own and ran as a numpy host step, 20-25x
onnxruntime's time on a U-Net decoder's upsampling layer. With stride s, output row o = q s + p
gathers only the taps k = p + j s (j = 0, 1, ...) of input rows q - j: for each phase p that is
an ordinary convolution with the taps of that phase, flipped. All s_h * s_w phases are one Conv
whose output channels are (phase, channel) pairs, which the convolution kernels run packed;
a Reshape, a Transpose and a Slice interleave the phases and crop the pads.

Per axis, with J = ceil(K / s) taps per phase (zero where a phase has fewer): the Conv pads
the input by J - 1 before and by ceil((K + output_padding) / s) - 1 after, so that the phases
together cover the full output (H - 1) s + K + output_padding, which the pads then crop.

Only where this applies as is: 2-D, one group, no dilation, constant weights (and bias), pads
not negative; otherwise the op stays a host step.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, TensorType


def _applies(graph: Graph, node: Node) -> bool:
    if node.op != "ConvTranspose" or len(graph.types[node.inputs[0]].shape) != 4:
        return False
    a = node.attrs
    constant = all(not name or name in graph.constants for name in node.inputs[1:])
    return (graph.types[node.inputs[0]].dtype == "float32" and constant and a.get("group", 1) == 1
            and all(d == 1 for d in a["dilations"]) and min(a["pads"]) >= 0)


def _phase_weight(w: np.ndarray, strides, taps) -> np.ndarray:
    """[IC, OC, KH, KW] -> [SH * SW * OC, IC, JH, JW]: output channel (ph * SW + pw) * OC + oc
    holds phase (ph, pw)'s taps, flipped: tap (t, u) is w[..., ph + (JH-1-t) SH, pw + (JW-1-u) SW]."""
    ic, oc, kh, kw = w.shape
    (sh, sw), (jh, jw) = strides, taps
    padded = np.zeros((ic, oc, jh * sh, jw * sw), np.float32)
    padded[:, :, :kh, :kw] = w
    # [IC, OC, JH, SH, JW, SW] -> [SH, SW, OC, IC, JH, JW], then the taps reversed
    phases = padded.reshape(ic, oc, jh, sh, jw, sw).transpose(3, 5, 1, 0, 2, 4)[:, :, :, :, ::-1, ::-1]
    return np.ascontiguousarray(phases.reshape(sh * sw * oc, ic, jh, jw))


def _rewrite(graph: Graph, node: Node) -> list[Node]:
    a = node.attrs
    x, w = node.inputs[0], graph.constants[node.inputs[1]]
    n, _, h, wd = graph.types[x].shape
    oc = w.shape[1]
    strides, kernel = a["strides"], w.shape[2:]
    out_pad = a.get("output_padding") or [0, 0]
    taps = [math.ceil(k / s) for k, s in zip(kernel, strides)]
    after = [math.ceil((k + op) / s) - 1 for k, s, op in zip(kernel, strides, out_pad)]
    rows = [size + e for size, e in zip((h, wd), after)]      # the Conv's output: H + J - 1 + E - (J - 1)
    phases = strides[0] * strides[1]
    inputs = [x, graph.add_constant(f"{node.inputs[1]}@phases", _phase_weight(w, strides, taps))]
    if len(node.inputs) > 2 and node.inputs[2]:
        inputs.append(graph.add_constant(f"{node.inputs[2]}@phases",
                                         np.tile(graph.constants[node.inputs[2]].astype(np.float32), phases)))
    y = node.outputs[0]
    dtype = graph.types[y].dtype

    def tensor(stem, shape):
        return graph.add_tensor(f"{y}.{stem}", TensorType(tuple(shape), dtype))
    conv = tensor("phases", (n, phases * oc, *rows))
    split = tensor("phases_split", (n, strides[0], strides[1], oc, *rows))
    moved = tensor("interleaved", (n, oc, rows[0], strides[0], rows[1], strides[1]))
    full_shape = (n, oc, rows[0] * strides[0], rows[1] * strides[1])
    out = graph.types[y].shape
    begin = a["pads"][:2]
    nodes = [
        Node("Conv", f"{node.name}.phases", inputs, [conv],
             {"kernel_shape": taps, "strides": [1, 1], "dilations": [1, 1], "group": 1, "auto_pad": "NOTSET",
              "pads": [taps[0] - 1, taps[1] - 1, after[0], after[1]]}),
        Node("Reshape", f"{node.name}.split", [conv], [split], {"shape": list(graph.types[split].shape)}),
        Node("Transpose", f"{node.name}.interleave", [split], [moved], {"perm": [0, 3, 4, 1, 5, 2]})]
    if full_shape == tuple(out):      # nothing to crop (a U-Net's 2x2, stride 2)
        return nodes + [Node("Reshape", node.name, [moved], [y], {"shape": list(out)})]
    full = tensor("full", full_shape)
    return nodes + [
        Node("Reshape", f"{node.name}.merge", [moved], [full], {"shape": list(full_shape)}),
        Node("Slice", node.name, [full], [y], {"starts": [begin[0], begin[1]],
                                               "ends": [begin[0] + out[2], begin[1] + out[3]], "axes": [2, 3]}),
    ]


def conv_transpose_as_conv(graph: Graph) -> Graph:
    return graph.expand_nodes(lambda node: _rewrite(graph, node) if _applies(graph, node) else None)
