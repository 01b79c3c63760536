"""Concat, Split and nearest Resize between accelerator kernels, on the packed int8 codes
(vdla.driver.host_ops.vdla.moves): a channel Concat or Split along whole channel blocks, and a
nearest Resize (YOLO's 2x upsampling) as a gather of pixels. The codes keep their grid (each
channel its scale; one zero point for all the inputs of a Concat), so the accelerator's tensors
do not cross to fp32 and back around them: YOLOv8's C2f and neck were 29 such round trips.

A Concat or Split costs no copy where the memory plan can lay the parts side by side (one batch
block: the producers write straight into the whole's bytes; graph.passes.memory_plan); elsewhere
the host copies int8 blocks. A Resize by whole factors is an accelerator op (ops/upsample.py);
this gather is for the others."""
from __future__ import annotations

import numpy as np

from vdla.driver import host_ops
from vdla.driver.host_ops.axes import normalize_axis
from vdla.driver.host_ops.vdla.moves import CONCAT, GATHER_PIXELS, SPLIT

from ..graph.ir import Node

# op -> what it becomes on the packed codes
MOVES = {"Concat": "the channel blocks of its inputs copied one after another",
         "Split": "channel blocks copied out",
         "Resize": "each output pixel a copy of its nearest input pixel"}


def move_problem(graph, node, config, packed) -> str | None:
    """Why `node` cannot move packed int8 blocks, or None. packed(t): whether tensor t is an
    accelerator tensor in the packed image layout."""
    ins = [t for t in node.inputs if t]
    x = graph.types[ins[0]]
    if len(x.shape) != 4:
        return f"a {len(x.shape)}-d tensor: the packed moves take images (N, C, H, W)"
    data = ins if node.op == "Concat" else ins[:1]
    if not all(packed(t) for t in data):
        return "an input the CPU holds in fp32"
    L = config.block
    if node.op == "Resize":
        if node.attrs.get("mode", "nearest") != "nearest":
            return f"mode {node.attrs['mode']!r}: only nearest copies pixels"
        if any(t not in graph.constants for t in ins[1:]):
            return "scales or sizes computed at run time"
        if graph.types[node.outputs[0]].shape[:2] != x.shape[:2]:
            return "a resize of the batch or channel axis"
        return None
    axis = normalize_axis(node.attrs.get("axis", 0), 4)
    if axis != 1:
        return f"axis {axis}: the packed moves cut along channels"
    parts = ins if node.op == "Concat" else [o for o in node.outputs if o]
    channels = [graph.types[t].shape[1] for t in parts]
    if any(c % L for c in channels[:-1]):
        return f"parts of {channels} channels: every part but the last must be whole blocks of {L}"
    return None


def quantize_move(q, node) -> bool:
    """Append node's int8 twin to the graph being built; False if the inputs' zero points differ
    (a Concat of codes needs one), for the caller to keep it in fp32 on the CPU."""
    cfg, g = q.config, q.g
    L = cfg.block
    if node.op == "Concat":
        ins = [q.packed_input(t) for t in node.inputs if t]
        zps = {q.zp.get(name, 0) for name, _ in ins}
        if len(zps) > 1:
            return False
        names = [name for name, _ in ins]
        scale = np.concatenate([np.asarray(s, np.float64).reshape(-1) for _, s in ins])
        shapes = [g.types[n].shape for n in names]
        shape = (shapes[0][0], sum(s[1] for s in shapes), *shapes[0][2:])
        out = q.output(node.outputs[0], shape, scale, zps.pop())
        q.nodes.append(Node(CONCAT.name, node.name, names, [out], {"source_ops": [node.op]}))
        return True
    xq, scale = q.packed_input(node.inputs[0])
    zp, xt = q.zp.get(xq, 0), g.types[xq]
    scale = np.asarray(scale, np.float64).reshape(-1)
    if node.op == "Split":
        blocks = [-(-g.types[o].shape[1] // L) for o in node.outputs]
        starts = np.cumsum([0] + blocks)
        outs = [q.output(o, (xt.shape[0], b, *xt.shape[2:]), scale[s * L:(s + b) * L], zp)
                for o, b, s in zip(node.outputs, blocks, starts)]
        q.nodes.append(Node(SPLIT.name, node.name, [xq], outs, {"blocks": blocks, "source_ops": [node.op]}))
        return True
    pixels = q.const(f"{node.name}.pixels", source_pixels(g, node))
    oh, ow = g.types[node.outputs[0]].shape[2:]
    out = q.output(node.outputs[0], (xt.shape[0], xt.shape[1], oh, ow, *xt.shape[4:]), scale, zp)
    q.nodes.append(Node(GATHER_PIXELS.name, node.name, [xq, pixels], [out], {"source_ops": [node.op]}))
    return True


def source_pixels(graph, node) -> np.ndarray:
    """(OH, OW) int32: the input pixel (flat) each output pixel of a nearest Resize copies, from
    the Resize host op itself run on an image of pixel numbers (exact in fp32 below 2^24)."""
    _, _, h, w = graph.types[node.inputs[0]].shape
    numbers = np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w)
    rest = [graph.constants[t] if t else None for t in node.inputs[1:]]
    out = host_ops.run("Resize", [numbers, *rest], node.attrs)[0]
    return out[0, 0].astype(np.int32)
